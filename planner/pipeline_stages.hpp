#pragma once
// Which of a model's units each pipeline stage runs (docs/MESH.md,
// "Pipeline parallelism"). The model is cut into pp x virtual_stages chunks
// of consecutive transformer blocks (a block's routed experts, a unit of
// their own under expert parallelism, stay with it); the embedding joins the
// first chunk, the head the last. Stage s runs chunks s, s + pp, s + 2 pp,
// ... (interleaved 1F1B's virtual stages). Without an explicit split the
// chunks balance their compute: the cut that makes the costliest chunk
// cheapest, each block's cost its forward and backward FLOPs per token (the
// embedding's and the head's, vocabulary-wide, counted on their chunks); one
// or two chunks more than blocks give the head, then the embedding, a chunk
// alone (Llama 3's split of 126 blocks in 128 chunks).

#include <cstdint>
#include <vector>

#include "models/model_spec.hpp"

namespace ragged::planner {

struct PipelineStages {
  int64_t stages = 1;
  int64_t virtual_stages = 1;
  // Per chunk, in model order: the indices of the model's units it runs.
  std::vector<std::vector<int>> chunks;

  int64_t chunk_count() const { return stages * virtual_stages; }
  // The chunks stage `stage` runs, in model order.
  std::vector<int> chunks_of(int64_t stage) const;
  // The units stage `stage` runs, in model order.
  std::vector<int> units_of(int64_t stage) const;
  // Transformer blocks per chunk (what training.pipeline.layers_per_stage says).
  std::vector<int64_t> blocks_per_chunk(const models::ModelSpec& model) const;
};

// The stages of `model`. `layers_per_chunk` empty: balanced. Throws
// InputError naming training.pipeline's field when the model has fewer blocks
// than chunks or the explicit split does not cover its blocks.
PipelineStages plan_pipeline_stages(const models::ModelSpec& model, int64_t stages, int64_t virtual_stages,
                                    const std::vector<int64_t>& layers_per_chunk, int64_t seq_len);

}  // namespace ragged::planner
