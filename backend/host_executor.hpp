#pragma once
// Runs one rank's Program on the host, op by op in issue order (a
// topological order of its dependencies; the host has one stream): buffers
// are allocated and freed by the Program's ops, all-gathers and
// reduce-scatters run in place on them through the communicator, compute ops
// run the real workload on the gathered parameters, the optimizer ops update
// the shards. Every op is timed with a steady clock.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "backend/communicator.hpp"
#include "backend/host_optimizer.hpp"
#include "backend/unit_shard.hpp"
#include "backend/workload.hpp"
#include "planner/program.hpp"

namespace ragged::backend {

struct DataConfig {
  uint64_t seed = 0;
  int64_t micro_batch_size = 1;  // sequences per rank per micro-batch
  int64_t seq_len = 1;
  int64_t vocab = 1;
};

struct OpTime {
  double start = 0;  // seconds from the start of the step
  double end = 0;
};

struct MemoryPoint {
  double time = 0;
  int64_t allocated = 0;
};

struct HostStep {
  std::vector<OpTime> times;
  std::vector<MemoryPoint> memory;
  double seconds = 0;
  double loss = 0;  // mean over this rank's micro-batches
  int64_t peak_bytes = 0;
};

// The sequences rank `rank` of `world` trains on in micro-batch `micro_batch`
// of optimizer step `step` (1-based): the reference uses the same numbering.
int64_t first_sequence(int64_t step, int micro_batch, int micro_batches, int rank, int world, int64_t sequences);

class HostExecutor {
 public:
  HostExecutor(const planner::Program& program, std::vector<UnitShard>& shards, HostOptimizer& optimizer,
               Communicator& comm, HostWorkload& workload, DataConfig data, int64_t persistent_bytes,
               bool tied_embeddings);

  HostStep run_step(int64_t step);

 private:
  void execute(const planner::Op& op, int64_t step, HostStep& out);
  void allocate(const planner::Op& op);
  void fill_own_slot(int buffer, int unit);
  std::vector<const float*> params_of(int unit);
  float* data(int buffer) { return buffers_.at(buffer).data(); }
  int64_t elements_of(const planner::Buffer& buffer) const;

  const planner::Program& program_;
  std::vector<UnitShard>& shards_;
  HostOptimizer& optimizer_;
  Communicator& comm_;
  HostWorkload& workload_;
  DataConfig data_;
  int64_t persistent_bytes_;
  std::unordered_map<int, std::vector<float>> buffers_;
  std::unordered_map<int, bool> slot_filled_;
  std::vector<int> params_;        // per unit: the buffer its parameters are read from
  std::vector<bool> per_tensor_;   // per unit: that buffer is a per-tensor concatenation
  std::vector<int> grads_;         // per unit: its unsharded gradient buffer
  std::vector<std::vector<float>> reduced_;  // per unit: the reduce-scatter result, until accumulated
  // Tied embeddings: the head's gradient of the shared table, held until the
  // embedding's own gradient buffer exists (its backward comes last).
  std::vector<float> tied_grad_;
  bool tied_ = false;
  int64_t live_bytes_ = 0;
  double losses_ = 0;
  int loss_count_ = 0;
};

}  // namespace ragged::backend
