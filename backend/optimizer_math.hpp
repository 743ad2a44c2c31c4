#pragma once
// The optimizers' math on one rank's elements, identical for a shard and for
// the whole tensor (so a sharded run can be checked against an unsharded
// reference element by element): AdamW, block-wise 8-bit Adam (one scale per
// block, quantised by the block's owner), Muon's momentum and Newton-Schulz
// orthogonalisation of a whole matrix, Shampoo's block preconditioners of a
// whole matrix, SGD.

#include <cstdint>
#include <span>
#include <vector>

namespace ragged::backend {

struct AdamWParams {
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

// One AdamW step (decoupled weight decay) at step `step` (1-based), as
// torch.optim.AdamW. The step's scalars (1 - lr * wd, lr / (1 - beta1^step),
// sqrt(1 - beta2^step)) are computed once in double and rounded to float; each
// element runs the same float operations in a fixed order
// (optimizer_adamw_kernel.hpp), so any split of a span gives the same bits.
void adamw_step(std::span<float> params, std::span<const float> grads, std::span<float> m, std::span<float> v,
                int64_t step, const AdamWParams& p);

struct SgdParams {
  double lr = 1e-3;
  double momentum = 0.0;
  double weight_decay = 0.0;
};

// One SGD step at step `step` (1-based), as torch.optim.SGD without dampening
// or Nesterov: g += wd * p; with momentum, buf = g on step 1 and momentum *
// buf + g after, g = buf; p -= lr * g. `momentum` may be empty when
// p.momentum is 0. Element-wise in float, so any split gives the same bits.
void sgd_step(std::span<float> params, std::span<const float> grads, std::span<float> momentum, int64_t step,
              const SgdParams& p);

// How block-wise 8-bit Adam cuts a span into quantisation blocks: `rows` x
// `cols` tiles of a row-major matrix whose rows are `row_length` long. The
// span holds whole rows and starts on a tile row of its matrix; `first_row`
// is its first row in the tensor, so that bands restart at the tensor's
// matrices (every `matrix_rows` rows of a fused tensor; 0: one matrix) wherever
// the span starts. The last band of a matrix and the last tile of a band may
// be smaller. row_length 0 makes the span flat: blocks of rows * cols
// consecutive elements from its first, the last one shorter.
struct Adam8bitTiles {
  int64_t rows = 32;
  int64_t cols = 32;
  int64_t row_length = 0;
  int64_t matrix_rows = 0;
  int64_t first_row = 0;
};

// One quantisation block of a span: `rows` runs of `cols` elements, the
// first at span element `start`, each `row_stride` after the previous.
struct Adam8bitBlock {
  int64_t start = 0;
  int64_t row_stride = 0;
  int64_t rows = 1;
  int64_t cols = 0;
};

// The blocks of a span of `numel` elements, band by band, tiles left to right
// (the order of the scales).
std::vector<Adam8bitBlock> adam8bit_blocks(int64_t numel, const Adam8bitTiles& tiles);

// Number of quantisation blocks of a span of `numel` elements.
int64_t adam8bit_num_blocks(int64_t numel, const Adam8bitTiles& tiles);

// Block-wise 8-bit Adam: m and v are stored as int8/uint8 codes with one fp32
// absmax scale per block (a 32 x 32 tile by default: whole tiles never
// straddle ranks, so each rank quantises its own). Dequantise, update as
// AdamW, requantise (round to nearest). m_scales/v_scales hold
// adam8bit_num_blocks(numel, tiles) entries, band by band, tiles left to right.
// Codes are linear (m = code * scale / 127, v = code * scale / 255, scale =
// the block's absmax), except that the step reads v's code 0 as half a code
// (see optimizer_adam8bit.cpp). A span cut at tile rows computes bit for bit
// what the whole span computes.
void adam8bit_step(std::span<float> params, std::span<const float> grads, std::span<int8_t> m_codes,
                   std::span<float> m_scales, std::span<uint8_t> v_codes, std::span<float> v_scales,
                   const Adam8bitTiles& tiles, int64_t step, const AdamWParams& p);

// The linear block quantisers of adam8bit_step, one block at a time (exposed
// for tests and for initialising states). Signed: scale = max |x|,
// code = round(x / scale * 127), x ~ code * scale / 127. Unsigned (x >= 0):
// scale = max x, code = round(x / scale * 255), x ~ code * scale / 255. Round
// to nearest, ties away from zero; a zero scale gives zero codes. Return the scale.
float quantize_block_int8(std::span<const float> values, std::span<int8_t> codes);
void dequantize_block_int8(std::span<const int8_t> codes, float scale, std::span<float> values);
float quantize_block_uint8(std::span<const float> values, std::span<uint8_t> codes);
void dequantize_block_uint8(std::span<const uint8_t> codes, float scale, std::span<float> values);

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
// whole matrix: the owner rank runs it after gathering the matrix. A tall
// matrix is transposed first (NS(G^T) == NS(G)^T bit for bit), then
// X = G / (||G||_F + 1e-7) with the norm summed in double; the GEMMs are
// cblas_sgemm. Deterministic for a given BLAS build and thread count.
void newton_schulz(std::span<float> matrix, int64_t rows, int64_t cols, int steps);

// Applies an orthogonalised update: p -= lr * scale * u, scale = sqrt(max(1, rows/cols)).
void muon_apply(std::span<float> params, std::span<const float> update, int64_t rows, int64_t cols, const MuonParams& p);

struct ShampooParams {
  double lr = 1e-2;
  double epsilon = 1e-12;
  double weight_decay = 0.0;
  int64_t block_size = 1024;
  int64_t precondition_frequency = 1;
};

// One block of a Shampoo matrix: `rows` x `cols` elements from (row, col),
// its Kronecker factors L (rows x rows) and R (cols x cols), summed over the
// steps, and their inverse fourth roots as last computed. Row-major, float64.
struct ShampooBlock {
  int64_t row = 0;
  int64_t col = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> left, right;
  std::vector<double> left_root, right_root;
};

// Shampoo's state for one rows x cols matrix: blocks of block_size x
// block_size (edge blocks smaller) in row-major block order, each
// preconditioned independently (the blocking of large layers in Anil et al.
// 2020, "Scalable Second Order Optimization for Deep Learning").
struct ShampooMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<ShampooBlock> blocks;
};

ShampooMatrix shampoo_matrix(int64_t rows, int64_t cols, int64_t block_size);

// Shampoo (Gupta, Koren, Singer 2018, "Shampoo: Preconditioned Stochastic
// Tensor Optimization", Algorithm 1) on a whole matrix, in place: `matrix`
// holds the gradient G on entry and the update on return. Per block, in
// float64: L += G G^T, R += G^T G; at step 1 and every
// precondition_frequency steps after ((step - 1) % f == 0) the roots
// (L + eps I)^-1/4 and (R + eps I)^-1/4 are recomputed, in between the last
// ones are reused (stale roots, Anil et al. 2020); U = L^-1/4 G R^-1/4,
// rounded to float. The owner rank runs it on the gathered gradient, the
// reference on the whole tensor: same function, same bits.
void shampoo_precondition(std::span<float> matrix, ShampooMatrix& state, int64_t step, const ShampooParams& p);

// (A + eps I)^(-1/root) of a symmetric positive semi-definite n x n matrix
// (row-major, float64): A = V diag(w) V^T by LAPACK's dsyevd, then
// V diag((max(w, 0) + eps)^(-1/root)) V^T. Eigenvalues that rounding made
// negative count as 0, so the root stays finite and at most eps^(-1/root).
// A non-finite A gives a matrix of NaN (the update then shows the divergence).
std::vector<double> inverse_root(std::span<const double> a, int64_t n, int root, double epsilon);

// Applies a preconditioned update with decoupled weight decay:
// p = p * (1 - lr * wd) - lr * u. Element-wise: any split gives the same bits.
void shampoo_apply(std::span<float> params, std::span<const float> update, const ShampooParams& p);

}  // namespace ragged::backend
