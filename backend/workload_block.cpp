// One transformer block: input scale, attention, residual, post-attention
// scale, MLP or experts, residual.

#include <algorithm>

#include "backend/workload_internal.hpp"

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
  scale_columns(x, param_at(params, lay.in_norm), t, h, c.n1.data());
  attention_forward(ctx, lay.attention, params, dims, c.n1.data(), c.attention, c.a.data());
  for (size_t i = 0; i < size; ++i) c.x1[i] = x[i] + c.a[i];
  scale_columns(c.x1.data(), param_at(params, lay.post_norm), t, h, c.n2.data());
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
  if (lay.moe) {
    moe_backward(ctx, lay.experts, params, grads, dims, c.n2.data(), c.moe, dx2, dn2.data());
  } else {
    glu_backward(ctx, bind_glu(lay.dense, h, 0, params, &grads), c.dense, dx2, dn2.data());
  }
  add_column_dots(grad_at(&grads, lay.post_norm), dn2.data(), c.x1.data(), t, h);
  Buf dx1(size);
  const float* w_post = param_at(params, lay.post_norm);
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t j = 0; j < h; ++j) dx1[r * h + j] = dx2[r * h + j] + dn2[r * h + j] * w_post[j];
  }
  Buf dn1(size);
  attention_backward(ctx, lay.attention, params, grads, dims, c.n1.data(), c.attention, dx1.data(), dn1.data());
  add_column_dots(grad_at(&grads, lay.in_norm), dn1.data(), x, t, h);
  const float* w_in = param_at(params, lay.in_norm);
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t j = 0; j < h; ++j) dx[r * h + j] = dx1[r * h + j] + dn1[r * h + j] * w_in[j];
  }
}

}  // namespace ragged::backend::detail
