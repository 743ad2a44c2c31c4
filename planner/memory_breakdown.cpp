#include "planner/memory_breakdown.hpp"

#include <algorithm>
#include <array>

namespace ragged::planner {

MemoryBreakdown memory_breakdown(const Program& program) {
  MemoryBreakdown out;
  out.persistent = program.persistent;
  std::array<int64_t, 7> live{};  // by BufferKind
  int64_t total = 0;
  for (const Op& op : program.ops) {
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
    }
  }
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

}  // namespace ragged::planner
