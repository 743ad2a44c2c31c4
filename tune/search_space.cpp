#include "tune/search_space.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.hpp"
#include "common/input_limits.hpp"
#include "planner/granularity.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_rules.hpp"

namespace ragged::tune {
namespace {

// Tensor parallelism's default sizes: a node's NVLink holds them.
const std::vector<int64_t> kTensorParallelSizes = {1, 2, 4, 8};
// Pipeline stages' default sizes, and the schedules tried with more than one.
const std::vector<int64_t> kPipelineSizes = {1, 2, 4, 8, 16};
const std::vector<scenarios::PipelineSchedule> kPipelineSchedules = {scenarios::ONE_F_ONE_B, scenarios::INTERLEAVED_1F1B};

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
  for (const auto& [dims, option] :
       {std::pair{&c.tps, "--tps"}, std::pair{&c.cps, "--cps"}, std::pair{&c.eps, "--eps"}, std::pair{&c.pps, "--pps"}}) {
    for (int64_t d : *dims) {
      if (d < 1 || d > limits::kMaxGpus) {
        throw InputError(fmt::format("{} {}: a mesh dimension is 1 to {} ranks", option, d, limits::kMaxGpus));
      }
    }
  }
  for (int p : c.prefetch_depths) {
    if (p < 0 || p > limits::kMaxPrefetch) {
      throw InputError(fmt::format("--prefetch {}: the prefetch depth is 0 to {} units", p, limits::kMaxPrefetch));
    }
  }
  for (const std::string& g : c.granularities) planner::GranularitySpec::parse(g);
}

BatchShape batch_shape(const scenarios::Scenario& base, const Constraints& c) {
  BatchShape shape;
  shape.gpus = scenarios::total_gpus(base);
  shape.sequence_length = c.sequence_length.value_or(base.training().sequence_length());
  const int64_t tokens =
      c.global_batch_tokens.value_or(scenarios::global_batch_sequences(base) * base.training().sequence_length());
  if (tokens % shape.sequence_length != 0) {
    const int64_t nearest = std::max<int64_t>(1, (tokens + shape.sequence_length / 2) / shape.sequence_length);
    // "16M" read as 16 x 2^20 where that is whole sequences: how batches are usually meant.
    const bool mega = tokens % 1'000'000 == 0 && ((tokens / 1'000'000) << 20) % shape.sequence_length == 0;
    throw InputError(fmt::format(
        "the global batch of {} tokens is not a whole number of {}-token sequences; give --global-batch-tokens a "
        "multiple of {}: {}",
        tokens, shape.sequence_length, shape.sequence_length,
        mega ? fmt::format("{}Mi is {} sequences ({} tokens)", tokens / 1'000'000,
                           ((tokens / 1'000'000) << 20) / shape.sequence_length, (tokens / 1'000'000) << 20)
             : fmt::format("the nearest is {} sequences ({} tokens)", nearest, nearest * shape.sequence_length)));
  }
  shape.global_sequences = tokens / shape.sequence_length;
  return shape;
}

namespace {

// The mesh dimensions allowed for `arch` on `base`: the user's, or the
// defaults of Constraints, each checked against the model and the cluster.
struct MeshChoices {
  std::vector<int64_t> tps, cps, eps, pps;
};

MeshChoices mesh_choices(const scenarios::Scenario& s, const models::ArchConfig& arch, int64_t sequence_length,
                         const Constraints& c) {
  const int64_t per_node = s.cluster().gpus_per_node();
  MeshChoices m;
  const bool defaults = c.tps == kTensorParallelSizes;
  for (int64_t tp : or_default(c.tps, {1})) {
    const bool in_node = !defaults || per_node % tp == 0;
    if (in_node && models::check_split(arch, {tp, 1, true}).empty()) m.tps.push_back(tp);
  }
  std::vector<int64_t> cps = {1};
  if (sequence_length >= 32768) cps.insert(cps.end(), {2, 4, 8, 16});
  for (int64_t cp : or_default(c.cps, cps)) {
    if (cp == 1 || sequence_length % (2 * cp) == 0) m.cps.push_back(cp);
  }
  std::vector<int64_t> eps = {1};
  if (arch.is_moe()) {
    for (int64_t ep = 2; ep <= arch.experts; ep *= 2) eps.push_back(ep);
  }
  for (int64_t ep : or_default(c.eps, eps)) {
    if (models::check_split(arch, {1, ep, true}).empty()) m.eps.push_back(ep);
  }
  for (int64_t pp : or_default(c.pps, {1})) {
    if (pp <= arch.layers) m.pps.push_back(pp);  // a block per stage at least
  }
  return m;
}

Constraints with_tensor_parallel_sizes(const Constraints& c, std::vector<int64_t> sizes) {
  Constraints out = c;
  out.tps = std::move(sizes);
  return out;
}

// FSDP groups over the `ranks` of one tp rank: a node's share of them times
// powers of two, and all of them.
std::vector<int64_t> default_groups(int64_t ranks, int64_t per_node_share) {
  return default_shard_groups(ranks, std::max<int64_t>(1, per_node_share));
}


// The dimensions of a mesh other than ep.
struct MeshShape {
  int64_t tp = 1, cp = 1, pp = 1;
  std::string text() const {
    return fmt::format("tp {} x cp {}{}", tp, cp, pp > 1 ? fmt::format(" x pp {}", pp) : "");
  }
};

// A schedule and its model chunks per stage.
struct StageSchedule {
  scenarios::PipelineSchedule schedule = scenarios::PIPELINE_SCHEDULE_UNSPECIFIED;
  int64_t virtual_stages = 1;
};

// The schedules of a pipeline of `pp` stages over `accumulation`
// micro-batches and `blocks` blocks: none for fewer micro-batches than
// stages (a stage would idle most of the step); interleaved 1F1B where the
// micro-batches come in rounds of pp, over the most chunks the blocks allow
// (a block per chunk, the embedding and the head alone). More chunks shrink
// both the bubble and the first stage's warm-up ((v - 1) pp + 2 (pp - 1)
// chunk forwards, about pp stages' worth for many chunks, 1.5 pp for 2),
// at the cost of more, smaller sends: 2 chunks never led a search here
// (docs/results/tune.md), so it is tried only where it is the most.
std::vector<StageSchedule> schedules_for(int64_t pp, int64_t accumulation, int64_t blocks, const Constraints& c) {
  if (pp == 1) return {{}};
  if (accumulation < pp) return {};
  std::vector<StageSchedule> out;
  const int64_t most_chunks = (blocks + 2) / pp;
  for (scenarios::PipelineSchedule s : or_default(c.schedules, kPipelineSchedules)) {
    if (s != scenarios::INTERLEAVED_1F1B) {
      out.push_back({s, 1});
    } else if (accumulation % pp == 0 && most_chunks >= 2) {
      out.push_back({s, most_chunks});
    }
  }
  return out;
}

// A yes/no choice's values once each, no first.
std::vector<bool> false_first(std::vector<bool> choices) {
  std::sort(choices.begin(), choices.end());
  choices.erase(std::unique(choices.begin(), choices.end()), choices.end());
  return choices;
}

// Whether the experts recompute their own layer: only where they are a unit
// of their own (ep > 1) under a block that keeps more than its input (a
// fully checkpointed block reruns them already); without it first.
std::vector<bool> experts_recompute_choices(const Constraints& c, int64_t ep, scenarios::Checkpointing mode) {
  if (ep == 1 || mode == scenarios::FULL) return {false};
  return false_first(or_default(c.experts_recompute, {false, true}));
}

// The overlapped all-to-alls where the candidate can run them, without first
// (and without alone where it cannot, whatever was asked).
std::vector<bool> expert_overlap_choices(const Constraints& c, const Candidate& candidate) {
  if (!expert_overlap_runs(candidate)) return {false};
  return false_first(or_default(c.expert_overlaps, {false, true}));
}

// Appends every candidate of one mesh shape (over the ep sizes), or says in
// `refused` why it has none.
void add_mesh_candidates(const MeshShape& m, const std::vector<int64_t>& eps, const Constraints& c,
                         const BatchShape& batch, int64_t blocks, int64_t gpus, int64_t per_node,
                         const std::vector<scenarios::Strategy>& strategies,
                         const std::vector<scenarios::Checkpointing>& modes, const std::vector<int>& prefetches,
                         const std::vector<bool>& reshards, std::vector<Candidate>& out,
                         std::vector<std::string>& refused) {
  const int64_t model_parallel = m.tp * m.cp * m.pp;
  if (gpus % model_parallel != 0) return;
  const int64_t data_parallel = gpus / model_parallel;  // ranks with their own sequences
  if (batch.global_sequences % data_parallel != 0) {
    refused.push_back(fmt::format("{}: {} sequences over {} data-parallel ranks", m.text(), batch.global_sequences,
                                  data_parallel));
    return;
  }
  const int64_t per_rank = batch.global_sequences / data_parallel;
  std::vector<int64_t> micro;
  for (int64_t mb : or_default(c.micro_batches, divisors(per_rank))) {
    const int64_t accumulation = per_rank % mb == 0 ? per_rank / mb : 0;
    const bool sequence_parallel_fits = m.tp == 1 || (mb * batch.sequence_length / m.cp) % m.tp == 0;
    if (accumulation >= 1 && accumulation <= std::min(c.max_grad_accum, limits::kMaxAccumulation) &&
        mb <= limits::kMaxMicroBatch && sequence_parallel_fits && !schedules_for(m.pp, accumulation, blocks, c).empty()) {
      micro.push_back(mb);
    }
  }
  if (micro.empty()) {
    refused.push_back(fmt::format("{}: no micro-batch divides {} sequences per data-parallel rank with at most {} "
                                  "accumulation steps{}", m.text(), per_rank, c.max_grad_accum,
                                  m.pp > 1 ? " and at least one per stage" : ""));
    return;
  }
  const int64_t model_ranks = gpus / (m.tp * m.pp);  // the ranks of one stage's tp rank
  std::vector<int64_t> groups;
  for (int64_t g : or_default(c.shard_groups, default_groups(model_ranks, per_node / m.tp))) {
    if (model_ranks % g == 0 && g % m.cp == 0) groups.push_back(g);
  }
  if (groups.empty()) {
    refused.push_back(fmt::format("{}: no shard group{} divides the {} ranks of a tp rank into whole cp groups", m.text(),
                                  c.shard_groups.empty() ? "" : fmt::format(" of --shard-groups {}", fmt::join(c.shard_groups, ",")),
                                  model_ranks));
    return;
  }
  // A pipeline keeps its stage's parameters gathered over the step: no
  // reshard after forward, whatever is asked; and its all-gathers run once a
  // step, ahead of the first micro-batch, so the prefetch depth moves little
  // (the same step, 0.6% of the memory, on llama3-8b over tp 8 x pp 2): the
  // first depth asked (1 by default), unless --prefetch lists them.
  const std::vector<bool> stage_reshards = m.pp > 1 ? std::vector<bool>{false} : reshards;
  const std::vector<int> stage_prefetches =
      m.pp > 1 && c.prefetch_depths.empty() ? std::vector<int>{prefetches.front()} : prefetches;
  const std::vector<std::string> kept_granularity = {""};
  // Under tp the routed experts are split over it or kept whole (expert_tp
  // 1, ep carved out of tp x the shard group): both are tried.
  std::vector<std::pair<int64_t, bool>> expert_layouts;  // (ep, whole experts)
  for (int64_t ep : eps) {
    expert_layouts.emplace_back(ep, false);
    if (ep > 1 && m.tp > 1) expert_layouts.emplace_back(ep, true);
  }
  for (const auto& [ep, whole] : expert_layouts) {
    for (scenarios::Strategy strategy : strategies) {
      const auto& granularities =
          is_ragged_strategy(strategy) ? or_default(c.granularities, kept_granularity) : kept_granularity;
      for (int64_t group : groups) {
        if ((whole ? group * m.tp : group) % ep != 0) continue;
        for (int64_t mb : micro) {
          for (const StageSchedule& schedule : schedules_for(m.pp, per_rank / mb, blocks, c)) {
            for (scenarios::Checkpointing mode : modes) {
              for (bool experts_recompute : experts_recompute_choices(c, ep, mode)) {
                for (int prefetch : stage_prefetches) {
                  for (bool reshard : stage_reshards) {
                    for (const std::string& granularity : granularities) {
                      const Candidate candidate{strategy,
                                                group,
                                                mb,
                                                per_rank / mb,
                                                mode,
                                                prefetch,
                                                reshard,
                                                granularity,
                                                m.tp,
                                                m.cp,
                                                ep,
                                                m.pp,
                                                schedule.schedule,
                                                schedule.virtual_stages,
                                                whole,
                                                experts_recompute};
                      for (bool overlap : expert_overlap_choices(c, candidate)) {
                        out.push_back(candidate);
                        out.back().expert_overlap = overlap;
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}
}  // namespace

bool expert_overlap_runs(const Candidate& c) {
  return scenarios::expert_overlap_runs(c.strategy, c.ep, c.pp, c.schedule,
                                        c.checkpointing == scenarios::FULL || c.experts_recompute);
}

Constraints with_tensor_parallel_defaults(const Constraints& constraints) {
  Constraints wider = constraints;
  if (wider.tps.empty()) wider.tps = kTensorParallelSizes;
  if (wider.pps.empty()) wider.pps = kPipelineSizes;
  return wider;
}

std::vector<Candidate> enumerate_candidates(const scenarios::LoadedScenario& base, const Constraints& c) {
  if (c.tps.empty()) {
    // FSDP alone first; the meshes where it cannot train the batch.
    try {
      return enumerate_candidates(base, with_tensor_parallel_sizes(c, {1}));
    } catch (const InputError&) {
      return enumerate_candidates(base, with_tensor_parallel_defaults(c));
    }
  }
  check_constraints(c);
  const scenarios::Scenario& s = base.scenario;
  const int64_t gpus = scenarios::total_gpus(s);
  const int64_t per_node = s.cluster().gpus_per_node();
  const BatchShape batch = batch_shape(s, c);
  const models::ModelSpec model = planner::resolve_model(s.model(), base.base_dir);
  const MeshChoices mesh = mesh_choices(s, model.arch, batch.sequence_length, c);
  if (mesh.tps.empty() || mesh.cps.empty() || mesh.eps.empty() || mesh.pps.empty()) {
    throw InputError(fmt::format("no {} of {} can split {}: see `ragged inspect` for its heads, widths, experts and blocks",
                                 mesh.tps.empty() ? "tp" : mesh.cps.empty() ? "cp" : mesh.eps.empty() ? "ep" : "pp",
                                 fmt::join(mesh.tps.empty()   ? c.tps
                                           : mesh.cps.empty() ? c.cps
                                           : mesh.eps.empty() ? c.eps
                                                              : c.pps,
                                           ","),
                                 model.name));
  }
  const auto strategies = or_default(c.strategies, scenarios::all_strategies());
  if (strategies.empty()) throw InputError("--strategies: allow at least one strategy");
  const auto modes = or_default(c.checkpointing, {scenarios::NONE, scenarios::SELECTIVE, scenarios::FULL});
  const auto prefetches = or_default(c.prefetch_depths, {1, 2});
  const auto reshards = or_default(c.reshard_after_forward, {true, false});

  std::vector<Candidate> out;
  std::vector<std::string> refused;  // why a mesh left nothing, for the error when none is left
  for (int64_t pp : mesh.pps) {
    for (int64_t tp : mesh.tps) {
      for (int64_t cp : mesh.cps) {
        const MeshShape shape{tp, cp, pp};
        add_mesh_candidates(shape, mesh.eps, c, batch, model.arch.layers, gpus, per_node, strategies, modes, prefetches,
                            reshards, out, refused);
      }
    }
  }
  if (out.empty()) {
    throw InputError(fmt::format("no configuration trains the global batch of {} sequences of {} tokens on {} GPUs: {}; "
                                 "allow other --tps, --cps, --eps, --pps, --shard-groups or --micro-batches, or give "
                                 "--global-batch-tokens a multiple of the data-parallel ranks times the sequence length",
                                 batch.global_sequences, batch.sequence_length, gpus,
                                 refused.empty() ? fmt::format("no shard group holds whole ep groups of --eps {}", fmt::join(mesh.eps, ","))
                                                 : fmt::format("{}", fmt::join(refused, "; "))));
  }
  return out;
}

}  // namespace ragged::tune
