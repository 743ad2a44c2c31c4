#pragma once
// One interface, one file per strategy: ragged (ours), vescale-paper, fsdp1,
// fsdp2, zero3, megatron, ddp, megatron-ddp. A strategy lays out one unit; plan_model (plan.hpp)
// applies it to every unit of a model.

#include <memory>
#include <string_view>
#include <vector>

#include "planner/unit_layout.hpp"
#include "planner/unit_problem.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

class LayoutStrategy {
 public:
  virtual ~LayoutStrategy() = default;
  virtual std::string_view name() const = 0;
  // Lays out one unit. Must fill slots for every tensor and shard_size; the
  // lower bound is filled by the caller when the strategy leaves it 0.
  virtual UnitLayout plan_unit(const UnitProblem& problem) const = 0;
};

std::unique_ptr<LayoutStrategy> make_ragged_strategy();
std::unique_ptr<LayoutStrategy> make_vescale_paper_strategy();
std::unique_ptr<LayoutStrategy> make_fsdp1_strategy();
std::unique_ptr<LayoutStrategy> make_fsdp2_strategy();
std::unique_ptr<LayoutStrategy> make_zero3_strategy();
std::unique_ptr<LayoutStrategy> make_megatron_strategy();
std::unique_ptr<LayoutStrategy> make_ddp_strategy();  // a group of one: the whole unit
std::unique_ptr<LayoutStrategy> make_megatron_ddp_strategy();  // the distributed optimizer's shards

std::unique_ptr<LayoutStrategy> make_strategy(scenarios::Strategy strategy);

}  // namespace ragged::planner
