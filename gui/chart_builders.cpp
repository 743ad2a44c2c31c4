#include "gui/chart_builders.hpp"

#include <QAreaSeries>
#include <QCursor>
#include <QToolTip>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QHorizontalBarSeries>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

#include "common/units.hpp"
#include "gui/models/axis_scale.hpp"
#include "traces/metrics.hpp"

namespace ragged::gui {
namespace {

QString text(const std::string& s) { return QString::fromStdString(s); }

QChart* new_chart(const QString& title) {
  auto* chart = new QChart();
  chart->setTitle(title);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  // Tight margins and a smaller legend: at 1,100 x 700 a chart is a third of the window's right side.
  chart->setMargins(QMargins(2, 2, 2, 2));
  chart->setBackgroundRoundness(0);
  QFont small = chart->legend()->font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() - 1.5));
  chart->legend()->setFont(small);
  return chart;
}

// Category labels a size smaller: a narrow chart elides them to "..." otherwise.
void small_labels(QAbstractAxis* axis) {
  QFont font = axis->labelsFont();
  font.setPointSizeF(std::max(6.0, font.pointSizeF() - 1.5));
  axis->setLabelsFont(font);
}

// A category name on lines of at most `width` characters (a longer word
// keeps its own line), broken at spaces: a chart a third of a 1,100-pixel
// window wide cuts a one-line "layers (mean of 32)" short.
QString wrapped(const QString& name, qsizetype width) {
  QStringList lines;
  for (const QString& word : name.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    if (!lines.isEmpty() && lines.back().size() + 1 + word.size() <= width) lines.back() += QLatin1Char(' ') + word;
    else lines << word;
  }
  return lines.join(QStringLiteral("<br>"));
}

// `metric` in the chart's unit (bytes over `unit_bytes` for memory).
double metric_value(const traces::Summary& s, StrategyMetric metric, double unit_bytes) {
  switch (metric) {
    case StrategyMetric::kTokensPerGpu: return s.tokens_per_s_per_gpu();
    case StrategyMetric::kMfu: return 100 * s.mfu();
    case StrategyMetric::kPeakMemory: return static_cast<double>(s.peak_reserved_bytes()) / unit_bytes;
  }
  return 0;
}

// 0 .. a round top over `max` x `headroom`, in round ticks.
void round_ticks(QValueAxis* axis, double max, double headroom = 1.0, int ticks = 5) {
  const NiceAxis n = nice_axis(max, ticks, headroom);
  axis->setRange(0, n.top);
  axis->setTickCount(n.intervals + 1);
  axis->setLabelFormat(QStringLiteral("%.%1f").arg(n.decimals));
}

// Each bar's value printed after its end, in dark text: inside the end, a
// value wider than its bar was cut at the plot's left edge ("30.42" for
// fsdp2's 680.42 tokens/s at 1,100 x 700), and outside, the theme's white
// labels did not show on the white background. Qt Charts moves a value that
// would pass the plot's end inside its bar: light bar colours keep it legible.
void values_after_bars(QAbstractBarSeries* series, QBarSet* set, int precision) {
  series->setLabelsVisible(true);
  series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
  series->setLabelsPrecision(precision);
  set->setLabelColor(QColor(0x202020));
}

// 0 .. `max` x 1.5, the room a value printed after the longest bar needs, with round ticks from 0 (the
// axis may end between two): rounding the end up to a tick as well left half a narrow chart empty.
void ticks_with_room_for_values(QValueAxis* axis, double max, int ticks) {
  const NiceAxis n = nice_axis(max, ticks);
  const double end = max * 1.5;
  if (n.top >= end) {
    round_ticks(axis, max, 1.0, ticks);
    return;
  }
  axis->setRange(0, end);
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0);
  axis->setTickInterval(n.step);
  axis->setLabelFormat(QStringLiteral("%.%1f").arg(n.decimals));
}

// Hovering a bar shows its category, set and value (and keeps the text in kHoverTextProperty).
void values_on_hover(QAbstractBarSeries* series, const QStringList& categories, const QString& unit, int decimals) {
  QObject::connect(series, &QAbstractBarSeries::hovered, series,
                   [series, categories, unit, decimals](bool on, int index, QBarSet* set) {
                     if (!on) {
                       QToolTip::hideText();
                       return;
                     }
                     const QString text = QStringLiteral("%1, %2: %3 %4")
                                              .arg(categories.value(index), set->label())
                                              .arg(set->at(index), 0, 'f', decimals)
                                              .arg(unit);
                     series->setProperty(kHoverTextProperty, text);
                     QToolTip::showText(QCursor::pos(), text);
                   });
}

}  // namespace

QColor strategy_color(const std::string& strategy) {
  static const std::vector<std::pair<std::string, QColor>> colors = {
      {"ragged", QColor(0x1f77b4)}, {"vescale-paper", QColor(0x17becf)}, {"fsdp1", QColor(0x9467bd)},
      {"fsdp2", QColor(0xff7f0e)},  {"zero3", QColor(0x2ca02c)},         {"megatron", QColor(0x8c564b)}};
  for (const auto& [name, color] : colors) {
    if (name == strategy) return color;
  }
  return QColor(0x7f7f7f);
}

QChart* strategy_chart(const std::vector<SimulationRow>& rows, StrategyMetric metric) {
  // Memory in the unit its largest figure reads best in (MiB for a tiny scenario).
  double largest_bytes = 0;
  for (const auto& row : rows) {
    if (const traces::Summary* s = row.summary()) {
      largest_bytes = std::max({largest_bytes, static_cast<double>(s->peak_reserved_bytes()),
                                static_cast<double>(traces::allocator_capacity_of(*s))});
    }
  }
  const ByteUnit unit = byte_unit_for(largest_bytes);
  const QString memory_title = QStringLiteral("peak memory (%1)").arg(text(unit.name));
  const QString title = metric == StrategyMetric::kTokensPerGpu ? QStringLiteral("tokens/s per GPU")
                        : metric == StrategyMetric::kMfu        ? QStringLiteral("MFU (%)")
                                                                : memory_title;
  QChart* chart = new_chart(title);
  auto* series = new QHorizontalBarSeries();
  QStringList categories;
  auto* set = new QBarSet(title);
  double top = 0, capacity = 0, hbm = 0;
  // The first strategy on top; a run out of memory says so on its bar, drawn red.
  QList<int> oom;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    const traces::Summary* s = it->summary();
    if (s != nullptr && s->oom()) oom << static_cast<int>(categories.size());
    categories << text(it->strategy) + (s != nullptr && s->oom() ? QStringLiteral(" OOM") : QString());
    const double v = s != nullptr ? metric_value(*s, metric, unit.bytes) : 0;
    *set << v;
    top = std::max(top, v);
    if (s != nullptr) {
      capacity = static_cast<double>(traces::allocator_capacity_of(*s));
      hbm = static_cast<double>(s->hbm_capacity_bytes());
    }
  }
  set->setColor(metric == StrategyMetric::kPeakMemory ? QColor(0xb0a6d8) : QColor(0x8eaee0));
  set->setSelectedColor(QColor(0xd62728));
  set->selectBars(oom);
  series->append(set);
  // Tokens/s to the unit of the largest ("1544", "680.4"), the rest to three significant digits.
  const int whole_digits = top >= 1 ? static_cast<int>(std::floor(std::log10(top))) + 1 : 1;
  values_after_bars(series, set, metric == StrategyMetric::kTokensPerGpu ? std::max(3, whole_digits) : 3);
  chart->addSeries(series);
  chart->legend()->setVisible(false);
  auto* y = new QBarCategoryAxis();
  y->append(categories);
  small_labels(y);
  auto* x = new QValueAxis();
  chart->addAxis(y, Qt::AlignLeft);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  series->attachAxis(y);
  values_on_hover(series, categories,
                  metric == StrategyMetric::kTokensPerGpu ? QStringLiteral("tokens/s")
                  : metric == StrategyMetric::kMfu        ? QStringLiteral("%")
                                                          : text(unit.name),
                  metric == StrategyMetric::kTokensPerGpu ? 0 : 2);
  if (metric == StrategyMetric::kPeakMemory && capacity > 0) {
    const double n = std::max<double>(1, static_cast<double>(rows.size()));
    auto* line = new QLineSeries();
    line->setName(QStringLiteral("capacity %1").arg(text(format_bytes(capacity))));
    line->setProperty("hbm", hbm);
    line->append(capacity / unit.bytes, -0.5);
    line->append(capacity / unit.bytes, n - 0.5);
    line->setPen(QPen(Qt::red, 2, Qt::DashLine));
    auto* hidden_y = new QValueAxis();
    hidden_y->setRange(-0.5, n - 0.5);
    hidden_y->setVisible(false);
    chart->addSeries(line);
    chart->addAxis(hidden_y, Qt::AlignRight);
    line->attachAxis(x);
    line->attachAxis(hidden_y);
    chart->legend()->setVisible(true);
    chart->legend()->markers(series).first()->setVisible(false);  // the bars are named by the title
    top = std::max(top, capacity / unit.bytes);
  }
  ticks_with_room_for_values(x, top, 3);  // a narrow chart: few tick labels, so that they do not run into each other
  return chart;
}

QChart* unit_breakdown_chart(const std::vector<traces::UnitTimes>& rows) {
  QChart* chart = new_chart(QStringLiteral("ms per unit"));
  auto* series = new QStackedBarSeries();
  double top = 0;
  for (int p = 0; p < traces::kUnitPhases; ++p) {
    const std::string_view name = traces::unit_phase_name(static_cast<traces::UnitPhase>(p));
    auto* set = new QBarSet(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())));
    for (const auto& row : rows) *set << row.seconds[static_cast<size_t>(p)] * 1e3;
    series->append(set);
  }
  QStringList categories;
  for (const auto& row : rows) {
    categories << text(row.name);
    top = std::max(top, row.total() * 1e3);
  }
  chart->addSeries(series);
  auto* x = new QBarCategoryAxis();
  for (const QString& name : categories) x->append(wrapped(name, 10));
  small_labels(x);
  auto* y = new QValueAxis();
  round_ticks(y, top);
  y->setTitleText(QStringLiteral("ms"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  values_on_hover(series, categories, QStringLiteral("ms"), 3);
  chart->legend()->setAlignment(Qt::AlignRight);  // eight phases: a column beside the bars, not elided under them
  return chart;
}

QChart* memory_breakdown_chart(const std::vector<MemoryPart>& parts, int64_t capacity_bytes, int64_t hbm_bytes) {
  int64_t total = 0, largest = 0;
  for (const auto& p : parts) {
    total += p.bytes;
    largest = std::max(largest, p.bytes);
  }
  const ByteUnit unit = byte_unit_for(static_cast<double>(largest));
  // Three short lines: the title must not be cut at 1,100 x 700.
  QChart* chart = new_chart(QStringLiteral("memory of one rank: %1<br>of the allocator's %2<br>(HBM %3)")
                                .arg(text(format_bytes(static_cast<double>(total))),
                                     text(format_bytes(static_cast<double>(capacity_bytes))),
                                     text(format_bytes(static_cast<double>(hbm_bytes)))));
  auto* series = new QHorizontalBarSeries();
  auto* set = new QBarSet(text(unit.name));
  set->setColor(QColor(0x8ec6ea));
  QStringList categories, names;  // short on the axis, whole on hover
  double top = 0;
  for (const auto& p : parts) {
    if (p.bytes == 0) continue;  // an empty part is a row of nothing, and crowds the names out
    categories << text(p.label());
    names << text(p.name);
    *set << static_cast<double>(p.bytes) / unit.bytes;
    top = std::max(top, static_cast<double>(p.bytes) / unit.bytes);
  }
  series->append(set);
  values_after_bars(series, set, 3);
  chart->addSeries(series);
  chart->legend()->setVisible(false);
  auto* y = new QBarCategoryAxis();
  y->append(categories);
  small_labels(y);
  auto* x = new QValueAxis();
  ticks_with_room_for_values(x, top, 4);
  x->setTitleText(text(unit.name));
  chart->addAxis(y, Qt::AlignLeft);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  series->attachAxis(y);
  values_on_hover(series, names, text(unit.name), 3);
  return chart;
}

QChart* sweep_chart(const std::vector<SweepSeries>& series, SweepMetric metric, int64_t capacity_bytes) {
  const bool memory = metric == SweepMetric::kPeakMemory;
  double largest_bytes = static_cast<double>(capacity_bytes);
  for (const SweepSeries& s : series) {
    for (const SweepPoint& p : s.points) largest_bytes = std::max(largest_bytes, static_cast<double>(p.peak_bytes));
  }
  const ByteUnit unit = byte_unit_for(largest_bytes);
  const double unit_bytes = unit.bytes;
  QChart* chart = new_chart(memory ? QStringLiteral("peak memory per GPU (%1) against GPUs").arg(text(unit.name))
                                   : QStringLiteral("tokens/s per GPU against GPUs"));
  auto* x = new QLogValueAxis();
  x->setBase(2);
  x->setLabelFormat(QStringLiteral("%d"));
  x->setRange(6, 20000);
  x->setTitleText(QStringLiteral("GPUs"));
  double top = memory ? static_cast<double>(capacity_bytes) / unit_bytes : 0;
  double bottom = top > 0 ? top : 1e30;
  for (const SweepSeries& s : series) {
    for (const SweepPoint& p : s.points) {
      const double v = memory ? static_cast<double>(p.peak_bytes) / unit_bytes : p.tokens_per_s_per_gpu;
      top = std::max(top, v);
      bottom = std::min(bottom, v);
    }
  }
  // Memory spans orders of magnitude (a rank-major layout at 16,384 GPUs): log scale from a
  // power of ten to a power of ten, so that every tick is round.
  QAbstractAxis* y = nullptr;
  if (memory) {
    auto* log_y = new QLogValueAxis();
    log_y->setBase(10);
    log_y->setLabelFormat(QStringLiteral("%g"));
    bottom = bottom < 1e30 ? std::pow(10.0, std::floor(std::log10(std::max(1e-3, bottom / 2)))) : 1;
    top = std::pow(10.0, std::ceil(std::log10(std::max(top * 1.15, bottom * 10))));
    log_y->setRange(bottom, top);
    y = log_y;
  } else {
    auto* linear_y = new QValueAxis();
    round_ticks(linear_y, top, 1.1);
    top = linear_y->max();
    y = linear_y;
  }
  const double floor = memory ? bottom : 0;
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  // Shaded first, so that the lines draw over it.
  for (const GpuRange& r : oom_ranges(series)) {
    auto* upper = new QLineSeries();
    auto* lower = new QLineSeries();
    const double from = static_cast<double>(r.from) / 1.3, to = static_cast<double>(r.to) * 1.3;
    upper->append(from, top);
    upper->append(to, top);
    lower->append(from, floor);
    lower->append(to, floor);
    auto* area = new QAreaSeries(upper, lower);
    area->setName(QStringLiteral("every strategy OOM"));
    area->setColor(QColor(255, 0, 0, 40));
    area->setBorderColor(QColor(255, 0, 0, 60));
    chart->addSeries(area);
    area->attachAxis(x);
    area->attachAxis(y);
  }
  for (const SweepSeries& s : series) {
    auto* line = new QLineSeries();
    line->setName(text(s.strategy));
    line->setColor(strategy_color(s.strategy));
    line->setPointsVisible(true);
    line->setProperty(kStrategyProperty, text(s.strategy));
    auto* oom = new QScatterSeries();
    oom->setProperty(kStrategyProperty, text(s.strategy));
    oom->setName(text(s.strategy + " OOM"));
    oom->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    oom->setColor(Qt::red);
    oom->setMarkerSize(9);
    for (const SweepPoint& p : s.points) {
      const double v = memory ? static_cast<double>(p.peak_bytes) / unit_bytes : p.tokens_per_s_per_gpu;
      line->append(static_cast<double>(p.gpus), v);
      if (p.oom) oom->append(static_cast<double>(p.gpus), v);
    }
    chart->addSeries(line);
    line->attachAxis(x);
    line->attachAxis(y);
    if (oom->count() > 0) {
      chart->addSeries(oom);
      oom->attachAxis(x);
      oom->attachAxis(y);
      chart->legend()->markers(oom).first()->setVisible(false);
    } else {
      delete oom;
    }
  }
  if (memory && capacity_bytes > 0) {
    auto* capacity = new QLineSeries();
    capacity->setName(QStringLiteral("allocator's capacity (above: OOM)"));
    capacity->setPen(QPen(Qt::red, 2, Qt::DashLine));
    capacity->append(6, static_cast<double>(capacity_bytes) / unit_bytes);
    capacity->append(20000, static_cast<double>(capacity_bytes) / unit_bytes);
    chart->addSeries(capacity);
    capacity->attachAxis(x);
    capacity->attachAxis(y);
  }
  return chart;
}

}  // namespace ragged::gui
