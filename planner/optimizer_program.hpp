#pragma once
// The optimizer's part of a step on sharded parameters: AdamW and block-wise
// 8-bit Adam work on each rank's shard alone; Muon and Shampoo own whole
// matrices (blocks): momentum on the shards, a ragged gather of each matrix
// to its owner (root), Newton-Schulz or preconditioning there, a scatter back.
// Owners are balanced over ranks by matrix cost (largest first onto the least
// loaded rank).

#include <cstdint>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/plan.hpp"
#include "planner/program_writer.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

struct OptimizerContext {
  const models::ModelSpec* model = nullptr;
  const Plan* plan = nullptr;
  scenarios::Optimizer optimizer;
  int rank = 0;
  int64_t param_bytes = 2;   // p
  int64_t master_bytes = 4;  // o
  bool refresh_compute_shard = false;  // ZeRO-3 / Megatron: cast master -> persistent parameter-dtype shard
  bool flat_shards = false;            // the update sees one flat tensor per unit (FSDP1, ZeRO-3)
  // Before the update, the gradients' zeros counted a parameter at a time and
  // read on the host (scenarios::StepStatistics::gradient_zeros).
  bool count_gradient_zeros = false;
};

// One matrix an owner-based optimizer (Muon, Shampoo) processes whole.
struct OwnedMatrix {
  int unit = 0;
  int tensor = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  double flops = 0;  // on its owner, per step
  int owner = 0;     // a rank of `group`
  // The group the matrix's unit is sharded over, and so the ranks its owner
  // is chosen among: the shard group, or for routed experts under expert
  // parallelism the expert shard group (each ep rank owns its own experts'
  // matrices among the ranks sharding them).
  Group group = Group::kShard;
};

// The rank of shard-group rank `shard_rank` in `group` (kShard or
// kExpertShard: the shard group's consecutive ep ranks form an expert group,
// so its rank in the expert shard group is shard_rank / ep).
int rank_in_group(const Plan& plan, Group group, int shard_rank);
// The ranks of `group` (kShard: the shard group; kExpertShard: its expert
// shard groups' size, Plan::ranks / ep).
int64_t group_ranks(const Plan& plan, Group group);

// Whether Muon/Shampoo process a tensor as whole matrices: the hidden
// matrices; embeddings, the head and vectors stay on AdamW (standard Muon
// practice). The host optimizer and the Program decide with this one rule.
bool handled_whole(const models::TensorSpec& tensor);

// Shampoo's work on one rows x cols matrix with blocks of at most `block` x
// `block`, per step (root computations amortised over `frequency` steps), and
// the bytes of its per-block state on the owner.
double shampoo_flops(int64_t rows, int64_t cols, int block, int frequency);
int64_t shampoo_state_bytes(int64_t rows, int64_t cols, int block);

// The matrices Muon/Shampoo own and their owners; empty for Adam variants.
std::vector<OwnedMatrix> owned_matrices(const OptimizerContext& context);

// Owners for work items of `costs`: longest processing time first onto the
// least loaded of `ranks` ranks.
std::vector<int> assign_owners(const std::vector<double>& costs, int64_t ranks);

// Adds the optimizer ops; grads_ready[u] is the op after which unit u's
// gradient shard is final.
void add_optimizer_ops(ProgramWriter& writer, const OptimizerContext& context, const std::vector<uint32_t>& grads_ready);

// Optimizer state bytes on one rank.
int64_t optimizer_state_bytes(const OptimizerContext& context);

}  // namespace ragged::planner
