#pragma once
// Whether a predicted and a measured trace are of the same run, so that their
// errors mean something: `ragged compare` and the dashboard's Compare tab
// refuse traces of different runs, naming what differs.
//
// The rule, read from each trace's metadata and its scenario_text (the
// scenario as protobuf text format, defaults applied):
//
// Refused (the Program or its work differs, so every error would be the
// difference of two runs rather than of prediction and measurement):
//   - the model: any model field (catalog name, config.json, inline
//     architecture, its layers);
//   - the GPU count (world_size; cluster gpus_per_node x nodes where the
//     scenario text says it), and the GPU preset (cluster.gpu.preset);
//   - the strategy (metadata strategy);
//   - the batch shape (training micro_batch_size, sequence_length,
//     gradient_accumulation_steps) and every other training field that
//     shapes the step: mesh, shard and replicate groups, precision,
//     granularity, checkpointing, prefetch, the optimizer's kind and its
//     block sizes ... (with the GPU count differing, the groups derived
//     from it are not listed again);
//   - run.model_scale and run.layers (a scaled-down run).
//
// Expected between a prediction and its run, so not refused:
//   - the device description ("simgrid 3.32, 4 x cpu" against "cpu (host
//     (OpenBLAS), MPI), 1 local rank"), ragged version, creation time,
//     traced ranks, executor notes, source (compare_traces checks it);
//   - the scenario's name and description (a renamed copy of the file);
//   - the number of steps and the rest of `run` (warm-up, seed, checks);
//   - the figures of the hardware the prediction assumed (GPU peak FLOP/s,
//     HBM, link and NIC bandwidths, topology; the split of the same GPU count
//     into nodes): calibrating them is what a prediction is compared for;
//   - goodput settings, training.checkpoint_every and training.allocator (not
//     the step), and the optimizer's hyper-parameters (lr, betas, eps, weight
//     decay, momentum: other values, the same work).
// A trace without scenario_text (hand-written) is judged by its metadata alone.

#include <string>
#include <vector>

#include "traces/trace.pb.h"

namespace ragged::traces {

struct Comparability {
  // What makes the traces of different runs, each "what predicted vs
  // measured": "model llama3-8b vs tiny-llama", "GPUs 64 vs 4",
  // "strategy ragged vs fsdp2", "sequence length 128 vs 64".
  std::vector<std::string> differences;

  bool comparable() const { return differences.empty(); }
  // The differences joined by "; ", the first `limit` of them and "and N more".
  std::string describe(size_t limit = 6) const;
};

Comparability comparability(const Trace& predicted, const Trace& measured);

}  // namespace ragged::traces
