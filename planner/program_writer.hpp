#pragma once
// Appends ops and buffers to a Program, assigning ids in issue order. Each
// op's host work starts as one framework op per kernel it launches (a
// compute op's kernels, one for a copy, cast or collective, none for alloc
// and free); the builder adds the strategy's per-parameter work.

#include <optional>
#include <string>
#include <vector>

#include "planner/program.hpp"

namespace ragged::planner {

class ProgramWriter {
 public:
  explicit ProgramWriter(Program* program) : program_(program) {}

  uint32_t add(Op op);
  uint32_t compute(OpKind kind, int unit, int micro_batch, std::string name, ComputeWork work,
                   std::vector<uint32_t> deps);
  // A memory-bound op (cast, copy, accumulate) moving `bytes` (read + write).
  uint32_t traffic(OpKind kind, Stream stream, int unit, int micro_batch, std::string name, int64_t bytes,
                   std::vector<uint32_t> deps, int buffer = -1);
  uint32_t collective(OpKind kind, Stream stream, Group group, int unit, int micro_batch, std::string name,
                      int64_t bytes, int buffer, std::vector<uint32_t> deps);
  // The shard group's collectives share one NCCL communicator (PyTorch's
  // process group in FSDP1/FSDP2, DeepSpeed's, Megatron's): NCCL runs them in
  // issue order, so each one, whatever its stream, waits for the previous.
  void serialise_shard_collectives() { serialise_shard_ = true; }

  int buffer(std::string name, BufferKind kind, int unit, int64_t bytes);
  uint32_t alloc(int buffer, Stream stream, std::vector<uint32_t> deps);
  uint32_t free(int buffer, Stream stream, std::vector<uint32_t> deps);

  Program& program() { return *program_; }
  // The last op issued on `stream`, if any.
  std::optional<uint32_t> last_on(Stream stream) const;

 private:
  uint32_t memory(OpKind kind, int buffer, Stream stream, std::vector<uint32_t> deps);

  Program* program_;
  bool serialise_shard_ = false;
  int64_t last_shard_collective_ = -1;
};

}  // namespace ragged::planner
