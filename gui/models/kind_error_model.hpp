#pragma once
// Predicted against measured per op kind (traces::compare_traces: ops
// joined by Program op id, summed per kind), the kinds whose times differ
// most first.

#include <QAbstractTableModel>

#include "traces/trace_compare.hpp"

namespace ragged::gui {

class KindErrorModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kKind, kOps, kPredicted, kMeasured, kDifference, kError, kColumns };

  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void set_comparison(const traces::TraceComparison& comparison);
  void clear();
  const std::vector<traces::KindComparison>& rows() const { return rows_; }

 private:
  std::vector<traces::KindComparison> rows_;
};

}  // namespace ragged::gui
