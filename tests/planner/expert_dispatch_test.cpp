// What expert parallelism's dispatch sends per token: top_k copies with an
// all-to-all of the permuted tokens, one per destination rank with DeepEP,
// the ranks counted for a uniform router (closed form against enumeration)
// and for NeMo Automodel's FakeBalancedGate (by hand, per model).

#include "planner/expert_dispatch.hpp"

#include <cstdio>
#include <set>

#include <gtest/gtest.h>

namespace ragged::planner {
namespace {

Mesh deepep(int64_t ep, ExpertRouting routing) {
  Mesh m;
  m.ep = ep;
  m.expert_dispatcher = ExpertDispatcher::kDeepEp;
  m.expert_routing = routing;
  return m;
}

TEST(ExpertDispatch, AllToAllSendsTopKCopies) {
  Mesh m;
  m.ep = 8;
  EXPECT_DOUBLE_EQ(expert_dispatch_copies(128, 8, m), 8.0);
  m.expert_routing = ExpertRouting::kConsecutive;  // the routing does not change what the all-to-all sends
  EXPECT_DOUBLE_EQ(expert_dispatch_copies(128, 8, m), 8.0);
}

// FakeBalancedGate: token i takes experts 8i .. 8i + 7 (mod E).
//  - Qwen3-30B-A3B, 128 experts on ep 8 (16 a rank): 8i mod 16 is 0 or 8,
//    every token's experts on one rank.
//  - GPT-OSS-20B, 32 experts top 4 on ep 8 (4 a rank): 4i mod 4 = 0, one rank.
//  - DeepSeek-V3, 256 experts on ep 64 (4 a rank): two whole ranks.
//  - Kimi K2, 384 experts on ep 32 (12 a rank): 8i mod 12 cycles 0, 8, 4:
//    one rank, two (experts 8..15 straddle), one: 4/3.
TEST(ExpertDispatch, FakeBalancedGateRanksByHand) {
  const struct {
    const char* model;
    int64_t experts, top_k, ep;
    double ranks;
  } cases[] = {{"qwen3-30b-a3b", 128, 8, 8, 1.0},
               {"gpt-oss-20b", 32, 4, 8, 1.0},
               {"deepseek-v3", 256, 8, 64, 2.0},
               {"kimi-k2", 384, 8, 32, 4.0 / 3.0}};
  for (const auto& c : cases) {
    const double got = expert_dispatch_copies(c.experts, c.top_k, deepep(c.ep, ExpertRouting::kConsecutive));
    std::printf("%s ep %lld, FakeBalancedGate + DeepEP: by hand %.4f copies a token, computed %.4f (all-to-all %lld)\n",
                c.model, static_cast<long long>(c.ep), c.ranks, got, static_cast<long long>(c.top_k));
    EXPECT_NEAR(got, c.ranks, 1e-12) << c.model;
  }
}

// A uniform router: the expected ranks hit, ep (1 - C(E - E/ep, k) / C(E, k)),
// against the mean over every k-subset of 8 experts on 4 ranks.
TEST(ExpertDispatch, UniformRoutingMatchesEnumeration) {
  const int64_t experts = 8, ep = 4, per_rank = experts / ep;
  for (int64_t top_k = 1; top_k <= 4; ++top_k) {
    int64_t subsets = 0, ranks = 0;
    for (unsigned mask = 0; mask < (1u << experts); ++mask) {
      if (__builtin_popcount(mask) != top_k) continue;
      std::set<int64_t> hit;
      for (int64_t e = 0; e < experts; ++e) {
        if (mask & (1u << e)) hit.insert(e / per_rank);
      }
      ++subsets;
      ranks += static_cast<int64_t>(hit.size());
    }
    const double enumerated = static_cast<double>(ranks) / static_cast<double>(subsets);
    const double closed = expert_ranks_per_token(experts, top_k, ep, ExpertRouting::kUniform);
    std::printf("uniform, 8 experts on 4 ranks, top %lld: enumerated %.6f ranks a token, closed form %.6f\n",
                static_cast<long long>(top_k), enumerated, closed);
    EXPECT_NEAR(closed, enumerated, 1e-12);
  }
  // Qwen3-30B-A3B's 128 experts top 8 on ep 8 under a learned, balanced
  // router: 8 (1 - (112 choose 8) / (128 choose 8)) = 5.34 of 8 copies.
  const double qwen = expert_dispatch_copies(128, 8, deepep(8, ExpertRouting::kUniform));
  EXPECT_NEAR(qwen, 5.339, 0.001);
}

// DeepEP's network share: the nodes a token reaches over the ranks.
//  - DeepSeek-V3 under FakeBalancedGate, ep 64 on 8 nodes of 8: a token's 8
//    consecutive experts lie on 2 ranks of one node: 1 node, 2 ranks, 1/2.
//  - Kimi K2, ep 32 on 4 nodes of 8 (12 experts a rank, 96 a node): 4/3 ranks,
//    one node (8i mod 96 never straddles a node): 3/4.
//  - uniform, 128 experts top 8 on ep 32, 8 a node: 4 (1 - C(96, 8) / C(128, 8))
//    nodes over 32 (1 - C(124, 8) / C(128, 8)) ranks.
TEST(ExpertDispatch, DeepEpCrossesTheNetworkOnceANodeAToken) {
  EXPECT_NEAR(expert_network_share(256, 8, deepep(64, ExpertRouting::kConsecutive), 8), 0.5, 1e-12);
  EXPECT_NEAR(expert_network_share(384, 8, deepep(32, ExpertRouting::kConsecutive), 8), 0.75, 1e-12);
  double rank_missed = 1.0, node_missed = 1.0;
  for (int j = 0; j < 8; ++j) {
    rank_missed *= (124.0 - j) / (128.0 - j);
    node_missed *= (96.0 - j) / (128.0 - j);
  }
  const double by_hand = 4.0 * (1.0 - node_missed) / (32.0 * (1.0 - rank_missed));
  const double got = expert_network_share(128, 8, deepep(32, ExpertRouting::kUniform), 8);
  std::printf("uniform, 128 experts top 8 on ep 32, 8 ranks a node: by hand %.6f of the ranks' copies cross the network "
              "once a node, computed %.6f\n",
              by_hand, got);
  EXPECT_NEAR(got, by_hand, 1e-12);
  EXPECT_LT(got, 1.0);
}

TEST(ExpertDispatch, OnlyDeepEpAcrossNodesSendsOnceANode) {
  Mesh all_to_all;
  all_to_all.ep = 32;
  EXPECT_DOUBLE_EQ(expert_network_share(128, 8, all_to_all, 8), 1.0);  // a copy per token and expert
  const Mesh m = deepep(8, ExpertRouting::kUniform);
  EXPECT_DOUBLE_EQ(expert_network_share(128, 8, m, 8), 1.0);  // the group inside one node
  EXPECT_DOUBLE_EQ(expert_network_share(128, 8, m, 1), 1.0);  // one rank a node: nodes are ranks
}

}  // namespace
}  // namespace ragged::planner
