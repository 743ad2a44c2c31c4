#include "bench/validation_memory_section.hpp"

#include <map>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "common/line_fit.hpp"
#include "common/units.hpp"
#include "validation/validation_run.hpp"

namespace ragged::bench {
namespace {

using validation::RowResult;

// Least squares of y = intercept + slope / gpus.
LineFit fit_inverse(const std::vector<std::pair<double, double>>& points) {
  std::vector<double> x, y;
  for (const auto& [gpus, value] : points) {
    x.push_back(1 / gpus);
    y.push_back(value);
  }
  return fit_line(x, y);
}

}  // namespace

void memory_section(std::ostringstream& md, const validation::ValidationSet& set, const std::vector<RowResult>& rows) {
  md << "## Memory against published memory (validation rows)\n\n";
  // (source title, model, GPU, checkpointing) -> (GPUs, published GiB, predicted GiB, row)
  std::map<std::tuple<std::string, std::string, std::string, std::string>,
           std::vector<std::tuple<double, double, double, const RowResult*>>>
      groups;
  md << "| id | GPUs | published GiB | predicted GiB | error |\n|---|---:|---:|---:|---:|\n";
  int count = 0;
  for (const RowResult& row : rows) {
    const auto memory = validation::published_memory(row.run.published());
    const auto error = validation::memory_error(row);
    if (row.run.set() != validation::VALIDATION || !memory || !error) continue;
    ++count;
    const double predicted = static_cast<double>(validation::predicted_memory_bytes(row)) / kGiB;
    md << fmt::format("| {} | {} | {} | {:.2f}{} | {:+.1f}% |\n", row.run.id(), row.gpus,
                      validation::published_memory_text(row.run.published()), predicted,
                      memory->allocated ? " alloc" : "", 100 * *error);
    groups[{row.run.source().title(), row.model, row.gpu, row.checkpointing}].emplace_back(
        static_cast<double>(row.gpus), memory->gib, predicted, &row);
  }
  if (count == 0) {
    md << "| (no validation row publishes memory) | | | | |\n\n";
    return;
  }
  md << "\nWhere a source publishes one configuration at three or more GPU counts, memory = intercept + slope / GPUs "
        "(least squares) splits it into the sharded state, per parameter, and what every rank holds whatever the "
        "count:\n\n"
        "| source | model | GPU counts | published: sharded bytes per parameter | intercept GiB | predicted: "
        "sharded bytes per parameter | intercept GiB |\n|---|---|---|---:|---:|---:|---:|\n";
  int fits = 0;
  for (const auto& [key, points] : groups) {
    std::set<double> distinct;
    for (const auto& point : points) distinct.insert(std::get<0>(point));
    if (distinct.size() < 3) continue;  // the fit needs three GPU counts
    ++fits;
    std::vector<std::pair<double, double>> published, predicted;
    std::string counts;
    for (const auto& [gpus, pub, pred, row] : points) {
      published.emplace_back(gpus, pub);
      predicted.emplace_back(gpus, pred);
      counts += fmt::format("{}{}", counts.empty() ? "" : ", ", gpus);
    }
    const std::string& id = std::get<3>(points.front())->run.id();
    const double params = static_cast<double>(validation::resolve_row(set, set.index_of(id)).model.params());
    const LineFit p = fit_inverse(published), q = fit_inverse(predicted);
    md << fmt::format("| {} | {} | {} | {:.1f} | {:.2f} | {:.1f} | {:.2f} |\n", std::get<0>(key), std::get<1>(key),
                      counts, p.slope * kGiB / params, p.intercept, q.slope * kGiB / params, q.intercept);
  }
  if (fits == 0) {
    md << "| (no source publishes memory at three GPU counts) | | | | | | |\n\n";
    return;
  }
  md << "\n- **Sharded state.** 12 bytes per parameter is fp32 master weights and AdamW's two moments without the "
        "gradients: under PyTorch 2's `optimizer.zero_grad()` FSDP's sharded gradients exist only from each unit's "
        "reduce-scatter to the optimizer, so a peak before the backward's reductions holds none (docs/SIMULATOR.md "
        "section 8, \"Gradient shards and what the training loop keeps\"); 16 with a persistent accumulator.\n"
        "- **Per rank.** Activations, the loss's tensors, the gathered units, and what the training loop keeps "
        "(`training.outputs`: returned logits and key/value caches, held until the next forward). A published "
        "intercept above the predicted one is memory the model does not hold: find it in the source's loop and "
        "model code before trusting a tight prediction.\n\n";
}

}  // namespace ragged::bench
