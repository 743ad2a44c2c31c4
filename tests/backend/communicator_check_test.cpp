#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/collective_check.hpp"
#include "backend/communicator.hpp"
#include "common/errors.hpp"

namespace ragged::backend {
namespace {

TEST(CollectiveCheck, ValuesAreSmallIntegersThatDependOnEveryArgument) {
  int differ_rank = 0, differ_index = 0, differ_tag = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const float v = verifiable_value(3, i, 42);
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 64.0f);
    EXPECT_EQ(v, std::floor(v));
    EXPECT_EQ(v, verifiable_value(3, i, 42));  // a pure function
    differ_rank += v != verifiable_value(4, i, 42);
    differ_index += v != verifiable_value(3, i + 1, 42);
    differ_tag += v != verifiable_value(3, i, 43);
  }
  // 63 of 64 pairs of independent values differ.
  EXPECT_GT(differ_rank, 900);
  EXPECT_GT(differ_index, 900);
  EXPECT_GT(differ_tag, 900);
}

TEST(CollectiveCheck, FillMatchesValues) {
  std::vector<float> data(100);
  fill_verifiable(data.data(), 100, 2, 7);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(data[static_cast<size_t>(i)], verifiable_value(2, i, 7));
}

// The expected outputs of a 3-rank group, computed by hand from the values.
TEST(CollectiveCheck, CheckersAcceptTheExpectationAndCountEveryWrongElement) {
  const int ranks = 3;
  const int64_t count = 17;
  const uint64_t tag = 99;
  std::vector<float> gathered(ranks * count);
  for (int r = 0; r < ranks; ++r) fill_verifiable(gathered.data() + r * count, count, r, tag);
  EXPECT_EQ(check_all_gather(gathered.data(), count, ranks, tag), 0);
  EXPECT_EQ(check_all_gather(gathered.data(), count, ranks, tag + 1), [&] {
    int64_t differ = 0;  // a different tag is different data, except where values collide
    for (int r = 0; r < ranks; ++r)
      for (int64_t i = 0; i < count; ++i) differ += verifiable_value(r, i, tag) != verifiable_value(r, i, tag + 1);
    return differ;
  }());
  gathered[count + 4] += 1.0f;
  gathered[2 * count] = std::nanf("");
  EXPECT_EQ(check_all_gather(gathered.data(), count, ranks, tag), 2);

  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<float> slot(count);
    for (int64_t i = 0; i < count; ++i) {
      for (int r = 0; r < ranks; ++r) slot[static_cast<size_t>(i)] += verifiable_value(r, rank * count + i, tag);
    }
    EXPECT_EQ(check_reduce_scatter(slot.data(), count, rank, ranks, tag), 0);
    slot[0] -= 1.0f;
    EXPECT_EQ(check_reduce_scatter(slot.data(), count, rank, ranks, tag), 1);
  }

  std::vector<float> reduced(count);
  for (int64_t i = 0; i < count; ++i) {
    for (int r = 0; r < ranks; ++r) reduced[static_cast<size_t>(i)] += verifiable_value(r, i, tag);
  }
  EXPECT_EQ(check_all_reduce(reduced.data(), count, ranks, tag), 0);
  reduced[count - 1] = 0.5f;
  EXPECT_EQ(check_all_reduce(reduced.data(), count, ranks, tag), 1);
  EXPECT_THROW(check_all_reduce(reduced.data(), count, 0, tag), InternalError);
}

TEST(CollectiveCheck, AllToAllCountsAreUnevenWithZeros) {
  int zeros = 0, full_range = 0;
  for (int from = 0; from < 20; ++from) {
    for (int to = 0; to < 20; ++to) {
      const int64_t n = verifiable_all_to_all_count(from, to, 10, 5);
      EXPECT_GE(n, 0);
      EXPECT_LE(n, 10);
      zeros += n == 0;
      full_range += n == 10;
    }
  }
  EXPECT_GT(zeros, 100);
  EXPECT_GT(full_range, 0);
}

TEST(CollectiveCheck, SelfTestPassesOnTheLocalCommunicator) {
  auto comm = make_local_communicator();
  for (int64_t count : {0, 1, 7, 1000}) EXPECT_EQ(self_test(*comm, count, 1234), 0) << "count " << count;
}

// Breaks one collective of a working communicator.
class CorruptingCommunicator final : public Communicator {
 public:
  CorruptingCommunicator(Communicator& inner, int broken) : inner_(inner), broken_(broken) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "corrupting"; }
  void all_gather_in_place(float* buffer, int64_t count) override {
    inner_.all_gather_in_place(buffer, count);
    if (broken_ == 0) buffer[count - 1] += 1.0f;
  }
  void reduce_scatter_in_place(float* buffer, int64_t count) override {
    inner_.reduce_scatter_in_place(buffer, count);
    if (broken_ == 1) buffer[rank() * count] = -1.0f;
  }
  void all_reduce_in_place(float* buffer, int64_t count) override {
    inner_.all_reduce_in_place(buffer, count);
    if (broken_ == 2) buffer[0] = 100.0f;
  }
  void all_to_all_v(const float* send, std::span<const int64_t> send_counts, std::span<const int64_t> send_displs,
                    float* recv, std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs) override {
    inner_.all_to_all_v(send, send_counts, send_displs, recv, recv_counts, recv_displs);
    if (broken_ == 3) recv[recv_displs[0] + recv_counts[0]] = 0.0f;  // writes into the gap after the message
  }
  std::unique_ptr<Communicator> split(int color, int key) override { return inner_.split(color, key); }
  void barrier() override { inner_.barrier(); }
  void abort(int code) override { inner_.abort(code); }
  double sum(double value) override { return inner_.sum(value) + (broken_ == 4 && value != 0.0 ? 1.0 : 0.0); }

 private:
  Communicator& inner_;
  int broken_;
};

TEST(CollectiveCheck, SelfTestCountsACorruptedCollective) {
  auto local = make_local_communicator();
  for (int broken = 0; broken <= 4; ++broken) {
    CorruptingCommunicator comm(*local, broken);
    EXPECT_GE(self_test(comm, 7, 5), 1) << "collective " << broken;
  }
}

}  // namespace
}  // namespace ragged::backend
