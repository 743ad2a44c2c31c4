#include "backend/step_loop.hpp"

#include <utility>

#include "backend/run_support.hpp"

namespace ragged::backend {

StepLoopResult run_step_loop(const StepLoop& loop, Communicator& comm, Communicator& world,
                             const models::ModelSpec& model, RunResult& result) {
  StepLoopResult out;
  const int64_t total = loop.warmup_steps + loop.steps;
  for (int64_t step = 1; step <= total && !out.stopped; ++step) {
    MeasuredStep s = loop.run_step(step);
    out.persistent_bytes = s.persistent_bytes;
    result.losses.push_back(comm.sum(s.loss) / (loop.loss_ranks > 0 ? loop.loss_ranks : comm.size()));
    if (loop.after_step) loop.after_step(step);
    std::optional<NonFinite> found = s.gradient_non_finite;
    if (!found) found = non_finite_loss(s.loss);
    if (!found) found = loop.state_non_finite();
    out.stopped = stop_on_non_finite(found, step, model, world, result);
    if (step > loop.warmup_steps) out.measured.push_back(std::move(s));
  }
  return out;
}

}  // namespace ragged::backend
