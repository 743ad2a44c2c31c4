#include "planner/mesh_collectives.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "planner/expert_dispatch.hpp"

namespace ragged::planner {
namespace {

// A unit's tensor-parallel regions in its forward: how often it gathers the
// tokens' hidden states (entering column-parallel GEMMs) and how often it
// reduces them (leaving row-parallel ones).
struct Regions {
  int gathers = 0;
  int reductions = 0;
  // Reductions of the gathered inputs' gradients in the backward: one per
  // region, or one per column-parallel projection (PER_PROJECTION).
  int input_gradients = 0;
};

// The column-parallel projections of a block part (their weights cut by
// rows, reading the hidden width): q, k and v (one when fused), gate and up.
int column_projections(const models::UnitSpec& unit, const models::ModelSpec& model, models::UnitPart part) {
  int count = 0;
  for (const models::GemmShape& g : unit.compute.gemms) {
    if (!in_part(g.part, part) || g.routed_experts || g.k != model.arch.hidden) continue;
    if (gemm_tp_cut(unit, g) == models::TensorCut::kRows) ++count;
  }
  return std::max(count, 1);
}

// The tp regions of a mixture-of-experts MLP whose routed experts are a unit
// of their own: split experts read the tokens gathered by their block and
// their unit reduces the combined output (the shared experts' partial sums
// with it); whole experts (expert_tp 1) route the rank's own tokens, so only
// the shared experts, split like a dense MLP, gather and reduce.
Regions moe_mlp_regions(const models::ModelSpec& model) {
  if (!model.split.whole_experts) return {1, 0};
  return model.arch.shared_experts > 0 ? Regions{1, 1} : Regions{0, 0};
}

Regions base_regions(const models::UnitSpec& unit, const models::ModelSpec& model, models::UnitPart part) {
  const bool experts_apart = has_router(unit) && model.split.ep > 1;
  const Regions mlp = experts_apart ? moe_mlp_regions(model) : Regions{1, 1};
  switch (part) {
    case models::UnitPart::kAttention: return {1, 1};
    case models::UnitPart::kAttentionInput: return {1, 0};
    case models::UnitPart::kAttentionCore: return {0, 1};
    case models::UnitPart::kMlp: return mlp;
    case models::UnitPart::kWhole: break;
  }
  switch (unit.kind) {
    case models::UnitKind::kEmbedding: return {0, 1};  // the vocabulary-parallel lookup's partial sums
    case models::UnitKind::kHead: return {1, 0};       // the head's input, for the vocabulary-parallel logits
    case models::UnitKind::kExperts:  // split: the combined output (their block gathered the input); whole: none
      return model.split.whole_experts ? Regions{0, 0} : Regions{0, 1};
    case models::UnitKind::kBlock: break;
  }
  // A parallel block's attention and MLP read one gathered input and sum
  // into one reduction; under expert parallelism the MoE output is reduced
  // by the experts' unit.
  if (model.arch.parallel_block) return {1, 1};
  return {1 + mlp.gathers, 1 + mlp.reductions};
}

Regions tensor_parallel_regions(const models::UnitSpec& unit, const models::ModelSpec& model, const Mesh& mesh,
                                models::UnitPart part) {
  Regions r = base_regions(unit, model, part);
  r.input_gradients = r.gathers;
  // Per projection: a dense block's attention or MLP part (a mixture of
  // experts' MLP, a parallel or whole block keep one region's collectives).
  const bool dense_part = (part == models::UnitPart::kAttention || part == models::UnitPart::kAttentionInput ||
                           part == models::UnitPart::kMlp) && !has_router(unit);
  if (mesh.per_projection_inputs && dense_part && r.gathers > 0) {
    const int projections = column_projections(unit, model, part);
    r.input_gradients = projections;
    if (!mesh.merged_input_gathers) r.gathers = projections;
  }
  return r;
}

void add(std::vector<MeshCollective>& out, OpKind kind, Group group, int64_t bytes, bool after, std::string what,
         int times = 1) {
  for (int i = 0; i < times; ++i) out.push_back({kind, group, bytes, after, what});
}

void add_tensor_parallel(const models::UnitSpec& unit, const models::ModelSpec& model, const Mesh& mesh,
                         int64_t tokens, int64_t element_bytes, bool backward, models::UnitPart part,
                         std::vector<MeshCollective>& out) {
  // A replicated embedding or head computes whole on every tp rank: its
  // input and output are the replicated hidden states, nothing to reduce.
  const bool vocabulary = unit.kind == models::UnitKind::kEmbedding || unit.kind == models::UnitKind::kHead;
  if (vocabulary && !model.split.vocabulary_parallel) return;
  const int64_t bytes = tokens * model.arch.hidden * element_bytes;
  if (unit.kind == models::UnitKind::kEmbedding && model.split.gathered_logits) {
    // A replicated embedding whose output the first norm cuts to the rank's
    // tokens (a Replicate-to-Shard redistribution, no communication); its
    // gradient comes back whole by an all-gather.
    if (mesh.sequence_parallel && backward) add(out, OpKind::kAllGather, Group::kTensor, bytes, false, "tp all-gather");
    return;
  }
  const Regions r = tensor_parallel_regions(unit, model, mesh, part);
  if (mesh.sequence_parallel) {
    // Forward: gather before, reduce-scatter after; backward: the conjugates.
    add(out, OpKind::kAllGather, Group::kTensor, bytes, false, "tp all-gather", backward ? r.reductions : r.gathers);
    add(out, OpKind::kReduceScatter, Group::kTensor, bytes, true, "tp reduce-scatter",
        backward ? r.input_gradients : r.reductions);
  } else {
    add(out, OpKind::kAllReduce, Group::kTensor, bytes, true, "tp all-reduce",
        backward ? r.input_gradients : r.reductions);
  }
  if (unit.kind == models::UnitKind::kHead && !backward && model.split.gathered_logits) {
    // Each rank's vocabulary slice of the logits, gathered whole to every rank
    // (their gradient is a local slice of the replicated one: no collective).
    add(out, OpKind::kAllGather, Group::kTensor, tokens * model.arch.vocab * mesh.tp * element_bytes, true,
        "tp logits all-gather");
  } else if (unit.kind == models::UnitKind::kHead && !backward) {
    add(out, OpKind::kAllReduce, Group::kTensor, tokens * 3 * 4, true, "tp loss all-reduce");
  }
}

// Bytes of the keys and values of `tokens` tokens one rank holds.
int64_t key_value_bytes(const models::UnitSpec& unit, const models::ModelSpec& model, int64_t tokens,
                        int64_t element_bytes) {
  return tokens * key_value_width(unit, model) * element_bytes;
}

}  // namespace

int64_t key_value_width(const models::UnitSpec& unit, const models::ModelSpec& model) {
  if (!unit.compute.attention) return 0;
  const models::AttentionShape& a = *unit.compute.attention;
  if (model.arch.attention == models::AttentionKind::kMla) return a.heads * (a.qk_head_dim + a.v_head_dim);
  // Repeated keys and values reach the ring as the copies the kernel reads.
  return 2 * (model.kernels.repeated_kv ? a.heads : model.arch.kv_heads) * a.qk_head_dim;
}

bool has_router(const models::UnitSpec& unit) {
  return std::any_of(unit.tensors.begin(), unit.tensors.end(),
                     [](const models::TensorSpec& t) { return t.role == models::TensorRole::kRouter; });
}

models::TensorCut gemm_tp_cut(const models::UnitSpec& unit, const models::GemmShape& gemm) {
  const models::TensorSpec* weight = unit.weight_of(gemm);
  return weight != nullptr ? weight->tp_cut : models::TensorCut::kWhole;
}

std::vector<models::UnitPart> block_parts(const models::UnitSpec& unit, const models::ModelSpec& model,
                                          const Mesh& mesh) {
  if (unit.kind != models::UnitKind::kBlock || model.arch.parallel_block) return {models::UnitPart::kWhole};
  // Context parallelism gathers the keys and values between the projections
  // and the attention core.
  if (mesh.cp > 1) return {models::UnitPart::kAttentionInput, models::UnitPart::kAttentionCore, models::UnitPart::kMlp};
  if (mesh.tp > 1) return {models::UnitPart::kAttention, models::UnitPart::kMlp};
  return {models::UnitPart::kWhole};
}

Stream mesh_stream(Group group) {
  switch (group) {
    case Group::kTensor: return Stream::kTensorParallel;
    case Group::kContext: return Stream::kContextParallel;
    case Group::kExpert: return Stream::kExpertParallel;
    default: break;
  }
  throw InternalError("mesh_stream: not a mesh group");
}

std::vector<MeshCollective> mesh_collectives(const models::UnitSpec& unit, const models::ModelSpec& model,
                                             const Mesh& mesh, const MicroBatch& batch, int64_t element_bytes,
                                             Pass pass, models::UnitPart part) {
  std::vector<MeshCollective> out;
  const bool backward = pass == Pass::kBackward;
  const int64_t tokens = batch.tokens();
  if (pass == Pass::kSelectiveRecompute) {
    if (mesh.tp == 1 || !mesh.sequence_parallel || !models::is_block_part(unit.kind)) return out;
    const Regions r = tensor_parallel_regions(unit, model, mesh, part);
    add(out, OpKind::kAllGather, Group::kTensor, tokens * model.arch.hidden * element_bytes, false,
        "tp all-gather (recompute)", r.gathers);
    return out;
  }
  if (mesh.tp > 1) add_tensor_parallel(unit, model, mesh, tokens, element_bytes, backward, part, out);
  const bool attention = unit.compute.attention && (part == models::UnitPart::kWhole ||
                                                    part == models::UnitPart::kAttention ||
                                                    part == models::UnitPart::kAttentionCore);
  if (mesh.cp > 1 && attention) {
    const int64_t kv = mesh.cp * key_value_bytes(unit, model, tokens, element_bytes);
    add(out, OpKind::kAllGather, Group::kContext, kv, false, "cp key/value all-gather");
    // PyTorch's ring passes its fp32 key and value gradient accumulators to
    // the next rank after every step (an all-to-all), each pass hidden
    // behind the next step's kernels but the last: written as the
    // reduce-scatter that moves that last pass's bytes off each rank.
    const int64_t gradients =
        batch.ring_merges_in_fp32 ? mesh.cp * key_value_bytes(unit, model, tokens, 4) / (mesh.cp - 1) : kv;
    if (backward)
      add(out, OpKind::kReduceScatter, Group::kContext, gradients, true, "cp key/value gradient reduce-scatter");
  }
  if (mesh.ep > 1 && unit.kind == models::UnitKind::kExperts) {
    // An all-to-all's bytes are the whole group's (each rank sends its
    // tokens' copies, top-k each or one per rank with DeepEP, spread over
    // the ep ranks). Under an uneven router the rank holding the busiest
    // expert receives more than its share and every rank waits for it: the
    // group is charged as if each rank received what that one does.
    // Whole experts: each tp rank dispatches its own 1/tp of the tokens.
    const double busiest = models::busiest_rank_tokens(model.arch, model.arch.experts / mesh.ep, model.kernels.expert_load);
    const double copies = busiest * expert_dispatch_copies(model.arch.experts, model.arch.experts_per_token, mesh);
    const int64_t dispatched = mesh.whole_experts ? tokens / mesh.tp : tokens;
    const int64_t routed =
        std::llround(static_cast<double>(mesh.ep * dispatched * model.arch.hidden * element_bytes) * copies);
    add(out, OpKind::kAllToAll, Group::kExpert, routed, false, backward ? "ep combine (bwd)" : "ep dispatch");
    add(out, OpKind::kAllToAll, Group::kExpert, routed, true, backward ? "ep dispatch (bwd)" : "ep combine");
  }
  // Before the compute the outer dimension's collective comes first (tp's
  // gather of the hidden states, then ep's dispatch of them); after it the
  // inner one's (ep's combine, then tp's reduce-scatter of the combined sum).
  const auto nesting = [](const MeshCollective& c) {
    const int inner = c.group == Group::kExpert ? 1 : 0;
    return c.after_compute ? 2 + (1 - inner) : inner;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&nesting](const MeshCollective& a, const MeshCollective& b) { return nesting(a) < nesting(b); });
  if (pass == Pass::kRecompute) {
    for (MeshCollective& c : out) c.what += " (recompute)";
  }
  return out;
}

}  // namespace ragged::planner
