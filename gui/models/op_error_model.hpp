#pragma once
// Predicted against measured per op kind (traces::compare_traces, ops joined
// by Program op id), the kinds whose times differ most first.

#include <QAbstractTableModel>

#include "traces/trace_compare.hpp"

namespace ragged::gui {

// The comparison's kinds, largest |predicted - measured| first.
std::vector<traces::KindComparison> worst_kinds_first(const traces::TraceComparison& comparison);

class OpErrorModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kKind, kOps, kPredicted, kMeasured, kDifference, kError, kColumns };
  static constexpr int kValueRole = Qt::UserRole + 1;

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
