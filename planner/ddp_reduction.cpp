#include "planner/ddp_reduction.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::planner {

namespace {

std::vector<std::vector<int64_t>> tensor_elements(const Plan& plan) {
  std::vector<std::vector<int64_t>> out;
  for (const UnitPlan& unit : plan.units) {
    std::vector<int64_t>& tensors = out.emplace_back();
    for (const PlanTensor& t : unit.problem.tensors) tensors.push_back(t.elements);
  }
  return out;
}

}  // namespace

DdpReduction::DdpReduction(ProgramWriter* writer, LoopBuffers* loop, const Plan& plan, const models::ModelSpec& model,
                           const scenarios::Training& training, int64_t replicate_ranks, ElementBytes bytes)
    : w_(*writer),
      loop_(*loop),
      plan_(plan),
      model_(model),
      replicate_ranks_(replicate_ranks),
      micro_batches_(training.gradient_accumulation_steps()),
      sync_last_only_(training.accumulation_gradient_sync() == scenarios::LAST_MICRO_BATCH),
      bytes_(bytes),
      first_micro_batch_(plan.units.size(), -1) {
  RAGGED_ASSERT(plan.ranks == 1, "DDP plans every unit over a group of one");
  if (replicate_ranks_ > 1) {
    const auto cap = static_cast<int64_t>(std::llround(training.ddp().bucket_cap_mb() * 1024.0 * 1024.0));
    buckets_ = ddp_buckets(tensor_elements(plan), bytes_.master, std::max<int64_t>(1, cap));
  }
  all_reduces_.assign(buckets_.size(), 0);
}

const std::string& DdpReduction::name(int u) const { return planned_unit(model_, plan_, u).name; }

bool DdpReduction::synchronises(int mb) const {
  return replicate_ranks_ > 1 && (!sync_last_only_ || mb + 1 == micro_batches_);
}

int64_t DdpReduction::bucket_bytes() const {
  int64_t total = 0;
  for (const DdpBucket& b : buckets_) total += b.bytes;
  return total;
}

int DdpReduction::gradient_buffer(int u, int mb) {
  int& first = first_micro_batch_[static_cast<size_t>(u)];
  const bool kept_as_grad = first < 0 && bytes_.param == bytes_.master;
  if (first < 0) first = mb;
  if (kept_as_grad) {
    const std::optional<uint32_t> last = w_.last_on(Stream::kCompute);
    RAGGED_ASSERT(last.has_value(), "a backward follows a forward on the compute stream");
    loop_.grad_shard(u, name(u) + " .grad", elements(u) * bytes_.master, Stream::kCompute, *last);
    return -1;
  }
  const int grads =
      w_.buffer(name(u) + " new grads", BufferKind::kUnshardedGrads, u, elements(u) * bytes_.param);
  w_.alloc(grads, Stream::kCompute, {});
  return grads;
}

uint32_t DdpReduction::after_backward(int u, int mb, uint32_t done, int grads) {
  const int64_t n = elements(u);
  const int64_t p = bytes_.param, o = bytes_.master;
  const bool first = first_micro_batch_[static_cast<size_t>(u)] == mb;
  uint32_t last = done;
  if (grads >= 0) {
    if (first) last = loop_.grad_shard(u, name(u) + " .grad", n * o, Stream::kCompute, last);
    // Under autocast each gradient is cast to the parameter's dtype
    // (ToCopyBackward) and then taken as .grad or added to it: one kernel a
    // parameter for each, counted as one pass here.
    const int64_t cast = p == o ? 0 : n * (p + o);
    const int64_t add = first ? 0 : 3 * n * o;
    const uint32_t accumulate = w_.traffic(OpKind::kGradAccumulate, Stream::kCompute, u, mb,
                                           name(u) + " accumulate .grad", cast + add, {last}, grads);
    host(accumulate).framework_ops = params(u) * ((cast > 0 ? 1 : 0) + (add > 0 ? 1 : 0));
    w_.free(grads, Stream::kCompute, {accumulate});
    last = accumulate;
  }
  if (!synchronises(mb)) return last;
  const uint32_t copy = w_.traffic(OpKind::kCopyIn, Stream::kCompute, u, mb, name(u) + " copy grads into DDP buckets",
                                   2 * n * o, {last});
  host(copy).framework_ops = params(u);
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].ready_unit == u) {
    const DdpBucket& b = buckets_[next_bucket_];
    all_reduces_[next_bucket_] =
        w_.collective(OpKind::kAllReduce, Stream::kAllReduce, Group::kReplicate, u, mb,
                      fmt::format("DDP bucket {} all-reduce", next_bucket_), b.bytes, -1, {copy});
    ++next_bucket_;
  }
  return copy;
}

std::optional<uint32_t> DdpReduction::finish_micro_batch(int mb) {
  if (!synchronises(mb)) return std::nullopt;
  RAGGED_ASSERT(next_bucket_ == buckets_.size(), "every DDP bucket is all-reduced by the end of the backward");
  std::optional<uint32_t> last;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    last = w_.traffic(OpKind::kCopyOut, Stream::kCompute, buckets_[b].ready_unit, mb,
                      fmt::format("DDP bucket {} copy to grads", b), 2 * buckets_[b].bytes, {all_reduces_[b]});
    host(*last).framework_ops = buckets_[b].tensors;
  }
  next_bucket_ = 0;
  return last;
}

}  // namespace ragged::planner
