#include "planner/gradient_reduction.hpp"

#include <tuple>

namespace ragged::planner {

GradientReduction::GradientReduction(ProgramWriter* writer, LoopBuffers* loop, const Plan& plan,
                                     const models::ModelSpec& model, StrategyTraits traits, int64_t replicate_ranks,
                                     ElementBytes bytes, std::vector<uint32_t>* compute_waits)
    : w_(*writer),
      loop_(*loop),
      plan_(plan),
      model_(model),
      traits_(traits),
      replicate_ranks_(replicate_ranks),
      bytes_(bytes),
      compute_waits_(*compute_waits),
      queue_(traits_, model) {}

const std::string& GradientReduction::name(int u) const { return planned_unit(model_, plan_, u).name; }

int64_t GradientReduction::reduce_bytes(int u) const {
  const bool experts = planned_unit(model_, plan_, u).kind == models::UnitKind::kExperts;
  return experts ? bytes_.expert_reduce : bytes_.reduce;
}

int GradientReduction::unsharded_grads(int u, int64_t element_bytes) {
  const int64_t grad_bytes =
      element_bytes > 0 ? element_bytes : (traits_.grads_in_reduce_dtype ? reduce_bytes(u) : bytes_.param);
  const int grads = w_.buffer(name(u) + " unsharded grads", BufferKind::kUnshardedGrads, u,
                              layout(u).padded_elements() * grad_bytes);
  // Autograd allocates each parameter's gradient separately unless the
  // strategy gives gradients a flat buffer.
  if (layout(u).placement == Placement::kRankMajor || traits_.grads_concatenated) {
    w_.program().buffers[static_cast<size_t>(grads)].pieces = per_tensor_pieces(layout(u), grad_bytes, false);
  }
  w_.alloc(grads, Stream::kCompute, {});
  return grads;
}

uint32_t GradientReduction::reduce(int u, int mb, uint32_t grads_done, int grads) {
  const UnitLayout& l = layout(u);
  const std::string& unit_name = name(u);
  const int64_t gathered = l.padded_elements();
  const int64_t p = bytes_.param, r = reduce_bytes(u);
  std::vector<uint32_t> wait = queue_.make_room();
  // ZeRO-3 synchronizes on the oldest reductions on the CPU as well.
  const std::vector<uint32_t> host_wait = traits_.reduce_queue_blocks_host ? wait : std::vector<uint32_t>{};
  uint32_t last = grads_done;
  if (traits_.grads_concatenated) std::tie(grads, last) = concatenate_grads(u, mb, grads, last);
  int input = grads;
  int64_t first_reduce_op = -1;  // the copy-in or cast that starts the reduction, if any
  if (l.copies.reduce_scatter_in > 0 || (r != p && !traits_.grads_in_reduce_dtype)) {
    // Pack (rank-major strategies) or cast (zero-copy ones) into the reduce dtype.
    const Stream copy_on = traits_.reduce_copy_in_on_compute ? Stream::kCompute : Stream::kReduceScatter;
    std::vector<uint32_t> deps = {last};
    if (copy_on == Stream::kCompute) deps.insert(deps.end(), wait.begin(), wait.end());
    input = w_.buffer(unit_name + " reduce-scatter input", BufferKind::kReduceInput, u, gathered * r);
    w_.alloc(input, copy_on, std::move(deps));
    const bool pack = l.copies.reduce_scatter_in > 0;
    const int64_t elements = pack ? l.copies.reduce_scatter_in : gathered;
    const std::string what = pack ? " reduce-scatter copy-in" : " cast grads";
    last = w_.traffic(pack ? OpKind::kCopyIn : OpKind::kCast, copy_on, u, mb, unit_name + what, elements * (p + r),
                      {last}, input);
    first_reduce_op = last;
    if (pack) host(last).list_tensors = tensor_count(l, false);
    w_.free(grads, copy_on, {last});
    if (copy_on == Stream::kCompute) wait.clear();  // the copy-in waited
  }
  compute_waits_.insert(compute_waits_.end(), wait.begin(), wait.end());
  const int64_t predivide = traits_.divides_gradients ? gradient_predivide_factor(data_parallel_ranks()) : 1;
  if (predivide > 1) {
    last = w_.traffic(OpKind::kScale, Stream::kReduceScatter, u, mb, unit_name + " pre-divide grads",
                      gathered * 2 * r, {last}, input);
  }
  last = w_.collective(OpKind::kReduceScatter, Stream::kReduceScatter, plan_.units[static_cast<size_t>(u)].group, u, mb,
                       unit_name + " reduce-scatter", gathered * r, input, {last});
  hand_over_on_host(first_reduce_op, last, u, host_wait);
  Stream accumulate_on = Stream::kReduceScatter;
  if (replicate_ranks_ > 1) {
    last = w_.collective(OpKind::kAllReduce, Stream::kAllReduce, Group::kReplicate, u, mb,
                         unit_name + " all-reduce (HSDP)", l.shard_size * r, input, {last});
    accumulate_on = Stream::kAllReduce;
  }
  if (traits_.divides_gradients && data_parallel_ranks() > predivide) {
    last = w_.traffic(OpKind::kScale, accumulate_on, u, mb, unit_name + " post-divide grad shard",
                      l.shard_size * 2 * r, {last}, input);
  }
  last = loop_.grad_shard(u, unit_name, l.shard_size * grad_shard_bytes(), accumulate_on, last);
  // The reduced shard is read from the input's slot, so the input lives
  // until it is accumulated.
  last = w_.traffic(OpKind::kGradAccumulate, accumulate_on, u, mb, unit_name + " accumulate grad shard",
                    l.shard_size * (r + 2 * grad_shard_bytes()), {last}, input);
  const uint32_t freed = w_.free(input, accumulate_on, {last});
  queue_.push(gathered, freed);
  return last;
}

// FSDP1: the backward of the split that made unit u's parameters views of
// its flat parameter concatenates their gradients into a flat gradient on
// the compute stream; the per-parameter gradients go with it. Returns the
// flat buffer and the cat.
std::pair<int, uint32_t> GradientReduction::concatenate_grads(int u, int mb, int grads, uint32_t grads_done) {
  const int64_t bytes = w_.program().buffers[static_cast<size_t>(grads)].bytes;
  const int flat = w_.buffer(name(u) + " flat grads", BufferKind::kUnshardedGrads, u, bytes);
  w_.alloc(flat, Stream::kCompute, {grads_done});
  const uint32_t cat = w_.traffic(OpKind::kCopyIn, Stream::kCompute, u, mb, name(u) + " cat grads", 2 * bytes,
                                  {grads_done}, flat);
  host(cat).list_tensors = tensor_count(layout(u), false);
  w_.free(grads, Stream::kCompute, {cat});
  return {flat, cat};
}

// The CPU's part of handing unit u's gradients over: per-parameter copies
// into the bucket and views of the reduced shards, on the first op of the
// reduction (its copy-in or cast, else the reduce-scatter), which also
// carries the strategy's host wait.
void GradientReduction::hand_over_on_host(int64_t first_reduce_op, uint32_t reduce_scatter, int u,
                                          const std::vector<uint32_t>& waits) {
  HostWork& h = host(first_reduce_op >= 0 ? static_cast<uint32_t>(first_reduce_op) : reduce_scatter);
  const int64_t params = tensor_count(layout(u), false);
  if (traits_.grad_copy_per_parameter) h.framework_ops += params;
  if (traits_.grad_views_per_parameter) h.param_views += params;
  h.waits.insert(h.waits.end(), waits.begin(), waits.end());
}

}  // namespace ragged::planner
