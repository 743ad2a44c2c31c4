// An experts unit's own experts on the GPU (expert parallelism: the host's
// experts_forward/experts_backward, workload_ep.cpp): the rows every source
// of the ep group sent, held local expert by local expert (expert_rows.hpp's
// owner order), each expert's SwiGLU on its run of rows. The host runs an
// expert per source; every row's output is the same product of that row
// and the expert's weights either way, and the weight gradients are one
// GEMM over every source's rows here (cuBLAS sums them in its own order).

#include <cuda_runtime_api.h>

#include "backend/cuda/gpu_workload_internal.hpp"
#include "backend/cuda/workload_kernels.hpp"

namespace ragged::backend::gpu::detail {
namespace {

template <typename S>
S* region(std::byte* cache, int64_t offset) {
  return reinterpret_cast<S*>(cache + offset);
}

int64_t rows_of(const std::vector<ExpertRun>& runs) { return runs.empty() ? 0 : runs.back().first + runs.back().rows; }

}  // namespace

template <typename S>
void experts_forward(Gemms& gemms, const ExpertsPlan& plan, const Params& params, const std::vector<ExpertRun>& runs,
                     std::byte* cache, S* y) {
  const int64_t h = plan.hidden, f = plan.ffn;
  const S* x = region<S>(cache, plan.input);
  S* gate = region<S>(cache, plan.gate);
  S* up = region<S>(cache, plan.up);
  S* product = region<S>(cache, plan.product);
  for (size_t j = 0; j < runs.size(); ++j) {
    const ExpertRun& run = runs[j];
    if (run.rows == 0) continue;
    const ragged::backend::detail::GluLayout& glu = plan.layout.routed[j];
    gemms.forward(x + run.first * h, params[static_cast<size_t>(glu.gate.weight)], gate + run.first * f, run.rows, f,
                  h);
    gemms.forward(x + run.first * h, params[static_cast<size_t>(glu.up.weight)], up + run.first * f, run.rows, f, h);
  }
  swiglu_forward(product, gate, up, rows_of(runs) * f, gemms.stream());
  for (size_t j = 0; j < runs.size(); ++j) {
    const ExpertRun& run = runs[j];
    if (run.rows == 0) continue;
    gemms.forward(product + run.first * f, params[static_cast<size_t>(plan.layout.routed[j].down.weight)],
                  y + run.first * h, run.rows, h, f);
  }
}

template <typename S, typename G>
void experts_backward(Gemms& gemms, const ExpertsPlan& plan, const Params& params, const Grads& grads,
                      const std::vector<ExpertRun>& runs, std::byte* cache, std::byte* scratch, const S* dy, S* dx) {
  const int64_t h = plan.hidden, f = plan.ffn;
  // One expert at a time: its gate's and up's gradients at the scratch's start.
  S* dm = reinterpret_cast<S*>(scratch);
  S* dup = reinterpret_cast<S*>(scratch + plan.scratch_bytes / 2);
  for (size_t j = 0; j < runs.size(); ++j) {
    const ExpertRun& run = runs[j];
    const ragged::backend::detail::GluLayout& glu = plan.layout.routed[j];
    if (run.rows == 0) {
      for (const auto& slot : {glu.gate, glu.up, glu.down}) zero_weight_grad<G>(gemms, grads, slot);
      continue;
    }
    const int64_t rh = run.first * h, rf = run.first * f;
    glu_backward(gemms, glu, params, grads, region<S>(cache, plan.input) + rh, region<S>(cache, plan.gate) + rf,
                 region<S>(cache, plan.up) + rf, region<S>(cache, plan.product) + rf, dy + rh, dm, dup, dx + rh,
                 run.rows, h);
  }
}

template void experts_forward(Gemms&, const ExpertsPlan&, const Params&, const std::vector<ExpertRun>&, std::byte*,
                              float*);
template void experts_forward(Gemms&, const ExpertsPlan&, const Params&, const std::vector<ExpertRun>&, std::byte*,
                              uint16_t*);
#define RAGGED_EXPERTS_BACKWARD(S, G)                                                           \
  template void experts_backward<S, G>(Gemms&, const ExpertsPlan&, const Params&, const Grads&, \
                                       const std::vector<ExpertRun>&, std::byte*, std::byte*, const S*, S*);
RAGGED_EXPERTS_BACKWARD(float, float)
RAGGED_EXPERTS_BACKWARD(uint16_t, float)
RAGGED_EXPERTS_BACKWARD(uint16_t, uint16_t)
#undef RAGGED_EXPERTS_BACKWARD

}  // namespace ragged::backend::gpu::detail
