// MLP tensors, GEMMs, element-wise traffic and activation bytes of one block:
// the dense MLP (gated SwiGLU, or two matrices around a GELU or ReLU) and the
// mixture of experts (router, routed experts stored per expert or fused,
// shared experts).

#include <algorithm>
#include <string>
#include <vector>

#include "models/layer_parts.hpp"

namespace ragged::models::detail {
namespace {

// The router keeps its logits in fp32 and its softmax/top-k reads and writes them.
constexpr double kRouterLogitBytes = 4;

// One projection of a routed expert: [widths x f, h] (gate, up, or both
// fused) or [h, f] (down).
struct ExpertProjection {
  const char* name;
  bool to_hidden;
  int64_t widths = 1;
};

// Tensor and GEMM names of the routed experts of one family, in Hugging Face
// state-dict order (Mixtral registers w1, w2, w3; the others gate, up, down);
// a stack that fuses gate and up holds two an expert.
struct ExpertNames {
  std::string block;  // "mlp." or "block_sparse_moe."
  std::vector<ExpertProjection> projections;
};

ExpertNames expert_names(const ArchConfig& arch) {
  const std::string block = arch.family == "mixtral" ? "block_sparse_moe." : "mlp.";
  if (arch.gate_up_fused) return {block, {{"gate_up_proj", false, 2}, {"down_proj", true}}};
  if (arch.family == "mixtral") return {block, {{"w1", false}, {"w2", true}, {"w3", false}}};
  return {block, {{"gate_proj", false}, {"up_proj", false}, {"down_proj", true}}};
}

// The first `local` experts (rank 0 of the expert-parallel group; every
// rank holds as many), each seeing top_k / local of the tokens the group
// dispatches to it.
void add_per_expert(const ArchConfig& arch, const ExpertNames& names, int64_t local, double work, UnitWriter& out) {
  const int64_t h = arch.hidden;
  const int64_t f = arch.moe_intermediate;
  const std::string experts = names.block + "experts.";
  for (int64_t e = 0; e < local; ++e) {
    const std::string base = experts + std::to_string(e) + ".";
    for (const ExpertProjection& proj : names.projections) {
      const int64_t rows = proj.to_hidden ? h : proj.widths * f;
      out.add_tensor(base + proj.name + ".weight", {rows, proj.to_hidden ? f : h}, TensorRole::kExpert);
      if (arch.expert_bias) out.add_tensor(base + proj.name + ".bias", {rows}, TensorRole::kExpert);
    }
  }
  const double share = work * static_cast<double>(arch.experts_per_token) / static_cast<double>(local);
  // GEMMs in execution order: the projections to the expert width, then back to hidden.
  for (bool to_hidden : {false, true}) {
    for (const ExpertProjection& proj : names.projections) {
      if (proj.to_hidden != to_hidden) continue;
      out.add_expert_gemm(experts + proj.name, to_hidden ? h : proj.widths * f, to_hidden ? f : h, share, local);
    }
  }
}

// GPT-OSS: one tensor per projection holding every expert, gate and up interleaved.
void add_fused_experts(const ArchConfig& arch, int64_t local, double work, UnitWriter& out) {
  const int64_t h = arch.hidden;
  const int64_t f = arch.moe_intermediate;
  const int64_t n_experts = local;
  out.add_tensor("mlp.experts.gate_up_proj", {n_experts, h, 2 * f}, TensorRole::kExpert);
  if (arch.expert_bias) out.add_tensor("mlp.experts.gate_up_proj_bias", {n_experts, 2 * f}, TensorRole::kExpert);
  out.add_tensor("mlp.experts.down_proj", {n_experts, f, h}, TensorRole::kExpert);
  if (arch.expert_bias) out.add_tensor("mlp.experts.down_proj_bias", {n_experts, h}, TensorRole::kExpert);
  const double share = work * static_cast<double>(arch.experts_per_token) / static_cast<double>(n_experts);
  out.add_expert_gemm("mlp.experts.gate_up_proj", 2 * f, h, share, n_experts);
  out.add_expert_gemm("mlp.experts.down_proj", h, f, share, n_experts);
}

void add_router(const ArchConfig& arch, const std::string& block, UnitWriter& out) {
  const bool fused = arch.expert_storage == ExpertStorage::kFused;
  const std::string router = block + (fused ? "router" : "gate");
  out.add_tensor(router + ".weight", {arch.experts, arch.hidden}, TensorRole::kRouter);
  if (arch.router_bias) {
    // GPT-OSS adds a plain bias; DeepSeek-V3 a bias that only corrects expert selection.
    out.add_tensor(router + (fused ? ".bias" : ".e_score_correction_bias"), {arch.experts}, TensorRole::kRouter);
  }
  out.add_gemm(router, arch.experts, arch.hidden);
  out.add_elementwise("router_topk", 2.0 * kRouterLogitBytes * static_cast<double>(arch.experts));
}

void add_shared_experts(const ArchConfig& arch, const std::string& block, UnitWriter& out) {
  const int64_t h = arch.hidden;
  const int64_t width = arch.moe_intermediate * arch.shared_experts;
  const std::string shared = block + "shared_experts.";
  if (arch.gate_up_fused) {
    out.add_tensor(shared + "gate_up_proj.weight", {2 * width, h}, TensorRole::kSharedExpert);
    out.add_tensor(shared + "down_proj.weight", {h, width}, TensorRole::kSharedExpert);
    out.add_gemm(shared + "gate_up_proj", 2 * width, h);
    out.add_gemm(shared + "down_proj", h, width);
    return;
  }
  out.add_tensor(shared + "gate_proj.weight", {width, h}, TensorRole::kSharedExpert);
  out.add_tensor(shared + "up_proj.weight", {width, h}, TensorRole::kSharedExpert);
  out.add_tensor(shared + "down_proj.weight", {h, width}, TensorRole::kSharedExpert);
  out.add_gemm(shared + "gate_proj", width, h);
  out.add_gemm(shared + "up_proj", width, h);
  out.add_gemm(shared + "down_proj", h, width);
}

// Megatron-Core's eager epilogue of the routed experts (NVIDIA/Megatron-LM
// @b0cc2706, moe/experts.py TEGroupedMLP.forward), bytes per routed copy:
// - a clamped GLU (weighted_bias_quick_geglu_impl) chunks the fc1 output,
//   clamps each half (each reads and writes f) and concatenates them (reads and
//   writes 2 f) before the fused activation, which keeps that copy for its
//   backward: 8 f forward; backward each clamp's mask reads the gradient and
//   its input and writes f, and the chunk's gradient is a cat (2 f each way): 10 f;
// - the down projection's bias (fc2 skip_bias_add, _apply_bias) is added one
//   local expert at a time: bias x prob written (h), added to the GEMM's
//   output (reads 2 h, writes h), the experts' pieces concatenated (h each
//   way): 6 h forward, two kernels an expert and the cat; backward the cat's
//   gradient (h each way) and the bias's and prob's reductions (h each): 4 h.
// Returns the bytes a routed copy keeps for the backward (the clamped copy).
double add_eager_epilogue(const ArchConfig& arch, const RoutedExperts& routed, double top_k, UnitWriter& out) {
  if (!routed.eager_epilogue) return 0;
  const double b = static_cast<double>(dtype_bytes(arch.dtype));
  const double f = static_cast<double>(arch.moe_intermediate);
  const double h = static_cast<double>(arch.hidden);
  double saved = 0;
  if (arch.glu_clamp > 0 && arch.mlp == MlpKind::kGated) {
    out.add_elementwise("moe_glu_clamp", top_k * 8.0 * f * b, top_k * 10.0 * f * b);
    out.unit.compute.elementwise.back().eager_kernels = 3;
    saved = top_k * 2.0 * f * b;
  }
  if (arch.expert_bias) {
    out.add_elementwise("moe_down_bias", top_k * 6.0 * h * b, top_k * 4.0 * h * b);
    out.unit.compute.elementwise.back().eager_kernels = 2 * std::max<int64_t>(routed.local, 1) + 1;
  }
  return saved;
}

}  // namespace

PartActivations add_dense_mlp(const ArchConfig& arch, const CheckpointNames& names, UnitWriter& out) {
  const int64_t h = arch.hidden;
  const int64_t ffn = arch.intermediate;
  const double b = static_cast<double>(dtype_bytes(arch.dtype));
  const double width = static_cast<double>(ffn);
  if (arch.mlp == MlpKind::kPlain) {
    out.add_linear(names.up, ffn, h, TensorRole::kMlp, arch.mlp_bias, names.conv1d);
    out.add_linear(names.down, h, ffn, TensorRole::kMlp, arch.mlp_bias, names.conv1d);
    // The activation (GELU, ReLU) reads the up output and writes its own.
    out.add_elementwise("mlp_activation", 2.0 * width * b);
    // Saved: the up output and the activation's (the down input; cheap to recompute).
    return PartActivations{2.0 * width * b, width * b, 2.0 * width * b};
  }
  if (arch.gate_up_fused) {
    out.add_linear(names.gate_up, 2 * ffn, h, TensorRole::kMlp, arch.mlp_bias);
  } else {
    out.add_linear(names.gate, ffn, h, TensorRole::kMlp, arch.mlp_bias);
    out.add_linear(names.up, ffn, h, TensorRole::kMlp, arch.mlp_bias);
  }
  out.add_linear(names.down, h, ffn, TensorRole::kMlp, arch.mlp_bias);
  // SwiGLU reads gate and up outputs and writes their product.
  out.add_elementwise("swiglu", 3.0 * width * b);
  // Saved: gate output, up output, act(gate)*up (the down_proj input; cheap to recompute).
  return PartActivations{3.0 * width * b, width * b, 3.0 * width * b};
}

PartActivations add_moe_mlp(const ArchConfig& arch, UnitWriter& out, RoutedExperts& routed) {
  const ExpertNames names = expert_names(arch);
  const double b = static_cast<double>(dtype_bytes(arch.dtype));
  UnitWriter& experts_out = routed.out != nullptr ? *routed.out : out;
  add_router(arch, names.block, out);
  if (arch.expert_storage == ExpertStorage::kFused) {
    add_fused_experts(arch, routed.local, routed.work, experts_out);
  } else {
    add_per_expert(arch, names, routed.local, routed.work, experts_out);
  }
  if (arch.shared_experts > 0) add_shared_experts(arch, names.block, out);

  const double h = static_cast<double>(arch.hidden);
  const double f = static_cast<double>(arch.moe_intermediate);
  // The routed copies a token stands for on this rank (top_k, times the
  // busiest rank's work under an uneven router).
  const double top_k = routed.work * static_cast<double>(arch.experts_per_token);
  const double shared = static_cast<double>(arch.shared_experts);
  const double active = top_k + shared;  // experts each token runs
  // Tokens are permuted into expert order and back (read + write, top_k copies each way).
  const double permute = 2.0 * top_k * h * b * 2.0;
  // Saved per routed copy: the permuted input and gate/up/product outputs; shared
  // experts keep gate/up/product (and eagerly their SiLU's output: `widths`
  // per expert, the element-wise ones recomputable); the router keeps fp32 logits.
  const double widths = routed.eager ? 4.0 : 3.0;
  const double router_saved = kRouterLogitBytes * static_cast<double>(arch.experts);
  if (routed.out == nullptr) {
    out.add_elementwise("swiglu", active * 3.0 * f * b);
    const double epilogue_saved = add_eager_epilogue(arch, routed, top_k, out);
    out.add_elementwise("moe_permute", permute);
    const double saved = b * (top_k * (h + widths * f) + shared * widths * f) + router_saved + epilogue_saved;
    return PartActivations{saved, (widths - 2.0) * active * f * b + epilogue_saved, 3.0 * active * f * b};
  }
  experts_out.add_elementwise("swiglu", top_k * 3.0 * f * b);
  const double epilogue_saved = add_eager_epilogue(arch, routed, top_k, experts_out);
  experts_out.add_elementwise("moe_permute", permute);
  routed.activations = PartActivations{b * top_k * (h + widths * f) + epilogue_saved,
                                       (widths - 2.0) * top_k * f * b + epilogue_saved, 3.0 * top_k * f * b};
  if (arch.shared_experts > 0) out.add_elementwise("swiglu", shared * 3.0 * f * b);
  return PartActivations{b * shared * widths * f + router_saved, (widths - 2.0) * shared * f * b, 3.0 * shared * f * b};
}

}  // namespace ragged::models::detail
