#pragma once
// The per-element AdamW update shared by adamw_step and adam8bit_step (internal
// to the optimizer sources). Scalars that depend only on the step are computed
// once, in double, and rounded to float; every element then runs the same
// fixed sequence of float operations, so the result of an element never
// depends on which span (shard or whole tensor) it was updated in.

#include <cmath>
#include <cstdint>

#include "backend/optimizer_math.hpp"
#include "common/errors.hpp"

namespace ragged::backend::detail {

struct AdamWConstants {
  float decay;            // 1 - lr * weight_decay
  float beta1;            // beta1
  float one_minus_beta1;  // 1 - beta1
  float beta2;            // beta2
  float one_minus_beta2;  // 1 - beta2
  float step_size;        // lr / (1 - beta1^step)
  float bc2_sqrt;         // sqrt(1 - beta2^step)
  float eps;              // eps

  AdamWConstants(int64_t step, const AdamWParams& p) {
    RAGGED_ASSERT(step >= 1, "AdamW steps are 1-based");
    const double bc1 = 1.0 - std::pow(p.beta1, static_cast<double>(step));
    const double bc2 = 1.0 - std::pow(p.beta2, static_cast<double>(step));
    decay = static_cast<float>(1.0 - p.lr * p.weight_decay);
    beta1 = static_cast<float>(p.beta1);
    one_minus_beta1 = static_cast<float>(1.0 - p.beta1);
    beta2 = static_cast<float>(p.beta2);
    one_minus_beta2 = static_cast<float>(1.0 - p.beta2);
    step_size = static_cast<float>(p.lr / bc1);
    bc2_sqrt = static_cast<float>(std::sqrt(bc2));
    eps = static_cast<float>(p.eps);
  }
};

// torch.optim.AdamW's order of operations (PyTorch's single-tensor path):
//   param = param * decay
//   m     = beta1 * m + (1 - beta1) * grad
//   v     = beta2 * v + (1 - beta2) * grad * grad
//   denom = sqrt(v) / sqrt(1 - beta2^step) + eps
//   param = param - step_size * (m / denom)
// which is p -= lr * mhat / (sqrt(vhat) + eps) with mhat = m / (1 - beta1^step),
// vhat = v / (1 - beta2^step).
inline void adamw_element(float& param, float grad, float& m, float& v, const AdamWConstants& c) {
  param = param * c.decay;
  m = c.beta1 * m + c.one_minus_beta1 * grad;
  v = c.beta2 * v + c.one_minus_beta2 * grad * grad;
  const float denom = std::sqrt(v) / c.bc2_sqrt + c.eps;
  param = param - c.step_size * (m / denom);
}

}  // namespace ragged::backend::detail
