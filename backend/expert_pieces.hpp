#pragma once
// Where an expert-parallel rank's tensors lie in the whole model (docs/MESH.md):
// rank r of an ep group of P holds routed experts [r x L, (r + 1) x L), L =
// E / P, in units of their own, numbered 0..L-1 there ("experts.3." of rank 1
// of 2 with 8 experts is the whole model's "experts.7."; fused tensors hold
// rows [r x L, (r + 1) x L) of the whole one). Every other tensor is the whole
// model's of the same name. With these, every rank initialises its shard as
// the whole model's values and the trained pieces meet in whole tensors.

#include <cstdint>
#include <vector>

#include "models/model_spec.hpp"

namespace ragged::backend {

struct TensorOrigin {
  int64_t id = 0;  // the whole tensor's index in model order (initial_value's id)
  const models::TensorSpec* whole = nullptr;
  int64_t first = 0;  // the whole tensor's element this rank's tensor starts at
};

// Per unit of `split` (ep rank `ep_rank`'s model), per tensor.
std::vector<std::vector<TensorOrigin>> tensor_origins(const models::ModelSpec& whole, const models::ModelSpec& split,
                                                      int ep_rank);

// The routed expert (of the whole model's E) a tensor of the whole model
// belongs to, for each of its elements' leading index: per-expert tensors
// one expert, fused tensors one per row of their first dimension; empty
// for a tensor of no routed expert.
struct ExpertSlices {
  int64_t first_expert = -1;  // -1: not a routed expert's tensor
  int64_t experts = 0;        // slices, one expert each, of numel / experts elements
};
ExpertSlices expert_slices(const models::TensorSpec& whole, const models::ArchConfig& arch);

}  // namespace ragged::backend
