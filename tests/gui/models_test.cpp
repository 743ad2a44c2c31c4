// The dashboard's models with real scenarios: QAbstractItemModelTester on
// every item model, settings written back into scenarios, plan summaries,
// background simulations (done, cancelled, stale results dropped).

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

#include "common/errors.hpp"
#include "gui/models/error_cells.hpp"
#include "gui/models/kind_error_model.hpp"
#include "gui/models/memory_breakdown_model.hpp"
#include "gui/models/op_error_model.hpp"
#include "gui/models/plan_summary.hpp"
#include "gui/models/scenario_settings_model.hpp"
#include "gui/models/simulation_jobs.hpp"
#include "gui/models/simulation_results_model.hpp"
#include "gui/models/unit_breakdown_model.hpp"
#include "scenarios/scenario_rules.hpp"
#include "sim/simulation_child.hpp"
#include "traces/metrics.hpp"

using namespace ragged;
using namespace ragged::gui;

namespace {

planner::ResolvedScenario resolved(const char* name) { return planner::resolve_scenario(scenarios::load_scenario(name)); }

traces::Trace simulated(const char* name) { return sim::simulate_in_child(resolved(name), {}).trace; }

}  // namespace

class ModelsTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void settings_round_trip_through_a_scenario() {
    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    ScenarioSettings s = settings_of(loaded.scenario);
    QCOMPARE(s.gpus, 8);
    QCOMPARE(s.model, std::string("llama3-8b"));
    QCOMPARE(apply_settings(loaded, s).scenario.SerializeAsString(), loaded.scenario.SerializeAsString());

    s.gpus = 64;
    s.strategy = scenarios::FSDP2;
    s.checkpointing = scenarios::FULL;
    s.micro_batch = 2;
    const auto changed = apply_settings(loaded, s);
    QCOMPARE(scenarios::total_gpus(changed.scenario), 64);
    QCOMPARE(changed.scenario.cluster().nodes(), 8);
    QCOMPARE(changed.scenario.training().shard_group_size(), 64);  // sharded over every GPU, as before
    QCOMPARE(changed.scenario.training().strategy(), scenarios::FSDP2);
    QCOMPARE(settings_of(changed.scenario).checkpointing, scenarios::FULL);
    QCOMPARE(changed.scenario.training().micro_batch_size(), 2);

    s.shard_group = 16;  // HSDP: 4 replicas
    s.shard_group_written = true;
    const auto hsdp = apply_settings(loaded, s);
    QCOMPARE(hsdp.scenario.training().shard_group_size(), 16);
    QCOMPARE(hsdp.scenario.training().replicate_group_size(), 4);
  }

  // Each knob of the table lands in the scenario field the CLI reads.
  void every_knob_is_written_into_the_scenario() {
    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    ScenarioSettings s = settings_of(loaded.scenario);
    s.gpu_preset = "h800";
    s.gpus = 32;
    s.gpus_per_node = 4;
    s.nics_per_node = 4;
    s.nic_gbits_per_s = 200;
    s.granularity = "rows:8";
    s.sequence_length = 2048;
    s.prefetch_depth = 2;
    s.optimizer = "muon";
    const scenarios::Scenario out = apply_settings(loaded, s).scenario;
    QCOMPARE(out.cluster().gpu().preset(), std::string("h800"));
    QCOMPARE(out.cluster().gpus_per_node(), 4);
    QCOMPARE(out.cluster().nodes(), 8);
    QCOMPARE(out.cluster().nics().per_node(), 4);
    QCOMPARE(out.cluster().nics().bandwidth_gbits_per_s(), 200.0);
    QCOMPARE(out.training().granularity().default_spec().kind(), scenarios::ROWS);
    QCOMPARE(out.training().granularity().default_spec().rows(), 8);
    QCOMPARE(out.training().sequence_length(), 2048);
    QCOMPARE(out.training().prefetch_depth(), 2);
    QVERIFY(out.training().optimizer().has_muon());
    ScenarioSettings expected = s;
    expected.shard_group = 32;  // sharded over every GPU before, so still
    QVERIFY(settings_of(out) == expected);  // read back, the same settings
    ScenarioSettings adam8bit = settings_of(loaded.scenario);
    adam8bit.optimizer = "adam8bit";  // brings its block granularity
    QCOMPARE(apply_settings(loaded, adam8bit).scenario.training().granularity().default_spec().kind(), scenarios::BLOCK);
  }

  // The mesh knobs write training.mesh as --tp/--cp/--ep do: the shard group
  // follows what tp and cp leave.
  void mesh_knobs_write_the_mesh() {
    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    ScenarioSettings s = settings_of(loaded.scenario);
    QCOMPARE(s.tp, 1);
    s.tp = 2;
    const scenarios::Scenario tp = apply_settings(loaded, s).scenario;
    QCOMPARE(tp.training().mesh().tp(), 2);
    QCOMPARE(tp.training().shard_group_size(), 4);
    QCOMPARE(settings_of(tp).shard_group, 4);
    ScenarioSettings too_many = settings_of(loaded.scenario);
    too_many.tp = 3;
    QVERIFY_THROWS_EXCEPTION(InputError, apply_settings(loaded, too_many));
    ScenarioSettingsModel model;
    model.set_settings(settings_of(loaded.scenario));
    QVERIFY(model.set_value(ScenarioSettingsModel::kCp, QStringLiteral("2")));
    QCOMPARE(model.settings().cp, 2);
    QVERIFY(!model.set_value(ScenarioSettingsModel::kEp, QStringLiteral("0")));
  }

  // The pp knob writes training.mesh.pp as --pp does (the shard group follows
  // what the stages leave); a pp that does not divide the GPUs is the CLI's
  // error naming the field.
  void the_pp_knob_writes_the_stages() {
    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    ScenarioSettingsModel model;
    QAbstractItemModelTester tester(&model);
    model.set_settings(settings_of(loaded.scenario));
    QCOMPARE(model.index(ScenarioSettingsModel::kPp, ScenarioSettingsModel::kValue).data().toString(),
             QStringLiteral("1"));
    QVERIFY(!model.set_value(ScenarioSettingsModel::kPp, QStringLiteral("0")));
    QVERIFY(model.set_value(ScenarioSettingsModel::kPp, QStringLiteral("2")));
    const scenarios::Scenario staged = apply_settings(loaded, model.settings()).scenario;
    QCOMPARE(staged.training().mesh().pp(), 2);
    QCOMPARE(staged.training().shard_group_size(), 4);
    QCOMPARE(settings_of(staged).pp, 2);
    // Interleaved stages need the micro-batches in rounds of pp: the
    // accumulation knob gives them, and back to one stage drops the block.
    QCOMPARE(model.index(ScenarioSettingsModel::kSchedule, ScenarioSettingsModel::kValue).data().toString(),
             QStringLiteral("1f1b"));
    QVERIFY(!model.set_value(ScenarioSettingsModel::kSchedule, QStringLiteral("zigzag")));
    QVERIFY(model.set_value(ScenarioSettingsModel::kSchedule, QStringLiteral("interleaved")));
    QVERIFY(model.set_value(ScenarioSettingsModel::kAccumulation, QStringLiteral("4")));
    const scenarios::Scenario interleaved = apply_settings(loaded, model.settings()).scenario;
    QCOMPARE(interleaved.training().pipeline().schedule(), scenarios::INTERLEAVED_1F1B);
    QCOMPARE(interleaved.training().pipeline().virtual_stages(), 2);
    QCOMPARE(interleaved.training().pipeline().micro_batches(), 4);
    QCOMPARE(settings_of(interleaved).schedule, scenarios::INTERLEAVED_1F1B);
    QCOMPARE(settings_of(interleaved).accumulation, 4);
    ScenarioSettings one = settings_of(interleaved);
    one.pp = 1;
    one.schedule = scenarios::ONE_F_ONE_B;
    const auto loaded_interleaved = apply_settings(loaded, model.settings());
    const scenarios::Scenario unstaged = apply_settings(loaded_interleaved, one).scenario;
    QCOMPARE(unstaged.training().mesh().pp(), 1);
    QVERIFY(!unstaged.training().has_pipeline());
    ScenarioSettings no_stages = settings_of(loaded.scenario);
    no_stages.schedule = scenarios::GPIPE;
    try {
      apply_settings(loaded, no_stages);
      QFAIL("a schedule without stages");
    } catch (const InputError& e) {
      QVERIFY2(std::string(e.what()).find("set pp above 1") != std::string::npos, e.what());
    }
    ScenarioSettings three = settings_of(loaded.scenario);
    three.pp = 3;
    try {
      apply_settings(loaded, three);
      QFAIL("3 stages cannot split 8 GPUs");
    } catch (const InputError& e) {
      QVERIFY2(std::string(e.what()).find("training.mesh.pp") != std::string::npos, e.what());
    }
  }

  // The experts' own checkpointing: "block" leaves training.experts.checkpointing
  // unset (the block's mode), a mode writes it, and the plan of a mixture of
  // experts under ep takes it (its experts' peak falls with their recompute).
  void the_experts_checkpointing_knob_writes_the_experts_mode() {
    const auto loaded = scenarios::load_scenario("tiny-moe-4xcpu");
    ScenarioSettingsModel model;
    QAbstractItemModelTester tester(&model);
    model.set_settings(settings_of(loaded.scenario));
    const QModelIndex cell = model.index(ScenarioSettingsModel::kExpertsCheckpointing, ScenarioSettingsModel::kValue);
    QCOMPARE(cell.data(Qt::DisplayRole).toString(), QStringLiteral("block"));
    QVERIFY(cell.data(ScenarioSettingsModel::kChoicesRole).toStringList().contains(QStringLiteral("full")));
    QVERIFY(model.set_value(ScenarioSettingsModel::kEp, QStringLiteral("2")));
    QVERIFY(model.set_value(ScenarioSettingsModel::kExpertsCheckpointing, QStringLiteral("full")));
    QVERIFY(!model.set_value(ScenarioSettingsModel::kExpertsCheckpointing, QStringLiteral("most")));
    QCOMPARE(model.settings().experts_checkpointing, scenarios::FULL);
    const auto recomputed = apply_settings(loaded, model.settings());
    QCOMPARE(recomputed.scenario.training().experts().checkpointing(), scenarios::FULL);
    QCOMPARE(recomputed.scenario.training().mesh().ep(), 2);
    QCOMPARE(settings_of(recomputed.scenario).experts_checkpointing, scenarios::FULL);
    QVERIFY(model.set_value(ScenarioSettingsModel::kExpertsCheckpointing, QStringLiteral("block")));
    const auto kept = apply_settings(loaded, model.settings());
    QCOMPARE(kept.scenario.training().experts().checkpointing(), scenarios::CHECKPOINTING_UNSPECIFIED);
    const auto peak = [](const scenarios::LoadedScenario& s) {
      return sim::simulate_summary_in_child(planner::resolve_scenario(s)).summary.peak_allocated_bytes();
    };
    QVERIFY(peak(recomputed) < peak(kept));
  }

  // Megatron-Core's overlapped expert all-to-alls: a knob of the Explore
  // table, written into the scenario; where the scenario cannot run them the
  // CLI's error names the field.
  void the_experts_overlap_knob_writes_the_overlap_or_says_why_not() {
    const auto loaded = scenarios::load_scenario(
        std::string(RAGGED_SOURCE_DIR) +
        "/validation/scenarios/modelzoo-h100-qwen3-235b-tp2-ep32-pp8-vpp4-dp16-256g.textproto");
    ScenarioSettingsModel model;
    QAbstractItemModelTester tester(&model);
    model.set_settings(settings_of(loaded.scenario));
    const QModelIndex cell = model.index(ScenarioSettingsModel::kExpertsOverlap, ScenarioSettingsModel::kValue);
    QCOMPARE(cell.data(Qt::DisplayRole).toString(), QStringLiteral("off"));
    QCOMPARE(cell.data(ScenarioSettingsModel::kChoicesRole).toStringList(), (QStringList{"off", "on"}));
    QVERIFY(!model.set_value(ScenarioSettingsModel::kExpertsOverlap, QStringLiteral("maybe")));
    QVERIFY(model.set_value(ScenarioSettingsModel::kExpertsOverlap, QStringLiteral("on")));
    const auto overlapped = apply_settings(loaded, model.settings());
    QVERIFY(overlapped.scenario.training().experts().overlap_all_to_all());
    QVERIFY(settings_of(overlapped.scenario).experts_overlap);
    const auto fsdp = scenarios::load_scenario("tiny-moe-4xcpu");
    ScenarioSettings on = settings_of(fsdp.scenario);
    on.experts_overlap = true;
    try {
      apply_settings(fsdp, on);
      QFAIL("an FSDP scenario cannot overlap Megatron's way");
    } catch (const InputError& e) {
      QVERIFY2(std::string(e.what()).find("training.experts.overlap_all_to_all") != std::string::npos, e.what());
    }
  }

  // Issue 51: a shard group left to the scenario follows the GPUs in the
  // table; one typed is applied, even the value shown, and kept.
  void a_typed_shard_group_is_applied_and_kept() {
    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    ScenarioSettingsModel model;
    QAbstractItemModelTester tester(&model);
    model.set_settings(settings_of(loaded.scenario));
    QVERIFY(model.set_value(ScenarioSettingsModel::kGpus, QStringLiteral("64")));
    auto applied = apply_settings(loaded, model.settings());
    QCOMPARE(applied.scenario.training().shard_group_size(), 64);
    model.follow(settings_of(applied.scenario));
    QCOMPARE(model.settings().shard_group, 64);  // shown as the plan uses it
    QSignalSpy changed(&model, &ScenarioSettingsModel::settings_changed);
    QVERIFY(model.set_value(ScenarioSettingsModel::kShardGroup, QStringLiteral("8")));
    QCOMPARE(changed.count(), 1);
    applied = apply_settings(loaded, model.settings());
    QCOMPARE(applied.scenario.training().shard_group_size(), 8);
    QCOMPARE(applied.scenario.training().replicate_group_size(), 8);
    // 8 on the scenario's own 8 GPUs is an edit too: it stays 8 on 64 GPUs.
    model.set_settings(settings_of(loaded.scenario));
    QVERIFY(model.set_value(ScenarioSettingsModel::kShardGroup, QStringLiteral("8")));
    QCOMPARE(changed.count(), 2);
    QVERIFY(model.set_value(ScenarioSettingsModel::kGpus, QStringLiteral("64")));
    applied = apply_settings(loaded, model.settings());
    QCOMPARE(applied.scenario.training().shard_group_size(), 8);
    model.follow(settings_of(applied.scenario));
    QCOMPARE(model.settings().shard_group, 8);
    // Not a divisor: the error names the ones nearby.
    QVERIFY(model.set_value(ScenarioSettingsModel::kShardGroup, QStringLiteral("12")));
    try {
      apply_settings(loaded, model.settings());
      QFAIL("a shard group of 12 on 64 GPUs was accepted");
    } catch (const InputError& e) {
      QCOMPARE(QString::fromUtf8(e.what()),
               QStringLiteral("shard group 12: it must divide the 64 GPUs; use 8 or 16, or auto for the scenario's own"));
    }
    // auto: back to the scenario's (every GPU).
    QVERIFY(model.set_value(ScenarioSettingsModel::kShardGroup, QStringLiteral("auto")));
    QVERIFY(!model.settings().shard_group_written);
    QCOMPARE(apply_settings(loaded, model.settings()).scenario.training().shard_group_size(), 64);
  }

  void bad_settings_are_input_errors_with_the_cli_wording() {
    const auto loaded = scenarios::load_scenario("llama3-8b-8xh100");
    ScenarioSettings s = settings_of(loaded.scenario);
    s.gpus = 12;
    QVERIFY_THROWS_EXCEPTION(InputError, apply_settings(loaded, s));
    s = settings_of(loaded.scenario);
    s.granularity = "rows:zero";
    QVERIFY_THROWS_EXCEPTION(InputError, apply_settings(loaded, s));
    s = settings_of(loaded.scenario);
    s.model = "no-such-model";
    QVERIFY_THROWS_EXCEPTION(InputError, planner::resolve_scenario(apply_settings(loaded, s)));
  }

  void a_model_picked_in_the_window_catalog_or_config_json() {
    const auto catalog = scenario_for_model("llama3-70b", "h100", 64);
    QCOMPARE(scenarios::total_gpus(catalog.scenario), 64);
    QCOMPARE(catalog.scenario.cluster().nodes(), 8);
    QCOMPARE(planner::resolve_scenario(catalog).model.name, std::string("llama3-70b"));
    const std::string config = RAGGED_SOURCE_DIR "/tests/models/data/llama/config.json";
    const auto hf = scenario_for_model(config, "h800", 4);
    QCOMPARE(hf.scenario.cluster().gpus_per_node(), 4);
    QVERIFY(planner::resolve_scenario(hf).model.params() > 0);
    // The model row accepts a config.json path over a shipped scenario.
    const auto shipped = scenarios::load_scenario("llama3-8b-8xh100");
    ScenarioSettings s = settings_of(shipped.scenario);
    s.model = config;
    QCOMPARE(apply_settings(shipped, s).scenario.model().hf_config(), config);
    QVERIFY_THROWS_EXCEPTION(InputError, scenario_for_model("llama3-70b", "h100", 12));
  }

  void settings_model_edits_and_refuses() {
    ScenarioSettingsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.set_settings(settings_of(scenarios::load_scenario("llama3-8b-8xh100").scenario));
    QSignalSpy changed(&model, &ScenarioSettingsModel::settings_changed);
    QVERIFY(model.setData(model.index(ScenarioSettingsModel::kGpus, 1), "64"));
    QCOMPARE(model.settings().gpus, 64);
    QCOMPARE(model.data(model.index(ScenarioSettingsModel::kNodes, 1)).toString(), QString("8"));
    QSignalSpy refused(&model, &ScenarioSettingsModel::edit_refused);
    QVERIFY(!model.setData(model.index(ScenarioSettingsModel::kGpus, 1), "-3"));
    QCOMPARE(refused.count(), 1);
    QVERIFY(refused.at(0).at(0).toString().startsWith(QStringLiteral("GPUs: '-3'")));
    QVERIFY(!model.setData(model.index(ScenarioSettingsModel::kStrategy, 1), "fsdp9"));
    QVERIFY(model.setData(model.index(ScenarioSettingsModel::kNodes, 1), "2"));  // nodes of 8 GPUs
    QCOMPARE(model.settings().gpus, 16);
    QVERIFY(!model.setData(model.index(ScenarioSettingsModel::kNodes, 1), "0"));
    QVERIFY(!model.setData(model.index(ScenarioSettingsModel::kGpus, 1), "99999999999"));  // beyond the scenario's int32
    QCOMPARE(model.settings().gpus, 16);
    QVERIFY(model.setData(model.index(ScenarioSettingsModel::kStrategy, 1), "zero3"));
    QCOMPARE(model.settings().strategy, scenarios::ZERO3);
    QCOMPARE(changed.count(), 3);
    const QStringList strategies = model.data(model.index(ScenarioSettingsModel::kStrategy, 1),
                                              ScenarioSettingsModel::kChoicesRole).toStringList();
    QCOMPARE(strategies.size(), 6);
  }

  void plan_summary_of_a_shipped_scenario() {
    const PlanSummary s = summarize_plan(resolved("gpt-oss-120b-256xh800"));
    QCOMPARE(s.gpus, 256);
    QVERIFY(s.params > 100'000'000'000LL);
    QVERIFY(s.padded_params >= s.params);
    QVERIFY(s.padding_ratio >= s.lower_bound_padding_ratio - 1e-12);
    QVERIFY(s.memory.peak_total() > s.memory.persistent.total());
    QVERIFY(s.fits());
    QVERIFY(plan_summary_line(s).find("padding") != std::string::npos);
  }

  // The Explore tab's verdict is judged against what the allocator may reserve, as the simulator's is: a
  // static peak that fits the HBM but not the HBM less the CUDA context and NCCL does not fit.
  void plan_summary_judges_against_the_allocators_capacity() {
    const planner::ResolvedScenario r = resolved("llama3-8b-8xh100");
    const PlanSummary base = summarize_plan(r);
    QCOMPARE(base.allocator_bytes, scenarios::allocator_capacity_bytes(r.scenario()));
    QVERIFY(base.allocator_bytes < base.hbm_bytes);
    const double peak_gib = static_cast<double>(base.memory.peak_total()) / (1LL << 30);
    scenarios::LoadedScenario tight = scenarios::load_scenario("llama3-8b-8xh100");
    tight.scenario.mutable_cluster()->mutable_gpu()->set_hbm_capacity_gib(peak_gib + 0.5);
    tight.scenario.mutable_training()->mutable_allocator()->set_outside_gib(1.0);
    const PlanSummary s = summarize_plan(planner::resolve_scenario(tight));
    QVERIFY(s.memory.peak_total() < s.hbm_bytes);
    QVERIFY(s.memory.peak_total() > s.allocator_bytes);
    QVERIFY(!s.fits());
    const std::string line = plan_summary_line(s);
    QVERIFY2(line.find("of the allocator's") != std::string::npos && line.find("(does not fit)") != std::string::npos,
             line.c_str());
  }

  void results_breakdown_and_memory_models_hold_a_simulation() {
    const auto trace = std::make_shared<const traces::Trace>(simulated("llama3-8b-8xh100"));
    SimulationResultsModel results;
    QAbstractItemModelTester t1(&results, QAbstractItemModelTester::FailureReportingMode::QtTest);
    results.reset_rows({{8, "ragged", 0, {}}, {8, "fsdp2", 0, {}}});
    results.set_progress(0, 0.5);
    QCOMPARE(results.data(results.index(0, SimulationResultsModel::kState)).toString(), QString("running 50%"));
    results.set_outcome(0, {RunState::kDone, trace, "", 0.1, {}});
    results.set_outcome(1, {RunState::kFailed, nullptr, "boom", 0, {}});
    QCOMPARE(results.finished_rows(), 2);
    QCOMPARE(results.data(results.index(0, SimulationResultsModel::kTokensPerGpu), SimulationResultsModel::kValueRole)
                 .toDouble(),
             trace->summary().tokens_per_s_per_gpu());
    QVERIFY(results.data(results.index(1, SimulationResultsModel::kState)).toString().contains("boom"));
    QCOMPARE(results.data(results.index(0, SimulationResultsModel::kFits)).toString(), QString("fits"));
    // Its band from the regime's validation residuals, as ragged tune shows it, around the prediction.
    const RowBand& done = results.band(0);
    QVERIFY2(done.low <= trace->summary().tokens_per_s_per_gpu() && trace->summary().tokens_per_s_per_gpu() <= done.high,
             done.text.c_str());
    QVERIFY(done.low < done.high);
    QVERIFY(results.data(results.index(0, SimulationResultsModel::kBand)).toString().contains(".."));
    QVERIFY(results.data(results.index(0, SimulationResultsModel::kBand), Qt::ToolTipRole).toString().contains("validation rows"));
    QVERIFY(results.data(results.index(1, SimulationResultsModel::kBand)).toString().isEmpty());  // failed: no figures
    // The same step with its peak 1 GiB under the allocator's capacity: within the simulator's memory error.
    auto tight = std::make_shared<traces::Trace>(*trace);
    tight->mutable_summary()->set_peak_reserved_bytes(traces::allocator_capacity_of(trace->summary()) - (1LL << 30));
    results.set_outcome(1, {RunState::kDone, tight, "", 0.1, {}});
    QCOMPARE(results.data(results.index(1, SimulationResultsModel::kFits)).toString(), QString("fits, tightly"));

    UnitBreakdownModel units;
    QAbstractItemModelTester t2(&units, QAbstractItemModelTester::FailureReportingMode::QtTest);
    units.set_trace(trace.get());
    QCOMPARE(units.rowCount(), 3);  // embed, layers (mean of 32), head
    QCOMPARE(units.data(units.index(1, 0)).toString(), QString("layers (mean of 32)"));
    QVERIFY(units.data(units.index(1, 1), UnitBreakdownModel::kSecondsRole).toDouble() > 0);  // forward

    MemoryBreakdownModel memory;
    QAbstractItemModelTester t3(&memory, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const PlanSummary plan = summarize_plan(resolved("llama3-8b-8xh100"));
    memory.set_parts(memory_parts(plan.memory, &trace->summary()));
    int64_t sum = 0;
    for (const MemoryPart& p : memory.parts()) sum += p.bytes;
    QCOMPARE(sum, std::max(plan.memory.peak_total(), trace->summary().peak_reserved_bytes()));
    units.set_trace(nullptr);
    QCOMPARE(units.rowCount(), 0);
  }

  void kind_error_model_lists_the_worst_kinds_first() {
    traces::TraceComparison c;
    c.kinds = {{traces::COMPUTE_FWD, 10, 1.0, 1.1}, {traces::ALL_GATHER, 5, 0.5, 1.5}, {traces::CAST, 2, 0.1, 0.1}};
    KindErrorModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.set_comparison(c);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.data(model.index(0, KindErrorModel::kKind)).toString(), QString("all_gather"));
    QCOMPARE(model.data(model.index(2, KindErrorModel::kKind)).toString(), QString("cast"));
    QCOMPARE(model.data(model.index(0, KindErrorModel::kError)).toString(), QString("-66.7%"));
    QCOMPARE(model.data(model.index(0, KindErrorModel::kDifference), kValueRole).toDouble(), -1.0);
    QCOMPARE(model.headerData(KindErrorModel::kMeasured, Qt::Horizontal).toString(), QString("measured"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void op_error_model_lists_the_worst_ops_first() {
    traces::TraceComparison c;
    c.ops = {{3, traces::COMPUTE_FWD, traces::COMPUTE, 0, "layers.0 forward", 1.0e-3, 1.2e-3},
             {7, traces::ALL_GATHER, traces::ALL_GATHER_STREAM, 1, "layers.1 all_gather", 0.5e-3, 2.5e-3},
             {9, traces::OPTIMIZER, traces::COMPUTE, -1, "adamw", 0.3e-3, 0},
             {12, traces::REDUCE_SCATTER, traces::REDUCE_SCATTER_STREAM, 1, "layers.1 reduce_scatter", 4e-3, 3.5e-3}};
    OpErrorModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.set_comparison(c);
    QCOMPARE(model.rowCount(), 4);
    // |difference|: 2 ms (op 7), 0.5 ms (op 12), 0.3 ms (op 9), 0.2 ms (op 3).
    const QList<qulonglong> order = {7, 12, 9, 3};
    for (int row = 0; row < 4; ++row) {
      QCOMPARE(model.data(model.index(row, OpErrorModel::kOpId), kValueRole).toULongLong(), order[row]);
    }
    QCOMPARE(model.data(model.index(0, OpErrorModel::kName)).toString(), QString("layers.1 all_gather"));
    QCOMPARE(model.data(model.index(0, OpErrorModel::kStream)).toString(), QString("all_gather"));
    QCOMPARE(model.data(model.index(0, OpErrorModel::kError)).toString(), QString("-80.0%"));
    QCOMPARE(model.data(model.index(1, OpErrorModel::kError)).toString(), QString("+14.3%"));
    QCOMPARE(model.data(model.index(2, OpErrorModel::kUnit)).toString(), QString("-"));  // the optimizer: no unit
    QCOMPARE(model.data(model.index(2, OpErrorModel::kError)).toString(), QString("-"));  // nothing measured
    QCOMPARE(model.data(model.index(0, OpErrorModel::kDifference)).toString(), QString("-2 ms"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void jobs_report_results_on_this_thread() {
    SimulationJobs jobs(2);
    QSignalSpy finished(&jobs, &SimulationJobs::job_finished);
    QSignalSpy all(&jobs, &SimulationJobs::all_finished);
    std::vector<planner::ResolvedScenario> batch;
    batch.push_back(resolved("tiny-llama-4xcpu"));
    batch.push_back(resolved("llama3-8b-8xh100"));
    jobs.start(std::move(batch));
    QVERIFY(all.wait(30000));
    QCOMPARE(finished.count(), 2);
    for (const auto& args : finished) {
      const auto outcome = args.at(1).value<SimulationOutcome>();
      QCOMPARE(outcome.state, RunState::kDone);
      QVERIFY(outcome.trace->summary().step_time_s() > 0);
    }
    QVERIFY(!jobs.busy());
  }

  void a_new_start_drops_the_stale_results() {
    SimulationJobs jobs(2);
    QSignalSpy finished(&jobs, &SimulationJobs::job_finished);
    QSignalSpy all(&jobs, &SimulationJobs::all_finished);
    std::vector<planner::ResolvedScenario> stale;
    for (int i = 0; i < 4; ++i) stale.push_back(resolved("llama3-70b-10240xh100"));
    const quint64 first = jobs.start(std::move(stale));
    std::vector<planner::ResolvedScenario> fresh;
    fresh.push_back(resolved("tiny-llama-4xcpu"));
    QCOMPARE(jobs.start(std::move(fresh)), first + 1);
    QVERIFY(all.wait(30000));
    QVERIFY(jobs.wait(30000));
    QCoreApplication::processEvents();  // anything the stale jobs posted late
    QCOMPARE(finished.count(), 1);
    const auto outcome = finished.at(0).at(1).value<SimulationOutcome>();
    QCOMPARE(outcome.trace->metadata().scenario_name(), std::string("tiny-llama-4xcpu"));
  }

  void cancel_reports_every_job_cancelled() {
    SimulationJobs jobs(1);
    QSignalSpy finished(&jobs, &SimulationJobs::job_finished);
    QSignalSpy all(&jobs, &SimulationJobs::all_finished);
    std::vector<planner::ResolvedScenario> batch;
    for (int i = 0; i < 3; ++i) batch.push_back(resolved("llama3-70b-10240xh100"));
    jobs.start(std::move(batch));
    jobs.cancel();
    QVERIFY(all.wait(30000));
    QCOMPARE(finished.count(), 3);
    for (const auto& args : finished) QCOMPARE(args.at(1).value<SimulationOutcome>().state, RunState::kCancelled);
  }
};

QTEST_GUILESS_MAIN(ModelsTest)
#include "models_test.moc"
