// A scripted session through the widgets: open a scenario or a config.json,
// change the GPU and node counts in the settings table, simulate, cancel,
// bad input shown as the CLI's errors, save and export, shortcuts, the
// window's state kept (compare_session_test.cpp drives the Compare tab).

#include <QAbstractButton>
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "gui/explore_tab.hpp"
#include "gui/main_window.hpp"
#include "gui/models/simulation_results_model.hpp"
#include "gui/sweep_tab.hpp"
#include "scenarios/scenario_rules.hpp"
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
};

QTEST_MAIN(SessionTest)
#include "session_test.moc"
