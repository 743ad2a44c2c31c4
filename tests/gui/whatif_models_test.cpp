// The What-if tab's models: its knobs written into a scenario's whatif and
// goodput blocks and read back, bad values as the scenario's InputError, and
// the figures of a real simulation with a slow GPU in a table checked by
// QAbstractItemModelTester, equal to the libraries' own results.

#include <QAbstractItemModelTester>
#include <QtTest>

#include <cstdio>

#include "common/errors.hpp"
#include "gui/models/whatif_figures_model.hpp"
#include "gui/models/whatif_settings.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/cluster_health.hpp"
#include "sim/simulation_child.hpp"

using namespace ragged;
using namespace ragged::gui;

class WhatIfModelsTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void settings_round_trip_through_a_scenario() {
    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    const WhatIfSettings healthy = whatif_settings_of(loaded.scenario);
    QCOMPARE(healthy.slow_gpus, 0);
    QCOMPARE(healthy.slow_links, 0);
    QCOMPARE(healthy.jitter, 0.0);
    QCOMPARE(healthy.interruptions_per_gpu_hour, 419.0 / (54.0 * 24.0 * 16384.0));  // the scenario's default
    // Nothing changed: the scenario as it was, nothing written.
    const auto same = apply_whatif_settings(loaded, healthy);
    QVERIFY(!same.written.has_whatif());
    QVERIFY(!same.written.goodput().has_interruptions_per_gpu_hour());

    WhatIfSettings s = healthy;
    s.slow_gpus = 2;
    s.slow_gpu_fraction = 0.25;
    s.slow_links = 1;
    s.slow_link_fraction = 0.4;
    s.jitter = 0.05;
    s.interruptions_per_gpu_hour = 1e-3;
    s.restart_minutes = 3;
    s.storage_gbytes_per_s_per_node = 10;
    s.storage_aggregate_tbytes_per_s = 0.5;
    s.async_checkpoint = true;
    s.train_tokens = 2e12;
    const auto changed = apply_whatif_settings(loaded, s);
    QVERIFY(whatif_settings_of(changed.scenario) == s);
    QCOMPARE(changed.written.whatif().slow_gpus().count(), 2);  // a count drawn by seed, as --slow-gpus 2:0.25
    QCOMPARE(changed.written.whatif().slow_links().fraction(), 0.4);
    QVERIFY(sim::has_whatif(changed.scenario));

    // Back to none: the blocks go, the healthy cluster again.
    WhatIfSettings none = s;
    none.slow_gpus = 0;
    none.slow_links = 0;
    none.jitter = 0;
    const auto cleared = apply_whatif_settings(changed, none);
    QVERIFY(!cleared.written.has_whatif());
    QVERIFY(!sim::has_whatif(cleared.scenario));
  }

  void bad_settings_are_the_scenarios_input_errors() {
    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    WhatIfSettings s = whatif_settings_of(loaded.scenario);
    s.slow_gpus = 9;  // of 8
    QVERIFY_THROWS_EXCEPTION(InputError, apply_whatif_settings(loaded, s));
    s = whatif_settings_of(loaded.scenario);
    s.slow_links = 1;
    s.slow_link_fraction = 1.5;
    QVERIFY_THROWS_EXCEPTION(InputError, apply_whatif_settings(loaded, s));
    s = whatif_settings_of(loaded.scenario);
    s.interruptions_per_gpu_hour = -1;
    QVERIFY_THROWS_EXCEPTION(InputError, apply_whatif_settings(loaded, s));
  }

  void figures_of_a_slow_gpu_in_the_table() {
    WhatIfFiguresModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), static_cast<int>(WhatIfFigure::kCount));
    QCOMPARE(model.columnCount(), 2);
    QCOMPARE(model.data(model.index(0, WhatIfFiguresModel::kValue)).toString(), QStringLiteral("-"));
    QVERIFY(!model.data(model.index(0, WhatIfFiguresModel::kValue), WhatIfFiguresModel::kValueRole).isValid());

    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    WhatIfSettings s = whatif_settings_of(loaded.scenario);
    s.slow_gpus = 1;
    const auto resolved = planner::resolve_scenario(apply_whatif_settings(loaded, s));
    const sim::SimulationResult result = sim::simulate_in_child(resolved, {});
    model.set_figures(whatif_figures(resolved, result.trace, &result.stats.whatif));

    const double step = result.trace.summary().step_time_s(), healthy = result.stats.whatif.healthy_step_seconds;
    const auto value = [&](WhatIfFigure f) {
      return model.data(model.index(static_cast<int>(f), WhatIfFiguresModel::kValue), WhatIfFiguresModel::kValueRole).toDouble();
    };
    std::printf("  slowdown %.4f (step %.4f s / healthy %.4f s)\n", value(WhatIfFigure::kSlowdown), step, healthy);
    QCOMPARE(value(WhatIfFigure::kStep), step);
    QCOMPARE(value(WhatIfFigure::kHealthyStep), healthy);
    QCOMPARE(value(WhatIfFigure::kSlowdown), step / healthy);
    // The slow GPU is the one the others waited for.
    const sim::ClusterHealth health(resolved.scenario().whatif(), 8, 1);
    QCOMPARE(value(WhatIfFigure::kCriticalRank), static_cast<double>(health.slow_gpus().front()));
    const planner::GoodputEstimate g =
        planner::estimate_goodput(resolved, step, result.trace.summary().tokens_per_s_per_gpu());
    QCOMPARE(value(WhatIfFigure::kGoodput), g.goodput);
    QCOMPARE(value(WhatIfFigure::kInterval), g.interval_s);
    QCOMPARE(model.data(model.index(static_cast<int>(WhatIfFigure::kDaysToTrain), WhatIfFiguresModel::kValue)).toString(),
             QStringLiteral("set the tokens to train"));
    model.clear();
    QVERIFY(!model.has_figures());
  }
};

QTEST_MAIN(WhatIfModelsTest)
#include "whatif_models_test.moc"
