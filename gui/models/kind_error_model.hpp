#pragma once
// Predicted against measured per op kind (traces::compare_traces: ops
// joined by Program op id, summed per kind), the kinds whose times differ
// most first.

#include "gui/models/comparison_table_model.hpp"

namespace ragged::gui {

struct KindErrorColumns {
  enum Column { kKind, kOps, kPredicted, kMeasured, kDifference, kError, kColumns };
};

class KindErrorModel : public ComparisonTableModel<traces::KindComparison, KindErrorColumns::kColumns>,
                       public KindErrorColumns {
  Q_OBJECT

 public:
  using ComparisonTableModel::ComparisonTableModel;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
};

}  // namespace ragged::gui
