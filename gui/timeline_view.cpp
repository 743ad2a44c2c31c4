#include "gui/timeline_view.hpp"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>

#include "gui/models/axis_scale.hpp"
#include "gui/tooltip.hpp"
#include "common/units.hpp"
#include "traces/trace_names.hpp"

namespace ragged::gui {
namespace {

constexpr double kLeft = 110, kRight = 12, kTop = 24, kLaneHeight = 26, kAxis = 22, kLegend = 20;

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

}  // namespace

QColor op_kind_color(traces::OpKind kind) {
  switch (kind) {
    case traces::COMPUTE_FWD: return QColor(0x4c72b0);
    case traces::COMPUTE_BWD: return QColor(0x2a4d8f);
    case traces::RECOMPUTE: return QColor(0x8172b2);
    case traces::ALL_GATHER: return QColor(0x55a868);
    case traces::REDUCE_SCATTER: return QColor(0xc44e52);
    case traces::ALL_REDUCE: return QColor(0xdd8452);
    case traces::ALL_TO_ALL: return QColor(0x937860);
    case traces::OPTIMIZER: return QColor(0xda8bc3);
    case traces::COPY_IN:
    case traces::COPY_OUT:
    case traces::CAST:
    case traces::SCALE: return QColor(0xccb974);
    case traces::GRAD_ACCUMULATE: return QColor(0x64b5cd);
    case traces::TRAIN_METRICS: return QColor(0x7fa6d9);
    default: return QColor(0x8c8c8c);
  }
}

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(400, 170);
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::Base);
}

void TimelineView::set_timeline(std::shared_ptr<const traces::Trace> trace, Timeline timeline) {
  trace_ = std::move(trace);
  timeline_ = std::move(timeline);
  overlay_.clear();
  selected_op_ = -1;
  selected_kind_ = traces::OP_KIND_UNSPECIFIED;
  show_all();
}

void TimelineView::set_overlay_memory(std::vector<MemoryPoint> memory, const QString& label) {
  overlay_ = std::move(memory);
  overlay_label_ = label;
  update();
}

void TimelineView::set_memory_quantity(MemoryQuantity quantity) {
  quantity_ = quantity;
  update();
}

int64_t TimelineView::shown_end_ns() const {
  return std::max({timeline_.end_ns, timeline_.begin_ns + shared_span_ns_, timeline_.begin_ns + 1});
}

void TimelineView::show_all() {
  from_ns_ = timeline_.begin_ns;
  to_ns_ = shown_end_ns();
  update();
}

bool TimelineView::is_selected(const TimelineBar& bar) const {
  if (trace_ == nullptr || bar.event < 0) return false;
  if (selected_op_ >= 0) return trace_->events(bar.event).op_id() == static_cast<uint64_t>(selected_op_);
  return selected_kind_ != traces::OP_KIND_UNSPECIFIED && bar.kind == selected_kind_;
}

std::vector<int> TimelineView::selected_events() const {
  std::vector<int> out;
  for (const TimelineLane& lane : timeline_.lanes) {
    for (const TimelineBar& bar : lane.bars) {
      if (is_selected(bar)) out.push_back(bar.event);
    }
  }
  return out;
}

bool TimelineView::select_op(uint64_t op_id) {
  clear_selection();
  int64_t from = INT64_MAX, to = INT64_MIN;
  for (const TimelineLane& lane : timeline_.lanes) {
    for (const TimelineBar& bar : lane.bars) {
      if (trace_ == nullptr || bar.event < 0 || trace_->events(bar.event).op_id() != op_id) continue;
      from = std::min(from, bar.start_ns);
      to = std::max(to, bar.end_ns);
    }
  }
  if (from > to) return false;
  selected_op_ = static_cast<int64_t>(op_id);
  // The op in the middle third of the view, at least 1 us wide.
  const int64_t width = std::max<int64_t>(1000, to - from);
  set_range(std::max(timeline_.begin_ns, from - width), std::min(shown_end_ns(), to + width));
  return true;
}

void TimelineView::select_kind(traces::OpKind kind) {
  clear_selection();
  selected_kind_ = kind;
  update();
}

void TimelineView::clear_selection() {
  selected_op_ = -1;
  selected_kind_ = traces::OP_KIND_UNSPECIFIED;
  update();
}

void TimelineView::set_range(int64_t from_ns, int64_t to_ns) {
  from_ns_ = from_ns;
  to_ns_ = std::max(to_ns, from_ns + 1);
  update();
}

void TimelineView::zoom_to(int64_t from_ns, int64_t to_ns) {
  set_range(from_ns, to_ns);
  Q_EMIT range_changed(from_ns_, to_ns_);
}

QRectF TimelineView::plot_rect() const {
  const double lanes = std::max<double>(1, static_cast<double>(timeline_.lanes.size())) * kLaneHeight;
  return {kLeft, kTop, std::max(10.0, width() - kLeft - kRight), lanes};
}

QRectF TimelineView::memory_rect() const {
  const QRectF plot = plot_rect();
  const double h = std::max(40.0, height() - plot.bottom() - kAxis - 8 - kLegend);
  return {plot.left(), plot.bottom() + kAxis, plot.width(), h};
}

double TimelineView::ns_per_pixel() const { return static_cast<double>(to_ns_ - from_ns_) / plot_rect().width(); }
double TimelineView::x_of(int64_t ns) const { return plot_rect().left() + static_cast<double>(ns - from_ns_) / ns_per_pixel(); }
int64_t TimelineView::ns_at(double x) const {
  return from_ns_ + static_cast<int64_t>((x - plot_rect().left()) * ns_per_pixel());
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  p.setPen(palette().color(QPalette::Text));
  if (timeline_.lanes.empty()) {
    p.drawText(rect(), Qt::AlignCenter, QStringLiteral("open a trace (File > Open trace) or run a simulation in Explore"));
    return;
  }
  p.drawText(QRectF(4, 2, width() - 8, kTop - 4), Qt::AlignLeft | Qt::AlignVCenter,
             QStringLiteral("%1   %2   %3 to %4")
                 .arg(title_)
                 .arg(timeline_.rank == kEveryRank ? QStringLiteral("every rank (%1), memory of rank %2")
                                                         .arg(timeline_.ranks.size())
                                                         .arg(timeline_.memory_rank)
                                                   : QStringLiteral("rank %1").arg(timeline_.rank))
                 .arg(QString::fromStdString(format_seconds(static_cast<double>(from_ns_ - timeline_.begin_ns) * 1e-9)),
                      QString::fromStdString(format_seconds(static_cast<double>(to_ns_ - timeline_.begin_ns) * 1e-9))));
  const QRectF plot = plot_rect();
  drawn_bars_ = 0;
  p.setClipRect(QRectF(0, plot.top(), width(), plot.height()));
  for (size_t l = 0; l < timeline_.lanes.size(); ++l) {
    const TimelineLane& lane = timeline_.lanes[l];
    const double y = plot.top() + static_cast<double>(l) * kLaneHeight;
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(4, y, kLeft - 8, kLaneHeight), Qt::AlignRight | Qt::AlignVCenter, QString::fromStdString(lane.name));
    p.setClipRect(QRectF(plot.left(), plot.top(), plot.width(), plot.height()));
    p.setPen(Qt::NoPen);
    for (const TimelineBar& bar : visible_bars(lane, from_ns_, to_ns_, ns_per_pixel())) {
      const double x0 = std::max(plot.left(), x_of(bar.start_ns)), x1 = std::min(plot.right(), x_of(bar.end_ns));
      QColor c = op_kind_color(bar.kind);
      if (bar.ops > 1) c = c.lighter(115);
      const QRectF r(x0, y + 3, std::max(1.0, x1 - x0), kLaneHeight - 6);
      p.fillRect(r, c);
      if (is_selected(bar)) {
        p.setPen(QPen(palette().color(QPalette::Highlight), 2.5));
        p.drawRect(r.adjusted(-1.5, -2, 1.5, 2));
        p.setPen(Qt::NoPen);
      }
      ++drawn_bars_;
    }
    p.setClipRect(QRectF(0, plot.top(), width(), plot.height()));
  }
  p.setClipping(false);
  // Time axis.
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()));
  p.setPen(palette().color(QPalette::Text));
  for (int i = 0; i <= 5; ++i) {
    const double x = plot.left() + plot.width() * i / 5;
    const double seconds = static_cast<double>(ns_at(x) - timeline_.begin_ns) * 1e-9;
    p.drawText(QRectF(x - 50, plot.bottom() + 2, 100, kAxis - 4), Qt::AlignCenter, QString::fromStdString(format_seconds(seconds)));
  }
  // Memory below, on the same axis.
  const QRectF mem = memory_rect();
  p.setPen(palette().color(QPalette::Mid));
  p.drawRect(mem);
  draw_legend(p);
  const int64_t peak = memory_top();
  if (peak <= 0) return;
  // Round ticks in the unit the peak reads best in; the curve's scale is the axis's top.
  const ByteUnit unit = byte_unit_for(static_cast<double>(peak));
  const NiceAxis axis = nice_axis(static_cast<double>(peak) / unit.bytes, memory_rect().height() < 90 ? 2 : 4);
  const double top = axis.top * unit.bytes;
  p.setPen(QPen(palette().color(QPalette::Midlight), 0, Qt::DotLine));
  for (int i = 1; i < axis.intervals; ++i) {
    const double y = mem.bottom() - mem.height() * i / axis.intervals;
    p.drawLine(QPointF(mem.left(), y), QPointF(mem.right(), y));
  }
  p.setPen(palette().color(QPalette::Text));
  const QStringList ticks = memory_ticks();
  for (int i = 0; i < ticks.size(); ++i) {
    const double y = mem.bottom() - mem.height() * i / axis.intervals;
    p.drawText(QRectF(4, y - 8, kLeft - 10, 16), Qt::AlignRight | Qt::AlignVCenter, ticks[i]);
  }
  auto curve = [&](const std::vector<MemoryPoint>& points, auto value) {
    QPainterPath path;
    bool first = true;
    double last_y = mem.bottom();
    for (const MemoryPoint& m : points) {
      const double x = std::clamp(x_of(m.time_ns), mem.left(), mem.right());
      const double y = mem.bottom() - mem.height() * static_cast<double>(value(m)) / top;
      if (first) path.moveTo(x, y);
      else {
        path.lineTo(x, last_y);  // a step: the level holds until the next sample
        path.lineTo(x, y);
      }
      first = false;
      last_y = y;
    }
    if (!first) path.lineTo(mem.right(), last_y);
    return path;
  };
  auto plotted = [this](const MemoryPoint& m) { return memory_value(m, quantity_); };
  const auto memory = visible_memory(timeline_.memory, from_ns_, to_ns_, ns_per_pixel(), quantity_);
  p.setClipRect(mem);
  p.setPen(QPen(QColor(0x4c72b0), 1.5));
  p.drawPath(curve(memory, plotted));
  if (quantity_ == MemoryQuantity::kAllocator) {
    p.setPen(QPen(QColor(0x4c72b0), 1, Qt::DotLine));
    p.drawPath(curve(memory, [](const MemoryPoint& m) { return m.allocated; }));
  }
  if (!overlay_.empty()) {
    p.setPen(QPen(QColor(0xc44e52), 1.5));
    p.drawPath(curve(visible_memory(overlay_, from_ns_, to_ns_, ns_per_pixel(), quantity_), plotted));
  }
  p.setClipping(false);
  p.setPen(palette().color(QPalette::Text));
  int64_t own_peak = timeline_.peak(quantity_);
  p.drawText(mem.adjusted(6, 2, -6, -2), Qt::AlignLeft | Qt::AlignTop,
             QStringLiteral("%1, peak %2%3")
                 .arg(QString::fromStdString(memory_axis_label(quantity_)),
                      QString::fromStdString(format_bytes(static_cast<double>(own_peak))),
                      overlay_.empty() ? QString() : QStringLiteral("; red: ") + overlay_label_));
}

int64_t TimelineView::memory_top() const {
  int64_t top = std::max(memory_floor_top_, timeline_.peak(quantity_));
  for (const auto& m : overlay_) top = std::max(top, memory_value(m, quantity_));
  return top;
}

QStringList TimelineView::memory_ticks() const {
  const int64_t peak = memory_top();
  if (peak <= 0) return {};
  const ByteUnit unit = byte_unit_for(static_cast<double>(peak));
  const NiceAxis axis = nice_axis(static_cast<double>(peak) / unit.bytes, memory_rect().height() < 90 ? 2 : 4);
  QStringList ticks;
  for (int i = 0; i <= axis.intervals; ++i) {
    ticks << QStringLiteral("%1 %2").arg(i * axis.step, 0, 'f', axis.decimals).arg(QString::fromStdString(unit.name));
  }
  return ticks;
}

std::vector<std::pair<QString, QColor>> TimelineView::legend() const {
  std::vector<traces::OpKind> kinds;
  for (const TimelineLane& lane : timeline_.lanes) {
    for (const TimelineBar& bar : lane.bars) {
      if (std::find(kinds.begin(), kinds.end(), bar.kind) == kinds.end()) kinds.push_back(bar.kind);
    }
  }
  std::sort(kinds.begin(), kinds.end());
  std::vector<std::pair<QString, QColor>> entries;
  for (traces::OpKind kind : kinds) {
    const QColor color = op_kind_color(kind);
    const QString name = qs(traces::op_kind_name(kind));
    auto same = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.second == color; });
    if (same != entries.end()) same->first += QStringLiteral(" + ") + name;
    else entries.emplace_back(name, color);
  }
  return entries;
}

void TimelineView::draw_legend(QPainter& p) const {
  double x = kLeft;
  const double y = height() - kLegend + 3;
  const QFontMetricsF metrics(font());
  for (const auto& [name, color] : legend()) {
    const double w = metrics.horizontalAdvance(name);
    if (x + 16 + w > width() - kRight) break;  // what does not fit is left out, not clipped
    p.fillRect(QRectF(x, y + 2, 10, 10), color);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(x + 14, y - 2, w + 2, kLegend - 2), Qt::AlignLeft | Qt::AlignVCenter, name);
    x += 14 + w + 14;
  }
}

QString TimelineView::describe_memory_at(QPoint point) const {
  const int64_t t = ns_at(point.x());
  auto at = [t](const std::vector<MemoryPoint>& points) -> const MemoryPoint* {
    auto it = std::upper_bound(points.begin(), points.end(), t,
                               [](int64_t time, const MemoryPoint& m) { return time < m.time_ns; });
    return it == points.begin() ? nullptr : &*std::prev(it);
  };
  const MemoryPoint* m = at(timeline_.memory);
  if (m == nullptr) return {};
  auto b = [](int64_t bytes) { return QString::fromStdString(format_bytes(static_cast<double>(bytes))); };
  QString text = QStringLiteral("at %1: reserved %2, allocated %3")
                     .arg(QString::fromStdString(format_seconds(static_cast<double>(t - timeline_.begin_ns) * 1e-9)),
                          b(m->reserved), b(m->allocated));
  if (m->state_and_buffers > 0) text += QStringLiteral(", state + buffers %1").arg(b(m->state_and_buffers));
  if (const MemoryPoint* o = at(overlay_)) text += QStringLiteral("\n%1: %2").arg(overlay_label_, b(memory_value(*o, quantity_)));
  return text;
}

QString TimelineView::describe_at(QPoint point) const {
  const QRectF plot = plot_rect();
  if (trace_ != nullptr && memory_rect().contains(point)) return describe_memory_at(point);
  if (!plot.contains(point) || trace_ == nullptr) return {};
  const auto lane_index = static_cast<size_t>((point.y() - plot.top()) / kLaneHeight);
  if (lane_index >= timeline_.lanes.size()) return {};
  const TimelineLane& lane = timeline_.lanes[lane_index];
  const int64_t t = ns_at(point.x());
  for (const TimelineBar& bar : visible_bars(lane, t - static_cast<int64_t>(ns_per_pixel()), t + static_cast<int64_t>(ns_per_pixel()) + 1, ns_per_pixel())) {
    if (bar.start_ns > t + static_cast<int64_t>(ns_per_pixel()) || bar.end_ns < t - static_cast<int64_t>(ns_per_pixel())) continue;
    const traces::Event& e = trace_->events(bar.event);
    if (bar.ops > 1) {
      return QStringLiteral("%1 ops in %2 (zoom in to see each)\nlongest: %3 (%4)")
          .arg(bar.ops)
          .arg(QString::fromStdString(format_seconds(static_cast<double>(bar.end_ns - bar.start_ns) * 1e-9)),
               QString::fromStdString(e.name()), qs(traces::op_kind_name(e.kind())));
    }
    if (bar.ranks > 1) {
      return QStringLiteral("%1 on %2 ranks\nfrom the first start to the last end: %3\nlongest, rank %4: %5")
          .arg(QString::fromStdString(e.name()))
          .arg(bar.ranks)
          .arg(QString::fromStdString(format_seconds(static_cast<double>(bar.end_ns - bar.start_ns) * 1e-9)))
          .arg(e.rank())
          .arg(QString::fromStdString(format_seconds(static_cast<double>(bar.op_ns) * 1e-9)));
    }
    return QStringLiteral("%1\n%2 on %3, op %4, unit %5\n%6, starts at %7%8")
        .arg(QString::fromStdString(e.name()), qs(traces::op_kind_name(e.kind())), qs(traces::stream_name(e.stream())))
        .arg(e.op_id())
        .arg(e.unit())
        .arg(QString::fromStdString(format_seconds(static_cast<double>(e.end_ns() - e.start_ns()) * 1e-9)),
             QString::fromStdString(format_seconds(static_cast<double>(e.start_ns() - timeline_.begin_ns) * 1e-9)),
             e.bytes() > 0 ? QStringLiteral(", ") + QString::fromStdString(format_bytes(static_cast<double>(e.bytes()))) : QString());
  }
  return {};
}

bool TimelineView::event(QEvent* event) {
  if (show_tooltip(this, event, [this](const QPoint& at) { return describe_at(at); })) return true;
  return QWidget::event(event);
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const double factor = event->angleDelta().y() > 0 ? 0.8 : 1.25;
  const int64_t at = ns_at(event->position().x());
  const auto from = at - static_cast<int64_t>(static_cast<double>(at - from_ns_) * factor);
  const auto to = at + static_cast<int64_t>(static_cast<double>(to_ns_ - at) * factor);
  zoom_to(std::max(timeline_.begin_ns, from), std::min(shown_end_ns(), std::max(to, from + 1000)));
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  dragging_ = event->button() == Qt::LeftButton;
  drag_x_ = event->position().x();
  drag_from_ = from_ns_;
  drag_to_ = to_ns_;
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  if (!dragging_) return;
  const auto shift = static_cast<int64_t>((event->position().x() - drag_x_) * static_cast<double>(drag_to_ - drag_from_) / plot_rect().width());
  zoom_to(drag_from_ - shift, drag_to_ - shift);
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) { dragging_ = false; }

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) {
  show_all();
  Q_EMIT range_changed(from_ns_, to_ns_);
}

}  // namespace ragged::gui
