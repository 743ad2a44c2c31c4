// AdamW on a span of elements (a shard or a whole tensor): purely element-wise.

#include <cstddef>

#include "backend/optimizer_adamw_kernel.hpp"
#include "backend/optimizer_math.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

void adamw_step(std::span<float> params, std::span<const float> grads, std::span<float> m, std::span<float> v,
                int64_t step, const AdamWParams& p) {
  RAGGED_ASSERT(grads.size() == params.size() && m.size() == params.size() && v.size() == params.size(),
                "adamw_step: params, grads, m and v must have the same length");
  const detail::AdamWConstants c(step, p);
  const std::size_t n = params.size();
  for (std::size_t i = 0; i < n; ++i) detail::adamw_element(params[i], grads[i], m[i], v[i], c);
}

}  // namespace ragged::backend
