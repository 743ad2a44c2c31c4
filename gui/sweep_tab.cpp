#include "gui/sweep_tab.hpp"

#include <QChartView>
#include <QCheckBox>
#include <QLineEdit>
#include <QHBoxLayout>
#include <QLabel>
#include <QXYSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/chart_builders.hpp"
#include "common/token_count.hpp"
#include "common/units.hpp"
#include "gui/models/sweep_series.hpp"
#include "planner/global_batch.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::gui {

SweepTab::SweepTab(QWidget* parent) : QWidget(parent) {
  auto* controls = new QHBoxLayout();
  run_button_ = new QPushButton(QStringLiteral("Sweep 8 … 16,384 GPUs"), this);
  cancel_button_ = new QPushButton(QStringLiteral("Cancel"), this);
  cancel_button_->setEnabled(false);
  progress_ = new QProgressBar(this);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  connect(run_button_, &QPushButton::clicked, this, &SweepTab::run_default);
  connect(cancel_button_, &QPushButton::clicked, this, &SweepTab::cancel);
  keep_batch_ = new QCheckBox(QStringLiteral("keep the global batch at"), this);
  keep_batch_->setToolTip(QStringLiteral("Unticked, each GPU keeps its micro-batch and the global batch grows with the "
                                         "GPUs; ticked, the accumulation steps keep this many tokens a step (ragged "
                                         "simulate --sweep-global-batch)"));
  batch_tokens_ = new QLineEdit(this);
  batch_tokens_->setPlaceholderText(QStringLiteral("tokens, e.g. 4Mi"));
  batch_tokens_->setMaximumWidth(110);
  batch_tokens_->setEnabled(false);
  connect(keep_batch_, &QCheckBox::toggled, batch_tokens_, &QLineEdit::setEnabled);
  controls->addWidget(run_button_);
  controls->addWidget(cancel_button_);
  controls->addWidget(keep_batch_);
  controls->addWidget(batch_tokens_);
  controls->addWidget(new QLabel(QStringLiteral("tokens"), this));
  controls->addWidget(progress_, 1);
  throughput_view_ = new QChartView(this);
  memory_view_ = new QChartView(this);
  for (QChartView* v : {throughput_view_, memory_view_}) v->setRenderHint(QPainter::Antialiasing);
  auto* charts = new QHBoxLayout();
  charts->addWidget(throughput_view_);
  charts->addWidget(memory_view_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(status_);
  layout->addLayout(charts, 1);

  redraw_ = new QTimer(this);
  redraw_->setSingleShot(true);
  redraw_->setInterval(150);
  connect(redraw_, &QTimer::timeout, this, &SweepTab::refresh_charts);
  connect(&jobs_, &SimulationJobs::job_started, this, [this](int row) { results_.set_started(row); });
  connect(&jobs_, &SimulationJobs::job_finished, this, [this](int row, const SimulationOutcome& outcome) {
    results_.set_outcome(row, outcome);
    progress_->setValue(results_.finished_rows());
    if (!redraw_->isActive()) redraw_->start();
  });
  connect(&jobs_, &SimulationJobs::all_finished, this, [this] {
    redraw_->stop();
    refresh_charts();
    cancel_button_->setEnabled(false);
    // A sweep dropped before it ran (a new scenario) finishes with nothing: what to do stays.
    status_->setText(results_.rows().empty() ? left_out_ + hint()
                                             : left_out_ + results_.finished_text() +
                                                   QStringLiteral(". Click a point to open it in Explore."));
  });
  status_->setText(hint());
  refresh_charts();
}

void SweepTab::set_scenario(std::shared_ptr<const planner::ResolvedScenario> resolved) {
  if (resolved_ && resolved && resolved_->loaded.written.SerializeAsString() == resolved->loaded.written.SerializeAsString()) return;
  resolved_ = std::move(resolved);
  // The batch to keep starts as the scenario's own.
  if (resolved_) batch_tokens_->setText(QString::number(qRound64(planner::global_batch_tokens(resolved_->scenario()))));
  left_out_.clear();
  jobs_.start({});  // a sweep of the previous scenario is stale
  results_.reset_rows({});
  refresh_charts();
  status_->setText(hint());
}

QString SweepTab::hint() const {
  const QString what = QStringLiteral("press %1 to simulate every strategy at each GPU count, then click a point to "
                                      "open it in Explore").arg(run_button_->text());
  if (!resolved_) return QStringLiteral("Open a scenario in Explore, then ") + what + QLatin1Char('.');
  return QStringLiteral("%1: %2.").arg(QString::fromStdString(resolved_->scenario().name()), what);
}

QString SweepTab::status_text() const { return status_->text(); }

void SweepTab::run_default() { run(sweep_gpu_counts()); }

void SweepTab::run(const std::vector<int64_t>& gpu_counts) {
  if (!resolved_) return;
  std::vector<planner::ResolvedScenario> batch;
  std::vector<SimulationRow> rows;
  double keep_tokens = 0;  // 0: the global batch grows with the GPUs
  if (keep_batch_->isChecked()) {
    try {
      keep_tokens = parse_token_count(batch_tokens_->text().trimmed().toStdString(), "the global batch to keep");
    } catch (const std::exception& e) {
      status_->setText(QString::fromUtf8(e.what()));
      return;
    }
  }
  QStringList left_out;  // GPU counts that cannot train the batch kept, or the scenario at all
  for (int64_t gpus : gpu_counts) {
    try {
      scenarios::LoadedScenario loaded = scenarios::with_total_gpus(resolved_->loaded, gpus);
      if (keep_tokens > 0) {
        const int64_t steps = planner::accumulation_for_global_batch(
            loaded.scenario, keep_tokens, "the global batch of " + format_integer(static_cast<int64_t>(keep_tokens)) + " tokens");
        loaded.scenario.mutable_training()->set_gradient_accumulation_steps(steps);
      }
      for (scenarios::Strategy s : scenarios::all_strategies()) {
        planner::ResolvedScenario at = *resolved_;  // the model and granularity do not depend on the GPU count
        at.loaded = loaded;
        at.loaded.scenario.mutable_training()->set_strategy(s);
        batch.push_back(std::move(at));
        rows.push_back({gpus, scenarios::strategy_name(s), 0, {}});
      }
    } catch (const std::exception& e) {
      left_out << QString::fromUtf8(e.what());
    }
  }
  left_out_ = left_out.isEmpty() ? QString()
                                 : QStringLiteral("Left out: %1. ").arg(left_out.join(QStringLiteral("; ")));
  results_.reset_rows(std::move(rows));
  progress_->setRange(0, static_cast<int>(batch.size()));
  progress_->setValue(0);
  cancel_button_->setEnabled(true);
  status_->setText(left_out_ + QStringLiteral("simulating %1 configurations…").arg(batch.size()));
  jobs_.start(std::move(batch));
  refresh_charts();
}

void SweepTab::refresh_charts() {
  const auto series = sweep_series(results_.rows());
  const int64_t capacity = sweep_capacity_bytes(results_.rows());
  for (auto [view, metric] : {std::pair{throughput_view_, SweepMetric::kThroughput}, std::pair{memory_view_, SweepMetric::kPeakMemory}}) {
    QChart* old = view->chart();
    QChart* chart = sweep_chart(series, metric, capacity);
    // A click on a strategy's line or on one of its OOM markers opens the swept point nearest it.
    for (QAbstractSeries* s : chart->series()) {
      auto* xy = qobject_cast<QXYSeries*>(s);
      const QString strategy = s->property(kStrategyProperty).toString();
      if (xy == nullptr || strategy.isEmpty()) continue;
      connect(xy, &QXYSeries::clicked, this, [this, strategy, series](const QPointF& at) {
        if (const SweepPoint* p = nearest_point(series, strategy.toStdString(), at.x())) {
          Q_EMIT open_configuration(p->gpus, strategy);
        }
      });
    }
    view->setChart(chart);
    delete old;
  }
}

QList<QWidget*> SweepTab::exportable_views() const { return {throughput_view_, memory_view_}; }

}  // namespace ragged::gui
