// One transformer block: input RMSNorm, attention, residual, post-attention
// RMSNorm, MLP or experts, residual.

#include <algorithm>

#include "backend/workload_internal.hpp"
#include "common/errors.hpp"

namespace ragged::backend::detail {

void block_forward(Ctx& ctx, const BlockLayout& lay, const ConstTensors& params, const Dims& dims, const float* x,
                   BlockCache& c, float* x2) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  const size_t size = static_cast<size_t>(t * h);
  c.n1.resize(size);
  c.a.resize(size);
  c.x1.resize(size);
  c.n2.resize(size);
  c.mlp_out.resize(size);
  rms_norm_forward(x, param_at(params, lay.in_norm), t, h, c.n1.data());
  attention_forward(ctx, lay.attention, params, dims, c.n1.data(), c.attention, c.a.data());
  for (size_t i = 0; i < size; ++i) c.x1[i] = x[i] + c.a[i];
  rms_norm_forward(c.x1.data(), param_at(params, lay.post_norm), t, h, c.n2.data());
  if (lay.experts_apart) {
    // The experts unit adds the mixture's output and the residual; until
    // then the block's output is x1.
    moe_forward(ctx, lay.experts, params, dims, c.n2.data(), c.moe, nullptr);
    std::copy(c.x1.begin(), c.x1.end(), x2);
    return;
  }
  if (lay.moe) {
    moe_forward(ctx, lay.experts, params, dims, c.n2.data(), c.moe, c.mlp_out.data());
  } else {
    c.dense.x = c.n2;
    glu_forward(ctx, bind_glu(lay.dense, h, 0, params, nullptr), c.dense);
    c.mlp_out = c.dense.y;
  }
  for (size_t i = 0; i < size; ++i) x2[i] = c.x1[i] + c.mlp_out[i];
}

void block_backward(Ctx& ctx, const BlockLayout& lay, const ConstTensors& params, const Tensors& grads,
                    const Dims& dims, const float* x, const BlockCache& c, const float* dx2, float* dx) {
  const int64_t t = dims.tokens;
  const int64_t h = dims.hidden;
  const size_t size = static_cast<size_t>(t * h);
  Buf dn2(size);
  if (lay.experts_apart) {
    RAGGED_ASSERT(c.dn2_routed.size() == size, "host workload: the experts unit's backward precedes its block's");
    std::copy(c.dn2_routed.begin(), c.dn2_routed.end(), dn2.begin());
    moe_finish_backward(ctx, lay.experts, params, grads, dims, c.n2.data(), c.moe, c.dgates, dx2, dn2.data());
  } else if (lay.moe) {
    moe_backward(ctx, lay.experts, params, grads, dims, c.n2.data(), c.moe, dx2, dn2.data());
  } else {
    glu_backward(ctx, bind_glu(lay.dense, h, 0, params, &grads), c.dense, dx2, dn2.data());
  }
  rms_norm_backward(c.x1.data(), param_at(params, lay.post_norm), dn2.data(), t, h, dn2.data(),
                    grad_at(&grads, lay.post_norm));
  Buf dx1(size);
  for (size_t i = 0; i < size; ++i) dx1[i] = dx2[i] + dn2[i];
  Buf dn1(size);
  attention_backward(ctx, lay.attention, params, grads, dims, c.n1.data(), c.attention, dx1.data(), dn1.data());
  rms_norm_backward(x, param_at(params, lay.in_norm), dn1.data(), t, h, dn1.data(), grad_at(&grads, lay.in_norm));
  for (size_t i = 0; i < size; ++i) dx[i] = dx1[i] + dn1[i];
}

}  // namespace ragged::backend::detail
