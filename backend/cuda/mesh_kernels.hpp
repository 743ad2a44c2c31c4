#pragma once
// The kernels a mesh rank adds to the GPU workload (gpu_workload_mesh.cpp,
// gpu_workload_context.cpp): the vocabulary-parallel cross-entropy, the
// host's math (workload_tp.cpp) as one block per token, and the row moves of
// context parallelism's key/value exchange. Launches are asynchronous
// on `stream`; results are reproducible bit for bit (fixed-order block
// reductions, no atomics).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ragged::backend::gpu {

// Per row of a rank's fp32 logits [rows x vocab]: its maximum, the sum of
// exp(logit - maximum) in double and the target's logit (0 when the label is
// negative: another rank's row), as 3 doubles a row into `stats`.
void vocabulary_stats(double* stats, const float* logits, const int32_t* labels, int64_t rows, int64_t vocab,
                      cudaStream_t stream);

// From every rank's statistics ([ranks][rows][3], in rank order): per row
// the loss max + log(sum) - target over the whole vocabulary into
// `row_losses`, and the rank's logits turned into its share of the
// probabilities in place, float(float(exp(logit - max)) / sum) as the
// whole-vocabulary softmax rounds them.
void vocabulary_softmax(float* logits, double* row_losses, const double* stats, int ranks, int64_t rows,
                        int64_t vocab, cudaStream_t stream);

// Row i of `rows` rows of `row_bytes` bytes (even): dst row dst_rows[i]
// (null: i) = src row src_rows[i] (null: i); index tables in device memory.
void copy_rows_indexed(void* dst, const int32_t* dst_rows, const void* src, const int32_t* src_rows, int64_t rows,
                       int64_t row_bytes, cudaStream_t stream);

}  // namespace ragged::backend::gpu
