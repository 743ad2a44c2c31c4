#include "backend/cuda/attention_gemm.hpp"

#include <cmath>
#include <type_traits>

#include "common/errors.hpp"

namespace ragged::backend::gpu {
namespace {

using B = AttentionBuffer;

// Where one (sequence, head) reads and writes: its rows of q, u and du (row
// stride heads x dim) and of its kv head's k, v, dk and dv (groups x dim).
struct HeadViews {
  int64_t head_offset = 0, group_offset = 0;
  int64_t head_stride = 0, group_stride = 0;
  bool first_of_group = false;  // starts its group's sums of dk and dv
};

HeadViews views(const AttentionShape& s, int64_t sequence, int64_t head) {
  const int64_t rep = s.heads / s.groups, group = head / rep, first_token = sequence * s.seq_len;
  return HeadViews{(first_token * s.heads + head) * s.dim, (first_token * s.groups + group) * s.dim, s.heads * s.dim,
                   s.groups * s.dim, head % rep == 0};
}

AttentionStep gemm(GemmShape shape, AttentionOperand a, AttentionOperand b, AttentionOperand c, float alpha = 1.0f,
                   float beta = 0.0f) {
  AttentionStep step;
  step.gemm = AttentionGemm{shape, a, b, c, alpha, beta};
  return step;
}

AttentionStep rows(AttentionRowOp op) {
  AttentionStep step;
  step.is_gemm = false;
  step.rows = op;
  return step;
}

// S = scale q_h k_g^T into kScores, then P (kProbs, and kScores fp32 when the backward needs it).
void scores_and_probs(const AttentionShape& s, const HeadViews& h, AttentionRowOp softmax,
                      std::vector<AttentionStep>& out) {
  const int64_t L = s.seq_len;
  GemmShape shape{L, L, s.dim, false, true, h.head_stride, h.group_stride, L};
  out.push_back(gemm(shape, {B::kQuery, h.head_offset}, {B::kKey, h.group_offset}, {B::kScores, 0},
                     gemm_attention_scale(s)));
  out.push_back(rows(softmax));
}

template <typename Body>
void each_head(const AttentionShape& s, const Body& body) {
  RAGGED_ASSERT(gemm_attention_applies(s, false), "GEMM attention: whole sequences, heads a multiple of the groups");
  for (int64_t sequence = 0; sequence < s.tokens / s.seq_len; ++sequence) {
    for (int64_t head = 0; head < s.heads; ++head) body(views(s, sequence, head));
  }
}

}  // namespace

bool gemm_attention_applies(const AttentionShape& s, bool has_qk_norms) {
  return !has_qk_norms && s.positions == nullptr && s.queries == 0 && s.seq_len > 0 && s.tokens % s.seq_len == 0 &&
         s.dim > 0 && s.groups > 0 && s.heads % s.groups == 0;
}

int64_t gemm_attention_scratch_bytes(int64_t seq_len, int64_t element_bytes) {
  return seq_len * seq_len * (4 + 4 + 2 * element_bytes);
}

float gemm_attention_scale(const AttentionShape& shape) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.dim)));
}

std::vector<AttentionStep> gemm_attention_forward_steps(const AttentionShape& s) {
  std::vector<AttentionStep> out;
  const int64_t L = s.seq_len;
  each_head(s, [&](const HeadViews& h) {
    scores_and_probs(s, h, AttentionRowOp::kCausalSoftmaxProbsOnly, out);
    // u_h = P v_g.
    out.push_back(gemm(GemmShape{L, s.dim, L, false, false, L, h.group_stride, h.head_stride}, {B::kProbs, 0},
                       {B::kValue, h.group_offset}, {B::kOutput, h.head_offset}));
  });
  return out;
}

std::vector<AttentionStep> gemm_attention_backward_steps(const AttentionShape& s) {
  std::vector<AttentionStep> out;
  const int64_t L = s.seq_len;
  each_head(s, [&](const HeadViews& h) {
    scores_and_probs(s, h, AttentionRowOp::kCausalSoftmax, out);
    const float beta = h.first_of_group ? 0.0f : 1.0f;  // the group's heads in order: the first writes
    // dP = du_h v_g^T.
    out.push_back(gemm(GemmShape{L, L, s.dim, false, true, h.head_stride, h.group_stride, L},
                       {B::kOutputGrad, h.head_offset}, {B::kValue, h.group_offset}, {B::kProbGrads, 0}));
    // dv_g (+)= P^T du_h.
    out.push_back(gemm(GemmShape{L, s.dim, L, true, false, L, h.head_stride, h.group_stride}, {B::kProbs, 0},
                       {B::kOutputGrad, h.head_offset}, {B::kValueGrad, h.group_offset}, 1.0f, beta));
    out.push_back(rows(AttentionRowOp::kCausalSoftmaxBackward));
    // dk_g (+)= dS^T q_h.
    out.push_back(gemm(GemmShape{L, s.dim, L, true, false, L, h.head_stride, h.group_stride}, {B::kScoreGrads, 0},
                       {B::kQuery, h.head_offset}, {B::kKeyGrad, h.group_offset}, 1.0f, beta));
    // dq_h = dS k_g, over du_h (read by the two GEMMs above, not after).
    out.push_back(gemm(GemmShape{L, s.dim, L, false, false, L, h.group_stride, h.head_stride}, {B::kScoreGrads, 0},
                       {B::kKey, h.group_offset}, {B::kOutputGrad, h.head_offset}));
  });
  return out;
}

namespace {

bool fp32_output(B buffer) { return buffer == B::kScores || buffer == B::kProbGrads; }

// Bytes of one element of `buffer`: the scores and their gradients in fp32,
// the rest in the compute dtype S.
template <typename S>
int64_t element_bytes_of(B buffer) {
  return fp32_output(buffer) ? 4 : static_cast<int64_t>(sizeof(S));
}

// The buffers of one call, by AttentionBuffer: q, k, v and one head's scratch
// (carved from `scratch`), the call's outputs set by the caller.
template <typename S>
struct DeviceBuffers {
  const void* in[static_cast<int>(B::kScoreGrads) + 1] = {};
  void* out[static_cast<int>(B::kScoreGrads) + 1] = {};

  DeviceBuffers(const S* q, const S* k, const S* v, std::byte* scratch, int64_t seq_len) {
    in[static_cast<int>(B::kQuery)] = q;
    in[static_cast<int>(B::kKey)] = k;
    in[static_cast<int>(B::kValue)] = v;
    std::byte* at = scratch;
    for (B buffer : {B::kScores, B::kProbGrads, B::kProbs, B::kScoreGrads}) {
      out[static_cast<int>(buffer)] = at;
      in[static_cast<int>(buffer)] = at;
      at += seq_len * seq_len * element_bytes_of<S>(buffer);
    }
  }
  const std::byte* read(const AttentionOperand& o) const {
    return static_cast<const std::byte*>(in[static_cast<int>(o.buffer)]) + o.offset * element_bytes_of<S>(o.buffer);
  }
  std::byte* write(const AttentionOperand& o) const {
    return static_cast<std::byte*>(out[static_cast<int>(o.buffer)]) + o.offset * element_bytes_of<S>(o.buffer);
  }
};

template <typename S>
void run_steps(cublasHandle_t handle, cudaStream_t stream, const std::vector<AttentionStep>& steps,
               const DeviceBuffers<S>& buffers, const AttentionShape& shape) {
  const int64_t L = shape.seq_len;
  auto* scores = static_cast<float*>(buffers.out[static_cast<int>(B::kScores)]);
  auto* prob_grads = static_cast<float*>(buffers.out[static_cast<int>(B::kProbGrads)]);
  for (const AttentionStep& step : steps) {
    if (!step.is_gemm) {
      if (step.rows != AttentionRowOp::kCausalSoftmaxBackward) {
        causal_softmax_rows(scores, static_cast<S*>(buffers.out[static_cast<int>(B::kProbs)]), L,
                            step.rows == AttentionRowOp::kCausalSoftmax, stream);
      } else {
        causal_softmax_backward_rows(scores, prob_grads, static_cast<S*>(buffers.out[static_cast<int>(B::kScoreGrads)]),
                                     L, gemm_attention_scale(shape), stream);
      }
      continue;
    }
    const AttentionGemm& g = step.gemm;
    const std::byte *a = buffers.read(g.a), *b = buffers.read(g.b);
    std::byte* c = buffers.write(g.c);
    if constexpr (std::is_same_v<S, float>) {
      gemm_f32(handle, stream, g.shape, reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b),
               reinterpret_cast<float*>(c), g.alpha, g.beta);
    } else if (fp32_output(g.c.buffer)) {
      gemm_bf16_f32(handle, stream, g.shape, reinterpret_cast<const uint16_t*>(a), reinterpret_cast<const uint16_t*>(b),
                    reinterpret_cast<float*>(c), g.alpha, g.beta);
    } else {
      gemm_bf16(handle, stream, g.shape, reinterpret_cast<const uint16_t*>(a), reinterpret_cast<const uint16_t*>(b),
                reinterpret_cast<uint16_t*>(c), g.alpha, g.beta);
    }
  }
}

}  // namespace

template <typename S>
void run_gemm_attention_forward(cublasHandle_t handle, cudaStream_t stream, S* u, const S* q, const S* k, const S* v,
                                const AttentionShape& shape, std::byte* scratch) {
  if (shape.tokens <= 0) return;
  DeviceBuffers<S> buffers(q, k, v, scratch, shape.seq_len);
  buffers.out[static_cast<int>(B::kOutput)] = u;
  run_steps<S>(handle, stream, gemm_attention_forward_steps(shape), buffers, shape);
}

template <typename S>
void run_gemm_attention_backward(cublasHandle_t handle, cudaStream_t stream, S* du_dq, S* dk, S* dv, const S* q,
                                 const S* k, const S* v, const AttentionShape& shape, std::byte* scratch) {
  if (shape.tokens <= 0) return;
  DeviceBuffers<S> buffers(q, k, v, scratch, shape.seq_len);
  buffers.in[static_cast<int>(B::kOutputGrad)] = du_dq;
  buffers.out[static_cast<int>(B::kOutputGrad)] = du_dq;
  buffers.out[static_cast<int>(B::kKeyGrad)] = dk;
  buffers.out[static_cast<int>(B::kValueGrad)] = dv;
  run_steps<S>(handle, stream, gemm_attention_backward_steps(shape), buffers, shape);
}

#define RAGGED_STORAGE(S)                                                                                         \
  template void run_gemm_attention_forward(cublasHandle_t, cudaStream_t, S*, const S*, const S*, const S*,       \
                                           const AttentionShape&, std::byte*);                                   \
  template void run_gemm_attention_backward(cublasHandle_t, cudaStream_t, S*, S*, S*, const S*, const S*,       \
                                            const S*, const AttentionShape&, std::byte*);
RAGGED_STORAGE(float)
RAGGED_STORAGE(uint16_t)
#undef RAGGED_STORAGE

}  // namespace ragged::backend::gpu
