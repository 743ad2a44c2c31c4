// Where an experts unit's routed rows travel (expert_rows.hpp), checked by
// hand and against the host workload's own messages: the GPU executor sends
// the same rows in the same order as the host's "ep dispatch" (which puts
// the local expert's index in front of each row) and its owners get back,
// per source, what the host's "ep combine" returns.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backend/expert_pieces.hpp"
#include "backend/expert_rows.hpp"
#include "backend/reference.hpp"
#include "backend/workload.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::backend {
namespace {

// 2 ranks of 2 experts: a source routed 3 copies to expert 0, none to 1,
// 2 to expert 2 and 1 to expert 3; the owner got 3 and 0 rows from source
// 0, 1 and 2 from source 1.
TEST(ExpertRows, SourcesSendInCopyOrderAndOwnersKeepEachExpertsRowsTogether) {
  const std::vector<int64_t> counts = expert_row_counts({0, 3, 3, 5, 6}, 2);
  EXPECT_EQ(counts, (std::vector<int64_t>{3, 0, 2, 1}));
  EXPECT_EQ(source_row_blocks(counts, 2), (std::vector<RowBlock>{{0, 0, 3}, {0, 3, 0}, {1, 3, 2}, {1, 5, 1}}));
  const std::vector<int64_t> received = {3, 0, 1, 2};
  // Expert 0: source 0's 3 rows, then source 1's 1; expert 1: source 1's 2.
  EXPECT_EQ(owner_row_blocks(received, 2), (std::vector<RowBlock>{{0, 0, 3}, {0, 4, 0}, {1, 3, 1}, {1, 4, 2}}));
  const std::vector<ExpertRun> runs = owner_expert_runs(received, 2);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].first, 0);
  EXPECT_EQ(runs[0].rows, 4);
  EXPECT_EQ(runs[1].first, 4);
  EXPECT_EQ(runs[1].rows, 2);
  EXPECT_EQ(owner_row_bound(2, 128, 2, 4), 2 * 128 * 2);
  EXPECT_EQ(owner_row_bound(4, 128, 8, 2), 4 * 128 * 2);  // a token reaches at most a rank's 2 experts
}

planner::ResolvedScenario with_ep(const std::string& name, int ep) {
  auto loaded = scenarios::with_total_gpus(scenarios::load_scenario(name), ep);
  loaded.written.mutable_training()->mutable_mesh()->set_ep(ep);
  return planner::resolve_scenario(scenarios::rebuild(std::move(loaded)));
}

// A source's copies per expert, from its block's routing (top_k experts per token).
std::vector<int64_t> expert_offsets(const std::vector<int64_t>& routing, int64_t experts) {
  std::vector<int64_t> offsets(static_cast<size_t>(experts + 1), 0);
  for (const int64_t e : routing) ++offsets[static_cast<size_t>(e + 1)];
  for (size_t e = 1; e < offsets.size(); ++e) offsets[e] += offsets[e - 1];
  return offsets;
}

TEST(ExpertRows, AreTheHostWorkloadsDispatchAndCombineInOrder) {
  const planner::ResolvedScenario r = with_ep("tiny-moe-4xcpu", 2);
  const models::ModelSpec& split = r.model;
  const int64_t sequences = 2, seq_len = 64, h = split.arch.hidden;
  std::vector<ModelParams> values;
  std::vector<std::unique_ptr<HostWorkload>> owned;
  std::vector<HostWorkload*> ranks;
  const ModelParams whole = initial_params(r.whole(), 99);
  for (int rank = 0; rank < 2; ++rank) {
    ModelParams& mine = values.emplace_back();
    const std::vector<std::vector<TensorOrigin>> origins = tensor_origins(r.whole(), split, rank);
    for (size_t u = 0; u < split.units.size(); ++u) {
      for (size_t t = 0; t < split.units[u].tensors.size(); ++t) {
        const auto begin = whole[static_cast<size_t>(origins[u][t].id)].begin() + origins[u][t].first;
        mine.emplace_back(begin, begin + split.units[u].tensors[t].numel());
      }
    }
    owned.push_back(std::make_unique<HostWorkload>(split, sequences, seq_len, TensorParallelRank{},
                                                   ContextParallelRank{}, ExpertParallelRank{rank, 2}));
    owned.back()->set_batch(synthetic_batch(3, rank * sequences, sequences, seq_len, split.arch.vocab));
    ranks.push_back(owned.back().get());
  }
  const auto params = [&](int rank, int unit) {
    ConstTensors out;
    size_t base = 0;
    for (int u = 0; u < unit; ++u) base += split.units[static_cast<size_t>(u)].tensors.size();
    for (size_t t = 0; t < split.units[static_cast<size_t>(unit)].tensors.size(); ++t) {
      out.push_back(values[static_cast<size_t>(rank)][base + t].data());
    }
    return out;
  };
  int experts_unit = 0;
  while (split.units[static_cast<size_t>(experts_unit)].kind != models::UnitKind::kExperts) {
    for (int rank = 0; rank < 2; ++rank)
      ranks[static_cast<size_t>(rank)]->forward(experts_unit, params(rank, experts_unit));
    ++experts_unit;
  }
  const int64_t local = split.arch.experts / 2;
  std::vector<std::vector<int64_t>> sent;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(testing::Message() << "source " << rank);
    const std::vector<int64_t> routing = ranks[static_cast<size_t>(rank)]->routing(experts_unit - 1);
    sent.push_back(expert_row_counts(expert_offsets(routing, split.arch.experts), 2));
    const EpExchange x = ranks[static_cast<size_t>(rank)]->ep_begin(EpStep{experts_unit, TpPass::kForward});
    // The host's rows, block by block: each row the block's local expert's index, then h values.
    const float* row = x.send;
    const std::vector<RowBlock> blocks = source_row_blocks(sent.back(), 2);
    ASSERT_EQ(static_cast<int64_t>(blocks.size()), 2 * local);
    for (size_t b = 0; b < blocks.size(); ++b) {
      EXPECT_EQ(blocks[b].peer, static_cast<int64_t>(b) / local);
      for (int64_t i = 0; i < blocks[b].rows; ++i, row += h + 1) {
        ASSERT_EQ(row[0], static_cast<float>(static_cast<int64_t>(b) % local)) << "block " << b << ", row " << i;
      }
    }
    int64_t total = 0;
    for (int peer = 0; peer < 2; ++peer) {
      int64_t rows = 0;
      for (int64_t j = 0; j < local; ++j) rows += sent.back()[static_cast<size_t>(peer * local + j)];
      EXPECT_EQ(x.send_counts[static_cast<size_t>(peer)], rows * (h + 1)) << "to rank " << peer;
      total += x.send_counts[static_cast<size_t>(peer)];
    }
    EXPECT_EQ(row, x.send + total);
  }
  expert_exchange(ranks, EpStep{experts_unit, TpPass::kForward});
  for (int rank = 0; rank < 2; ++rank)
    ranks[static_cast<size_t>(rank)]->forward(experts_unit, params(rank, experts_unit));
  // The owner's combine returns each source what the source's blocks from it hold.
  for (int owner = 0; owner < 2; ++owner) {
    SCOPED_TRACE(testing::Message() << "owner " << owner);
    std::vector<int64_t> received;
    for (int source = 0; source < 2; ++source) {
      for (int64_t j = 0; j < local; ++j)
        received.push_back(sent[static_cast<size_t>(source)][static_cast<size_t>(owner * local + j)]);
    }
    const EpExchange back = ranks[static_cast<size_t>(owner)]->ep_begin(EpStep{experts_unit, TpPass::kForward});
    for (int source = 0; source < 2; ++source) {
      int64_t mine = 0, theirs = 0;
      for (const RowBlock& b : owner_row_blocks(received, 2)) mine += b.peer == source ? b.rows : 0;
      for (const RowBlock& b : source_row_blocks(sent[static_cast<size_t>(source)], 2))
        theirs += b.peer == owner ? b.rows : 0;
      EXPECT_EQ(back.send_counts[static_cast<size_t>(source)], mine * h) << "to source " << source;
      EXPECT_EQ(mine, theirs);
    }
    int64_t rows = 0;
    for (const ExpertRun& run : owner_expert_runs(received, 2)) rows += run.rows;
    EXPECT_LE(rows, owner_row_bound(2, sequences * seq_len, split.arch.experts_per_token, local));
  }
}

}  // namespace
}  // namespace ragged::backend
