#pragma once
// The step loop both devices run (run.cpp, cuda/cuda_run.cpp): warm-up and
// measured steps, the mean loss over the world, and after every step, off
// its clock, the finite checks every rank agrees on (the gradients the walk
// saw, the loss, then the device's parameters and optimizer state), so all
// ranks stop together at the first NaN or infinity.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/finite_check.hpp"
#include "backend/measured_step.hpp"
#include "backend/run.hpp"
#include "models/model_spec.hpp"

namespace ragged::backend {

struct StepLoop {
  int64_t warmup_steps = 0;
  int64_t steps = 1;  // measured, after the warm-up
  int loss_ranks = 0;  // ranks that compute the loss (a pipeline's last stage); 0: every rank
  std::function<MeasuredStep(int64_t step)> run_step;
  // Between the step and its checks (collective self-tests, injected faults); optional.
  std::function<void(int64_t step)> after_step;
  // The first NaN or infinity in what the device keeps across steps (its
  // parameters and optimizer state), or none.
  std::function<std::optional<NonFinite>()> state_non_finite;
};

struct StepLoopResult {
  std::vector<MeasuredStep> measured;  // the steps after the warm-up
  bool stopped = false;                // a NaN or infinity ended the run (result.non_finite names it)
  int64_t persistent_bytes = 0;        // what the device held for the run, measured after the last step
};

// `world` agrees the finite checks; `comm` averages the loss.
StepLoopResult run_step_loop(const StepLoop& loop, Communicator& comm, Communicator& world,
                             const models::ModelSpec& model, RunResult& result);

}  // namespace ragged::backend
