#include "gui/models/memory_breakdown_model.hpp"

#include <algorithm>

#include "common/units.hpp"

namespace ragged::gui {

std::vector<MemoryPart> memory_parts(const planner::MemoryBreakdown& m, const traces::Summary* predicted) {
  std::vector<MemoryPart> parts = {
      {"master params", m.persistent.master_params, "master"},
      {"compute-dtype params", m.persistent.compute_params, "params"},
      {"gradient shards", m.persistent.gradients, "grad shards"},
      {"optimizer states", m.persistent.optimizer_states, "optimizer"},
      {"persistent small params", m.persistent.gathered_small_params, "small params"},
      {"pipeline receive buffers", m.persistent.pipeline_receive_buffers, "receive buffers"},
      {"gathered params", m.unsharded_params, "gathered"},
      {"gradients in flight", m.gradients_in_flight, "grads in flight"},
      {"gradient shards of the step", m.grad_shards, "step grads"},
      {"activations", m.activations, "activations"},
      {"workspace", m.workspace, "workspace"},
      {"model outputs held", m.model_outputs, "outputs"},
  };
  if (predicted != nullptr) {
    parts.push_back(
        {"allocator overhead", std::max<int64_t>(0, predicted->peak_reserved_bytes() - m.peak_total()), "allocator"});
  }
  return parts;
}

int MemoryBreakdownModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(parts_.size());
}

int MemoryBreakdownModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : 2; }

QVariant MemoryBreakdownModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == 0 ? QStringLiteral("held by") : section == 1 ? QStringLiteral("bytes") : QVariant();
}

QVariant MemoryBreakdownModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index)) return {};
  const MemoryPart& part = parts_[static_cast<size_t>(index.row())];
  if (index.column() == 0) return role == Qt::DisplayRole ? QVariant(QString::fromStdString(part.name)) : QVariant();
  if (role == kBytesRole) return QVariant::fromValue<qlonglong>(part.bytes);
  if (role == Qt::DisplayRole) return QString::fromStdString(format_bytes(static_cast<double>(part.bytes)));
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

void MemoryBreakdownModel::set_parts(std::vector<MemoryPart> parts) {
  beginResetModel();
  parts_ = std::move(parts);
  endResetModel();
}

}  // namespace ragged::gui
