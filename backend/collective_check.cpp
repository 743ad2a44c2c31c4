#include "backend/collective_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/errors.hpp"

namespace ragged::backend {
namespace {

// SplitMix64's finaliser: a cheap, well-mixed hash of 64 bits.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t rank_seed(int rank, uint64_t tag) { return mix(tag ^ mix(static_cast<uint64_t>(rank) + 0x5241474745440000ULL)); }

float value_from_seed(uint64_t seed, int64_t index) {
  return static_cast<float>(mix(seed + static_cast<uint64_t>(index)) & 63U);
}

void check_group(int64_t count, int ranks) {
  RAGGED_ASSERT(count >= 0, "negative element count");
  RAGGED_ASSERT(ranks >= 1 && ranks <= kMaxVerifiableRanks,
                fmt::format("verifiable sums are exact for 1 to {} ranks, not {}", kMaxVerifiableRanks, ranks));
}

// Wrong elements of out[i] == sum_r v(r, first + i, tag).
int64_t check_sums(const float* out, int64_t count, int64_t first, int ranks, uint64_t tag) {
  std::vector<uint64_t> seeds(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) seeds[static_cast<size_t>(r)] = rank_seed(r, tag);
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t expected = 0;
    for (uint64_t seed : seeds) expected += static_cast<int64_t>(value_from_seed(seed, first + i));
    if (!(out[i] == static_cast<float>(expected))) ++wrong;  // a NaN is wrong too
  }
  return wrong;
}

// A tag per collective of one self-test, so that no output can pass by
// holding the previous collective's data.
uint64_t sub_tag(uint64_t tag, uint64_t collective) { return mix(tag * 8 + collective); }

int64_t self_test_all_to_all(Communicator& comm, int64_t count, uint64_t tag) {
  const int ranks = comm.size();
  const int rank = comm.rank();
  const float poison = std::numeric_limits<float>::quiet_NaN();
  // Send messages in rank order, receive them in reverse rank order, one
  // untouched poisoned element after each: wrong displacements show.
  std::vector<int64_t> send_counts(static_cast<size_t>(ranks)), send_displs(send_counts.size());
  std::vector<int64_t> recv_counts(send_counts.size()), recv_displs(send_counts.size());
  int64_t send_size = 0;
  for (int to = 0; to < ranks; ++to) {
    send_counts[static_cast<size_t>(to)] = verifiable_all_to_all_count(rank, to, count, tag);
    send_displs[static_cast<size_t>(to)] = send_size;
    send_size += send_counts[static_cast<size_t>(to)] + 1;
  }
  int64_t recv_size = 0;
  for (int from = ranks - 1; from >= 0; --from) {
    recv_counts[static_cast<size_t>(from)] = verifiable_all_to_all_count(from, rank, count, tag);
    recv_displs[static_cast<size_t>(from)] = recv_size;
    recv_size += recv_counts[static_cast<size_t>(from)] + 1;
  }
  std::vector<float> send(static_cast<size_t>(send_size), poison), recv(static_cast<size_t>(recv_size), poison);
  const uint64_t seed = rank_seed(rank, tag);
  for (int to = 0; to < ranks; ++to) {
    float* message = send.data() + send_displs[static_cast<size_t>(to)];
    for (int64_t j = 0; j < send_counts[static_cast<size_t>(to)]; ++j) message[j] = value_from_seed(seed, to * count + j);
  }
  comm.all_to_all_v(send.data(), send_counts, send_displs, recv.data(), recv_counts, recv_displs);
  int64_t wrong = 0;
  for (int from = 0; from < ranks; ++from) {
    const float* message = recv.data() + recv_displs[static_cast<size_t>(from)];
    const int64_t n = recv_counts[static_cast<size_t>(from)];
    const uint64_t from_seed = rank_seed(from, tag);
    for (int64_t j = 0; j < n; ++j) {
      if (!(message[j] == value_from_seed(from_seed, rank * count + j))) ++wrong;
    }
    if (!std::isnan(message[n])) ++wrong;  // the gap after the message stays untouched
  }
  return wrong;
}

}  // namespace

float verifiable_value(int rank, int64_t index, uint64_t tag) { return value_from_seed(rank_seed(rank, tag), index); }

void fill_verifiable(float* data, int64_t count, int rank, uint64_t tag) {
  RAGGED_ASSERT(count >= 0, "negative element count");
  const uint64_t seed = rank_seed(rank, tag);
  for (int64_t i = 0; i < count; ++i) data[i] = value_from_seed(seed, i);
}

int64_t check_all_gather(const float* buffer, int64_t count, int ranks, uint64_t tag) {
  check_group(count, ranks);
  int64_t wrong = 0;
  for (int r = 0; r < ranks; ++r) {
    const uint64_t seed = rank_seed(r, tag);
    const float* slot = buffer + r * count;
    for (int64_t i = 0; i < count; ++i) {
      if (!(slot[i] == value_from_seed(seed, i))) ++wrong;
    }
  }
  return wrong;
}

int64_t check_reduce_scatter(const float* slot, int64_t count, int rank, int ranks, uint64_t tag) {
  check_group(count, ranks);
  RAGGED_ASSERT(rank >= 0 && rank < ranks, "rank outside the group");
  return check_sums(slot, count, rank * count, ranks, tag);
}

int64_t check_all_reduce(const float* buffer, int64_t count, int ranks, uint64_t tag) {
  check_group(count, ranks);
  return check_sums(buffer, count, 0, ranks, tag);
}

int64_t verifiable_all_to_all_count(int from, int to, int64_t count, uint64_t tag) {
  RAGGED_ASSERT(count >= 0, "negative element count");
  const uint64_t h = mix(rank_seed(from, tag) ^ mix(static_cast<uint64_t>(to)));
  if (h % 3 == 0) return 0;
  return static_cast<int64_t>((h >> 8) % static_cast<uint64_t>(count + 1));
}

int64_t self_test(Communicator& comm, int64_t count, uint64_t tag) {
  const int ranks = comm.size();
  const int rank = comm.rank();
  check_group(count, ranks);
  const float poison = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> buffer(static_cast<size_t>(ranks * count));
  float* own_slot = buffer.data() + rank * count;
  int64_t wrong = 0;

  // All-gather: only slot rank() is input; every other slot is poisoned and
  // must be overwritten.
  uint64_t t = sub_tag(tag, 0);
  std::fill(buffer.begin(), buffer.end(), poison);
  fill_verifiable(own_slot, count, rank, t);
  comm.all_gather_in_place(buffer.data(), count);
  wrong += check_all_gather(buffer.data(), count, ranks, t);

  // Reduce-scatter: the whole buffer is input, slot rank() the output.
  t = sub_tag(tag, 1);
  fill_verifiable(buffer.data(), ranks * count, rank, t);
  comm.reduce_scatter_in_place(buffer.data(), count);
  wrong += check_reduce_scatter(own_slot, count, rank, ranks, t);

  // All-reduce on one slot's worth of elements.
  t = sub_tag(tag, 2);
  fill_verifiable(buffer.data(), count, rank, t);
  comm.all_reduce_in_place(buffer.data(), count);
  wrong += check_all_reduce(buffer.data(), count, ranks, t);

  wrong += self_test_all_to_all(comm, count, sub_tag(tag, 3));

  // Sum of 1..ranks: exact in double.
  if (comm.sum(rank + 1.0) != 0.5 * ranks * (ranks + 1.0)) ++wrong;

  return static_cast<int64_t>(comm.sum(static_cast<double>(wrong)));
}

}  // namespace ragged::backend
