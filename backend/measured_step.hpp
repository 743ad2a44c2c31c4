#pragma once
// What an executor measured of one step, on any device: when each op of the
// Program ran (seconds from the step's start), the memory it held over time,
// the step's loss. The measured trace is written from these
// (run_trace.hpp).

#include <cstdint>
#include <optional>
#include <vector>

#include "backend/finite_check.hpp"

namespace ragged::backend {

struct OpTime {
  double start = 0;  // seconds from the start of the step
  double end = 0;
};

struct MemoryPoint {
  double time = 0;
  int64_t allocated = 0;  // live buffers and persistent state
};

struct MeasuredStep {
  std::vector<OpTime> times;  // indexed by op id
  std::vector<MemoryPoint> memory;
  double seconds = 0;
  double loss = 0;  // mean over this rank's micro-batches
  int64_t peak_bytes = 0;      // the most allocated at once
  // The most the persistent state and the parameter and gradient buffers
  // held at once (planner::is_parameter_or_gradient_buffer): the quantity a
  // prediction reports too.
  int64_t peak_state_and_buffers_bytes = 0;
  int64_t persistent_bytes = 0;  // of which the executor's persistent state
  int64_t reserved_bytes = 0;  // what the executor holds: persistent state and the whole arena
  // The first NaN or infinity in a final gradient shard, seen before the
  // update consumed (and zeroed) it.
  std::optional<NonFinite> gradient_non_finite;
};

}  // namespace ragged::backend
