#pragma once
// One rank's streams as a Gantt chart, the memory curve below it on the
// same time axis. The wheel zooms around the cursor, dragging pans, a
// double click shows the whole step; hovering a bar names its op (or how
// many ops an aggregated bar holds, or the memory at that time). The memory
// axis has round ticks in the unit that fits it; a legend names the op
// kinds' colours. Two views can share their range (Compare), and a second
// memory curve of the same quantity can be overlaid.

#include <QWidget>

#include <memory>
#include <utility>
#include <vector>

#include "gui/models/timeline_geometry.hpp"

class QPainter;

namespace ragged::gui {

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);

  // The trace must outlive the view's use of it (the view keeps a reference).
  void set_timeline(std::shared_ptr<const traces::Trace> trace, Timeline timeline);
  void set_overlay_memory(std::vector<MemoryPoint> memory, const QString& label);
  // What the memory curves plot (the overlay too); the axis names it.
  void set_memory_quantity(MemoryQuantity quantity);
  MemoryQuantity memory_quantity() const { return quantity_; }
  void set_title(const QString& title) { title_ = title; update(); }
  const QString& title() const { return title_; }
  void set_range(int64_t from_ns, int64_t to_ns);  // emits nothing
  void show_all();
  // The whole step spans at least this long (Compare: the longer of the two traces, one scale for both).
  void set_shared_span(int64_t ns) { shared_span_ns_ = ns; }
  int64_t shown_end_ns() const;  // where the whole step's view ends
  // Outlines the bars of one op (a Compare table's row) and zooms to its span in this step; false (and
  // nothing outlined) when the timeline has no event of it. clear_selection() drops the outline.
  bool select_op(uint64_t op_id);
  // Outlines every bar of one op kind; the range stays.
  void select_kind(traces::OpKind kind);
  void clear_selection();
  int64_t selected_op() const { return selected_op_; }
  // The bars outlined now (their events' indices into the trace).
  std::vector<int> selected_events() const;
  int64_t from_ns() const { return from_ns_; }
  int64_t to_ns() const { return to_ns_; }
  const Timeline& timeline() const { return timeline_; }
  size_t drawn_bars() const { return drawn_bars_; }
  QString describe_at(QPoint point) const;
  // The colour legend of the op kinds the lanes hold, kinds of one colour on one entry ("copy_in + copy_out").
  std::vector<std::pair<QString, QColor>> legend() const;
  // The memory axis's tick labels, bottom up, in the unit the curve's top reads best in ("0 MiB", "20 MiB", ...).
  QStringList memory_ticks() const;
  // The memory axis's top in bytes at least (Compare: both views on one scale); 0: this view's own peak.
  void set_memory_floor_top(int64_t bytes) { memory_floor_top_ = bytes; update(); }
  int64_t memory_top() const;  // the largest value the memory axis holds

  QSize sizeHint() const override { return {1000, 380}; }

 Q_SIGNALS:
  void range_changed(qint64 from_ns, qint64 to_ns);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  QRectF plot_rect() const;    // lanes and memory share its x
  QRectF memory_rect() const;
  double ns_per_pixel() const;
  double x_of(int64_t ns) const;
  int64_t ns_at(double x) const;
  void zoom_to(int64_t from_ns, int64_t to_ns);
  void draw_legend(QPainter& p) const;
  QString describe_memory_at(QPoint point) const;

  std::shared_ptr<const traces::Trace> trace_;
  Timeline timeline_;
  std::vector<MemoryPoint> overlay_;
  MemoryQuantity quantity_ = MemoryQuantity::kAllocator;
  int64_t memory_floor_top_ = 0;
  int64_t shared_span_ns_ = 0;
  int64_t selected_op_ = -1;  // -1: none
  traces::OpKind selected_kind_ = traces::OP_KIND_UNSPECIFIED;  // unspecified: none
  bool is_selected(const TimelineBar& bar) const;
  QString overlay_label_, title_;
  int64_t from_ns_ = 0, to_ns_ = 1;
  mutable size_t drawn_bars_ = 0;
  bool dragging_ = false;
  double drag_x_ = 0;
  int64_t drag_from_ = 0, drag_to_ = 0;
};

QColor op_kind_color(traces::OpKind kind);

}  // namespace ragged::gui
