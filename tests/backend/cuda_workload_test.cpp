// The GPU workload. On every machine with the toolkit: what it supports, and
// that its memory fits the buffers the Program gives each unit. On a GPU
// (skipped without one): its loss and gradients against the host workload's
// (fp32 closely, bf16 loosely), and checkpointing that changes no bit.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/gpu_workload.hpp"
#include "backend/cuda/gpu_workload_layout.hpp"
#include "common/errors.hpp"
#include "models/catalog.hpp"
#include "planner/layout_strategy.hpp"
#include "planner/plan.hpp"
#include "planner/program_builder.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "tests/backend/gpu_workload_harness.hpp"
#include "tests/backend/workload_test_helpers.hpp"

namespace ragged::backend::gpu {
namespace {

using gpu_test::GpuWorkloadTest;
using gpu_test::host_result;
using gpu_test::relative_error;
using gpu_test::Result;
using models::Checkpointing;
constexpr Checkpointing kModes[] = {Checkpointing::kNone, Checkpointing::kSelective, Checkpointing::kFull};

scenarios::Checkpointing scenario_mode(Checkpointing mode) {
  if (mode == Checkpointing::kFull) return scenarios::FULL;
  return mode == Checkpointing::kSelective ? scenarios::SELECTIVE : scenarios::NONE;
}

planner::ResolvedScenario scenario(const std::string& name, Checkpointing mode = Checkpointing::kNone,
                                   const std::string& dtype = "") {
  scenarios::LoadedScenario loaded = scenarios::load_scenario(name);
  loaded.written.mutable_training()->set_activation_checkpointing(scenario_mode(mode));
  if (!dtype.empty()) loaded.written.mutable_model()->mutable_inline_spec()->set_dtype(dtype);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

models::ModelSpec arch_model(models::ArchConfig arch, models::DType dtype = models::DType::kBF16) {
  arch.dtype = dtype;
  return models::build_model(arch);
}

void expect_refused(const models::ModelSpec& model, const std::string& feature) {
  try {
    check_gpu_supported(model);
    ADD_FAILURE() << model.name << " passed the check";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(feature), std::string::npos) << message;
    EXPECT_NE(message.find("runs on --device cpu"), std::string::npos) << message;
  }
}

// Qwen3-MoE style: 4 experts stored per expert, top-2, qk-norm; optionally
// always-on shared experts.
models::ArchConfig qwen3_moe_arch(int64_t shared_experts = 0) {
  models::ArchConfig arch = test_util::with_experts(test_util::tiny_arch("qwen3_moe"), 4, 2, 32);
  arch.qk_norm = true;
  arch.shared_experts = shared_experts;
  return arch;
}

// The same with a bias on the router (DeepSeek's score correction, added to the logits).
models::ArchConfig router_bias_arch() {
  models::ArchConfig arch = qwen3_moe_arch();
  arch.router_bias = true;
  return arch;
}

std::vector<test_util::NamedArch> moe_archs() {
  return {{"qwen3_moe", qwen3_moe_arch()},
          {"qwen3_moe_shared", qwen3_moe_arch(1)},
          {"qwen3_moe_router_bias", router_bias_arch()},
          {"mixtral", test_util::test_arch("mixtral")}};
}

TEST(GpuWorkloadSupport, AcceptsDenseLlamaStyleModels) {
  EXPECT_NO_THROW(check_gpu_supported(models::catalog_model("llama3-8b")));
  EXPECT_NO_THROW(check_gpu_supported(scenario("tiny-llama-4xcpu").model));
  for (const char* name : {"qwen3", "llama"}) {
    EXPECT_NO_THROW(check_gpu_supported(arch_model(test_util::test_arch(name))));
  }
}

TEST(GpuWorkloadSupport, AcceptsExpertsStoredPerExpert) {
  EXPECT_NO_THROW(check_gpu_supported(scenario("tiny-moe-4xcpu").model));
  EXPECT_NO_THROW(check_gpu_supported(models::catalog_model("mixtral-8x7b")));
  for (const test_util::NamedArch& arch : moe_archs()) {
    EXPECT_NO_THROW(check_gpu_supported(arch_model(arch.arch))) << arch.name;
  }
}

TEST(GpuWorkloadSupport, RefusesGpt2StyleBlocksLikeTheHost) {
  try {
    check_gpu_supported(models::catalog_model("gpt-neox-20b"));
    ADD_FAILURE() << "gpt-neox-20b passed the check";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("LayerNorm with bias"), std::string::npos) << message;
    EXPECT_NE(message.find("attention and MLP in parallel"), std::string::npos) << message;
  }
}

TEST(GpuWorkloadSupport, RefusesWhatOnlyTheHostRuns) {
  expect_refused(arch_model(test_util::test_arch("gpt_oss_fused")), "fused expert tensors");
  expect_refused(arch_model(test_util::test_arch("qwen3_moe_expert_bias")), "expert biases");
  expect_refused(models::catalog_model("deepseek-v3"), "multi-head latent attention");
  models::ArchConfig tied = test_util::tiny_arch("qwen2");
  tied.tie_embeddings = true;
  expect_refused(arch_model(tied), "tied embeddings");
  models::ArchConfig sinks = test_util::tiny_arch("llama");
  sinks.attention_sinks = true;
  expect_refused(arch_model(sinks), "attention sinks");
  EXPECT_THROW(gpu_unit_bytes(arch_model(test_util::test_arch("gpt_oss_fused")), GpuWorkloadConfig{}, 1), InputError);
}

// What the Program gives a unit: its activation buffer, backward workspace
// and (the head) the logits' gradient its loss backward writes.
struct UnitBuffers {
  int64_t activations = 0, workspace = 0, logits_gradient = 0;
};

std::vector<UnitBuffers> program_buffers(const planner::ResolvedScenario& resolved) {
  const scenarios::Training& training = resolved.scenario().training();
  const auto strategy = planner::make_strategy(training.strategy());
  const planner::Plan plan =
      planner::plan_model(resolved.model, resolved.granularity, training.shard_group_size(), *strategy);
  const planner::Program program = planner::build_program(planner::program_inputs(resolved, plan));
  std::vector<UnitBuffers> out(resolved.model.units.size());
  for (const planner::Buffer& buffer : program.buffers) {
    if (buffer.kind == planner::BufferKind::kActivations) {
      out.at(static_cast<size_t>(buffer.unit)).activations = buffer.bytes;
    } else if (buffer.kind == planner::BufferKind::kWorkspace && buffer.name.ends_with(" backward workspace")) {
      out.at(static_cast<size_t>(buffer.unit)).workspace = buffer.bytes;
    }
  }
  for (const planner::Op& op : program.ops) {
    if (!op.loss_only) continue;
    out.at(static_cast<size_t>(op.unit)).logits_gradient = program.buffers[static_cast<size_t>(op.buffer)].bytes;
  }
  return out;
}

// The same from the model's ActivationBytes, as program_builder.cpp sizes them.
std::vector<UnitBuffers> model_buffers(const models::ModelSpec& model, Checkpointing mode, int64_t tokens) {
  std::vector<UnitBuffers> out;
  for (const models::UnitSpec& unit : model.units) {
    const models::ActivationBytes& a = unit.activations;
    const double recomputed = unit.kind == models::UnitKind::kBlock ? a.saved_none - a.saved(mode) : 0.0;
    const auto t = static_cast<double>(tokens);
    if (a.logits_gradient > 0) {  // the head's backward after its loss's (planner/unit_buffers.hpp)
      out.push_back({static_cast<int64_t>(a.saved(mode) * t), static_cast<int64_t>(a.head_input_gradient * t),
                     static_cast<int64_t>(a.logits_gradient * t)});
      continue;
    }
    out.push_back({static_cast<int64_t>(a.saved(mode) * t), static_cast<int64_t>((recomputed + a.working) * t)});
  }
  return out;
}

void expect_fits(const models::ModelSpec& model, const GpuWorkloadConfig& config, Checkpointing mode,
                 const std::vector<UnitBuffers>& buffers) {
  for (size_t u = 0; u < model.units.size(); ++u) {
    const GpuUnitBytes need = gpu_unit_bytes(model, config, static_cast<int>(u));
    SCOPED_TRACE(model.units[u].name + " under " + std::string(models::checkpointing_name(mode)));
    EXPECT_LE(need.kept(mode), buffers[u].activations);
    EXPECT_LE(need.loss_gradient, buffers[u].logits_gradient);
    // After a loss backward of its own, the head's backward needs no room for the logits' gradient.
    const int64_t scratch = need.workspace - (buffers[u].logits_gradient > 0 ? need.loss_gradient : 0);
    EXPECT_LE(need.rebuilt(mode) + scratch, buffers[u].workspace);
  }
}

TEST(GpuWorkloadBytes, Llama3_8bFitsTheProgramsBuffers) {
  const int64_t tokens = 8192;
  for (ElementType type : {ElementType::bf16, ElementType::f32}) {
    const models::DType dtype = type == ElementType::bf16 ? models::DType::kBF16 : models::DType::kF32;
    const models::ModelSpec model = arch_model(models::find_catalog_entry("llama3-8b").arch, dtype);
    const GpuWorkloadConfig config{1, tokens, type, ElementType::f32, Checkpointing::kFull};
    for (Checkpointing mode : kModes) expect_fits(model, config, mode, model_buffers(model, mode, tokens));
    if (type != ElementType::bf16) continue;
    const std::vector<UnitBuffers> program = model_buffers(model, Checkpointing::kNone, tokens);
    for (size_t u : {size_t{1}, model.units.size() - 1}) {
      const GpuUnitBytes need = gpu_unit_bytes(model, config, static_cast<int>(u));
      std::cout << "llama3-8b bf16, 8192 tokens, " << model.units[u].name << ": saved " << need.saved << " of "
                << program[u].activations << ", workspace " << need.workspace << " of " << program[u].workspace
                << ", selective " << need.selective << ", input " << need.input << "\n";
    }
  }
}

TEST(GpuWorkloadBytes, TinyLlamaFitsTheProgramsBuffers) {
  for (Checkpointing mode : kModes) {
    for (ElementType type : {ElementType::bf16, ElementType::f32}) {
      const planner::ResolvedScenario r =
          scenario("tiny-llama-4xcpu", mode, type == ElementType::bf16 ? "bf16" : "fp32");
      const scenarios::Training& training = r.scenario().training();
      const GpuWorkloadConfig config{training.micro_batch_size(), training.sequence_length(), type, ElementType::f32,
                                     mode};
      expect_fits(r.model, config, mode, program_buffers(r));
    }
  }
}

TEST(GpuWorkloadBytes, TinyMoeFitsTheProgramsBuffers) {
  for (Checkpointing mode : kModes) {
    for (ElementType type : {ElementType::bf16, ElementType::f32}) {
      const planner::ResolvedScenario r = scenario("tiny-moe-4xcpu", mode, type == ElementType::bf16 ? "bf16" : "fp32");
      const scenarios::Training& training = r.scenario().training();
      const GpuWorkloadConfig config{training.micro_batch_size(), training.sequence_length(), type, ElementType::f32,
                                     mode};
      const std::vector<UnitBuffers> program = program_buffers(r);
      expect_fits(r.model, config, mode, program);
      if (type != ElementType::bf16 || mode != Checkpointing::kNone) continue;
      const GpuUnitBytes need = gpu_unit_bytes(r.model, config, 1);
      std::cout << "tiny-moe-4xcpu bf16, 2x64 tokens, layers.0: saved " << need.saved << " of "
                << program[1].activations << ", workspace " << need.workspace << " of " << program[1].workspace
                << ", selective " << need.selective << ", input " << need.input << "\n";
    }
  }
}

TEST(GpuWorkloadBytes, MoeArchsFitTheModelsBuffers) {
  for (const test_util::NamedArch& arch : moe_archs()) {
    for (ElementType type : {ElementType::bf16, ElementType::f32}) {
      const models::DType dtype = type == ElementType::bf16 ? models::DType::kBF16 : models::DType::kF32;
      const models::ModelSpec model = arch_model(arch.arch, dtype);
      for (int64_t tokens : {32, 4096}) {
        SCOPED_TRACE(arch.name + ", " + std::to_string(tokens) + " tokens");
        const GpuWorkloadConfig config{1, tokens, type, ElementType::f32, Checkpointing::kFull};
        for (Checkpointing mode : kModes) expect_fits(model, config, mode, model_buffers(model, mode, tokens));
      }
    }
  }
  const models::ModelSpec mixtral = models::catalog_model("mixtral-8x7b");
  const GpuWorkloadConfig config{1, 8192, ElementType::bf16, ElementType::f32, Checkpointing::kFull};
  for (Checkpointing mode : kModes) expect_fits(mixtral, config, mode, model_buffers(mixtral, mode, 8192));
}

// Logits from a few values, so that many tokens tie between experts.
std::vector<float> tied_logits(int64_t tokens, int64_t experts, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> level(0, 3);
  std::vector<float> logits(static_cast<size_t>(tokens * experts));
  for (float& l : logits) l = 0.5f * static_cast<float>(level(rng));
  return logits;
}

TEST(GpuWorkloadRouting, TablesAreTheHostsTopKExpertByExpert) {
  for (const test_util::NamedArch& arch : moe_archs()) {
    SCOPED_TRACE(arch.name);
    const int64_t tokens = 37;
    const detail::BlockPlan plan = detail::block_plan(arch_model(arch.arch), GpuWorkloadConfig{1, tokens}, 1);
    const ragged::backend::detail::MoeLayout& lay = plan.layout.experts;
    const int64_t k = lay.top_k, experts = lay.experts;
    const std::vector<float> logits = tied_logits(tokens, experts, 7);
    const detail::ExpertRouting r = detail::route_experts(lay, tokens, logits);
    ASSERT_EQ(r.offsets.size(), static_cast<size_t>(experts) + 1);
    ASSERT_EQ(r.offsets.back(), tokens * k);
    ASSERT_EQ(r.slot_experts.size(), static_cast<size_t>(tokens * k));
    for (int64_t e = 0; e < experts; ++e) {
      const auto at = static_cast<size_t>(e);
      EXPECT_LE(r.offsets[at + 1] - r.offsets[at], plan.expert_rows);
      for (int64_t c = r.offsets[at]; c < r.offsets[at + 1]; ++c) {
        const auto copy = static_cast<size_t>(c);
        if (c > r.offsets[at]) {
          EXPECT_LT(r.rows[copy - 1], r.rows[copy]);  // distinct tokens, in order
        }
        const auto slot = static_cast<size_t>(r.slots[copy]);
        EXPECT_EQ(r.slots[copy] / k, r.rows[copy]);
        EXPECT_EQ(r.slot_experts[slot], e);
        EXPECT_EQ(r.slot_gates[slot], r.gates[copy]);
      }
    }
    // Each token's choices: the top_k logits, ties to the lowest expert, gates a softmax over them.
    for (int64_t t = 0; t < tokens; ++t) {
      const float* row = logits.data() + t * experts;
      std::vector<int64_t> order(static_cast<size_t>(experts));
      std::iota(order.begin(), order.end(), int64_t{0});
      std::sort(order.begin(), order.end(),
                [row](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      double sum = 0, expected_sum = 0;
      for (int64_t j = 0; j < k; ++j) expected_sum += std::exp(row[order[static_cast<size_t>(j)]]);
      for (int64_t j = 0; j < k; ++j) {
        const auto slot = static_cast<size_t>(t * k + j);
        EXPECT_EQ(r.slot_experts[slot], order[static_cast<size_t>(j)]) << "token " << t << " choice " << j;
        EXPECT_NEAR(r.slot_gates[slot], std::exp(row[r.slot_experts[slot]]) / expected_sum, 1e-6);
        sum += r.slot_gates[slot];
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  }
}

TEST(GpuWorkloadBytes, ExpertsMayGetEveryToken) {
  // Dropless: every token's logits favour expert 0, which then runs them all.
  const detail::BlockPlan plan = detail::block_plan(arch_model(qwen3_moe_arch()), GpuWorkloadConfig{2, 16}, 1);
  const ragged::backend::detail::MoeLayout& lay = plan.layout.experts;
  std::vector<float> logits(static_cast<size_t>(plan.tokens * lay.experts), 0.0f);
  for (int64_t t = 0; t < plan.tokens; ++t) logits[static_cast<size_t>(t * lay.experts)] = 1.0f;
  const detail::ExpertRouting r = detail::route_experts(lay, plan.tokens, logits);
  EXPECT_EQ(r.offsets[1] - r.offsets[0], plan.tokens);
  EXPECT_EQ(plan.expert_rows, plan.tokens);
}

TEST(GpuWorkloadBytes, MoePrivateBuffersHoldTheRoutingTablesAndOneExpertsOutput) {
  const models::ModelSpec model = arch_model(qwen3_moe_arch(), models::DType::kF32);
  const int64_t t = 32, h = model.arch.hidden, k = model.arch.experts_per_token, vocab = model.arch.vocab;
  auto r256 = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  const int64_t tables = (20 * t * k + 7) / 8 * 8 + 8 * t * k;
  EXPECT_EQ(detail::routing_layout(t * k).bytes, tables);
  const GpuWorkloadConfig config{1, t, ElementType::f32, ElementType::f32, Checkpointing::kNone};
  EXPECT_EQ(gpu_private_bytes(model, config), 2 * r256(t * h * 4) + 3 * r256(4 * t) + r256(4 * (vocab + 1)) +
                                                  r256(tables) + r256(t * h * 4) + r256(8 * t) + r256(8));
}

TEST(GpuWorkloadBytes, PrivateBuffersAreTheStreamBatchLossesForwardScratchAndOneHeadsScores) {
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const int64_t t = 8192, h = 4096, kv = 1024, f = 14336, vocab = 128256;
  auto r256 = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  // The GEMM attention's scratch: one head's fp32 scores and their gradients, bf16 probabilities and theirs.
  const int64_t scores = r256(t * t * (4 + 4 + 2 + 2));
  const int64_t fixed = 2 * r256(t * h * 2) + 3 * r256(4 * t) + r256(4 * (vocab + 1)) + r256(8 * t) + r256(8) + scores;
  GpuWorkloadConfig config{1, t, ElementType::bf16, ElementType::f32, Checkpointing::kNone};
  EXPECT_EQ(gpu_private_bytes(model, config), fixed);
  // Selective (TorchTitan's policy) drops n1, k, x1, n2, up and the product,
  // each in its own place (their lifetimes overlap in the forward).
  config.checkpointing = Checkpointing::kSelective;
  EXPECT_EQ(gpu_private_bytes(model, config), fixed + r256(t * (3 * h + kv + 2 * f) * 2));
  config.checkpointing = Checkpointing::kFull;  // n1|x1, q|u, k, v, n2, gate|product, up
  EXPECT_EQ(gpu_private_bytes(model, config), fixed + r256(t * (3 * h + 2 * kv + 2 * f) * 2));
  // The reference kernels, asked for, need no scores.
  ASSERT_EQ(setenv("RAGGED_GPU_ATTENTION", "reference", 1), 0);
  const int64_t reference = gpu_private_bytes(model, config);
  unsetenv("RAGGED_GPU_ATTENTION");
  EXPECT_EQ(reference, fixed - scores + r256(t * (3 * h + 2 * kv + 2 * f) * 2));
}

TEST(GpuWorkloadBytes, QkNormedAttentionKeepsTheReferenceKernels) {
  // Qwen3's q/k norms are computed inside the reference kernels: no GEMM attention, no scores.
  const models::ModelSpec model = models::catalog_model("qwen3-235b-a22b");
  const GpuWorkloadConfig config{1, 4096, ElementType::bf16, ElementType::f32, Checkpointing::kNone};
  EXPECT_EQ(detail::gemm_attention_private_bytes(model, config), 0);
  const models::ModelSpec llama = models::catalog_model("llama3-8b");
  EXPECT_EQ(detail::gemm_attention_private_bytes(llama, config), int64_t{4096} * 4096 * 12);
}

void expect_regions_tile(const detail::BlockPlan& plan) {
  for (Checkpointing mode : kModes) {
    int64_t kept = 0, dropped = 0;
    for (int r = 0; r < detail::kBlockRegions; ++r) {
      const auto region = static_cast<detail::BlockRegion>(r);
      const int64_t bytes = plan.bytes[static_cast<size_t>(r)];
      int64_t& end = detail::block_keeps(region, mode, plan.layout.moe) ? kept : dropped;
      EXPECT_EQ(plan.offset(region, mode), end) << r;
      end += bytes;
      if (!detail::block_keeps(region, mode, plan.layout.moe)) {
        EXPECT_LE(plan.forward_offset(region, mode) + bytes, plan.forward_scratch_bytes(mode)) << r;
      }
    }
    EXPECT_EQ(kept, plan.kept_bytes(mode));
    EXPECT_EQ(dropped, plan.rebuilt_bytes(mode));
  }
}

TEST(GpuWorkloadBytes, CacheRegionsTileTheirBuffers) {
  for (const char* name : {"tiny-llama-4xcpu", "tiny-moe-4xcpu"}) {
    SCOPED_TRACE(name);
    expect_regions_tile(detail::block_plan(scenario(name).model, GpuWorkloadConfig{2, 128}, 1));
  }
  expect_regions_tile(detail::block_plan(arch_model(qwen3_moe_arch(1)), GpuWorkloadConfig{2, 16}, 1));
}

// ---- on a GPU (gpu_workload_harness.hpp) ----

struct Case {
  std::string name;
  models::ModelSpec model;
  int64_t sequences = 2, seq_len = 16;
  int64_t first_sequence = 0;  // the batch's place in the global batch (synthetic_batch)
};

std::vector<Case> fp32_cases() {
  models::ArchConfig bias = test_util::tiny_arch("llama");
  bias.attention_bias = true;
  models::ArchConfig qwen2 = test_util::tiny_arch("qwen2");
  qwen2.qkv_bias = true;
  return {{"tiny-llama-4xcpu", scenario("tiny-llama-4xcpu").model, 2, 128},
          {"qk_norm", arch_model(test_util::test_arch("qwen3"))},
          {"attention_bias", arch_model(bias)},
          {"qkv_bias", arch_model(qwen2)},
          {"tiny-moe-4xcpu", scenario("tiny-moe-4xcpu").model, 2, 64, 3},
          {"qwen3_moe", arch_model(qwen3_moe_arch()), 2, 16, 1},
          {"qwen3_moe_shared", arch_model(qwen3_moe_arch(1)), 2, 16, 2},
          {"qwen3_moe_router_bias", arch_model(router_bias_arch())},
          {"mixtral", arch_model(test_util::test_arch("mixtral"))}};
}

TEST_F(GpuWorkloadTest, Fp32MatchesTheHost) {
  for (const Case& c : fp32_cases()) {
    SCOPED_TRACE(c.name);
    test_util::ModelStore store(c.model, 11);
    const Batch batch = synthetic_batch(5, c.first_sequence, c.sequences, c.seq_len, c.model.arch.vocab);
    const Result host = host_result(store, batch);
    const Result gpu = run(store, GpuWorkloadConfig{c.sequences, c.seq_len, ElementType::f32, ElementType::f32}, batch);
    EXPECT_LE(std::fabs(gpu.loss - host.loss), 1e-5 * std::fabs(host.loss)) << gpu.loss << " vs " << host.loss;
    for (size_t u = 0; u < host.grads.size(); ++u) {
      for (size_t i = 0; i < host.grads[u].size(); ++i) {
        EXPECT_LE(relative_error(gpu.grads[u][i], host.grads[u][i]), 1e-4) << c.model.units[u].tensors[i].name;
      }
    }
  }
}

TEST_F(GpuWorkloadTest, Bf16StaysCloseToTheHost) {
  for (const char* name : {"tiny-llama-4xcpu", "tiny-moe-4xcpu"}) {
    SCOPED_TRACE(name);
    const models::ModelSpec model = scenario(name).model;
    test_util::ModelStore store(model, 11);
    const Batch batch = synthetic_batch(5, 1, 2, 128, model.arch.vocab);
    const Result host = host_result(store, batch);
    for (ElementType grads : {ElementType::f32, ElementType::bf16}) {
      const Result gpu = run(store, GpuWorkloadConfig{2, 128, ElementType::bf16, grads}, batch);
      EXPECT_LE(std::fabs(gpu.loss - host.loss), 2e-2 * std::fabs(host.loss)) << gpu.loss << " vs " << host.loss;
      for (size_t u = 0; u < gpu.grads.size(); ++u) {
        for (size_t i = 0; i < gpu.grads[u].size(); ++i) {
          for (float g : gpu.grads[u][i]) ASSERT_TRUE(std::isfinite(g));
          EXPECT_LE(relative_error(gpu.grads[u][i], host.grads[u][i]), 0.1) << model.units[u].tensors[i].name;
        }
      }
    }
  }
}

class GpuWorkloadCheckpointing : public GpuWorkloadTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(GpuWorkloadCheckpointing, ChangesNoBit) {
  const models::ModelSpec model =
      GetParam() == "qwen3_moe_shared" ? arch_model(qwen3_moe_arch(1)) : arch_model(test_util::test_arch(GetParam()));
  test_util::ModelStore store(model, 3);
  const Batch batch = synthetic_batch(9, 1, 2, 16, model.arch.vocab);
  for (ElementType type : {ElementType::f32, ElementType::bf16}) {
    const GpuWorkloadConfig config{2, 16, type, ElementType::f32, Checkpointing::kFull};
    device_->arena().reset();
    GpuWorkload work(model, config, device_->cublas(), stream_, device_->arena());
    const Result whole = run(store, work, config, batch, Checkpointing::kNone);
    for (Checkpointing mode : {Checkpointing::kSelective, Checkpointing::kFull}) {
      SCOPED_TRACE(std::string(models::checkpointing_name(mode)));
      const Result again = run(store, work, config, batch, mode);
      EXPECT_EQ(again.loss, whole.loss);
      for (size_t u = 0; u < whole.grads.size(); ++u) {
        for (size_t i = 0; i < whole.grads[u].size(); ++i) {
          const std::vector<float>& a = whole.grads[u][i];
          EXPECT_EQ(std::memcmp(a.data(), again.grads[u][i].data(), a.size() * sizeof(float)), 0)
              << model.units[u].tensors[i].name;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GpuWorkloadCheckpointing, ::testing::Values("qwen3", "qwen3_moe_shared", "mixtral"));

}  // namespace
}  // namespace ragged::backend::gpu
