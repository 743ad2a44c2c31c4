#pragma once
// What the Compare tab's two tables share: read-only rows of a comparison
// (ops or op kinds, traces/op_join), `Columns` columns, replaced whole and
// worst first.

#include <QAbstractTableModel>

#include <vector>

#include "traces/trace_compare.hpp"

namespace ragged::gui {

template <typename Row, int Columns>
class ComparisonTableModel : public QAbstractTableModel {
 public:
  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : Columns; }
  const std::vector<Row>& rows() const { return rows_; }

  // The comparison's ops or op kinds, the largest |predicted - measured| first.
  void set_comparison(const traces::TraceComparison& comparison) {
    beginResetModel();
    if constexpr (std::is_same_v<Row, traces::OpComparison>) rows_ = traces::worst_ops_first(comparison.ops);
    else rows_ = traces::worst_kinds_first(comparison.kinds);
    endResetModel();
  }
  void clear() {
    beginResetModel();
    rows_.clear();
    endResetModel();
  }

 protected:
  const Row& row(const QModelIndex& index) const { return rows_[static_cast<size_t>(index.row())]; }

 private:
  std::vector<Row> rows_;
};

}  // namespace ragged::gui
