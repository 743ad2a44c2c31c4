#pragma once
// How FlashAttention's rate depends on the shape it runs: shorter sequences
// and narrower heads spend more of each tile on its prologue, epilogue and
// the masked diagonal, so they reach less of the GPU's peak than the shape
// the tables' efficiencies were measured at (head dim 128, sequence 8k).
// Sources and the interpolation rule: docs/SIMULATOR.md section 6,
// "Attention shape".

#include <cstdint>

#include "planner/program.hpp"

namespace ragged::sim {

// The tables' attention efficiencies hold at this shape (factor 1).
constexpr int64_t kAttentionReferenceHeadDim = 128;
constexpr int64_t kAttentionReferenceSeqLen = 8192;

// The rate of FlashAttention's forward (causal) or backward at (head_dim,
// seq_len) over its rate at the reference shape: log-linear between the
// measured sequence lengths (512 to 16k) and head dims (64 and 128), clamped
// outside them.
double flash_attention_shape_factor(int64_t head_dim, int64_t seq_len, bool flash3, bool backward);

// The same for one op's attention: the query/key head dim, and the keys each
// query attends to (the window where one is set, else the sequence).
double flash_attention_shape_factor(const planner::AttentionWork& attention, bool backward);

}  // namespace ragged::sim
