#pragma once
// Per-unit time breakdown of one predicted (or measured) trace: a row per
// unit (the transformer blocks as their mean), a column per phase, in ms.

#include <QAbstractTableModel>

#include <vector>

#include "traces/unit_breakdown.hpp"

namespace ragged::gui {

class UnitBreakdownModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr int kSecondsRole = Qt::UserRole + 1;

  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;  // unit + one per phase
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void set_trace(const traces::Trace* trace);  // nullptr: empty
  const std::vector<traces::UnitTimes>& rows() const { return rows_; }

 private:
  std::vector<traces::UnitTimes> rows_;
};

}  // namespace ragged::gui
