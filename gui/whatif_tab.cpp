#include "gui/whatif_tab.hpp"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QShowEvent>
#include <QSpinBox>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {
namespace {

// The controls show the scenario's values scaled and rounded; a control the
// user has not touched gives back the exact value it was shown, so opening a
// scenario never rewrites its fields with rounded ones.
constexpr double kPerMillion = 1e6;  // interruptions per GPU-hour -> per million GPU-hours
constexpr double kBillions = 1e-9;   // tokens -> billions

void show_value(QDoubleSpinBox* box, double exact, double scale = 1) {
  const QSignalBlocker block(box);
  box->setValue(exact * scale);
  box->setProperty("exact", exact);
  box->setProperty("shown", box->value());
}

double read_value(const QDoubleSpinBox* box, double scale = 1) {
  return box->value() == box->property("shown").toDouble() ? box->property("exact").toDouble() : box->value() / scale;
}

QDoubleSpinBox* new_box(QWidget* parent, const char* name, double min, double max, double step, int decimals,
                        const QString& tip) {
  auto* box = new QDoubleSpinBox(parent);
  box->setObjectName(QString::fromLatin1(name));
  box->setRange(min, max);
  box->setSingleStep(step);
  box->setDecimals(decimals);
  box->setToolTip(tip);
  return box;
}

QSpinBox* new_count(QWidget* parent, const char* name, const QString& tip) {
  auto* box = new QSpinBox(parent);
  box->setObjectName(QString::fromLatin1(name));
  box->setToolTip(tip);
  return box;
}

}  // namespace

WhatIfTab::WhatIfTab(QWidget* parent) : QWidget(parent) {
  build_ui();
  connect(&jobs_, &SimulationJobs::job_started, this, [this] { state_label_->setText(QStringLiteral("simulating…")); });
  connect(&jobs_, &SimulationJobs::job_progress, this,
          [this](int, double fraction) { progress_->setValue(static_cast<int>(1000 * fraction)); });
  connect(&jobs_, &SimulationJobs::job_finished, this, [this](int, const SimulationOutcome& outcome) {
    cancel_button_->setEnabled(false);
    progress_->setValue(outcome.state == RunState::kDone ? 1000 : 0);
    if (outcome.state == RunState::kFailed) {
      state_label_->setText(QStringLiteral("failed"));
      show_error(QString::fromStdString(outcome.error));
      return;
    }
    if (outcome.state != RunState::kDone) {
      state_label_->setText(QString::fromStdString(run_state_name(outcome.state)));
      return;
    }
    state_label_->setText(QStringLiteral("simulated in %1 s").arg(outcome.wall_seconds, 0, 'f', 1));
    preparing_.run([this, resolved = running_, outcome]() -> std::function<void()> {
      try {
        const WhatIfFigures figures = whatif_figures(*resolved, *outcome.trace, outcome.whatif.get());
        return [this, figures] { figures_.set_figures(figures); };
      } catch (const std::exception& e) {
        const QString message = QString::fromUtf8(e.what());
        return [this, message] { show_error(message); };
      }
    });
  });
}

void WhatIfTab::build_ui() {
  auto* controls = new QWidget(this);
  auto* left = new QVBoxLayout(controls);
  scenario_label_ = new QLabel(QStringLiteral("Pick a scenario in Explore."), controls);
  scenario_label_->setWordWrap(true);
  left->addWidget(scenario_label_);

  auto* cluster = new QGroupBox(QStringLiteral("The cluster you get (whatif)"), controls);
  auto* cluster_form = new QFormLayout(cluster);
  slow_gpus_ = new_count(cluster, "slow_gpus", QStringLiteral("GPUs at a fraction of their compute rate, chosen by whatif.slow_gpus.seed"));
  slow_gpu_fraction_ = new_box(cluster, "slow_gpu_fraction", 0.05, 1, 0.05, 2, QStringLiteral("Their fraction of the compute rate"));
  slow_links_ = new_count(cluster, "slow_links", QStringLiteral("Nodes whose NICs run at a fraction of their bandwidth"));
  slow_link_fraction_ = new_box(cluster, "slow_link_fraction", 0.05, 1, 0.05, 2, QStringLiteral("Their fraction of the NIC bandwidth"));
  jitter_ = new_box(cluster, "jitter", 0, 1, 0.01, 2, QStringLiteral("Per-step compute time jitter per GPU: relative standard deviation"));
  cluster_form->addRow(QStringLiteral("slow GPUs"), slow_gpus_);
  cluster_form->addRow(QStringLiteral("  at fraction"), slow_gpu_fraction_);
  cluster_form->addRow(QStringLiteral("slow links (nodes)"), slow_links_);
  cluster_form->addRow(QStringLiteral("  at fraction"), slow_link_fraction_);
  cluster_form->addRow(QStringLiteral("compute jitter (sd)"), jitter_);
  left->addWidget(cluster);

  auto* failures = new QGroupBox(QStringLiteral("Failures and checkpoints (goodput)"), controls);
  auto* failure_form = new QFormLayout(failures);
  interruptions_ = new_box(failures, "interruptions", 0, 1e6, 1, 2,
                           QStringLiteral("Interruptions per million GPU-hours (Llama 3: 19.73)"));
  restart_minutes_ = new_box(failures, "restart_minutes", 0, 10080, 1, 1, QStringLiteral("Failure detection and job relaunch, minutes"));
  storage_per_node_ = new_box(failures, "storage_per_node", 0.01, 1e5, 5, 2, QStringLiteral("Checkpoint storage bandwidth of one node, GB/s"));
  storage_aggregate_ = new_box(failures, "storage_aggregate", 0.01, 1e5, 0.5, 2,
                               QStringLiteral("Checkpoint storage bandwidth of the whole cluster, TB/s"));
  async_ = new QCheckBox(QStringLiteral("asynchronous checkpoints"), failures);
  async_->setObjectName(QStringLiteral("async_checkpoint"));
  train_tokens_ = new_box(failures, "train_tokens", 0, 1e6, 100, 1, QStringLiteral("Tokens of the whole run, billions (0: days to train not asked)"));
  failure_form->addRow(QStringLiteral("interruptions / 10⁶ GPU-h"), interruptions_);
  failure_form->addRow(QStringLiteral("restart, minutes"), restart_minutes_);
  failure_form->addRow(QStringLiteral("storage per node, GB/s"), storage_per_node_);
  failure_form->addRow(QStringLiteral("storage cap, TB/s"), storage_aggregate_);
  failure_form->addRow(async_);
  failure_form->addRow(QStringLiteral("tokens to train, B"), train_tokens_);
  left->addWidget(failures);

  for (QSpinBox* box : {slow_gpus_, slow_links_}) connect(box, &QSpinBox::valueChanged, this, &WhatIfTab::settings_edited);
  for (QDoubleSpinBox* box : {slow_gpu_fraction_, slow_link_fraction_, jitter_, interruptions_, restart_minutes_, storage_per_node_,
                              storage_aggregate_, train_tokens_}) {
    connect(box, &QDoubleSpinBox::valueChanged, this, &WhatIfTab::settings_edited);
  }
  connect(async_, &QCheckBox::toggled, this, &WhatIfTab::settings_edited);

  error_label_ = new QLabel(controls);
  error_label_->setStyleSheet(QStringLiteral("color: #b00020"));
  error_label_->setWordWrap(true);
  error_label_->hide();
  left->addWidget(error_label_);
  auto* run_row = new QHBoxLayout();
  run_button_ = new QPushButton(QStringLiteral("Simulate the what-if"), controls);
  cancel_button_ = new QPushButton(QStringLiteral("Cancel"), controls);
  cancel_button_->setObjectName(QStringLiteral("cancel"));
  cancel_button_->setEnabled(false);
  connect(run_button_, &QPushButton::clicked, this, &WhatIfTab::run);
  connect(cancel_button_, &QPushButton::clicked, this, &WhatIfTab::cancel);
  run_row->addWidget(run_button_);
  run_row->addWidget(cancel_button_);
  left->addLayout(run_row);
  progress_ = new QProgressBar(controls);
  progress_->setRange(0, 1000);
  left->addWidget(progress_);
  state_label_ = new QLabel(controls);
  left->addWidget(state_label_);
  left->addStretch(1);

  figures_view_ = new QTableView(this);
  figures_view_->setModel(&figures_);
  figures_view_->verticalHeader()->hide();
  figures_view_->horizontalHeader()->setStretchLastSection(true);
  figures_view_->setWordWrap(true);
  figures_view_->setColumnWidth(WhatIfFiguresModel::kFigure, 200);

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(controls, 2);
  layout->addWidget(figures_view_, 5);

  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(300);
  connect(debounce_, &QTimer::timeout, this, &WhatIfTab::run);
}

void WhatIfTab::set_scenario(std::shared_ptr<const planner::ResolvedScenario> resolved) {
  base_ = std::move(resolved);
  if (!base_) return;
  const scenarios::Scenario& s = base_->scenario();
  {
    const QSignalBlocker gpus(slow_gpus_), links(slow_links_);
    slow_gpus_->setRange(0, static_cast<int>(scenarios::total_gpus(s)));
    slow_links_->setRange(0, static_cast<int>(s.cluster().nodes()));
  }
  scenario_label_->setText(QStringLiteral("%1: %2 on %3 GPUs (%4 nodes)")
                               .arg(QString::fromStdString(s.name()), QString::fromStdString(scenarios::strategy_name(s.training().strategy())))
                               .arg(scenarios::total_gpus(s))
                               .arg(s.cluster().nodes()));
  show_settings(whatif_settings_of(s));
  settings_edited();
}

void WhatIfTab::show_settings(const WhatIfSettings& w) {
  {
    const QSignalBlocker gpus(slow_gpus_), links(slow_links_), async(async_);
    slow_gpus_->setValue(static_cast<int>(w.slow_gpus));
    slow_links_->setValue(static_cast<int>(w.slow_links));
    async_->setChecked(w.async_checkpoint);
  }
  show_value(slow_gpu_fraction_, w.slow_gpu_fraction);
  show_value(slow_link_fraction_, w.slow_link_fraction);
  show_value(jitter_, w.jitter);
  show_value(interruptions_, w.interruptions_per_gpu_hour, kPerMillion);
  show_value(restart_minutes_, w.restart_minutes);
  show_value(storage_per_node_, w.storage_gbytes_per_s_per_node);
  show_value(storage_aggregate_, w.storage_aggregate_tbytes_per_s);
  show_value(train_tokens_, w.train_tokens, kBillions);
}

WhatIfSettings WhatIfTab::settings() const {
  WhatIfSettings w;
  w.slow_gpus = slow_gpus_->value();
  w.slow_gpu_fraction = read_value(slow_gpu_fraction_);
  w.slow_links = slow_links_->value();
  w.slow_link_fraction = read_value(slow_link_fraction_);
  w.jitter = read_value(jitter_);
  w.interruptions_per_gpu_hour = read_value(interruptions_, kPerMillion);
  w.restart_minutes = read_value(restart_minutes_);
  w.storage_gbytes_per_s_per_node = read_value(storage_per_node_);
  w.storage_aggregate_tbytes_per_s = read_value(storage_aggregate_);
  w.async_checkpoint = async_->isChecked();
  w.train_tokens = read_value(train_tokens_, kBillions);
  return w;
}

void WhatIfTab::set_settings(const WhatIfSettings& settings) {
  show_settings(settings);
  settings_edited();
}

void WhatIfTab::settings_edited() {
  // Whatever ran or runs belongs to the old settings.
  jobs_.start({});
  preparing_.run([] { return std::function<void()>(); });  // a plan or figures on their way are stale too
  running_.reset();
  requested_ = false;
  figures_.clear();
  progress_->setValue(0);
  cancel_button_->setEnabled(false);
  if (!base_) return;
  try {
    current_ = apply_whatif_settings(base_->loaded, settings());
    valid_ = true;
    error_label_->hide();
  } catch (const std::exception& e) {
    valid_ = false;
    show_error(QString::fromUtf8(e.what()));
    state_label_->setText(QStringLiteral("not simulated: the error above"));
    return;
  }
  state_label_->setText(QStringLiteral("not simulated yet"));
  if (isVisible()) debounce_->start();
}

void WhatIfTab::run() {
  debounce_->stop();
  if (!valid_) return;
  jobs_.start({});
  running_.reset();
  requested_ = true;
  figures_.clear();
  state_label_->setText(QStringLiteral("planning…"));
  cancel_button_->setEnabled(true);
  const scenarios::LoadedScenario loaded = current_;
  preparing_.run([this, loaded]() -> std::function<void()> {
    try {
      auto resolved = std::make_shared<const planner::ResolvedScenario>(planner::resolve_scenario(loaded));
      return [this, resolved] {
        running_ = resolved;
        jobs_.start({*resolved});
      };
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      return [this, message] {
        show_error(message);
        state_label_->setText(QStringLiteral("not simulated: the error above"));
        cancel_button_->setEnabled(false);
      };
    }
  });
}

void WhatIfTab::cancel() {
  debounce_->stop();
  jobs_.cancel();
  // Still planning: the job it would start is cancelled too.
  if (preparing_.busy() && !running_) {
    preparing_.run([] { return std::function<void()>(); });
    state_label_->setText(QStringLiteral("cancelled"));
    cancel_button_->setEnabled(false);
  }
}

void WhatIfTab::show_error(const QString& message) {
  error_label_->setText(message);
  error_label_->show();
}

QString WhatIfTab::error_text() const { return error_label_->isHidden() ? QString() : error_label_->text(); }
QString WhatIfTab::state_text() const { return state_label_->text(); }
QList<QWidget*> WhatIfTab::exportable_views() const { return {figures_view_}; }

void WhatIfTab::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  // Simulated when first looked at, not on every edit made in Explore.
  if (valid_ && !requested_) debounce_->start();
}

}  // namespace ragged::gui
