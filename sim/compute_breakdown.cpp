#include "sim/compute_breakdown.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "planner/program_builder.hpp"
#include "planner/scenario_plan.hpp"
#include "traces/unit_breakdown.hpp"

namespace ragged::sim {
namespace {

constexpr std::array<planner::OpKind, 4> kPasses = {planner::OpKind::kComputeFwd, planner::OpKind::kRecompute,
                                                    planner::OpKind::kComputeBwd, planner::OpKind::kTrainMetrics};

std::string pass_name(planner::OpKind kind) {
  switch (kind) {
    case planner::OpKind::kComputeFwd: return "forward";
    case planner::OpKind::kRecompute: return "recompute";
    case planner::OpKind::kTrainMetrics: return "metrics";
    default: return "backward";
  }
}

void add(ComputeParts& into, const ComputeParts& p, double scale = 1.0) {
  into.gemm += scale * p.gemm;
  into.gemm_flops += scale * p.gemm_flops;
  into.attention += scale * p.attention;
  into.attention_flops += scale * p.attention_flops;
  into.other += scale * p.other;
  into.memory += scale * p.memory;
  into.memory_bytes += scale * p.memory_bytes;
  into.launches += scale * p.launches;
  into.kernels += p.kernels;
}

// One unit's passes, summed over the step's micro-batches.
struct UnitPasses {
  std::string name;
  std::map<planner::OpKind, ComputeParts> passes;
};

}  // namespace

std::vector<UnitComputeParts> compute_breakdown(const planner::ResolvedScenario& resolved,
                                                const SimulationOptions& options) {
  const planner::Plan plan = planner::plan_scenario(resolved);
  const planner::ProgramInputs inputs = planner::program_inputs(resolved, plan);
  const planner::Program program = planner::build_program(inputs, planner::representative_rank(inputs));
  const ComputeModel model = compute_model_of(resolved.scenario(), options);

  std::map<int, UnitPasses> units;
  for (const planner::Op& op : program.ops) {
    if (op.unit < 0 || std::find(kPasses.begin(), kPasses.end(), op.kind) == kPasses.end()) {
      continue;
    }
    UnitPasses& unit = units[op.unit];
    if (unit.name.empty()) unit.name = op.name.substr(0, op.name.find(' '));
    add(unit.passes[op.kind], model.parts(op));
  }

  std::vector<UnitComputeParts> rows;
  std::vector<const UnitPasses*> blocks;
  auto emit = [&](const std::string& name, const std::vector<const UnitPasses*>& group) {
    for (planner::OpKind kind : kPasses) {
      UnitComputeParts row{name, pass_name(kind), static_cast<int>(group.size()), {}};
      bool any = false;
      for (const UnitPasses* unit : group) {
        const auto it = unit->passes.find(kind);
        if (it == unit->passes.end()) continue;
        add(row.parts, it->second, 1.0 / static_cast<double>(group.size()));
        any = true;
      }
      row.parts.kernels /= static_cast<int64_t>(group.size());
      if (any) rows.push_back(row);
    }
  };
  auto flush_blocks = [&] {
    if (blocks.empty()) return;
    emit(blocks.size() == 1 ? blocks.front()->name : traces::averaged_blocks_name(blocks.size()), blocks);
    blocks.clear();
  };
  for (const auto& [index, unit] : units) {
    if (traces::is_block_unit(unit.name)) {
      blocks.push_back(&unit);
      continue;
    }
    flush_blocks();
    emit(unit.name, {&unit});
  }
  flush_blocks();
  return rows;
}

}  // namespace ragged::sim
