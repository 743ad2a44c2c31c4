// The GPU's tensor-parallel compute (gpu_workload_mesh.hpp): where it keeps
// what it computes (known without a GPU), and, on a GPU, one rank's parts
// and exchanges in the Program's order against the whole-block workload.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/gpu_workload_layout.hpp"
#include "backend/cuda/gpu_workload_mesh.hpp"
#include "backend/mesh_step.hpp"
#include "common/errors.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"
#include "tests/backend/gpu_workload_harness.hpp"

namespace ragged::backend::gpu {
namespace {

using models::UnitKind;
using models::UnitPart;

planner::ResolvedScenario with_mesh(const std::string& name, int tp, int cp = 1) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario(name), tp * cp);
  loaded.written.mutable_training()->mutable_mesh()->set_tp(tp);
  loaded.written.mutable_training()->mutable_mesh()->set_cp(cp);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

planner::ResolvedScenario with_tp(const std::string& name, int tp) { return with_mesh(name, tp); }

TEST(GpuMeshPlan, EveryBufferHasItsBytesAndNoneOverlap) {
  for (const auto& [tp, cp] : std::vector<std::pair<int, int>>{{2, 1}, {1, 2}, {2, 2}}) {
    SCOPED_TRACE(testing::Message() << "tp " << tp << ", cp " << cp);
    const planner::ResolvedScenario r = with_mesh("tiny-llama-4xcpu", tp, cp);
    const GpuWorkloadConfig config{2, 128, ElementType::bf16, ElementType::f32};
    const detail::MeshPlan p = detail::mesh_plan(r.model, config, tp, cp);
    EXPECT_EQ(p.tokens, 256 / cp);  // the rank's chunks of the 2 sequences
    EXPECT_EQ(p.rows, 256 / cp / tp);
    EXPECT_EQ(p.seq_len, 128);
    EXPECT_EQ(p.vocab * tp, r.whole().arch.vocab);  // the rank's vocabulary rows
    const GpuWorkloadConfig local = cp > 1 ? detail::context_local(config, cp) : config;
    const detail::HeadPlan head = detail::head_plan(r.model, local);
    EXPECT_EQ(head.tokens, p.tokens);
    const int64_t whole = p.tokens * p.hidden * 2, rows = p.rows * p.hidden * 2;
    const int64_t group = cp > 1 ? cp * p.tokens : 0, keys = group * p.kv_width * 2;
    EXPECT_EQ(p.kv_width, r.model.arch.kv_heads * r.model.arch.head_dim);
    // [begin, end) of every buffer, in carving order: each starts at or after the previous end.
    std::vector<std::pair<int64_t, int64_t>> spans;
    const std::array<int64_t, detail::kMeshBuffers> sizes = {
        head.saved_bytes(), tp * p.tokens * 3 * 8, p.tokens * 8, 8, head.dlogits_bytes, whole, whole, 0, rows, rows,
        4 * p.tokens, 4 * p.tokens, 4 * p.tokens, 4 * (p.vocab + 1), 2 * keys, keys, keys, keys, keys,
        cp > 1 ? 4 * p.tokens : 0, 4 * group, 0, 0, 0, 0, 0, 0};  // dense: no expert routing or exchange
    for (int b = 0; b < detail::kMeshBuffers; ++b) {
      if (b == detail::kMeshScratch) continue;  // the largest scratch, checked below
      spans.emplace_back(p.offset[static_cast<size_t>(b)],
                         p.offset[static_cast<size_t>(b)] + sizes[static_cast<size_t>(b)]);
    }
    for (size_t u = 0; u + 1 < r.model.units.size(); ++u) {
      spans.emplace_back(p.output[u], p.output[u] + rows);
      if (u == 0) {
        EXPECT_EQ(p.residual[u], -1);
        EXPECT_EQ(p.cache[u], -1);
        continue;
      }
      const detail::BlockPlan block = detail::block_plan(r.model, local, static_cast<int>(u));
      EXPECT_EQ(block.tokens, p.tokens);
      EXPECT_GE(p.offset[detail::kMeshScratch + 1] - p.offset[detail::kMeshScratch], block.scratch_bytes);
      spans.emplace_back(p.residual[u], p.residual[u] + rows);
      spans.emplace_back(p.cache[u], p.cache[u] + block.saved_bytes());
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first) << i;
    EXPECT_LE(spans.back().second, p.bytes);
    EXPECT_EQ(gpu_mesh_private_bytes(r.model, config, tp, cp), p.bytes);
  }
}

TEST(GpuMeshPlan, RefusesSequencesCpDoesNotCutIntoEqualChunks) {
  const planner::ResolvedScenario r = with_mesh("tiny-llama-4xcpu", 1, 2);
  try {
    detail::mesh_plan(r.model, GpuWorkloadConfig{2, 126}, 1, 2);  // 126 tokens: not 4 equal chunks
    FAIL() << "a sequence cp cannot cut was planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.mesh.cp 2: sequences of 126 tokens do not cut into 2 x cp equal "
                                          "chunks"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(detail::context_local(GpuWorkloadConfig{2, 128}, 2).seq_len, 64);
}

TEST(GpuMeshPlan, RefusesRowsTpDoesNotSplitAndCarvesTheExpertsRouting) {
  const planner::ResolvedScenario r = with_tp("tiny-llama-4xcpu", 2);
  EXPECT_THROW(detail::mesh_plan(r.model, GpuWorkloadConfig{1, 3}, 2), InputError);
  // A mixture-of-experts block under tp routes every token of the micro-batch on each rank.
  const planner::ResolvedScenario moe = with_tp("tiny-moe-4xcpu", 2);
  const GpuWorkloadConfig config{2, 64, ElementType::bf16, ElementType::f32};
  const detail::ExpertBuffers experts = detail::expert_buffers(moe.model, config);
  EXPECT_EQ(experts.tables, detail::routing_layout(2 * 64 * moe.model.arch.experts_per_token).bytes);
  EXPECT_EQ(experts.output, 2 * 64 * moe.model.arch.hidden * 2);
  const detail::MeshPlan p = detail::mesh_plan(moe.model, config, 2);
  EXPECT_GE(p.offset[detail::kMeshExpertOutput] - p.offset[detail::kMeshExpertRows], experts.tables);
  EXPECT_GE(p.bytes - p.offset[detail::kMeshExpertOutput], experts.output);
  EXPECT_EQ(detail::expert_buffers(r.model, config).tables, 0);  // dense: none
}

planner::ResolvedScenario with_ep(int tp, int ep) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario("tiny-moe-4xcpu"), tp * ep);
  loaded.written.mutable_training()->mutable_mesh()->set_tp(tp);
  loaded.written.mutable_training()->mutable_mesh()->set_ep(ep);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

// An ep rank's experts unit keeps its copies' outputs and shared output as
// their source, and as their owner the rows of every source's every token
// routed to min(top_k, local) of its experts; the block before it keeps the
// routed copies' rows (what the dispatch sends) but no routed expert's.
TEST(GpuMeshPlan, ExpertParallelRanksCarveTheirExpertsUnitsAndExchanges) {
  for (const int tp : {1, 2}) {
    SCOPED_TRACE(testing::Message() << "tp " << tp << " x ep 2");
    const planner::ResolvedScenario r = with_ep(tp, 2);
    ASSERT_EQ(r.model.split.ep, 2);
    check_gpu_supported(r.model);
    const GpuWorkloadConfig config{2, 64, ElementType::bf16, ElementType::f32};
    const detail::MeshPlan p = detail::mesh_plan(r.model, config, tp);
    const int64_t t = 128, h = r.model.arch.hidden, k = r.model.arch.experts_per_token, local = 8 / 2;
    int experts_units = 0;
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (size_t u = 0; u + 1 < r.model.units.size(); ++u) {
      spans.emplace_back(p.output[u], p.output[u] + p.rows * h * 2);
      if (r.model.units[u].kind != UnitKind::kExperts) {
        if (u == 0) continue;
        const detail::BlockPlan block = detail::block_plan(r.model, config, static_cast<int>(u));
        EXPECT_TRUE(block.layout.experts_apart);
        EXPECT_EQ(block.expert_ffn, 0);
        EXPECT_EQ(block.bytes[detail::kRoutedGate], 0);
        EXPECT_EQ(block.bytes[detail::kRoutedInput], t * k * h * 2);
        spans.emplace_back(p.residual[u], p.residual[u] + p.rows * h * 2);
        spans.emplace_back(p.cache[u], p.cache[u] + block.saved_bytes());
        continue;
      }
      ++experts_units;
      EXPECT_EQ(p.residual[u], -1);
      const detail::ExpertsPlan e = detail::experts_plan(r.model, config, static_cast<int>(u));
      EXPECT_EQ(e.layout.local, local);
      EXPECT_EQ(e.ranks, 2);
      EXPECT_EQ(e.rows, 2 * t * std::min(k, local));
      EXPECT_EQ(e.ffn * tp, r.whole().arch.moe_intermediate);  // a tp rank's columns of each expert
      EXPECT_EQ(e.combined, 0);
      EXPECT_GE(e.shared_output - e.combined, t * k * h * 2);
      EXPECT_GE(e.product - e.input, e.rows * h * 2 + 2 * e.rows * e.ffn * 2);
      EXPECT_EQ(e.bytes - e.product, detail::round_up(e.rows * e.ffn * 2));
      spans.emplace_back(p.cache[u], p.cache[u] + e.bytes);
      EXPECT_GE(p.offset[detail::kMeshExpertReceive] - p.offset[detail::kMeshExpertSend], e.rows * h * 2);
      EXPECT_GE(p.offset[detail::kMeshExpertScratch] - p.offset[detail::kMeshExpertReceive],
                std::max(e.rows, t * k) * h * 2);
      EXPECT_GE(p.offset[detail::kMeshExpertCounts] - p.offset[detail::kMeshExpertScratch], 2 * e.rows * e.ffn * 2);
      EXPECT_EQ(e.counts_bytes, 2 * 2 * local * 8);
    }
    EXPECT_EQ(experts_units, 2);
    std::sort(spans.begin(), spans.end());
    EXPECT_GE(spans.front().first, p.offset[detail::kMeshExpertCounts] + 2 * 2 * local * 8);
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first) << i;
    EXPECT_LE(spans.back().second, p.bytes);
  }
}

TEST(GpuMeshPlan, TheEmbeddingsBackwardSkipsAnotherRanksRows) {
  std::vector<int32_t> order, rows;
  detail::group_by_token({2, -1, 0, 2, -1, 1}, 3, order, rows);
  EXPECT_EQ(rows, (std::vector<int32_t>{0, 1, 2, 4}));
  EXPECT_EQ(order, (std::vector<int32_t>{2, 5, 0, 3}));
}

// tp 1: the mesh workload's parts, exchanges (in place over one rank) and
// vocabulary-parallel loss in the Program's order make in fp32 the bits the
// whole-block workload makes: the same kernels on the same values, the
// residual sums commuted.
class GpuMeshWorkloadTest : public gpu_test::GpuWorkloadTest {
 protected:
  gpu_test::Result run_mesh(const test_util::ModelStore& store, const GpuWorkloadConfig& config, const Batch& batch) {
    device_->arena().reset();
    GpuMeshWorkload work(store.model, config, TensorParallelRank{0, 1}, ContextParallelRank{0, 1}, ExpertParallelRank{},
                         device_->cublas(), stream_, device_->arena());
    const int units = store.units();
    std::vector<std::vector<const void*>> params(static_cast<size_t>(units));
    std::vector<std::vector<void*>> grads(static_cast<size_t>(units));
    for (int u = 0; u < units; ++u) {
      for (const std::vector<float>& tensor : store.params[static_cast<size_t>(u)]) {
        params[static_cast<size_t>(u)].push_back(upload(tensor, config.params));
        grads[static_cast<size_t>(u)].push_back(
            device_->arena().allocate(tensor.size() * static_cast<size_t>(element_bytes(config.grads))));
      }
    }
    const auto exchange = [&](int unit, UnitPart part, TpPass pass, TpCollective collective) {
      const TpStep step{unit, part, pass, collective};
      work.exchange_begin(step, stream_);  // one rank: the collective leaves its slot as it is
      work.exchange_end(step, stream_);
    };
    work.set_batch(batch);
    for (int u = 0; u < units; ++u) {
      const auto p = static_cast<size_t>(u);
      switch (store.model.units[p].kind) {
        case UnitKind::kEmbedding:
          work.forward(u, params[p]);
          exchange(u, UnitPart::kWhole, TpPass::kForward, TpCollective::kReduceScatter);
          break;
        case UnitKind::kHead:
          exchange(u, UnitPart::kWhole, TpPass::kForward, TpCollective::kAllGather);
          work.forward(u, params[p]);
          exchange(u, UnitPart::kWhole, TpPass::kForward, TpCollective::kLossStats);
          break;
        default:
          for (UnitPart part : {UnitPart::kAttention, UnitPart::kMlp}) {
            exchange(u, part, TpPass::kForward, TpCollective::kAllGather);
            work.forward_part(u, part, params[p]);
            exchange(u, part, TpPass::kForward, TpCollective::kReduceScatter);
          }
      }
    }
    for (int u = units - 1; u >= 0; --u) {
      const auto p = static_cast<size_t>(u);
      switch (store.model.units[p].kind) {
        case UnitKind::kHead:
          work.loss_backward(u);
          work.backward(u, params[p], grads[p]);
          exchange(u, UnitPart::kWhole, TpPass::kBackward, TpCollective::kReduceScatter);
          break;
        case UnitKind::kEmbedding:
          exchange(u, UnitPart::kWhole, TpPass::kBackward, TpCollective::kAllGather);
          work.backward(u, params[p], grads[p]);
          break;
        default:
          for (UnitPart part : {UnitPart::kMlp, UnitPart::kAttention}) {
            exchange(u, part, TpPass::kBackward, TpCollective::kAllGather);
            work.backward_part(u, part, params[p], grads[p]);
            exchange(u, part, TpPass::kBackward, TpCollective::kReduceScatter);
          }
      }
    }
    return result_of(store, work.take_mean_loss(), grads, config.grads);
  }
};

// Dense and mixture-of-experts blocks (the experts' routing in the mesh
// workload's own buffers).
TEST_F(GpuMeshWorkloadTest, OneRanksPartsMakeTheWholeBlocksBitsInFp32) {
  for (const std::string name : {"tiny-llama-4xcpu", "tiny-moe-4xcpu"}) {
    SCOPED_TRACE(name);
    const planner::ResolvedScenario r = planner::resolve_scenario(scenarios::load_scenario(name));
    test_util::ModelStore store(r.model, 11);
    const GpuWorkloadConfig config{2, 64, ElementType::f32, ElementType::f32};
    const Batch batch = synthetic_batch(5, 0, 2, 64, r.model.arch.vocab);
    const gpu_test::Result whole = run(store, config, batch);
    const gpu_test::Result parts = run_mesh(store, config, batch);
    EXPECT_EQ(parts.loss, whole.loss);
    gpu_test::expect_gradients(parts, whole, r.model, 0);
  }
}

}  // namespace
}  // namespace ragged::backend::gpu
