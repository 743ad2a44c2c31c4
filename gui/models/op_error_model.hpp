#pragma once
// Predicted against measured op by op (traces::compare_traces joins the
// two traces' events by Program op id), the ops whose times differ most
// first: which op of which unit on which stream a prediction gets wrong.

#include "gui/models/comparison_table_model.hpp"

namespace ragged::gui {

struct OpErrorColumns {
  enum Column { kOpId, kName, kKind, kStream, kUnit, kPredicted, kMeasured, kDifference, kError, kColumns };
};

class OpErrorModel : public ComparisonTableModel<traces::OpComparison, OpErrorColumns::kColumns>,
                     public OpErrorColumns {
  Q_OBJECT

 public:
  using ComparisonTableModel::ComparisonTableModel;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
};

}  // namespace ragged::gui
