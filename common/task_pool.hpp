#pragma once
// Independent tasks, each a string in and a string out, run by a pool of
// workers: the threads of this process (LocalTaskPool), or the ranks of an
// MPI launch with their threads (backend/task_farm_mpi.hpp). Tasks are
// handed out in order, one at a time, to whichever worker asks next
// (dynamic distribution: a slow task holds up one worker, not a share of
// the list). Callers write tasks that any worker can run from the string
// alone, so the answer never depends on who ran what.

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ragged {

using TaskWork = std::function<std::string(const std::string& task)>;

struct MapOptions {
  // After each finished task, one call at a time: tasks done, tasks in all.
  std::function<void(size_t done, size_t total)> progress;
  // Called with each result as it arrives, one call at a time; true hands out
  // no further task (those running still finish).
  std::function<bool(const std::string& result)> stop;
  // Asked before task `index` is handed out, one call at a time with the
  // others: true leaves it unrun (its result nullopt; it counts as done).
  // With `stop` seeing the results, a caller bounds a search by it.
  std::function<bool(size_t index)> skip;
};

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // results[i] answers tasks[i]; nullopt for a task `stop` kept from
  // starting. The first exception a task throws is rethrown here, after
  // the tasks running meanwhile finished.
  virtual std::vector<std::optional<std::string>> map(const std::vector<std::string>& tasks,
                                                      const MapOptions& options = {}) = 0;
  // Workers in all (threads over every rank).
  virtual int workers() const = 0;
};

// The tasks of one map(): which comes next, which are done. Thread-safe.
class TaskQueue {
 public:
  TaskQueue(const std::vector<std::string>& tasks, const MapOptions& options);

  // The index of the next task to run (those `skip` leaves out passed
  // over); nullopt when every task is handed out, a result asked to stop,
  // or a task failed.
  std::optional<size_t> take();
  const std::string& task(size_t index) const { return tasks_[index]; }
  void complete(size_t index, std::string result);
  void fail(std::exception_ptr error);
  // Every task handed out has finished and none is left to hand out.
  bool done() const;
  void wait_done() const;
  // The results; rethrows the first failure.
  std::vector<std::optional<std::string>> results();

 private:
  bool done_locked() const;

  const std::vector<std::string>& tasks_;
  MapOptions options_;
  mutable std::mutex mutex_;
  mutable std::condition_variable finished_;
  size_t next_ = 0;
  size_t completed_ = 0;
  bool stopped_ = false;
  std::exception_ptr error_;
  std::vector<std::optional<std::string>> results_;
};

// Threads that run tasks from a queue until it hands out no more; joined
// on destruction.
class QueueWorkers {
 public:
  QueueWorkers(TaskQueue& queue, const TaskWork& work, int threads);
  ~QueueWorkers();
  QueueWorkers(const QueueWorkers&) = delete;
  QueueWorkers& operator=(const QueueWorkers&) = delete;

 private:
  std::vector<std::thread> threads_;
};

// Tasks on `threads` threads of this process.
class LocalTaskPool : public TaskRunner {
 public:
  LocalTaskPool(TaskWork work, int threads);
  std::vector<std::optional<std::string>> map(const std::vector<std::string>& tasks,
                                              const MapOptions& options = {}) override;
  int workers() const override { return threads_; }

 private:
  TaskWork work_;
  int threads_;
};

// work(i) for every i below `count`, on `threads` threads of this process
// (one after the other on the calling thread when it is 1 or less), each
// index once; the first exception is rethrown after the others finish.
void for_each_index(size_t count, int threads, const std::function<void(size_t)>& work);

// The hardware's threads (at least 1): the default of --jobs.
int hardware_threads();

}  // namespace ragged
