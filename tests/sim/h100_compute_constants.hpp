#pragma once
// The H100 preset's compute numbers as docs/SIMULATOR.md section 6 gives
// them, for the compute model tests (compute_model_test.cpp,
// clock_model_test.cpp), so that their expectations do not read them back
// from the model.

namespace ragged::sim::h100_constants {

// Peak and HBM from the datasheet; GEMM rates at two table points (torch.mm bf16,
// source [1]); FlashAttention-2 forward 333 of 989.4 TFLOP/s causal, backward
// 318 non-causal times 333/370 (source [3]); memcpy at 0.75 of HBM (source
// [5]); a 4 us launch (assumption [6]).
constexpr double kH100Peak = 989.4e12;
constexpr double kH100Hbm = 3.35e12;
// Every tensor-core rate at Hopper's calibrated sustained clock (docs/SIMULATOR.md section 7).
constexpr double kH100SustainedClock = 0.89;
constexpr double kH100Gemm2048 = 676.59e12 * kH100SustainedClock;
constexpr double kH100Gemm4096 = 788.72e12 * kH100SustainedClock;
constexpr double kH100AttentionForward = 333.0 / 989.4 * kH100SustainedClock;
constexpr double kH100AttentionBackward = 318.0 / 989.4 * (333.0 / 370.0) * kH100SustainedClock;
constexpr double kH100MemoryEfficiency = 0.75;
constexpr double kLaunch = 4e-6;

// Relative tolerance where the expectation is exact (floating-point rounding only).
constexpr double kExact = 1e-9;

}  // namespace ragged::sim::h100_constants
