// A scripted session through the What-if tab: the Explore scenario on a
// healthy cluster, then one slow GPU typed into its control (a slower step
// than the healthy one, a critical rank named), the goodput figures equal
// to what `ragged simulate FILE --goodput --json` prints for the same
// scenario, the goodput knobs, counts held to the cluster, a run cancelled.

#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdio>

#include "gui/explore_tab.hpp"
#include "gui/main_window.hpp"
#include "gui/models/scenario_file.hpp"
#include "gui/whatif_tab.hpp"

using namespace ragged;
using namespace ragged::gui;

namespace {

// Typed into the spin box named `name`, as a user would.
void type_count(WhatIfTab* tab, const char* name, int value) {
  auto* box = tab->findChild<QSpinBox*>(QString::fromLatin1(name));
  QVERIFY(box != nullptr);
  box->selectAll();
  QTest::keyClicks(box, QString::number(value));
  QTest::keyClick(box, Qt::Key_Return);
  QCOMPARE(box->value(), value);
}

// The window on llama3-8b-8xh100, the What-if tab looked at: simulated on a healthy cluster.
void show_whatif(MainWindow& window) {
  window.show();
  QVERIFY(window.explore()->open_scenario(QStringLiteral("llama3-8b-8xh100")));
  QTRY_VERIFY_WITH_TIMEOUT(window.explore()->resolved() != nullptr, 20000);
  window.tabs()->setCurrentIndex(MainWindow::kWhatIf);
  QTRY_VERIFY2_WITH_TIMEOUT(window.whatif()->figures_model()->has_figures(),
                            qPrintable(window.whatif()->state_text() + QStringLiteral(" / ") + window.whatif()->error_text()), 60000);
}

// `ragged simulate PATH --goodput --json`'s "goodput" object.
QJsonObject cli_goodput(const QString& path) {
  QProcess cli;
  cli.start(QStringLiteral(RAGGED_BINARY_DIR "/ragged"), {QStringLiteral("simulate"), path, QStringLiteral("--goodput"), QStringLiteral("--json")});
  if (!cli.waitForFinished(120000) || cli.exitCode() != 0) return {};
  return QJsonDocument::fromJson(cli.readAllStandardOutput()).object().value(QStringLiteral("goodput")).toObject();
}

void compare_close(double panel, double cli, const char* what) {
  std::printf("  %-32s panel %.9g, ragged simulate --goodput --json %.9g\n", what, panel, cli);
  QVERIFY2(std::abs(panel - cli) <= 1e-9 * std::max(1.0, std::abs(cli)), what);
}

}  // namespace

class WhatIfSessionTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("ragged-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("whatif-session-test"));
    QSettings().clear();
  }

  void a_slow_gpu_slows_the_step_and_goodput_matches_the_cli() {
    MainWindow window;
    show_whatif(window);
    if (QTest::currentTestFailed()) return;
    WhatIfTab* tab = window.whatif();
    WhatIfFiguresModel* figures = tab->figures_model();
    // Looked at: the healthy cluster is simulated, with nothing to compare.
    QCOMPARE(figures->value(WhatIfFigure::kHealthyStep), 0.0);
    QVERIFY(figures->value(WhatIfFigure::kStep) > 0);

    type_count(tab, "slow_gpus", 1);
    QVERIFY(!figures->has_figures());  // the healthy figures are stale: gone
    QTRY_VERIFY_WITH_TIMEOUT(figures->has_figures(), 120000);
    const double step = figures->value(WhatIfFigure::kStep), healthy = figures->value(WhatIfFigure::kHealthyStep);
    std::printf("  one GPU at 0.5 of 8: step %.4f s, healthy %.4f s (%.2fx; compute-bound: toward 2x)\n", step, healthy,
                step / healthy);
    QVERIFY(healthy > 0);
    QVERIFY(step > 1.2 * healthy);
    QVERIFY(figures->text(WhatIfFigure::kChanged).contains(QStringLiteral("1 slow GPU at 50%")));
    QVERIFY(figures->text(WhatIfFigure::kCriticalRank).startsWith(QStringLiteral("rank ")));
    QVERIFY(figures->text(WhatIfFigure::kCriticalRank).contains(QStringLiteral("at 50% of its compute rate")));
    QVERIFY(figures->text(WhatIfFigure::kWaitedOn).contains(QStringLiteral("exposed communication")));

    // The same scenario through the CLI: the same goodput, figure by figure.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("whatif.textproto"));
    QVERIFY(tab->current() != nullptr);
    save_scenario(*tab->current(), path.toStdString());
    const QJsonObject cli = cli_goodput(path);
    QVERIFY2(!cli.isEmpty(), "ragged simulate --goodput --json failed");
    const planner::GoodputEstimate& g = figures->figures().goodput;
    compare_close(g.goodput, cli[QStringLiteral("goodput")].toDouble(), "goodput");
    compare_close(g.job_mtbf_s, cli[QStringLiteral("job_mtbf_s")].toDouble(), "job MTBF, s");
    compare_close(g.checkpoint.write_s, cli[QStringLiteral("checkpoint_write_s")].toDouble(), "checkpoint write, s");
    compare_close(g.checkpoint.total_bytes, cli[QStringLiteral("checkpoint_bytes")].toDouble(), "checkpoint bytes");
    compare_close(g.interval_s, cli[QStringLiteral("interval_s")].toDouble(), "interval, s");
    compare_close(g.effective_tokens_per_s_per_gpu, cli[QStringLiteral("effective_tokens_per_s_per_gpu")].toDouble(),
                  "effective tokens/s per GPU");
    // The panel shows what it compared.
    QCOMPARE(figures->value(WhatIfFigure::kGoodput), g.goodput);
    QCOMPARE(figures->value(WhatIfFigure::kTokensPerGpu), g.effective_tokens_per_s_per_gpu);
  }

  void goodput_knobs_days_to_train_counts_and_cancel() {
    MainWindow window;
    show_whatif(window);
    if (QTest::currentTestFailed()) return;
    WhatIfTab* tab = window.whatif();
    WhatIfFiguresModel* figures = tab->figures_model();
    const double base_goodput = figures->value(WhatIfFigure::kGoodput);

    // A thousand times Llama 3's rate, and the tokens of a run: less goodput, and days to train.
    WhatIfSettings s = tab->settings();
    s.interruptions_per_gpu_hour *= 1000;
    s.train_tokens = 1e12;
    tab->set_settings(s);
    QTRY_VERIFY_WITH_TIMEOUT(figures->has_figures(), 60000);
    std::printf("  goodput %.4f at the default rate, %.4f at 1000x\n", base_goodput, figures->value(WhatIfFigure::kGoodput));
    QVERIFY(figures->value(WhatIfFigure::kGoodput) < base_goodput);
    const double days = figures->value(WhatIfFigure::kDaysToTrain);
    const double expected = 1e12 / (figures->value(WhatIfFigure::kTokensPerGpu) * 8) / 86400;
    std::printf("  days to train 1T tokens: %.3f (tokens / (effective tokens/s per GPU x 8 GPUs) = %.3f)\n", days, expected);
    QVERIFY(std::abs(days - expected) <= 1e-6 * expected);

    // More slow GPUs than the cluster has: the control stops at the cluster's 8
    // (the scenario's own error for 9 is in models_test).
    s.slow_gpus = 9;
    tab->set_settings(s);
    QCOMPARE(tab->settings().slow_gpus, 8);
    QVERIFY(tab->current() != nullptr);

    // Cancelled while it plans (8 GPUs simulate in well under the tests'
    // polling interval; killing a running job is models_test's
    // cancel_reports_every_job_cancelled): nothing is simulated or shown.
    s.slow_gpus = 2;
    tab->set_settings(s);
    QVERIFY(tab->error_text().isEmpty());
    tab->run();
    tab->cancel();
    QCOMPARE(tab->state_text(), QStringLiteral("cancelled"));
    QTest::qWait(1000);
    QVERIFY(!tab->jobs()->busy());
    QCOMPARE(tab->state_text(), QStringLiteral("cancelled"));
    QVERIFY(!figures->has_figures());
  }

  // A what-if the scenario refuses (pipeline stages): the error, and the tab
  // neither planning nor cancellable.
  void a_refused_what_if_says_why_and_stops() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("pp.textproto"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("model { catalog: \"llama3-8b\" }\n"
               "cluster { gpu { preset: \"h100\" } gpus_per_node: 8 nodes: 1 }\n"
               "training { mesh { pp: 2 } gradient_accumulation_steps: 4 activation_checkpointing: FULL }\n");
    file.close();
    MainWindow window;
    window.show();
    QVERIFY(window.explore()->open_scenario(path));
    QTRY_VERIFY_WITH_TIMEOUT(window.explore()->resolved() != nullptr, 20000);
    window.tabs()->setCurrentIndex(MainWindow::kWhatIf);
    WhatIfTab* tab = window.whatif();
    WhatIfSettings s = tab->settings();
    s.slow_gpus = 1;
    tab->set_settings(s);
    tab->run();
    QTRY_VERIFY_WITH_TIMEOUT(!tab->error_text().isEmpty(), 20000);
    QVERIFY2(tab->error_text().contains(QStringLiteral("training.mesh.pp")), qPrintable(tab->error_text()));
    QCOMPARE(tab->state_text(), QStringLiteral("not simulated: the error above"));
    QVERIFY(!tab->findChild<QPushButton*>(QStringLiteral("cancel"))->isEnabled());
    QVERIFY(!tab->figures_model()->has_figures());
  }
};

QTEST_MAIN(WhatIfSessionTest)
#include "whatif_session_test.moc"
