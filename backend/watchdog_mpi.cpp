// The collective watchdog over MPI (backend/watchdog.hpp). Its thread owns a
// duplicate of the group's communicator (MPI_THREAD_MULTIPLE) and never
// touches the run's: heartbeats are small non-blocking sends of (collectives
// entered, step, op) to every peer, received with MPI_Iprobe, so a stopped
// peer delays nothing but its own heartbeats.

#include <atomic>

#include "backend/watchdog.hpp"

namespace ragged::backend {
namespace {
std::atomic<bool> g_signal_line_silenced{false};
}  // namespace

void silence_signal_line() { g_signal_line_silenced.store(true, std::memory_order_release); }

}  // namespace ragged::backend

#ifdef RAGGED_HAVE_MPI

#include "backend/watchdog_mpi.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "backend/mpi_check.hpp"
#include "backend/progress.hpp"
#include "backend/watchdog.hpp"

namespace ragged::backend {
namespace {

constexpr int kHeartbeatTag = 7;
// A stopping watchdog's count of the heartbeats it sent a peer (quiesce).
constexpr int kStoppedTag = 8;
// How long a stopping watchdog waits for its peers to stop too (quiesce).
constexpr double kQuiesceSeconds = 3.0;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What a signal handler prints: the watchdog thread keeps the line current in
// one of two buffers and publishes which one is whole (no locks in a handler).
struct SignalLine {
  std::array<std::array<char, 768>, 2> text{};
  std::atomic<int> ready{-1};
  int rank = 0;
};
SignalLine g_line;

constexpr std::array<int, 7> kFatalSignals = {SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT};
// The handlers in place before the watchdog's: restored and re-raised into.
std::array<struct sigaction, kFatalSignals.size()> g_previous{};

void chain(int signal) {
  for (size_t i = 0; i < kFatalSignals.size(); ++i) {
    if (kFatalSignals[i] == signal) sigaction(signal, &g_previous[i], nullptr);
  }
  std::raise(signal);
}

// Async-signal-safe: write(2) and a hand-made decimal.
void write_text(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void write_number(int value) {
  char digits[16];
  int n = 0;
  unsigned v = value < 0 ? 0u : static_cast<unsigned>(value);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 15);
  char out[16];
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\0';
  write_text(out);
}

void on_fatal_signal(int signal) {
  const int ready = g_line.ready.load(std::memory_order_acquire);
  if (ready < 0 || g_signal_line_silenced.load(std::memory_order_acquire)) {
    chain(signal);
    return;
  }
  write_text("ragged: rank ");
  write_number(g_line.rank);
  write_text(": ended by signal ");
  write_number(signal);
  write_text(" ");
  write_text(g_line.text[static_cast<size_t>(ready)].data());
  write_text("\n");
  chain(signal);
}

class MpiWatchdog final : public Watchdog {
 public:
  MpiWatchdog(MPI_Comm group, double timeout_s) : timeout_s_(timeout_s) {
    MPI_CHECK(MPI_Comm_dup(group, &comm_));
    MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    MPI_CHECK(MPI_Comm_size(comm_, &size_));
    interval_s_ = std::clamp(timeout_s / 5, 0.05, 1.0);
    const double start = now_s();
    peers_.resize(static_cast<size_t>(size_));
    for (Peer& p : peers_) p.heard_at = start;
    g_line.rank = rank_;
    update_line(start);
    for (size_t i = 0; i < kFatalSignals.size(); ++i) {
      struct sigaction action {};
      action.sa_handler = on_fatal_signal;
      sigemptyset(&action.sa_mask);
      sigaction(kFatalSignals[i], &action, &g_previous[i]);
    }
    thread_ = std::thread([this] { loop(); });
  }

  ~MpiWatchdog() override {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
    for (size_t i = 0; i < kFatalSignals.size(); ++i) sigaction(kFatalSignals[i], &g_previous[i], nullptr);
    g_line.ready.store(-1, std::memory_order_release);
    if (quiesce()) MPI_Comm_free(&comm_);
  }

  MpiWatchdog(const MpiWatchdog&) = delete;
  MpiWatchdog& operator=(const MpiWatchdog&) = delete;

 private:
  struct Peer {
    double heard_at = 0;  // when its last heartbeat arrived
    std::array<int64_t, 3> state{0, 0, -1};  // collectives entered, step, op (as it last said)
    std::array<int64_t, 3> out{};            // our heartbeat to it, alive until its send completes
    MPI_Request send = MPI_REQUEST_NULL;
    int64_t sent = 0;      // heartbeats sent to it
    int64_t received = 0;  // heartbeats received from it
  };

  // Whether no heartbeat is left in flight on the communicator, so that it
  // can be freed. MPI reuses a freed communicator's context id for the next
  // communicator created, and Open MPI delivers a message that arrives for
  // an unknown context id to the communicator that takes it next, out of
  // sequence with that communicator's own messages: a late heartbeat hung
  // the next communicator's collectives (4 of 142 runs of the MPI tests
  // under load). So each rank, its thread stopped, tells every peer how
  // many heartbeats it sent it, and waits until it has received what each
  // peer says it sent and its own sends are done. Point-to-point only: a
  // peer that does not stop within a few seconds (still busy, or gone)
  // leaves this rank's communicator allocated instead (its context id is
  // then never reused) and its requests freed, with the buffers they read
  // kept alive.
  bool quiesce() {
    std::vector<int64_t> told(static_cast<size_t>(size_), 0), owed(told.size(), -1);
    std::vector<MPI_Request> stops(told.size(), MPI_REQUEST_NULL);
    owed[static_cast<size_t>(rank_)] = 0;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      told[static_cast<size_t>(r)] = peers_[static_cast<size_t>(r)].sent;
      if (MPI_Isend(&told[static_cast<size_t>(r)], 1, MPI_INT64_T, r, kStoppedTag, comm_,
                    &stops[static_cast<size_t>(r)]) != MPI_SUCCESS)
        stops[static_cast<size_t>(r)] = MPI_REQUEST_NULL;
    }
    const auto finished = [](MPI_Request& request) {
      int done = 1;
      if (request != MPI_REQUEST_NULL && MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 0;
      return done != 0;
    };
    const double deadline = now_s() + kQuiesceSeconds;
    for (;;) {
      drain();
      for (;;) {
        int arrived = 0;
        MPI_Status status;
        if (MPI_Iprobe(MPI_ANY_SOURCE, kStoppedTag, comm_, &arrived, &status) != MPI_SUCCESS || !arrived) break;
        if (MPI_Recv(&owed[static_cast<size_t>(status.MPI_SOURCE)], 1, MPI_INT64_T, status.MPI_SOURCE, kStoppedTag,
                     comm_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
          break;
      }
      bool quiet = true;
      for (int r = 0; r < size_; ++r) {
        Peer& p = peers_[static_cast<size_t>(r)];
        const int64_t expected = owed[static_cast<size_t>(r)];
        quiet = quiet && expected >= 0 && p.received >= expected;
        quiet = finished(p.send) && quiet;
        quiet = finished(stops[static_cast<size_t>(r)]) && quiet;
      }
      if (quiet) return true;
      if (now_s() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (Peer& p : peers_) {
      if (p.send != MPI_REQUEST_NULL) MPI_Request_free(&p.send);
    }
    for (MPI_Request& stop : stops) {
      if (stop != MPI_REQUEST_NULL) MPI_Request_free(&stop);
    }
    // The freed sends may still read their buffers: keep them for the process's life.
    static_cast<void>(new std::pair<std::vector<Peer>, std::vector<int64_t>>(std::move(peers_), std::move(told)));
    return false;
  }

  void loop() {
    while (!stop_.load(std::memory_order_relaxed)) {
      const double now = now_s();
      beat();
      drain();
      update_line(now);
      if (Progress::instance().seconds_in_collective() > timeout_s_) give_up(now);
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(interval_s_, 0.1)));
    }
  }

  // A heartbeat to every peer whose previous one has left.
  void beat() {
    const Progress& progress = Progress::instance();
    const double now = now_s();
    if (now - last_beat_ < interval_s_) return;
    last_beat_ = now;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      Peer& p = peers_[static_cast<size_t>(r)];
      if (p.send != MPI_REQUEST_NULL) {
        int done = 0;
        if (MPI_Test(&p.send, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) continue;
      }
      p.out = {progress.collectives_entered(), progress.step(), progress.op()};
      if (MPI_Isend(p.out.data(), 3, MPI_INT64_T, r, kHeartbeatTag, comm_, &p.send) == MPI_SUCCESS) {
        ++p.sent;
      } else {
        p.send = MPI_REQUEST_NULL;
      }
    }
  }

  void drain() {
    for (;;) {
      int arrived = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kHeartbeatTag, comm_, &arrived, &status) != MPI_SUCCESS || !arrived) return;
      std::array<int64_t, 3> state{};
      if (MPI_Recv(state.data(), 3, MPI_INT64_T, status.MPI_SOURCE, kHeartbeatTag, comm_, MPI_STATUS_IGNORE) !=
          MPI_SUCCESS) {
        return;
      }
      Peer& p = peers_[static_cast<size_t>(status.MPI_SOURCE)];
      p.state = state;
      p.heard_at = now_s();
      ++p.received;
    }
  }

  std::string peer_text(int r, double now) const {
    const Peer& p = peers_[static_cast<size_t>(r)];
    return fmt::format("rank {} (last heard {:.1f} s ago, at {})", r, now - p.heard_at,
                       Progress::instance().describe(p.state[1], p.state[2]));
  }

  // The signal line: where this rank is, and its stalest peers.
  void update_line(double now) {
    const Progress& progress = Progress::instance();
    std::vector<int> stale;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && silent(r, now)) stale.push_back(r);
    }
    std::string text = fmt::format("at {}", progress.describe(progress.step(), progress.op()));
    if (stale.empty()) {
      text += fmt::format("; every peer heard from within {:.1f} s", 3 * interval_s_);
    } else {
      text += "; not heard from:";
      for (size_t i = 0; i < std::min<size_t>(stale.size(), 3); ++i) text += " " + peer_text(stale[i], now);
      if (stale.size() > 3) text += fmt::format(" and {} more", stale.size() - 3);
    }
    const int next = 1 - std::max(0, g_line.ready.load(std::memory_order_relaxed));
    auto& buffer = g_line.text[static_cast<size_t>(next)];
    std::snprintf(buffer.data(), buffer.size(), "%s", text.c_str());
    g_line.ready.store(next, std::memory_order_release);
  }

  // A peer that has not sent a heartbeat for this long is not running.
  bool silent(int r, double now) const { return now - peers_[static_cast<size_t>(r)].heard_at > 3 * interval_s_; }

  // One line naming the op, this waiting rank and the ranks that did not
  // arrive (silent: stopped or gone, even if they entered it first; or behind:
  // they have not entered as many collectives), then the end of the job.
  [[noreturn]] void give_up(double now) {
    const Progress& progress = Progress::instance();
    const int64_t mine = progress.collectives_entered();
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && (silent(r, now) || peers_[static_cast<size_t>(r)].state[0] < mine)) missing.push_back(r);
    }
    std::string who;
    if (missing.empty()) {
      who = "every rank had entered it and is running, so the transport did not complete it";
    } else {
      const int first = missing.front();
      who = fmt::format("not arrived: {} {}", silent(first, now) ? "silent" : "behind", peer_text(first, now));
      if (missing.size() > 1) who += fmt::format(" and {} more", missing.size() - 1);
    }
    const std::string line =
        fmt::format("ragged: error: rank {} waited {:.1f} s in a collective (--collective-timeout {:g}) at {}; {}\n",
                    rank_, progress.seconds_in_collective(), timeout_s_,
                    progress.describe(progress.step(), progress.op()), who);
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    g_line.ready.store(-1, std::memory_order_release);  // said once: the launcher's SIGTERM adds nothing here
    MPI_Abort(MPI_COMM_WORLD, kExitLostRank);
    std::_Exit(kExitLostRank);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  double timeout_s_;
  double interval_s_ = 1;
  double last_beat_ = 0;
  std::vector<Peer> peers_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Watchdog> make_mpi_watchdog(MPI_Comm group, double timeout_s) {
  return std::make_unique<MpiWatchdog>(group, timeout_s);
}

}  // namespace ragged::backend

#endif
