#pragma once
// The single-process, unsharded reference a sharded run must reproduce: the
// same model, the same global batch (every rank's micro-batches, numbered as
// the ranks number them), the same optimizer applied to whole tensors.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/workload.hpp"
#include "models/model_spec.hpp"
#include "scenarios/scenario.pb.h"

namespace ragged::backend {

// Parameters per tensor, in model order (units, then tensors).
using ModelParams = std::vector<std::vector<float>>;

ModelParams initial_params(const models::ModelSpec& model, uint64_t seed);

// Trains `steps` optimizer steps as `world` data-parallel ranks would, in
// shard groups of `shard_ranks` consecutive ranks: a micro-batch's gradients
// are summed in rank order within each group, then the groups' sums in group
// order (the reduce-scatter, then the HSDP all-reduce, with ordered
// reductions).
// Pipeline stages (`micro_batches_first`) reduce once a step: a rank's
// micro-batches add up in its own gradients first (in micro-batch order),
// then the ranks' sums are reduced as above (not with
// EVERY_MICRO_BATCH_GRADIENT_SYNC, whose stages reduce each micro-batch).
// Expert parallelism (`ep` > 1: every `ep` consecutive ranks an ep group):
// each routed expert's weight gradients are made on the rank that holds it,
// from every rank of its ep group in rank order, so the reference adds the
// group's contributions to an expert in rank order and gives the sum to
// that rank (the others none) before the reduction.
ModelParams reference_train(const models::ModelSpec& model, const scenarios::Training& training, int world,
                            int shard_ranks, int64_t steps, uint64_t seed, bool micro_batches_first = false,
                            int ep = 1);

// The same training with each data-parallel place a grid of cp x tp ranks
// (`split.split.tp`, `cp`: Megatron's sequence-parallel split and the
// head-tail context split, as workload_tp.cpp computes a rank's part),
// played out in one process: the groups' exchanges in the order the math
// needs them, partial sums added in rank order (0 + r0 + r1 ...) as ordered
// reductions add them, the uncut weights' gradients summed over the tp group
// the same way, the cp ranks' gradients ranks of the shard group in turn;
// the optimizer steps whole tensors of `whole`. `world`: the places reading
// distinct sequences; `shard_ranks`: the shard group (cp ranks included).
// Under expert parallelism (`ep`) an ep group's places are played out
// together, each holding its experts (expert_pieces.hpp) and exchanging the
// routed rows with the places at the same tp rank; an expert's gradients are
// its place's.
ModelParams reference_train_tensor_parallel(const models::ModelSpec& whole, const models::ModelSpec& split,
                                            const scenarios::Training& training, int world, int shard_ranks,
                                            int64_t steps, uint64_t seed, int cp = 1, int ep = 1);

// An ep group's all-to-all among workloads in one process (the places'
// ranks at one tp rank): each receives every member's rows for it, in member
// order, as Communicator::all_to_all_v delivers them.
void expert_exchange(const std::vector<HostWorkload*>& members, const EpStep& step);

// `joint` consecutive ranks' micro-batches (`batches`, one a rank) of the
// model `params`, forward and backward, their gradients added to `locals`
// (reference_train's inner step), [rank][share]: one set a rank, or one per
// share of its tokens when `shares` ranks read the same sequences (context
// parallelism), each then a rank of the shard group in turn. Ranks that
// exchange what they compute (an ep group's) are trained jointly.
using TrainMicroBatch = std::function<void(const ModelParams& params, const std::vector<Batch>& batches,
                                           std::vector<std::vector<ModelParams>>& locals)>;
ModelParams reference_train_with(const models::ModelSpec& model, const scenarios::Training& training, int world,
                                 int shard_ranks, int64_t steps, uint64_t seed, bool micro_batches_first,
                                 const TrainMicroBatch& train_micro_batch, int shares, int joint = 1);

struct ParamError {
  // Max over tensors of |p - ref| / |ref| (L2 norms); infinity for a tensor
  // holding a NaN or an infinity on either side.
  double max_relative = 0;
  // Elements whose bits differ, or that are not finite on either side (a NaN
  // can equal itself bit for bit and must still count).
  int64_t differing_elements = 0;
  int64_t elements = 0;
  std::string worst_tensor;  // the tensor of max_relative
  int64_t non_finite_elements = 0;  // NaN or infinity in the trained parameters or the reference
  std::string first_non_finite;     // "layers.0.attn.wq.weight [17]: trained nan, reference 0.0123"
};

ParamError compare_params(const models::ModelSpec& model, const ModelParams& params, const ModelParams& reference);

}  // namespace ragged::backend
