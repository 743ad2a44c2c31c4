#pragma once
// Predicted against measured op by op (traces::compare_traces joins the
// two traces' events by Program op id), the ops whose times differ most
// first: which op of which unit on which stream a prediction gets wrong.

#include <QAbstractTableModel>

#include "traces/trace_compare.hpp"

namespace ragged::gui {

class OpErrorModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { kOpId, kName, kKind, kStream, kUnit, kPredicted, kMeasured, kDifference, kError, kColumns };

  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void set_comparison(const traces::TraceComparison& comparison);
  void clear();
  const std::vector<traces::OpComparison>& rows() const { return rows_; }

 private:
  std::vector<traces::OpComparison> rows_;
};

}  // namespace ragged::gui
