#pragma once
// How much more memory traffic an element-wise op of the model moves when it
// runs as PyTorch eager kernels (one kernel per torch op, each reading and
// writing the whole tensor, often upcast to fp32) than as the one fused
// kernel the model's byte counts assume (what torch.compile produces).

#include <cstdint>
#include <string_view>

#include "models/model_spec.hpp"

namespace ragged::planner {

// Eager traffic / fused traffic for an op of models/ (by its name), forward
// and backward; 1 for ops that are one kernel anyway.
struct EagerFactors {
  double forward = 1.0;
  double backward = 1.0;
};
EagerFactors eager_traffic_factors(std::string_view op_name);
// Whether the op is one fused kernel although the model runs eagerly: an
// RMSNorm under NormKernel::kFused (Transformer Engine's RMSNorm reads x
// and writes y in one kernel forward, reads x and dy and writes dx in one
// backward).
bool fused_by_kernel_choice(std::string_view op_name, const models::KernelChoices& kernels);
// The forward's.
double eager_traffic_factor(std::string_view op_name);

// Kernels (torch ops) an element-wise op of the model runs as in eager
// PyTorch, counted from the same reference code as the traffic factors; a
// compiled op is one fused kernel. Its backward runs twice as many (the
// backward's traffic is twice the forward's, compute_work.hpp).
int64_t eager_kernel_count(std::string_view op_name);

}  // namespace ragged::planner
