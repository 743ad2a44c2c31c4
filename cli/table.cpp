#include "cli/table.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace ragged::cli {
namespace {

// Display width: counts UTF-8 code points, not bytes, so "×" and "≤" align.
size_t display_width(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

Table& Table::column(std::string header, Align align) {
  columns_.push_back({std::move(header), align});
  return *this;
}

Table& Table::row(std::vector<std::string> cells) {
  RAGGED_ASSERT(cells.size() == columns_.size(), "a table row needs one cell per column");
  rows_.push_back(std::move(cells));
  return *this;
}

Table& Table::rule() {
  rows_.emplace_back();
  return *this;
}

void Table::print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> widths;
  for (const Column& c : columns_) widths.push_back(display_width(c.header));
  for (const auto& cells : rows_) {
    for (size_t i = 0; i < cells.size(); ++i) widths[i] = std::max(widths[i], display_width(cells[i]));
  }
  auto print_cells = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (size_t i = 0; i < cells.size(); ++i) {
      std::string pad(widths[i] - display_width(cells[i]), ' ');
      bool left = columns_[i].align == Align::kLeft;
      line += (i ? "  " : "") + (left ? cells[i] + pad : pad + cells[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  std::vector<std::string> headers;
  for (const Column& c : columns_) headers.push_back(c.header);
  print_cells(headers);
  size_t total = 0;
  for (size_t w : widths) total += w;
  total += 2 * (widths.empty() ? 0 : widths.size() - 1);
  for (const auto& cells : rows_) {
    if (cells.empty()) {
      out << indent << std::string(total, '-') << '\n';
    } else {
      print_cells(cells);
    }
  }
}

}  // namespace ragged::cli
