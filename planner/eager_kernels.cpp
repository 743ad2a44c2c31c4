#include "planner/eager_kernels.hpp"

namespace ragged::planner {

// Counted from TorchTitan's eager Llama (torchtitan/models: RMSNorm,
// apply_rotary_emb, FeedForward, the loss), bytes per element of the op's
// input, bf16 activations:
//  - RMSNorm `(_norm(x.float())).type_as(x) * weight`: x.float() 2+4,
//    pow 4+4, mean 4, x * rsqrt 4+4, type_as 4+2, * weight 2+2 = 36 bytes
//    against 4 fused (read x, write y): 9x.
//  - rotary: xq.float() 2+4, complex multiply 4+4, type_as 4+2 = 20 against
//    4 fused: 5x.
//  - SwiGLU `silu(w1(x)) * w3(x)`: silu 2+2, multiply 2+2+2 = 10 against 6
//    fused (read both, write one): 5/3.
//  - cross-entropy on `logits.float()` (F.cross_entropy = log_softmax +
//    nll_loss): forward cast 2+4, log_softmax 4+4 = 14 against the 6 of one
//    fused kernel (read the logits, write the fp32 log-softmax): 14/6;
//    backward nll_loss_backward's dense fp32 gradient 4, log_softmax_backward
//    4+4+4, the cast back 4+2 = 22 against 6 (read the log-softmax, write
//    the logits' gradient): 22/6. The fused and chunked losses are one
//    kernel each way already.
//  - Hugging Face's shifted cross-entropy (logits.float(), the shifted
//    .contiguous() copy, CrossEntropyLoss): forward 2+4, 4+4, 4+4 = 22
//    against 6: 22/6; backward as above plus the slice's zero-filled
//    gradient and the copy into it, 4 + 4+4: 34/6.
//  - torch's loss_parallel (the local vocabulary shard, handlers in
//    torch/distributed/tensor/parallel/loss.py): forward logits.float()
//    2+4, amax 4, x - max 4+4, exp 4+4, sum 4, - log-sum-exp 4+4 = 38
//    against 6: 38/6; backward zeros_like 4, exp 4+4, add 4+4+4, the
//    product with the gradient 4+4, the cast back 4+2 = 38 against 6: 38/6.
// Residual adds, the embedding lookup, MoE routing, a LayerNorm
// (torch.nn.functional.layer_norm: read x, write y; models/ names its ops
// "..._layer_norm") and an element-wise MLP activation (F.gelu, F.relu) are
// single kernels.
namespace {

bool ends_with(std::string_view name, std::string_view suffix) {
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

// An RMSNorm of models/ (a LayerNorm is named "..._layer_norm").
bool rms_norm(std::string_view name) {
  return !ends_with(name, "layer_norm") && (ends_with(name, "norm") || ends_with(name, "layernorm"));
}

}  // namespace

bool fused_by_kernel_choice(std::string_view name, const models::KernelChoices& kernels) {
  return kernels.norm == models::NormKernel::kFused && rms_norm(name);
}

EagerFactors eager_traffic_factors(std::string_view name) {
  auto both = [](double factor) { return EagerFactors{factor, factor}; };
  if (rms_norm(name)) return both(9.0);
  if (name == "rotary") return both(5.0);
  if (name == "swiglu") return both(10.0 / 6.0);
  if (name == "cross_entropy") return {14.0 / 6.0, 22.0 / 6.0};
  if (name == "shifted_cross_entropy") return {22.0 / 6.0, 34.0 / 6.0};
  if (name == "loss_parallel_cross_entropy") return both(38.0 / 6.0);
  // log_softmax reads and writes what the fused count has; the backward
  // adds nll_loss's dense gradient (a zero fill, written then read).
  if (name == "log_softmax_cross_entropy") return {1.0, 2.0};
  return both(1.0);
}

double eager_traffic_factor(std::string_view name) { return eager_traffic_factors(name).forward; }

// Kernels of the same eager code, one per torch op (the tiny [tokens, 1]
// ops count as kernels although their traffic is left out above):
//  - RMSNorm: x.float(), pow, mean, + eps, rsqrt, x * rsqrt, type_as,
//    * weight = 8;
//  - rotary on q and on k: .float(), the complex multiply, type_as = 3 each, 6;
//  - SwiGLU: silu, multiply = 2;
//  - cross-entropy: logits.float(), log_softmax, nll_loss = 3; the shifted
//    one adds the contiguous copy = 4; without the .float() = 2; under
//    loss_parallel the forward's ops: logits.float(), amax, sub, exp, sum,
//    log, sub, then nll_loss's where, the target mask (lt, ge, or, sub,
//    masked_fill), gather, masked_fill, neg, where, sum, sum, div = 20;
//  - a position embedding: the table lookup and the add = 2;
//  - repeated keys and values: a copy each for k and v = 2 (their backward
//    a reduction each);
//  - everything else (residual adds, the token lookup, LayerNorm, GELU,
//    MoE routing and permutation, taken as single kernels like their
//    traffic) = 1.
int64_t eager_kernel_count(std::string_view name) {
  if (rms_norm(name)) return 8;
  if (name == "rotary") return 6;
  if (name == "swiglu") return 2;
  if (name == "cross_entropy") return 3;
  if (name == "shifted_cross_entropy") return 4;
  if (name == "log_softmax_cross_entropy") return 2;
  if (name == "loss_parallel_cross_entropy") return 20;
  if (name == "position_embedding") return 2;
  if (name == "repeat_kv") return 2;
  return 1;
}

}  // namespace ragged::planner
