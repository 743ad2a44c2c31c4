#include "sim/gemm_depth.hpp"

#include <cmath>

#include "sim/compute_model.hpp"

namespace ragged::sim {
namespace {

// XLA's default matmul performance table (xla/service/gpu/model/
// matmul_interpolator_data.h, read at ROCm/xla ea2c45f, a fork of
// openxla/xla, 2026-07-31), bf16xbf16->bf16, b 1, m = n = 4,096, TFLOP/s at
// k = 256 to 4,096: one method for every part it lists. A kernel table, not
// a training run. The B200's rate keeps climbing with k where the H100's has
// levelled off (1.29x the H100's at k = 256, 1.82x at 4,096): its larger
// tiles and deeper pipelines take about twice the depth to fill.
constexpr DepthRow kXlaH100 = {398.6, 551.8, 685.2, 735.6, 780.2};     // "sm_90"
constexpr DepthRow kXlaB200 = {514.7, 805.3, 1075.6, 1277.8, 1416.9};  // "sm_100_B200"
constexpr DepthRow kXlaMi300x = {323.7, 413.8, 494.8, 546.5, 583.1};   // "gfx942"

double log_misfit(const DepthRow& row, double fill) {
  double mean = 0;
  std::array<double, 5> residual{};
  for (size_t i = 0; i < row.size(); ++i) {
    residual[i] = std::log(row[i]) - std::log(gemm_k_loop_efficiency(kXlaDepths[i], fill));
    mean += residual[i] / static_cast<double>(row.size());
  }
  double misfit = 0;
  for (const double r : residual) misfit += (r - mean) * (r - mean);
  return misfit;
}

}  // namespace

double fitted_fill_depth(const DepthRow& row) {
  double best = 1, best_misfit = log_misfit(row, best);
  for (double fill = 2; fill <= 4 * kXlaDepths.back(); fill += 1) {
    const double misfit = log_misfit(row, fill);
    if (misfit < best_misfit) {
      best = fill;
      best_misfit = misfit;
    }
  }
  return best;
}

double gemm_fill_depth(std::string_view part) {
  const DepthRow* row = nullptr;
  if (part == "b200" || part == "gb200") row = &kXlaB200;
  if (part == "mi300x") row = &kXlaMi300x;
  if (row == nullptr) return kGemmPipelineFillK;
  static const double h100 = fitted_fill_depth(kXlaH100);
  return kGemmPipelineFillK * fitted_fill_depth(*row) / h100;
}

}  // namespace ragged::sim
