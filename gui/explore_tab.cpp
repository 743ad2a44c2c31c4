#include "gui/explore_tab.hpp"

#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "common/errors.hpp"
#include "gui/chart_builders.hpp"
#include "gui/import_notes_dialog.hpp"
#include "gui/models/config_import.hpp"
#include "gui/settings_delegate.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {
namespace {

void replace_chart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}

QChartView* new_chart_view(QWidget* parent) {
  auto* view = new QChartView(parent);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumSize(180, 150);
  return view;
}

}  // namespace

ExploreTab::ExploreTab(QWidget* parent) : QWidget(parent) {
  build_ui();
  connect(&settings_, &ScenarioSettingsModel::settings_changed, this, &ExploreTab::settings_edited);
  connect(&settings_, &ScenarioSettingsModel::edit_refused, this, &ExploreTab::notice);
  connect(&jobs_, &SimulationJobs::job_started, this, [this](int row) {
    results_.set_started(row);
    update_progress();
  });
  connect(&jobs_, &SimulationJobs::job_progress, this, [this](int row, double f) {
    results_.set_progress(row, f);
    update_progress();
  });
  connect(&jobs_, &SimulationJobs::job_finished, this, [this](int row, const SimulationOutcome& outcome) {
    results_.set_outcome(row, outcome);
    update_progress();
    // The breakdowns follow the scenario's own strategy unless a row was picked.
    const bool own = results_.rows()[static_cast<size_t>(row)].strategy ==
                     scenarios::strategy_name(current_.scenario.training().strategy());
    if (outcome.state == RunState::kDone && (selected_row_ < 0 || (own && !picked_))) select_row(row);
    refresh_charts();
  });
  connect(&jobs_, &SimulationJobs::all_finished, this, [this] {
    cancel_button_->setEnabled(false);
    update_progress();
  });
}

void ExploreTab::build_ui() {
  auto* left = new QWidget(this);
  auto* left_layout = new QVBoxLayout(left);
  auto* pick = new QHBoxLayout();
  scenario_box_ = new QComboBox(left);
  for (const auto& name : shipped_scenario_names()) scenario_box_->addItem(QString::fromStdString(name));
  scenario_box_->setToolTip(QStringLiteral("A shipped scenario"));
  connect(scenario_box_, &QComboBox::activated, this, [this] { open_scenario(scenario_box_->currentText()); });
  auto* open_file = new QPushButton(QStringLiteral("Scenario file…"), left);
  open_file->setToolTip(QStringLiteral("A scenario, or a torchtitan TOML, llm-foundry YAML or DeepSpeed JSON to import"));
  connect(open_file, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open a scenario or a training config"), QString(),
                                                      QString::fromLatin1(kScenarioFileFilter));
    if (!path.isEmpty()) open_scenario(path);
  });
  auto* open_config = new QPushButton(QStringLiteral("config.json…"), left);
  open_config->setToolTip(QStringLiteral("A Hugging Face config.json on the current cluster"));
  connect(open_config, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open a Hugging Face config.json"), QString(),
                                                      QStringLiteral("config.json (*.json)"));
    if (!path.isEmpty()) open_model(path);
  });
  pick->addWidget(scenario_box_, 1);
  pick->addWidget(open_file);
  pick->addWidget(open_config);
  left_layout->addLayout(pick);
  notes_dialog_ = new ImportNotesDialog(this);
  notes_button_ = new QPushButton(QStringLiteral("Import notes…"), left);
  notes_button_->setToolTip(QStringLiteral("Every field of the imported config: mapped, or not and why"));
  notes_button_->hide();
  connect(notes_button_, &QPushButton::clicked, notes_dialog_, &QDialog::show);
  pick->addWidget(notes_button_);

  settings_view_ = new QTableView(left);
  settings_view_->setModel(&settings_);
  settings_view_->setItemDelegateForColumn(ScenarioSettingsModel::kValue, new SettingsDelegate(settings_view_));
  settings_view_->horizontalHeader()->setStretchLastSection(true);
  settings_view_->verticalHeader()->hide();
  settings_view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::SelectedClicked |
                                  QAbstractItemView::EditKeyPressed | QAbstractItemView::AnyKeyPressed);
  settings_view_->verticalHeader()->setDefaultSectionSize(22);
  left_layout->addWidget(settings_view_, 3);

  error_label_ = new QLabel(left);
  error_label_->setStyleSheet(QStringLiteral("color: #b00020"));
  error_label_->setWordWrap(true);
  error_label_->hide();
  left_layout->addWidget(error_label_);
  plan_label_ = new QLabel(QStringLiteral("Pick a scenario."), left);
  plan_label_->setWordWrap(true);
  plan_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  left_layout->addWidget(plan_label_);

  auto* run_row = new QHBoxLayout();
  run_button_ = new QPushButton(QStringLiteral("Simulate every strategy"), left);
  run_button_->setToolTip(QStringLiteral("Ctrl+R"));
  cancel_button_ = new QPushButton(QStringLiteral("Cancel"), left);
  cancel_button_->setEnabled(false);
  auto_run_ = new QCheckBox(QStringLiteral("on every change"), left);
  auto_run_->setChecked(true);
  progress_ = new QProgressBar(left);
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  connect(run_button_, &QPushButton::clicked, this, &ExploreTab::run_all);
  connect(cancel_button_, &QPushButton::clicked, this, &ExploreTab::cancel);
  run_row->addWidget(run_button_);
  run_row->addWidget(cancel_button_);
  run_row->addWidget(auto_run_);
  left_layout->addLayout(run_row);
  left_layout->addWidget(progress_);

  results_view_ = new QTableView(left);
  results_view_->setModel(&results_);
  results_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  results_view_->setSelectionMode(QAbstractItemView::SingleSelection);
  results_view_->verticalHeader()->hide();
  results_view_->hideColumn(SimulationResultsModel::kGpus);
  results_view_->verticalHeader()->setDefaultSectionSize(22);
  connect(results_view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    picked_ = true;
    select_row(index.row());
  });
  // Every strategy's row shows without scrolling (an OOM among them): the settings table gives way first.
  results_view_->setMinimumHeight(22 * (static_cast<int>(scenarios::all_strategies().size()) + 1) + 6);
  results_view_->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  left_layout->addWidget(results_view_, 2);

  auto* right = new QWidget(this);
  auto* grid = new QGridLayout(right);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(2);
  tokens_view_ = new_chart_view(right);
  mfu_view_ = new_chart_view(right);
  memory_view_ = new_chart_view(right);
  units_view_ = new_chart_view(right);
  breakdown_view_ = new_chart_view(right);
  grid->addWidget(tokens_view_, 0, 0);
  grid->addWidget(mfu_view_, 0, 1);
  grid->addWidget(memory_view_, 0, 2);
  grid->addWidget(units_view_, 1, 0, 1, 2);  // its unit names and phase legend need the width
  grid->addWidget(breakdown_view_, 1, 2);

  auto* splitter = new QSplitter(this);
  splitter->addWidget(left);
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 5);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(splitter);

  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(300);
  connect(debounce_, &QTimer::timeout, this, [this] {
    if (auto_run_->isChecked()) run_all();
  });
  refresh_charts();
}

bool ExploreTab::open_scenario(const QString& name_or_path) {
  if (is_importable_config(name_or_path.toStdString())) return import_config(name_or_path);
  try {
    open_loaded(scenarios::load_scenario(name_or_path.toStdString()));
  } catch (const std::exception& e) {
    Q_EMIT error(QString::fromUtf8(e.what()));
    return false;
  }
  return true;
}

bool ExploreTab::import_config(const QString& path) {
  try {
    ConfigImport imported = import_config_file(path.toStdString(), settings_.settings());
    open_loaded(std::move(imported.loaded));
    imported_ = true;
    notes_dialog_->set_import(imported, path);
  } catch (const std::exception& e) {
    Q_EMIT error(QString::fromUtf8(e.what()));
    return false;
  }
  notes_button_->show();
  notes_dialog_->show();
  Q_EMIT notice(notes_dialog_->summary());
  return true;
}

bool ExploreTab::open_model(const QString& model) {
  const ScenarioSettings& s = settings_.settings();
  try {
    scenarios::LoadedScenario loaded =
        scenario_for_model(model.toStdString(), s.gpu_preset.empty() ? "h100" : s.gpu_preset, s.gpus > 0 ? s.gpus : 8);
    planner::resolve_scenario(loaded);  // a config.json that does not read is an error of opening it
    open_loaded(std::move(loaded));
  } catch (const std::exception& e) {
    Q_EMIT error(QString::fromUtf8(e.what()));
    return false;
  }
  return true;
}

void ExploreTab::open_loaded(scenarios::LoadedScenario loaded) {
  drop_results();
  base_ = std::move(loaded);
  current_ = base_;
  valid_ = true;
  imported_ = false;  // import_config sets it again
  notes_button_->hide();
  notes_dialog_->hide();
  const QString origin = QString::fromStdString(base_.origin);
  const int shipped = scenario_box_->findText(origin.startsWith(QStringLiteral("builtin:")) ? origin.mid(8) : origin);
  if (shipped >= 0) scenario_box_->setCurrentIndex(shipped);
  settings_.set_settings(settings_of(base_.scenario));
  error_label_->hide();
  replan();
}

void ExploreTab::set_gpus_and_strategy(int64_t gpus, scenarios::Strategy strategy) {
  settings_.set_value(ScenarioSettingsModel::kStrategy, QString::fromStdString(scenarios::strategy_name(strategy)));
  settings_.set_value(ScenarioSettingsModel::kGpus, QString::number(gpus));
}

void ExploreTab::drop_results() {
  // Whatever ran or runs belongs to the old settings: drop it, and what it showed.
  jobs_.start({});
  results_.reset_rows({});
  selected_row_ = -1;
  units_.set_trace(nullptr);
  plan_.reset();
  plan_label_->setText(QString());
  refresh_charts();
}

void ExploreTab::settings_edited() {
  drop_results();
  try {
    current_ = apply_settings(base_, settings_.settings());
    valid_ = true;
    error_label_->hide();
    settings_.follow(settings_of(current_.scenario));  // a shard group left to the scenario shows the plan's
  } catch (const std::exception& e) {
    valid_ = false;
    error_label_->setText(QString::fromUtf8(e.what()));
    error_label_->show();
    return;
  }
  replan();
}

void ExploreTab::replan() {
  if (!valid_) return;
  plan_label_->setText(QStringLiteral("planning…"));
  const scenarios::LoadedScenario loaded = current_;
  planning_.run([this, loaded]() -> std::function<void()> {
    try {
      auto resolved = std::make_shared<const planner::ResolvedScenario>(planner::resolve_scenario(loaded));
      auto plan = std::make_shared<const PlanSummary>(summarize_plan(*resolved));
      return [this, resolved, plan] {
        resolved_ = resolved;
        plan_ = plan;
        plan_label_->setText(QString::fromStdString(plan_summary_line(*plan)));
        refresh_charts();
        Q_EMIT scenario_resolved();
        if (auto_run_->isChecked()) debounce_->start();
      };
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      return [this, message] {
        resolved_.reset();
        plan_.reset();
        plan_label_->setText(QString());
        error_label_->setText(message);
        error_label_->show();
        refresh_charts();
      };
    }
  });
}

void ExploreTab::run_all() {
  if (!resolved_ || !valid_) return;
  debounce_->stop();
  std::vector<planner::ResolvedScenario> batch;
  std::vector<SimulationRow> rows;
  const int64_t gpus = scenarios::total_gpus(resolved_->scenario());
  for (scenarios::Strategy s : scenarios::all_strategies()) {
    planner::ResolvedScenario copy = *resolved_;  // the model and granularity do not depend on the strategy
    copy.loaded.scenario.mutable_training()->set_strategy(s);
    batch.push_back(std::move(copy));
    rows.push_back({gpus, scenarios::strategy_name(s), 0, {}});
  }
  results_.reset_rows(std::move(rows));
  selected_row_ = -1;
  picked_ = false;
  jobs_.start(std::move(batch));
  cancel_button_->setEnabled(true);
  update_progress();
}

void ExploreTab::cancel() {
  debounce_->stop();
  jobs_.cancel();
}

void ExploreTab::update_progress() {
  const auto& rows = results_.rows();
  double done = 0;
  for (const auto& r : rows) done += r.outcome.state == RunState::kRunning ? r.progress : r.outcome.state == RunState::kQueued ? 0 : 1;
  progress_->setValue(rows.empty() ? 0 : static_cast<int>(1000 * done / static_cast<double>(rows.size())));
  progress_->setFormat(jobs_.busy() ? QStringLiteral("simulating %p%") : results_.finished_text());
}

void ExploreTab::select_row(int row) {
  selected_row_ = row;
  const auto& rows = results_.rows();
  if (row < 0 || row >= static_cast<int>(rows.size()) || !rows[static_cast<size_t>(row)].outcome.trace) {
    units_.set_trace(nullptr);
    return;
  }
  const SimulationRow& r = rows[static_cast<size_t>(row)];
  units_.set_trace(r.outcome.trace.get());
  results_view_->selectRow(row);
  Q_EMIT trace_selected(r.outcome.trace, QStringLiteral("%1, %2 GPUs, predicted").arg(QString::fromStdString(r.strategy)).arg(r.gpus));
  refresh_charts();
}

void ExploreTab::refresh_charts() {
  const auto& rows = results_.rows();
  replace_chart(tokens_view_, strategy_chart(rows, StrategyMetric::kTokensPerGpu));
  replace_chart(mfu_view_, strategy_chart(rows, StrategyMetric::kMfu));
  replace_chart(memory_view_, strategy_chart(rows, StrategyMetric::kPeakMemory));
  QChart* units = unit_breakdown_chart(units_.rows());
  if (selected_row_ >= 0 && selected_row_ < static_cast<int>(rows.size())) {
    units->setTitle(units->title() + QStringLiteral(": ") + QString::fromStdString(rows[static_cast<size_t>(selected_row_)].strategy));
  }
  replace_chart(units_view_, units);
  if (plan_) {
    const traces::Summary* predicted = nullptr;
    for (const auto& r : rows) {
      if (r.strategy == plan_->strategy && r.summary() != nullptr) predicted = r.summary();
    }
    memory_.set_parts(memory_parts(plan_->memory, predicted));
    QChart* chart = memory_breakdown_chart(memory_.parts(), plan_->allocator_bytes, plan_->hbm_bytes);
    chart->setTitle(chart->title() + QStringLiteral(" (") + QString::fromStdString(plan_->strategy) + QStringLiteral(")"));
    replace_chart(breakdown_view_, chart);
  } else {
    memory_.set_parts({});
    replace_chart(breakdown_view_, memory_breakdown_chart({}, 0, 0));
  }
}

QString ExploreTab::plan_text() const { return plan_label_->text(); }
QString ExploreTab::settings_error() const { return error_label_->isHidden() ? QString() : error_label_->text(); }

QList<QWidget*> ExploreTab::exportable_views() const {
  return {tokens_view_, mfu_view_, memory_view_, units_view_, breakdown_view_};
}

}  // namespace ragged::gui
