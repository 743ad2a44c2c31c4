#pragma once
// Compare: a predicted and a measured trace (files, or both produced here:
// `ragged simulate` and a local `mpirun ragged run --device cpu` of a tiny
// scenario as child processes, with progress and Cancel). Timelines
// aligned, memory curves overlaid, step time / peak memory / exposed
// communication / MFU errors, and the per-op-kind table joined by Program
// op id (traces::compare_traces), worst first.

#include <QProcess>
#include <QTemporaryDir>
#include <QWidget>

#include <memory>

#include "gui/models/latest_task.hpp"
#include "gui/models/op_error_model.hpp"
#include "gui/timeline_view.hpp"

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

  void open_files(const QString& predicted, const QString& measured);  // errors through error()
  // Runs `ragged simulate` then `ragged run --device cpu` on a shipped scenario.
  void run_both(const QString& scenario);
  void cancel_run();
  bool running() const { return process_.state() != QProcess::NotRunning; }
  OpErrorModel* errors_model() { return &errors_; }
  LatestTask* task() { return &task_; }
  QString summary_text() const;
  QList<QWidget*> exportable_views() const;

 Q_SIGNALS:
  void error(const QString& message);
  void compared();  // a comparison is shown
  void run_finished(bool ok);

 private:
  void start_stage();
  void stage_finished(int exit_code, QProcess::ExitStatus status);

  OpErrorModel errors_;
  LatestTask task_;
  QProcess process_;
  std::unique_ptr<QTemporaryDir> run_dir_;
  QString run_scenario_;
  int stage_ = 0;  // 0: simulate, 1: run
  bool cancelled_ = false;
  QString predicted_path_, measured_path_;
  QComboBox* scenario_box_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* summary_ = nullptr;
  QTableView* table_ = nullptr;
  TimelineView* predicted_view_ = nullptr;
  TimelineView* measured_view_ = nullptr;
};

// The `ragged` command beside this executable (or $RAGGED_CLI).
QString ragged_cli_path();

}  // namespace ragged::gui
