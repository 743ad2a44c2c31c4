#pragma once
// The pieces (separate allocations, bytes per token) of the buffers the
// Program gives a unit's forward and backward: what it keeps, what its
// forward makes and frees, what its backward holds besides (docs/MODELS.md,
// "Kernels"; the math backend's scores per docs/SIMULATOR.md section 7).

#include <cstdint>
#include <vector>

#include "models/model_spec.hpp"

namespace ragged::planner {

// Kept from the forward to the backward: the saved tensors and, without
// checkpointing, the math backend's probabilities.
std::vector<double> activation_pieces(const models::UnitSpec& unit, models::Checkpointing mode, int64_t seq_len);
// Made and freed by the forward: the loss's logits copies (the fp32 logits
// unless the model returns them), the math backend's pre-softmax scores
// (and its probabilities when they are not kept).
std::vector<double> forward_workspace_pieces(const models::UnitSpec& unit, models::Checkpointing mode, int64_t seq_len,
                                             bool logits_returned);
// Held by the backward besides the activations: what checkpointing
// recomputes, the unit's working tensors, and the math backend's two score
// gradients (and its recomputed probabilities).
std::vector<double> backward_workspace_pieces(const models::UnitSpec& unit, models::Checkpointing mode,
                                              int64_t seq_len);
// The head whose loss has a backward of its own (ActivationBytes::
// logits_gradient > 0) splits that: the loss's working tensors less the
// logits' gradient, freed when the loss's backward ends; the logits'
// gradient, kept through the head's GEMM backward; and that backward's own
// working tensor, the logits GEMM's input gradient. Their sum over the loss's
// backward is `working`, as one op held it.
bool splits_loss_backward(const models::UnitSpec& unit);
std::vector<double> loss_workspace_pieces(const models::UnitSpec& unit);

}  // namespace ragged::planner
