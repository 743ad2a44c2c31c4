#pragma once
// Internal to the GPU workload, host-only: the shapes of each unit and where
// each activation lives inside the unit's buffers, by byte offsets (the same
// numbers gpu_unit_bytes reports, so the accounting cannot drift from what
// the kernels touch).
//
// A block's cache is one region per tensor its backward reads. Forward
// places the regions it keeps one after the other in `saved`; the regions it
// drops go, in the same order, to the start of the backward workspace (where
// recompute() rebuilds them) and, during forward, to the private forward
// scratch, where regions whose lifetimes do not overlap share memory.
// Backward's scratch follows the rebuilt regions; the MLP's and the
// attention's scratch overlap (the MLP's is dead when the attention's starts).
//
// A mixture-of-experts block caches, instead of the dense MLP's outputs,
// the router's fp32 logits (without its bias), every routed copy of a token
// (its norm-2 row, gathered by expert), the routed experts' gate/up/product
// rows in the same order, and the shared experts' gate/up/product; the dense
// regions are empty (and the MoE ones in a dense block), so one list serves
// both.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/gpu_workload.hpp"
#include "backend/workload_internal.hpp"

namespace ragged::backend::gpu::detail {

using models::Checkpointing;

// Every region starts 16-byte aligned (vector loads, cuBLAS's tensor-core
// kernels); region sizes are rounded up to it, so offsets are prefix sums.
inline constexpr int64_t kRegionAlignment = 16;
int64_t round_up(int64_t bytes, int64_t alignment = kRegionAlignment);

// The block's cache: input, norm outputs, projections, attention output,
// residual, MLP gate/up outputs and their SwiGLU product. With q/k norms, q
// and k hold the projections before the norm (the attention applies it).
enum BlockRegion {
  kInput,
  kNorm1,
  kQuery,
  kKey,
  kValue,
  kMixed,
  kResidual1,
  kNorm2,
  kGate,
  kUp,
  kProduct,
  kLogits,
  kRoutedInput,
  kRoutedGate,
  kRoutedUp,
  kRoutedProduct,
  kSharedGate,
  kSharedUp,
  kSharedProduct,
  kBlockRegions
};
// Backward scratch: the MLP phase (gradients of the gate, up and norm-2
// outputs; with experts also one expert's rows of hidden width, and once
// the experts are done the logits' gradient in their place), then the
// attention phase (of q, k, v and the norm-1 output; the norm-1 output's
// place first holds the softmax's statistics, two doubles per token and
// head).
enum BlockScratch { kDGate, kDUp, kDNorm2, kDLogits, kDRows, kDQuery, kDKey, kDValue, kDNorm1, kBlockScratches };

using Regions = std::array<std::byte*, kBlockRegions>;

// Whether forward keeps the region in `saved` under `mode`. Selective
// checkpointing of a dense block follows TorchTitan's op-level policy (the
// input, q, v, the attention output and the gate projection kept: the
// outputs of the 1st, 3rd and 5th GEMMs and the attention's); k, the o
// projection's residual, both norms, up and the product are rebuilt. A
// mixture-of-experts block rebuilds its norms and products only.
bool block_keeps(BlockRegion region, Checkpointing mode, bool moe);

struct BlockPlan {
  ragged::backend::detail::BlockLayout layout;
  int64_t tokens = 0, seq_len = 0, hidden = 0, q_width = 0, kv_width = 0, ffn = 0, element = 0;
  // Experts: width of a routed expert and of the shared experts, and the
  // most routed copies one expert can get: every token (dropless routing; a
  // token's top_k experts are distinct).
  int64_t expert_ffn = 0, shared_ffn = 0, expert_rows = 0;
  std::array<int64_t, kBlockRegions> bytes{};
  std::array<int64_t, kBlockScratches> scratch_offset{};  // from the start of the scratch
  int64_t scratch_bytes = 0;

  int64_t kept_bytes(Checkpointing mode) const;
  int64_t saved_bytes() const { return kept_bytes(Checkpointing::kNone); }
  int64_t rebuilt_bytes(Checkpointing mode) const { return saved_bytes() - kept_bytes(mode); }
  // Offset of a region in `saved` when kept under `mode`, else in the rebuilt area.
  int64_t offset(BlockRegion region, Checkpointing mode) const;
  // Offset of a dropped region in the forward scratch, and that scratch's size.
  int64_t forward_offset(BlockRegion region, Checkpointing mode) const;
  int64_t forward_scratch_bytes(Checkpointing mode) const;
  // Every region's address: kept ones in `saved`, the others in `dropped`,
  // the forward scratch (sharing slots) or the backward workspace.
  Regions regions(Checkpointing mode, std::byte* saved, std::byte* dropped, bool forward_scratch) const;
  // The most forward keeps in an activation buffer of `capacity` bytes with
  // `carved` bytes of forward scratch; InputError naming `unit` when that
  // is not even its input, or when the scratch is too small.
  Checkpointing mode_for(int64_t capacity, int64_t carved, const std::string& unit) const;
};

// The head: input, final-norm output, fp32 probabilities; backward scratch:
// the logits' gradient in the activation dtype (bf16 only; fp32 overwrites
// the probabilities) and the norm output's gradient.
struct HeadPlan {
  int64_t tokens = 0, hidden = 0, vocab = 0, element = 0;
  int64_t input_bytes = 0, norm_bytes = 0, probs_bytes = 0;
  int64_t dlogits_bytes = 0, dnorm_bytes = 0;
  int norm = -1, weight = -1;  // tensor indices

  int64_t saved_bytes() const { return input_bytes + norm_bytes + probs_bytes; }
  int64_t scratch_bytes() const { return dlogits_bytes + dnorm_bytes; }
};

// Throw InputError for a unit the GPU workload does not run.
BlockPlan block_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config, int unit);
HeadPlan head_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config);

// The private block, carved by offsets (each 256-byte aligned, as the arena).
enum PrivateBuffer {
  kStream0,       // the residual stream: value forward, gradient backward
  kStream1,       // (ping-pong)
  kTokens,        // int32 per token
  kLabels,        // int32 per token
  kTokenOrder,    // positions sorted by token (stable), for the embedding's backward
  kTokenRows,     // per vocabulary row, where its positions start in kTokenOrder (vocab + 1)
  kExpertRows,    // the routing tables of the block running (routing_layout; MoE only)
  kExpertOutput,  // one expert's output rows during forward (MoE only)
  kRowLosses,     // double per token
  kLossSum,       // one double: the sum of the head forwards' mean losses
  kForwardScratch,
  kAttentionScratch,  // one head's scores for the GEMM attention (attention_gemm.hpp)
  kPrivateBuffers
};
struct PrivatePlan {
  std::array<int64_t, kPrivateBuffers> offset{};
  int64_t forward_scratch = 0;     // bytes at offset[kForwardScratch]
  int64_t attention_scratch = 0;   // bytes at offset[kAttentionScratch]; 0: the reference attention kernels
  int64_t bytes = 0;
};
// The GEMM attention's scratch for `model`'s blocks (0 where none can take it:
// q/k norms or sinks, or RAGGED_GPU_ATTENTION=reference in the environment,
// which keeps the float64 reference kernels for a comparison).
int64_t gemm_attention_private_bytes(const models::ModelSpec& model, const GpuWorkloadConfig& config);
PrivatePlan private_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config);

// What the running MoE block's routing needs (MoeRouting): the routing
// tables of its routed copies and one expert's output rows, the most any
// block of `model` needs (0 for a dense model).
struct ExpertBuffers {
  int64_t tables = 0, output = 0;
};
ExpertBuffers expert_buffers(const models::ModelSpec& model, const GpuWorkloadConfig& config);

// The routing tables of one block's micro-batch in the private kExpertRows
// buffer, byte offsets for `copies` = tokens x top_k routed copies: per copy
// (expert by expert, each expert's in token order) its token, its gate and
// its slot t top_k + j (token t's j-th choice); per slot its expert and gate;
// then per slot the gate's gradient (double, backward's scratch).
struct RoutingLayout {
  int64_t rows = 0, gates = 0, slots = 0, slot_experts = 0, slot_gates = 0, dgates = 0, bytes = 0;
};
RoutingLayout routing_layout(int64_t copies);

// One block's routing as the GPU workload uploads it, from its router's
// logits [tokens x experts] with the bias added: the host workload's
// route_top_k (workload_moe.cpp), so that both route every token alike.
// Expert e's copies are [offsets[e], offsets[e + 1]).
struct ExpertRouting {
  std::vector<int64_t> offsets;       // experts + 1
  std::vector<int32_t> rows, slots;   // per copy
  std::vector<float> gates;           // per copy
  std::vector<int32_t> slot_experts;  // per slot
  std::vector<float> slot_gates;      // per slot
};
ExpertRouting route_experts(const ragged::backend::detail::MoeLayout& lay, int64_t tokens, std::vector<float> logits);

// The private memory of a tensor-parallel rank's workload (gpu_workload_mesh.cpp),
// byte offsets into one block: it keeps every unit's activations itself, as
// the host workload does, rather than in the Program's activation buffers
// (the parts' caches outlive their compute op). `rows` = tokens / tp: a
// rank's rows of a hidden state between the parts.
enum MeshBuffer {
  kMeshHeadCache,     // the head's input (gathered), norm output, fp32 logits then probabilities
  kMeshStats,         // the loss's statistics, [tp][tokens][3] doubles
  kMeshRowLosses,     // double per token
  kMeshLossSum,       // one double
  kMeshLogitsGrad,    // the logits' gradient (bf16; fp32 overwrites the probabilities)
  kMeshPartial,       // a part's partial output or input gradient, tokens x hidden, reduce-scattered in place
  kMeshGradGathered,  // a backward part's gathered output gradient, tokens x hidden
  kMeshScratch,       // backward scratch (the largest block's or the head's)
  kMeshGrad,          // the rank's rows of the gradient passed down
  kMeshResidualGrad,  // the rows of a block's residual gradient between its parts
  kMeshTokens,        // int32 per token: the rank's vocabulary row, -1 off the rank
  kMeshLabels,
  kMeshTokenOrder,
  kMeshTokenRows,  // vocab + 1
  // Context parallelism (empty without it): the key/value exchange, cp
  // slots (KeyValueSlot, context_chunks.hpp: a rank's tokens' keys, then
  // their values); every token's keys and values of the rank's sequences,
  // gathered, and their gradients; int32 per local token, its position;
  // int32 per token of the group, gathered_key_rows.
  kMeshKeyValues,
  kMeshKeysAll,
  kMeshValuesAll,
  kMeshKeyGradsAll,
  kMeshValueGradsAll,
  kMeshPositions,
  kMeshKeyRows,
  // Mixture-of-experts blocks (empty without): the running block's routing (ExpertBuffers).
  kMeshExpertRows,
  kMeshExpertOutput,
  // Expert parallelism (empty without; ExpertsPlan's exchange sizes): what an
  // owner sends (its experts' outputs, their input gradients), what an
  // exchange receives that no unit keeps (an owner's output gradients, a
  // source's input gradients), an owner's backward scratch (gate and up
  // gradients), and each peer's rows per local expert (int64, sent, received).
  kMeshExpertSend,
  kMeshExpertReceive,
  kMeshExpertScratch,
  kMeshExpertCounts,
  kMeshBuffers
};
struct MeshPlan {
  // tokens: the rank's (sequences x seq_len / cp); seq_len: a whole
  // sequence's; kv_width: a token's keys (and values) on this rank.
  int64_t tokens = 0, rows = 0, hidden = 0, vocab = 0, element = 0;
  int cp = 1;
  int64_t sequences = 0, seq_len = 0, kv_width = 0;
  std::array<int64_t, kMeshBuffers> offset{};
  // Per unit (-1: none): its output rows, a block's rows after its
  // attention, a block's cache (BlockPlan::regions with nothing dropped) or
  // an experts unit's (ExpertsPlan).
  std::vector<int64_t> output, residual, cache;
  int64_t bytes = 0;
};
// InputError when `tp` does not split the micro-batch's tokens in equal rows,
// or `cp` its sequences into 2 x cp equal chunks.
MeshPlan mesh_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config, int tp, int cp = 1);
// An experts unit's memory on an expert-parallel rank of `model`
// (model.split.ep ranks, gpu_workload_experts.cpp), byte offsets into its
// cache: as the source of its tokens' routed copies, what the experts made
// of them (copy order, as its block's kRoutedInput sends them) and its
// block's shared experts' output; as the owner of `layout.local` experts,
// the rows every source sent (expert_rows.hpp's owner order) and their
// gate, up and SwiGLU product. `rows` bounds the rows an owner receives
// (owner_row_bound: routing is dropless). The exchange buffers every experts
// unit shares come last.
struct ExpertsPlan {
  ragged::backend::detail::ExpertsLayout layout;
  bool has_shared = false;
  int ranks = 1;
  int64_t tokens = 0, top_k = 0, hidden = 0, ffn = 0, element = 0, rows = 0;
  int64_t combined = 0, shared_output = 0, input = 0, gate = 0, up = 0, product = 0, bytes = 0;
  int64_t send_bytes = 0, receive_bytes = 0, scratch_bytes = 0, counts_bytes = 0;
};
ExpertsPlan experts_plan(const models::ModelSpec& model, const GpuWorkloadConfig& config, int unit);
// InputError naming what an experts unit holds that the GPU does not run
// (fused or biased experts).
void check_experts_unit(const models::ModelSpec& model, int unit);

// The blocks' and the head's config on a cp rank: seq_len / cp tokens of each sequence.
GpuWorkloadConfig context_local(const GpuWorkloadConfig& config, int cp);

// A stable counting sort of the positions by token: rows[v] is where token
// v's positions start in `order` (the embedding's backward sums them in
// order). Negative ids (rows another tensor-parallel rank holds) are left out.
void group_by_token(const std::vector<int32_t>& tokens, int64_t vocab, std::vector<int32_t>& order,
                    std::vector<int32_t>& rows);

}  // namespace ragged::backend::gpu::detail
