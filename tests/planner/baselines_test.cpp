// The four baseline layouts (FSDP1, FSDP2, ZeRO-3, Megatron-FSDP): small
// instances computed by hand, then a random sweep checked by the independent
// layout checker, brute-force granule cuts, and the padding bounds of
// shared/reference/baselines.md section 8.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "common/errors.hpp"
#include "layout_test_util.hpp"
#include "planner/layout_check.hpp"
#include "planner/layout_strategy.hpp"

namespace ragged::planner {
namespace {

using layout_test::matrix;
using layout_test::vec;

UnitProblem unit(std::vector<PlanTensor> tensors, int64_t ranks, int64_t collective_align = 1,
                 int64_t tensor_align = 1) {
  return UnitProblem{std::move(tensors), ranks, collective_align, tensor_align};
}

std::vector<std::pair<int64_t, int64_t>> slots_of(const UnitLayout& layout) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const TensorSlot& s : layout.slots) out.emplace_back(s.offset, s.length);
  return out;
}

std::vector<int64_t> copies_of(const UnitLayout& layout) {
  const CopyElements& c = layout.copies;
  return {c.all_gather_in, c.all_gather_out, c.reduce_scatter_in, c.reduce_scatter_out};
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

UnitLayout plan_valid(const LayoutStrategy& strategy, const UnitProblem& problem) {
  UnitLayout layout = strategy.plan_unit(problem);
  EXPECT_EQ(layout.ranks, problem.ranks);
  EXPECT_EQ(layout.slots.size(), problem.tensors.size());
  EXPECT_EQ(layout.lower_bound_shard_size, 0);
  EXPECT_GE(layout.padded_elements(), problem.total_elements());
  EXPECT_EQ(layout.aligned_shards, layout.shard_size % problem.collective_align == 0);
  auto problems = layout_problems(problem, layout);
  EXPECT_TRUE(problems.empty()) << strategy.name() << " on " << problem_signature(problem) << ":\n" << joined(problems);
  return layout;
}

TEST(Baselines, Names) {
  EXPECT_EQ(make_fsdp1_strategy()->name(), "fsdp1");
  EXPECT_EQ(make_fsdp2_strategy()->name(), "fsdp2");
  EXPECT_EQ(make_zero3_strategy()->name(), "zero3");
  EXPECT_EQ(make_megatron_strategy()->name(), "megatron");
}

TEST(Fsdp1, AlignsEveryTensorAndSplitsTheFlatBufferEvenly) {
  auto fsdp1 = make_fsdp1_strategy();
  // Starts 0, 8, 24; F = 31, S = ceil(31/4) = 8; shard boundaries 8, 16, 24.
  UnitLayout l = plan_valid(*fsdp1, unit({vec(5), vec(13, 8), vec(7)}, 4, 8, 8));
  EXPECT_EQ(l.placement, Placement::kContiguous);
  EXPECT_EQ(l.shard_size, 8);
  EXPECT_TRUE(l.aligned_shards);
  EXPECT_EQ(slots_of(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {8, 13}, {24, 7}}));
  EXPECT_TRUE(l.honours_granularity);                           // boundary 16 is 8 elements into the 13-element tensor
  EXPECT_EQ(copies_of(l), (std::vector<int64_t>{0, 0, 0, 0}));  // the tail pad makes F.pad unnecessary
  EXPECT_FALSE(plan_valid(*fsdp1, unit({vec(5), vec(13, 3), vec(7)}, 4, 8, 8)).honours_granularity);
}

TEST(Fsdp1, GranuleCheckCoversEveryBoundaryOfATensor) {
  auto fsdp1 = make_fsdp1_strategy();
  // Starts 0, 8; F = 28, S = 7: boundaries 14 and 21 fall 6 and 13 into the second tensor.
  EXPECT_FALSE(plan_valid(*fsdp1, unit({vec(5), vec(20, 3)}, 4, 1, 8)).honours_granularity);
  EXPECT_TRUE(plan_valid(*fsdp1, unit({vec(5), vec(20, 3)}, 2, 1, 8)).honours_granularity);  // S = 14: one cut at 6
  // Starts 0, 4; F = 28, S = 7 on 4 ranks: cuts at 3, 10, 17 of the second tensor, never on 2-granules.
  EXPECT_FALSE(plan_valid(*fsdp1, unit({vec(4), vec(24, 2)}, 4, 1, 4)).honours_granularity);
}

TEST(Fsdp1, NoCopiesWhenTheFlatBufferDivides) {
  UnitLayout l = plan_valid(*make_fsdp1_strategy(), unit({vec(8), vec(8)}, 4, 8, 8));
  EXPECT_EQ(l.shard_size, 4);
  EXPECT_FALSE(l.aligned_shards);  // FSDP1 does not round S to 16 bytes
  EXPECT_EQ(copies_of(l), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(Fsdp2, ChunksEveryTensorByRows) {
  auto fsdp2 = make_fsdp2_strategy();
  // ceil(10/4)*4 = 12 and ceil(3/4)*8 = 8 elements per rank: S = 20.
  UnitLayout l = plan_valid(*fsdp2, unit({matrix(10, 4, 4), matrix(3, 8, 8)}, 4, 8, 8));
  EXPECT_EQ(l.placement, Placement::kRankMajor);
  EXPECT_EQ(l.chunk_rule, ChunkRule::kDim0Rows);
  EXPECT_EQ(l.shard_size, 20);
  EXPECT_FALSE(l.aligned_shards);
  EXPECT_EQ(slots_of(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 12}, {12, 8}}));
  EXPECT_TRUE(l.honours_granularity);
  EXPECT_EQ(copies_of(l), (std::vector<int64_t>{20, 80, 80, 20}));
  EXPECT_TRUE(plan_valid(*fsdp2, unit({matrix(10, 4, 4), matrix(3, 8, 8)}, 4, 4, 8)).aligned_shards);
  // Cut every 12 elements: not on 8-element granules; every 8 elements: not on 16.
  EXPECT_FALSE(plan_valid(*fsdp2, unit({matrix(10, 4, 8), matrix(3, 8)}, 4)).honours_granularity);
  EXPECT_FALSE(plan_valid(*fsdp2, unit({matrix(10, 4), matrix(3, 8, 16)}, 4)).honours_granularity);
}

TEST(Fsdp2, ATensorOnOneRankIsNotCut) {
  auto fsdp2 = make_fsdp2_strategy();
  EXPECT_FALSE(plan_valid(*fsdp2, unit({matrix(3, 8, 24)}, 4)).honours_granularity);  // one row per rank
  EXPECT_TRUE(plan_valid(*fsdp2, unit({matrix(3, 8, 24)}, 1)).honours_granularity);
  EXPECT_TRUE(plan_valid(*fsdp2, unit({matrix(1, 8, 16)}, 4)).honours_granularity);  // one row: rank 0 only
}

TEST(Zero3, ChunksEveryTensorByElements) {
  auto zero3 = make_zero3_strategy();
  UnitLayout l = plan_valid(*zero3, unit({vec(10), vec(7)}, 4));
  EXPECT_EQ(l.placement, Placement::kRankMajor);
  EXPECT_EQ(l.chunk_rule, ChunkRule::kElements);
  EXPECT_EQ(l.shard_size, 5);
  EXPECT_EQ(slots_of(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 2}}));
  EXPECT_EQ(l.persistent_elements, 17);
  EXPECT_TRUE(l.honours_granularity);
  // Both are small enough to stay gathered: nothing is fetched or copied.
  EXPECT_TRUE(l.fetch_groups.empty());
  EXPECT_EQ(copies_of(l), (std::vector<int64_t>{0, 0, 40, 5}));
  EXPECT_FALSE(plan_valid(*zero3, unit({vec(10), vec(7)}, 4, 8)).aligned_shards);
}

// DeepSpeed's fetches of a Llama-3-70B block (partitioned_param_coordinator.py):
// q_proj alone at its hook, then prefetch sets of >= 5e7 elements, the one
// crossing it included: {k, v, o}, then each MLP matrix alone. The norms
// (8,192 elements) stay gathered. Only the set is copied out.
TEST(Zero3, FetchesTheFirstModuleThenPrefetchSets) {
  auto zero3 = make_zero3_strategy();
  const int64_t h = 8192, kv = 1024, f = 28672;
  UnitLayout l = plan_valid(*zero3, unit({vec(h), matrix(h, h, 1), matrix(kv, h, 1), matrix(kv, h, 1), matrix(h, h, 1),
                                          vec(h), matrix(f, h, 1), matrix(f, h, 1), matrix(h, f, 1)},
                                         32));
  EXPECT_EQ(l.fetch_groups, (std::vector<std::vector<int>>{{1}, {2, 3, 4}, {6}, {7}, {8}}));
  const int64_t set = l.slots[2].length + l.slots[3].length + l.slots[4].length;
  EXPECT_EQ(l.copies.all_gather_in, set);
  EXPECT_EQ(l.copies.all_gather_out, 32 * set);
  // Smaller matrices coalesce more: 4,096-wide Llama-2-7B projections (16.8M)
  // make {k, v, o} and {gate, up} sets; down_proj is left alone at the end.
  const int64_t g = 4096, m = 11008;
  UnitLayout small =
      plan_valid(*zero3, unit({vec(g), matrix(g, g, 1), matrix(g, g, 1), matrix(g, g, 1), matrix(g, g, 1), vec(g),
                               matrix(m, g, 1), matrix(m, g, 1), matrix(g, m, 1)},
                              4));
  EXPECT_EQ(small.fetch_groups, (std::vector<std::vector<int>>{{1}, {2, 3, 4}, {6, 7}, {8}}));
}

TEST(Zero3, SingleTensorFetchIsZeroCopy) {
  UnitLayout l = plan_valid(*make_zero3_strategy(), unit({matrix(10, 4, 4)}, 4));
  EXPECT_EQ(l.shard_size, 10);
  EXPECT_FALSE(l.honours_granularity);  // cut every 10 elements, rows of 4
  EXPECT_EQ(copies_of(l), (std::vector<int64_t>{0, 0, 80, 10}));
  EXPECT_TRUE(plan_valid(*make_zero3_strategy(), unit({matrix(10, 4, 4)}, 2)).honours_granularity);
}

TEST(Zero3, PersistenceThresholdIsInclusive) {
  UnitLayout l = plan_valid(*make_zero3_strategy(), unit({vec(100000), vec(100001)}, 1000));
  EXPECT_EQ(slots_of(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 100}, {100, 101}}));
  EXPECT_EQ(l.persistent_elements, 100000);
}

// Row sizes 4096 and 14336 give c = 28672. Regular: A at 0 (ends 40960, gap to
// 57344), C at 57344 (ends 100352). Fragments first-fit: B at 40960, D does not
// fit the gap left at 45056 nor the tail before 114688 without crossing it, so
// it starts there; E fills the gap at 45056. L = 134688.
std::vector<PlanTensor> megatron_tensors(int64_t granule_a) {
  return {matrix(10, 4096, granule_a), vec(4096), matrix(3, 14336, 14336), vec(20000), vec(8)};
}

TEST(Megatron, RowAlignedBucketWithFragmentsInGaps) {
  auto megatron = make_megatron_strategy();
  const std::vector<std::pair<int64_t, int64_t>> slots{
      {0, 40960}, {40960, 4096}, {57344, 43008}, {114688, 20000}, {45056, 8}};
  // 8 ranks: bucket = ceil(134688/229376)*229376, S = 28672; cuts at 7 rows of A and 2 rows of C.
  UnitLayout l = plan_valid(*megatron, unit(megatron_tensors(4096), 8, 8, 8));
  EXPECT_EQ(l.placement, Placement::kContiguous);
  EXPECT_EQ(l.shard_size, 28672);
  EXPECT_TRUE(l.aligned_shards);
  EXPECT_EQ(slots_of(l), slots);
  EXPECT_TRUE(l.honours_granularity);
  EXPECT_EQ(copies_of(l), (std::vector<int64_t>{0, 0, 108072, 28672}));
  // Granules of 4 rows (16384): the cut 7 rows into A is not on one.
  EXPECT_FALSE(plan_valid(*megatron, unit(megatron_tensors(16384), 8, 8, 8)).honours_granularity);
  // 4 ranks: bucket = 2*114688, S = 57344.
  UnitLayout four = plan_valid(*megatron, unit(megatron_tensors(4096), 4, 8, 8));
  EXPECT_EQ(four.shard_size, 57344);
  EXPECT_EQ(slots_of(four), slots);
}

TEST(Megatron, VectorsOnlyKeepTheTensorAlignment) {
  // c = 1: the second vector starts on the alignment of 8; bucket 12 on 3 ranks.
  UnitLayout l = plan_valid(*make_megatron_strategy(), unit({vec(5), vec(3)}, 3, 8, 8));
  EXPECT_EQ(slots_of(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {8, 3}}));
  EXPECT_EQ(l.shard_size, 4);
  EXPECT_FALSE(l.aligned_shards);
}

TEST(Megatron, FragmentNeverCrossesAMultipleOfC) {
  // c = 3, alignment 8: the fragment cannot start at 8 (it would cross 9) and starts at 16.
  UnitLayout l = plan_valid(*make_megatron_strategy(), unit({matrix(2, 3), vec(2)}, 2, 1, 8));
  EXPECT_EQ(slots_of(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 6}, {16, 2}}));
  EXPECT_EQ(l.shard_size, 9);
}

TEST(Megatron, FragmentFallsBackToACommonMultipleWhenTheAlignmentDoesNotDivideC) {
  // c = 10, alignment 8: the 5-element fragment would cross 10 from 8 and 20
  // from 16, so it goes to lcm(10, 8) = 40. Bucket ceil(45/20)*20 on 2 ranks.
  UnitLayout l = plan_valid(*make_megatron_strategy(), unit({matrix(1, 2), matrix(1, 5)}, 2, 1, 8));
  EXPECT_EQ(slots_of(l), (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {40, 5}}));
  EXPECT_EQ(l.shard_size, 30);
}

TEST(Megatron, OverflowingRowLcmIsAnInputError) {
  auto problem = unit({matrix(1, 999983), matrix(1, 999979), matrix(1, 999961), matrix(1, 999959)}, 8);
  EXPECT_THROW(make_megatron_strategy()->plan_unit(problem), InputError);
}

TEST(Baselines, EmptyUnit) {
  for (auto& strategy :
       {make_fsdp1_strategy(), make_fsdp2_strategy(), make_zero3_strategy(), make_megatron_strategy()}) {
    UnitLayout l = plan_valid(*strategy, unit({}, 7, 8, 8));
    EXPECT_EQ(l.shard_size, 0) << strategy->name();
  }
}

// ---- Random sweep -------------------------------------------------------

constexpr int64_t kMaxElements = 5'000'000;
constexpr int64_t kRankChoices[] = {1, 2, 3, 7, 8, 64, 97, 512, 997, 1024, 4096, 8191, 16384};
constexpr int64_t kRowSizes[] = {3, 5, 8, 12, 64, 128, 512, 576, 1536, 2048, 4096, 7168, 11008, 14336};
constexpr int64_t kAligns[] = {1, 4, 8, 16};

int64_t log_uniform(std::mt19937_64& rng, int64_t hi) {
  std::uniform_real_distribution<double> exponent(0.0, std::log(static_cast<double>(hi) + 1));
  return std::clamp<int64_t>(static_cast<int64_t>(std::exp(exponent(rng))), 1, hi);
}

template <typename T, size_t N>
T pick(std::mt19937_64& rng, const T (&values)[N]) {
  return values[std::uniform_int_distribution<size_t>(0, N - 1)(rng)];
}

// 1-40 tensors of 1..5e6 elements: vectors, matrices whose rows come from a
// small per-unit palette of real row sizes (so Megatron's lcm stays bounded)
// and, unless `palette_rows_only`, matrices with any divisor of their size as dim0.
UnitProblem random_problem(std::mt19937_64& rng, bool palette_rows_only) {
  std::vector<int64_t> palette(std::uniform_int_distribution<int>(1, 3)(rng));
  for (int64_t& row : palette) row = pick(rng, kRowSizes);
  UnitProblem problem;
  const int n = std::uniform_int_distribution<int>(1, 40)(rng);
  for (int i = 0; i < n; ++i) {
    const int kind = std::uniform_int_distribution<int>(0, palette_rows_only ? 1 : 2)(rng);
    PlanTensor t;
    if (kind == 0) {
      t = vec(log_uniform(rng, kMaxElements));
    } else if (kind == 1) {
      const int64_t row = palette[std::uniform_int_distribution<size_t>(0, palette.size() - 1)(rng)];
      t = matrix(log_uniform(rng, kMaxElements / row), row);
    } else {
      const int64_t elements = log_uniform(rng, kMaxElements);
      std::vector<int64_t> divisors;
      for (int64_t d = 1; d * d <= elements; ++d) {
        if (elements % d == 0) divisors.insert(divisors.end(), {d, elements / d});
      }
      const int64_t dim0 = divisors[std::uniform_int_distribution<size_t>(0, divisors.size() - 1)(rng)];
      t = matrix(dim0, elements / dim0);
    }
    const int64_t rows[] = {1, 1, 2, 4, 16, 128, t.dim0};
    if (std::bernoulli_distribution(0.3)(rng)) t.granule = pick(rng, rows) * t.dim0_stride;
    problem.tensors.push_back(t);
  }
  problem.ranks = std::bernoulli_distribution(0.5)(rng) ? pick(rng, kRankChoices)
                                                        : std::uniform_int_distribution<int64_t>(1, 16384)(rng);
  problem.tensor_align = pick(rng, kAligns);
  problem.collective_align = std::bernoulli_distribution(0.5)(rng) ? problem.tensor_align : pick(rng, kAligns);
  return problem;
}

// Brute force over every cut, when there are few enough; -1 when too many to try.
int brute_force_honours(const UnitProblem& problem, const UnitLayout& layout) {
  int64_t budget = 200'000;
  const int64_t shard = layout.shard_size;
  for (size_t i = 0; i < problem.tensors.size(); ++i) {
    const PlanTensor& t = problem.tensors[i];
    const TensorSlot& slot = layout.slots[i];
    if (t.granule <= 1) continue;
    if (layout.placement == Placement::kContiguous) {
      if (shard == 0) continue;
      budget -= (slot.offset + t.elements - 1) / shard - slot.offset / shard;
      if (budget < 0) return -1;
      for (int64_t b = (slot.offset / shard + 1) * shard; b < slot.offset + t.elements; b += shard) {
        if ((b - slot.offset) % t.granule != 0) return 0;
      }
    } else {
      budget -= t.elements / std::max<int64_t>(slot.length, 1);
      if (budget < 0) return -1;
      for (int64_t cut = slot.length; slot.length > 0 && cut < t.elements; cut += slot.length) {
        if (cut % t.granule != 0) return 0;
      }
    }
  }
  return 1;
}

int64_t row_lcm(const UnitProblem& problem) {
  int64_t c = 1;
  for (const PlanTensor& t : problem.tensors) c = std::lcm(c, t.dim0_stride);
  return c;
}

// The per-strategy rules and bounds (baselines.md section 8).
void check_rules(std::string_view name, const UnitProblem& p, const UnitLayout& l) {
  const int64_t m = p.ranks;
  const int64_t shard = l.shard_size;
  const int64_t n = static_cast<int64_t>(p.tensors.size());
  const int64_t padding = l.padded_elements() - p.total_elements();
  SCOPED_TRACE(std::string(name) + " on " + problem_signature(p));
  if (name == "fsdp1") {
    EXPECT_LE(padding, m - 1 + (p.tensor_align - 1) * n);
    EXPECT_EQ(l.copies.reduce_scatter_in, 0);
  } else if (name == "fsdp2") {
    for (int64_t i = 0; i < n; ++i) {
      const PlanTensor& t = p.tensors[i];
      EXPECT_EQ(m * l.slots[i].length - t.elements, (m * ((t.dim0 + m - 1) / m) - t.dim0) * t.dim0_stride);
    }
    EXPECT_EQ(copies_of(l), (std::vector<int64_t>{shard, m * shard, m * shard, shard}));
  } else if (name == "zero3") {
    for (int64_t i = 0; i < n; ++i) EXPECT_LE(m * l.slots[i].length - p.tensors[i].elements, m - 1);
    // Only the prefetch sets (fetch groups of several tensors) are copied.
    int64_t gather = 0;
    for (const std::vector<int>& group : l.fetch_groups) {
      for (int t : group) gather += group.size() > 1 ? l.slots[static_cast<size_t>(t)].length : 0;
    }
    EXPECT_EQ(copies_of(l), (std::vector<int64_t>{gather, m * gather, 2 * m * shard, shard}));
  } else {
    const int64_t c = row_lcm(p);
    const int64_t common = std::lcm(c, p.tensor_align);
    EXPECT_EQ(shard % c, 0);
    // Documented when the alignment divides c; otherwise each start may also round to lcm(c, align).
    EXPECT_LT(padding, c % p.tensor_align == 0 ? m * c + c * n : m * c + 3 * common * n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t offset = l.slots[i].offset;
      const int64_t elements = p.tensors[i].elements;
      if (elements >= c) {
        EXPECT_EQ(offset % c, 0);
      } else {
        EXPECT_LE(offset % c + elements, c) << "fragment " << i << " crosses a multiple of c";
      }
    }
    EXPECT_EQ(copies_of(l), (std::vector<int64_t>{0, 0, p.total_elements(), shard}));
  }
}

TEST(Baselines, RandomSweep) {
  std::mt19937_64 rng(20240611);
  std::vector<std::unique_ptr<LayoutStrategy>> strategies;
  strategies.push_back(make_fsdp1_strategy());
  strategies.push_back(make_fsdp2_strategy());
  strategies.push_back(make_zero3_strategy());
  strategies.push_back(make_megatron_strategy());
  std::vector<int> planned(strategies.size()), brute_checked(strategies.size()), cut(strategies.size());
  for (int round = 0; round < 2500 && !HasFailure(); ++round) {
    for (bool palette_only : {true, false}) {
      const UnitProblem problem = random_problem(rng, palette_only);
      for (size_t k = 0; k < strategies.size(); ++k) {
        const LayoutStrategy& strategy = *strategies[k];
        if (strategy.name() == "megatron" && !palette_only) continue;  // lcm of arbitrary rows may overflow
        const UnitLayout layout = plan_valid(strategy, problem);
        check_rules(strategy.name(), problem, layout);
        const int brute = brute_force_honours(problem, layout);
        if (brute >= 0) {
          EXPECT_EQ(layout.honours_granularity, brute == 1) << strategy.name() << " " << problem_signature(problem);
        }
        ++planned[k];
        brute_checked[k] += brute >= 0;
        cut[k] += !layout.honours_granularity;
        if (strategy.name() == "megatron") {
          // Megatron's net effect: every shard cut falls on a row boundary of every tensor.
          UnitProblem rows = problem;
          for (PlanTensor& t : rows.tensors) t.granule = t.dim0_stride;
          EXPECT_TRUE(strategy.plan_unit(rows).honours_granularity) << problem_signature(problem);
        }
      }
    }
  }
  for (size_t k = 0; k < strategies.size(); ++k) {
    EXPECT_GE(planned[k], 2000) << strategies[k]->name();
    RecordProperty(std::string(strategies[k]->name()),
                   fmt::format("{} planned, {} brute-forced, {} cut granules", planned[k], brute_checked[k], cut[k]));
  }
}

// A DeepSeek-V3 MoE layer: ~780 tensors on 16,384 ranks, granules of one row.
TEST(Baselines, LargeMoeUnit) {
  std::vector<PlanTensor> tensors{
      vec(7168),          matrix(1536, 7168),  vec(1536), matrix(24576, 1536), matrix(576, 7168), vec(512),
      matrix(32768, 512), matrix(7168, 16384), vec(7168), matrix(256, 7168),   vec(256)};
  for (int expert = 0; expert < 257; ++expert) {
    tensors.insert(tensors.end(), {matrix(2048, 7168), matrix(2048, 7168), matrix(7168, 2048)});
  }
  for (PlanTensor& t : tensors) t.granule = t.dim0_stride;
  const UnitProblem problem = unit(tensors, 16384, 8, 8);
  for (auto& strategy :
       {make_fsdp1_strategy(), make_fsdp2_strategy(), make_zero3_strategy(), make_megatron_strategy()}) {
    const UnitLayout layout = plan_valid(*strategy, problem);
    check_rules(strategy->name(), problem, layout);
    if (strategy->name() == "megatron") {
      EXPECT_EQ(layout.shard_size % 344064, 0);  // c = lcm(7168, 1536, 512, 16384, 2048) = 2^14 * 21
      EXPECT_TRUE(layout.honours_granularity);
    }
  }
}

}  // namespace
}  // namespace ragged::planner
