#include "gui/models/unit_breakdown_model.hpp"

#include "traces/trace_stats.hpp"

namespace ragged::gui {

int UnitBreakdownModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int UnitBreakdownModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : 1 + traces::kUnitPhases; }

QVariant UnitBreakdownModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section > traces::kUnitPhases) return {};
  if (section == 0) return QStringLiteral("unit");
  const std::string_view name = traces::unit_phase_name(static_cast<traces::UnitPhase>(section - 1));
  return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())) + QStringLiteral(" (ms)");
}

QVariant UnitBreakdownModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const traces::UnitTimes& row = rows_[static_cast<size_t>(index.row())];
  if (index.column() == 0) return role == Qt::DisplayRole ? QVariant(QString::fromStdString(row.name)) : QVariant();
  const double seconds = row.seconds[static_cast<size_t>(index.column() - 1)];
  if (role == kSecondsRole) return seconds;
  if (role == Qt::DisplayRole) return QString::number(seconds * 1e3, 'f', 2);
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

void UnitBreakdownModel::set_trace(const traces::Trace* trace) {
  beginResetModel();
  rows_.clear();
  if (trace != nullptr) {
    rows_ = traces::with_blocks_averaged(traces::unit_times(*trace, traces::first_traced_rank(*trace)));
  }
  endResetModel();
}

}  // namespace ragged::gui
