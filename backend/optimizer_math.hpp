#pragma once
// The optimizers' math on one rank's elements, identical for a shard and for
// the whole tensor (so a sharded run can be checked against an unsharded
// reference element by element): AdamW, block-wise 8-bit Adam (one scale per
// block, quantised by the block's owner), Muon's momentum and Newton-Schulz
// orthogonalisation of a whole matrix.

#include <cstdint>
#include <span>

namespace ragged::backend {

struct AdamWParams {
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

// One AdamW step (decoupled weight decay) at step `step` (1-based).
void adamw_step(std::span<float> params, std::span<const float> grads, std::span<float> m, std::span<float> v,
                int64_t step, const AdamWParams& p);

// Block-wise 8-bit Adam: m and v are stored as int8/uint8 codes with one fp32
// absmax scale per block of `block` consecutive elements (a block is a tile's
// run of elements inside one rank's shard: whole tiles never straddle ranks).
// Dequantise, update as AdamW, requantise (round to nearest).
void adam8bit_step(std::span<float> params, std::span<const float> grads, std::span<int8_t> m_codes,
                   std::span<float> m_scales, std::span<uint8_t> v_codes, std::span<float> v_scales, int64_t block,
                   int64_t step, const AdamWParams& p);

struct MuonParams {
  double lr = 0.02;
  double momentum = 0.95;
  int ns_steps = 5;
  double weight_decay = 0.0;
};

// Muon momentum on a shard: m = momentum * m + g; update direction u = g +
// momentum * m (Nesterov). Writes u into `update`.
void muon_momentum(std::span<const float> grads, std::span<float> m, std::span<float> update, const MuonParams& p);

// Newton-Schulz orthogonalisation of a rows x cols matrix in place (the
// quintic iteration of Muon, coefficients 3.4445, -4.7750, 2.0315), on the
// whole matrix: the owner rank runs it after gathering the matrix.
void newton_schulz(std::span<float> matrix, int64_t rows, int64_t cols, int steps);

// Applies an orthogonalised update: p -= lr * scale * u, scale = sqrt(max(1, rows/cols)).
void muon_apply(std::span<float> params, std::span<const float> update, int64_t rows, int64_t cols, const MuonParams& p);

}  // namespace ragged::backend
