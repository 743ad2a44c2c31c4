#include "planner/distopt_buckets.hpp"

#include <numeric>

#include "common/errors.hpp"
#include "planner/baseline_util.hpp"

namespace ragged::planner {

namespace {

constexpr int64_t kParamStartAlign = 64;    // pad_param_start
constexpr int64_t kBucketEndDivisor = 128;  // bucket_end_divisor without pad_buckets_for_high_nccl_busbw

}  // namespace

std::vector<DistOptBucket> distopt_buckets(const BucketDomain& domain) {
  RAGGED_ASSERT(domain.units.size() == domain.unit_tensors.size(), "one tensor list per unit");
  RAGGED_ASSERT(domain.ranks >= 1 && domain.bucket_size >= 0, "a bucket domain has ranks and a bucket size");
  const int64_t divisor = std::lcm(domain.ranks, kBucketEndDivisor);
  std::vector<DistOptBucket> buckets;
  const DistOptBucket empty{0, 0, 0, 0, domain.group, domain.ranks};
  DistOptBucket open = empty;
  int64_t bucket_start = 0, param_start = 0, param_end = 0;
  const auto close = [&] {
    open.elements = baseline::round_up(param_end, divisor) - bucket_start;
    bucket_start += open.elements;
    buckets.push_back(open);
    open = empty;
    param_start = bucket_start;
  };
  for (size_t i = domain.units.size(); i-- > 0;) {
    const std::vector<int64_t>& tensors = domain.unit_tensors[i];
    for (auto t = tensors.rbegin(); t != tensors.rend(); ++t) {
      param_start = baseline::round_up(param_start, kParamStartAlign);
      param_end = param_start + *t;
      if (open.tensors == 0) open.last_unit = domain.units[i];
      open.first_unit = domain.units[i];
      open.tensors += 1;
      if (domain.bucket_size > 0 && param_end - bucket_start >= domain.bucket_size) {
        close();
      } else {
        param_start = param_end;
      }
    }
  }
  if (open.tensors > 0) close();
  return buckets;
}

}  // namespace ragged::planner
