#include "planner/gather_schedule.hpp"

namespace ragged::planner {

namespace {

std::vector<GatherPass> forward_then_backward(int units, int micro_batches) {
  std::vector<GatherPass> passes;
  for (int mb = 0; mb < micro_batches; ++mb) {
    GatherPass forward{{}, mb, false}, backward{{}, mb, true};
    for (int u = 0; u < units; ++u) forward.units.push_back(u);
    for (int u = units - 1; u >= 0; --u) backward.units.push_back(u);
    passes.push_back(std::move(forward));
    passes.push_back(std::move(backward));
  }
  return passes;
}

}  // namespace

GatherSchedule::GatherSchedule(int units, int micro_batches, const std::function<bool(int unit)>& kept_gathered)
    : GatherSchedule(forward_then_backward(units, micro_batches), kept_gathered, StageGathers::kEveryPass) {}

GatherSchedule::GatherSchedule(const std::vector<GatherPass>& passes, const std::function<bool(int unit)>& kept_gathered,
                               StageGathers mode)
    : mode_(mode) {
  std::vector<bool> gathered;
  for (const GatherPass& pass : passes) {
    for (int u : pass.units) {
      if (static_cast<size_t>(u) >= gathered.size()) gathered.resize(static_cast<size_t>(u) + 1, false);
      if (mode == StageGathers::kOncePerStep) {
        if (gathered[static_cast<size_t>(u)]) continue;
        gathered[static_cast<size_t>(u)] = true;
        add(u, pass.micro_batch, false);
      } else if (mode == StageGathers::kWhenResharded) {
        // FSDPParamGroup.unshard is a no-op on gathered parameters; post_forward
        // reshards them unless kept (the root's post_forward_mesh_info is None);
        // post_backward leaves them gathered while reshard_after_backward is off.
        if (!gathered[static_cast<size_t>(u)]) add(u, pass.micro_batch, pass.backward);
        for (int k = size() - 1; k >= 0; --k) {
          if (gathers_[static_cast<size_t>(k)].unit != u) continue;
          serving_[{u, pass.micro_batch, pass.backward}] = k;
          break;
        }
        gathered[static_cast<size_t>(u)] = pass.backward || kept_gathered(u);
      } else if (!pass.backward || !kept_gathered(u)) {
        add(u, pass.micro_batch, pass.backward);
      }
    }
    if (static_cast<size_t>(pass.micro_batch) >= last_of_.size()) last_of_.resize(static_cast<size_t>(pass.micro_batch) + 1, -1);
    last_of_[static_cast<size_t>(pass.micro_batch)] = size() - 1;
  }
}

void GatherSchedule::add(int unit, int micro_batch, bool backward) {
  Gather g;
  g.unit = unit;
  g.micro_batch = micro_batch;
  g.backward = backward;
  gathers_.push_back(std::move(g));
}

int GatherSchedule::find(int unit, int micro_batch, bool backward) const {
  if (mode_ == StageGathers::kWhenResharded) {
    const auto it = serving_.find({unit, micro_batch, backward});
    return it == serving_.end() ? -1 : it->second;
  }
  for (int k = 0; k < size(); ++k) {
    const Gather& g = (*this)[k];
    if (g.unit != unit) continue;
    if (mode_ == StageGathers::kOncePerStep || (g.micro_batch == micro_batch && g.backward == backward)) return k;
  }
  return -1;
}

int GatherSchedule::previous_of_unit(int k) const {
  for (int j = k - 1; j >= 0; --j) {
    if ((*this)[j].unit == (*this)[k].unit) return j;
  }
  return -1;
}

}  // namespace ragged::planner
