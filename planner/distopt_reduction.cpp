#include "planner/distopt_reduction.hpp"

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::planner {

DistOptReduction::DistOptReduction(ProgramWriter* writer, const Plan& plan, const scenarios::Training& training,
                                   int64_t replicate_ranks, ElementBytes bytes,
                                   const std::vector<std::vector<int>>& chunks, bool first_stage)
    : w_(*writer),
      replicate_ranks_(std::max<int64_t>(1, replicate_ranks)),
      bytes_(bytes),
      overlap_grad_reduce_(training.megatron_ddp().overlap_grad_reduce()),
      overlap_param_gather_(training.megatron_ddp().overlap_param_gather()),
      fused_accumulation_(training.megatron_ddp().gradient_accumulation_fusion()),
      torch_ddp_buckets_(training.megatron_ddp().torch_ddp_buckets()),
      data_parallel_ranks_(plan.ranks * std::max<int64_t>(1, replicate_ranks)),
      last_micro_batch_(training.gradient_accumulation_steps() - 1),
      unit_buckets_(plan.units.size()),
      forwarded_(plan.units.size(), false) {
  for (size_t c = 0; c < chunks.size(); ++c) {
    // Megatron-LM buckets only the first chunk of the first stage, and only
    // when the reductions overlap the backward (training.py, get_model).
    const bool bucketed = overlap_grad_reduce_ && c == 0 && first_stage;
    for (const Group group : {Group::kShard, Group::kExpertShard}) {
      BucketDomain domain;
      domain.group = group;
      domain.bucket_size = bucketed ? training.megatron_ddp().bucket_size() : 0;
      for (int u : chunks[c]) {
        const UnitPlan& unit = plan.units[static_cast<size_t>(u)];
        if (unit.group != group) continue;
        domain.units.push_back(u);
        domain.ranks = unit.layout.ranks;
        std::vector<int64_t>& tensors = domain.unit_tensors.emplace_back();
        for (const PlanTensor& t : unit.problem.tensors) tensors.push_back(t.elements);
      }
      if (domain.units.empty()) continue;
      const size_t first = buckets_.size();
      for (const DistOptBucket& b : distopt_buckets(domain)) {
        for (int u = b.first_unit; u <= b.last_unit; ++u) {
          if (plan.units[static_cast<size_t>(u)].group == group)
            unit_buckets_[static_cast<size_t>(u)].push_back(buckets_.size());
        }
        elements_ += b.elements;
        buckets_.push_back(b);
      }
      // The all-gathers run in the forward's order, the buckets' reverse:
      // each one's wait dispatches the bucket before it.
      next_gather_.resize(buckets_.size(), -1);
      for (size_t b = first + 1; b < buckets_.size(); ++b) next_gather_[b] = static_cast<int>(b - 1);
    }
  }
  gathered_.assign(buckets_.size(), -1);
  reduced_.assign(buckets_.size(), -1);
}

int64_t DistOptReduction::shard_elements() const {
  int64_t total = 0;
  for (const DistOptBucket& b : buckets_) total += b.elements / b.ranks;
  return total;
}

void DistOptReduction::start_step() {
  w_.traffic(OpKind::kScale, Stream::kCompute, -1, 0, "zero the main-grad buffers", grad_buffer_bytes(), {});
}

uint32_t DistOptReduction::gather(size_t b, std::vector<uint32_t> deps) {
  const DistOptBucket& bucket = buckets_[b];
  const uint32_t op = w_.collective(OpKind::kAllGather, Stream::kAllGather, bucket.group, bucket.last_unit, 0,
                                    fmt::format("dist-opt bucket {} param all-gather", b),
                                    bucket.elements * bytes_.param, -1, std::move(deps));
  gathered_[b] = op;
  return op;
}

void DistOptReduction::dispatch_gather(size_t b) {
  if (gathered_[b] < 0 && sharded(b)) gather(b, {});
}

std::vector<uint32_t> DistOptReduction::before_forward(int u) {
  std::vector<uint32_t> waits;
  if (!overlap_param_gather_ || forwarded_[static_cast<size_t>(u)]) return waits;
  forwarded_[static_cast<size_t>(u)] = true;
  // The unit's buckets from its first parameter's: the forward meets them in
  // that order.
  const std::vector<size_t>& mine = unit_buckets_[static_cast<size_t>(u)];
  for (auto b = mine.rbegin(); b != mine.rend(); ++b) {
    if (!sharded(*b)) continue;
    dispatch_gather(*b);
    waits.push_back(static_cast<uint32_t>(gathered_[*b]));
    if (const int next = next_gather_[*b]; next >= 0) dispatch_gather(static_cast<size_t>(next));
  }
  return waits;
}

void DistOptReduction::reduce(size_t b, uint32_t after) {
  const DistOptBucket& bucket = buckets_[b];
  const int64_t bytes = bucket.elements * bytes_.reduce;
  uint32_t last = after;
  if (data_parallel_ranks_ > 1) {  // gradient_scaling_factor 1/dp (average_in_collective off)
    last = w_.traffic(OpKind::kScale, Stream::kCompute, bucket.first_unit, last_micro_batch_,
                      fmt::format("dist-opt bucket {} scale grads by 1/dp", b), 2 * bytes, {last});
  }
  if (sharded(b)) {
    last =
        w_.collective(OpKind::kReduceScatter, Stream::kReduceScatter, bucket.group, bucket.first_unit,
                      last_micro_batch_, fmt::format("dist-opt bucket {} grad reduce-scatter", b), bytes, -1, {last});
  }
  if (replicate_ranks_ > 1) {  // the partial distributed optimizer's instances
    last = w_.collective(OpKind::kAllReduce, Stream::kAllReduce, Group::kReplicate, bucket.first_unit,
                         last_micro_batch_, fmt::format("dist-opt bucket {} shard all-reduce over instances", b),
                         bytes / bucket.ranks, -1, {last});
  }
  reduced_[b] = last;
}

void DistOptReduction::after_backward(int u, uint32_t done) {
  if (!overlap_grad_reduce_) return;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b].first_unit == u && reduced_[b] < 0) reduce(b, done);
  }
}

uint32_t DistOptReduction::finish_backward() {
  const std::optional<uint32_t> backward_end = w_.last_on(Stream::kCompute);
  RAGGED_ASSERT(backward_end.has_value(), "the backward ran on the compute stream");
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (reduced_[b] < 0) reduce(b, *backward_end);
  }
  std::vector<uint32_t> all;
  for (int64_t r : reduced_) all.push_back(static_cast<uint32_t>(r));
  // The optimizer's step starts with the gradient norm of the rank's shard
  // and the clipping (get_grad_norm_fp32, clip_grad_by_total_norm_fp32;
  // --clip-grad defaults to 1.0), after every reduction
  // (finalize_model_grads' finish_grad_sync).
  const int64_t shard = shard_elements() * bytes_.reduce;
  const uint32_t norm =
      w_.traffic(OpKind::kScale, Stream::kCompute, -1, last_micro_batch_, "dist-opt grad norm", shard, std::move(all));
  return w_.traffic(OpKind::kScale, Stream::kCompute, -1, last_micro_batch_, "dist-opt clip grads", 2 * shard, {norm});
}

void DistOptReduction::after_optimizer(uint32_t updated) {
  if (overlap_param_gather_) return;
  for (size_t b = buckets_.size(); b-- > 0;) {
    if (sharded(b)) gather(b, {updated});
  }
}

}  // namespace ragged::planner
