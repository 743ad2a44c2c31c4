#pragma once
// The buckets of Megatron-LM's distributed optimizer
// (megatron/core/optimizer/distrib_optimizer.py, the per-buffer layout
// beside pad_param_start and pad_bucket_end in param_layout.py). One buffer
// per model chunk and kind of parameter (dense, or expert-parallel with its
// own data-parallel group); its parameters are walked in reverse (the order
// the backward makes their gradients), each starting on a multiple of 64
// elements, and a bucket is closed after the parameter that brings it to
// bucket_size elements or more, its end padded to a multiple of
// lcm(dp, 128) so that dp equal shards split it. Without a bucket size
// (overlap_grad_reduce off, a chunk after the first, a pipeline stage after
// the first: megatron/training/training.py) the buffer is one bucket.

#include <cstdint>
#include <vector>

#include "planner/group.hpp"

namespace ragged::planner {

// One of Megatron's buffers: its units (plan indices, forward order) and
// each unit's parameter sizes in model order.
struct BucketDomain {
  std::vector<int> units;
  std::vector<std::vector<int64_t>> unit_tensors;
  Group group = Group::kShard;  // the data-parallel group it is sharded over
  int64_t ranks = 1;            // that group's size
  int64_t bucket_size = 0;      // elements; 0: one bucket
};

struct DistOptBucket {
  int64_t elements = 0;  // padded to a multiple of lcm(ranks, 128)
  int64_t tensors = 0;
  // The backward makes its first gradient in `last_unit` and its last in
  // `first_unit` (units in forward order: first_unit <= last_unit).
  int first_unit = 0;
  int last_unit = 0;
  Group group = Group::kShard;
  int64_t ranks = 1;  // the group's size: each rank's shard is elements / ranks
};

// The domain's buckets in the order the backward completes them.
std::vector<DistOptBucket> distopt_buckets(const BucketDomain& domain);

}  // namespace ragged::planner
