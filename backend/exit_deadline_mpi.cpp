#include "backend/exit_deadline.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "backend/communicator.hpp"
#include "backend/startup_deadline.hpp"

#ifdef RAGGED_HAVE_MPI
#include <mpi.h>
#endif

namespace ragged::backend {
namespace {

struct Deadline {
  bool armed = false;
  double timeout_s = 0;
  std::string option;
};

// Never destroyed: the meeting runs at exit, after the static objects
// constructed later than MPI's initialisation (this one among them) are gone.
Deadline& deadline() {
  static Deadline* d = new Deadline;
  return *d;
}

// The ranks other than 0 wait this much longer than rank 0, so that a live
// rank 0 speaks first and its exit ends them.
constexpr double kRankZeroSpeaksFirstSeconds = 2.0;

}  // namespace

std::string ranks_that_did_not_end_line(const std::vector<int>& missing, double timeout_s, const std::string& option) {
  constexpr size_t kNamed = 8;
  std::string ranks;
  for (size_t i = 0; i < missing.size() && i < kNamed; ++i) {
    ranks += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + std::to_string(missing[i]);
  }
  if (missing.size() > kNamed) ranks += fmt::format(" and {} more", missing.size() - kNamed);
  return fmt::format(
      "ragged: error: rank 0: {} {} did not reach the end of the job within {} {:g} s (stopped, or its node "
      "hung); ending the job",
      missing.size() == 1 ? "rank" : "ranks", ranks, option, timeout_s);
}

namespace {
std::atomic<bool> g_ending_job{false};
}  // namespace

void end_job_at_exit() { g_ending_job.store(true, std::memory_order_release); }
bool ending_job_at_exit() { return g_ending_job.load(std::memory_order_acquire); }

void arm_exit_deadline(double timeout_s, std::string option) {
  if (timeout_s <= 0 || !launched_by_mpi()) return;
  deadline() = Deadline{true, timeout_s, std::move(option)};
}

#ifdef RAGGED_HAVE_MPI

namespace {

// Well inside the 32,767 every MPI allows; MPI_COMM_WORLD carries nothing
// else (every communicator of Ragged's is a duplicate).
constexpr int kEndedTag = 0x4545;

using Clock = std::chrono::steady_clock;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Polls `done` every millisecond until it holds; past `give_up` ends this
// rank with `line()`, silently when any poll took over kSuspendedSeconds
// (this process was the one stopped).
template <typename Done, typename Line>
void poll_until(Clock::time_point give_up, Done done, Line line) {
  Clock::time_point polled_at = Clock::now();
  bool stopped = false;
  while (!done()) {
    const Clock::time_point previous = std::exchange(polled_at, Clock::now());
    stopped = stopped || polled_at - previous > seconds(kSuspendedSeconds);
    if (polled_at > give_up) end_rank_past_deadline(line(), stopped);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Receives one message of the tag from any rank if one is there.
bool receive_ended(int& from) {
  int arrived = 0;
  MPI_Status status;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kEndedTag, MPI_COMM_WORLD, &arrived, &status) != MPI_SUCCESS || !arrived) return false;
  int64_t token = 0;
  if (MPI_Recv(&token, 1, MPI_INT64_T, status.MPI_SOURCE, kEndedTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return false;
  from = status.MPI_SOURCE;
  return true;
}

}  // namespace

void meet_at_exit() {
  const Deadline& d = deadline();
  if (!d.armed) return;
  int rank = 0, size = 1;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS || MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS ||
      size < 2)
    return;
  int64_t token = 1;
  if (rank == 0) {
    std::vector<bool> ended(static_cast<size_t>(size), false);
    ended[0] = true;
    int missing = size - 1;
    const auto all_ended = [&] {
      for (int from = -1; receive_ended(from);) {
        if (from > 0 && from < size && !ended[static_cast<size_t>(from)]) {
          ended[static_cast<size_t>(from)] = true;
          --missing;
        }
      }
      return missing == 0;
    };
    poll_until(Clock::now() + seconds(d.timeout_s), all_ended, [&] {
      std::vector<int> absent;
      for (int r = 1; r < size; ++r) {
        if (!ended[static_cast<size_t>(r)]) absent.push_back(r);
      }
      return ranks_that_did_not_end_line(absent, d.timeout_s, d.option);
    });
    for (int r = 1; r < size; ++r) MPI_Send(&token, 1, MPI_INT64_T, r, kEndedTag, MPI_COMM_WORLD);
    return;
  }
  // Eight bytes go eagerly: the send completes whether or not rank 0 listens.
  MPI_Send(&token, 1, MPI_INT64_T, 0, kEndedTag, MPI_COMM_WORLD);
  const auto answered = [] {
    int from = -1;
    return receive_ended(from) && from == 0;
  };
  poll_until(Clock::now() + seconds(d.timeout_s + kRankZeroSpeaksFirstSeconds), answered, [&] {
    return fmt::format("ragged: error: rank {}: rank 0 did not reach the end of the job within {} {:g} s (stopped, or "
                       "its node hung); ending the job",
                       rank, d.option, d.timeout_s);
  });
}

#else  // no MPI in this build

void meet_at_exit() {}

#endif

}  // namespace ragged::backend
