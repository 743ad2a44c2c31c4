#include "planner/checkpointing_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::planner {

models::Checkpointing checkpointing_mode(scenarios::Checkpointing mode) {
  switch (mode) {
    case scenarios::FULL: return models::Checkpointing::kFull;
    case scenarios::SELECTIVE:
    case scenarios::SAVED_NAMES: return models::Checkpointing::kSelective;
    default: return models::Checkpointing::kNone;
  }
}

std::optional<models::SavedNames> saved_names(const scenarios::Training& training) {
  if (training.activation_checkpointing() != scenarios::SAVED_NAMES) return std::nullopt;
  using models::BlockTensor;
  models::SavedNames names;
  for (int i = 0; i < training.saved_activations_size(); ++i) {
    switch (training.saved_activations(i)) {
      case scenarios::NORM_OUT: names.add(BlockTensor::kNormOut); break;
      case scenarios::QKV_PROJ: names.add(BlockTensor::kQkv); break;
      case scenarios::ATTENTION_OUT: names.add(BlockTensor::kAttentionOut); break;
      case scenarios::OUT_PROJ: names.add(BlockTensor::kOutProj); break;
      case scenarios::RESIDUAL: names.add(BlockTensor::kResidual); break;
      case scenarios::MLP_IN: names.add(BlockTensor::kMlpIn); break;
      case scenarios::MLP_PRODUCT: names.add(BlockTensor::kMlpProduct); break;
      case scenarios::MLP_OUT: names.add(BlockTensor::kMlpOut); break;
      case scenarios::DOTS:
        if (training.attention() == scenarios::MATH) {
          throw FieldError(fmt::format("training.saved_activations[{}]", i),
                           "DOTS under MATH attention keeps the attention's S x S scores (its batched matmuls' "
                           "outputs), which is not modelled: name the tensors, or use a fused attention kernel");
        }
        [[fallthrough]];  // a fused attention kernel is no dot: its output is recomputed
      case scenarios::DOTS_NO_BATCH_DIMS:
        names.add(BlockTensor::kQkv).add(BlockTensor::kOutProj).add(BlockTensor::kMlpIn).add(BlockTensor::kMlpOut);
        break;
      default:
        throw FieldError(fmt::format("training.saved_activations[{}]", i),
                         fmt::format("{} is not a tensor name: use NORM_OUT, QKV_PROJ, ATTENTION_OUT, OUT_PROJ, "
                                     "RESIDUAL, MLP_IN, MLP_PRODUCT, MLP_OUT, DOTS or DOTS_NO_BATCH_DIMS",
                                     static_cast<int>(training.saved_activations(i))));
    }
  }
  return names;
}

std::vector<models::Checkpointing> unit_checkpointing(const models::ModelSpec& model, const Plan& plan,
                                                      const scenarios::Training& training) {
  const models::Checkpointing mode = checkpointing_mode(training.activation_checkpointing());
  const int every = std::max(1, training.checkpoint_every());
  const bool every_block = mode != models::Checkpointing::kFull || every <= 1;
  const scenarios::Checkpointing experts = training.experts().checkpointing();
  std::vector<models::Checkpointing> out(plan.units.size(), mode);
  int blocks = 0;  // counted from 1, as the wrapper counts them
  for (size_t u = 0; u < plan.units.size(); ++u) {
    const models::UnitKind kind = model.units[plan.units[u].unit_index].kind;
    if (kind == models::UnitKind::kExperts) {
      if (experts != scenarios::CHECKPOINTING_UNSPECIFIED) {
        out[u] = checkpointing_mode(experts);
      } else if (u > 0) {
        // A block's routed experts (a unit of their own under expert parallelism) are in its checkpointed region.
        out[u] = out[u - 1];
      }
    }
    if (every_block || kind != models::UnitKind::kBlock) continue;
    if (++blocks % every != 0) out[u] = models::Checkpointing::kNone;
  }
  return out;
}

}  // namespace ragged::planner
