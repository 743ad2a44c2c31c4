// Writes docs/results/calibration.md: the simulator's predictions for the
// published TorchTitan Llama-3-8B points (../shared/reference/vescale.md),
// the error, and how each modelled mechanism moves the prediction.
// Usage: ragged-calibration-report [--output FILE]

#include <cmath>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/file_io.hpp"
#include "common/units.hpp"
#include "planner/resolved_scenario.hpp"
#include "scenarios/scenario_loader.hpp"
#include "sim/child_process.hpp"
#include "sim/compute_model.hpp"
#include "sim/simulation.hpp"
#include "traces/trace.pb.h"

namespace {

using namespace ragged;

struct Published {
  const char* scenario;
  const char* variant;
  double tokens_per_s;
  double memory_gib;
};

// TorchTitan (arXiv 2410.06511), H100 95 GiB at 500 W, C4, bf16, seq 8192.
const std::vector<Published> kPublished = {
    {"llama3-8b-8xh100", "FSDP2 eager", 6258, 81.9},
    {"llama3-8b-128xh100", "FSDP2 eager", 5645, 67.0},
    {"llama3-8b-8xh100", "+ torch.compile", 6674, 77.0},
    {"llama3-8b-128xh100", "+ torch.compile", 6482, 62.1},
};

struct Prediction {
  double tokens_per_s = 0;
  double reserved_gib = 0;
  double allocated_gib = 0;
  double step_s = 0;
  double mfu = 0;
};

// The simulator's mechanisms a prediction applies (docs/SIMULATOR.md 6b, 6c).
struct Mechanisms {
  bool share_gpu = true;
  bool host_issue = true;
};

// One simulation in a child process; `edit` changes the scenario first.
Prediction predict(const std::string& name, const std::function<void(scenarios::Scenario*)>& edit,
                   Mechanisms mechanisms = {}, std::optional<double> sustained_clock = std::nullopt) {
  std::string bytes = sim::run_in_child([&] {
    scenarios::LoadedScenario loaded = scenarios::load_scenario(name);
    edit(&loaded.written);
    loaded = scenarios::with_total_gpus(loaded, loaded.scenario.cluster().gpus_per_node() * loaded.scenario.cluster().nodes());
    planner::ResolvedScenario resolved = planner::resolve_scenario(loaded);
    sim::SimulationOptions options;
    options.share_gpu = mechanisms.share_gpu;
    options.host_issue = mechanisms.host_issue;
    options.sustained_clock = sustained_clock;
    return sim::simulate(resolved, options).trace.summary().SerializeAsString();
  });
  traces::Summary s;
  s.ParseFromString(bytes);
  return {s.tokens_per_s_per_gpu(), static_cast<double>(s.peak_reserved_bytes()) / kGiB, static_cast<double>(s.peak_allocated_bytes()) / kGiB,
          s.step_time_s(), s.mfu()};
}


std::string error(double predicted, double published) { return fmt::format("{:+.1f}%", 100 * (predicted - published) / published); }

// Milliseconds a step the compiled run saved over the eager one, from their
// published tokens/s (2 x 8,192 tokens a GPU a step).
double step_gain_ms(const Published& eager, const Published& compiled) {
  constexpr double kTokensPerStep = 2 * 8192;
  return 1000 * (kTokensPerStep / eager.tokens_per_s - kTokensPerStep / compiled.tokens_per_s);
}

// The clock fit (gpu_tables.cpp, kHopperSustainedClock): the 8-GPU compiled
// point's error at the constant and at its two-digit neighbours.
struct ClockFit {
  double clock = 0;
  double below = 0, at = 0, above = 0;  // relative errors at clock - 0.01, clock, clock + 0.01
  bool best() const { return std::fabs(at) <= std::fabs(below) && std::fabs(at) <= std::fabs(above); }
};

}  // namespace

int main(int argc, char** argv) {
  std::string output;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--output" && i + 1 < argc) output = argv[++i];
    else {
      std::cerr << "usage: ragged-calibration-report [--output FILE]\n";
      return 2;
    }
  }
  auto none = [](scenarios::Scenario*) {};
  // torchtitan's torch.compile: each transformer block (the compiled validation scenarios' setting).
  auto compiled = [](scenarios::Scenario* s) {
    s->mutable_training()->set_compiled(true);
    s->mutable_training()->set_compile_scope(scenarios::TRANSFORMER_BLOCKS);
  };
  auto no_power_limit = [](scenarios::Scenario* s) { s->mutable_cluster()->mutable_gpu()->set_power_limit_watts(700); };
  auto datasheet_only = [&](scenarios::Scenario* s) {
    compiled(s);
    s->mutable_cluster()->mutable_gpu()->set_power_limit_watts(700);
  };

  using Edit = std::function<void(scenarios::Scenario*)>;
  const auto is_eager = [](const Published& p) { return std::string(p.variant) == "FSDP2 eager"; };
  const auto edit_of = [&](const Published& p) { return is_eager(p) ? Edit(none) : Edit(compiled); };
  // Every point's prediction first: the text below quotes them.
  std::vector<Prediction> predicted;
  for (const Published& p : kPublished) predicted.push_back(predict(p.scenario, edit_of(p)));
  const Published& compiled8 = kPublished[2];
  const auto compiled8_error = [&](double clock) {
    return predict(compiled8.scenario, compiled, {}, clock).tokens_per_s / compiled8.tokens_per_s - 1;
  };
  ClockFit fit;
  fit.clock = sim::hopper_sustained_clock();
  fit.at = predicted[2].tokens_per_s / compiled8.tokens_per_s - 1;
  fit.below = compiled8_error(fit.clock - 0.01);
  fit.above = compiled8_error(fit.clock + 0.01);
  if (!fit.best()) {
    std::cerr << fmt::format("Hopper's sustained clock {:.2f} is no longer the two-digit value that brings the 8-GPU "
                             "torch.compile point closest ({:+.1f}%; {:.2f}: {:+.1f}%, {:.2f}: {:+.1f}%): refit "
                             "kHopperSustainedClock in sim/gpu_tables.cpp\n",
                             fit.clock, 100 * fit.at, fit.clock - 0.01, 100 * fit.below, fit.clock + 0.01,
                             100 * fit.above);
    return 1;
  }

  std::ostringstream md;
  md << "# Calibration: Llama-3-8B against TorchTitan's published runs\n\n";
  md << "Generated by `scripts/bench-calibration` (`build/bench/ragged-calibration-report --output "
        "docs/results/calibration.md`). The published points are TorchTitan's (arXiv 2410.06511, as quoted in "
        "`../shared/reference/vescale.md`): H100 SXM 96 GB HBM2e at the default 500 W limit, FSDP2, bf16 with fp32 "
        "reduce, selective (op-level) activation checkpointing, local batch 2 x 8192. The shipped scenarios "
        "`llama3-8b-8xh100` and `llama3-8b-128xh100` describe those runs. One constant is fitted to them: Hopper's "
     << fmt::format("sustained clock ({:.2f} of the microbenchmarks' clocks), the two-digit value that brings the "
                     "8-GPU torch.compile point closest to the published figure; every other input is sourced or "
                     "derived (docs/SIMULATOR.md lists each and its source).\n\n",
                     fit.clock);
  md << "## Predictions\n\n";
  md << "| scenario | variant | published tokens/s/GPU | predicted | error | published memory GiB | predicted reserved "
        "(allocated) | error | bar |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (size_t i = 0; i < kPublished.size(); ++i) {
    const Published& p = kPublished[i];
    const Prediction& r = predicted[i];
    const double tok_err = std::fabs(r.tokens_per_s - p.tokens_per_s) / p.tokens_per_s;
    const double mem_err = std::fabs(r.reserved_gib - p.memory_gib) / p.memory_gib;
    // Issue 9's bar for calibration points, the same for all four.
    std::string bar = (tok_err <= 0.05 && mem_err <= 0.10) ? "met (5% / 10%)" : "NOT met (5% / 10%)";
    md << fmt::format("| {} | {} | {} | {} | {} | {:.1f} | {:.1f} ({:.1f}) | {} | {} |\n", p.scenario, p.variant,
                      format_rounded(p.tokens_per_s), format_rounded(r.tokens_per_s), error(r.tokens_per_s, p.tokens_per_s), p.memory_gib, r.reserved_gib,
                      r.allocated_gib, error(r.reserved_gib, p.memory_gib), bar);
  }
  md << "\n## What each mechanism contributes (8 GPUs)\n\n";
  md << "| simulator inputs | tokens/s/GPU | step time | MFU |\n|---|---:|---:|---:|\n";
  const Mechanisms neither{false, false}, sharing{true, false};
  std::vector<Prediction> steps;
  for (auto [label, edit, mechanisms] : std::vector<std::tuple<std::string, Edit, Mechanisms>>{
           {"GPU at 700 W (microbenchmark rates at the calibrated sustained clock), compiled blocks, nothing shared, no host path", datasheet_only, neither},
           {"+ 500 W power limit (DVFS law)", compiled, neither},
           {"+ eager element-wise kernels (traffic and launches)", none, neither},
           {"+ NCCL's SMs and HBM traffic (section 6b)", none, sharing},
           {"+ the CPU issue path (section 6c: the shipped scenario)", none, {}},
           {"the shipped scenario without the power limit", no_power_limit, {}}}) {
    steps.push_back(predict("llama3-8b-8xh100", edit, mechanisms));
    const Prediction& r = steps.back();
    md << fmt::format("| {} | {} | {:.3f} s | {:.1f}% |\n", label, format_rounded(r.tokens_per_s), r.step_s, 100 * r.mfu);
  }
  const double eager_overhead_ms = 1000 * (steps[2].step_s - steps[1].step_s);
  md << "\n## The GPU-sharing and CPU mechanisms at both points (FSDP2 eager)\n\n";
  md << "| scenario | published | neither | + NCCL's SMs and HBM | + the CPU issue path (shipped) | error: neither -> both |\n"
        "|---|---:|---:|---:|---:|---|\n";
  std::vector<double> sharing_cost, issue_cost;
  for (const Published& p : kPublished) {
    if (!is_eager(p)) continue;
    const Prediction off = predict(p.scenario, none, neither), shared = predict(p.scenario, none, sharing),
                     both = predict(p.scenario, none);
    sharing_cost.push_back(off.tokens_per_s / shared.tokens_per_s - 1);
    issue_cost.push_back(both.tokens_per_s / shared.tokens_per_s - 1);
    md << fmt::format("| {} | {} | {} | {} | {} | {} -> {} |\n", p.scenario, format_rounded(p.tokens_per_s), format_rounded(off.tokens_per_s),
                      format_rounded(shared.tokens_per_s), format_rounded(both.tokens_per_s), error(off.tokens_per_s, p.tokens_per_s),
                      error(both.tokens_per_s, p.tokens_per_s));
  }
  // Without the fitted constant: every point at the microbenchmarks' clocks.
  std::vector<double> unfitted;
  for (const Published& p : kPublished) {
    const Prediction r = predict(p.scenario, edit_of(p), {}, 1.0);
    unfitted.push_back(r.tokens_per_s / p.tokens_per_s - 1);
  }
  const auto pct = [](double x) { return std::fabs(x) < 0.0005 ? std::string("0.0%") : fmt::format("{:+.1f}%", 100 * x); };
  const auto share = [](double x) { return fmt::format("{:.1f}%", 100 * x); };
  const auto err = [&](size_t i) { return pct(predicted[i].tokens_per_s / kPublished[i].tokens_per_s - 1); };
  // The same team's later measurement of the 8-GPU runs (torchtitan docs/performance.md, Table 1).
  constexpr double kLaterEager8 = 5762;
  md << fmt::format(R"(
## The residual, explained

- **NCCL's kernels on the GPU and the CPU issue path (docs/SIMULATOR.md
  sections 6b and 6c):** while a collective runs its 24 CTAs (16 across
  nodes) hold 18% (12%) of the H100's 132 SMs, and its HBM traffic (twice
  the bytes it sends for an all-gather, three times for a reduce-scatter)
  slows the element-wise kernels beside it, which slow the collective in
  turn. cuBLAS's Hopper GEMMs are persistent (one CTA per SM): one launched
  beside a collective runs its last CTAs after the collective ends or after
  its first CTAs, up to twice its time, and a collective issued during a
  GEMM waits for its end. The step is {} slower for it at 8 GPUs and {} at
  128 (longer collectives across nodes). The CPU issue path moves the
  points by {} and {}: FSDP2 never blocks the CPU, so it runs ahead of a
  GPU step of {:.2f} s.
- **What is left (the 128-GPU points):** the simulator predicts 128 GPUs
  about as fast as 8 (Llama-3-8B's collectives hide behind its compute at
  both sizes), while TorchTitan measured {} eager and {} compiled from 8 to
  128 GPUs. The mechanisms that grow with the GPU count are not modelled:
  rank-to-rank variation (each collective waits for the slowest of 128
  power-capped GPUs; clocks under a power cap differ from GPU to GPU) and
  network effects beyond bandwidth and NCCL's latency (congestion, adaptive
  routing, the inter-node all-gather's real protocol mix).
- **Memory:** the peak lies in the head's loss backward, where the fp32
  log-softmax and its gradients (docs/SIMULATOR.md section 8, "The head's
  backward in autograd's order") sit beside every block's saved activations
  and the root group's gathered embedding and head (section 7, "FSDP's root
  group"). TorchTitan's eager runs hold {:.1f} and {:.1f} GiB more than its
  compiled runs at 8 and 128 GPUs; the model predicts {:.1f} and {:.1f} GiB
  more: eager selective checkpointing caches every output its policy saves,
  the down projection's among them, which the compiled partitioner drops
  because no backward reads it (docs/MODELS.md, selective checkpointing).
  Eager and compiled points alike then sit below the published peaks by a
  few GiB that no modelled tensor accounts for; candidates: the recomputed
  block's element-wise intermediates held while its backward runs, and the
  caching allocator's holes (section 8, "Modelled and not modelled").
- **FSDP2's post-backward (docs/SIMULATOR.md section 4b):** the
  reduce-scatter copy-in (`chunk_cat` into the fp32 input) runs on the
  compute stream after a wait for the previous reduce-scatter, as
  `foreach_reduce` does. This costs the compute stream 0.73 ms per layer
  (218M gradients read in bf16 and written in fp32 at 1.8 TB/s), and a
  block's gradients are freed before the compute stream moves to the next
  block (the root group's, the head's included, at the end of the
  backward), so no block's backward holds its bf16 gradients, its fp32
  reduce-scatter input and the next block's gathered parameters together:
  the peak is in the head's backward.
- **Hopper's sustained clock and the eager points:** the GEMM and attention
  rates are microbenchmark bursts (about 5 ms each); a training loop holds
  the clock lower at the power limit (docs/SIMULATOR.md section 7, with
  independent observations of the mechanism on B200 and A100). No Hopper
  figure was found, so the share is fitted: {:.2f} makes the 8-GPU
  torch.compile point {} ({:.2f}: {}, {:.2f}: {}; this report recomputes
  the three and fails when a neighbour fits better), the calibration
  run with the fewest modelled costs besides GEMMs and attention. Every
  point runs at the pace of the slowest of its GPUs (docs/SIMULATOR.md
  section 7: a 1.5% clock spread between GPUs, Sinha et al. SC'22), 2.1%
  below the mean clock for 8 GPUs and 3.9% for 128, so the constant is the
  mean GPU's clock and the 128-GPU points carry the difference. Its
  optimizer is torch's foreach AdamW, as TorchTitan's of 2024
  (`optimizer.fused` false: 80 bytes an fp32 element against the fused
  kernel's 28; `training.optimizer.adamw.implementation: FOREACH`), and
  its attention copies the 8 kv heads to the 32 query heads before SDPA
  (torchtitan's `repeat_kv` of 2024; `training.kv_heads: REPEATED_KV`,
  docs/MODELS.md). The compiled
  scenarios compile the transformer blocks only (`compile_scope:
  TRANSFORMER_BLOCKS`, torchtitan's `apply_compile`): the final norm and
  the fp32 loss stay eager. The 128-GPU compiled point then comes out at
  {} and the 128-GPU eager point at {}, but the 8-GPU eager point at
  {}: the modelled eager element-wise overhead of the blocks ({:.0f} ms a
  step: RMSNorm, rotary and SwiGLU as separate upcasting kernels, counted
  from TorchTitan's code) is larger than the measured compile gain
  ({:.0f} ms a step at 8 GPUs and {:.0f} at 128 in the paper). The same team
  measured the same 8-GPU runs again with the software of December 2024
  (torchtitan `docs/performance.md`, Table 1: eager 5,762 tokens/s and
  82.4 GiB, compiled 6,667 and 77.0): a compile gain of 386 ms, and an
  eager point 8% below the paper's, against which the model is {}. That
  measurement is a calibration configuration, so it stays out of the
  validation set (`validation/runs.textproto`, excluded). Without the
  constant the 8-GPU eager point is {} and the compiled points {} and {}.
  The GEMM rates are the running maximum of the measured
  squares (docs/SIMULATOR.md section 6): the 10240^3 burst's lower rate,
  a clock already falling, is what the constant carries for every size. Candidates for the rest: eager element-wise kernels
  streaming faster than the 0.75 cudaMemcpy share, fused counts that
  Inductor does not reach.
- **Assumptions that move the numbers:** the fixed share of board power in
  the DVFS law (20%; 0% or 30% move the 8-GPU prediction by about +-3%) and
  the HBM efficiency of 0.75 (a cudaMemcpy measurement; PyTorch's
  element-wise kernels may stream faster); NCCL's CTA counts (section 6b:
  32 CTAs instead of 24 in a node cost another 0.3% at 8 GPUs).
)",
                    share(sharing_cost[0]), share(sharing_cost[1]), pct(issue_cost[0]), pct(issue_cost[1]), steps[4].step_s,
                    pct(kPublished[1].tokens_per_s / kPublished[0].tokens_per_s - 1),
                    pct(kPublished[3].tokens_per_s / kPublished[2].tokens_per_s - 1),
                    kPublished[0].memory_gib - kPublished[2].memory_gib, kPublished[1].memory_gib - kPublished[3].memory_gib,
                    predicted[0].reserved_gib - predicted[2].reserved_gib, predicted[1].reserved_gib - predicted[3].reserved_gib,
                    fit.clock, pct(fit.at), fit.clock - 0.01, pct(fit.below), fit.clock + 0.01, pct(fit.above), err(3), err(1),
                    err(0), eager_overhead_ms, step_gain_ms(kPublished[0], kPublished[2]),
                    step_gain_ms(kPublished[1], kPublished[3]), pct(predicted[0].tokens_per_s / kLaterEager8 - 1),
                    pct(unfitted[0]), pct(unfitted[2]), pct(unfitted[3]));
  if (output.empty()) {
    std::cout << md.str();
  } else {
    write_file_atomically(output, md.str());
    std::cerr << "wrote " << output << "\n";
  }
  return 0;
}
