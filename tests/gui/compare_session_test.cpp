// A scripted session through the Compare tab: `ragged simulate` and
// `mpirun ragged run` as child processes with progress and cancel, two
// traces opened and compared op by op, ops and steps selected on one shared
// axis, traces of different runs refused. (session_test.cpp drives the
// other tabs.) A PyTorch profiler trace opens as the measured side.

#include <QCheckBox>
#include <QComboBox>
#include <QProgressBar>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>

#include "gui/compare_tab.hpp"
#include "gui/main_window.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/simulation_child.hpp"
#include "tests/traces/kineto_writer.hpp"
#include "traces/trace_io.hpp"

using namespace ragged;
using namespace ragged::gui;

namespace {

// The NCCL kernel a collective runs as (NCCL 2.19's names), empty for any other op.
std::string nccl_kernel(traces::OpKind kind) {
  switch (kind) {
    case traces::ALL_GATHER: return "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
    case traces::REDUCE_SCATTER: return "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
    case traces::ALL_REDUCE: return "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
    default: return {};
  }
}

// Two training steps of the model `predicted` describes, as torch.profiler exports them with FSDP2
// (docs/IMPORT.md's schema): schema-conformant, written from the prediction's own ops, not measured.
// Every op that takes time on the GPU is a kernel over the op's span (an NCCL kernel for a collective),
// all-gathers `gather_slowdown` times as long; each unit's forward and backward lie between FSDP2's
// hooks "FSDP::pre_forward (model.<unit>)" and "FSDP::post_forward (...)"; each step lasts `step_us`;
// "[memory]" events reach the predicted peak; distributedInfo states the prediction's GPU count.
std::string profiler_trace_of(const traces::Trace& predicted, double gather_slowdown, double step_us) {
  traces::testing::KinetoWriter w;
  w.set_world_size(predicted.metadata().world_size());
  for (int step = 0; step < 2; ++step) {
    const double begin = 1000 + step * step_us;
    w.annotation("ProfilerStep#" + std::to_string(3 + step), begin, begin + step_us);
    double launch = begin + 1;  // the CPU launches, in issue order, 2 us apart
    for (const traces::Event& e : predicted.events()) {
      if (e.end_ns() <= e.start_ns()) continue;  // allocs and frees
      const double start = begin + static_cast<double>(e.start_ns()) / 1e3;
      const double length = static_cast<double>(e.end_ns() - e.start_ns()) / 1e3 * (e.kind() == traces::ALL_GATHER ? gather_slowdown : 1);
      const std::string nccl = nccl_kernel(e.kind());
      const bool unit_pass = (e.kind() == traces::COMPUTE_FWD || e.kind() == traces::COMPUTE_BWD) && e.unit() >= 0;
      const std::string pass = e.kind() == traces::COMPUTE_BWD ? "backward" : "forward";
      const std::string fqn = "model." + e.name().substr(0, e.name().find(' '));
      if (unit_pass) w.annotation("FSDP::pre_" + pass + " (" + fqn + ")", launch - 0.8, launch - 0.4);
      w.kernel(nccl.empty() ? "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64" : nccl, launch, start, start + length);
      if (unit_pass) w.annotation("FSDP::post_" + pass + " (" + fqn + ")", launch + 0.4, launch + 0.8);
      launch += 2;
    }
    w.memory(begin + 10, predicted.summary().peak_allocated_bytes() / 2, predicted.summary().peak_reserved_bytes() / 2);
    w.memory(begin + step_us / 2, predicted.summary().peak_allocated_bytes(), predicted.summary().peak_reserved_bytes());
  }
  return w.text();
}

}  // namespace

class CompareSessionTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("ragged-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("compare-session-test"));
    QSettings().clear();
  }

  // `ragged simulate` then `mpirun -np 4 ragged run --device cpu` as child
  // processes, with progress; then the same cancelled while mpirun runs.
  void compare_runs_both_and_cancels() {
    qputenv("RAGGED_CLI", RAGGED_BINARY_DIR "/ragged");
    MainWindow window;
    window.show();
    CompareTab* compare = window.compare();
    auto* progress = compare->findChild<QProgressBar*>();
    QSignalSpy finished(compare, &CompareTab::run_finished);
    QSignalSpy compared(compare, &CompareTab::compared);
    compare->run_both(QStringLiteral("tiny-llama-4xcpu"));
    QVERIFY(compare->running());
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(window.last_error()));
    QCOMPARE(progress->value(), progress->maximum());
    QTRY_COMPARE_WITH_TIMEOUT(compared.count(), 1, 20000);
    QVERIFY(compare->summary_text().contains(QStringLiteral("tiny-llama-4xcpu")));
    QVERIFY(compare->ops_model()->rowCount() > 0);
    QCOMPARE(compare->measured_view()->memory_quantity(), MemoryQuantity::kStateAndBuffers);

    compare->run_both(QStringLiteral("tiny-llama-4xcpu"));
    QTRY_VERIFY_WITH_TIMEOUT(compare->summary_text().contains(QStringLiteral("mpirun")), 30000);
    QCOMPARE(progress->value(), 1);
    compare->cancel_run();
    QVERIFY(finished.wait(30000));
    QCOMPARE(finished.last().at(0).toBool(), false);
    QVERIFY(!compare->running());
    QCOMPARE(compare->summary_text(), QStringLiteral("cancelled"));
    QVERIFY(window.last_error().isEmpty());  // a cancel is no error
    QCOMPARE(compared.count(), 1);
  }

  void compare_two_traces() {
    QTemporaryDir dir;
    const auto resolved = planner::resolve_scenario(scenarios::load_scenario("tiny-llama-4xcpu"));
    const traces::Trace predicted = sim::simulate_in_child(resolved, {}).trace;
    // A "measured" trace: the same ops, compute 30% slower, all-gathers 2x.
    traces::Trace measured = predicted;
    measured.mutable_metadata()->set_source(traces::MEASURED);
    for (auto& e : *measured.mutable_events()) {
      const double factor = e.kind() == traces::ALL_GATHER ? 2.0 : e.kind() == traces::COMPUTE_FWD ? 1.3 : 1.0;
      e.set_end_ns(e.start_ns() + static_cast<int64_t>(static_cast<double>(e.end_ns() - e.start_ns()) * factor));
    }
    const QString p = dir.filePath(QStringLiteral("p.pb")), m = dir.filePath(QStringLiteral("m.pb"));
    traces::write_trace(predicted, p.toStdString());
    traces::write_trace(measured, m.toStdString());

    MainWindow window;
    window.show();
    CompareTab* compare = window.compare();
    QSignalSpy compared(compare, &CompareTab::compared);
    compare->open_files(p, m);
    QVERIFY(compared.wait(20000));
    const auto& kinds = compare->kinds_model()->rows();
    QVERIFY(kinds.size() >= 4);
    QVERIFY(kinds[0].kind == traces::ALL_GATHER || kinds[0].kind == traces::COMPUTE_FWD);  // the slowed kinds first
    for (const auto& k : kinds) {
      if (k.kind == traces::ALL_GATHER) QCOMPARE_LT(std::abs(k.relative_error() + 0.5), 0.01);
      if (k.kind == traces::COMPUTE_BWD) QCOMPARE_LT(std::abs(k.relative_error()), 1e-9);
    }
    // Op by op: every op of the step joined, the slowed ones first, the rest exact.
    const auto& ops = compare->ops_model()->rows();
    int64_t joined = 0;
    for (const auto& k : kinds) joined += k.ops;
    QCOMPARE(static_cast<int64_t>(ops.size()), joined);
    QVERIFY(ops.front().kind == traces::ALL_GATHER || ops.front().kind == traces::COMPUTE_FWD);
    QVERIFY(std::abs(ops.front().difference_s()) > 0);
    QCOMPARE(ops.back().difference_s(), 0.0);
    for (size_t i = 1; i < ops.size(); ++i) QVERIFY(std::abs(ops[i - 1].difference_s()) >= std::abs(ops[i].difference_s()));
    for (const char* figure : {"step time", "peak memory", "exposed communication", "MFU"}) {
      QVERIFY(compare->summary_text().contains(QString::fromLatin1(figure)));
    }
    // Timelines aligned: one time span from each trace's start.
    QCOMPARE(compare->predicted_view()->to_ns() - compare->predicted_view()->from_ns(),
             compare->measured_view()->to_ns() - compare->measured_view()->from_ns());
    QCOMPARE(compare->predicted_view()->from_ns(), compare->predicted_view()->timeline().begin_ns);
    // Both memory curves count the same thing: state and parameter/gradient buffers.
    QCOMPARE(compare->predicted_view()->memory_quantity(), MemoryQuantity::kStateAndBuffers);
    QCOMPARE(compare->measured_view()->memory_quantity(), MemoryQuantity::kStateAndBuffers);

    // A trace from before that count: no overlay of unlike quantities, and the summary says why.
    traces::Trace old = measured;
    for (auto& sample : *old.mutable_memory()) sample.set_state_and_buffers_bytes(0);
    const QString o = dir.filePath(QStringLiteral("old.pb"));
    traces::write_trace(old, o.toStdString());
    compare->open_files(p, o);
    QVERIFY(compared.wait(20000));
    QCOMPARE(compare->predicted_view()->memory_quantity(), MemoryQuantity::kAllocator);
    QVERIFY(compare->summary_text().contains(QStringLiteral("not overlaid")));

    compare->open_files(m, p);  // swapped: compare_traces' InputError in the dialog
    QTRY_VERIFY_WITH_TIMEOUT(window.last_error().contains(QStringLiteral("not a predicted one")), 20000);
    QCOMPARE(compare->ops_model()->rowCount(), 0);  // nothing of the earlier comparison stays
  }

  // Issue 51, Compare's usability: a measured trace of two steps whose clock starts 5 s later than the
  // prediction's. The measured timeline shows either step (the chooser); both views keep one time axis
  // (a zoom in one shows the same stretch of the step in the other, by offsets, not absolute times) and
  // one memory axis; a row of the op table outlines that op in both timelines and zooms both to it.
  void compare_selects_ops_and_steps_on_one_axis() {
    QTemporaryDir dir;
    const auto resolved = planner::resolve_scenario(scenarios::load_scenario("tiny-llama-4xcpu"));
    const traces::Trace predicted = sim::simulate_in_child(resolved, {}).trace;
    traces::Trace measured = predicted;
    measured.mutable_metadata()->set_source(traces::MEASURED);
    measured.clear_events();
    measured.clear_memory();
    const int64_t clock = 5'000'000'000, length = static_cast<int64_t>(predicted.summary().step_time_s() * 1.5e9);
    int64_t peak = 0;
    for (const auto& m : predicted.memory()) peak = std::max(peak, m.state_and_buffers_bytes());
    for (int step : {1, 2}) {
      const double slower = step == 1 ? 1.2 : 1.4;
      const int64_t at = clock + (step - 1) * length;
      for (const auto& e : predicted.events()) {
        traces::Event* copy = measured.add_events();
        *copy = e;
        copy->set_step(step);
        copy->set_start_ns(at + static_cast<int64_t>(static_cast<double>(e.start_ns()) * slower));
        copy->set_end_ns(at + static_cast<int64_t>(static_cast<double>(e.end_ns()) * slower));
      }
      for (const auto& m : predicted.memory()) {
        traces::MemorySample* copy = measured.add_memory();
        *copy = m;
        copy->set_time_ns(at + static_cast<int64_t>(static_cast<double>(m.time_ns()) * slower));
        copy->set_state_and_buffers_bytes(m.state_and_buffers_bytes() * (step == 2 ? 2 : 1));
      }
    }
    const QString p = dir.filePath(QStringLiteral("p.pb")), m = dir.filePath(QStringLiteral("m.pb"));
    traces::write_trace(predicted, p.toStdString());
    traces::write_trace(measured, m.toStdString());
    MainWindow window;
    window.resize(1100, 700);
    window.show();
    window.tabs()->setCurrentWidget(window.compare());
    CompareTab* compare = window.compare();
    QSignalSpy compared(compare, &CompareTab::compared);
    compare->open_files(p, m);
    QVERIFY(compared.wait(20000));
    const TimelineView* pv = compare->predicted_view();
    const TimelineView* mv = compare->measured_view();
    QCOMPARE(compare->step_box()->count(), 2);
    QCOMPARE(mv->timeline().step, 1);
    // The second step, through the chooser as a user picks it.
    compare->step_box()->setCurrentIndex(1);
    Q_EMIT compare->step_box()->activated(1);
    QCOMPARE(mv->timeline().step, 2);
    QVERIFY(mv->title().contains(QStringLiteral("step 2")));
    // One time axis that holds the longer (measured, 1.4x) step, one memory axis that holds the higher curve.
    const int64_t measured_length = mv->timeline().end_ns - mv->timeline().begin_ns;
    QVERIFY(measured_length > pv->timeline().end_ns - pv->timeline().begin_ns);
    QCOMPARE(pv->to_ns() - pv->from_ns(), measured_length);
    QCOMPARE(mv->to_ns() - mv->from_ns(), measured_length);
    QCOMPARE(pv->memory_top(), mv->memory_top());
    QCOMPARE(pv->memory_ticks(), mv->memory_ticks());
    QCOMPARE(mv->memory_top(), 2 * peak);
    // A zoom in the predicted view shows the same stretch of the measured step.
    auto* pw = const_cast<TimelineView*>(pv);
    const QPointF middle(110 + (pw->width() - 122) / 2.0, 40);
    QWheelEvent zoom(middle, pw->mapToGlobal(middle), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                     Qt::NoScrollPhase, false);
    QApplication::sendEvent(pw, &zoom);
    QVERIFY(pv->to_ns() - pv->from_ns() < measured_length);
    QCOMPARE(mv->from_ns() - mv->timeline().begin_ns, pv->from_ns() - pv->timeline().begin_ns);
    QCOMPARE(mv->to_ns() - mv->from_ns(), pv->to_ns() - pv->from_ns());
    // The op table's worst row, clicked: outlined in both timelines, each zoomed to it.
    QTableView* ops = compare->ops_table();
    const QModelIndex first = ops->model()->index(0, 0);
    QTest::mouseClick(ops->viewport(), Qt::LeftButton, {}, ops->visualRect(first).center());
    const uint64_t op = compare->ops_model()->rows().front().op_id;
    for (const TimelineView* view : {pv, mv}) {
      QCOMPARE(view->selected_op(), static_cast<int64_t>(op));
      const std::vector<int> outlined = view->selected_events();
      QVERIFY(!outlined.empty());
      for (int e : outlined) {
        const auto& event = (view == pv ? predicted : measured).events(e);
        QCOMPARE(event.op_id(), op);
        QVERIFY(view->from_ns() <= event.start_ns() && event.end_ns() <= view->to_ns());
      }
    }
  }

  // Issue 51's "a PyTorch profiler trace opens in Compare against a prediction of the same model": Llama 3
  // 8B on 8 H100s predicted, against a profiler trace of that model in the schema torch.profiler writes
  // (no public FSDP trace of a transformer was found; docs/IMPORT.md). Every collective and every unit's
  // forward and backward is joined to its Program op; the all-gathers made 1.5x as long read -33.3%, the
  // compute exact; the step 10% longer than predicted reads -9.1%; the summary says what was read.
  void a_pytorch_profiler_trace_opens_against_the_prediction() {
    QTemporaryDir dir;
    const traces::Trace predicted =
        sim::simulate_in_child(planner::resolve_scenario(scenarios::load_scenario("llama3-8b-8xh100")), {}).trace;
    const double step_us = predicted.summary().step_time_s() * 1.1e6;
    const QString p = dir.filePath(QStringLiteral("llama3-8b.pb")), m = dir.filePath(QStringLiteral("profile.json"));
    traces::write_trace(predicted, p.toStdString());
    {
      QFile file(m);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QByteArray::fromStdString(profiler_trace_of(predicted, 1.5, step_us)));
    }
    MainWindow window;
    window.show();
    CompareTab* compare = window.compare();
    QSignalSpy compared(compare, &CompareTab::compared);
    compare->open_files(p, m);
    QVERIFY2(compared.wait(30000), qPrintable(window.last_error()));
    const QString summary = compare->summary_text();
    QVERIFY2(summary.contains(QStringLiteral("read from a PyTorch profiler trace")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("step time:")) && summary.contains(QStringLiteral("<b>-9.1%</b>")), qPrintable(summary));
    QVERIFY(compare->summary_text().contains(QStringLiteral("llama3-8b-8xh100")));
    QVERIFY(window.last_error().isEmpty());
    int collectives = 0, unit_passes = 0;
    for (const traces::Event& e : predicted.events()) {
      if (!nccl_kernel(e.kind()).empty()) ++collectives;
      if ((e.kind() == traces::COMPUTE_FWD || e.kind() == traces::COMPUTE_BWD) && e.unit() >= 0) ++unit_passes;
    }
    QVERIFY(collectives > 60 && unit_passes > 60);
    int64_t joined = 0;
    for (const auto& k : compare->kinds_model()->rows()) {
      joined += k.ops;
      if (k.kind == traces::ALL_GATHER) QCOMPARE_LT(std::abs(k.relative_error() - (1 / 1.5 - 1)), 1e-3);
      if (k.kind == traces::COMPUTE_FWD || k.kind == traces::COMPUTE_BWD || k.kind == traces::REDUCE_SCATTER) {
        QCOMPARE_LT(std::abs(k.relative_error()), 1e-3);
      }
    }
    QCOMPARE(joined, static_cast<int64_t>(collectives + unit_passes));  // every op the trace can name, none guessed
    QCOMPARE(compare->ops_model()->rows().front().kind, traces::ALL_GATHER);  // the worst first
    // Both steps on the measured timeline's chooser; its memory curve is the profiler's.
    QCOMPARE(compare->step_box()->count(), 2);
    QCOMPARE(compare->measured_view()->timeline().step, 1);
    QVERIFY(!compare->measured_view()->timeline().lanes.empty());
  }

  // Issue 51: a prediction of one model against a run of another compared
  // into +145,806% errors. Refused, naming what differs (traces::comparability,
  // as `ragged compare`), unless "even of different runs" is ticked.
  void compare_refuses_traces_of_different_runs() {
    QTemporaryDir dir;
    const traces::Trace llama =
        sim::simulate_in_child(planner::resolve_scenario(scenarios::load_scenario("tiny-llama-4xcpu")), {}).trace;
    traces::Trace moe =
        sim::simulate_in_child(planner::resolve_scenario(scenarios::load_scenario("tiny-moe-4xcpu")), {}).trace;
    moe.mutable_metadata()->set_source(traces::MEASURED);
    moe.mutable_metadata()->set_device("cpu (host (OpenBLAS), MPI), 4 local ranks");
    const QString p = dir.filePath(QStringLiteral("llama.pb")), m = dir.filePath(QStringLiteral("moe.pb"));
    traces::write_trace(llama, p.toStdString());
    traces::write_trace(moe, m.toStdString());

    MainWindow window;
    window.show();
    CompareTab* compare = window.compare();
    compare->open_files(p, m);
    QTRY_VERIFY_WITH_TIMEOUT(window.last_error().contains(QStringLiteral("the traces are of different runs")), 20000);
    QVERIFY2(window.last_error().contains(QStringLiteral("model tiny-llama vs tiny-moe")), qPrintable(window.last_error()));
    QVERIFY2(window.last_error().contains(QStringLiteral("sequence length 128 vs 64")), qPrintable(window.last_error()));
    QCOMPARE(compare->ops_model()->rowCount(), 0);
    QCOMPARE(compare->kinds_model()->rowCount(), 0);

    // Ticked: compared anyway, the differences said above the figures.
    QSignalSpy compared(compare, &CompareTab::compared);
    auto* anyway = compare->findChild<QCheckBox*>();
    QVERIFY(anyway != nullptr);
    anyway->setChecked(true);
    compare->open_files(p, m);
    QVERIFY(compared.wait(20000));
    QVERIFY2(compare->summary_text().contains(QStringLiteral("warning: the traces are of different runs: model tiny-llama vs tiny-moe")),
             qPrintable(compare->summary_text()));
  }
};

QTEST_MAIN(CompareSessionTest)
#include "compare_session_test.moc"
