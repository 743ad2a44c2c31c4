// SGD on a span of elements (a shard or a whole tensor): purely element-wise.

#include <cstddef>

#include "backend/optimizer_math.hpp"
#include "common/errors.hpp"

namespace ragged::backend {

void sgd_step(std::span<float> params, std::span<const float> grads, std::span<float> momentum, int64_t step,
              const SgdParams& p) {
  RAGGED_ASSERT(grads.size() == params.size(), "sgd_step: params and grads must have the same length");
  RAGGED_ASSERT(p.momentum == 0.0 || momentum.size() == params.size(),
                "sgd_step: with momentum, the buffer must cover the params");
  const auto lr = static_cast<float>(p.lr), mu = static_cast<float>(p.momentum), wd = static_cast<float>(p.weight_decay);
  const std::size_t n = params.size();
  for (std::size_t i = 0; i < n; ++i) {
    float g = grads[i];
    if (wd != 0.0f) g += wd * params[i];
    if (mu != 0.0f) {
      momentum[i] = step == 1 ? g : mu * momentum[i] + g;  // torch: the first buffer is the gradient itself
      g = momentum[i];
    }
    params[i] -= lr * g;
  }
}

}  // namespace ragged::backend
