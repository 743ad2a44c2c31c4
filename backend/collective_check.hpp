#pragma once
// Verifiable collectives, after nccl-tests: inputs whose reductions are
// exactly predictable, and checkers that count the wrong elements of a
// collective's output.
//
// Every rank r fills its input with v(r, i, tag), a pseudo-random small
// integer in [0, 64) of (rank, index, tag). Any sum of at most
// kMaxVerifiableRanks such values, and every partial sum on the way, is an
// integer below 2^24, hence exact in fp32 whatever order MPI or NCCL adds
// them in: a reduction's output compares with == against the expectation.
//
// The expectations, for a group of `ranks` ranks and a slot of `count`:
// - all-gather: before, rank r's slot holds v(r, i, tag), i in [0, count);
//   after, slot r of every rank holds v(r, i, tag).
// - reduce-scatter: before, rank r fills the WHOLE buffer (ranks * count)
//   with v(r, g, tag), g the global index; after, rank k's slot k holds
//   sum_r v(r, k * count + i, tag).
// - all-reduce: before, rank r holds v(r, i, tag); after, every rank holds
//   sum_r v(r, i, tag).

#include <cstdint>

#include "backend/communicator.hpp"

namespace ragged::backend {

// Largest group whose sums of verifiable values stay exact in fp32.
inline constexpr int kMaxVerifiableRanks = 1 << 18;

// v(rank, index, tag): a small integer in [0, 64), as a float.
float verifiable_value(int rank, int64_t index, uint64_t tag);

// data[i] = v(rank, i, tag) for i in [0, count).
void fill_verifiable(float* data, int64_t count, int rank, uint64_t tag);

// Wrong elements of an all-gather's output: slot r (of `ranks` slots of
// `count`) must hold v(r, i, tag).
int64_t check_all_gather(const float* buffer, int64_t count, int ranks, uint64_t tag);

// Wrong elements of rank `rank`'s output slot of a reduce-scatter:
// slot[i] must be sum_r v(r, rank * count + i, tag).
int64_t check_reduce_scatter(const float* slot, int64_t count, int rank, int ranks, uint64_t tag);

// Wrong elements of an all-reduce's output: buffer[i] must be sum_r v(r, i, tag).
int64_t check_all_reduce(const float* buffer, int64_t count, int ranks, uint64_t tag);

// How many elements rank `from` sends to rank `to` in the verifiable
// all-to-all-v: in [0, count], zero for about a third of the pairs. Element
// j of that message is v(from, to * count + j, tag).
int64_t verifiable_all_to_all_count(int from, int to, int64_t count, uint64_t tag);

// Runs every collective of `comm` once on verifiable inputs of `count`
// elements per slot (all-gather, reduce-scatter, all-reduce, all-to-all-v
// with uneven counts and gaps, sum) and returns the number of wrong elements
// over the whole group: the same number on every rank, so that every rank
// can stop together. Collective: every rank must call it with the same
// count and tag. For `ragged run --verify-collectives`.
int64_t self_test(Communicator& comm, int64_t count, uint64_t tag);

}  // namespace ragged::backend
