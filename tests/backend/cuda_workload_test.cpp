// The GPU workload. On every machine with the toolkit: what it supports, and
// that its memory fits the buffers the Program gives each unit. On a GPU
// (skipped without one): its loss and gradients against the host workload's
// (fp32 closely, bf16 loosely), and checkpointing that changes no bit.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
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

TEST(GpuWorkloadSupport, AcceptsDenseLlamaStyleModels) {
  EXPECT_NO_THROW(check_gpu_supported(models::catalog_model("llama3-8b")));
  EXPECT_NO_THROW(check_gpu_supported(scenario("tiny-llama-4xcpu").model));
  for (const char* name : {"qwen3", "llama"}) {
    EXPECT_NO_THROW(check_gpu_supported(arch_model(test_util::test_arch(name))));
  }
}

TEST(GpuWorkloadSupport, RefusesWhatOnlyTheHostRuns) {
  expect_refused(scenario("tiny-moe-4xcpu").model, "mixture-of-experts");
  expect_refused(models::catalog_model("deepseek-v3"), "multi-head latent attention");
  models::ArchConfig tied = test_util::tiny_arch("qwen2");
  tied.tie_embeddings = true;
  expect_refused(arch_model(tied), "tied embeddings");
  models::ArchConfig sinks = test_util::tiny_arch("llama");
  sinks.attention_sinks = true;
  expect_refused(arch_model(sinks), "attention sinks");
  EXPECT_THROW(gpu_unit_bytes(scenario("tiny-moe-4xcpu").model, GpuWorkloadConfig{}, 1), InputError);
}

// What the Program gives a unit: its activation buffer and backward workspace.
struct UnitBuffers {
  int64_t activations = 0, workspace = 0;
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
    } else if (buffer.kind == planner::BufferKind::kWorkspace) {
      out.at(static_cast<size_t>(buffer.unit)).workspace = buffer.bytes;
    }
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
    EXPECT_LE(need.rebuilt(mode) + need.workspace, buffers[u].workspace);
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

TEST(GpuWorkloadBytes, PrivateBuffersAreTheStreamBatchLossesAndForwardScratch) {
  const models::ModelSpec model = models::catalog_model("llama3-8b");
  const int64_t t = 8192, h = 4096, kv = 1024, f = 14336, vocab = 128256;
  auto r256 = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  const int64_t fixed = 2 * r256(t * h * 2) + 3 * r256(4 * t) + r256(4 * (vocab + 1)) + r256(8 * t) + r256(8);
  GpuWorkloadConfig config{1, t, ElementType::bf16, ElementType::f32, Checkpointing::kNone};
  EXPECT_EQ(gpu_private_bytes(model, config), fixed);
  config.checkpointing = Checkpointing::kSelective;  // norm outputs and SwiGLU product, one at a time
  EXPECT_EQ(gpu_private_bytes(model, config), fixed + r256(t * f * 2));
  config.checkpointing = Checkpointing::kFull;  // n1|x1, q|u, k, v, n2, gate|product, up
  EXPECT_EQ(gpu_private_bytes(model, config), fixed + r256(t * (3 * h + 2 * kv + 2 * f) * 2));
}

TEST(GpuWorkloadBytes, CacheRegionsTileTheirBuffers) {
  const models::ModelSpec model = scenario("tiny-llama-4xcpu").model;
  const detail::BlockPlan plan = detail::block_plan(model, GpuWorkloadConfig{2, 128}, 1);
  for (Checkpointing mode : kModes) {
    int64_t kept = 0, dropped = 0;
    for (int r = 0; r < detail::kBlockRegions; ++r) {
      const auto region = static_cast<detail::BlockRegion>(r);
      const int64_t bytes = plan.bytes[static_cast<size_t>(r)];
      int64_t& end = detail::block_keeps(region, mode) ? kept : dropped;
      EXPECT_EQ(plan.offset(region, mode), end) << r;
      end += bytes;
      if (!detail::block_keeps(region, mode)) {
        EXPECT_LE(plan.forward_offset(region, mode) + bytes, plan.forward_scratch_bytes(mode)) << r;
      }
    }
    EXPECT_EQ(kept, plan.kept_bytes(mode));
    EXPECT_EQ(dropped, plan.rebuilt_bytes(mode));
  }
}

// ---- on a GPU (gpu_workload_harness.hpp) ----

struct Case {
  std::string name;
  models::ModelSpec model;
  int64_t sequences = 2, seq_len = 16;
};

std::vector<Case> fp32_cases() {
  models::ArchConfig bias = test_util::tiny_arch("llama");
  bias.attention_bias = true;
  models::ArchConfig qwen2 = test_util::tiny_arch("qwen2");
  qwen2.qkv_bias = true;
  return {{"tiny-llama-4xcpu", scenario("tiny-llama-4xcpu").model, 2, 128},
          {"qk_norm", arch_model(test_util::test_arch("qwen3"))},
          {"attention_bias", arch_model(bias)},
          {"qkv_bias", arch_model(qwen2)}};
}

TEST_F(GpuWorkloadTest, Fp32MatchesTheHost) {
  for (const Case& c : fp32_cases()) {
    SCOPED_TRACE(c.name);
    test_util::ModelStore store(c.model, 11);
    const Batch batch = synthetic_batch(5, 0, c.sequences, c.seq_len, c.model.arch.vocab);
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
  const models::ModelSpec model = scenario("tiny-llama-4xcpu").model;
  test_util::ModelStore store(model, 11);
  const Batch batch = synthetic_batch(5, 0, 2, 128, model.arch.vocab);
  const Result host = host_result(store, batch);
  for (ElementType grads : {ElementType::f32, ElementType::bf16}) {
    const Result gpu = run(store, GpuWorkloadConfig{2, 128, ElementType::bf16, grads}, batch);
    EXPECT_LE(std::fabs(gpu.loss - host.loss), 2e-2 * std::fabs(host.loss)) << gpu.loss << " vs " << host.loss;
    for (const auto& unit : gpu.grads) {
      for (const auto& tensor : unit) {
        for (float g : tensor) ASSERT_TRUE(std::isfinite(g));
      }
    }
  }
}

TEST_F(GpuWorkloadTest, CheckpointingChangesNoBit) {
  const models::ModelSpec model = arch_model(test_util::test_arch("qwen3"));
  test_util::ModelStore store(model, 3);
  const Batch batch = synthetic_batch(9, 0, 2, 16, model.arch.vocab);
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

}  // namespace
}  // namespace ragged::backend::gpu
