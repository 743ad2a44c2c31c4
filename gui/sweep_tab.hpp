#pragma once
// Sweep: the Explore scenario at 8, 16, ..., 16,384 GPUs under every
// strategy, simulated in the background: throughput and peak memory against
// the GPU count on a log axis, the all-OOM ranges shaded. Clicking a point
// opens that configuration in Explore. By default each GPU keeps its
// micro-batch, so the global batch grows with the GPUs; "keep the global
// batch" holds it at a number of tokens by the accumulation steps
// (planner::accumulation_for_global_batch, as `ragged simulate
// --sweep-global-batch`), leaving out the GPU counts that cannot.

#include <QWidget>

#include <memory>

#include "gui/models/simulation_jobs.hpp"
#include "gui/models/simulation_results_model.hpp"

class QChartView;
class QCheckBox;
class QLineEdit;
class QLabel;
class QProgressBar;
class QPushButton;
class QTimer;

namespace ragged::gui {

class SweepTab : public QWidget {
  Q_OBJECT

 public:
  explicit SweepTab(QWidget* parent = nullptr);

  void set_scenario(std::shared_ptr<const planner::ResolvedScenario> resolved);
  void run(const std::vector<int64_t>& gpu_counts);
  void run_default();  // 8 ... 16,384
  void cancel() { jobs_.cancel(); }
  SimulationResultsModel* results_model() { return &results_; }
  SimulationJobs* jobs() { return &jobs_; }
  QList<QWidget*> exportable_views() const;
  // What the tab says above its charts: what to do until a sweep runs, then its progress and outcome.
  QString status_text() const;
  // The fixed-global-batch choice: the check box and the tokens (4M, 512Ki, 1048576).
  QCheckBox* keep_batch_box() const { return keep_batch_; }
  QLineEdit* batch_tokens_edit() const { return batch_tokens_; }

 Q_SIGNALS:
  void open_configuration(qint64 gpus, const QString& strategy);

 private:
  void refresh_charts();
  QString hint() const;

  std::shared_ptr<const planner::ResolvedScenario> resolved_;
  SimulationResultsModel results_;
  SimulationJobs jobs_;
  QLabel* status_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QCheckBox* keep_batch_ = nullptr;
  QLineEdit* batch_tokens_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QChartView* throughput_view_ = nullptr;
  QChartView* memory_view_ = nullptr;
  QTimer* redraw_ = nullptr;
  QString left_out_;  // "Left out: ..." of the last sweep, before its outcome  // coalesces the redraws of a sweep's many results
};

}  // namespace ragged::gui
