#include "planner/pipeline_stages.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "common/errors.hpp"

namespace ragged::planner {
namespace {

// The model's blocks as items of the cut (each block's units, its routed
// experts' unit after it), each with its compute per token; the units ahead
// of the first block (the embedding) and after the last (the final norm and
// the head) apart, as they join the first and the last chunk.
struct Items {
  std::vector<std::vector<int>> units;
  std::vector<double> cost;
  std::vector<int> first, last;
  double first_cost = 0, last_cost = 0;
};

Items items_of(const models::ModelSpec& model, int64_t seq_len) {
  Items items;
  for (int u = 0; u < static_cast<int>(model.units.size()); ++u) {
    const models::UnitSpec& unit = model.units[static_cast<size_t>(u)];
    const double cost = unit.compute.forward_flops_per_token(seq_len) + unit.compute.backward_flops_per_token(seq_len);
    if (unit.kind == models::UnitKind::kBlock) {
      items.units.push_back({});
      items.cost.push_back(0);
    }
    if (items.units.empty()) {
      items.first.push_back(u);
      items.first_cost += cost;
    } else if (unit.kind == models::UnitKind::kBlock || unit.kind == models::UnitKind::kExperts) {
      items.units.back().push_back(u);
      items.cost.back() += cost;
    } else {
      items.last.push_back(u);
      items.last_cost += cost;
    }
    // A unit between blocks (none of the catalog's) stays with the block before it.
    if (unit.kind == models::UnitKind::kBlock && !items.last.empty()) {
      std::vector<int>& before = items.units[items.units.size() - 2];
      before.insert(before.end(), items.last.begin(), items.last.end());
      items.cost[items.cost.size() - 2] += items.last_cost;
      items.last.clear();
      items.last_cost = 0;
    }
  }
  return items;
}

// The fewest chunks of consecutive items, each costing at most `limit`.
int64_t chunks_needed(const std::vector<double>& cost, double limit) {
  int64_t chunks = 1;
  double sum = 0;
  for (double c : cost) {
    if (c > limit) return INT64_MAX;
    if (sum + c > limit) {
      ++chunks;
      sum = 0;
    }
    sum += c;
  }
  return chunks;
}

// `k` chunks of consecutive items: the smallest largest chunk cost (bisected),
// then a cut at it that leaves every chunk at least one item.
std::vector<int64_t> balanced_counts(const std::vector<double>& cost, int64_t k) {
  double low = *std::max_element(cost.begin(), cost.end());
  double high = std::accumulate(cost.begin(), cost.end(), 0.0);
  for (int i = 0; i < 100 && high - low > 1e-9 * high; ++i) {
    const double mid = (low + high) / 2;
    (chunks_needed(cost, mid) <= k ? high : low) = mid;
  }
  std::vector<int64_t> counts;
  const int64_t n = static_cast<int64_t>(cost.size());
  int64_t i = 0;
  for (int64_t chunk = 0; chunk < k; ++chunk) {
    const int64_t left_after = k - chunk - 1;  // chunks still to fill
    double sum = 0;
    int64_t taken = 0;
    while (i < n && n - i > left_after &&
           (taken == 0 || chunk == k - 1 || sum + cost[static_cast<size_t>(i)] <= high)) {
      sum += cost[static_cast<size_t>(i++)];
      ++taken;
    }
    counts.push_back(taken);
  }
  return counts;
}

}  // namespace

std::vector<int> PipelineStages::chunks_of(int64_t stage) const {
  std::vector<int> out;
  for (int64_t c = stage; c < chunk_count(); c += stages) out.push_back(static_cast<int>(c));
  return out;
}

std::vector<int> PipelineStages::units_of(int64_t stage) const {
  std::vector<int> out;
  for (int c : chunks_of(stage)) {
    const std::vector<int>& units = chunks[static_cast<size_t>(c)];
    out.insert(out.end(), units.begin(), units.end());
  }
  return out;
}

std::vector<int64_t> PipelineStages::blocks_per_chunk(const models::ModelSpec& model) const {
  std::vector<int64_t> out;
  for (const std::vector<int>& units : chunks) {
    out.push_back(std::count_if(units.begin(), units.end(), [&](int u) {
      return model.units[static_cast<size_t>(u)].kind == models::UnitKind::kBlock;
    }));
  }
  return out;
}

PipelineStages plan_pipeline_stages(const models::ModelSpec& model, int64_t stages, int64_t virtual_stages,
                                    const std::vector<int64_t>& layers_per_chunk, int64_t seq_len) {
  PipelineStages out;
  out.stages = stages;
  out.virtual_stages = virtual_stages;
  const Items items = items_of(model, seq_len);
  const int64_t blocks = static_cast<int64_t>(items.units.size());
  const int64_t k = out.chunk_count();
  std::vector<int64_t> counts = layers_per_chunk;
  if (counts.empty()) {
    // One or two chunks more than blocks: the head, then the embedding, take
    // a chunk alone (Llama 3's 126 blocks in 16 x 8 chunks).
    const bool head_alone = k > blocks && !items.last.empty();
    const bool embedding_alone = k > blocks + (head_alone ? 1 : 0) && !items.first.empty();
    const int64_t block_chunks = k - (head_alone ? 1 : 0) - (embedding_alone ? 1 : 0);
    if (blocks < block_chunks) {
      throw FieldError("training.mesh.pp",
                       fmt::format("pp {} x virtual_stages {} is {} pipeline chunks, but {} has {} transformer "
                                   "blocks: every chunk holds at least one (the embedding and the head may hold one "
                                   "alone); use fewer",
                                   stages, virtual_stages, k, model.name, blocks));
    }
    // The embedding's and the head's compute weigh on the chunks they join.
    std::vector<double> cost = items.cost;
    if (!embedding_alone) cost.front() += items.first_cost;
    if (!head_alone) cost.back() += items.last_cost;
    counts = balanced_counts(cost, block_chunks);
    if (embedding_alone) counts.insert(counts.begin(), 0);
    if (head_alone) counts.push_back(0);
  } else if (std::accumulate(counts.begin(), counts.end(), int64_t{0}) != blocks) {
    throw FieldError("training.pipeline.layers_per_stage",
                     fmt::format("the stages hold {} blocks, but {} has {}: give a split that sums to {}",
                                 std::accumulate(counts.begin(), counts.end(), int64_t{0}), model.name, blocks, blocks));
  }
  size_t item = 0;
  for (int64_t c = 0; c < k; ++c) {
    std::vector<int>& chunk = out.chunks.emplace_back();
    if (c == 0) chunk = items.first;
    for (int64_t i = 0; i < counts[static_cast<size_t>(c)]; ++i, ++item) {
      chunk.insert(chunk.end(), items.units[item].begin(), items.units[item].end());
    }
    if (c == k - 1) chunk.insert(chunk.end(), items.last.begin(), items.last.end());
  }
  return out;
}

}  // namespace ragged::planner
