#include "tune/search_space.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "common/input_limits.hpp"
#include "planner/granularity.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::tune {
namespace {

template <typename T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> fallback) {
  return given.empty() ? fallback : given;
}

// One node's GPUs times powers of two up to all of them, and all of them.
std::vector<int64_t> default_shard_groups(int64_t gpus, int64_t per_node) {
  std::vector<int64_t> groups;
  for (int64_t g = per_node; g < gpus; g *= 2) {
    if (gpus % g == 0) groups.push_back(g);
  }
  groups.push_back(gpus);
  return groups;
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

}  // namespace

bool is_ragged_strategy(scenarios::Strategy strategy) {
  return strategy == scenarios::RAGGED || strategy == scenarios::VESCALE_PAPER;
}

void check_constraints(const Constraints& c) {
  if (!(c.headroom >= 0 && c.headroom < 1)) {
    throw InputError(
        fmt::format("--headroom {:g}%: the memory left free must be at least 0% and below 100%", 100 * c.headroom));
  }
  if (c.max_grad_accum < 1) {
    throw InputError(fmt::format("--max-grad-accum {}: allow at least 1 gradient accumulation step", c.max_grad_accum));
  }
  if (c.global_batch_tokens && *c.global_batch_tokens < 1) {
    throw InputError("--global-batch-tokens: the global batch must hold at least one token");
  }
  if (c.sequence_length && (*c.sequence_length < 1 || *c.sequence_length > limits::kMaxSequence)) {
    throw InputError(fmt::format("--seq-len {}: give 1 to {} tokens", *c.sequence_length, limits::kMaxSequence));
  }
  for (int64_t m : c.micro_batches) {
    if (m < 1) throw InputError(fmt::format("--micro-batches {}: a micro-batch holds at least one sequence", m));
  }
  for (int64_t g : c.shard_groups) {
    if (g < 1) throw InputError(fmt::format("--shard-groups {}: a shard group holds at least one GPU", g));
  }
  for (int p : c.prefetch_depths) {
    if (p < 0 || p > limits::kMaxPrefetch) {
      throw InputError(fmt::format("--prefetch {}: the prefetch depth is 0 to {} units", p, limits::kMaxPrefetch));
    }
  }
  for (const std::string& g : c.granularities) planner::GranularitySpec::parse(g);
}

BatchShape batch_shape(const scenarios::Scenario& base, const Constraints& c) {
  const int64_t gpus = scenarios::total_gpus(base);
  BatchShape shape;
  shape.sequence_length = c.sequence_length.value_or(base.training().sequence_length());
  const int64_t tokens =
      c.global_batch_tokens.value_or(scenarios::global_batch_sequences(base) * base.training().sequence_length());
  if (tokens % shape.sequence_length != 0) {
    throw InputError(
        fmt::format("the global batch of {} tokens is not a whole number of {}-token sequences; give "
                    "--global-batch-tokens a multiple of {}",
                    tokens, shape.sequence_length, shape.sequence_length));
  }
  shape.global_sequences = tokens / shape.sequence_length;
  if (shape.global_sequences % gpus != 0) {
    throw InputError(
        fmt::format("the global batch of {} sequences does not divide over {} GPUs, so no micro-batch "
                    "fits it; give --global-batch-tokens a multiple of {} (GPUs x sequence length)",
                    shape.global_sequences, gpus, gpus * shape.sequence_length));
  }
  shape.per_gpu_sequences = shape.global_sequences / gpus;
  return shape;
}

std::vector<Candidate> enumerate_candidates(const scenarios::LoadedScenario& base, const Constraints& c) {
  check_constraints(c);
  const scenarios::Scenario& s = base.scenario;
  const int64_t gpus = scenarios::total_gpus(s);
  const BatchShape batch = batch_shape(s, c);

  std::vector<int64_t> groups;
  for (int64_t g : or_default(c.shard_groups, default_shard_groups(gpus, s.cluster().gpus_per_node()))) {
    if (gpus % g == 0) groups.push_back(g);
  }
  if (groups.empty()) {
    throw InputError(
        fmt::format("no shard group of --shard-groups {} divides the {} GPUs", fmt::join(c.shard_groups, ","), gpus));
  }
  std::vector<int64_t> micro;
  for (int64_t m : or_default(c.micro_batches, divisors(batch.per_gpu_sequences))) {
    const int64_t accumulation = batch.per_gpu_sequences % m == 0 ? batch.per_gpu_sequences / m : 0;
    if (accumulation >= 1 && accumulation <= std::min(c.max_grad_accum, limits::kMaxAccumulation) &&
        m <= limits::kMaxMicroBatch) {
      micro.push_back(m);
    }
  }
  if (micro.empty()) {
    throw InputError(
        fmt::format("no micro-batch divides the {} sequences per GPU (global batch {} over {} GPUs) with at "
                    "most {} accumulation steps; allow other --micro-batches or a larger --max-grad-accum",
                    batch.per_gpu_sequences, batch.global_sequences, gpus, c.max_grad_accum));
  }
  const auto strategies = or_default(c.strategies, scenarios::all_strategies());
  if (strategies.empty()) throw InputError("--strategies: allow at least one strategy");
  const auto modes = or_default(c.checkpointing, {scenarios::NONE, scenarios::SELECTIVE, scenarios::FULL});
  const auto prefetches = or_default(c.prefetch_depths, {1, 2});
  const auto reshards = or_default(c.reshard_after_forward, {true, false});
  const std::vector<std::string> kept_granularity = {""};

  std::vector<Candidate> out;
  for (scenarios::Strategy strategy : strategies) {
    const auto& granularities =
        is_ragged_strategy(strategy) ? or_default(c.granularities, kept_granularity) : kept_granularity;
    for (int64_t group : groups) {
      for (int64_t m : micro) {
        for (scenarios::Checkpointing mode : modes) {
          for (int prefetch : prefetches) {
            for (bool reshard : reshards) {
              for (const std::string& granularity : granularities) {
                out.push_back({strategy, group, m, batch.per_gpu_sequences / m, mode, prefetch, reshard, granularity});
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace ragged::tune
