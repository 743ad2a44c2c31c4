// The workload's GEMMs on cuBLAS, and the head on the GPU, the host's math
// (workload_head.cpp): n = rms(x) (the final RMSNorm), fp32 logits n W^T, softmax and mean
// cross-entropy; backward d logits = (softmax - onehot)/T.

#include "backend/cuda/gemm.hpp"
#include "backend/cuda/gpu_workload_internal.hpp"
#include "backend/cuda/workload_kernels.hpp"
#include "common/errors.hpp"

namespace ragged::backend::gpu::detail {

void Gemms::run(const GemmShape& shape, const void* a, const void* b, void* c, ElementType c_type, float beta) {
  if (params_ == ElementType::f32) {
    RAGGED_ASSERT(c_type == ElementType::f32, "GPU workload: fp32 GEMMs write fp32");
    gemm_f32(handle_, stream_, shape, static_cast<const float*>(a), static_cast<const float*>(b),
             static_cast<float*>(c), 1.0f, beta, Fp32Mode::pedantic);
  } else if (c_type == ElementType::f32) {
    gemm_bf16_f32(handle_, stream_, shape, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
                  static_cast<float*>(c), 1.0f, beta);
  } else {
    gemm_bf16(handle_, stream_, shape, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
              static_cast<uint16_t*>(c), 1.0f, beta);
  }
  flops_ += gemm_flops(shape);
}

void Gemms::begin_attention() {
  attention_events_.push_back(std::make_unique<CudaEvent>());
  attention_events_.back()->record(stream_);
}

void Gemms::end_attention() {
  RAGGED_ASSERT(attention_events_.size() % 2 == 1, "Gemms: end_attention without begin_attention");
  attention_events_.push_back(std::make_unique<CudaEvent>());
  attention_events_.back()->record(stream_);
}

double Gemms::attention_seconds() const {
  if (attention_events_.empty()) return 0;
  RAGGED_ASSERT(attention_events_.size() % 2 == 0, "Gemms: an attention call still open");
  attention_events_.back()->synchronize();
  double seconds = 0;
  for (size_t i = 0; i + 1 < attention_events_.size(); i += 2) {
    seconds += elapsed_seconds(*attention_events_[i], *attention_events_[i + 1]);
  }
  return seconds;
}

void Gemms::forward(const void* x, const void* w, void* y, int64_t rows, int64_t out, int64_t in, float beta) {
  run(GemmShape{rows, out, in, false, true}, x, w, y, params_, beta);
}

void Gemms::forward_f32(const void* x, const void* w, float* y, int64_t rows, int64_t out, int64_t in) {
  run(GemmShape{rows, out, in, false, true}, x, w, y, ElementType::f32, 0.0f);
}

void Gemms::input_grad(const void* dy, const void* w, void* dx, int64_t rows, int64_t out, int64_t in, float beta) {
  run(GemmShape{rows, in, out, false, false}, dy, w, dx, params_, beta);
}

void Gemms::weight_grad(const void* dy, const void* x, void* dw, int64_t rows, int64_t out, int64_t in) {
  run(GemmShape{out, in, rows, true, false}, dy, x, dw, grads_, 0.0f);
}

template <typename S>
void head_forward(Gemms& gemms, const HeadPlan& plan, const Params& params, const S* x, const HeadCache& cache,
                  const int32_t* labels, double* row_losses) {
  S* n = reinterpret_cast<S*>(cache.norm);
  keep_and_rms_norm(reinterpret_cast<S*>(cache.input), n, x, param<S>(params, plan.norm), plan.tokens, plan.hidden,
                    gemms.stream());
  gemms.forward_f32(n, params[static_cast<size_t>(plan.weight)], cache.probs, plan.tokens, plan.vocab, plan.hidden);
  softmax_cross_entropy(cache.probs, labels, row_losses, plan.tokens, plan.vocab, gemms.stream());
}

template <typename S>
void head_loss_backward(const HeadPlan& plan, const HeadCache& cache, S* dlogits, const int32_t* labels,
                        cudaStream_t stream) {
  cross_entropy_backward(dlogits, cache.probs, labels, plan.tokens, plan.vocab, stream);
}

template <typename S, typename G>
void head_backward(Gemms& gemms, const HeadPlan& plan, const Params& params, const Grads& grads, const HeadCache& cache,
                   const S* dlogits, std::byte* scratch, S* dx) {
  const int64_t t = plan.tokens, h = plan.hidden;
  const cudaStream_t stream = gemms.stream();
  S* dn = reinterpret_cast<S*>(scratch);
  const auto weight = static_cast<size_t>(plan.weight);
  gemms.input_grad(dlogits, params[weight], dn, t, plan.vocab, h, 0.0f);
  gemms.weight_grad(dlogits, cache.norm, grads[weight], t, plan.vocab, h);
  const S* x = reinterpret_cast<const S*>(cache.input);
  rms_norm_weight_grad(grad<G>(grads, plan.norm), dn, x, t, h, stream);
  rms_norm_backward<S>(dx, nullptr, dn, x, param<S>(params, plan.norm), t, h, stream);
}

template void head_forward(Gemms&, const HeadPlan&, const Params&, const float*, const HeadCache&, const int32_t*,
                           double*);
template void head_forward(Gemms&, const HeadPlan&, const Params&, const uint16_t*, const HeadCache&, const int32_t*,
                           double*);
template void head_loss_backward(const HeadPlan&, const HeadCache&, float*, const int32_t*, cudaStream_t);
template void head_loss_backward(const HeadPlan&, const HeadCache&, uint16_t*, const int32_t*, cudaStream_t);
template void head_backward<float, float>(Gemms&, const HeadPlan&, const Params&, const Grads&, const HeadCache&,
                                          const float*, std::byte*, float*);
template void head_backward<uint16_t, float>(Gemms&, const HeadPlan&, const Params&, const Grads&, const HeadCache&,
                                             const uint16_t*, std::byte*, uint16_t*);
template void head_backward<uint16_t, uint16_t>(Gemms&, const HeadPlan&, const Params&, const Grads&,
                                                const HeadCache&, const uint16_t*, std::byte*, uint16_t*);

}  // namespace ragged::backend::gpu::detail
