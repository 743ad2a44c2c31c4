#include "sim/residual_table.hpp"

#include <charconv>
#include <set>

#include <fmt/format.h>

#include "common/embedded_file.hpp"
#include "common/errors.hpp"
#include "sim/prediction_regime.hpp"

namespace ragged::sim {
namespace residual_data {
const std::vector<EmbeddedFile>& embedded_files();  // generated from validation/residuals.tsv
}  // namespace residual_data

namespace {

constexpr const char* kFix = "regenerate it with `ragged validate --write-residuals validation/residuals.tsv`";

std::vector<std::string_view> split(std::string_view line, char separator) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i == line.size() || line[i] == separator) {
      out.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

struct Cursor {
  const std::string& origin;
  int line = 0;

  [[noreturn]] void fail(std::string_view column, const std::string& what) const {
    throw InputError(fmt::format("{}:{}: column '{}': {}; {}", origin, line, column, what, kFix));
  }

  double number(std::string_view column, std::string_view cell) const {
    double value = 0;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (error != std::errc() || end != cell.data() + cell.size() || cell.empty()) {
      fail(column, fmt::format("'{}' is not a number", shortened(std::string(cell))));
    }
    return value;
  }
  int64_t count(std::string_view column, std::string_view cell) const {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (error != std::errc() || end != cell.data() + cell.size() || value <= 0) {
      fail(column, fmt::format("'{}' is not a positive whole number", shortened(std::string(cell))));
    }
    return value;
  }
  std::optional<double> optional_number(std::string_view column, std::string_view cell) const {
    if (cell == "-") return std::nullopt;
    return number(column, cell);
  }
  std::string text(std::string_view column, std::string_view cell) const {
    if (cell.empty() || cell == "-") fail(column, "empty; every row names it");
    return std::string(cell);
  }
};

ResidualRow parse_row(const Cursor& at, const std::vector<std::string_view>& cells) {
  const auto& c = kResidualColumns;
  ResidualRow row;
  row.id = at.text(c[0], cells[0]);
  row.stack = at.text(c[1], cells[1]);
  row.gpu = at.text(c[2], cells[2]);
  row.gpus = at.count(c[3], cells[3]);
  row.strategy = at.text(c[4], cells[4]);
  row.checkpointing = at.text(c[5], cells[5]);
  if (row.checkpointing != "none" && row.checkpointing != "selective" && row.checkpointing != "full" &&
      row.checkpointing != "saved_names") {
    at.fail(c[5], fmt::format("'{}' is not none, selective, full or saved_names", shortened(row.checkpointing)));
  }
  row.sequence = at.count(c[6], cells[6]);
  row.exposed_comm_share = at.number(c[7], cells[7]);
  if (row.exposed_comm_share < 0 || row.exposed_comm_share > 1) at.fail(c[7], "a share lies in [0, 1]");
  row.throughput_error = at.optional_number(c[8], cells[8]);
  row.memory_error = at.optional_number(c[9], cells[9]);
  for (const auto& [column, error] : {std::pair{c[8], row.throughput_error}, std::pair{c[9], row.memory_error}}) {
    if (error && *error <= -1) at.fail(column, "an error predicted / published - 1 is above -1");
  }
  row.model = at.text(c[10], cells[10]);
  if (row.model != kDense && row.model != kMixtureOfExperts) {
    at.fail(c[10], fmt::format("'{}' is not '{}' or '{}'", shortened(row.model), kDense, kMixtureOfExperts));
  }
  return row;
}

std::string cell(const std::optional<double>& value) { return value ? fmt::format("{:.6f}", *value) : "-"; }

}  // namespace

ResidualTable parse_residual_table(std::string_view text, const std::string& origin) {
  ResidualTable table;
  table.origin = origin;
  Cursor at{origin};
  bool header_seen = false;
  std::set<std::string> ids;
  for (std::string_view line : split(text, '\n')) {
    ++at.line;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (!header_seen) table.comments.emplace_back(line.substr(line.size() > 1 && line[1] == ' ' ? 2 : 1));
      continue;
    }
    const std::vector<std::string_view> cells = split(line, '\t');
    if (!header_seen) {
      for (size_t i = 0; i < kResidualColumns.size(); ++i) {
        if (i >= cells.size() || cells[i] != kResidualColumns[i]) {
          at.fail(i < cells.size() ? cells[i] : "(missing)",
                  fmt::format("the header names the columns {} in that order", fmt::join(kResidualColumns, ", ")));
        }
      }
      if (cells.size() != kResidualColumns.size()) at.fail(cells.back(), "the header has a column too many");
      header_seen = true;
      continue;
    }
    if (cells.size() != kResidualColumns.size()) {
      at.fail(cells.size() < kResidualColumns.size() ? kResidualColumns[cells.size()] : cells.back(),
              fmt::format("the row has {} tab-separated cells, the header {}", cells.size(), kResidualColumns.size()));
    }
    ResidualRow row = parse_row(at, cells);
    if (!ids.insert(row.id).second) at.fail("id", fmt::format("'{}' is listed twice", row.id));
    table.rows.push_back(std::move(row));
  }
  if (!header_seen) throw InputError(fmt::format("{}: no header line (and no rows); {}", origin, kFix));
  return table;
}

std::string format_residual_table(const std::vector<std::string>& comments, const std::vector<ResidualRow>& rows) {
  std::string out;
  for (const std::string& comment : comments) out += "# " + comment + "\n";
  out += fmt::format("{}\n", fmt::join(kResidualColumns, "\t"));
  for (const ResidualRow& r : rows) {
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.6f}\t{}\t{}\t{}\n", r.id, r.stack, r.gpu, r.gpus, r.strategy,
                       r.checkpointing, r.sequence, r.exposed_comm_share, cell(r.throughput_error),
                       cell(r.memory_error), r.model);
  }
  return out;
}

const ResidualTable& shipped_residual_table() {
  static const ResidualTable table = [] {
    const auto& files = residual_data::embedded_files();
    RAGGED_ASSERT(files.size() == 1, "validation/residuals.tsv is embedded once (sim/CMakeLists.txt)");
    ResidualTable parsed = parse_residual_table(files.front().contents, "validation/residuals.tsv (built in)");
    parsed.throughput_level = band_level(parsed.rows, BandMetric::kThroughput);
    parsed.memory_level = band_level(parsed.rows, BandMetric::kPeakMemory);
    return parsed;
  }();
  return table;
}

std::string residual_table_source_path() { return RAGGED_RESIDUAL_TABLE_PATH; }

}  // namespace ragged::sim
