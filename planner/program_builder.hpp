#pragma once
// Builds the Program of one training step for one rank from the model, its
// plan and the scenario's training settings: all-gathers (with the strategy's
// casts and copies), compute forward and backward per micro-batch (recompute
// under activation checkpointing), reduce-scatters (and HSDP all-reduces),
// gradient accumulation and the optimizer, with streams and dependencies.
// Prefetch depth and reshard-after-forward shape the all-gather schedule;
// the strategy's backpressure rule (StrategyTraits::reduce_queue_*) bounds
// how far the backward runs ahead of the reduce-scatters.

#include "models/model_spec.hpp"
#include "planner/checkpointing_plan.hpp"
#include "planner/pipeline_schedule.hpp"
#include "planner/pipeline_stages.hpp"
#include "planner/plan.hpp"
#include "planner/program.hpp"
#include "planner/resolved_scenario.hpp"
#include "planner/scenario_plan.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

// One stage of a pipeline (training.mesh.pp > 1): which chunks it runs and
// in what order (planner/pipeline_stages.hpp, pipeline_schedule.hpp).
struct StageOfPipeline {
  const PipelineStages* stages = nullptr;
  int stage = 0;
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
};

struct ProgramInputs {
  const models::ModelSpec* model = nullptr;  // what one rank of the mesh holds and runs
  const Plan* plan = nullptr;
  const scenarios::Training* training = nullptr;
  int64_t replicate_ranks = 1;
  // The whole model, for the model FLOPs of MFU; nullptr: `model` is it.
  const models::ModelSpec* whole_model = nullptr;
  // A pipeline stage's: its plan holds its units alone; nullptr: no stages.
  const StageOfPipeline* pipeline = nullptr;
};

ProgramInputs program_inputs(const ResolvedScenario& resolved, const Plan& plan);

Program build_program(const ProgramInputs& inputs, int rank = 0);

// Every stage's Program (rank 0 of each), each over its stage's plan.
std::vector<Program> build_stage_programs(const ResolvedScenario& resolved, const PipelinePlan& pipeline);

// What a scenario runs, as simulate and tune build it: a pipeline's stage
// Programs (each for its stage's rank 0), or the representative rank's.
struct ScenarioPrograms {
  std::vector<Program> programs;
  int rank = 0;  // without stages: the representative rank
};
ScenarioPrograms build_scenario_programs(const ResolvedScenario& resolved);

// The rank whose Program stands for the group: the most loaded owner under
// an owner-based optimizer (Muon, Shampoo), whose step is the group's
// critical path; rank 0 otherwise (every rank does the same work).
int representative_rank(const ProgramInputs& inputs);

}  // namespace ragged::planner
