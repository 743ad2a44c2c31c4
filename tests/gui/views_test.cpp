// The views driven as a user drives them, with mouse events: the Timeline
// zooms with the wheel around the cursor, pans by dragging, shows the whole
// step on a double click and names the op under the cursor; the Layout
// names the tensor, its interval and local units under the cursor; a click
// on a Sweep chart's point opens that configuration.

#include <QAction>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QAbstractBarSeries>
#include <QChartView>
#include <QValueAxis>
#include <QComboBox>
#include <QTableView>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QXYSeries>
#include <QtTest>

#include <cmath>
#include <memory>

#include "gui/chart_builders.hpp"
#include "gui/explore_tab.hpp"
#include "gui/layout_view.hpp"
#include "gui/main_window.hpp"
#include "gui/models/memory_breakdown_model.hpp"
#include "gui/models/plan_summary.hpp"
#include "gui/models/simulation_results_model.hpp"
#include "gui/models/unit_layouts.hpp"
#include "gui/sweep_tab.hpp"
#include "gui/timeline_tab.hpp"
#include "gui/validation_tab.hpp"
#include "gui/models/validation_rows_model.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation_child.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/metrics.hpp"
#include "traces/trace_io.hpp"
#include "traces/trace_names.hpp"
#include "traces/unit_breakdown.hpp"

using namespace ragged;
using namespace ragged::gui;

namespace {

planner::ResolvedScenario resolved(const char* name) { return planner::resolve_scenario(scenarios::load_scenario(name)); }

void wheel(QWidget* widget, QPointF at, int delta) {
  QWheelEvent event(at, widget->mapToGlobal(at), QPoint(), QPoint(0, delta), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(widget, &event);
}

// The centre of the first bar of `lane` wide enough to hit, in widget pixels.
QPoint point_on_a_bar(const TimelineView& view, int lane, double plot_left, double plot_width) {
  const double ns_per_px = static_cast<double>(view.to_ns() - view.from_ns()) / plot_width;
  for (const TimelineBar& bar : view.timeline().lanes[static_cast<size_t>(lane)].bars) {
    if (static_cast<double>(bar.end_ns - bar.start_ns) / ns_per_px < 6) continue;
    const double x = plot_left + static_cast<double>((bar.start_ns + bar.end_ns) / 2 - view.from_ns()) / ns_per_px;
    return {static_cast<int>(x), 24 + 26 * lane + 13};  // the view's top margin and lane height
  }
  return {-1, -1};
}

}  // namespace

class ViewsTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void timeline_zooms_pans_and_names_ops() {
    TimelineTab tab;
    tab.resize(1200, 600);
    tab.show();
    auto trace = std::make_shared<const traces::Trace>(sim::simulate_in_child(resolved("llama3-8b-8xh100"), {}).trace);
    tab.show_trace(trace, QStringLiteral("llama3-8b, predicted"));
    TimelineView* view = tab.view();
    QVERIFY(QTest::qWaitForWindowExposed(&tab));
    QCOMPARE(view->title(), QStringLiteral("llama3-8b, predicted"));
    const int64_t begin = view->timeline().begin_ns, end = view->timeline().end_ns;
    QCOMPARE(view->from_ns(), begin);
    QCOMPARE(view->to_ns(), end);
    // The rank chooser offers the trace's traced ranks (one: the representative rank).
    QCOMPARE(tab.findChild<QComboBox*>()->count(), trace->metadata().traced_ranks_size());

    // Wheel up in the middle of the plot: a narrower range around the cursor.
    const double plot_left = 110, plot_width = view->width() - 110 - 12;
    const QPointF middle(plot_left + plot_width / 2, 40);
    const int64_t at = view->from_ns() + (view->to_ns() - view->from_ns()) / 2;
    QSignalSpy ranged(view, &TimelineView::range_changed);
    wheel(view, middle, 120);
    QCOMPARE(ranged.count(), 1);
    QVERIFY(view->to_ns() - view->from_ns() < end - begin);
    QVERIFY(view->from_ns() < at && at < view->to_ns());
    QCOMPARE_LT(std::abs(static_cast<double>(view->to_ns() - at) - static_cast<double>(at - view->from_ns())),
                0.01 * static_cast<double>(end - begin));
    const int64_t span = view->to_ns() - view->from_ns();

    // Drag 100 px to the left: the same span, later in the step.
    const int64_t from = view->from_ns();
    QTest::mousePress(view, Qt::LeftButton, {}, middle.toPoint());
    QTest::mouseMove(view, (middle - QPointF(100, 0)).toPoint());
    QTest::mouseRelease(view, Qt::LeftButton, {}, (middle - QPointF(100, 0)).toPoint());
    QCOMPARE(view->to_ns() - view->from_ns(), span);
    QCOMPARE_LT(std::abs(static_cast<double>(view->from_ns() - from) - 100.0 * static_cast<double>(span) / plot_width),
                static_cast<double>(span) / plot_width);

    // A double click shows the whole step again.
    QTest::mouseDClick(view, Qt::LeftButton, {}, middle.toPoint());
    QCOMPARE(view->from_ns(), begin);
    QCOMPARE(view->to_ns(), end);

    // Hovering a compute bar names its op; zoomed out, bars narrower than a pixel merged.
    const QPoint on_bar = point_on_a_bar(*view, 0, plot_left, plot_width);
    QVERIFY(on_bar.x() >= 0);
    const QString tip = view->describe_at(on_bar);
    QVERIFY2(tip.contains(QStringLiteral("compute")) && tip.contains(QStringLiteral(", op ")), qPrintable(tip));
    QVERIFY(view->describe_at(QPoint(5, 5)).isEmpty());  // the title: no op
    view->grab();
    QVERIFY(view->drawn_bars() > 0);
    QVERIFY(view->drawn_bars() <= view->timeline().bar_count());
  }

  void timeline_opens_every_rank_and_drills_into_one() {
    traces::Trace trace = sim::simulate_in_child(resolved("tiny-llama-4xcpu"), {}).trace;
    const int events = trace.events_size();
    for (int i = 0; i < events; ++i) {
      traces::Event* e = trace.add_events();
      *e = trace.events(i);
      e->set_rank(1);
      e->set_end_ns(e->end_ns() + 500);
    }
    trace.mutable_metadata()->add_traced_ranks(1);
    TimelineTab tab;
    tab.resize(1200, 600);
    tab.show();
    tab.show_trace(std::make_shared<const traces::Trace>(trace), QStringLiteral("two ranks"));
    auto* ranks = tab.findChild<QComboBox*>();
    QCOMPARE(ranks->count(), 3);
    QCOMPARE(ranks->itemText(0), QStringLiteral("every rank (2)"));
    QCOMPARE(tab.view()->timeline().rank, kEveryRank);
    const QPoint on_bar = point_on_a_bar(*tab.view(), 0, 110, tab.view()->width() - 122);
    QVERIFY(tab.view()->describe_at(on_bar).contains(QStringLiteral("on 2 ranks")));
    ranks->setCurrentIndex(2);
    Q_EMIT ranks->activated(2);
    QCOMPARE(tab.view()->timeline().rank, 1);

    // A file opened next: its name is the title, not the trace shown before.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("opened.pb"));
    traces::write_trace(trace, path.toStdString());
    QSignalSpy opened(&tab, &TimelineTab::opened);
    tab.open_file(path);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, 20000);
    QCOMPARE(tab.view()->title(), path);
  }

  void layout_hover_names_tensor_interval_and_local_units() {
    LayoutView view;
    view.resize(1200, 700);
    view.show();
    const auto r = resolved("gpt-oss-120b-256xh800");
    view.set_layouts(unit_layouts(r, most_interesting_unit(r.model), {scenarios::RAGGED, scenarios::FSDP2}));
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    // Sweep rank 0's bar of each column until a tensor shows up under the cursor.
    for (const int column : {0, 1}) {
      QString tip;
      for (int x = 0; x < view.width() && !tip.contains(QStringLiteral("local units")); x += 3) {
        if ((x < view.width() / 2) != (column == 0)) continue;
        for (int y = 0; y < 80 && !tip.contains(QStringLiteral("local units")); ++y) tip = view.describe_at(QPoint(x, y));
      }
      QVERIFY2(tip.contains(QStringLiteral("local units of rank 0")), qPrintable(tip));
      QVERIFY2(tip.contains(column == 0 ? QStringLiteral("interval [") : QStringLiteral("a chunk of")), qPrintable(tip));
      QVERIFY(tip.contains(QString::fromStdString(view.layouts()[static_cast<size_t>(column)].strategy)));
    }
  }

  // Issue 51: an OOM was only in the results table's last column, off to the right. The state column (the
  // first the eye meets) says it, the row is red, and each strategy chart names it on its bar, drawn red.
  void an_oom_shows_in_the_rows_and_the_bars() {
    auto fits = std::make_shared<traces::Trace>(sim::simulate_in_child(resolved("llama3-8b-8xh100"), {}).trace);
    auto oom = std::make_shared<traces::Trace>(*fits);
    oom->mutable_summary()->set_oom(true);
    oom->mutable_summary()->set_peak_reserved_bytes(traces::allocator_capacity_of(oom->summary()) + (1LL << 30));
    SimulationResultsModel model;
    model.reset_rows({{8, "ragged", 0, {}}, {8, "fsdp2", 0, {}}});
    model.set_outcome(0, {RunState::kDone, fits, {}, 0, nullptr});
    model.set_outcome(1, {RunState::kDone, oom, {}, 0, nullptr});
    QCOMPARE(model.index(0, SimulationResultsModel::kState).data().toString(), QStringLiteral("done"));
    QCOMPARE(model.index(1, SimulationResultsModel::kState).data().toString(), QStringLiteral("done, OOM"));
    QVERIFY(!model.index(0, SimulationResultsModel::kStrategy).data(Qt::BackgroundRole).isValid());
    for (int c : {SimulationResultsModel::kStrategy, SimulationResultsModel::kState, SimulationResultsModel::kStepTime}) {
      QVERIFY(model.index(1, c).data(Qt::BackgroundRole).isValid());  // the whole row
    }
    for (StrategyMetric metric : {StrategyMetric::kTokensPerGpu, StrategyMetric::kMfu, StrategyMetric::kPeakMemory}) {
      std::unique_ptr<QChart> chart(strategy_chart(model.rows(), metric));
      QBarCategoryAxis* categories = nullptr;
      for (QAbstractAxis* a : chart->axes()) {
        if (auto* c = qobject_cast<QBarCategoryAxis*>(a)) categories = c;
      }
      QVERIFY(categories != nullptr);
      const int at = static_cast<int>(categories->categories().indexOf(QStringLiteral("fsdp2 OOM")));
      QVERIFY2(at >= 0, qPrintable(categories->categories().join(QLatin1Char(','))));
      QVERIFY(categories->categories().contains(QStringLiteral("ragged")));
      auto* bars = qobject_cast<QAbstractBarSeries*>(chart->series().front());
      QBarSet* set = bars->barSets().front();
      QVERIFY(set->isBarSelected(at));
      QVERIFY(!set->isBarSelected(1 - at));
      QCOMPARE(set->selectedColor(), QColor(0xd62728));
      // Hovering a bar shows its value.
      Q_EMIT bars->hovered(true, at, set);
      const QString hover = bars->property(kHoverTextProperty).toString();
      QVERIFY2(hover.startsWith(QStringLiteral("fsdp2 OOM, ")), qPrintable(hover));
      QVERIFY2(hover.contains(QString::number(set->at(at), 'f', metric == StrategyMetric::kTokensPerGpu ? 0 : 2)),
               qPrintable(hover));
    }
  }

  // Issue 51: memory axes in a unit that fits the data (MiB for a tiny scenario, where GiB read 0.00),
  // round ticks (they read 7.2, 14.4, 21.7), values on hover; a colour legend of the op kinds.
  void memory_axes_fit_tiny_scenarios_and_tick_round() {
    const auto tiny = resolved("tiny-llama-4xcpu");
    auto trace = std::make_shared<const traces::Trace>(sim::simulate_in_child(tiny, {}).trace);
    const PlanSummary plan = summarize_plan(tiny);
    std::unique_ptr<QChart> chart(memory_breakdown_chart(memory_parts(plan.memory, &trace->summary()),
                                                         plan.allocator_bytes, plan.hbm_bytes));
    QValueAxis* x = nullptr;
    for (QAbstractAxis* a : chart->axes()) {
      if (auto* v = qobject_cast<QValueAxis*>(a)) x = v;
    }
    QVERIFY(x != nullptr);
    QVERIFY2(x->titleText() == QStringLiteral("MiB") || x->titleText() == QStringLiteral("KiB"), qPrintable(x->titleText()));
    const auto round = [](double step) {
      const double m = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
      return std::abs(m - 1) < 1e-9 || std::abs(m - 2) < 1e-9 || std::abs(m - 5) < 1e-9;
    };
    QCOMPARE(x->min(), 0.0);
    // Ticks from 0 every round step; the axis may end between two, where it leaves room for the bars' values.
    const bool dynamic = x->tickType() == QValueAxis::TicksDynamic;
    QVERIFY(!dynamic || x->tickAnchor() == 0.0);
    const double step = dynamic ? x->tickInterval() : (x->max() - x->min()) / (x->tickCount() - 1);
    QVERIFY2(round(step), qPrintable(QString::number(step)));
    // The unit-time chart ticks round too.
    std::unique_ptr<QChart> units(unit_breakdown_chart(traces::unit_times(*trace)));
    for (QAbstractAxis* a : units->axes()) {
      if (auto* v = qobject_cast<QValueAxis*>(a)) QVERIFY(round((v->max() - v->min()) / (v->tickCount() - 1)));
    }
    // The Timeline's memory axis: round ticks in MiB (or KiB), the value under the cursor, a legend of kinds.
    TimelineTab tab;
    tab.resize(1100, 600);
    tab.show();
    tab.show_trace(trace, QStringLiteral("tiny"));
    QVERIFY(QTest::qWaitForWindowExposed(&tab));
    TimelineView* view = tab.view();
    const QStringList ticks = view->memory_ticks();
    QVERIFY2(ticks.size() >= 3, qPrintable(ticks.join(QLatin1Char(','))));
    QVERIFY2(ticks.front() == QStringLiteral("0 MiB") || ticks.front() == QStringLiteral("0 KiB"), qPrintable(ticks.front()));
    const double second = ticks[1].section(QLatin1Char(' '), 0, 0).toDouble();
    QVERIFY2(round(second), qPrintable(ticks[1]));
    const QString hover = view->describe_at(QPoint(110 + (view->width() - 122) / 2, view->height() - 60));
    QVERIFY2(hover.contains(QStringLiteral("reserved")) && hover.contains(QStringLiteral("allocated")), qPrintable(hover));
    QStringList names;
    for (const auto& [name, color] : view->legend()) names << name;
    QVERIFY2(names.contains(QStringLiteral("all_gather")), qPrintable(names.join(QLatin1Char(','))));
    QVERIFY2(names.filter(QStringLiteral("compute")).size() >= 1, qPrintable(names.join(QLatin1Char(','))));
    for (const auto& [name, color] : view->legend()) {
      QCOMPARE(color, op_kind_color(static_cast<traces::OpKind>(
                          [&] {
                            for (int k = 0; k < 64; ++k) {
                              if (traces::OpKind_IsValid(k) &&
                                  name.split(QStringLiteral(" + ")).front().toStdString() ==
                                      traces::op_kind_name(static_cast<traces::OpKind>(k))) {
                                return k;
                              }
                            }
                            return 0;
                          }())));
    }
  }

  // Issue 51: the shown trace exports for ui.perfetto.dev from the GUI (File > Export trace for Perfetto).
  void the_shown_trace_exports_for_perfetto() {
    MainWindow window;
    window.show();
    QAction* action = nullptr;
    for (QAction* a : window.findChildren<QAction*>()) {
      if (a->text().contains(QStringLiteral("Perfetto"))) action = a;
    }
    QVERIFY(action != nullptr);
    QVERIFY(!window.timeline()->export_perfetto(QStringLiteral("x.json")).isEmpty());  // nothing shown yet
    auto trace = std::make_shared<const traces::Trace>(sim::simulate_in_child(resolved("tiny-llama-4xcpu"), {}).trace);
    window.timeline()->show_trace(trace, QStringLiteral("tiny"));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("trace.json"));
    QCOMPARE(window.timeline()->export_perfetto(path), QString());
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray json = file.readAll();
    QCOMPARE(json, QByteArray::fromStdString(traces::to_chrome_trace(*trace)));
    QVERIFY(json.contains("traceEvents"));
    QVERIFY(!window.timeline()->export_perfetto(dir.filePath(QStringLiteral("no/such/dir/t.json"))).isEmpty());
  }

  void a_click_on_a_sweep_point_opens_it() {
    SweepTab sweep;
    sweep.resize(1400, 700);
    sweep.show();
    sweep.set_scenario(std::make_shared<const planner::ResolvedScenario>(resolved("llama3-8b-8xh100")));
    sweep.run({8, 64});
    QTRY_VERIFY_WITH_TIMEOUT(!sweep.jobs()->busy() && sweep.results_model()->finished_rows() == 12, 60000);
    QTest::qWait(300);  // the coalesced redraw
    QVERIFY(QTest::qWaitForWindowExposed(&sweep));
    auto* view = qobject_cast<QChartView*>(sweep.exportable_views().front());
    QXYSeries* fsdp2 = nullptr;
    for (QAbstractSeries* s : view->chart()->series()) {
      if (s->property(kStrategyProperty).toString() == QStringLiteral("fsdp2") && s->type() == QAbstractSeries::SeriesTypeLine) {
        fsdp2 = qobject_cast<QXYSeries*>(s);
      }
    }
    QVERIFY(fsdp2 != nullptr);
    QCOMPARE(fsdp2->count(), 2);
    QSignalSpy opened(&sweep, &SweepTab::open_configuration);
    const QPointF point = fsdp2->at(1);  // 64 GPUs
    const QPoint at = view->mapFromScene(view->chart()->mapToScene(view->chart()->mapToPosition(point, fsdp2)));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, 2000);
    QCOMPARE(opened.at(0).at(0).toLongLong(), 64);
    QCOMPARE(opened.at(0).at(1).toString(), QStringLiteral("fsdp2"));
  }

  // A double click on a Validation run opens its scenario file in Explore.
  void a_double_click_on_a_validation_run_opens_its_scenario() {
    MainWindow window;
    window.resize(1400, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.tabs()->setCurrentIndex(MainWindow::kValidation);
    ValidationTab* tab = window.validation();
    tab->set_filter(QStringLiteral("cudnnfe-h200-llama3.2-1b-flash-b2-s8192"));
    QCOMPARE(tab->rows()->rowCount(), 1);
    auto* table = tab->findChild<QTableView*>();
    QVERIFY(table != nullptr);
    const QRect cell = table->visualRect(table->model()->index(0, 0));
    // A view emits doubleClicked for the index pressed first, as a real double click presses it.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    QTRY_VERIFY2_WITH_TIMEOUT(window.tabs()->currentIndex() == MainWindow::kExplore, qPrintable(window.last_error()),
                              5000);
    QVERIFY(window.explore()->current() != nullptr);
    QCOMPARE(window.explore()->current()->scenario.name(), std::string("cudnnfe-h200-llama3.2-1b-flash-b2-s8192"));
    QVERIFY(window.last_error().isEmpty());
  }
};

QTEST_MAIN(ViewsTest)
#include "views_test.moc"
