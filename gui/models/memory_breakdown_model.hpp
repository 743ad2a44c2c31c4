#pragma once
// One rank's memory by what holds it: the persistent state (master
// parameters, optimizer states, gradients, ...) and what is live at the
// Program's peak (gathered parameters, gradients in flight, activations,
// workspace), plus the caching allocator's overhead once a simulation has
// predicted the reserved peak.

#include <QAbstractTableModel>

#include <string>
#include <vector>

#include "planner/memory_breakdown.hpp"
#include "traces/trace.pb.h"

namespace ragged::gui {

struct MemoryPart {
  std::string name;
  int64_t bytes = 0;
  // What a narrow chart's axis shows (a third of a 1,100-pixel window cut
  // "allocator overhead" to "allocator ove..."); the name is in its tooltip.
  std::string short_name;
  const std::string& label() const { return short_name.empty() ? name : short_name; }
};

// The parts in a fixed order; "allocator overhead" only with a summary
// (its predicted reserved peak above the static peak).
std::vector<MemoryPart> memory_parts(const planner::MemoryBreakdown& memory, const traces::Summary* predicted);

class MemoryBreakdownModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr int kBytesRole = Qt::UserRole + 1;

  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void set_parts(std::vector<MemoryPart> parts);
  const std::vector<MemoryPart>& parts() const { return parts_; }

 private:
  std::vector<MemoryPart> parts_;
};

}  // namespace ragged::gui
