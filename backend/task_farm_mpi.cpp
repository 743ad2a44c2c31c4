// The MPI task farm. Messages (MPI_BYTE, on a duplicate of MPI_COMM_WORLD):
//   worker -> 0  kRequest  empty: one of my threads is free
//   worker -> 0  kResult   8-byte task index, a status byte (O: ok,
//                          I: InputError, E: other error), the result or message
//   0 -> worker  kTask     8-byte task index, the task
//   0 -> worker  kEnd      empty: no more tasks, ever
// A worker has at most one request outstanding. A request that arrives
// when rank 0 has nothing to hand out waits for the next map() or finish().
// A worker that holds tasks, or owes its last request, and stays silent past
// the task timeout (WorkerClock) ends the job with one line and
// kExitLostRank instead of leaving rank 0 waiting forever.

#include "backend/task_farm_mpi.hpp"

#include "common/errors.hpp"

#ifdef RAGGED_HAVE_MPI
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <utility>

#include <fmt/format.h>

#include <cstdio>

#include "backend/mpi_check.hpp"
#include "backend/watchdog.hpp"
#include "backend/worker_clock.hpp"
#endif

namespace ragged::backend {

#ifdef RAGGED_HAVE_MPI

namespace {

enum Tag : int { kRequest = 1, kResult = 2, kTask = 3, kEnd = 4 };

// How long a main thread sleeps when no message is waiting: short against
// a simulation (tens of milliseconds), long enough to leave the core idle.
constexpr auto kPollInterval = std::chrono::microseconds(500);

std::string with_index(uint64_t index, std::string_view rest) {
  std::string out(sizeof index, '\0');
  std::memcpy(out.data(), &index, sizeof index);
  out.append(rest);
  return out;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t index_of(const std::string& message) {
  RAGGED_ASSERT(message.size() >= sizeof(uint64_t), "a task farm message starts with its task index");
  uint64_t index = 0;
  std::memcpy(&index, message.data(), sizeof index);
  return index;
}

}  // namespace

struct MpiTaskFarm::State {
  TaskWork work;
  int threads = 1;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  int all_threads = 1;
  bool finished = false;
  std::vector<int> parked;  // rank 0: workers whose request waits for a task
  double task_timeout_s = 0;
  WorkerClock clock{0};     // rank 0: who holds tasks and since when it was heard

  // Rank 0, while it waits: a worker silent past the timeout ends the job.
  void end_if_a_worker_is_lost() const {
    const auto silent = clock.silent_past_timeout(now_s());
    if (!silent) return;
    std::fputs(fmt::format("ragged: error: rank 0: worker rank {} has not been heard from for {:.0f} s while it "
                           "{} (stopped, or its node hung); --task-timeout {:g} s: ending the job\n",
                           silent->rank, silent->seconds,
                           silent->tasks > 0 ? fmt::format("holds {} task(s)", silent->tasks)
                                             : std::string("owes its last request"),
                           task_timeout_s)
                   .c_str(),
               stderr);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, kExitLostRank);
  }

  void send(int dest, Tag tag, const std::string& bytes) {
    MPI_CHECK(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, tag, comm));
  }

  // A waiting message from `source` (MPI_ANY_SOURCE: anyone), if any.
  std::optional<std::pair<MPI_Status, std::string>> poll(int source) {
    int waiting = 0;
    MPI_Status status;
    MPI_CHECK(MPI_Iprobe(source, MPI_ANY_TAG, comm, &waiting, &status));
    if (!waiting) return std::nullopt;
    int count = 0;
    MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
    std::string bytes(static_cast<size_t>(count), '\0');
    MPI_CHECK(MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, comm, MPI_STATUS_IGNORE));
    return std::make_pair(status, std::move(bytes));
  }

  // Rank 0: a worker asks; it gets the next task or waits parked.
  void answer_request(int source, TaskQueue& queue) {
    clock.heard(source, now_s());
    if (std::optional<size_t> index = queue.take()) {
      send(source, kTask, with_index(*index, queue.task(*index)));
      clock.task_sent(source, now_s());
    } else {
      parked.push_back(source);
    }
  }

  static void record_result(const std::string& message, TaskQueue& queue) {
    const size_t index = index_of(message);
    RAGGED_ASSERT(message.size() > sizeof(uint64_t), "a task result carries its status");
    const char status = message[sizeof(uint64_t)];
    std::string body = message.substr(sizeof(uint64_t) + 1);
    if (status == 'O') {
      queue.complete(index, std::move(body));
    } else if (status == 'I') {
      queue.fail(std::make_exception_ptr(InputError(body)));
    } else {
      queue.fail(std::make_exception_ptr(InternalError(body)));
    }
  }
};

MpiTaskFarm::MpiTaskFarm(TaskWork work, int threads, double task_timeout_s) : state_(std::make_unique<State>()) {
  ensure_mpi_initialized();
  State& s = *state_;
  s.work = std::move(work);
  s.threads = std::max(1, threads);
  s.task_timeout_s = task_timeout_s;
  s.clock = WorkerClock(task_timeout_s);
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &s.comm));
  MPI_CHECK(MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(s.comm, &s.rank));
  MPI_CHECK(MPI_Comm_size(s.comm, &s.size));
  MPI_CHECK(MPI_Allreduce(&s.threads, &s.all_threads, 1, MPI_INT, MPI_SUM, s.comm));
}

MpiTaskFarm::~MpiTaskFarm() {
  if (is_root()) {
    try {
      finish();
    } catch (const std::exception&) {
      // Workers left waiting would hang the job: end it.
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  int finalized = 1;
  if (state_->comm != MPI_COMM_NULL && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized)
    MPI_Comm_free(&state_->comm);
}

int MpiTaskFarm::rank() const { return state_->rank; }
int MpiTaskFarm::ranks() const { return state_->size; }
int MpiTaskFarm::workers() const { return state_->all_threads; }

std::vector<std::optional<std::string>> MpiTaskFarm::map(const std::vector<std::string>& tasks,
                                                         const MapOptions& options) {
  State& s = *state_;
  RAGGED_ASSERT(s.rank == 0 && !s.finished, "only rank 0 maps tasks, before it finishes");
  TaskQueue queue(tasks, options);
  {
    QueueWorkers local(queue, s.work, s.threads);
    std::vector<int> waiting = std::exchange(s.parked, {});
    for (int source : waiting) s.answer_request(source, queue);
    while (!queue.done()) {
      auto message = s.poll(MPI_ANY_SOURCE);
      if (!message) {
        s.end_if_a_worker_is_lost();
        std::this_thread::sleep_for(kPollInterval);
        continue;
      }
      if (message->first.MPI_TAG == kRequest) {
        s.answer_request(message->first.MPI_SOURCE, queue);
      } else if (message->first.MPI_TAG == kResult) {
        s.clock.result_received(message->first.MPI_SOURCE, now_s());
        State::record_result(message->second, queue);
      }
    }
  }
  return queue.results();
}

void MpiTaskFarm::finish() {
  State& s = *state_;
  if (s.rank != 0 || s.finished) return;
  s.finished = true;
  int ended = 0;
  const std::vector<int> parked = std::exchange(s.parked, {});
  for (int source : parked) {
    s.send(source, kEnd, "");
    ++ended;
  }
  for (int rank = 1; rank < s.size; ++rank) {
    if (std::find(parked.begin(), parked.end(), rank) == parked.end()) s.clock.owes_message(rank, now_s());
  }
  // Every worker is idle now and asks once more; each ask gets the end.
  while (ended < s.size - 1) {
    auto message = s.poll(MPI_ANY_SOURCE);
    if (!message) {
      s.end_if_a_worker_is_lost();
      std::this_thread::sleep_for(kPollInterval);
      continue;
    }
    s.clock.heard(message->first.MPI_SOURCE, now_s());
    RAGGED_ASSERT(message->first.MPI_TAG == kRequest, "after the last map only requests arrive");
    s.send(message->first.MPI_SOURCE, kEnd, "");
    ++ended;
  }
}

void MpiTaskFarm::serve() {
  State& s = *state_;
  RAGGED_ASSERT(s.rank != 0, "rank 0 maps; the other ranks serve");
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::pair<uint64_t, std::string>> inbox, outbox;
  bool closing = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < s.threads; ++t) {
    threads.emplace_back([&] {
      for (;;) {
        std::pair<uint64_t, std::string> task;
        {
          std::unique_lock lock(mutex);
          wake.wait(lock, [&] { return closing || !inbox.empty(); });
          if (inbox.empty()) return;
          task = std::move(inbox.front());
          inbox.pop_front();
        }
        std::string reply;
        try {
          reply = "O" + s.work(task.second);
        } catch (const InputError& e) {
          reply = std::string("I") + e.what();
        } catch (const std::exception& e) {
          reply = std::string("E") + e.what();
        }
        const std::lock_guard lock(mutex);
        outbox.emplace_back(task.first, std::move(reply));
        wake.notify_all();
      }
    });
  }
  auto close = [&] {
    {
      const std::lock_guard lock(mutex);
      closing = true;
    }
    wake.notify_all();
    for (auto& thread : threads) thread.join();
  };
  try {
    int in_flight = 0;
    bool ended = false, requested = false;
    for (;;) {
      std::deque<std::pair<uint64_t, std::string>> results;
      {
        const std::lock_guard lock(mutex);
        results.swap(outbox);
      }
      for (const auto& [index, reply] : results) {
        s.send(0, kResult, with_index(index, reply));
        --in_flight;
      }
      if (ended && in_flight == 0) break;
      if (!ended && !requested && in_flight < s.threads) {
        s.send(0, kRequest, "");
        requested = true;
      }
      auto message = requested ? s.poll(0) : std::nullopt;
      if (message && message->first.MPI_TAG == kTask) {
        const std::lock_guard lock(mutex);
        inbox.emplace_back(index_of(message->second), message->second.substr(sizeof(uint64_t)));
        ++in_flight;
        requested = false;
        wake.notify_all();
      } else if (message && message->first.MPI_TAG == kEnd) {
        ended = true;
        requested = false;
      } else if (results.empty()) {
        // Waiting on rank 0: poll MPI now and then. Otherwise only a
        // finished task can change anything: sleep until one does.
        std::unique_lock lock(mutex);
        if (requested)
          wake.wait_for(lock, kPollInterval, [&] { return !outbox.empty(); });
        else
          wake.wait(lock, [&] { return !outbox.empty(); });
      }
    }
  } catch (...) {
    close();
    throw;
  }
  close();
}

#else  // no MPI in this build

struct MpiTaskFarm::State {};

MpiTaskFarm::MpiTaskFarm(TaskWork, int, double) {
  throw InputError("this build has no MPI: install libopenmpi-dev and rebuild");
}
MpiTaskFarm::~MpiTaskFarm() = default;
int MpiTaskFarm::rank() const { return 0; }
int MpiTaskFarm::ranks() const { return 1; }
int MpiTaskFarm::workers() const { return 0; }
std::vector<std::optional<std::string>> MpiTaskFarm::map(const std::vector<std::string>&, const MapOptions&) {
  return {};
}
void MpiTaskFarm::finish() {}
void MpiTaskFarm::serve() {}

#endif

}  // namespace ragged::backend
