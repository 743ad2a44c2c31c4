// What an uneven router costs the rank that holds the busiest routed expert
// (docs/MESH.md, "Expert load").

#include <algorithm>

#include "common/errors.hpp"
#include "models/model_spec.hpp"

namespace ragged::models {

double max_expert_load(const ArchConfig& arch) {
  if (!arch.is_moe() || arch.experts_per_token < 1) return 1.0;
  return static_cast<double>(arch.experts) / static_cast<double>(arch.experts_per_token);
}

double busiest_rank_tokens(const ArchConfig& arch, int64_t local, double load) {
  if (!arch.is_moe() || load <= 1.0) return 1.0;
  if (local < 1 || local > arch.experts || load > max_expert_load(arch) + 1e-9) {
    throw InternalError("busiest_rank_tokens: local experts or load out of range");
  }
  const double experts = static_cast<double>(arch.experts);
  // The other experts share experts - load mean loads evenly.
  const double others = arch.experts > 1 ? (experts - load) / (experts - 1.0) : 0.0;
  const double n = static_cast<double>(local);
  return (load + (n - 1.0) * others) / n;
}

double routed_work_factor(const ArchConfig& arch, int64_t local, const KernelChoices& kernels) {
  if (!arch.is_moe()) return 1.0;
  if (kernels.expert_kernel == ExpertKernel::kPadded) return std::max(1.0, kernels.expert_load);
  return busiest_rank_tokens(arch, local, kernels.expert_load);
}

}  // namespace ragged::models
