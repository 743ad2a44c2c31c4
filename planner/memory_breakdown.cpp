#include "planner/memory_breakdown.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

#include "planner/program_order.hpp"

namespace ragged::planner {
namespace {

// The peak of the transient buffers when the ops run in `order`, split by kind.
MemoryBreakdown peak_in(const Program& program, const std::vector<uint32_t>& order) {
  MemoryBreakdown out;
  std::array<int64_t, kBufferKinds> live{};  // by BufferKind
  int64_t total = 0;
  for (uint32_t id : order) {
    const Op& op = program.ops[id];
    if (op.kind != OpKind::kAlloc && op.kind != OpKind::kFree) continue;
    const Buffer& buffer = program.buffers[op.buffer];
    const int64_t delta = op.kind == OpKind::kAlloc ? buffer.bytes : -buffer.bytes;
    live[static_cast<size_t>(buffer.kind)] += delta;
    total += delta;
    if (op.kind == OpKind::kAlloc && total > out.peak_transient) {
      out.peak_transient = total;
      out.unsharded_params = live[static_cast<size_t>(BufferKind::kUnshardedParams)] +
                             live[static_cast<size_t>(BufferKind::kParamCopies)];
      out.gradients_in_flight = live[static_cast<size_t>(BufferKind::kUnshardedGrads)] +
                                live[static_cast<size_t>(BufferKind::kReduceInput)];
      out.activations = live[static_cast<size_t>(BufferKind::kActivations)];
      out.workspace = live[static_cast<size_t>(BufferKind::kWorkspace)] + live[static_cast<size_t>(BufferKind::kOptimizer)];
      out.grad_shards = live[static_cast<size_t>(BufferKind::kGradShards)];
      out.model_outputs = live[static_cast<size_t>(BufferKind::kModelOutputs)];
    }
  }
  return out;
}

}  // namespace

MemoryBreakdown memory_breakdown(const Program& program) {
  std::vector<uint32_t> issue_order(program.ops.size());
  std::iota(issue_order.begin(), issue_order.end(), 0u);
  const MemoryBreakdown issued = peak_in(program, issue_order);
  const MemoryBreakdown lagging = peak_in(program, reductions_last_order(program));
  MemoryBreakdown out = lagging.peak_transient > issued.peak_transient ? lagging : issued;
  out.persistent = program.persistent;
  out.issue_order_peak = issued.peak_transient;
  return out;
}

int64_t issue_order_state_and_buffers_peak(const Program& program) {
  int64_t live = 0, peak = 0;
  for (const Op& op : program.ops) {
    if (op.kind != OpKind::kAlloc && op.kind != OpKind::kFree) continue;
    const Buffer& buffer = program.buffers[op.buffer];
    if (!is_parameter_or_gradient_buffer(buffer.kind)) continue;
    live += op.kind == OpKind::kAlloc ? buffer.bytes : -buffer.bytes;
    peak = std::max(peak, live);
  }
  return program.persistent.total() + peak;
}

MemoryFloor memory_floor(const Program& program) {
  // Buffers allocated and freed on the compute stream (never freed: never counted).
  std::vector<int> alloc_on_compute(program.buffers.size(), 0), free_on_compute(program.buffers.size(), 0);
  for (const Op& op : program.ops) {
    if (op.stream != Stream::kCompute || op.buffer < 0) continue;
    if (op.kind == OpKind::kAlloc) alloc_on_compute[static_cast<size_t>(op.buffer)] = 1;
    if (op.kind == OpKind::kFree) free_on_compute[static_cast<size_t>(op.buffer)] = 1;
  }
  MemoryFloor floor;
  floor.persistent = program.persistent.total();
  int64_t live = 0;
  for (const Op& op : program.ops) {
    if ((op.kind != OpKind::kAlloc && op.kind != OpKind::kFree) || op.stream != Stream::kCompute) continue;
    const size_t b = static_cast<size_t>(op.buffer);
    if (!alloc_on_compute[b] || !free_on_compute[b]) continue;
    live += op.kind == OpKind::kAlloc ? program.buffers[b].bytes : -program.buffers[b].bytes;
    floor.compute_stream_buffers = std::max(floor.compute_stream_buffers, live);
  }
  return floor;
}

}  // namespace ragged::planner
