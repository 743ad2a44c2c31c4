#pragma once
// What this process is doing, for a watchdog that must say where a job hung:
// the executor's current step and Program op, and whether the main thread is
// inside a collective since when. Written by the run's thread with relaxed
// atomics (a few per op), read by the watchdog's thread; no locks, no MPI.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace ragged::backend {

class Progress {
 public:
  static Progress& instance();

  // The executor is at Program op `op` of optimizer step `step`.
  void at_op(int64_t step, int64_t op);
  // A communicator enters or leaves a collective (every rank enters the same
  // collectives in the same order, so the count identifies one).
  void enter_collective();
  void leave_collective();

  int64_t step() const { return step_.load(std::memory_order_relaxed); }
  int64_t op() const { return op_.load(std::memory_order_relaxed); }
  int64_t collectives_entered() const { return entered_.load(std::memory_order_relaxed); }
  // Seconds since the current collective began (steady clock); negative when
  // the main thread is in none.
  double seconds_in_collective() const;

  // Names ops in messages ("layers.1 all_gather (all_gather, unit 2)"); the
  // run registers its Program's names, and unregisters them (nullptr) after.
  void set_op_names(std::function<std::string(int64_t)> names);
  std::string describe(int64_t step, int64_t op) const;

 private:
  std::atomic<int64_t> step_{0};
  std::atomic<int64_t> op_{-1};
  std::atomic<int64_t> entered_{0};
  std::atomic<int64_t> since_ns_{-1};  // steady-clock ns when the current collective began
  std::function<std::string(int64_t)> names_;
};

// Registers a Program's op names with the progress board while in scope.
class ScopedOpNames {
 public:
  explicit ScopedOpNames(std::function<std::string(int64_t)> names) {
    Progress::instance().set_op_names(std::move(names));
  }
  ~ScopedOpNames() { Progress::instance().set_op_names(nullptr); }
  ScopedOpNames(const ScopedOpNames&) = delete;
  ScopedOpNames& operator=(const ScopedOpNames&) = delete;
};

}  // namespace ragged::backend
