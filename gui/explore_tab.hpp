#pragma once
// Explore: a scenario (shipped, a file, a torchtitan/llm-foundry/DeepSpeed
// config imported, or a model and cluster picked here), its knobs, the plan the moment a knob changes, and every strategy
// simulated in the background (progress, Cancel; results of settings that
// changed meanwhile are dropped) with their throughput, MFU, peak memory
// against HBM, per-unit time and memory breakdowns.

#include <QWidget>

#include <memory>

#include "gui/models/latest_task.hpp"
#include "gui/models/memory_breakdown_model.hpp"
#include "gui/models/plan_summary.hpp"
#include "gui/models/scenario_settings_model.hpp"
#include "gui/models/simulation_jobs.hpp"
#include "gui/models/simulation_results_model.hpp"
#include "gui/models/unit_breakdown_model.hpp"

class QChartView;
class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;
class QTimer;

namespace ragged::gui {

class ImportNotesDialog;

// What File > Open and Explore's button offer: scenarios, and the training
// configs the importers read (torchtitan .toml, llm-foundry .yaml, DeepSpeed .json).
inline constexpr char kScenarioFileFilter[] =
    "Scenarios and training configs (*.textproto *.txtpb *.json *.toml *.yaml *.yml);;All files (*)";

class ExploreTab : public QWidget {
  Q_OBJECT

 public:
  explicit ExploreTab(QWidget* parent = nullptr);

  // A shipped scenario's name, a scenario file or a training config of
  // another stack (imported, the window's settings filling what it lacks,
  // its notes shown); an error is reported through error() and the current
  // scenario stays.
  bool open_scenario(const QString& name_or_path);
  // A catalog model or a config.json on the current GPU preset and count.
  bool open_model(const QString& model);
  // A scenario already read (and checked): it becomes the one the settings edit.
  void open_loaded(scenarios::LoadedScenario loaded);
  void set_gpus_and_strategy(int64_t gpus, scenarios::Strategy strategy);
  void run_all();
  void cancel();

  ScenarioSettingsModel* settings_model() { return &settings_; }
  SimulationResultsModel* results_model() { return &results_; }
  UnitBreakdownModel* units_model() { return &units_; }
  MemoryBreakdownModel* memory_model() { return &memory_; }
  SimulationJobs* jobs() { return &jobs_; }
  LatestTask* plan_task() { return &planning_; }
  // The scenario with the window's settings; nullptr while they are invalid.
  const scenarios::LoadedScenario* current() const { return valid_ ? &current_ : nullptr; }
  std::shared_ptr<const planner::ResolvedScenario> resolved() const { return resolved_; }
  QString plan_text() const;
  QString settings_error() const;
  QList<QWidget*> exportable_views() const;
  // The notes of the config the scenario was imported from (hidden for any other scenario).
  ImportNotesDialog* import_notes() { return notes_dialog_; }
  bool imported() const { return imported_; }

 Q_SIGNALS:
  void error(const QString& message);  // a problem worth a dialog (opening a file)
  void notice(const QString& message);  // worth a line in the status bar (an edit refused)
  void scenario_resolved();            // resolved() changed
  void trace_selected(std::shared_ptr<const traces::Trace> trace, const QString& label);

 private:
  void build_ui();
  bool import_config(const QString& path);
  void drop_results();
  void settings_edited();
  void replan();
  void refresh_charts();
  void select_row(int row);
  void update_progress();

  ScenarioSettingsModel settings_;
  SimulationResultsModel results_;
  UnitBreakdownModel units_;
  MemoryBreakdownModel memory_;
  SimulationJobs jobs_;
  LatestTask planning_;
  scenarios::LoadedScenario base_, current_;
  bool valid_ = false;
  std::shared_ptr<const planner::ResolvedScenario> resolved_;
  std::shared_ptr<const PlanSummary> plan_;
  int selected_row_ = -1;
  bool picked_ = false;  // a row was clicked: keep it
  bool imported_ = false;  // the scenario came from a config: its notes apply

  QComboBox* scenario_box_ = nullptr;
  QTableView* settings_view_ = nullptr;
  QLabel* plan_label_ = nullptr;
  QLabel* error_label_ = nullptr;
  QPushButton* notes_button_ = nullptr;
  ImportNotesDialog* notes_dialog_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QCheckBox* auto_run_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QTableView* results_view_ = nullptr;
  QTimer* debounce_ = nullptr;
  QChartView* tokens_view_ = nullptr;
  QChartView* mfu_view_ = nullptr;
  QChartView* memory_view_ = nullptr;
  QChartView* units_view_ = nullptr;
  QChartView* breakdown_view_ = nullptr;
};

}  // namespace ragged::gui
