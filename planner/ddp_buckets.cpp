#include "planner/ddp_buckets.hpp"

#include "common/errors.hpp"

namespace ragged::planner {

std::vector<DdpBucket> ddp_buckets(const std::vector<std::vector<int64_t>>& unit_tensor_elements, int64_t grad_bytes,
                                   int64_t bucket_cap_bytes, int64_t first_bucket_bytes) {
  RAGGED_ASSERT(grad_bytes > 0 && bucket_cap_bytes > 0 && first_bucket_bytes > 0, "bucket sizes are positive");
  std::vector<DdpBucket> buckets;
  DdpBucket open;
  int64_t limit = first_bucket_bytes;
  for (int u = static_cast<int>(unit_tensor_elements.size()) - 1; u >= 0; --u) {
    const std::vector<int64_t>& tensors = unit_tensor_elements[static_cast<size_t>(u)];
    for (auto t = tensors.rbegin(); t != tensors.rend(); ++t) {
      open.elements += *t;
      open.bytes += *t * grad_bytes;
      open.tensors += 1;
      open.ready_unit = u;
      if (open.bytes < limit) continue;
      buckets.push_back(open);
      open = DdpBucket{};
      limit = bucket_cap_bytes;
    }
  }
  if (open.tensors > 0) buckets.push_back(open);
  return buckets;
}

}  // namespace ragged::planner
