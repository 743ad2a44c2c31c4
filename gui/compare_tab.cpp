#include "gui/compare_tab.hpp"

#include <unistd.h>

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStandardPaths>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "common/errors.hpp"
#include "common/units.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "traces/trace_comparability.hpp"
#include "traces/kineto_import.hpp"
#include "traces/trace_compare.hpp"
#include "traces/trace_io.hpp"

namespace ragged::gui {
namespace {

QString percent(double ratio) { return QStringLiteral("%1%2%").arg(ratio >= 0 ? "+" : "").arg(100 * ratio, 0, 'f', 1); }
QString seconds(double s) { return QString::fromStdString(format_seconds(s)); }
QString bytes(int64_t b) { return QString::fromStdString(format_bytes(static_cast<double>(b))); }
double error_of(double predicted, double measured) { return measured != 0 ? (predicted - measured) / measured : 0; }

// What the measured trace's reader or executor says of it (a profiler trace: what it read and matched),
// as `ragged compare` prints it: the first note on the summary, every note on hover.
QString executor_note_line(const std::vector<std::string>& notes) {
  if (notes.empty()) return {};
  const QString more = notes.size() > 1 ? QStringLiteral(" (%1 more notes on hover)").arg(notes.size() - 1) : QString();
  return QStringLiteral("<br>measured: ") + QString::fromStdString(notes.front()).toHtmlEscaped() + more;
}

QTableView* new_error_table(QAbstractItemModel* model, QWidget* parent) {
  auto* table = new QTableView(parent);
  table->setModel(model);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  table->verticalHeader()->setDefaultSectionSize(22);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  return table;
}

// `widget` under a one-line caption.
QWidget* titled(const QString& title, QWidget* widget, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(new QLabel(title, box));
  layout->addWidget(widget, 1);
  return box;
}

}  // namespace

QString ragged_cli_path() {
  const QByteArray env = qgetenv("RAGGED_CLI");
  if (!env.isEmpty()) return QString::fromLocal8Bit(env);
  return QCoreApplication::applicationDirPath() + QStringLiteral("/ragged");
}

CompareTab::CompareTab(QWidget* parent) : QWidget(parent) {
  auto* controls = new QHBoxLayout();
  auto* open_predicted = new QPushButton(QStringLiteral("Open predicted + measured…"), this);
  connect(open_predicted, &QPushButton::clicked, this, [this] {
    const QString filter = QStringLiteral("Traces (*.pb *.trace *.json *.textproto);;All files (*)");
    const QString p = QFileDialog::getOpenFileName(this, QStringLiteral("Predicted trace (ragged simulate --trace)"), QString(), filter);
    if (p.isEmpty()) return;
    const QString m = QFileDialog::getOpenFileName(this, QStringLiteral("Measured trace (ragged run --trace)"), QString(), filter);
    if (!m.isEmpty()) open_files(p, m);
  });
  controls->addWidget(open_predicted);
  anyway_ = new QCheckBox(QStringLiteral("even of different runs"), this);
  anyway_->setToolTip(QStringLiteral("Compare a predicted and a measured trace of different models, GPU counts, "
                                     "strategies or batches anyway (ragged compare --force), with a warning"));
  controls->addWidget(anyway_);
  controls->addSpacing(20);
  scenario_box_ = new QComboBox(this);
  scenario_box_->addItems({QStringLiteral("tiny-llama-4xcpu"), QStringLiteral("tiny-moe-4xcpu")});
  run_button_ = new QPushButton(QStringLiteral("Simulate and run on this CPU"), this);
  cancel_button_ = new QPushButton(QStringLiteral("Cancel"), this);
  cancel_button_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 2);
  progress_->setValue(0);
  connect(run_button_, &QPushButton::clicked, this, [this] { run_both(scenario_box_->currentText()); });
  connect(cancel_button_, &QPushButton::clicked, this, &CompareTab::cancel_run);
  controls->addWidget(scenario_box_);
  controls->addWidget(run_button_);
  controls->addWidget(cancel_button_);
  controls->addWidget(progress_, 1);
  step_box_ = new QComboBox(this);
  step_box_->setToolTip(QStringLiteral("The measured step the lower timeline shows"));
  connect(step_box_, &QComboBox::activated, this, [this] { show_measured_step(step_box_->currentData().toInt()); });
  controls->addWidget(new QLabel(QStringLiteral("measured step"), this));
  controls->addWidget(step_box_);

  summary_ = new QLabel(QStringLiteral("Open a predicted and a measured trace of the same scenario, or simulate and "
                                       "run a tiny scenario here."),
                        this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  kinds_table_ = new_error_table(&kinds_, this);
  ops_table_ = new_error_table(&ops_, this);
  predicted_view_ = new TimelineView(this);
  measured_view_ = new TimelineView(this);
  // One time axis: the views start at their own step's beginning, so a range moves by offsets.
  auto follow = [](TimelineView* from, TimelineView* to) {
    return [from, to](qint64 begin, qint64 end) {
      const int64_t shift = to->timeline().begin_ns - from->timeline().begin_ns;
      to->set_range(begin + shift, end + shift);
    };
  };
  connect(predicted_view_, &TimelineView::range_changed, this, follow(predicted_view_, measured_view_));
  connect(measured_view_, &TimelineView::range_changed, this, follow(measured_view_, predicted_view_));
  connect(ops_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { select_op_row(current.row()); });
  connect(kinds_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { select_kind_row(current.row()); });

  auto* tables = new QSplitter(Qt::Horizontal, this);
  tables->addWidget(titled(QStringLiteral("per op kind, worst first"), kinds_table_, this));
  tables->addWidget(titled(QStringLiteral("per op (joined by Program op id), worst first"), ops_table_, this));
  tables->setStretchFactor(0, 2);
  tables->setStretchFactor(1, 3);
  auto* top = new QWidget(this);
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  top_layout->addWidget(summary_);
  top_layout->addWidget(tables, 1);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->addWidget(top);
  splitter->addWidget(predicted_view_);
  splitter->addWidget(measured_view_);
  splitter->setSizes({330, 300, 300});
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(splitter, 1);

  connect(&process_, &QProcess::finished, this, &CompareTab::stage_finished);
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    cancel_button_->setEnabled(false);
    run_button_->setEnabled(true);
    Q_EMIT error(QStringLiteral("cannot start %1: %2").arg(process_.program(), process_.errorString()));
    Q_EMIT run_finished(false);
  });
}

void CompareTab::open_files(const QString& predicted, const QString& measured) {
  predicted_path_ = predicted;
  measured_path_ = measured;
  summary_->setText(QStringLiteral("reading…"));
  const std::string p_file = predicted.toStdString(), m_file = measured.toStdString();
  const bool anyway = anyway_->isChecked();
  task_.run([this, p_file, m_file, anyway]() -> std::function<void()> {
    try {
      auto p = std::make_shared<const traces::Trace>(traces::read_trace(p_file));
      auto m = std::make_shared<const traces::Trace>(traces::read_measured_trace(m_file, *p));
      // Traces of different runs make errors of their differences: refused, as `ragged compare`.
      const traces::Comparability comparable = traces::comparability(*p, *m);
      QString warning;
      if (!comparable.comparable()) {
        const std::string what = "the traces are of different runs: " + comparable.describe();
        if (!anyway) throw InputError(what + "; open a prediction and a run of the same scenario, or tick 'even of different runs'");
        warning = QString::fromStdString(what);
      }
      const traces::TraceComparison c = traces::compare_traces(*p, *m);
      Timeline tp = build_timeline(*p), tm = build_timeline(*m, -1, first_step(*m));
      return [this, p, m, c, warning, tp = std::move(tp), tm = std::move(tm)]() mutable {
        show_comparison(p, m, c, std::move(tp), std::move(tm), warning);
      };
    } catch (const std::exception& e) {
      const QString message = QString::fromUtf8(e.what());
      return [this, message] {
        // Nothing of an earlier comparison stays beside this error.
        kinds_.clear();
        ops_.clear();
        predicted_view_->set_timeline(nullptr, {});
        measured_view_->set_timeline(nullptr, {});
        predicted_.reset();
        measured_.reset();
        step_box_->clear();
        summary_->setText(message);
        summary_->setToolTip({});
        Q_EMIT error(message);
      };
    }
  });
}

void CompareTab::show_comparison(const std::shared_ptr<const traces::Trace>& p,
                                 const std::shared_ptr<const traces::Trace>& m, const traces::TraceComparison& c,
                                 Timeline tp, Timeline tm, const QString& warning) {
  kinds_.set_comparison(c);
  ops_.set_comparison(c);
  kinds_table_->resizeColumnsToContents();
  ops_table_->resizeColumnsToContents();
  // Memory overlays like with like: the state and buffers both executors
  // count. Traces written before that count have none to overlay.
  const bool overlay = tp.peak_state_and_buffers > 0 && tm.peak_state_and_buffers > 0;
  const QString warning_line =
      warning.isEmpty() ? QString()
                        : QStringLiteral("<span style=\"color: #b00020\">warning: %1; compared anyway</span><br>")
                              .arg(warning.toHtmlEscaped());
  summary_->setText(
      warning_line +
      QStringLiteral("<b>%1</b>, %2, predicted against the mean of %3 measured steps<br>"
                     "step time: %4 predicted, %5 measured, <b>%6</b><br>"
                     "peak memory (state + parameter and gradient buffers): %7 against %8, <b>%9</b><br>"
                     "exposed communication: %10 against %11, %12<br>"
                     "MFU: %13% against %14%, %15<br>"
                     "ops joined by Program op id: %16 (%17 in one trace only)%18")
          .arg(QString::fromStdString(p->metadata().scenario_name()), QString::fromStdString(p->metadata().strategy()))
          .arg(c.measured_steps)
          .arg(seconds(c.predicted_step_s), seconds(c.measured_step_s), percent(c.step_error()), bytes(c.predicted_peak_bytes),
               bytes(c.measured_peak_bytes), percent(c.memory_error()), seconds(c.predicted_exposed_s),
               seconds(c.measured_exposed_s), percent(error_of(c.predicted_exposed_s, c.measured_exposed_s)))
          .arg(100 * c.predicted_mfu, 0, 'f', 1)
          .arg(100 * c.measured_mfu, 0, 'f', 1)
          .arg(percent(error_of(c.predicted_mfu, c.measured_mfu)))
          .arg(c.joined_ops)
          .arg(c.unmatched_ops)
          .arg(overlay ? QStringLiteral("<br>memory curves: state + buffers on each trace's own timeline; the "
                                        "prediction's streams run ahead of issue order there, to a peak of %1")
                             .arg(bytes(c.predicted_concurrent_bytes))
                       : QStringLiteral("<br>memory curves not overlaid: a trace without the state and buffers count "
                                        "(written by an older ragged)")) +
      executor_note_line(c.executor_notes));
  QStringList notes;
  for (const std::string& note : c.executor_notes) notes << QString::fromStdString(note);
  summary_->setToolTip(notes.join(QLatin1Char('\n')));
  predicted_ = p;
  measured_ = m;
  measured_steps_ = c.measured_steps;
  overlay_ = overlay;
  predicted_view_->set_timeline(p, std::move(tp));
  predicted_view_->set_title(QStringLiteral("predicted"));
  step_box_->clear();
  for (int step : trace_steps(*m)) step_box_->addItem(QString::number(step), step);
  step_box_->setCurrentIndex(step_box_->findData(tm.step));
  show_measured_timeline(std::move(tm));
  Q_EMIT compared();
}

void CompareTab::show_measured_step(int step) {
  if (!measured_) return;
  step_box_->setCurrentIndex(step_box_->findData(step));
  show_measured_timeline(build_timeline(*measured_, -1, step));
}

void CompareTab::show_measured_timeline(Timeline tm) {
  const MemoryQuantity quantity = overlay_ ? MemoryQuantity::kStateAndBuffers : MemoryQuantity::kAllocator;
  // The measured curve over the predicted one, shifted to start together.
  std::vector<MemoryPoint> measured_memory = tm.memory;
  for (auto& point : measured_memory) point.time_ns += predicted_view_->timeline().begin_ns - tm.begin_ns;
  predicted_view_->set_memory_quantity(quantity);
  if (overlay_) predicted_view_->set_overlay_memory(std::move(measured_memory), QStringLiteral("measured step %1").arg(tm.step));
  const int step = tm.step;
  measured_view_->set_timeline(measured_, std::move(tm));
  measured_view_->set_memory_quantity(quantity);
  measured_view_->set_title(QStringLiteral("measured, step %1 (of %2)").arg(step).arg(measured_steps_));
  // One time axis for both, the longer step's; one memory axis, the higher curve's.
  const int64_t span = std::max(predicted_view_->timeline().end_ns - predicted_view_->timeline().begin_ns,
                                measured_view_->timeline().end_ns - measured_view_->timeline().begin_ns);
  for (TimelineView* view : {predicted_view_, measured_view_}) view->set_memory_floor_top(0);
  const int64_t top = std::max(predicted_view_->memory_top(), measured_view_->memory_top());
  for (TimelineView* view : {predicted_view_, measured_view_}) {
    view->set_shared_span(span);
    view->set_memory_floor_top(top);
    view->show_all();
  }
  if (const int row = ops_table_->currentIndex().row(); row >= 0) select_op_row(row);
}

void CompareTab::select_op_row(int row) {
  if (row < 0 || row >= static_cast<int>(ops_.rows().size())) return;
  const uint64_t op = ops_.rows()[static_cast<size_t>(row)].op_id;
  const bool in_predicted = predicted_view_->select_op(op);
  const bool in_measured = measured_view_->select_op(op);
  // Where only one trace has the op, the other keeps the same stretch of the step.
  if (in_predicted && !in_measured) {
    const int64_t shift = measured_view_->timeline().begin_ns - predicted_view_->timeline().begin_ns;
    measured_view_->set_range(predicted_view_->from_ns() + shift, predicted_view_->to_ns() + shift);
  }
  if (in_measured && !in_predicted) {
    const int64_t shift = predicted_view_->timeline().begin_ns - measured_view_->timeline().begin_ns;
    predicted_view_->set_range(measured_view_->from_ns() + shift, measured_view_->to_ns() + shift);
  }
}

void CompareTab::select_kind_row(int row) {
  if (row < 0 || row >= static_cast<int>(kinds_.rows().size())) return;
  const traces::OpKind kind = kinds_.rows()[static_cast<size_t>(row)].kind;
  predicted_view_->select_kind(kind);
  measured_view_->select_kind(kind);
}

void CompareTab::run_both(const QString& scenario) {
  if (running()) return;
  run_dir_ = std::make_unique<QTemporaryDir>();
  run_scenario_ = scenario;
  stage_ = 0;
  cancelled_ = false;
  progress_->setValue(0);
  run_button_->setEnabled(false);
  cancel_button_->setEnabled(true);
  start_stage();
}

void CompareTab::start_stage() {
  const QString cli = ragged_cli_path();
  const QString predicted = run_dir_->filePath(QStringLiteral("predicted.pb"));
  const QString measured = run_dir_->filePath(QStringLiteral("measured.pb"));
  if (stage_ == 0) {
    summary_->setText(QStringLiteral("ragged simulate %1 …").arg(run_scenario_));
    process_.start(cli, {QStringLiteral("simulate"), run_scenario_, QStringLiteral("--trace"), predicted});
    return;
  }
  int ranks = 1;
  try {
    ranks = static_cast<int>(scenarios::total_gpus(scenarios::load_scenario(run_scenario_.toStdString()).scenario));
  } catch (const std::exception&) {
  }
  QStringList args;
  if (::geteuid() == 0) args << QStringLiteral("--allow-run-as-root");
  args << QStringLiteral("--oversubscribe") << QStringLiteral("-np") << QString::number(ranks) << cli
       << QStringLiteral("run") << run_scenario_ << QStringLiteral("--device") << QStringLiteral("cpu")
       << QStringLiteral("--trace") << measured;
  summary_->setText(QStringLiteral("mpirun -np %1 ragged run %2 --device cpu …").arg(ranks).arg(run_scenario_));
  const QString mpirun = QStandardPaths::findExecutable(QStringLiteral("mpirun"));
  process_.start(mpirun.isEmpty() ? QStringLiteral("mpirun") : mpirun, args);
}

void CompareTab::stage_finished(int exit_code, QProcess::ExitStatus status) {
  if (status != QProcess::NormalExit || exit_code != 0) {
    const QString output = QString::fromLocal8Bit(process_.readAllStandardError()).trimmed();
    cancel_button_->setEnabled(false);
    run_button_->setEnabled(true);
    const QString message = cancelled_ ? QStringLiteral("cancelled")
                            : output.isEmpty() ? QStringLiteral("%1 failed (exit code %2)").arg(process_.program()).arg(exit_code)
                                               : output.section(QLatin1Char('\n'), -1);
    summary_->setText(message);
    if (!cancelled_) Q_EMIT error(message);
    Q_EMIT run_finished(false);
    return;
  }
  progress_->setValue(++stage_);
  if (stage_ == 1) {
    start_stage();
    return;
  }
  cancel_button_->setEnabled(false);
  run_button_->setEnabled(true);
  open_files(run_dir_->filePath(QStringLiteral("predicted.pb")), run_dir_->filePath(QStringLiteral("measured.pb")));
  Q_EMIT run_finished(true);
}

void CompareTab::cancel_run() {
  if (!running()) return;
  cancelled_ = true;
  process_.terminate();  // mpirun forwards it to its ranks
  QTimer::singleShot(2000, this, [this] {
    if (running()) process_.kill();
  });
}

QString CompareTab::summary_text() const { return summary_->text(); }

QList<QWidget*> CompareTab::exportable_views() const {
  return {predicted_view_, measured_view_, kinds_table_, ops_table_};
}

}  // namespace ragged::gui
