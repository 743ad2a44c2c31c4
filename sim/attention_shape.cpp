#include "sim/attention_shape.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <span>

namespace ragged::sim {
namespace {

// TFLOP/s on an H100 80GB SXM5, FlashAttention-3 paper (Shah et al. 2024,
// arXiv 2407.08608), charts "Attention forward / backward speed, head dim 64 /
// 128 (H100 80GB SXM5)": the forward's causal panels, the backward's (the
// paper charts it without mask only); batch x sequence = 16k tokens, hidden
// 2048. The 8k, head-dim-128 entries are the ones the GPU tables'
// efficiencies come from (sim/gpu_tables.cpp), so the factor there is 1.
constexpr std::array<double, 6> kSeqLens = {512, 1024, 2048, 4096, 8192, 16384};
struct Curve {
  std::array<double, 6> head_dim_64;
  std::array<double, 6> head_dim_128;
};
constexpr Curve kFlash2Forward = {{180, 229, 262, 284, 295, 299}, {191, 260, 298, 319, 333, 335}};
constexpr Curve kFlash2Backward = {{198, 238, 264, 279, 287, 291}, {214, 260, 291, 310, 318, 322}};
constexpr Curve kFlash3Forward = {{197, 265, 371, 420, 460, 473}, {292, 423, 521, 579, 602, 616}};
constexpr Curve kFlash3Backward = {{272, 363, 422, 453, 472, 474}, {316, 424, 501, 542, 559, 561}};

// SDPA's FlashAttention-2 and cuDNN's attention from 4k to 64k, with and
// without the causal mask: NVIDIA cudnn-frontend's attention benchmark
// (benchmark/benchmark_results.csv and images/{forward,bprop}.png @de355c7,
// 2024-09-23; benchmark_flash_attention.py in nvcr.io/nvidia/pytorch:24.07
// with cuDNN 9.4; bf16, 16 heads of 128; batch x sequence 16k tokens up to
// 16,384, then one sequence; a Hopper GPU at 700 W and application clocks of
// 1,980 MHz, an H200 by the README's example), TFLOP/s. Only ratios are taken
// from it, length to length and causal to non-causal, never its rates.
constexpr std::array<double, 5> kBenchmarkSeqLens = {4096, 8192, 16384, 32768, 65536};
struct Benchmark {
  std::array<double, 5> forward_causal;
  std::array<double, 5> backward_causal;
  std::array<double, 5> backward_full;
};
constexpr Benchmark kSdpaFlash2Benchmark = {{296.52, 321.94, 327.17, 345.64, 338.85},
                                            {245.18, 275.40, 305.19, 316.92, 323.98},
                                            {290.47, 305.47, 317.34, 320.44, 330.07}};
constexpr Benchmark kCudnnBenchmark = {{613.49, 645.95, 649.99, 636.08, 631.20},
                                       {438.45, 461.89, 488.56, 504.14, 508.07},
                                       {535.06, 536.95, 546.53, 546.31, 549.29}};

// Linear in log(sequence) between the two measured lengths around seq_len,
// clamped outside them.
// A span, not a template on the length: GCC 12 at -O3 folds the two
// instantiations and then warns (-Warray-bounds) on the shorter table.
double at_seq(std::span<const double> lens, std::span<const double> rates, double seq_len) {
  if (seq_len <= lens.front()) return rates.front();
  if (seq_len >= lens.back()) return rates.back();
  size_t hi = 1;
  while (hi + 1 < lens.size() && lens[hi] < seq_len) ++hi;
  const double t = std::log(seq_len / lens[hi - 1]) / std::log(lens[hi] / lens[hi - 1]);
  return rates[hi - 1] + t * (rates[hi] - rates[hi - 1]);
}

// Where a head lies between the charted widths 64 (0) and 128 (1), in
// log2(head dim), clamped outside them.
double toward_wide_head(double head_dim) { return std::clamp(std::log2(head_dim / 64.0), 0.0, 1.0); }

// The charted curve of a kernel (FlashAttention-3's, else FlashAttention-2's) and direction.
const Curve& curve_of(bool flash3, bool backward) {
  return flash3 ? (backward ? kFlash3Backward : kFlash3Forward) : (backward ? kFlash2Backward : kFlash2Forward);
}

double rate(const Curve& curve, double head_dim, double seq_len) {
  const double narrow = at_seq(kSeqLens, curve.head_dim_64, seq_len);
  const double wide = at_seq(kSeqLens, curve.head_dim_128, seq_len);
  return narrow + toward_wide_head(head_dim) * (wide - narrow);
}

// Beyond the paper's 16k, a rate keeps the benchmark's growth from 16k.
double beyond_paper(const std::array<double, 5>& rates, double seq_len) {
  const double last_charted = kSeqLens.back();
  if (seq_len <= last_charted) return 1.0;
  return at_seq(kBenchmarkSeqLens, rates, seq_len) / at_seq(kBenchmarkSeqLens, rates, last_charted);
}

// The backward the paper charts has no mask; a causal one gains on it as the
// sequence grows (the masked diagonal's share shrinks and the longer key
// loops even out): the benchmark's causal over non-causal rate at this
// length, over the same at the reference length, where the tables' causal
// backward efficiencies are set.
double causal_backward_share(const Benchmark& benchmark, double seq_len) {
  auto share = [&](double s) {
    return at_seq(kBenchmarkSeqLens, benchmark.backward_causal, s) /
           at_seq(kBenchmarkSeqLens, benchmark.backward_full, s);
  };
  return share(seq_len) / share(static_cast<double>(kAttentionReferenceSeqLen));
}

}  // namespace

double flash_attention_shape_factor(int64_t head_dim, int64_t seq_len, bool flash3, bool backward) {
  if (head_dim <= 0 || seq_len <= 0) return 1.0;
  const Curve& curve = curve_of(flash3, backward);
  // FlashAttention-3's causal backward is taken to gain on its non-causal
  // one as cuDNN's does (both Hopper kernels; the paper charts neither).
  const Benchmark& benchmark = flash3 ? kCudnnBenchmark : kSdpaFlash2Benchmark;
  const double length = static_cast<double>(seq_len);
  const double charted = rate(curve, static_cast<double>(head_dim), length) /
                         rate(curve, kAttentionReferenceHeadDim, kAttentionReferenceSeqLen);
  if (!backward) return charted * beyond_paper(benchmark.forward_causal, length);
  return charted * beyond_paper(benchmark.backward_full, length) * causal_backward_share(benchmark, length);
}

namespace {

// A sliding window's rate, from the kernels' tiles (docs/SIMULATOR.md section
// 6, "Attention shape"): each tile of queries steps through the tiles of keys
// any of its rows sees, paying a fixed cost per query tile (its prologue and
// epilogue) and one per key tile visited, while only the keys inside the
// window (or the causal context) are useful work. Keys in tiles of 128, the
// width FlashAttention's and cuDNN's kernels step through at these heads (an
// assumption). Sums over the query tiles of a sequence of `tiles` tiles:
// causal, each tile t visits min(t, w) + 1 key tiles and does min(t + 1/2, w)
// tiles of useful work (w: the window in tiles; none: the whole context).
constexpr double kKeyTile = 128;
struct TileSums {
  double visited = 0, useful = 0;
};
TileSums causal_tiles(double tiles, double window_tiles) {
  const double w = window_tiles > 0 ? std::min(window_tiles, tiles) : tiles;
  const double inside = w * (w + 1) / 2;  // the first w query tiles, as a causal sequence of w tiles
  return {inside + (tiles - w) * (w + 1), w * w / 2 + (tiles - w) * w};
}
// The charts' backward has no mask: every query tile visits every key tile.
TileSums full_tiles(double tiles) { return {tiles * tiles, tiles * tiles}; }
double tile_efficiency(const TileSums& s, double tiles, double per_query_tile) {
  return s.useful / (per_query_tile * tiles + s.visited);
}

// The per-query-tile cost, in key tiles, that makes the tile model's rate
// best follow one charted row over its lengths (least squares in log rate;
// causal rows for the forward, full ones for the backward). The rows are
// followed within 5% (AttentionShape.TheTileModelFollowsTheChartedLengths).
double fitted_query_tile_cost(const std::array<double, 6>& row, bool causal) {
  double best = 0, best_misfit = -1;
  for (int hundredths = 0; hundredths <= 1600; ++hundredths) {
    const double cost = hundredths / 100.0;
    std::array<double, 6> residual{};
    double mean = 0;
    for (size_t i = 0; i < row.size(); ++i) {
      const double tiles = kSeqLens[i] / kKeyTile;
      const TileSums sums = causal ? causal_tiles(tiles, 0) : full_tiles(tiles);
      residual[i] = std::log(row[i]) - std::log(tile_efficiency(sums, tiles, cost));
      mean += residual[i] / static_cast<double>(row.size());
    }
    double misfit = 0;
    for (const double r : residual) misfit += (r - mean) * (r - mean);
    if (best_misfit < 0 || misfit < best_misfit) {
      best = cost;
      best_misfit = misfit;
    }
  }
  return best;
}

// Each kernel's fitted costs at the charted head dims 64 and 128.
struct QueryTileCosts {
  std::array<double, 2> forward, backward;
};
const QueryTileCosts& query_tile_costs(bool flash3) {
  auto fit = [](const Curve& forward, const Curve& backward) {
    return QueryTileCosts{
        {fitted_query_tile_cost(forward.head_dim_64, true), fitted_query_tile_cost(forward.head_dim_128, true)},
        {fitted_query_tile_cost(backward.head_dim_64, false), fitted_query_tile_cost(backward.head_dim_128, false)}};
  };
  static const QueryTileCosts flash2 = fit(kFlash2Forward, kFlash2Backward);
  static const QueryTileCosts flash3_costs = fit(kFlash3Forward, kFlash3Backward);
  return flash3 ? flash3_costs : flash2;
}

}  // namespace

double sliding_window_shape_factor(int64_t head_dim_in, int64_t seq_len_in, int64_t window_in, bool flash3,
                                   bool backward) {
  const auto head_dim = static_cast<double>(head_dim_in), seq_len = static_cast<double>(seq_len_in),
             window = static_cast<double>(window_in);
  const Curve& curve = curve_of(flash3, backward);
  const std::array<double, 2>& costs = backward ? query_tile_costs(flash3).backward : query_tile_costs(flash3).forward;
  const double cost = costs[0] + toward_wide_head(head_dim) * (costs[1] - costs[0]);
  const double reference = static_cast<double>(kAttentionReferenceSeqLen);
  const double reference_tiles = reference / kKeyTile;
  const double tiles = seq_len / kKeyTile;
  const double kept = tile_efficiency(causal_tiles(tiles, window / kKeyTile), tiles, cost) /
                      tile_efficiency(causal_tiles(reference_tiles, 0), reference_tiles, cost);
  return rate(curve, head_dim, reference) / rate(curve, kAttentionReferenceHeadDim, reference) * kept;
}

double narrow_head_share(int64_t head_dim, double share_at_64) {
  if (head_dim <= 0) return 1.0;
  return share_at_64 + toward_wide_head(static_cast<double>(head_dim)) * (1.0 - share_at_64);
}

namespace {

// The narrowest of a kernel's compiled widths that holds the head; the head
// itself beyond the widest.
int64_t compiled_width(int64_t head_dim, std::initializer_list<int64_t> widths) {
  for (const int64_t width : widths) {
    if (head_dim <= width) return width;
  }
  return head_dim;
}

}  // namespace

int64_t kernel_head_dim(models::AttentionKernel kernel, int64_t head_dim) {
  if (head_dim <= 0) return head_dim;
  switch (kernel) {
    case models::AttentionKernel::kFlash2: return compiled_width(head_dim, {32, 64, 96, 128, 160, 192, 256});
    // cuDNN's widths taken as FlashAttention-3's (an assumption: its kernels are not public)
    case models::AttentionKernel::kFlash3:
    case models::AttentionKernel::kCudnn: return compiled_width(head_dim, {64, 96, 128, 192, 256});
    case models::AttentionKernel::kTritonFlash: {
      if (head_dim > 128) return head_dim;  // the kernel asserts d <= 128
      int64_t width = 16;
      while (width < head_dim) width *= 2;
      return width;
    }
    case models::AttentionKernel::kMath: return head_dim;  // batched GEMMs over the head as it is
    case models::AttentionKernel::kMemoryEfficient: return head_dim;  // pads per GEMM: padded_head_work
  }
  return head_dim;
}

namespace {

// SDPA's memory-efficient backend (xformers' CUTLASS kernels in PyTorch,
// aten/src/ATen/native/transformers/cuda/mem_eff_attention) pads only the
// GEMMs whose output columns are a head dim: the reductions over a head dim
// (q k^T, and dO v^T in the backward) loop over it in 32-wide steps, but each
// output tile is as wide as the kernel's tile. The forward picks the first
// kernel whose kMaxK holds both heads (64, 128, then 65,536) and computes
// p v in tiles of its kKeysPerBlock (64, 128, 128: kernel_forward.h, MM1);
// the backward's dV, dQ and dK tiles are the block sizes of the kernel chosen
// the same way (kernel_backward.h, MatmulGradV/Q/K), taken here as the
// kernel's kMaxK up to 128 (32, 64, 128). Heads beyond 128 as they are.
int64_t memory_efficient_tile(int64_t head_dim, int64_t widest, bool backward) {
  if (widest > 128) return head_dim;
  const int64_t tile = backward ? compiled_width(widest, {32, 64, 128}) : compiled_width(widest, {64, 128});
  return (head_dim + tile - 1) / tile * tile;
}

double memory_efficient_padded_work(int64_t qk, int64_t v, bool backward) {
  const int64_t widest = std::max(qk, v);
  const int64_t v_tile = memory_efficient_tile(v, widest, backward);
  if (!backward) return static_cast<double>(qk + v_tile) / static_cast<double>(qk + v);
  // q k^T again and dO v^T unpadded; dV, dQ and dK in the kernel's tiles.
  const int64_t qk_tile = memory_efficient_tile(qk, widest, backward);
  return static_cast<double>(qk + v + v_tile + 2 * qk_tile) / static_cast<double>(3 * qk + 2 * v);
}

}  // namespace

double padded_head_work(const planner::AttentionWork& attention, bool backward) {
  const int64_t dims = attention.qk_head_dim + attention.v_head_dim;
  if (dims <= 0) return 1.0;
  if (attention.kernel == models::AttentionKernel::kMemoryEfficient && attention.qk_head_dim > 0 &&
      attention.v_head_dim > 0) {
    return memory_efficient_padded_work(attention.qk_head_dim, attention.v_head_dim, backward);
  }
  const int64_t qk = kernel_head_dim(attention.kernel, attention.qk_head_dim);
  const int64_t padded = qk + kernel_head_dim(attention.kernel, attention.v_head_dim);
  return static_cast<double>(padded) / static_cast<double>(dims);
}

double flash_attention_shape_factor(const planner::AttentionWork& attention, bool backward) {
  // cuDNN follows FlashAttention-3's curve over lengths and heads (its rates
  // are measured at the reference shape only; sim/gpu_tables.cpp).
  const bool hopper_curve = attention.kernel == models::AttentionKernel::kFlash3 ||
                            attention.kernel == models::AttentionKernel::kCudnn;
  const int64_t head_dim = kernel_head_dim(attention.kernel, attention.qk_head_dim);
  if (attention.window > 0 && attention.window < attention.seq_len && head_dim > 0) {
    return sliding_window_shape_factor(head_dim, attention.seq_len, attention.window, hopper_curve, backward);
  }
  return flash_attention_shape_factor(head_dim, attention.seq_len, hopper_curve, backward);
}

}  // namespace ragged::sim
