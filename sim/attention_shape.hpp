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

// The head dimension a kernel computes at: each is compiled for a few widths
// and runs a head in between padded to the next one. FlashAttention-2:
// 32, 64, 96, 128, 160, 192, 256 (HEADDIM_SWITCH, csrc/flash_attn/src/
// static_switch.h); FlashAttention-3: 64, 96, 128, 192, 256 (run_mha_fwd,
// hopper/flash_api.cpp); flash-attn's Triton kernel: the next power of two,
// at least 16 (BLOCK_HEADDIM, flash_attn/flash_attn_triton.py). Widths beyond
// a kernel's largest are returned as they are.
int64_t kernel_head_dim(models::AttentionKernel kernel, int64_t head_dim);

// The work the kernel executes over the op's FLOPs in one direction: the
// FlashAttention kernels pad the query/key and value head dims each to the
// kernel's width; SDPA's memory-efficient kernel pads only the GEMMs whose
// output is a head wide (p v forward; dV, dQ and dK backward) to its tile
// (attention_shape.cpp). 1 where nothing is padded.
double padded_head_work(const planner::AttentionWork& attention, bool backward);

// A sliding window shorter than the sequence, from the kernels' tiles: each
// tile of queries pays a fixed cost and one per tile of 128 keys any of its
// rows sees, the fixed cost fitted to the charted lengths of the kernel's
// curve and direction (a causal forward, a backward without mask); the
// window's useful keys over the tiles' cost, relative to a causal sequence
// at the reference length, times the charted head's rate there. A window of
// the whole sequence gives the tile model's causal rate.
double sliding_window_shape_factor(int64_t head_dim, int64_t seq_len, int64_t window, bool flash3, bool backward);

// A part's own correction to the shape curve's narrow heads: `share_at_64`
// at head dim 64 and narrower, 1 from the reference width (128) up,
// log-linear in the head dim between.
double narrow_head_share(int64_t head_dim, double share_at_64);

// The same for one op's attention: the kernel's query/key head dim, and the
// keys each query attends to (the window where one is set, else the sequence).
double flash_attention_shape_factor(const planner::AttentionWork& attention, bool backward);

}  // namespace ragged::sim
