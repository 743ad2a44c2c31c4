#include "planner/unit_problem.hpp"

#include <fmt/format.h>

namespace ragged::planner {

int64_t UnitProblem::total_elements() const {
  int64_t total = 0;
  for (const PlanTensor& t : tensors) total += t.elements;
  return total;
}

std::string problem_signature(const UnitProblem& problem) {
  std::string signature = fmt::format("{}|{}|{}", problem.ranks, problem.collective_align, problem.tensor_align);
  signature.reserve(signature.size() + problem.tensors.size() * 24);
  for (const PlanTensor& t : problem.tensors) {
    fmt::format_to(std::back_inserter(signature), ";{},{},{}{}", t.elements, t.granule, t.dim0,
                   t.starts_module ? "" : "+");
  }
  return signature;
}

}  // namespace ragged::planner
