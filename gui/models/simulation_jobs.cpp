#include "gui/models/simulation_jobs.hpp"

#include <QMetaObject>

namespace ragged::gui {

SimulationJobs::SimulationJobs(int parallel, QObject* parent) : QObject(parent) {
  pool_.setMaxThreadCount(parallel > 0 ? parallel : std::max(1, QThread::idealThreadCount()));
}

SimulationJobs::~SimulationJobs() {
  if (cancel_) *cancel_ = true;
  pool_.waitForDone();
}

void SimulationJobs::post(quint64 generation, std::function<void()> report) {
  // Queued to this object's thread; dropped if this object is gone or a newer start() came.
  QMetaObject::invokeMethod(
      this,
      [this, generation, report = std::move(report)] {
        if (generation == generation_) report();
      },
      Qt::QueuedConnection);
}

quint64 SimulationJobs::start(std::vector<planner::ResolvedScenario> scenarios) {
  if (cancel_) *cancel_ = true;  // the previous jobs are stale: stop them
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  const quint64 generation = ++generation_;
  pending_ = static_cast<int>(scenarios.size());
  for (size_t i = 0; i < scenarios.size(); ++i) {
    auto resolved = std::make_shared<const planner::ResolvedScenario>(std::move(scenarios[i]));
    const int index = static_cast<int>(i);
    pool_.start([this, resolved, index, generation, cancel = cancel_] {
      SimulationOutcome outcome;
      if (*cancel) {
        outcome.state = RunState::kCancelled;
      } else {
        post(generation, [this, index] { Q_EMIT job_started(index); });
        outcome = run_simulation(
            *resolved, [cancel] { return cancel->load(); },
            [this, generation, index](double fraction) {
              post(generation, [this, index, fraction] { Q_EMIT job_progress(index, fraction); });
            });
      }
      post(generation, [this, index, outcome = std::move(outcome)] {
        --pending_;
        Q_EMIT job_finished(index, outcome);
        if (pending_ == 0) Q_EMIT all_finished();
      });
    });
  }
  if (scenarios.empty()) post(generation, [this] { Q_EMIT all_finished(); });
  return generation;
}

void SimulationJobs::cancel() {
  if (cancel_) *cancel_ = true;
}

}  // namespace ragged::gui
