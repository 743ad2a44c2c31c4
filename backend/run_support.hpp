#pragma once
// The steps of `ragged run` every device shares: the launch checks, the plan
// and Program of this rank, its shards initialised from the seed, and the
// comparison of the trained parameters with the unsharded reference.

#include <cstdint>
#include <optional>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/finite_check.hpp"
#include "backend/rank_groups.hpp"
#include "backend/reference.hpp"
#include "backend/run.hpp"
#include "backend/run_stages.hpp"
#include "backend/unit_shard.hpp"
#include "models/model_spec.hpp"
#include "planner/plan.hpp"
#include "planner/program.hpp"
#include "planner/resolved_scenario.hpp"

namespace ragged::backend {

// InputError unless as many processes run as the scenario has GPUs and the
// executor runs its mesh (either: tp with cp or with ep; `host`: also
// pipeline stages without a mesh).
void check_launch(const planner::ResolvedScenario& resolved, const Communicator& comm, bool host);
// Every rank runs the same scenario and options, checked before any other
// collective (ranks given different files met in collectives of different
// sizes: MPI_ERR_TRUNCATE, or a hang). Throws AgreedInputError on every rank.
void check_ranks_agree(const planner::ResolvedScenario& resolved, const RunOptions& options, Communicator& comm);

// The scenario's plan with parameters of `param_dtype` (alignment), and
// AgreedInputError when check_plan_for_run refuses it (every rank plans the
// same world, so every rank finds it).
planner::Plan plan_for_run(const planner::ResolvedScenario& resolved, models::DType param_dtype);
// The checks plan_for_run makes, on a plan made elsewhere (a pipeline stage's).
void check_plan_for_run(const planner::ResolvedScenario& resolved, const planner::Plan& plan);

// This rank's place in an expert-parallel mesh: its ep rank (whose experts
// it holds) and its rank in the expert shard group.
struct ExpertPlace {
  int rank = 0;
  int shard_rank = 0;
};

// This rank's shard of every unit (`rank` in the shard group; a unit of
// routed experts: `experts.shard_rank` in the expert shard group), its
// master initialised from `seed`; a mesh rank's (`whole`: the whole model)
// with its pieces' values.
std::vector<UnitShard> make_shards(const models::ModelSpec& model, const planner::Plan& plan, int rank, uint64_t seed,
                                   const models::ModelSpec* whole = nullptr, int tp_rank = 0, ExpertPlace experts = {});

// Every rank's shards, gathered into whole tensors on every rank (a unit of
// routed experts over `expert_comm`, its expert shard group).
ModelParams gather_params(std::vector<UnitShard>& shards, Communicator& comm, Communicator* expert_comm = nullptr);

// Every rank takes part in the gather over its shard group; world rank 0
// trains the reference for `steps` steps and fills `result`'s reference
// fields. Under HSDP every replica's shards must also equal replica 0's
// bitwise (result.replica_differing; reference_ok is false otherwise).
// Pipeline stages (run_stages.hpp) bring their units to world rank 0, and
// the reference reduces as they do: once a step.
// The trained whole model at world rank 0 on a mesh: each rank's pieces
// (tp's cuts, an ep rank's experts: expert_pieces.hpp), all-gathered in
// their FSDP groups, sent by the first ep group's ranks (the first
// data-parallel place under tp and cp alone) and laid into whole tensors
// (empty elsewhere).
ModelParams gather_mesh_params(const planner::ResolvedScenario& resolved, std::vector<UnitShard>& shards,
                               const RankGroups& groups);
void judge_against_reference(const planner::ResolvedScenario& resolved, std::vector<UnitShard>& shards,
                             const RankGroups& groups, const RunStages& stages, Communicator& world, int64_t steps,
                             const RunOptions& options, RunResult& result);

// "layers.1 all_gather (all_gather, unit 2)": an op of `program` in messages.
std::string op_label(const planner::Program& program, int64_t op);

// Checks that --inject-nan names a tensor of the model (InputError).
void check_injection(const models::ModelSpec& model, const std::optional<NanInjection>& injection);

// Where the NaN of --inject-nan goes at `step`: the middle element of the
// injection's tensor, as a unit and an offset in its master shard, on the
// rank whose shard holds it (none on the others, or at another step).
struct NanSlot {
  int unit = 0;
  int64_t offset = 0;
};
std::optional<NanSlot> nan_slot(const models::ModelSpec& model, const std::optional<NanInjection>& injection,
                                int64_t step, const std::vector<UnitShard>& shards);

// Puts that NaN into the host shard.
void inject_nan(const models::ModelSpec& model, const std::optional<NanInjection>& injection, int64_t step,
                std::vector<UnitShard>& shards);

// Agrees this rank's first NaN or infinity of `step` (or none) over the
// world; when any rank has one, names it in result.non_finite and returns
// true: every rank then stops together.
bool stop_on_non_finite(const std::optional<NonFinite>& mine, int64_t step, const models::ModelSpec& model,
                        Communicator& world, RunResult& result);

}  // namespace ragged::backend
