#pragma once
// A plain-text table with aligned columns, for every human-readable report.

#include <ostream>
#include <string>
#include <vector>

namespace ragged::cli {

class Table {
 public:
  enum class Align { kLeft, kRight };

  // Columns are declared first; numbers read best right-aligned.
  Table& column(std::string header, Align align = Align::kRight);
  Table& row(std::vector<std::string> cells);
  // A horizontal rule before the next row (totals).
  Table& rule();
  void print(std::ostream& out, const std::string& indent = "") const;

 private:
  struct Column {
    std::string header;
    Align align;
  };
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

}  // namespace ragged::cli
