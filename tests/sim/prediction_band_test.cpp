// Prediction bands (sim/prediction_regime, sim/prediction_band) and
// --sensitivity (sim/sensitivity): the band comes from exactly the rows of
// the scenario's regime, falls back by dropping factors when too few match,
// and every sensitivity value is a real re-simulation, sorted by effect.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/plausible_inputs.hpp"
#include "sim/prediction_band.hpp"
#include "sim/simulation_child.hpp"

namespace ragged::sim {
namespace {

ResidualRow row(const std::string& id, const std::string& gpu, const std::string& strategy, const std::string& ac,
                int64_t sequence, double share, double error) {
  ResidualRow r;
  r.id = id;
  r.stack = "stack-" + id.substr(0, 1);
  r.gpu = gpu;
  r.gpus = 8;
  r.strategy = strategy;
  r.checkpointing = ac;
  r.sequence = sequence;
  r.exposed_comm_share = share;
  r.throughput_error = error;
  r.model = std::string(kDense);
  return r;
}

// 25 rows of one regime (hopper, fsdp1, full, long, hidden) with errors
// -12%..+12% by 1%, and 30 of another (ampere) all at +50%.
std::vector<ResidualRow> two_regimes() {
  std::vector<ResidualRow> rows;
  for (int i = 0; i < 25; ++i) rows.push_back(row("h" + std::to_string(i), "h100", "fsdp1", "full", 32768, 0.002, (i - 12) / 100.0));
  for (int i = 0; i < 30; ++i) rows.push_back(row("a" + std::to_string(i), "a100-80g", "fsdp1", "none", 2048, 0.03, 0.5));
  return rows;
}

TEST(PredictionBand, ComesFromExactlyTheRowsOfTheRegime) {
  const std::vector<ResidualRow> rows = two_regimes();
  const Regime regime{"hopper", "full", "hidden", "long", "fsdp1", "dense"};
  const ErrorBand band = error_band(rows, regime, BandMetric::kThroughput);
  ASSERT_EQ(band.rows, 25);
  EXPECT_TRUE(band.dropped.empty());
  EXPECT_EQ(band.matched.size(), 6u);
  for (const std::string& id : band.ids) EXPECT_EQ(id.front(), 'h') << id;
  // ceil(0.8 x 26) = 21 of 25 rows: 2 cut from each end, -10%..+10%.
  EXPECT_EQ(band.held, 21);
  EXPECT_NEAR(band.low, -0.10, 1e-12);
  EXPECT_NEAR(band.high, 0.10, 1e-12);
  const auto [low, high] = published_range(1000, band);
  EXPECT_NEAR(low, 1000 / 1.10, 1e-9);
  EXPECT_NEAR(high, 1000 / 0.90, 1e-9);
}

// Two stacks in one regime. When their errors interleave, a width holds
// 80% of each stack's rows from the other's: calibrated. When one stack's
// runs all lie at +50% and the other's within 3% of the prediction, no
// width built from one holds the other's rows: the band takes every row of
// its regime and says that no narrower width held.
TEST(PredictionBand, ALevelNoStackHoldsGivesEveryRowAndSaysSo) {
  const Regime regime{"hopper", "full", "hidden", "long", "fsdp1", "dense"};
  std::vector<ResidualRow> alike, apart;
  for (int i = 0; i < 25; ++i) {
    const double spread = (i - 12) / 400.0;
    alike.push_back(row("x" + std::to_string(i), "h100", "fsdp1", "full", 32768, 0.002, spread));
    alike.push_back(row("y" + std::to_string(i), "h100", "fsdp1", "full", 32768, 0.002, spread + 0.001));
    apart.push_back(row("x" + std::to_string(i), "h100", "fsdp1", "full", 32768, 0.002, spread));
    apart.push_back(row("y" + std::to_string(i), "h100", "fsdp1", "full", 32768, 0.002, 0.5));
  }
  const BandLevel calibrated = band_level(alike, BandMetric::kThroughput);
  EXPECT_TRUE(calibrated.calibrated);
  EXPECT_GE(calibrated.share, kBandShare);

  const BandLevel widest = band_level(apart, BandMetric::kThroughput);
  EXPECT_FALSE(widest.calibrated);
  EXPECT_DOUBLE_EQ(widest.share, 1.0);
  ErrorBand band = error_band(apart, regime, BandMetric::kThroughput, widest.share);
  band.calibrated = widest.calibrated;
  EXPECT_EQ(band.held, 50);
  EXPECT_NEAR(band.high, 0.5, 1e-12);
  EXPECT_NE(band_sentence(band).find("every row of its regime: no narrower width held 80% of another stack's rows"),
            std::string::npos)
      << band_sentence(band);
  band.calibrated = true;
  EXPECT_NE(band_sentence(band).find("(the width that held 80% of another stack's rows)"), std::string::npos)
      << band_sentence(band);
}

TEST(PredictionBand, DropsFactorsInOrderWhenTooFewRowsMatchAndSaysWhich) {
  const std::vector<ResidualRow> rows = two_regimes();
  // fsdp2 and selective match nothing: strategy, then checkpointing go; the
  // 25 hopper/long/hidden rows remain.
  const Regime regime{"hopper", "selective", "hidden", "long", "fsdp2", "dense"};
  const ErrorBand band = error_band(rows, regime, BandMetric::kThroughput);
  EXPECT_EQ(band.rows, 25);
  ASSERT_EQ(band.dropped.size(), 2u);
  EXPECT_EQ(band.dropped[0], RegimeFactor::kStrategy);
  EXPECT_EQ(band.dropped[1], RegimeFactor::kCheckpointing);
  EXPECT_NE(regime_sentence(regime, band).find("not matched"), std::string::npos);
  EXPECT_NE(band_sentence(band).find("21 of 25 comparable validation rows"), std::string::npos) << band_sentence(band);
  // An unknown generation (a GPU given by its numbers) is never matched.
  const ErrorBand unknown = error_band(rows, {"", "full", "hidden", "long", "fsdp1", "dense"}, BandMetric::kThroughput);
  EXPECT_EQ(unknown.rows, 25);
  EXPECT_EQ(unknown.dropped.front(), RegimeFactor::kGeneration);
}

// Whether the model is a mixture of experts is the last factor dropped: a
// dense scenario's band leaves out the experts' rows while 20 dense ones
// remain, however well those share its other factors.
TEST(PredictionBand, ADenseScenarioReadsDenseRowsBeforeAnythingElse) {
  std::vector<ResidualRow> rows = two_regimes();
  for (int i = 0; i < 5; ++i) {
    ResidualRow moe = row("m" + std::to_string(i), "h100", "fsdp1", "full", 32768, 0.002, 1.5);
    moe.model = std::string(kMixtureOfExperts);
    rows.push_back(moe);
  }
  const ErrorBand dense = error_band(rows, {"hopper", "full", "hidden", "long", "fsdp1", "dense"}, BandMetric::kThroughput);
  EXPECT_EQ(dense.rows, 25);
  for (const std::string& id : dense.ids) EXPECT_NE(id.front(), 'm') << id;
  // Five expert rows are too few: every other factor goes first, then the model.
  const ErrorBand moe =
      error_band(rows, {"hopper", "full", "hidden", "long", "fsdp1", std::string(kMixtureOfExperts)}, BandMetric::kThroughput);
  EXPECT_EQ(moe.rows, 60);
  EXPECT_EQ(moe.dropped.back(), RegimeFactor::kModel);
  traces::Summary predicted;
  predicted.set_mixture_of_experts(true);
  EXPECT_EQ(regime_of(scenarios::Scenario{}, predicted).model, kMixtureOfExperts);
}

TEST(PredictionBand, MemoryBandReadsOnlyRowsThatPublishMemory) {
  std::vector<ResidualRow> rows = two_regimes();
  rows[0].memory_error = 0.05;
  rows[30].memory_error = -0.02;
  const ErrorBand band = error_band(rows, {"hopper", "full", "hidden", "long", "fsdp1", "dense"}, BandMetric::kPeakMemory);
  EXPECT_EQ(band.rows, 2);
  EXPECT_TRUE(band.matched.empty());  // two rows: every factor dropped
  EXPECT_EQ(band.held, 2);
  EXPECT_NEAR(band.low, -0.02, 1e-12);
  EXPECT_NEAR(band.high, 0.05, 1e-12);
}

TEST(PredictionBand, RegimeOfAScenarioReadsItsSettingsAndExposedCommunication) {
  scenarios::Scenario s;
  s.mutable_cluster()->mutable_gpu()->set_preset("a100-80g");
  s.mutable_training()->set_strategy(scenarios::FSDP2);
  s.mutable_training()->set_activation_checkpointing(scenarios::FULL);
  s.mutable_training()->set_sequence_length(8192);
  traces::Summary predicted;
  predicted.set_step_time_s(1.0);
  predicted.set_exposed_comm_s(0.06);
  const Regime r = regime_of(s, predicted);
  EXPECT_EQ(r.generation, "ampere");
  EXPECT_EQ(r.strategy, "fsdp2");
  EXPECT_EQ(r.checkpointing, "full");
  EXPECT_EQ(r.sequence, "medium");
  EXPECT_EQ(r.communication, "exposed");
}

planner::ResolvedScenario yafsdp_row() {
  return planner::resolve_scenario(scenarios::load_scenario(
      std::string(RAGGED_SOURCE_DIR) + "/validation/scenarios/yafsdp-fsdp1-a100-llama2-7b-s2048-64g.textproto"));
}

// Every value is the scenario re-resolved with that input set, handed to the
// simulator, unless the scenario already has it (a range's end at the
// default: its prediction is the scenario's); the list comes back sorted by
// effect.
TEST(Sensitivity, ReSimulatesEachValueWithTheInputChangedAndSorts) {
  const planner::ResolvedScenario base = yafsdp_row();
  std::vector<double> bandwidths;
  int calls = 0, unchanged_calls = 0;
  // A stand-in simulator: throughput follows the NIC bandwidth it is given.
  const VariantSimulator fake = [&](const planner::ResolvedScenario& r) {
    ++calls;
    unchanged_calls += r.scenario().SerializeAsString() == base.scenario().SerializeAsString();
    const double gbps = r.scenario().cluster().nics().bandwidth_gbits_per_s();
    bandwidths.push_back(gbps);
    InputOutcome o;
    o.simulated = true;
    o.tokens_per_s_per_gpu = 10 * gbps;
    o.peak_reserved_bytes = 1000;
    return o;
  };
  constexpr int64_t kScenarios = 999;  // the scenario's peak: no simulated value's
  const auto rows = sensitivity(base, {2000, kScenarios, false}, {}, {}, fake);
  size_t values = 0, reused = 0;
  for (const InputSensitivity& s : rows) {
    values += s.input.values.size();
    for (const InputOutcome& o : s.outcomes) {
      reused += o.peak_reserved_bytes == kScenarios && o.label.find("(as simulated)") == std::string::npos;
    }
  }
  EXPECT_EQ(unchanged_calls, 0);
  EXPECT_GT(reused, 0u);  // the power limit's TDP end, the row's 400 W
  EXPECT_EQ(static_cast<size_t>(calls) + reused, values);
  EXPECT_NE(std::find(bandwidths.begin(), bandwidths.end(), 100.0), bandwidths.end());
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().input.field, "cluster.nics.bandwidth_gbits_per_s");
  EXPECT_NEAR(rows.front().outcomes[static_cast<size_t>(rows.front().low)].tokens_per_s_per_gpu, 1000, 1e-9);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_FALSE(rows[i].ranks_before(rows[i - 1])) << i;
}

// The plausible input of a validation row's scenario that sets `field`, if it has one.
std::optional<PlausibleInput> input_of(const std::string& row, const std::string& field) {
  const auto inputs = plausible_inputs(planner::resolve_scenario(
      scenarios::load_scenario(std::string(RAGGED_SOURCE_DIR) + "/validation/scenarios/" + row + ".textproto")));
  for (const PlausibleInput& input : inputs) {
    if (input.field == field) return input;
  }
  return std::nullopt;
}

// A software choice of validation row `row` (a stack's, so it does not widen
// the band): the value it simulated, whether the scenario left it to the
// default, and the labels of the other values it tries, in order.
void expect_choice(const std::string& row, const std::string& field, const std::string& simulated, bool left,
                   const std::vector<std::string>& others) {
  const auto input = input_of(row, field);
  ASSERT_TRUE(input.has_value()) << row << " " << field;
  EXPECT_EQ(input->simulated, simulated);
  EXPECT_EQ(input->left_to_default, left);
  EXPECT_FALSE(input->widens_band());
  std::vector<std::string> labels;
  for (const auto& value : input->values) labels.push_back(value.label);
  EXPECT_EQ(labels, others);
}

// A mixture of experts' router is an input from balanced to collapsed (8
// experts top 2: 4), a state of the run that moves the prediction without
// widening its band; a dense model has none.
TEST(Sensitivity, TheRoutersLoadIsAnInputOfMixturesOfExperts) {
  const auto load_of = [](const std::string& row) { return input_of(row, "training.experts.busiest_load"); };
  const auto moe = load_of("kempnerforge-h200-moe-e8-fsdp8-packed-8g");
  ASSERT_TRUE(moe.has_value());
  EXPECT_TRUE(moe->numeric);
  EXPECT_FALSE(moe->widens_band());
  ASSERT_EQ(moe->values.size(), 2u);
  EXPECT_EQ(moe->values[0].overrides.front().value, "1");
  EXPECT_EQ(moe->values[1].overrides.front().value, "4");
  EXPECT_FALSE(load_of("torchtitan-asynctp-llama3-8b-fsdp8-tp8-64g").has_value());
}

// How the experts' clamp and bias run is an input of a model that has them:
// stated on Megatron-Bridge's GPT-OSS rows, left to the default on
// Automodel's GPT-OSS 20B, absent for Qwen3 (neither a clamp nor biases).
TEST(Sensitivity, TheExpertEpilogueIsAnInputOfClampedOrBiasedExperts) {
  expect_choice("mbridge-2602-gb200-gpt-oss-120b-ep64-64g", "training.experts.epilogue", "EAGER_EPILOGUE", false,
                {"FUSED_EPILOGUE"});
  expect_choice("automodel-gpt-oss-20b-fsdp8-ep8-8g", "training.experts.epilogue", "FUSED_EPILOGUE", true,
                {"EAGER_EPILOGUE"});
  EXPECT_FALSE(input_of("automodel-qwen3-30b-a3b-fsdp8-ep8-8g", "training.experts.epilogue").has_value());
}

// Whether the keys and values are copied to every query head is an input of
// grouped-query models: stated on torchtitan's Llama 3 rows (repeat_kv),
// left to the default on MaxText's, absent for Llama 2 7B (as many kv heads
// as query heads).
TEST(Sensitivity, RepeatedKeysAndValuesAreAnInputOfGroupedQueryModels) {
  const auto kv_of = [](const std::string& row) { return input_of(row, "training.kv_heads"); };
  expect_choice("torchtitan-asynctp-llama3-8b-fsdp8-tp8-64g", "training.kv_heads", "REPEATED_KV", false, {"NATIVE_KV"});
  const auto maxtext = kv_of("maxtext-h100-llama3-70b-fsdp128-128g");
  ASSERT_TRUE(maxtext.has_value());
  EXPECT_EQ(maxtext->simulated, "NATIVE_KV");
  EXPECT_TRUE(maxtext->left_to_default);
  EXPECT_FALSE(kv_of("yafsdp-fsdp1-a100-llama2-7b-s2048-64g").has_value());
}

// The tp overlap is an input only where tensor parallelism runs sequence
// parallel: left to the default on torchtitan's vanilla TP row (the other two
// runtimes its values), stated on its async twin, absent without tp.
TEST(Sensitivity, TensorParallelOverlapIsAnInputOfSequenceParallelMeshes) {
  const auto overlap_of = [](const std::string& row) { return input_of(row, "training.mesh.tp_overlap"); };
  expect_choice("torchtitan-asynctp-llama3-8b-fsdp8-tp8-64g", "training.mesh.tp_overlap", "TP_OVERLAP_NONE", true,
                {"ASYNC_TP", "USERBUFFERS"});
  const auto async = overlap_of("torchtitan-asynctp-llama3-8b-fsdp8-tp8-64g-async");
  ASSERT_TRUE(async.has_value());
  EXPECT_EQ(async->simulated, "ASYNC_TP");
  EXPECT_FALSE(async->left_to_default);
  EXPECT_FALSE(overlap_of("yafsdp-fsdp1-a100-llama2-7b-s2048-64g").has_value());
}

// torch's loss_parallel is a loss kernel where tp shards the logits by
// vocabulary: torchtitan's eager TP row states it, nanotron's TP row is
// offered it; not a row without tp, nor KempnerForge's, whose head gathers
// the logits whole.
TEST(Sensitivity, LossParallelIsALossKernelWhereTpShardsTheLogits) {
  expect_choice("titanblog-gb200-qwen3-32b-fsdp4-tp2-b32-s2048-eager-8g", "training.loss", "LOSS_PARALLEL", false,
                {"FP32_LOGITS", "FUSED", "CHUNKED"});
  expect_choice("nanotron-h100-1b-dp64-tp2-zero0-128g", "training.loss", "FP32_LOGITS", false,
                {"FUSED", "CHUNKED", "LOSS_PARALLEL"});
  expect_choice("yafsdp-fsdp1-a100-llama2-7b-s2048-64g", "training.loss", "SHIFTED_FP32_LOGITS", false,
                {"FP32_LOGITS", "FUSED", "CHUNKED"});
  expect_choice("kempnerforge-h200-7b-tp4-4g", "training.loss", "LOG_SOFTMAX", false,
                {"FP32_LOGITS", "FUSED", "CHUNKED"});
}

// Two to four NVIDIA GPUs a node may be an NVSwitch slice or an HGX 4-GPU
// board: hardware a scenario that does not say leaves open, so it widens the
// band; KempnerForge's rows state the board, an 8-GPU node has no such choice.
TEST(Sensitivity, TheNvlinkBoardIsAnInputOfNodesOfTwoToFourGpus) {
  const std::string field = "cluster.intra_node.full_mesh_gpus";
  const auto four = input_of("fsdp2blog-h100-smollm3-3b-zero2-4g", field);
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(four->simulated, "NVSwitch");
  EXPECT_TRUE(four->widens_band());
  ASSERT_EQ(four->values.size(), 1u);
  EXPECT_EQ(four->values[0].overrides.front().value, "4");
  EXPECT_FALSE(input_of("kempnerforge-h200-7b-tp2-2g", field).has_value());
  EXPECT_FALSE(input_of("yafsdp-fsdp1-a100-llama2-7b-s2048-64g", field).has_value());
}

// Whole or split routed experts is an input of a mixture of experts under tp
// with ep: stated on Megatron-MoE-ModelZoo's row (whole, expert_tp 1; split
// its other value), absent where tp is 1.
// Megatron-Core's overlapped expert all-to-alls are an input where the
// scenario could run them: stated on ModelZoo's two EP 32 rows, absent under
// FSDP2 (KempnerForge) and under full recomputation (the ModelZoo
// Megatron-FSDP row).
TEST(Sensitivity, TheExpertAllToAllOverlapIsAnInputOfMegatronMixtures) {
  expect_choice("modelzoo-h100-qwen3-235b-tp2-ep32-pp8-vpp4-dp16-256g", "training.experts.overlap_all_to_all", "false",
                true, {"true"});
  expect_choice("modelzoo-h100-qwen3-235b-tp2-ep32-pp8-vpp4-dp16-a2a-overlap-256g",
                "training.experts.overlap_all_to_all", "true", false, {"false"});
  EXPECT_FALSE(input_of("kempnerforge-h200-moe-e8-fsdp8-packed-8g", "training.experts.overlap_all_to_all").has_value());
  EXPECT_FALSE(
      input_of("modelzoo-h100-qwen3-235b-mfsdp128-tp2-ep8-256g", "training.experts.overlap_all_to_all").has_value());
}

// When a stage reduces its FSDP gradients is offered for FSDP scenarios with
// pipeline stages (every micro-batch only where it is modelled), not for
// Megatron's DDP or without stages, and it does not widen the band.
TEST(Sensitivity, ThePipelineGradientSyncIsAnInputOfFsdpStages) {
  expect_choice("llama3-paper-405b-tp8-pp16-dp64-8192g", "training.pipeline.gradient_sync", "PER_UNIT_GRADIENT_SYNC",
                false, {"AFTER_CHUNK_BACKWARD", "EVERY_MICRO_BATCH_GRADIENT_SYNC"});
  EXPECT_FALSE(
      input_of("modelzoo-h100-qwen3-235b-tp2-ep32-pp8-vpp4-dp16-256g", "training.pipeline.gradient_sync").has_value());
  EXPECT_FALSE(input_of("kempnerforge-h200-moe-e8-fsdp8-packed-8g", "training.pipeline.gradient_sync").has_value());
}

TEST(Sensitivity, ExpertTensorParallelismIsAnInputOfMixturesUnderTp) {
  expect_choice("modelzoo-h100-qwen3-235b-mfsdp128-tp2-ep8-256g", "training.mesh.expert_tp", "1", false, {"2"});
  EXPECT_FALSE(input_of("kempnerforge-h200-moe-e8-fsdp8-packed-8g", "training.mesh.expert_tp").has_value());
}

// The real simulator: YaFSDP's FSDP1 baseline at 64 A100s, the network is
// what moves its prediction most, and halving it slows the step.
TEST(Sensitivity, NetworkLeadsOnACommunicationHeavyValidationRow) {
  const planner::ResolvedScenario base = yafsdp_row();
  const SimulationSummary predicted = simulate_summary_in_child(base);
  const double tokens = predicted.summary.tokens_per_s_per_gpu();
  const auto rows = sensitivity(base, {tokens, predicted.summary.peak_reserved_bytes(), false}, {});
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().input.field.rfind("cluster.nics.", 0), 0u) << rows.front().input.field;
  const InputSensitivity& network = rows.front();
  EXPECT_LT(network.outcomes[static_cast<size_t>(network.low)].tokens_per_s_per_gpu, 0.95 * tokens);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_FALSE(rows[i].ranks_before(rows[i - 1])) << i;
}

// A scenario leaving its NIC bandwidth to the default: the band covers the
// residual band around the prediction at each end of the plausible range.
TEST(PredictionBand, WidensByHardwareLeftToTheDefaults) {
  scenarios::LoadedScenario loaded = yafsdp_row().loaded;
  loaded.written.mutable_cluster()->mutable_nics()->clear_bandwidth_gbits_per_s();
  const planner::ResolvedScenario resolved = planner::resolve_scenario(scenarios::rebuild(loaded));
  traces::Summary predicted;
  predicted.set_tokens_per_s_per_gpu(3000);
  predicted.set_peak_reserved_bytes(int64_t{10} << 30);
  predicted.set_step_time_s(1);
  const VariantSimulator fake = [](const planner::ResolvedScenario& r) {
    InputOutcome o;
    o.simulated = true;
    o.tokens_per_s_per_gpu = 3000 * std::min(1.0, r.scenario().cluster().nics().bandwidth_gbits_per_s() / 400);
    o.peak_reserved_bytes = int64_t{10} << 30;
    return o;
  };
  const PredictionBand band = prediction_band(resolved, predicted, {}, shipped_residual_table(), fake);
  const PredictionBand plain = regime_band(resolved.scenario(), predicted);
  ASSERT_GT(band.throughput.rows, 0);
  const bool widened_by_nic = std::any_of(band.widened_by.begin(), band.widened_by.end(), [](const InputSensitivity& s) {
    return s.input.field == "cluster.nics.bandwidth_gbits_per_s";
  });
  EXPECT_TRUE(widened_by_nic);
  // 100 Gb/s: a quarter of the throughput, the band's low end a quarter of the plain one's.
  EXPECT_NEAR(band.tokens_low, plain.tokens_low / 4, 1e-6 * plain.tokens_low);
  EXPECT_NEAR(band.tokens_high, plain.tokens_high, 1e-6 * plain.tokens_high);
}

}  // namespace
}  // namespace ragged::sim
