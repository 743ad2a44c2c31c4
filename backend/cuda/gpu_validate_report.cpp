// gpu-validate's printed report (gpu_validate_report.hpp).

#include "backend/cuda/gpu_validate_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

namespace ragged::backend::gpu {
namespace {

std::string shape_text(const GemmShape& s) { return fmt::format("{}x{}x{}", s.m, s.n, s.k); }

std::string error_text(const CheckResult& check) { return fmt::format("{:.3e}", check.error); }

}  // namespace

std::string check_line(const CheckResult& check) {
  std::string line = fmt::format("{} {}: error {} (tolerance {:.0e})", check.passed ? "PASS" : "FAIL", check.name,
                                 error_text(check), check.tolerance);
  if (check.unwritten > 0) line += fmt::format(", {} elements unwritten", check.unwritten);
  if (!check.detail.empty()) line += fmt::format("; {}", check.detail);
  return line;
}

std::string gemm_line(const GemmReport& gemm) {
  const GemmTiming& t = gemm.timing;
  std::string line =
      fmt::format("gemm bf16 {}: median {:.4f} ms over {} calls ({} input sets), {:.1f} TFLOP/s", shape_text(t.shape),
                  t.median_seconds * 1e3, t.repetitions, t.input_sets, t.flops_per_s() * 1e-12);
  if (gemm.peak_flops > 0) line += fmt::format(", {:.1f}% of peak", 100 * gemm.fraction());
  if (gemm.flagged()) line += fmt::format("  << below {:.0f}% of peak", 100 * kGemmFlagFraction);
  return line;
}

void TextTable::print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const std::string& header : headers_) widths.push_back(header.size());
  for (const auto& cells : rows_) {
    for (size_t i = 0; i < cells.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], cells[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      if (i > 0) line += "  ";
      line += i == 0 ? fmt::format("{:<{}}", cell, widths[i]) : fmt::format("{:>{}}", cell, widths[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  print_row(headers_);
  std::vector<std::string> rule;
  for (size_t width : widths) rule.push_back(std::string(width, '-'));
  print_row(rule);
  for (const auto& cells : rows_) print_row(cells);
}

void print_check_table(std::ostream& out, const std::vector<CheckResult>& checks) {
  TextTable table({"check", "error", "tolerance", "unwritten", "result"});
  for (const CheckResult& check : checks) {
    table.row({check.name, error_text(check), fmt::format("{:.0e}", check.tolerance), std::to_string(check.unwritten),
               check.passed ? "pass" : "FAIL"});
  }
  table.print(out);
}

void print_gemm_table(std::ostream& out, const std::vector<GemmReport>& gemms) {
  TextTable table({"gemm bf16 (m x n x k)", "median ms", "TFLOP/s", "% of peak", "calls", "flag"});
  for (const GemmReport& gemm : gemms) {
    const GemmTiming& t = gemm.timing;
    table.row({shape_text(t.shape), fmt::format("{:.4f}", t.median_seconds * 1e3),
               fmt::format("{:.1f}", t.flops_per_s() * 1e-12),
               gemm.peak_flops > 0 ? fmt::format("{:.1f}", 100 * gemm.fraction()) : "-", std::to_string(t.repetitions),
               gemm.flagged() ? fmt::format("< {:.0f}%", 100 * kGemmFlagFraction) : ""});
  }
  table.print(out);
}

}  // namespace ragged::backend::gpu
