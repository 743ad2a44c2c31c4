#pragma once
// Simulations in the background: each on a thread of a private pool, each
// in its own child process (sim::simulate_in_child), at most `parallel` at a
// time. Progress and results arrive as signals on the owner's thread. A new
// start() cancels every job of the previous one and drops what they would
// report (a generation counter), so a result computed for settings that
// have changed since is never shown.

#include <QObject>
#include <QThreadPool>

#include <atomic>
#include <memory>
#include <vector>

#include "gui/models/simulation_outcome.hpp"

namespace ragged::gui {

class SimulationJobs : public QObject {
  Q_OBJECT

 public:
  explicit SimulationJobs(int parallel = 0, QObject* parent = nullptr);  // 0: the machine's cores
  ~SimulationJobs() override;

  // One job per scenario, reported by its index. Returns the new generation.
  quint64 start(std::vector<planner::ResolvedScenario> scenarios);
  // The current jobs stop (children killed) and report kCancelled.
  void cancel();

  bool busy() const { return pending_ > 0; }
  quint64 generation() const { return generation_; }
  // Blocks until every job has returned (tests, shutdown); false on timeout.
  bool wait(int msecs = -1) { return pool_.waitForDone(msecs); }

 Q_SIGNALS:
  void job_started(int index);
  void job_progress(int index, double fraction);
  void job_finished(int index, const ragged::gui::SimulationOutcome& outcome);
  void all_finished();

 private:
  void post(quint64 generation, std::function<void()> report);

  QThreadPool pool_;
  quint64 generation_ = 0;
  std::shared_ptr<std::atomic<bool>> cancel_;
  int pending_ = 0;
};

}  // namespace ragged::gui

Q_DECLARE_METATYPE(ragged::gui::SimulationOutcome)
