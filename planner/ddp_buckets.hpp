#pragma once
// DDP's gradient buckets (torch.nn.parallel.DistributedDataParallel with its
// C++ Reducer, torch/csrc/distributed/c10d/reducer.cpp). After the first
// iteration the Reducer rebuilds its buckets in the order the gradients
// became ready (rebuild_buckets over rebuilt_params_, find_unused_parameters
// false): compute_bucket_assignment_by_size adds each gradient to the open
// bucket and closes it once it holds at least its limit, the first bucket
// 1 MiB (dist._DEFAULT_FIRST_BUCKET_BYTES), every later one bucket_cap_mb;
// a gradient is never split. The backward makes a unit's gradients after
// the later units' and, inside a unit, in the reverse of its parameters'
// order, which is the order used here. A bucket is all-reduced when its last
// gradient is ready, buckets strictly in order (mark_bucket_ready).

#include <cstdint>
#include <vector>

namespace ragged::planner {

struct DdpBucket {
  int64_t elements = 0;
  int64_t bytes = 0;
  int64_t tensors = 0;
  // The unit whose backward makes the bucket's last gradient: the bucket is
  // all-reduced after it.
  int ready_unit = 0;
};

inline constexpr int64_t kDdpFirstBucketBytes = int64_t{1} << 20;

// `unit_tensor_elements[u]`: the elements of unit u's parameters in model
// order, units in model (forward) order; `grad_bytes` per gradient element.
// Returns the buckets in the order they are all-reduced.
std::vector<DdpBucket> ddp_buckets(const std::vector<std::vector<int64_t>>& unit_tensor_elements, int64_t grad_bytes,
                                   int64_t bucket_cap_bytes, int64_t first_bucket_bytes = kDdpFirstBucketBytes);

}  // namespace ragged::planner
