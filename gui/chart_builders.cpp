#include "gui/chart_builders.hpp"

#include <QAreaSeries>
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

#include "common/units.hpp"
#include "traces/metrics.hpp"

namespace ragged::gui {
namespace {

QString text(const std::string& s) { return QString::fromStdString(s); }

QChart* new_chart(const QString& title) {
  auto* chart = new QChart();
  chart->setTitle(title);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

double metric_value(const traces::Summary& s, StrategyMetric metric) {
  switch (metric) {
    case StrategyMetric::kTokensPerGpu: return s.tokens_per_s_per_gpu();
    case StrategyMetric::kMfu: return 100 * s.mfu();
    case StrategyMetric::kPeakMemory: return static_cast<double>(s.peak_reserved_bytes()) / kGiB;
  }
  return 0;
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
  static const char* titles[] = {"tokens/s per GPU", "MFU (%)", "peak memory (GiB)"};
  QChart* chart = new_chart(QString::fromLatin1(titles[static_cast<int>(metric)]));
  auto* series = new QHorizontalBarSeries();
  QStringList categories;
  auto* set = new QBarSet(QString::fromLatin1(titles[static_cast<int>(metric)]));
  double top = 0, capacity = 0, hbm = 0;
  // The first strategy on top.
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    const traces::Summary* s = it->summary();
    categories << text(it->strategy);
    const double v = s != nullptr ? metric_value(*s, metric) : 0;
    *set << v;
    top = std::max(top, v);
    if (s != nullptr) {
      capacity = static_cast<double>(traces::allocator_capacity_of(*s)) / kGiB;
      hbm = static_cast<double>(s->hbm_capacity_bytes()) / kGiB;
    }
  }
  set->setColor(metric == StrategyMetric::kPeakMemory ? QColor(0x8172b2) : QColor(0x4c72b0));
  series->append(set);
  series->setLabelsVisible(true);
  series->setLabelsPosition(QAbstractBarSeries::LabelsInsideEnd);
  series->setLabelsPrecision(metric == StrategyMetric::kTokensPerGpu ? 5 : 3);
  chart->addSeries(series);
  chart->legend()->setVisible(false);
  auto* y = new QBarCategoryAxis();
  y->append(categories);
  auto* x = new QValueAxis();
  chart->addAxis(y, Qt::AlignLeft);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  series->attachAxis(y);
  if (metric == StrategyMetric::kPeakMemory && capacity > 0) {
    const double n = std::max<double>(1, static_cast<double>(rows.size()));
    auto* line = new QLineSeries();
    line->setName(QStringLiteral("allocator %1 GiB (HBM %2)").arg(capacity, 0, 'f', 1).arg(hbm, 0, 'f', 1));
    line->append(capacity, -0.5);
    line->append(capacity, n - 0.5);
    line->setPen(QPen(Qt::red, 2, Qt::DashLine));
    auto* hidden_y = new QValueAxis();
    hidden_y->setRange(-0.5, n - 0.5);
    hidden_y->setVisible(false);
    chart->addSeries(line);
    chart->addAxis(hidden_y, Qt::AlignRight);
    line->attachAxis(x);
    line->attachAxis(hidden_y);
    chart->legend()->setVisible(true);
    top = std::max(top, capacity);
    chart->setTitle(chart->title() + QStringLiteral(": red is the allocator's capacity"));
  }
  x->setRange(0, top > 0 ? top * 1.1 : 1);
  x->applyNiceNumbers();
  return chart;
}

QChart* unit_breakdown_chart(const std::vector<traces::UnitTimes>& rows) {
  QChart* chart = new_chart(QStringLiteral("time per unit and step (ms)"));
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
  x->append(categories);
  auto* y = new QValueAxis();
  y->setRange(0, top > 0 ? top * 1.1 : 1);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  return chart;
}

QChart* memory_breakdown_chart(const std::vector<MemoryPart>& parts, int64_t capacity_bytes, int64_t hbm_bytes) {
  int64_t total = 0;
  for (const auto& p : parts) total += p.bytes;
  QChart* chart = new_chart(QStringLiteral("memory of one rank: %1 of the allocator's %2 (HBM %3)")
                                .arg(text(format_bytes(static_cast<double>(total))),
                                     text(format_bytes(static_cast<double>(capacity_bytes))),
                                     text(format_bytes(static_cast<double>(hbm_bytes)))));
  auto* series = new QHorizontalBarSeries();
  auto* set = new QBarSet(QStringLiteral("GiB"));
  QStringList categories;
  double top = 0;
  for (const auto& p : parts) {
    categories << text(p.name);
    *set << static_cast<double>(p.bytes) / kGiB;
    top = std::max(top, static_cast<double>(p.bytes) / kGiB);
  }
  series->append(set);
  series->setLabelsVisible(true);
  series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
  series->setLabelsPrecision(3);
  chart->addSeries(series);
  chart->legend()->setVisible(false);
  auto* y = new QBarCategoryAxis();
  y->append(categories);
  auto* x = new QValueAxis();
  x->setRange(0, top > 0 ? top * 1.2 : 1);
  x->setTitleText(QStringLiteral("GiB"));
  chart->addAxis(y, Qt::AlignLeft);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  series->attachAxis(y);
  return chart;
}

QChart* sweep_chart(const std::vector<SweepSeries>& series, SweepMetric metric, int64_t capacity_bytes) {
  const bool memory = metric == SweepMetric::kPeakMemory;
  QChart* chart = new_chart(memory ? QStringLiteral("peak memory per GPU (GiB) against GPUs")
                                   : QStringLiteral("tokens/s per GPU against GPUs"));
  auto* x = new QLogValueAxis();
  x->setBase(2);
  x->setLabelFormat(QStringLiteral("%d"));
  x->setRange(6, 20000);
  x->setTitleText(QStringLiteral("GPUs"));
  double top = memory ? static_cast<double>(capacity_bytes) / kGiB : 0;
  double bottom = top > 0 ? top : 1e30;
  for (const SweepSeries& s : series) {
    for (const SweepPoint& p : s.points) {
      const double v = memory ? static_cast<double>(p.peak_bytes) / kGiB : p.tokens_per_s_per_gpu;
      top = std::max(top, v);
      bottom = std::min(bottom, v);
    }
  }
  top = top > 0 ? top * 1.15 : 1;
  // Memory spans orders of magnitude (a rank-major layout at 16,384 GPUs): log scale.
  QAbstractAxis* y = nullptr;
  if (memory) {
    auto* log_y = new QLogValueAxis();
    log_y->setBase(10);
    log_y->setLabelFormat(QStringLiteral("%g"));
    bottom = bottom < 1e30 ? std::max(1e-3, bottom / 2) : 1;
    log_y->setRange(bottom, std::max(top, bottom * 10));
    y = log_y;
  } else {
    auto* linear_y = new QValueAxis();
    linear_y->setRange(0, top);
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
      const double v = memory ? static_cast<double>(p.peak_bytes) / kGiB : p.tokens_per_s_per_gpu;
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
    capacity->append(6, static_cast<double>(capacity_bytes) / kGiB);
    capacity->append(20000, static_cast<double>(capacity_bytes) / kGiB);
    chart->addSeries(capacity);
    capacity->attachAxis(x);
    capacity->attachAxis(y);
  }
  return chart;
}

}  // namespace ragged::gui
