#include <algorithm>

#include "common/errors.hpp"
#include "planner/program.hpp"

namespace ragged::planner {

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kAlloc: return "alloc";
    case OpKind::kFree: return "free";
    case OpKind::kAllGather: return "all_gather";
    case OpKind::kReduceScatter: return "reduce_scatter";
    case OpKind::kAllReduce: return "all_reduce";
    case OpKind::kAllToAll: return "all_to_all";
    case OpKind::kCopyIn: return "copy_in";
    case OpKind::kCopyOut: return "copy_out";
    case OpKind::kCast: return "cast";
    case OpKind::kComputeFwd: return "compute_fwd";
    case OpKind::kComputeBwd: return "compute_bwd";
    case OpKind::kRecompute: return "recompute";
    case OpKind::kOptimizer: return "optimizer";
    case OpKind::kGradAccumulate: return "grad_accumulate";
    case OpKind::kTrainMetrics: return "train_metrics";
    case OpKind::kScale: return "scale";
    case OpKind::kSend: return "send";
    case OpKind::kRecv: return "recv";
  }
  return "unknown";
}

std::string_view stream_name(Stream stream) {
  switch (stream) {
    case Stream::kCompute: return "compute";
    case Stream::kAllGather: return "all_gather";
    case Stream::kReduceScatter: return "reduce_scatter";
    case Stream::kAllReduce: return "all_reduce";
    case Stream::kTensorParallel: return "tensor_parallel";
    case Stream::kContextParallel: return "context_parallel";
    case Stream::kExpertParallel: return "expert_parallel";
    case Stream::kPipelineSend: return "pipeline_send";
    case Stream::kPipelineRecv: return "pipeline_recv";
  }
  return "unknown";
}

std::string_view group_name(Group group) {
  switch (group) {
    case Group::kNone: return "none";
    case Group::kShard: return "shard";
    case Group::kReplicate: return "replicate";
    case Group::kTensor: return "tensor";
    case Group::kContext: return "context";
    case Group::kExpert: return "expert";
    case Group::kExpertShard: return "expert_shard";
    case Group::kPipeline: return "pipeline";
  }
  return "unknown";
}

size_t Program::count(OpKind kind) const {
  return static_cast<size_t>(std::count_if(ops.begin(), ops.end(), [&](const Op& op) { return op.kind == kind; }));
}

int64_t Program::bytes_of(BufferKind kind) const {
  int64_t bytes = 0;
  for (const Buffer& b : buffers) bytes += b.kind == kind ? b.bytes : 0;
  return bytes;
}

int Program::gathered_buffer(const Op& copy_out) const {
  for (uint32_t d : copy_out.deps) {
    if (ops[d].kind == OpKind::kAllGather) return ops[d].buffer;
  }
  throw InternalError("Program: '" + copy_out.name + "' depends on no all-gather");
}

}  // namespace ragged::planner
