#pragma once
// Compare: a predicted and a measured trace (files, or both produced here:
// `ragged simulate` and a local `mpirun ragged run --device cpu` of a tiny
// scenario as child processes, with progress and Cancel). Timelines
// aligned, memory curves of one quantity (state + parameter and gradient
// buffers) overlaid, step time / peak memory / exposed communication / MFU
// errors, and the ops joined by Program op id (traces::compare_traces) in
// two tables, per op and per op kind, worst first. Both timelines run on one
// time axis and one memory axis that fit the longer and the higher of the
// two; the measured one shows any measured step; a row of the op table
// outlines (and zooms to) that op in both, a row of the kind table its kind.

#include <QProcess>
#include <QTemporaryDir>
#include <QWidget>

#include <memory>

#include "gui/models/latest_task.hpp"
#include "gui/models/kind_error_model.hpp"
#include "gui/models/op_error_model.hpp"
#include "gui/timeline_view.hpp"

class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;

namespace ragged::gui {

class CompareTab : public QWidget {
  Q_OBJECT

 public:
  explicit CompareTab(QWidget* parent = nullptr);

  // Errors through error(), traces of different runs (traces::comparability)
  // among them unless "even of different runs" is ticked.
  void open_files(const QString& predicted, const QString& measured);
  // Runs `ragged simulate` then `ragged run --device cpu` on a shipped scenario.
  void run_both(const QString& scenario);
  void cancel_run();
  bool running() const { return process_.state() != QProcess::NotRunning; }
  KindErrorModel* kinds_model() { return &kinds_; }
  OpErrorModel* ops_model() { return &ops_; }
  const TimelineView* predicted_view() const { return predicted_view_; }
  const TimelineView* measured_view() const { return measured_view_; }
  LatestTask* task() { return &task_; }
  QString summary_text() const;
  QComboBox* step_box() const { return step_box_; }
  QTableView* ops_table() const { return ops_table_; }
  QTableView* kinds_table() const { return kinds_table_; }
  // The measured timeline of one of the measured trace's steps (with the overlay and the shared axes).
  void show_measured_step(int step);
  QList<QWidget*> exportable_views() const;

 Q_SIGNALS:
  void error(const QString& message);
  void compared();  // a comparison is shown
  void run_finished(bool ok);

 private:
  void start_stage();
  void stage_finished(int exit_code, QProcess::ExitStatus status);

  void select_op_row(int row);
  void show_measured_timeline(Timeline measured);
  void select_kind_row(int row);
  void show_comparison(const std::shared_ptr<const traces::Trace>& predicted,
                       const std::shared_ptr<const traces::Trace>& measured, const traces::TraceComparison& c,
                       Timeline predicted_timeline, Timeline measured_timeline, const QString& warning);

  KindErrorModel kinds_;
  OpErrorModel ops_;
  LatestTask task_;
  QProcess process_;
  std::unique_ptr<QTemporaryDir> run_dir_;
  QString run_scenario_;
  int stage_ = 0;  // 0: simulate, 1: run
  bool cancelled_ = false;
  QString predicted_path_, measured_path_;
  QCheckBox* anyway_ = nullptr;  // compare traces of different runs anyway (--force)
  QComboBox* scenario_box_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* summary_ = nullptr;
  QTableView* kinds_table_ = nullptr;
  QTableView* ops_table_ = nullptr;
  TimelineView* predicted_view_ = nullptr;
  TimelineView* measured_view_ = nullptr;
  QComboBox* step_box_ = nullptr;  // the measured step shown
  std::shared_ptr<const traces::Trace> predicted_, measured_;
  int measured_steps_ = 0;
  bool overlay_ = false;  // both traces count state + buffers: the curves overlay on it
};

// The `ragged` command beside this executable (or $RAGGED_CLI).
QString ragged_cli_path();

}  // namespace ragged::gui
