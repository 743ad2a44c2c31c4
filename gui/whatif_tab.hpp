#pragma once
// What-if: the Explore scenario on the cluster you actually get. Slow GPUs,
// slow NICs and compute jitter (the scenario's whatif block), and the
// interruption rate, restart and checkpoint storage (its goodput block); the
// scenario's strategy simulated in the background with them (a child process,
// Cancel; results of settings that changed meanwhile are dropped) beside the
// healthy cluster: the step against the healthy one, the critical rank and
// what it waited on, and the goodput figures `ragged simulate --goodput`
// prints.

#include <QWidget>

#include <memory>

#include "gui/models/latest_task.hpp"
#include "gui/models/simulation_jobs.hpp"
#include "gui/models/whatif_figures_model.hpp"
#include "gui/models/whatif_settings.hpp"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;
class QTimer;

namespace ragged::gui {

class WhatIfTab : public QWidget {
  Q_OBJECT

 public:
  explicit WhatIfTab(QWidget* parent = nullptr);

  // The scenario the knobs start from (Explore's); its own what-if and goodput blocks set them.
  void set_scenario(std::shared_ptr<const planner::ResolvedScenario> resolved);
  // The knobs, as if typed into the controls.
  void set_settings(const WhatIfSettings& settings);
  void run();
  void cancel();

  WhatIfSettings settings() const;
  WhatIfFiguresModel* figures_model() { return &figures_; }
  SimulationJobs* jobs() { return &jobs_; }
  // The scenario with the knobs; nullptr while none is open or they are invalid.
  const scenarios::LoadedScenario* current() const { return valid_ ? &current_ : nullptr; }
  QString error_text() const;
  QString state_text() const;
  QList<QWidget*> exportable_views() const;

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void build_ui();
  void show_settings(const WhatIfSettings& settings);
  void settings_edited();
  void show_error(const QString& message);

  WhatIfFiguresModel figures_;
  SimulationJobs jobs_{1};
  LatestTask preparing_;  // the scenario resolved, then the figures of its result
  std::shared_ptr<const planner::ResolvedScenario> base_;
  std::shared_ptr<const planner::ResolvedScenario> running_;  // what the current job simulates
  scenarios::LoadedScenario current_;
  bool valid_ = false;
  bool requested_ = false;  // run() was called for the current settings

  QSpinBox* slow_gpus_ = nullptr;
  QDoubleSpinBox* slow_gpu_fraction_ = nullptr;
  QSpinBox* slow_links_ = nullptr;
  QDoubleSpinBox* slow_link_fraction_ = nullptr;
  QDoubleSpinBox* jitter_ = nullptr;
  QDoubleSpinBox* interruptions_ = nullptr;  // per million GPU-hours
  QDoubleSpinBox* restart_minutes_ = nullptr;
  QDoubleSpinBox* storage_per_node_ = nullptr;
  QDoubleSpinBox* storage_aggregate_ = nullptr;
  QCheckBox* async_ = nullptr;
  QDoubleSpinBox* train_tokens_ = nullptr;  // billions
  QLabel* scenario_label_ = nullptr;
  QLabel* error_label_ = nullptr;
  QLabel* state_label_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QTableView* figures_view_ = nullptr;
  QTimer* debounce_ = nullptr;
};

}  // namespace ragged::gui
