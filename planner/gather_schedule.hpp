#pragma once
// The all-gathers of a step in the order their units compute, and what the
// Program builder has issued of each: per micro-batch every unit's forward
// gather, then the backward re-gathers of the units not kept gathered from
// their forward to their backward. Under pipeline parallelism the passes
// come in the schedule's order, and a stage keeps each unit gathered from
// its first forward to its last backward (one gather a step), or, resharding
// after each forward as torch.distributed.pipelining over FSDP2 with
// reshard_after_forward=True does, gathers a unit for every pass that finds
// it resharded: each backward, and each forward not right after one.

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace ragged::planner {

struct Gather {
  int unit = 0;
  int micro_batch = 0;
  bool backward = false;
  std::vector<int> params_buffers;  // what compute reads (ZeRO-3: one per fetch group)
  // Gathered buffers still to be copied out of, with their all-gathers.
  std::vector<std::pair<int, uint32_t>> copy_sources;
  uint32_t ready = 0;      // op after which the parameters are usable
  uint32_t freed = 0;      // the free of the parameters
  uint32_t computed = 0;   // the forward compute that used them (without resharding, the prefetch slot)
  bool emitted = false;
  bool is_freed = false;
  bool is_computed = false;
};

// One forward or backward pass over `units` (in the order they compute) of a micro-batch.
struct GatherPass {
  std::vector<int> units;
  int micro_batch = 0;
  bool backward = false;
};

// How a pipeline stage's passes gather (GatherSchedule over passes).
enum class StageGathers {
  kEveryPass,    // every forward; a backward unless the unit is kept gathered (no stages)
  kOncePerStep,  // at its first forward, serving every pass of the step
  // A forward reshards the unit unless it is kept gathered; a backward leaves
  // it gathered (the stage turns FSDP's reshard after backward off until the
  // last backward): a pass gathers when it finds the unit resharded.
  kWhenResharded,
};

class GatherSchedule {
 public:
  GatherSchedule(int units, int micro_batches, const std::function<bool(int unit)>& kept_gathered);
  // The passes in their order; `once_per_step`: one gather per unit, at its
  // first forward, serving every micro-batch.
  GatherSchedule(const std::vector<GatherPass>& passes, const std::function<bool(int unit)>& kept_gathered,
                 StageGathers mode);

  int size() const { return static_cast<int>(gathers_.size()); }
  Gather& operator[](int k) { return gathers_[static_cast<size_t>(k)]; }
  const Gather& operator[](int k) const { return gathers_[static_cast<size_t>(k)]; }

  // The index of unit u's gather of micro-batch mb (its forward's or its
  // backward's), or -1. kOncePerStep: the unit's one gather;
  // kWhenResharded: the gather whose parameters that pass computes with.
  int find(int unit, int micro_batch, bool backward) const;
  // The latest earlier gather of the same unit as gather k, or -1.
  int previous_of_unit(int k) const;
  // The index of micro-batch mb's last gather.
  int last_of_micro_batch(int micro_batch) const { return last_of_[static_cast<size_t>(micro_batch)]; }

 private:
  void add(int unit, int micro_batch, bool backward);

  std::vector<Gather> gathers_;
  std::vector<int> last_of_;  // per micro-batch
  StageGathers mode_ = StageGathers::kEveryPass;
  std::map<std::tuple<int, int, bool>, int> serving_;  // kWhenResharded: (unit, micro-batch, backward) -> gather
};

}  // namespace ragged::planner
