#include "planner/gather_schedule.hpp"

namespace ragged::planner {

GatherSchedule::GatherSchedule(int units, int micro_batches, const std::function<bool(int unit)>& kept_gathered) {
  for (int mb = 0; mb < micro_batches; ++mb) {
    for (int u = 0; u < units; ++u) add(u, mb, false);
    for (int u = units - 1; u >= 0; --u) {
      if (!kept_gathered(u)) add(u, mb, true);
    }
    last_of_.push_back(size() - 1);
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
  for (int k = 0; k < size(); ++k) {
    const Gather& g = (*this)[k];
    if (g.unit == unit && g.micro_batch == micro_batch && g.backward == backward) return k;
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
