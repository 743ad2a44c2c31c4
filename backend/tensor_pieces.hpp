#pragma once
// A tensor-parallel rank's piece of a tensor (models::TensorCut): where each
// of its elements lies in the whole tensor, so that every rank initialises
// its piece as the whole model's values, and the reference and the trained
// pieces meet in whole tensors.

#include <cstdint>
#include <vector>

#include "models/model_spec.hpp"

namespace ragged::backend {

// The index in `whole` of element `index` of rank `tp_rank`'s `piece`.
int64_t whole_index(const models::TensorSpec& piece, const models::TensorSpec& whole, int tp_rank, int64_t index);

// Rank `tp_rank`'s piece of the whole tensor's values.
std::vector<float> piece_of(const models::TensorSpec& piece, const models::TensorSpec& whole, int tp_rank,
                            const std::vector<float>& values);

}  // namespace ragged::backend
