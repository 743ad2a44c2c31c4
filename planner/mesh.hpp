#pragma once
// The device mesh of a scenario (scenario.proto, Mesh; docs/MESH.md): pp x
// dp_replicate x dp_shard x cp x tp ranks, ep carved out of dp_shard x cp for
// the routed experts (out of tp x dp_shard x cp when they are whole,
// expert_tp 1). Ranks are numbered tp innermost, then cp, dp_shard,
// dp_replicate and pp: rank = (((p * dp_replicate + r) * dp_shard + s) * cp +
// c) * tp + t. Every group of
// a collective is then a strided run of ranks (GroupSpan), which is what the
// simulator maps onto nodes and what an executor splits communicators by.

#include <cstdint>
#include <string>

#include "models/model_spec.hpp"
#include "planner/group.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::planner {

// How expert parallelism moves tokens to their experts' ranks and which
// experts they pick (scenario.proto, ExpertDispatcher and ExpertRouting;
// planner/expert_dispatch.hpp counts the copies sent).
enum class ExpertDispatcher { kAllToAll, kDeepEp };
enum class ExpertRouting { kUniform, kConsecutive };
// How the tp collectives meet their GEMMs (scenario.proto, TpOverlap;
// planner/tp_overlap.hpp).
enum class TpOverlap { kNone, kAsyncTp, kUserbuffers };

struct Mesh {
  int64_t dp_replicate = 1;
  int64_t dp_shard = 1;
  int64_t cp = 1;
  int64_t tp = 1;
  int64_t ep = 1;
  bool sequence_parallel = true;
  int64_t pp = 1;
  ExpertDispatcher expert_dispatcher = ExpertDispatcher::kAllToAll;
  ExpertRouting expert_routing = ExpertRouting::kUniform;
  // DTensor's [b, s, h] sharded on the sequence (scenario.proto, BATCH_FIRST):
  // every sequence-parallel gather and reduce-scatter is rearranged by a copy
  // of its whole buffer on the compute stream.
  bool batch_first = false;
  bool vocabulary_parallel = true;  // the embedding and the head split by the vocabulary over tp
  bool gathered_logits = false;     // the head's logits all-gathered over tp, the loss whole; the embedding whole
  // Each column-parallel projection redistributes its own input
  // (scenario.proto, PER_PROJECTION); under torch.compile its forward
  // gathers are merged into one (`merged_input_gathers`).
  bool per_projection_inputs = false;
  bool merged_input_gathers = false;
  TpOverlap tp_overlap = TpOverlap::kNone;
  // Each routed expert whole on its rank although tp splits the rest
  // (scenario.proto, expert_tp 1): ep carved out of tp x dp_shard x cp.
  bool whole_experts = false;

  int64_t gpus() const { return pp * dp_replicate * dp_shard * cp * tp; }
  // The ranks of one pipeline stage.
  int64_t stage_ranks() const { return dp_replicate * dp_shard * cp * tp; }
  // FSDP's group for the dense parameters (training.shard_group_size).
  int64_t shard_ranks() const { return dp_shard * cp; }
  // FSDP's group for one expert-parallel rank's routed experts: the ranks of
  // a stage's tp rank holding the same experts (with whole experts, of every
  // tp rank).
  int64_t expert_shard_ranks() const { return dp_shard * cp * (whole_experts ? tp : 1) / ep; }
  // Only FSDP (and HSDP): no tensor, context, expert or pipeline parallelism.
  bool fsdp_only() const { return tp == 1 && cp == 1 && ep == 1 && pp == 1; }
  models::ModelSplit model_split() const {
    return {tp, ep, sequence_parallel, vocabulary_parallel, gathered_logits, whole_experts};
  }
};

// The mesh of a defaulted scenario's training block.
Mesh mesh_of(const scenarios::Training& training);

// The ranks of one group of a kind: a group's members are first + i * stride
// (i < members); the groups of one kind tile every rank of the cluster.
struct GroupSpan {
  int64_t members = 1;
  int64_t stride = 1;
};

GroupSpan group_span(const Mesh& mesh, Group group);

// The mesh's groups with more than one member, for a reader: "tp 8 x cp 2 x
// dp_shard 64 (ep 16)"; "" when FSDP runs alone.
std::string mesh_text(const Mesh& mesh);

}  // namespace ragged::planner
