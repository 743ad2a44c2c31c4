#include "planner/unit_buffers.hpp"

#include <algorithm>

namespace ragged::planner {
namespace {

// One B x heads x S x S tensor of the math attention backend, per token (0 with FlashAttention).
double scores(const models::UnitSpec& unit, int64_t seq_len) {
  return unit.activations.scores_per_key * static_cast<double>(seq_len);
}

}  // namespace

std::vector<double> activation_pieces(const models::UnitSpec& unit, models::Checkpointing mode, int64_t seq_len) {
  const double probabilities = mode == models::Checkpointing::kNone ? scores(unit, seq_len) : 0.0;
  return {unit.activations.saved(mode), probabilities};
}

std::vector<double> forward_workspace_pieces(const models::UnitSpec& unit, models::Checkpointing mode, int64_t seq_len,
                                             bool logits_returned) {
  const models::ActivationBytes& a = unit.activations;
  std::vector<double> pieces = a.forward_pieces;
  if (a.loss_logits > 0 && !logits_returned) pieces.push_back(a.loss_logits);
  if (a.scores_per_key > 0) {
    pieces.push_back(scores(unit, seq_len));
    if (mode != models::Checkpointing::kNone) pieces.push_back(scores(unit, seq_len));
  }
  return pieces;
}

bool splits_loss_backward(const models::UnitSpec& unit) { return unit.activations.logits_gradient > 0; }

std::vector<double> loss_workspace_pieces(const models::UnitSpec& unit) {
  const models::ActivationBytes& a = unit.activations;
  std::vector<double> pieces = a.working_pieces.empty() ? std::vector<double>{a.working} : a.working_pieces;
  // The logits' gradient is made last: it takes the place of the last piece's bytes.
  double gradient = a.logits_gradient;
  for (auto piece = pieces.rbegin(); piece != pieces.rend() && gradient > 0; ++piece) {
    const double taken = std::min(*piece, gradient);
    *piece -= taken;
    gradient -= taken;
  }
  std::erase_if(pieces, [](double piece) { return piece <= 0; });
  return pieces;
}

std::vector<double> backward_workspace_pieces(const models::UnitSpec& unit, models::Checkpointing mode,
                                              int64_t seq_len) {
  const models::ActivationBytes& a = unit.activations;
  if (splits_loss_backward(unit)) return {a.head_input_gradient};
  const double recomputed = models::is_block_part(unit.kind) ? std::max(0.0, a.saved_none - a.saved(mode)) : 0.0;
  std::vector<double> pieces = {recomputed + (a.working_pieces.empty() ? a.working : 0.0)};
  pieces.insert(pieces.end(), a.working_pieces.begin(), a.working_pieces.end());
  if (a.scores_per_key > 0) {
    const double one = scores(unit, seq_len);
    pieces.insert(pieces.end(), {one, one});
    if (mode != models::Checkpointing::kNone) pieces.push_back(one);
  }
  return pieces;
}

}  // namespace ragged::planner
