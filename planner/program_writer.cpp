#include "planner/program_writer.hpp"

#include "planner/compute_work.hpp"

namespace ragged::planner {

uint32_t ProgramWriter::add(Op op) {
  op.id = static_cast<uint32_t>(program_->ops.size());
  program_->ops.push_back(std::move(op));
  return program_->ops.back().id;
}

std::optional<uint32_t> ProgramWriter::last_on(Stream stream) const {
  for (auto op = program_->ops.rbegin(); op != program_->ops.rend(); ++op) {
    if (op->stream == stream) return op->id;
  }
  return std::nullopt;
}

uint32_t ProgramWriter::compute(OpKind kind, int unit, int micro_batch, std::string name, ComputeWork work,
                                std::vector<uint32_t> deps) {
  Op op;
  op.kind = kind;
  op.stream = Stream::kCompute;
  op.unit = unit;
  op.micro_batch = micro_batch;
  op.name = std::move(name);
  op.flops = total_flops(work);
  op.bytes = static_cast<int64_t>(work.elementwise_bytes);
  op.host.framework_ops = work.kernels();
  op.work = std::move(work);
  op.deps = std::move(deps);
  return add(std::move(op));
}

uint32_t ProgramWriter::traffic(OpKind kind, Stream stream, int unit, int micro_batch, std::string name, int64_t bytes,
                                std::vector<uint32_t> deps, int buffer) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.unit = unit;
  op.micro_batch = micro_batch;
  op.name = std::move(name);
  op.bytes = bytes;
  op.work.elementwise_bytes = static_cast<double>(bytes);
  op.host.framework_ops = 1;
  op.buffer = buffer;
  op.deps = std::move(deps);
  return add(std::move(op));
}

uint32_t ProgramWriter::collective(OpKind kind, Stream stream, Group group, int unit, int micro_batch, std::string name,
                                   int64_t bytes, int buffer, std::vector<uint32_t> deps) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.group = group;
  op.unit = unit;
  op.micro_batch = micro_batch;
  op.name = std::move(name);
  op.bytes = bytes;
  op.buffer = buffer;
  op.deps = std::move(deps);
  op.host.framework_ops = 1;
  if (serialise_shard_ && group == Group::kShard) {
    if (last_shard_collective_ >= 0) {
      const Op& previous = program_->ops[static_cast<size_t>(last_shard_collective_)];
      if (previous.stream != stream) op.deps.push_back(previous.id);
    }
    last_shard_collective_ = static_cast<int64_t>(program_->ops.size());
  }
  return add(std::move(op));
}

int ProgramWriter::buffer(std::string name, BufferKind kind, int unit, int64_t bytes) {
  Buffer b;
  b.name = std::move(name);
  b.kind = kind;
  b.unit = unit;
  b.bytes = bytes;
  program_->buffers.push_back(std::move(b));
  return static_cast<int>(program_->buffers.size()) - 1;
}

uint32_t ProgramWriter::alloc(int buffer, Stream stream, std::vector<uint32_t> deps) {
  return memory(OpKind::kAlloc, buffer, stream, std::move(deps));
}

uint32_t ProgramWriter::free(int buffer, Stream stream, std::vector<uint32_t> deps) {
  return memory(OpKind::kFree, buffer, stream, std::move(deps));
}

uint32_t ProgramWriter::memory(OpKind kind, int buffer, Stream stream, std::vector<uint32_t> deps) {
  const Buffer& b = program_->buffers[buffer];
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.unit = b.unit;
  op.name = std::string(op_kind_name(kind)) + " " + b.name;
  op.bytes = b.bytes;
  op.buffer = buffer;
  op.deps = std::move(deps);
  return add(std::move(op));
}

}  // namespace ragged::planner
