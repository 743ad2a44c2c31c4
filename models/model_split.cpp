// What a device mesh may cut in an architecture, and the architecture one
// tensor-parallel rank builds (ModelSplit, docs/MESH.md).

#include <fmt/format.h>

#include "models/model_spec.hpp"

namespace ragged::models {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// `width` of `what` must split into tp equal parts.
void check_divides(int64_t width, int64_t tp, const char* what, std::vector<SplitProblem>& out) {
  if (width <= 0 || width % tp == 0) return;
  out.push_back({"tp", fmt::format("tp {} does not divide the {} ({}): tensor parallelism splits it into equal "
                                   "parts; use a tp that divides {}", tp, what, width, width)});
}

}  // namespace

std::vector<SplitProblem> check_split(const ArchConfig& arch, const ModelSplit& split) {
  std::vector<SplitProblem> out;
  const int64_t tp = split.tp;
  if (tp > 1) {
    check_divides(arch.heads, tp, "attention heads", out);
    if (arch.attention == AttentionKind::kGqa && arch.kv_heads % tp != 0 && tp % arch.kv_heads != 0) {
      out.push_back({"tp", fmt::format("tp {} and the {} key/value heads: each tp rank needs whole key/value heads, "
                                       "so tp must divide them or be a multiple of them (then each is replicated "
                                       "on tp / {} ranks)", tp, arch.kv_heads, arch.kv_heads)});
    }
    check_divides(arch.intermediate, tp, "MLP width (intermediate_size)", out);
    if (split.gathered_logits && arch.tie_embeddings) {
      out.push_back({"gathered_logits", fmt::format("{} ties the head to the embedding, which gathered_logits keeps "
                                                    "whole on every tp rank: remove gathered_logits", arch.name)});
    }
    if (arch.is_moe() && !split.whole_experts) {
      check_divides(arch.moe_intermediate, tp, "expert width (moe_intermediate_size)", out);
    }
  }
  if (split.ep > 1) {
    if (!arch.is_moe()) {
      out.push_back({"ep", fmt::format("ep {}: {} has no experts to spread; expert parallelism needs a mixture of "
                                       "experts (leave ep at 1)", split.ep, arch.name)});
    } else if (arch.experts % split.ep != 0) {
      out.push_back({"ep", fmt::format("ep {} does not divide the {} routed experts; use a divisor of {}", split.ep,
                                       arch.experts, arch.experts)});
    }
  }
  return out;
}

ArchConfig tensor_parallel_arch(const ArchConfig& arch, int64_t tp, bool vocabulary_parallel) {
  if (tp <= 1) return arch;
  ArchConfig local = arch;
  local.heads = arch.heads / tp;
  if (arch.attention == AttentionKind::kGqa) local.kv_heads = arch.kv_heads >= tp ? arch.kv_heads / tp : 1;
  local.intermediate = arch.intermediate / tp;
  local.moe_intermediate = arch.moe_intermediate / tp;
  // Megatron pads the vocabulary to a multiple of tp (make_vocab_size_divisible_by).
  local.vocab = vocabulary_parallel ? ceil_div(arch.vocab, tp) : arch.vocab;
  return local;
}

}  // namespace ragged::models
