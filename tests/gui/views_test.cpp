// The views driven as a user drives them, with mouse events: the Timeline
// zooms with the wheel around the cursor, pans by dragging, shows the whole
// step on a double click and names the op under the cursor; the Layout
// names the tensor, its interval and local units under the cursor; a click
// on a Sweep chart's point opens that configuration.

#include <QChartView>
#include <QComboBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QXYSeries>
#include <QtTest>

#include "gui/chart_builders.hpp"
#include "gui/layout_view.hpp"
#include "gui/models/unit_layouts.hpp"
#include "gui/sweep_tab.hpp"
#include "gui/timeline_tab.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/simulation_child.hpp"
#include "traces/trace_io.hpp"

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
};

QTEST_MAIN(ViewsTest)
#include "views_test.moc"
