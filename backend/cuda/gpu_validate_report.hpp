#pragma once
// gpu-validate's printed report: one line per result as it completes, and
// the summary tables printed last.

#include <iosfwd>
#include <string>
#include <vector>

#include "backend/cuda/validate_bench.hpp"
#include "backend/cuda/validate_checks.hpp"

namespace ragged::backend::gpu {

// Share of peak below which a GEMM shape is flagged.
inline constexpr double kGemmFlagFraction = 0.60;

struct GemmReport {
  GemmTiming timing;
  double peak_flops = 0;  // 0: unknown, no fraction
  double fraction() const { return peak_flops > 0 ? timing.flops_per_s() / peak_flops : 0; }
  bool flagged() const { return peak_flops > 0 && fraction() < kGemmFlagFraction; }
};

std::string check_line(const CheckResult& check);
std::string gemm_line(const GemmReport& gemm);

// A plain-text table with right-aligned columns (the first left-aligned).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

void print_check_table(std::ostream& out, const std::vector<CheckResult>& checks);
void print_gemm_table(std::ostream& out, const std::vector<GemmReport>& gemms);

}  // namespace ragged::backend::gpu
