#pragma once
// Timeline: one rank of a predicted or measured trace (a file, or the
// simulation selected in Explore) as a Gantt chart over its streams with
// the memory curve below; a multi-rank trace opens with its ranks
// aggregated (each op one bar over its ranks) and a chooser drills into one.
// Traces are read and laid out in the background; the time it took shows.

#include <QWidget>

#include <memory>

#include "gui/models/latest_task.hpp"
#include "gui/timeline_view.hpp"

class QComboBox;
class QLabel;

namespace ragged::gui {

class TimelineTab : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineTab(QWidget* parent = nullptr);

  void open_file(const QString& path);  // errors through error()
  void show_trace(std::shared_ptr<const traces::Trace> trace, const QString& label);
  TimelineView* view() { return view_; }
  LatestTask* task() { return &task_; }
  double last_open_ms() const { return last_open_ms_; }
  bool has_trace() const { return trace_ != nullptr; }
  const QString& label() const { return label_; }
  // Writes the trace shown (every rank of it) as Chrome trace-event JSON for ui.perfetto.dev
  // (traces::write_chrome_trace, written atomically); the problem, or empty when written.
  QString export_perfetto(const QString& path) const;

 Q_SIGNALS:
  void error(const QString& message);
  void opened(const QString& summary);  // a file's trace is drawn: what it holds and how long it took

 private:
  void show_rank(int rank);
  void fill_rank_box();  // "every rank" first when there are several, then each

  LatestTask task_;
  std::shared_ptr<const traces::Trace> trace_;
  QString label_;
  double last_open_ms_ = 0;
  QComboBox* rank_box_ = nullptr;
  QLabel* status_ = nullptr;
  TimelineView* view_ = nullptr;
};

}  // namespace ragged::gui
