#pragma once
// The collectives a device mesh adds around one unit's compute (docs/MESH.md;
// sizes in nccl-tests' convention: the whole buffer S):
//  - tensor parallelism with sequence parallelism (Korthikanti et al. 2022):
//    an all-gather of the tokens' hidden states before each column-parallel
//    region and a reduce-scatter after its row-parallel GEMM, on the tp
//    group; in the backward their conjugates (a reduce-scatter where the
//    forward gathered, an all-gather where it scattered). Without sequence
//    parallelism an all-reduce after each row-parallel GEMM in the forward
//    and after each column-parallel region's input gradient in the backward.
//    The embedding is vocabulary-parallel (its output reduced), the head
//    column-parallel with a vocabulary-parallel loss (three all-reduces of
//    one fp32 value per token: the maximum, the sum of exponentials, the
//    target's logit);
//  - context parallelism: the keys and values of the cp ranks' chunks
//    all-gathered before the attention (torchtitan's default allgather
//    rotation), gathered again in the backward and their gradients
//    reduce-scattered after it (under PyTorch's ring attention, its fp32
//    accumulators' last pass around the ring: MicroBatch::ring_merges_in_fp32);
//  - expert parallelism: the routed experts' token dispatch all-to-all
//    before them and the combine after them, top-k copies of each token at
//    the hidden width; in the backward the same two the other way.
// Recomputation under full activation checkpointing repeats the forward's.

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "planner/compute_work.hpp"
#include "planner/mesh.hpp"
#include "planner/program.hpp"

namespace ragged::planner {


struct MeshCollective {
  OpKind kind = OpKind::kAllGather;
  Group group = Group::kTensor;
  int64_t bytes = 0;
  bool after_compute = false;  // false: the compute waits for it; true: it waits for the compute
  std::string what;            // "tp all-gather", "ep dispatch", ...
};

// The parts a unit computes as (models::UnitPart): a block of a mesh with
// tensor parallelism is cut at its collectives, attention then MLP, so that
// its second all-gather follows the attention's reduce-scatter as it does
// in Megatron's and torchtitan's blocks; with context parallelism the
// attention is cut once more between its projections and its core, where
// the keys and values are gathered; everything else computes whole.
std::vector<models::UnitPart> block_parts(const models::UnitSpec& unit, const models::ModelSpec& model,
                                          const Mesh& mesh);

// Whether the unit routes tokens to experts (a mixture-of-experts block).
bool has_router(const models::UnitSpec& unit);

// How tensor parallelism cut the stored weight of one of the unit's GEMMs:
// kRows its first dimension (a column-parallel projection in nn.Linear's
// [out, in] layout, a row-parallel one in GPT-2's transposed Conv1D),
// kColumns its second, kWhole when it is not cut (or has no weight of its
// name).
models::TensorCut gemm_tp_cut(const models::UnitSpec& unit, const models::GemmShape& gemm);

// Elements of one token's keys and values (both) on a rank: the kv heads'
// under grouped-query attention, every head's under MLA; 0 without
// attention.
int64_t key_value_width(const models::UnitSpec& unit, const models::ModelSpec& model);

// The stream a mesh group's collectives run on.
Stream mesh_stream(Group group);

// Unit `unit`'s collectives (of its `part`) for `pass` on one micro-batch of
// `batch`, with activations of `element_bytes`; in the order they run
// (before the compute, then after it).
std::vector<MeshCollective> mesh_collectives(const models::UnitSpec& unit, const models::ModelSpec& model,
                                             const Mesh& mesh, const MicroBatch& batch, int64_t element_bytes,
                                             Pass pass, models::UnitPart part = models::UnitPart::kWhole);

}  // namespace ragged::planner
