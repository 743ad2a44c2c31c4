// Property tests of every layout strategy on random units: >= 10,000 seeded
// instances (tensor mixes, world sizes 1..16,384, granularities, alignments),
// each laid out by all six strategies and checked against layout_problems,
// the DBuffer address map and the RaggedShard of every tensor.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/errors.hpp"
#include "planner/dbuffer.hpp"
#include "planner/layout_check.hpp"
#include "planner/layout_strategy.hpp"
#include "planner/lower_bound.hpp"
#include "planner/ragged_shard.hpp"

namespace ragged::planner {
namespace {

using Shape = std::vector<int64_t>;

constexpr int kInstances = 10'000;
constexpr int64_t kRowLengths[] = {64,   128,  256,  512,  576,  1024,  1536,  2048,
                                   2880, 4096, 5120, 7168, 8192, 11008, 14336, 16384};
constexpr int64_t kNamedWorlds[] = {1, 2, 3, 7, 8, 97, 1024, 4099, 8191, 16384};
// Building a RaggedShard is O(m): past this many tensor-ranks, a sample of tensors is checked.
constexpr int64_t kShardBudget = int64_t{1} << 18;

struct Rng {
  std::mt19937_64 engine;
  int64_t uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine() % static_cast<uint64_t>(hi - lo + 1));
  }
  // Spread over orders of magnitude: a random bit length, then a value of that length.
  int64_t log_uniform(int64_t lo, int64_t hi) {
    const int bits = static_cast<int>(uniform(0, 63 - __builtin_clzll(static_cast<uint64_t>(hi))));
    return std::clamp(uniform(int64_t{1} << bits, (int64_t{2} << bits) - 1), lo, hi);
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }
  template <size_t N>
  int64_t pick(const int64_t (&values)[N]) {
    return values[uniform(0, N - 1)];
  }
};

// Granule policies: element-wise (0), k rows, one whole (expert) matrix, or a mix per tensor.
constexpr int64_t kWholeMatrix = -1, kMixed = -2;
constexpr int64_t kGranularities[] = {0, 1, 16, 128, kWholeMatrix, kMixed};
constexpr const char* kMixes[] = {"dense", "moe", "random", "tiny", "embedding", "uniform"};

struct Instance {
  UnitProblem problem;
  std::vector<Shape> shapes;
  std::string mix;
};

// Adds tensors with their granules as GranularityPolicy gives them: vectors
// element-wise; matrices k rows of the last dim, or one whole (expert) matrix.
struct Generator {
  Rng& rng;
  int64_t granularity;
  Instance out;

  void add(Shape shape) {
    if (out.shapes.size() >= 60) return;
    PlanTensor t;
    t.elements = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
    t.dim0 = shape[0];
    t.dim0_stride = t.elements / t.dim0;
    const int64_t g = shape.size() == 1 ? 0 : granularity == kMixed ? kGranularities[rng.uniform(0, 4)] : granularity;
    if (g == kWholeMatrix) t.granule = shape[shape.size() - 2] * shape.back();
    if (g > 0) t.granule = g * shape.back();
    out.problem.tensors.push_back(t);
    out.shapes.push_back(std::move(shape));
  }
};

Instance random_instance(Rng& rng) {
  Generator gen{rng, rng.pick(kGranularities), {}};
  const int64_t h = rng.pick({512, 1024, 2048, 2880, 4096});
  const int64_t mix = rng.uniform(0, 5);
  switch (mix) {
    case 0: {  // dense transformer layers
      const int64_t kv = h / rng.pick({1, 4, 8}), ffn = rng.pick({4, 3}) * h;
      for (int64_t layers = rng.uniform(1, 6); layers > 0; --layers) {
        gen.add({h});
        for (int64_t rows : {h, kv, kv, h}) gen.add({rows, h});
        if (rng.chance(30)) gen.add({kv});  // a bias
        gen.add({h});
        for (const Shape& mlp : {Shape{ffn, h}, Shape{ffn, h}, Shape{h, ffn}}) gen.add(mlp);
      }
      break;
    }
    case 1: {  // MoE: experts as separate matrices or fused 3-D tensors
      const int64_t experts = rng.uniform(2, 32), ffn = rng.pick({256, 512, 1536, 2048, 2880});
      gen.add({h});
      gen.add({experts, h});
      if (rng.chance(50)) {
        gen.add({experts, 2 * ffn, h});
        gen.add({experts, h, ffn});
      } else {
        for (int64_t e = 0; e < 3 * experts; ++e) gen.add(e % 3 == 2 ? Shape{h, ffn} : Shape{ffn, h});
      }
      break;
    }
    case 2: {                                             // anything: vectors and matrices of every size
      const int64_t odd_cols = 64 * rng.uniform(1, 256);  // at most one unusual row length
      for (int64_t n = rng.uniform(1, 60); n > 0; --n) {
        const int64_t cols = rng.chance(10) ? odd_cols : rng.pick(kRowLengths);
        if (rng.chance(30))
          gen.add({rng.log_uniform(1, 16384)});
        else
          gen.add({rng.log_uniform(1, 50'000'000 / cols), cols});
      }
      break;
    }
    case 3:  // tiny tensors: most ranks of a large world hold nothing
      for (int64_t n = rng.uniform(1, 20); n > 0; --n) gen.add({rng.uniform(1, 24), rng.uniform(1, 16)});
      break;
    case 4: {  // a huge embedding with its neighbours
      const int64_t vocab = rng.pick({32000, 128256, 151936, 201088}), hidden = rng.pick({2880, 4096, 7168});
      gen.add({vocab, hidden});
      if (rng.chance(50)) gen.add({hidden});
      if (rng.chance(30)) gen.add({vocab, hidden});
      break;
    }
    default: {  // many equal matrices, e.g. the experts of one layer
      const int64_t rows = rng.log_uniform(1, 4096), cols = rng.pick(kRowLengths);
      for (int64_t n = rng.uniform(1, 60); n > 0; --n) gen.add({rows, cols});
      break;
    }
  }
  gen.out.mix = kMixes[mix];
  UnitProblem& p = gen.out.problem;
  p.ranks = rng.chance(50) ? rng.pick(kNamedWorlds) : rng.log_uniform(1, 16384);
  p.collective_align = p.tensor_align = rng.pick({8, 8, 8, 8, 8, 8, 8, 8, 4, 1});
  return std::move(gen.out);
}

// Ranks to check: all of a small world, else 0, m-1 and 30 random ones.
std::vector<int64_t> sample_ranks(Rng& rng, int64_t m) {
  std::vector<int64_t> ranks(static_cast<size_t>(m <= 64 ? m : 32));
  std::iota(ranks.begin(), ranks.end(), 0);
  for (size_t j = 1; m > 64 && j < ranks.size(); ++j) ranks[j] = j == 1 ? m - 1 : rng.uniform(1, m - 2);
  return ranks;
}

// The first violated property of one layout, or "". `lower` is the problem's
// lower bound; ragged and vescale-paper (`searched`) always honour granules.
std::string check_layout(const Instance& in, const UnitLayout& l, Rng& rng, int64_t lower, bool searched) {
  const UnitProblem& p = in.problem;
  const std::vector<std::string> problems = layout_problems(p, l);
  if (!problems.empty()) return problems.front();
  const int64_t shard = l.shard_size, m = p.ranks, count = static_cast<int64_t>(p.tensors.size());
  const bool contiguous = l.placement == Placement::kContiguous;
  if (searched && (!l.honours_granularity || l.lower_bound_shard_size != lower))
    return "off granules or no lower bound";
  if (contiguous && l.honours_granularity && l.aligned_shards && shard < lower)
    return fmt::format("S {} < bound {}", shard, lower);

  // The DBuffer views of each sampled rank tile [0, S) without overlap;
  // seen[t][j] = {elements, first tensor offset} of tensor t on sampled rank j.
  const std::vector<int64_t> ranks = sample_ranks(rng, m);
  using Seen = std::vector<std::pair<int64_t, int64_t>>;
  std::vector<Seen> seen(static_cast<size_t>(count), Seen(ranks.size(), {0, -1}));
  DBufferMap map(p, l);
  for (size_t j = 0; j < ranks.size(); ++j) {
    int64_t previous_end = 0, used = 0;
    for (const ShardView& v : map.shard_views(ranks[j])) {
      if (v.elements <= 0 || v.shard_offset < previous_end || v.shard_offset + v.elements > shard) {
        return fmt::format("rank {}: view of tensor {} at [{}, +{}) overlaps or leaves the shard of {}", ranks[j],
                           v.tensor, v.shard_offset, v.elements, shard);
      }
      previous_end = v.shard_offset + v.elements;
      used += v.elements;
      auto& [elements, first] = seen[v.tensor][j];
      if (first < 0) first = v.tensor_offset;
      elements += v.elements;
    }
    if (map.padding_in_shard(ranks[j]) != shard - used) return fmt::format("rank {}: padding != S - views", ranks[j]);
  }

  // The RaggedShard of every tensor (a sample in a large world: each is O(m))
  // agrees with the views. One shard alive at a time keeps the memory hot.
  std::vector<int64_t> checked(static_cast<size_t>(count));
  std::iota(checked.begin(), checked.end(), 0);
  if (count * m > kShardBudget) {
    std::shuffle(checked.begin(), checked.end(), rng.engine);
    checked.resize(static_cast<size_t>(std::min(count, std::max<int64_t>(4, kShardBudget / m))));
  }
  for (int64_t t : checked) {
    const PlanTensor& pt = p.tensors[t];
    const RaggedShard s = contiguous ? shard_from_contiguous(in.shapes[t], pt.granule, l.slots[t].offset, shard, m)
                                     : shard_from_rank_major(in.shapes[t], l.chunk_rule, m);
    const int64_t units = std::accumulate(s.all_local_units().begin(), s.all_local_units().end(), int64_t{0});
    if (units != s.units_total() || s.units_total() * s.unit_elements() != pt.elements) {
      return fmt::format("tensor {}: {} units of {} for {} elements", t, units, s.unit_elements(), pt.elements);
    }
    // A layout on granules gives units of whole granules (k rows: k-row units).
    if (contiguous && l.honours_granularity && pt.elements % pt.granule == 0 && s.unit_elements() % pt.granule != 0) {
      return fmt::format("tensor {}: unit {} is not a multiple of its granule {}", t, s.unit_elements(), pt.granule);
    }
    for (size_t j = 0; j < ranks.size(); ++j) {
      const int r = static_cast<int>(ranks[j]);
      const auto [elements, first] = seen[t][j];
      const auto [begin, end] = s.flat_interval(r);
      if (end - begin != elements || (elements > 0 && begin != first)) {
        return fmt::format("rank {}: tensor {} has {} elements from {} in views, [{}, {}) in its RaggedShard", r, t,
                           elements, first, begin, end);
      }
    }
    // Every piece starts on a granule from the tensor start and ends on one or at its end.
    for (int64_t r = contiguous ? l.slots[t].offset / shard : 0; l.honours_granularity && r < m; ++r) {
      const auto [begin, end] = s.flat_interval(static_cast<int>(r));
      if (begin < end && (begin % pt.granule != 0 || (end < pt.elements && end % pt.granule != 0)))
        return fmt::format("rank {}: tensor {} piece [{}, {}) is not on its granule {}", r, t, begin, end, pt.granule);
      if (end == pt.elements) break;
    }
  }
  return "";
}

struct Strategy {
  std::unique_ptr<LayoutStrategy> impl;
  bool searched = false;  // ragged and vescale-paper
  double seconds = 0;
  int honoured = 0, beats_ragged = 0;
};

TEST(LayoutProperty, TenThousandRandomUnitsEveryStrategy) {
  std::vector<Strategy> strategies;
  for (auto make : {make_ragged_strategy, make_vescale_paper_strategy, make_fsdp1_strategy, make_fsdp2_strategy,
                    make_zero3_strategy, make_megatron_strategy}) {
    strategies.push_back({make(), strategies.size() < 2});
  }
  Rng rng{std::mt19937_64(20260222)};
  int instances = 0, layouts = 0, failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (; instances < kInstances && failures < 10; ++instances) {
    const Instance in = random_instance(rng);
    const std::string where = fmt::format("instance {} ({}, {} tensors, m={}, align {})", instances, in.mix,
                                          in.shapes.size(), in.problem.ranks, in.problem.collective_align);
    const int64_t lower = lower_bound_shard_size(in.problem);
    int64_t ragged_shard = 0;
    for (Strategy& strategy : strategies) {
      const auto t0 = std::chrono::steady_clock::now();
      std::string error;
      UnitLayout l;
      try {  // megatron throws InputError when the lcm of the row sizes overflows: not with these row lengths
        l = strategy.impl->plan_unit(in.problem);
        strategy.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        error = check_layout(in, l, rng, lower, strategy.searched);
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (ragged_shard == 0) ragged_shard = l.shard_size;
      if (error.empty() && strategy.searched && l.shard_size < ragged_shard) error = "S below ragged's";
      // No contiguous layout that keeps granules whole and shards aligned may beat ours.
      const bool comparable = l.placement == Placement::kContiguous && l.honours_granularity && l.aligned_shards;
      if (error.empty() && comparable && l.shard_size < ragged_shard) error = "a comparable layout beats ragged";
      if (!error.empty()) ADD_FAILURE() << where << ", " << strategy.impl->name() << ": " << error;
      failures += !error.empty();
      ++layouts;
      strategy.honoured += l.honours_granularity;
      strategy.beats_ragged += l.honours_granularity && l.aligned_shards && l.shard_size < ragged_shard;
    }
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d instances, %d layouts checked, %.2fs\n", instances, layouts, total);
  for (const Strategy& s : strategies) {
    std::printf("  %-14s planning %.2fs, on granules %d, aligned on granules with S below ragged's %d\n",
                std::string(s.impl->name()).c_str(), s.seconds, s.honoured, s.beats_ragged);
  }
  EXPECT_GE(instances, kInstances);
}

// The checker itself: broken layouts of a valid instance are caught.
TEST(LayoutProperty, CheckerCatchesBrokenLayouts) {
  Rng rng{std::mt19937_64(3)};
  Instance in{{}, {{64, 128}, {4096}, {32, 128}}, "broken"};
  in.problem.tensors = {{8192, 2048, 64, 128}, {4096, 1, 4096, 1}, {4096, 2048, 32, 128}};
  in.problem.ranks = 7;
  const UnitLayout good = make_ragged_strategy()->plan_unit(in.problem);
  const int64_t lower = lower_bound_shard_size(in.problem);
  ASSERT_EQ(check_layout(in, good, rng, lower, true), "");
  UnitLayout overlap = good, off_granule = good;
  overlap.slots[1].offset = overlap.slots[0].offset + 8;
  EXPECT_NE(check_layout(in, overlap, rng, lower, true), "");
  off_granule.shard_size += 8;  // shifts every cut inside the matrices off their 16-row granules
  EXPECT_NE(check_layout(in, off_granule, rng, lower, false), "");
}

}  // namespace
}  // namespace ragged::planner
