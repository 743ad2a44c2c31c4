#include "planner/compute_work.hpp"

#include <cmath>

#include "planner/eager_kernels.hpp"

namespace ragged::planner {
int64_t gemm_rows(const models::GemmShape& g, const MicroBatch& batch) {
  return std::max<int64_t>(1, std::llround(static_cast<double>(batch.tokens()) * g.token_fraction));
}

namespace {

// The attention core runs in the attention's core part.
bool has_attention(const models::UnitSpec& unit, models::UnitPart part) {
  return unit.compute.attention && in_part(models::UnitPart::kAttentionCore, part);
}

bool math_attention(const models::UnitSpec& unit, const MicroBatch& batch, models::UnitPart part) {
  return has_attention(unit, part) && batch.kernels.attention == models::AttentionKernel::kMath;
}

bool chunked_logits(const models::GemmShape& g, const MicroBatch& batch) {
  return g.logits && batch.kernels.loss == models::LossKernel::kChunked;
}

AttentionWork attention(const models::UnitSpec& unit, const MicroBatch& batch, double flops_factor,
                        models::UnitPart part) {
  AttentionWork a;
  if (!has_attention(unit, part) || math_attention(unit, batch, part)) return a;
  const models::AttentionShape& shape = *unit.compute.attention;
  a.batch = batch.sequences;
  a.seq_len = batch.seq_len;
  a.heads = shape.heads;
  a.qk_head_dim = shape.qk_head_dim;
  a.v_head_dim = shape.v_head_dim;
  a.window = shape.window;
  double per_token = shape.forward_flops_per_token(batch.seq_len);
  if (batch.kernels.dense_attention_mask) {
    // A dense attn_mask (SDPA without is_causal): every query scores every
    // key of its sequence and the mask discards the rest, so no block is
    // skipped, a sliding window's included.
    a.window = 0;
    per_token = shape.flops_per_key() * static_cast<double>(batch.seq_len);
  }
  a.flops = flops_factor * per_token * static_cast<double>(batch.tokens());
  a.kernel = batch.kernels.attention;
  return a;
}

// PyTorch's math backend (_scaled_dot_product_attention_math) per sequence
// and head: S = QK^T ([s x d] @ [d x s]), an in-place add of the causal
// mask, a softmax, O = PV; every score of the s x s square, the causal half
// included. Scores are in the compute dtype: unit.activations.scores_per_key
// is heads x its bytes.
struct MathAttention {
  int64_t s = 0, qk = 0, v = 0, count = 0;
  double score_bytes = 0;  // bytes of one s x s tensor of one sequence and head
};

MathAttention math_shape(const models::UnitSpec& unit, const MicroBatch& batch) {
  const models::AttentionShape& shape = *unit.compute.attention;
  const double element = unit.activations.scores_per_key / static_cast<double>(shape.heads);
  return {batch.seq_len, shape.qk_head_dim, shape.v_head_dim, batch.sequences * shape.heads,
          element * static_cast<double>(batch.seq_len) * static_cast<double>(batch.seq_len)};
}

// Whether the unit's element-wise ops run fused (compiled) for the batch.
bool fused(const models::UnitSpec& unit, const MicroBatch& batch) {
  return batch.fused_elementwise && (!batch.fused_blocks_only || models::is_block_part(unit.kind));
}

// PyTorch's ring attention (_templated_ring_attention, _SDPAMerger and
// _templated_ring_attention_backward, convert_to_f32 by default) on the cp
// rank that runs every step whole (the last, under the load-balanced
// chunks; the others wait for it at the next collective). Per element of
// the rank's attention output (heads x value head dim a token) and of its
// keys and values, eager: the forward casts each step's output to fp32
// (2 B read, 4 written), merges every step after the first as
// out - sigmoid(lse_i - lse) * (out - out_i) (three fp32 passes: 32 B),
// casts the result back (6 B) and concatenates the keys and values for
// each next step (4 B); the backward zeroes fp32 accumulators (4 B), adds
// each step's gradient to them (10 B; the keys' and values' half-chunks
// re-concatenated: 13 B), flattens the keys' and values' for the ring
// (8 B) and casts them back (6 B). Compiled, a merge or an accumulation is
// one pass: the fp32 accumulator and the step's result read, the
// accumulator written (10 B). SAC saves the attention's output, so its
// selective recompute reruns none of this (recompute_work).
struct RingMerge {
  double bytes_per_token = 0;
  int64_t kernels = 0;
};

RingMerge ring_merge_work(const models::UnitSpec& unit, const MicroBatch& batch, bool backward, models::UnitPart part) {
  if (batch.cp < 2 || !batch.ring_merges_in_fp32 || !has_attention(unit, part) || math_attention(unit, batch, part))
    return {};
  const models::AttentionShape& shape = *unit.compute.attention;
  const double out = static_cast<double>(shape.heads * shape.v_head_dim);
  const double kv = static_cast<double>(batch.key_value_width);
  const double cp = static_cast<double>(batch.cp);
  const int64_t steps = batch.cp;
  if (fused(unit, batch)) {
    if (!backward) return {10.0 * (cp - 1) * out, steps - 1};
    return {10.0 * cp * (out + kv), 2 * steps};
  }
  if (!backward) {
    return {(6.0 * cp + 32.0 * (cp - 1) + 6.0) * out + 4.0 * (cp - 1) * kv,
            steps + 9 * (steps - 1) + 1};  // casts, 8 merge ops and a concatenation per later step, the cast back
  }
  return {(10.0 + 10.0 * cp) * out + (20.0 + 13.0 * (cp - 1) + 8.0 * cp) * kv,
          5 + 6 * steps};  // zeroes and casts back; adds, half-chunk concatenations and the ring's flattening per step
}

void add_ring_merges(const models::UnitSpec& unit, const MicroBatch& batch, bool backward, models::UnitPart part,
                     ComputeWork& work) {
  const RingMerge merge = ring_merge_work(unit, batch, backward, part);
  work.elementwise_bytes += merge.bytes_per_token * static_cast<double>(batch.tokens());
  work.elementwise_kernels += merge.kernels;
}

// Forward: the two batched GEMMs; the mask add reads the scores and the mask
// and writes the scores (3 passes), the softmax reads and writes (2). Fused
// (torch.compile): one pass reads the scores and writes the probabilities.
void add_math_forward(const models::UnitSpec& unit, const MicroBatch& batch, ComputeWork& work) {
  const MathAttention m = math_shape(unit, batch);
  work.gemms.push_back({m.s, m.s, m.qk, m.count});  // QK^T
  work.gemms.push_back({m.s, m.v, m.s, m.count});   // PV
  const bool fuse = fused(unit, batch);
  work.elementwise_bytes += (fuse ? 2.0 : 5.0) * m.score_bytes * static_cast<double>(m.count);
  work.elementwise_kernels += fuse ? 1 : 2;  // the mask add and the softmax
}

// Backward: dP = dO V^T, dV = P^T dO, the softmax backward (reads dP and P,
// writes dS), dQ = dS K, dK = dS^T Q.
void add_math_backward(const models::UnitSpec& unit, const MicroBatch& batch, ComputeWork& work) {
  const MathAttention m = math_shape(unit, batch);
  work.gemms.push_back({m.s, m.s, m.v, m.count});   // dP
  work.gemms.push_back({m.s, m.v, m.s, m.count});   // dV
  work.gemms.push_back({m.s, m.qk, m.s, m.count});  // dQ
  work.gemms.push_back({m.s, m.qk, m.s, m.count});  // dK
  work.elementwise_bytes += 3.0 * m.score_bytes * static_cast<double>(m.count);
  work.elementwise_kernels += 1;  // the softmax backward
}

// Which of a unit's element-wise ops a pass takes: all, or the head's
// backward split at its loss (ElementwiseOp::loss).
enum class Ops { kAll, kLoss, kNotLoss };

bool selected(const models::ElementwiseOp& op, Ops ops) { return ops == Ops::kAll || op.loss == (ops == Ops::kLoss); }

// Element-wise traffic of a unit's forward or backward for the batch, eager or fused.
double elementwise_bytes(const models::UnitSpec& unit, const MicroBatch& batch, bool backward, models::UnitPart part,
                         Ops ops = Ops::kAll) {
  const bool fuse = fused(unit, batch);
  double per_token = 0;
  for (const models::ElementwiseOp& op : unit.compute.elementwise) {
    if (!selected(op, ops) || !in_part(op.part, part)) continue;
    const EagerFactors eager = eager_traffic_factors(op.name);
    const double bytes = backward ? op.backward_bytes() : op.bytes_per_token;
    const bool one_kernel = fuse || fused_by_kernel_choice(op.name, batch.kernels);
    per_token += bytes * (one_kernel ? 1.0 : (backward ? eager.backward : eager.forward));
  }
  return per_token * static_cast<double>(batch.tokens());
}

// One of a unit's GEMMs at rows x cols x depth: the routed experts under
// ExpertKernel::kMultiStream run one library call per expert, spread over
// Transformer Engine's 4 compute streams (nvte_get_num_compute_streams,
// transformer_engine/common/util/multi_stream.cpp).
constexpr int64_t kTransformerEngineComputeStreams = 4;

Gemm unit_gemm(const models::GemmShape& g, const MicroBatch& batch, int64_t m, int64_t n, int64_t k,
               bool weight_gradient = false) {
  Gemm gemm{m, n, k, g.count, weight_gradient};
  if (g.routed_experts && batch.kernels.expert_kernel == models::ExpertKernel::kMultiStream) {
    gemm.launches = g.count;
    gemm.streams = kTransformerEngineComputeStreams;
  }
  return gemm;
}

// The kernels of a unit's forward element-wise ops, eager or fused.
int64_t elementwise_kernels(const models::UnitSpec& unit, const MicroBatch& batch, models::UnitPart part,
                            Ops ops = Ops::kAll) {
  const bool fuse = fused(unit, batch);
  int64_t kernels = 0;
  for (const models::ElementwiseOp& op : unit.compute.elementwise) {
    if (!selected(op, ops) || !in_part(op.part, part)) continue;
    if (fuse || fused_by_kernel_choice(op.name, batch.kernels)) {
      kernels += 1;
    } else {
      kernels += op.eager_kernels > 0 ? op.eager_kernels : eager_kernel_count(op.name);
    }
  }
  return kernels;
}

ComputeWork backward_work(const models::UnitSpec& unit, const MicroBatch& batch, Ops ops, models::UnitPart part) {
  ComputeWork work;
  work.elementwise_bytes = elementwise_bytes(unit, batch, true, part, ops);
  work.elementwise_kernels = 2 * elementwise_kernels(unit, batch, part, ops);
  if (ops == Ops::kLoss) return work;
  for (const models::GemmShape& g : unit.compute.gemms) {
    if (chunked_logits(g, batch) || !in_part(g.part, part)) continue;
    const int64_t m = gemm_rows(g, batch);
    work.gemms.push_back(unit_gemm(g, batch, m, g.k, g.n));        // dX = dY @ W: [m x n] @ [n x k]
    work.gemms.push_back(unit_gemm(g, batch, g.n, g.k, m, true));  // dW = dY^T @ X: [n x m] @ [m x k]
  }
  work.attention = attention(unit, batch, 2.5, part);
  if (math_attention(unit, batch, part)) add_math_backward(unit, batch, work);
  add_ring_merges(unit, batch, true, part, work);
  return work;
}

}  // namespace

bool in_part(models::UnitPart op, models::UnitPart part) {
  switch (part) {
    case models::UnitPart::kWhole: return true;
    case models::UnitPart::kAttention:
      return op == models::UnitPart::kAttentionInput || op == models::UnitPart::kAttentionCore;
    default: return op == part;
  }
}

double total_flops(const ComputeWork& work) {
  double flops = work.attention.flops + work.other_flops;
  for (const Gemm& g : work.gemms) flops += g.flops();
  return flops;
}

ComputeWork forward_work(const models::UnitSpec& unit, const MicroBatch& batch, models::UnitPart part) {
  ComputeWork work;
  for (const models::GemmShape& g : unit.compute.gemms) {
    if (!in_part(g.part, part)) continue;
    const int64_t m = gemm_rows(g, batch);
    work.gemms.push_back(unit_gemm(g, batch, m, g.n, g.k));
    if (chunked_logits(g, batch)) {  // the logits' gradient is known in the forward
      work.gemms.push_back(unit_gemm(g, batch, m, g.k, g.n));
      work.gemms.push_back(unit_gemm(g, batch, g.n, g.k, m));
    }
  }
  work.attention = attention(unit, batch, 1.0, part);
  work.elementwise_bytes = elementwise_bytes(unit, batch, false, part);
  work.elementwise_kernels = elementwise_kernels(unit, batch, part);
  if (math_attention(unit, batch, part)) add_math_forward(unit, batch, work);
  add_ring_merges(unit, batch, false, part, work);
  return work;
}

ComputeWork backward_work(const models::UnitSpec& unit, const MicroBatch& batch, models::UnitPart part) {
  return backward_work(unit, batch, Ops::kAll, part);
}

ComputeWork loss_backward_work(const models::UnitSpec& unit, const MicroBatch& batch) {
  return backward_work(unit, batch, Ops::kLoss, models::UnitPart::kWhole);
}

ComputeWork backward_work_after_loss(const models::UnitSpec& unit, const MicroBatch& batch) {
  return backward_work(unit, batch, Ops::kNotLoss, models::UnitPart::kWhole);
}

SplitBackward split_weight_gradients(ComputeWork whole) {
  SplitBackward out;
  for (Gemm& g : whole.gemms) (g.weight_gradient ? out.weight : out.input).gemms.push_back(g);
  whole.gemms.clear();
  const std::vector<Gemm> input = std::move(out.input.gemms);
  out.input = std::move(whole);
  out.input.gemms = input;
  return out;
}

ComputeWork recompute_work(const models::UnitSpec& unit, const MicroBatch& batch, models::Checkpointing mode,
                           models::UnitPart part) {
  if (!models::is_block_part(unit.kind) || mode == models::Checkpointing::kNone) return {};
  if (mode == models::Checkpointing::kFull) return forward_work(unit, batch, part);
  if (unit.activations.named_recompute) return forward_work(models::named_recompute_ops(unit), batch, part);
  // Selective follows TorchTitan's op-level policy: matmul and attention
  // outputs are saved except every other matmul (the 2nd, 4th, ...), so
  // backward recomputes those GEMMs and every element-wise op. The math
  // backend's batched matmuls and softmax are not in its save list: the
  // attention is recomputed whole. A mixture-of-experts block recomputes its
  // element-wise ops only (models::ActivationBytes::selective_recomputes_gemms).
  ComputeWork work;
  const std::vector<models::GemmShape>& gemms = unit.compute.gemms;
  const size_t first = unit.activations.selective_recomputes_gemms ? 1 : gemms.size();
  // The alternation counts the block's GEMMs whole, so its parts recompute
  // what the whole block would.
  for (size_t i = first; i < gemms.size(); i += 2) {
    if (!in_part(gemms[i].part, part)) continue;
    work.gemms.push_back(unit_gemm(gemms[i], batch, gemm_rows(gemms[i], batch), gemms[i].n, gemms[i].k));
  }
  work.elementwise_bytes = elementwise_bytes(unit, batch, false, part);
  work.elementwise_kernels = elementwise_kernels(unit, batch, part);
  if (math_attention(unit, batch, part)) add_math_forward(unit, batch, work);
  return work;
}

}  // namespace ragged::planner
