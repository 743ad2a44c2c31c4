#include "planner/step_size.hpp"

#include <numeric>

#include <fmt/format.h>

#include "common/checked_math.hpp"
#include "common/errors.hpp"
#include "common/input_limits.hpp"
#include "common/units.hpp"

namespace ragged::planner {
namespace {

// A generous estimate of the activation bytes one micro-batch allocates on a
// GPU: everything every unit keeps without checkpointing, its transients, and
// math attention's scores three times (probabilities, their gradient, scores).
double micro_batch_activation_bytes(const models::ModelSpec& model, int64_t seq_len, int64_t tokens) {
  double per_token = 0;
  for (const models::UnitSpec& unit : model.units) {
    const models::ActivationBytes& a = unit.activations;
    per_token += a.kept(models::Checkpointing::kNone, seq_len) + a.working + a.loss_logits + a.returned_kv +
                 2 * a.scores_per_key * static_cast<double>(seq_len) +
                 std::accumulate(a.forward_pieces.begin(), a.forward_pieces.end(), 0.0);
  }
  return per_token * static_cast<double>(tokens);
}

}  // namespace

void check_step_size(const scenarios::Scenario& scenario, const models::ModelSpec& model) {
  const scenarios::Training& t = scenario.training();
  const int64_t units = static_cast<int64_t>(model.units.size());
  const int64_t passes = checked_mul(t.gradient_accumulation_steps(), units, "training.gradient_accumulation_steps");
  if (passes > limits::kMaxUnitPasses) {
    throw FieldError("training.gradient_accumulation_steps",
                     fmt::format("gradient_accumulation_steps {} x {} units is {} unit passes per step; at most {}: "
                                 "lower it",
                                 t.gradient_accumulation_steps(), units, format_integer(passes),
                                 format_integer(limits::kMaxUnitPasses)));
  }
  const int64_t tokens = checked_mul(t.micro_batch_size(), t.sequence_length(), "training.micro_batch_size");
  const double activations = micro_batch_activation_bytes(model, t.sequence_length(), tokens);
  const double params = static_cast<double>(model.params());
  // Per micro-batch: its activations and every unit gathered twice (fp32 at most);
  // once per step: fp32 master weights, gradients and two optimizer states.
  const double step = static_cast<double>(t.gradient_accumulation_steps()) * (activations + 8 * params) + 16 * params;
  const double limit = static_cast<double>(kMaxExactCount);
  if (activations > limit) {
    throw FieldError("training.micro_batch_size",
                     fmt::format("a micro-batch of {} x {} tokens needs about {} of activations per GPU, above "
                                 "2^53 bytes: lower micro_batch_size or sequence_length", t.micro_batch_size(), t.sequence_length(), format_bytes(activations)));
  }
  if (step > limit) {
    throw FieldError("training.gradient_accumulation_steps",
                     fmt::format("a step of {} micro-batches allocates about {} per GPU in all, above 2^53 bytes: "
                                 "lower gradient_accumulation_steps",
                                 t.gradient_accumulation_steps(), format_bytes(step)));
  }
}

}  // namespace ragged::planner
