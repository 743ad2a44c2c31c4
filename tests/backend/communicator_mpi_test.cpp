// The MPI communicator under mpirun (np 1 to 5, see tests_communicators.cmake),
// run by mpi_test_main.cpp. Every test calls the same collectives on every
// rank; checks are EXPECT_* only (see mpi_test_main.hpp).

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/collective_check.hpp"
#include "backend/communicator.hpp"
#include "backend/mpi_check.hpp"
#include "backend/watchdog.hpp"
#include "common/errors.hpp"
#include "tests/backend/mpi_test_main.hpp"

namespace ragged::backend {
namespace {

const int64_t kCounts[] = {1, 7, 1000, 65537};
const float kPoison = std::numeric_limits<float>::quiet_NaN();

Communicator& world() { return mpi_test_world(); }

size_t to_size(int64_t n) { return static_cast<size_t>(n); }

// Lowers the elements one MPI call may carry, to exercise the split paths.
class ScopedMaxElements {
 public:
  explicit ScopedMaxElements(int64_t elements) : old_(mpi_detail::max_elements_per_call()) {
    mpi_detail::set_max_elements_per_call(elements);
  }
  ~ScopedMaxElements() { mpi_detail::set_max_elements_per_call(old_); }
  ScopedMaxElements(const ScopedMaxElements&) = delete;
  ScopedMaxElements& operator=(const ScopedMaxElements&) = delete;

 private:
  int64_t old_;
};

// Wrong elements of each collective on verifiable inputs, `count` per slot.
int64_t wrong_all_gather(Communicator& comm, int64_t count, uint64_t tag) {
  std::vector<float> buffer(to_size(comm.size() * count), kPoison);  // only slot rank() is input
  fill_verifiable(buffer.data() + comm.rank() * count, count, comm.rank(), tag);
  comm.all_gather_in_place(buffer.data(), count);
  return check_all_gather(buffer.data(), count, comm.size(), tag);
}

int64_t wrong_reduce_scatter(Communicator& comm, int64_t count, uint64_t tag) {
  std::vector<float> buffer(to_size(comm.size() * count));
  fill_verifiable(buffer.data(), comm.size() * count, comm.rank(), tag);
  comm.reduce_scatter_in_place(buffer.data(), count);
  return check_reduce_scatter(buffer.data() + comm.rank() * count, count, comm.rank(), comm.size(), tag);
}

int64_t wrong_all_reduce(Communicator& comm, int64_t count, uint64_t tag) {
  std::vector<float> buffer(to_size(count));
  fill_verifiable(buffer.data(), count, comm.rank(), tag);
  comm.all_reduce_in_place(buffer.data(), count);
  return check_all_reduce(buffer.data(), count, comm.size(), tag);
}

TEST(MpiCommunicator, IsTheWorldOfTheLaunch) {
  Communicator& comm = world();
  EXPECT_EQ(comm.name(), "mpi");
  if (const char* size = std::getenv("OMPI_COMM_WORLD_SIZE")) {
    EXPECT_EQ(comm.size(), std::atoi(size));
  }
  if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK")) {
    EXPECT_EQ(comm.rank(), std::atoi(rank));
  }
  EXPECT_GE(comm.rank(), 0);
  EXPECT_LT(comm.rank(), comm.size());
  EXPECT_EQ(launched_by_mpi(), comm.size() > 1);
  int initialized = 0;
  MPI_Initialized(&initialized);
  EXPECT_TRUE(initialized);
}

// ensure_mpi_initialized() asked for MPI_THREAD_MULTIPLE and kept what the
// library provided; the watchdog starts only on MULTIPLE, and says why not.
TEST(MpiCommunicator, KeepsTheProvidedThreadLevelAndGatesTheWatchdogOnIt) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  const MpiThreadLevel level = provided_mpi_thread_level();
  const MpiThreadLevel expected = provided >= MPI_THREAD_MULTIPLE     ? MpiThreadLevel::kMultiple
                                  : provided >= MPI_THREAD_SERIALIZED ? MpiThreadLevel::kSerialized
                                  : provided >= MPI_THREAD_FUNNELED   ? MpiThreadLevel::kFunneled
                                                                      : MpiThreadLevel::kSingle;
  EXPECT_EQ(level, expected);
  EXPECT_GE(level, MpiThreadLevel::kFunneled);
  if (world().size() == 1) {
    EXPECT_EQ(world().start_watchdog(60), nullptr);  // one rank: nothing to watch
  } else if (level == MpiThreadLevel::kMultiple) {
    const std::unique_ptr<Watchdog> watchdog = world().start_watchdog(60);
    EXPECT_NE(watchdog, nullptr);
    world().barrier();  // every rank's watchdog is up before any stops
  } else {
    EXPECT_THROW(world().start_watchdog(60), InputError);
  }
}

// A watchdog's heartbeats must all be received before its communicator is
// freed: MPI gives the next communicator created the freed one's context id,
// and Open MPI delivers a late message for that id there, out of sequence
// with the new communicator's own messages (collectives and the task farm
// hung that way, about 1 run in 36 under load). Ranks stop their watchdogs
// 40 ms apart, each having sent heartbeats every 50 ms; the next
// communicator then holds no message.
TEST(MpiCommunicator, AStoppedWatchdogLeavesNoMessageForTheNextCommunicator) {
  if (world().size() == 1 || provided_mpi_thread_level() != MpiThreadLevel::kMultiple)
    GTEST_SKIP() << "the watchdog runs with two ranks or more on MPI_THREAD_MULTIPLE";
  {
    const std::unique_ptr<Watchdog> watchdog = world().start_watchdog(0.25);  // a heartbeat every 50 ms
    ASSERT_NE(watchdog, nullptr);
    world().barrier();
    std::this_thread::sleep_for(std::chrono::milliseconds(120 + 40 * world().rank()));
  }
  MPI_Comm next = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &next));
  MPI_CHECK(MPI_Barrier(next));
  int stray = 0;
  for (int poll = 0; poll < 50 && !stray; ++poll) {
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, next, &stray, MPI_STATUS_IGNORE));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(stray, 0) << "a message arrived on a communicator nobody sent on";
  MPI_CHECK(MPI_Barrier(next));
  MPI_CHECK(MPI_Comm_free(&next));
}

TEST(MpiCommunicator, AllGatherReadsOnlyTheOwnSlotAndFillsEveryOther) {
  for (int64_t count : kCounts) EXPECT_EQ(wrong_all_gather(world(), count, 10 + count), 0) << "count " << count;
}

TEST(MpiCommunicator, ReduceScatterLeavesTheSumInTheOwnSlot) {
  for (int64_t count : kCounts) EXPECT_EQ(wrong_reduce_scatter(world(), count, 20 + count), 0) << "count " << count;
}

TEST(MpiCommunicator, AllReduceSumsEveryElement) {
  for (int64_t count : kCounts) EXPECT_EQ(wrong_all_reduce(world(), count, 30 + count), 0) << "count " << count;
}

TEST(MpiCommunicator, EmptyCollectivesNeedNoBuffer) {
  world().all_gather_in_place(nullptr, 0);
  world().reduce_scatter_in_place(nullptr, 0);
  world().all_reduce_in_place(nullptr, 0);
  EXPECT_THROW(world().all_reduce_in_place(nullptr, -1), InternalError);
}

// Rank s sends (s * (d + 1)) % 4 elements to rank d: rank 0 sends nothing,
// the others uneven counts with zeros; element j is 1000 s + 10 d + j.
// Messages are sent in rank order with a gap of one element between them
// and received in reverse rank order starting at an offset of 3.
TEST(MpiCommunicator, AllToAllVMovesUnevenMessagesIncludingEmptyOnes) {
  Communicator& comm = world();
  const int ranks = comm.size(), rank = comm.rank();
  auto count = [](int s, int d) -> int64_t { return (s * (d + 1)) % 4; };
  std::vector<int64_t> send_counts(to_size(ranks)), send_displs(to_size(ranks));
  std::vector<int64_t> recv_counts(to_size(ranks)), recv_displs(to_size(ranks));
  std::vector<float> send;
  for (int d = 0; d < ranks; ++d) {
    send_counts[to_size(d)] = count(rank, d);
    send_displs[to_size(d)] = static_cast<int64_t>(send.size());
    for (int64_t j = 0; j < count(rank, d); ++j) send.push_back(static_cast<float>(1000 * rank + 10 * d + j));
    send.push_back(kPoison);
  }
  int64_t recv_size = 3;
  for (int s = ranks - 1; s >= 0; --s) {
    recv_counts[to_size(s)] = count(s, rank);
    recv_displs[to_size(s)] = recv_size;
    recv_size += count(s, rank) + 1;
  }
  std::vector<float> recv(to_size(recv_size), -1.0f);
  comm.all_to_all_v(send.data(), send_counts, send_displs, recv.data(), recv_counts, recv_displs);
  std::vector<float> expected(to_size(recv_size), -1.0f);
  for (int s = 0; s < ranks; ++s) {
    for (int64_t j = 0; j < count(s, rank); ++j)
      expected[to_size(recv_displs[to_size(s)] + j)] = static_cast<float>(1000 * s + 10 * rank + j);
  }
  EXPECT_EQ(recv, expected);
}

TEST(MpiCommunicator, AllToAllVRejectsWhatMpiCannotSay) {
  Communicator& comm = world();
  const auto ranks = to_size(comm.size());
  std::vector<int64_t> counts(ranks, 0), displs(ranks, 0);
  float dummy = 0.0f;
  std::vector<int64_t> huge = counts;
  huge[0] = int64_t{INT_MAX} + 1;  // checked before any MPI call, on every rank alike
  EXPECT_THROW(comm.all_to_all_v(&dummy, huge, displs, &dummy, counts, displs), InputError);
  EXPECT_THROW(comm.all_to_all_v(&dummy, counts, displs, &dummy, counts, huge), InputError);
  std::vector<int64_t> one_more(ranks + 1, 0);
  EXPECT_THROW(comm.all_to_all_v(&dummy, one_more, displs, &dummy, counts, displs), InternalError);
  std::vector<int64_t> negative = counts;
  negative[0] = -1;
  EXPECT_THROW(comm.all_to_all_v(&dummy, negative, displs, &dummy, counts, displs), InternalError);
}

// Every rank sends a large message to the next and the one before at once,
// then receives: blocking sends (rendezvous) would deadlock here; the
// pipeline's sends return at once and finish by wait_sends.
TEST(MpiCommunicator, PointToPointSendsNeverBlockAndArriveTagged) {
  Communicator& w = world();
  if (w.size() < 2) GTEST_SKIP() << "point-to-point needs two ranks (this run has one)";
  const int next = (w.rank() + 1) % w.size(), previous = (w.rank() + w.size() - 1) % w.size();
  const int64_t n = 1 << 20;  // 4 MiB: past any eager limit
  std::vector<float> forward(to_size(n)), backward(to_size(n));
  for (int64_t i = 0; i < n; ++i) {
    forward[to_size(i)] = static_cast<float>(w.rank() * 1000 + i % 997);
    backward[to_size(i)] = static_cast<float>(-w.rank() - 1);
  }
  w.send(forward.data(), n, next, 2);
  w.send(backward.data(), n, previous, 3);
  forward.assign(to_size(n), kPoison);  // the send kept its own copy
  std::vector<float> from_previous(to_size(n)), from_next(to_size(n));
  w.recv(from_next.data(), n, next, 3);
  w.recv(from_previous.data(), n, previous, 2);
  w.wait_sends();
  EXPECT_EQ(from_previous[5], static_cast<float>(previous * 1000 + 5));
  EXPECT_EQ(from_previous[to_size(n - 1)], static_cast<float>(previous * 1000 + (n - 1) % 997));
  EXPECT_EQ(from_next[7], static_cast<float>(-next - 1));
  EXPECT_GE(w.max_tag(), 32767);
  EXPECT_THROW(w.send(forward.data(), 1, next, w.max_tag() + 1), InputError);
}

TEST(MpiCommunicator, SumAndBarrier) {
  Communicator& comm = world();
  const int ranks = comm.size();
  comm.barrier();
  EXPECT_EQ(comm.sum(comm.rank() + 1.0), 0.5 * ranks * (ranks + 1));
  EXPECT_EQ(comm.sum(0.25), 0.25 * ranks);
  comm.barrier();
}

TEST(MpiCommunicator, SelfTestFindsNothingWrong) {
  for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{65537}})
    EXPECT_EQ(self_test(world(), count, 40 + count), 0) << "count " << count;
}

TEST(MpiCommunicator, SplitsCollectivesLargerThanOneCallCarries) {
  // {limit, count}: exact multiples, a remainder, one element per call.
  const std::pair<int64_t, int64_t> cases[] = {{1000, 1000}, {1000, 1001}, {1000, 65537}, {4096, 65536}, {1, 7}};
  for (const auto& [limit, count] : cases) {
    const ScopedMaxElements scoped(limit);
    EXPECT_EQ(wrong_all_gather(world(), count, 50 + count), 0) << "limit " << limit << ", count " << count;
    EXPECT_EQ(wrong_reduce_scatter(world(), count, 60 + count), 0) << "limit " << limit << ", count " << count;
    EXPECT_EQ(wrong_all_reduce(world(), count, 70 + count), 0) << "limit " << limit << ", count " << count;
    EXPECT_EQ(self_test(world(), count, 80 + count), 0) << "limit " << limit << ", count " << count;
  }
}

TEST(MpiCommunicator, CheckersCountAnElementCorruptedAfterACollective) {
  Communicator& comm = world();
  const int ranks = comm.size(), rank = comm.rank();
  const int victim = ranks - 1;
  const int64_t count = 1000;
  const uint64_t tag = 90;
  std::vector<float> buffer(to_size(ranks * count), kPoison);

  fill_verifiable(buffer.data() + rank * count, count, rank, tag);
  comm.all_gather_in_place(buffer.data(), count);
  if (rank == victim) buffer[to_size(count / 2)] += 1.0f;  // another rank's slot
  const int64_t gather_wrong = check_all_gather(buffer.data(), count, ranks, tag);
  EXPECT_EQ(gather_wrong, rank == victim ? 1 : 0);
  EXPECT_EQ(comm.sum(static_cast<double>(gather_wrong)), 1.0);

  fill_verifiable(buffer.data(), ranks * count, rank, tag + 1);
  comm.reduce_scatter_in_place(buffer.data(), count);
  if (rank == victim) buffer[to_size(rank * count + count - 1)] = -3.0f;
  const int64_t scatter_wrong = check_reduce_scatter(buffer.data() + rank * count, count, rank, ranks, tag + 1);
  EXPECT_EQ(scatter_wrong, rank == victim ? 1 : 0);
  EXPECT_EQ(comm.sum(static_cast<double>(scatter_wrong)), 1.0);

  fill_verifiable(buffer.data(), count, rank, tag + 2);
  comm.all_reduce_in_place(buffer.data(), count);
  if (rank == victim) buffer[0] = kPoison;
  const int64_t reduce_wrong = check_all_reduce(buffer.data(), count, ranks, tag + 2);
  EXPECT_EQ(reduce_wrong, rank == victim ? 1 : 0);
  EXPECT_EQ(comm.sum(static_cast<double>(reduce_wrong)), 1.0);
}

// The MPI communicator with one element of one rank's all-gather output
// corrupted.
class OneBadRank final : public Communicator {
 public:
  OneBadRank(Communicator& inner, int bad_rank) : inner_(inner), bad_rank_(bad_rank) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "one-bad-rank"; }
  void all_gather_in_place(float* buffer, int64_t count) override {
    inner_.all_gather_in_place(buffer, count);
    if (rank() == bad_rank_) buffer[0] += 1.0f;
  }
  void reduce_scatter_in_place(float* buffer, int64_t count) override { inner_.reduce_scatter_in_place(buffer, count); }
  void all_reduce_in_place(float* buffer, int64_t count) override { inner_.all_reduce_in_place(buffer, count); }
  void all_to_all_v(const float* send, std::span<const int64_t> send_counts, std::span<const int64_t> send_displs,
                    float* recv, std::span<const int64_t> recv_counts, std::span<const int64_t> recv_displs) override {
    inner_.all_to_all_v(send, send_counts, send_displs, recv, recv_counts, recv_displs);
  }
  std::unique_ptr<Communicator> split(int color, int key) override { return inner_.split(color, key); }
  void barrier() override { inner_.barrier(); }
  void abort(int code) override { inner_.abort(code); }
  double sum(double value) override { return inner_.sum(value); }

 private:
  Communicator& inner_;
  int bad_rank_;
};

TEST(MpiCommunicator, SelfTestReportsOneBadRankOnEveryRank) {
  OneBadRank comm(world(), world().size() - 1);
  const int64_t wrong = self_test(comm, 7, 100);
  EXPECT_EQ(wrong, 1);  // the group's total, on every rank
}

TEST(MpiCommunicator, CommunicatorsAreIndependent) {
  auto second = make_mpi_communicator();
  EXPECT_EQ(second->rank(), world().rank());
  EXPECT_EQ(second->size(), world().size());
  EXPECT_EQ(wrong_all_gather(*second, 7, 110), 0);
  EXPECT_EQ(wrong_all_reduce(world(), 7, 111), 0);
  EXPECT_EQ(self_test(*second, 1000, 112), 0);
}

int failing_mpi_call() { return MPI_ERR_COUNT; }

TEST(MpiCheck, ReportsFileLineTheCallAndMpisMessage) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(MPI_ERR_COUNT, text, &length);
  const std::string mpi_message(text, static_cast<size_t>(length));
  try {
    MPI_CHECK(failing_mpi_call());
    ADD_FAILURE() << "MPI_CHECK did not throw";
  } catch (const InternalError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("communicator_mpi_test.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("failing_mpi_call() failed: " + mpi_message), std::string::npos) << what;
  }

  // A real failing call: argument checks fail locally, before any traffic.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  float value = 0.0f;
  try {
    MPI_CHECK(MPI_Bcast(&value, -1, MPI_FLOAT, 0, comm));
    ADD_FAILURE() << "MPI_Bcast with a negative count did not fail";
  } catch (const InternalError& error) {
    EXPECT_NE(std::string(error.what()).find("MPI_Bcast(&value, -1, MPI_FLOAT, 0, comm) failed: "), std::string::npos)
        << error.what();
  }
  MPI_CHECK(MPI_Comm_free(&comm));
}

}  // namespace
}  // namespace ragged::backend
