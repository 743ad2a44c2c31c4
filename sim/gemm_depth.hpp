#pragma once

#include <array>
#include <string_view>

namespace ragged::sim {

// How deep a GPU's GEMM kernels must run their K loop before it pays: a
// tile's loop does useful MACs for the share k / (k + fill) of its steps
// (compute_model.hpp, gemm_k_loop_efficiency). The H100's fill is the
// assumption of 4 slices of 64 (kGemmPipelineFillK); another part's is that
// times how much deeper its own kernels fill, both fitted the same way on
// the same kernel table (below).

// One part's bf16 GEMMs of 4,096 x 4,096 at each of kXlaDepths, TFLOP/s.
inline constexpr std::array<double, 5> kXlaDepths = {256, 512, 1024, 2048, 4096};
using DepthRow = std::array<double, 5>;

// The fill depth F that best fits rate(k) = R * k / (k + F) to a row, R free
// (least squares in log rate; F searched to 1 in k).
double fitted_fill_depth(const DepthRow& row);

// The fill depth of a GPU table's GEMMs: kGemmPipelineFillK for the H100 and
// every part the kernel table does not list, scaled by the part's fitted
// depth over the H100's where it does (the B200, the GB200 on the B200's
// die, the MI300X).
double gemm_fill_depth(std::string_view part);

}  // namespace ragged::sim
