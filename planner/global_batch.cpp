#include "planner/global_batch.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "common/input_limits.hpp"
#include "planner/mesh.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::planner {
namespace {

int64_t data_ranks(const scenarios::Scenario& scenario) {
  const Mesh mesh = mesh_of(scenario.training());
  return scenarios::total_gpus(scenario) / (mesh.tp * mesh.cp * mesh.pp);
}

double micro_step_tokens(const scenarios::Scenario& scenario) {
  const scenarios::Training& t = scenario.training();
  return static_cast<double>(data_ranks(scenario)) * static_cast<double>(t.micro_batch_size()) *
         static_cast<double>(t.sequence_length());
}

}  // namespace

double global_batch_tokens(const scenarios::Scenario& scenario) {
  return micro_step_tokens(scenario) * static_cast<double>(std::max<int64_t>(1, scenario.training().gradient_accumulation_steps()));
}

int64_t accumulation_for_global_batch(const scenarios::Scenario& scenario, double tokens, const std::string& what) {
  const scenarios::Training& t = scenario.training();
  const double per_step = micro_step_tokens(scenario);
  const double steps = tokens / per_step;
  if (steps < 1 || steps != std::floor(steps) || steps > limits::kMaxAccumulation) {
    throw InputError(fmt::format(
        "{}: at {} GPUs, {} data-parallel ranks x micro-batch {} x {} tokens = {:g} tokens a micro-batch step, which "
        "does not divide {:g} into 1 to {} accumulation steps; choose GPU counts or a batch that do (or another micro-batch)",
        what, scenarios::total_gpus(scenario), data_ranks(scenario), t.micro_batch_size(), t.sequence_length(),
        per_step, tokens, limits::kMaxAccumulation));
  }
  return static_cast<int64_t>(steps);
}

}  // namespace ragged::planner
