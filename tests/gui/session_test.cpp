// A scripted session through the widgets: open a scenario or a config.json,
// change the GPU and node counts in the settings table, simulate, cancel,
// bad input shown as the CLI's errors, save and export, shortcuts, compare
// two traces or run both, the window's state kept.

#include <QAbstractButton>
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>

#include "gui/compare_tab.hpp"
#include "gui/explore_tab.hpp"
#include "gui/main_window.hpp"
#include "gui/models/simulation_results_model.hpp"
#include "gui/sweep_tab.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/simulation_child.hpp"
#include "traces/trace_io.hpp"

using namespace ragged;
using namespace ragged::gui;

namespace {

bool all_finished(SimulationResultsModel* m) {
  return !m->rows().empty() && m->finished_rows() == static_cast<int>(m->rows().size());
}

QPushButton* button(QWidget* parent, const QString& text) {
  for (auto* b : parent->findChildren<QPushButton*>()) {
    if (b->text() == text) return b;
  }
  return nullptr;
}

// Types `text` into the settings table's value cell of `row`, as a user
// would: into the line edit, or into the combo box of a row with choices.
void type_setting(ExploreTab* explore, int row, const QString& text) {
  auto* view = explore->findChild<QTableView*>();
  const QModelIndex index = view->model()->index(row, ScenarioSettingsModel::kValue);
  view->setCurrentIndex(index);
  view->edit(index);
  QWidget* editor = nullptr;
  for (auto* e : view->viewport()->findChildren<QWidget*>()) {
    const bool kind = qobject_cast<QLineEdit*>(e) != nullptr || qobject_cast<QComboBox*>(e) != nullptr;
    if (kind && e->isVisible() && e->parentWidget() == view->viewport() && e->geometry().intersects(view->visualRect(index))) {
      editor = e;
    }
  }
  QVERIFY(editor != nullptr);
  if (auto* line = qobject_cast<QLineEdit*>(editor)) {
    line->selectAll();
    QTest::keyClicks(line, text);
    QTest::keyClick(line, Qt::Key_Return);
  } else {
    auto* combo = qobject_cast<QComboBox*>(editor);
    const int choice = combo->findText(text);
    QVERIFY(choice >= 0);
    combo->setCurrentIndex(choice);  // picked from the popup
    Q_EMIT combo->activated(choice);
  }
  QCoreApplication::processEvents();  // the delegate commits on the next turn of the loop
}

// What the settings table shows in the value cell of `row`.
QString shown(ExploreTab* explore, int row) {
  auto* view = explore->findChild<QTableView*>();
  return view->model()->index(row, ScenarioSettingsModel::kValue).data(Qt::DisplayRole).toString();
}

// `text` as the file `name` of `dir`; its path.
QString write_file(const QTemporaryDir& dir, const QString& name, const char* text) {
  const QString path = dir.filePath(name);
  QFile file(path);
  if (file.open(QIODevice::WriteOnly)) file.write(text);
  return path;
}

// What `ragged ARGS` says on stderr, less its "ragged: error: " prefix.
QString cli_error(const QStringList& args) {
  QProcess cli;
  cli.start(QStringLiteral(RAGGED_BINARY_DIR "/ragged"), args);
  if (!cli.waitForFinished(30000) || cli.exitCode() != 2) return QStringLiteral("ragged did not exit with 2");
  const QString err = QString::fromLocal8Bit(cli.readAllStandardError()).trimmed();
  const QString prefix = QStringLiteral("ragged: error: ");
  return err.startsWith(prefix) ? err.mid(prefix.size()) : err;
}

}  // namespace

class SessionTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("ragged-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("session-test"));
    QSettings().clear();
  }

  void open_change_gpus_run_and_cancel() {
    MainWindow window;
    window.show();
    ExploreTab* explore = window.explore();
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QTRY_VERIFY_WITH_TIMEOUT(explore->resolved() != nullptr, 20000);
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(explore->results_model()), 30000);  // simulated on opening

    QVERIFY(explore->units_model()->rowCount() > 0);  // the breakdown of a simulated strategy
    type_setting(explore, ScenarioSettingsModel::kGpus, QStringLiteral("64"));
    QCOMPARE(explore->settings_model()->settings().gpus, 64);
    // The 8-GPU results are stale: gone, with every chart drawn from them.
    QVERIFY(explore->results_model()->rows().empty());
    QCOMPARE(explore->units_model()->rowCount(), 0);
    QVERIFY(!explore->plan_text().contains(QStringLiteral("on 8 GPUs")));
    QTRY_VERIFY_WITH_TIMEOUT(explore->plan_text().contains(QStringLiteral("on 64 GPUs")), 20000);
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(explore->results_model()), 30000);
    const auto& rows = explore->results_model()->rows();
    QCOMPARE(rows.size(), size_t{6});
    for (const auto& row : rows) {
      QCOMPARE(row.gpus, 64);
      QCOMPARE(row.outcome.state, RunState::kDone);
      QCOMPARE(row.outcome.trace->metadata().world_size(), 64);
    }

    // Nodes set the GPUs (nodes of 8 here).
    type_setting(explore, ScenarioSettingsModel::kNodes, QStringLiteral("2"));
    QCOMPARE(explore->settings_model()->settings().gpus, 16);
    QTRY_VERIFY_WITH_TIMEOUT(explore->plan_text().contains(QStringLiteral("on 16 GPUs")), 20000);

    // Large enough that Cancel lands while they run.
    type_setting(explore, ScenarioSettingsModel::kGpus, QStringLiteral("10240"));
    QTRY_VERIFY_WITH_TIMEOUT(explore->plan_text().contains(QStringLiteral("on 10240 GPUs")), 20000);
    QTest::mouseClick(button(explore, QStringLiteral("Simulate every strategy")), Qt::LeftButton);
    QTest::mouseClick(button(explore, QStringLiteral("Cancel")), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(explore->results_model()), 30000);
    int cancelled = 0;
    for (const auto& row : explore->results_model()->rows()) cancelled += row.outcome.state == RunState::kCancelled;
    QVERIFY(cancelled > 0);
    // What the progress bar says counts them as cancelled, not simulated.
    const QString said = explore->findChild<QProgressBar*>()->format();
    QVERIFY2(said.contains(QStringLiteral("%1 cancelled").arg(cancelled)), qPrintable(said));
    QVERIFY2(!said.startsWith(QStringLiteral("6 of 6")), qPrintable(said));
  }

  void bad_input_is_an_error_not_a_crash() {
    MainWindow window;
    window.show();
    ExploreTab* explore = window.explore();
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QVERIFY(!explore->open_scenario(QStringLiteral("/no/such/scenario.textproto")));
    QVERIFY(window.last_error().contains(QStringLiteral("/no/such/scenario.textproto")));
    QTemporaryDir dir;
    const QString broken = write_file(dir, QStringLiteral("broken.textproto"), "name: \"broken\"\ntraining { micro_batch_size: -3 }\n");
    QVERIFY(!explore->open_scenario(broken));
    QVERIFY(window.last_error().startsWith(broken + QStringLiteral(":")));  // file:line:col, as the CLI says it
    QCOMPARE(window.last_error(), cli_error({QStringLiteral("scenario"), QStringLiteral("validate"), broken}));
    const QString broken_json =
        write_file(dir, QStringLiteral("broken.json"), "{\"name\": \"b\", \"training\": {\"micro_batch_size\": \"x\"}}");
    QVERIFY(!explore->open_scenario(broken_json));
    QCOMPARE(window.last_error(), cli_error({QStringLiteral("plan"), broken_json}));
    type_setting(explore, ScenarioSettingsModel::kGpus, QStringLiteral("many"));  // refused, and said so
    QCOMPARE(explore->settings_model()->settings().gpus, 8);
    QVERIFY(window.statusBar()->currentMessage().startsWith(QStringLiteral("GPUs: 'many'")));
    type_setting(explore, ScenarioSettingsModel::kGpus, QStringLiteral("12"));
    QVERIFY(explore->settings_error().contains(QStringLiteral("multiple of 8")));
    QVERIFY(explore->current() == nullptr);
    QVERIFY(!window.save_scenario_to(dir.filePath(QStringLiteral("x.textproto"))));
  }

  // Issue 51: the shard group kept showing 8 after the GPUs went to 64 (the
  // plan sharding over 64), and typing 8 was ignored, so an 8-GPU group on 64
  // GPUs could not be asked for.
  void shard_group_follows_the_gpus_until_typed() {
    MainWindow window;
    window.show();
    ExploreTab* explore = window.explore();
    for (auto* box : explore->findChildren<QCheckBox*>()) box->setChecked(false);  // plans only, no simulations
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QCOMPARE(shown(explore, ScenarioSettingsModel::kShardGroup), QStringLiteral("8"));

    // Defaulted: it follows the GPUs, showing what the plan uses.
    type_setting(explore, ScenarioSettingsModel::kGpus, QStringLiteral("64"));
    QVERIFY(explore->current() != nullptr);
    QCOMPARE(explore->current()->scenario.training().shard_group_size(), 64);
    QCOMPARE(shown(explore, ScenarioSettingsModel::kShardGroup), QStringLiteral("64"));
    QTRY_VERIFY_WITH_TIMEOUT(explore->plan_text().contains(QStringLiteral("on 64 GPUs (shard group 64)")), 20000);

    // Typed: applied (8 ranks x 8 replicas) and kept when the GPUs change.
    type_setting(explore, ScenarioSettingsModel::kShardGroup, QStringLiteral("8"));
    QVERIFY(explore->current() != nullptr);
    QCOMPARE(explore->current()->scenario.training().shard_group_size(), 8);
    QCOMPARE(explore->current()->scenario.training().replicate_group_size(), 8);
    QTRY_VERIFY_WITH_TIMEOUT(explore->plan_text().contains(QStringLiteral("on 64 GPUs (shard group 8)")), 20000);
    type_setting(explore, ScenarioSettingsModel::kGpus, QStringLiteral("128"));
    QCOMPARE(explore->current()->scenario.training().shard_group_size(), 8);
    QCOMPARE(shown(explore, ScenarioSettingsModel::kShardGroup), QStringLiteral("8"));

    // One that does not divide the GPUs: an error naming the fix, nothing silently dropped.
    type_setting(explore, ScenarioSettingsModel::kShardGroup, QStringLiteral("6"));
    QVERIFY(explore->current() == nullptr);
    QVERIFY2(explore->settings_error().contains(QStringLiteral("shard group 6: it must divide the 128 GPUs; use 4 or 8")),
             qPrintable(explore->settings_error()));
    QCOMPARE(shown(explore, ScenarioSettingsModel::kShardGroup), QStringLiteral("6"));

    // auto gives it back to the scenario: every GPU again, and following them.
    type_setting(explore, ScenarioSettingsModel::kShardGroup, QStringLiteral("auto"));
    QVERIFY(explore->current() != nullptr);
    QVERIFY(explore->settings_error().isEmpty());
    QCOMPARE(explore->current()->scenario.training().shard_group_size(), 128);
    QCOMPARE(shown(explore, ScenarioSettingsModel::kShardGroup), QStringLiteral("128"));
  }

  // Issue 51: before any sweep the Sweep tab said "0 of 0 simulated" instead of what to do.
  void sweep_says_what_to_do_until_it_runs() {
    MainWindow window;
    window.show();
    SweepTab* sweep = window.sweep();
    QVERIFY2(sweep->status_text().contains(QStringLiteral("Open a scenario in Explore")), qPrintable(sweep->status_text()));
    for (auto* box : window.explore()->findChildren<QCheckBox*>()) box->setChecked(false);
    QVERIFY(window.explore()->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QTRY_VERIFY_WITH_TIMEOUT(window.explore()->resolved() != nullptr, 20000);
    QTest::qWait(200);  // the dropped (empty) sweep's end is posted
    const QString said = sweep->status_text();
    QVERIFY2(!said.contains(QStringLiteral("0 of 0")), qPrintable(said));
    QVERIFY2(said.contains(QStringLiteral("llama3-8b-8xh100: press Sweep 8")), qPrintable(said));
    QVERIFY2(said.contains(QStringLiteral("click a point")), qPrintable(said));
    sweep->run({8});
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(sweep->results_model()), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(sweep->status_text().startsWith(QStringLiteral("6 of 6 simulated")), 5000);
  }

  // Issue 51: the Sweep tab keeps a global batch as ragged simulate --sweep-global-batch does: at 8 and 32
  // GPUs every row trains 512Ki tokens a step; 64 GPUs (2 x 8,192 tokens each) cannot and is left out, named.
  void sweep_can_keep_the_global_batch() {
    MainWindow window;
    window.show();
    for (auto* box : window.explore()->findChildren<QCheckBox*>()) box->setChecked(false);
    QVERIFY(window.explore()->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QTRY_VERIFY_WITH_TIMEOUT(window.explore()->resolved() != nullptr, 20000);
    SweepTab* sweep = window.sweep();
    QCOMPARE(sweep->batch_tokens_edit()->text(), QStringLiteral("131072"));  // the scenario's: 8 x 2 x 8,192
    QVERIFY(!sweep->batch_tokens_edit()->isEnabled());
    QTest::mouseClick(sweep->keep_batch_box(), Qt::LeftButton, {}, QPoint(5, sweep->keep_batch_box()->height() / 2));
    QVERIFY(sweep->keep_batch_box()->isChecked());
    QVERIFY(sweep->batch_tokens_edit()->isEnabled());
    sweep->batch_tokens_edit()->selectAll();
    QTest::keyClicks(sweep->batch_tokens_edit(), QStringLiteral("512Ki"));
    sweep->run({8, 32, 64});
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(sweep->results_model()), 60000);
    QCOMPARE(sweep->results_model()->rows().size(), size_t{12});
    for (const auto& row : sweep->results_model()->rows()) {
      QCOMPARE(row.outcome.state, RunState::kDone);
      const traces::Summary& s = *row.summary();
      const double tokens = s.tokens_per_s_per_gpu() * s.step_time_s() * static_cast<double>(row.gpus);
      QVERIFY2(std::abs(tokens - 524288) < 1, qPrintable(QStringLiteral("%1 GPUs: %2 tokens").arg(row.gpus).arg(tokens)));
    }
    QTRY_VERIFY_WITH_TIMEOUT(sweep->status_text().contains(QStringLiteral("at 64 GPUs")), 5000);
    // Unticked, the batch grows with the GPUs again.
    sweep->keep_batch_box()->setChecked(false);
    sweep->run({32});
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(sweep->results_model()), 60000);
    const traces::Summary& grown = *sweep->results_model()->rows().front().summary();
    QVERIFY(std::abs(grown.tokens_per_s_per_gpu() * grown.step_time_s() * 32 - 32 * 2 * 8192) < 1);
  }

  void save_export_and_keep_the_window_state() {
    QTemporaryDir dir;
    {
      MainWindow window;
      window.show();
      ExploreTab* explore = window.explore();
      QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
      type_setting(explore, ScenarioSettingsModel::kGpus, QStringLiteral("32"));
      type_setting(explore, ScenarioSettingsModel::kStrategy, QStringLiteral("fsdp2"));
      const QString text = dir.filePath(QStringLiteral("saved.textproto"));
      const QString json = dir.filePath(QStringLiteral("saved.json"));
      QVERIFY(window.save_scenario_to(text));
      QVERIFY(window.save_scenario_to(json));
      for (const QString& path : {text, json}) {
        const auto loaded = scenarios::load_scenario(path.toStdString());  // the CLI reads it back
        QCOMPARE(scenarios::total_gpus(loaded.scenario), 32);
        QCOMPARE(loaded.scenario.training().strategy(), scenarios::FSDP2);
      }
      QVERIFY(explore->open_scenario(json));  // and so does the window
      QCOMPARE(explore->settings_model()->settings().gpus, 32);
      QTRY_VERIFY_WITH_TIMEOUT(all_finished(explore->results_model()), 30000);
      QVERIFY(window.export_current(dir.filePath(QStringLiteral("explore.png"))).isEmpty());
      QVERIFY(window.export_current(dir.filePath(QStringLiteral("explore.svg"))).isEmpty());
      QVERIFY(QFileInfo(dir.filePath(QStringLiteral("explore.png"))).size() > 1000);
      QVERIFY(QFileInfo(dir.filePath(QStringLiteral("explore-5.svg"))).size() > 1000);  // one file per chart
      QVERIFY(!window.export_current(dir.filePath(QStringLiteral("explore.bmp"))).isEmpty());
      // Every other tab's views export too, as PNG and SVG.
      for (int tab : {MainWindow::kLayout, MainWindow::kTimeline, MainWindow::kSweep, MainWindow::kCompare}) {
        window.tabs()->setCurrentIndex(tab);
        for (const QString& suffix : {QStringLiteral("png"), QStringLiteral("svg")}) {
          const QString file = dir.filePath(QStringLiteral("tab%1.%2").arg(tab).arg(suffix));
          QCOMPARE(window.export_current(file), QString());
          QVERIFY(QFileInfo(file).size() > 500);
        }
      }
      window.tabs()->setCurrentIndex(MainWindow::kSweep);
      window.close();
    }
    MainWindow again;
    QCOMPARE(again.tabs()->currentIndex(), static_cast<int>(MainWindow::kSweep));
    // The scenario comes back as it was left: 32 GPUs under fsdp2.
    QVERIFY(again.reopen_last_scenario());
    QCOMPARE(again.explore()->settings_model()->settings().gpus, 32);
    QCOMPARE(again.explore()->settings_model()->settings().strategy, scenarios::FSDP2);
  }

  void sweep_then_open_a_point_in_explore() {
    MainWindow window;
    window.show();
    QVERIFY(window.explore()->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    QTRY_VERIFY_WITH_TIMEOUT(window.explore()->resolved() != nullptr, 20000);
    SweepTab* sweep = window.sweep();
    sweep->run({8, 64, 512});
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(sweep->results_model()), 60000);
    QCOMPARE(sweep->results_model()->rows().size(), size_t{18});
    for (const auto& row : sweep->results_model()->rows()) {
      QCOMPARE(row.outcome.state, RunState::kDone);
      QCOMPARE(row.outcome.trace->metadata().world_size(), row.gpus);
    }
    // What a click on the fsdp2 line at 512 GPUs sends.
    Q_EMIT sweep->open_configuration(512, QStringLiteral("fsdp2"));
    QCOMPARE(window.tabs()->currentIndex(), static_cast<int>(MainWindow::kExplore));
    QCOMPARE(window.explore()->settings_model()->settings().gpus, 512);
    QCOMPARE(window.explore()->settings_model()->settings().strategy, scenarios::FSDP2);
  }

  void a_config_json_opens_in_explore() {
    MainWindow window;
    window.show();
    ExploreTab* explore = window.explore();
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-8b-8xh100")));
    const QString config = QStringLiteral(RAGGED_SOURCE_DIR "/tests/models/data/llama/config.json");
    QVERIFY(explore->open_model(config));
    QCOMPARE(explore->settings_model()->settings().model, config.toStdString());
    QCOMPARE(explore->settings_model()->settings().gpus, 8);  // the cluster it was on
    QTRY_VERIFY_WITH_TIMEOUT(explore->plan_text().contains(QStringLiteral("on 8 GPUs")), 20000);
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(explore->results_model()), 60000);
    for (const auto& row : explore->results_model()->rows()) QCOMPARE(row.outcome.state, RunState::kDone);
    QVERIFY(!explore->open_model(QStringLiteral("/no/such/config.json")));
    QVERIFY(window.last_error().contains(QStringLiteral("/no/such/config.json")));
  }

  void shortcuts_run_cancel_and_switch_tabs() {
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    QStringList shortcuts;
    for (const QAction* action : window.findChildren<QAction*>()) shortcuts << action->shortcut().toString();
    for (const QKeySequence& key : {QKeySequence(QKeySequence::Open), QKeySequence(QKeySequence::Save),
                                   QKeySequence(QStringLiteral("Ctrl+R")), QKeySequence(Qt::Key_Escape),
                                   QKeySequence(QStringLiteral("Ctrl+E")), QKeySequence(QStringLiteral("Ctrl+T"))}) {
      QVERIFY2(shortcuts.contains(key.toString()), qPrintable(key.toString()));
    }
    ExploreTab* explore = window.explore();
    window.tabs()->setCurrentIndex(MainWindow::kExplore);  // on Sweep, Ctrl+R sweeps
    for (auto* box : explore->findChildren<QCheckBox*>()) box->setChecked(false);  // no run on opening
    QVERIFY(explore->open_scenario(QStringLiteral("llama3-70b-10240xh100")));
    QTRY_VERIFY_WITH_TIMEOUT(explore->resolved() != nullptr, 20000);
    QVERIFY(explore->results_model()->rows().empty());
    QTest::keyClick(&window, Qt::Key_R, Qt::ControlModifier);  // run
    QCOMPARE(explore->results_model()->rows().size(), size_t{6});
    QVERIFY(explore->jobs()->busy());
    QTest::keyClick(&window, Qt::Key_Escape);  // cancel
    QTRY_VERIFY_WITH_TIMEOUT(all_finished(explore->results_model()), 30000);
    int cancelled = 0;
    for (const auto& row : explore->results_model()->rows()) cancelled += row.outcome.state == RunState::kCancelled;
    QVERIFY(cancelled > 0);
    QTest::keyClick(&window, Qt::Key_3, Qt::ControlModifier);
    QCOMPARE(window.tabs()->currentIndex(), static_cast<int>(MainWindow::kTimeline));
    QTest::keyClick(&window, Qt::Key_5, Qt::ControlModifier);
    QCOMPARE(window.tabs()->currentIndex(), static_cast<int>(MainWindow::kCompare));
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

QTEST_MAIN(SessionTest)
#include "session_test.moc"
