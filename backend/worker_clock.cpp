#include "backend/worker_clock.hpp"

namespace ragged::backend {

void WorkerClock::heard(int rank, double now) {
  Worker& w = workers_[rank];
  w.last = now;
  w.owes = false;
}

void WorkerClock::task_sent(int rank, double now) {
  Worker& w = workers_[rank];
  if (w.tasks == 0 && !w.owes) w.last = now;  // its silence counts from the first task it holds
  ++w.tasks;
}

void WorkerClock::result_received(int rank, double now) {
  Worker& w = workers_[rank];
  if (w.tasks > 0) --w.tasks;
  w.last = now;
}

void WorkerClock::owes_message(int rank, double now) {
  Worker& w = workers_[rank];
  if (w.tasks == 0 && !w.owes) w.last = now;
  w.owes = true;
}

std::optional<WorkerClock::Silent> WorkerClock::silent_past_timeout(double now) const {
  if (timeout_s_ <= 0) return std::nullopt;
  std::optional<Silent> worst;
  for (const auto& [rank, w] : workers_) {
    if (w.tasks == 0 && !w.owes) continue;
    const double silent = now - w.last;
    if (silent <= timeout_s_) continue;
    if (!worst || silent > worst->seconds) worst = Silent{rank, silent, w.tasks};
  }
  return worst;
}

}  // namespace ragged::backend
