#include "common/task_pool.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace ragged {

TaskQueue::TaskQueue(const std::vector<std::string>& tasks, const MapOptions& options)
    : tasks_(tasks), options_(options), results_(tasks.size()) {}

std::optional<size_t> TaskQueue::take() {
  const std::lock_guard lock(mutex_);
  while (!stopped_ && !error_ && next_ < tasks_.size()) {
    const size_t index = next_++;
    if (!options_.skip || !options_.skip(index)) return index;
    ++completed_;
    if (options_.progress) options_.progress(completed_, tasks_.size());
  }
  if (done_locked()) finished_.notify_all();
  return std::nullopt;
}

void TaskQueue::complete(size_t index, std::string result) {
  std::unique_lock lock(mutex_);
  RAGGED_ASSERT(index < next_ && !results_[index], "a task completes once, after it was handed out");
  if (options_.stop && !stopped_ && options_.stop(result)) stopped_ = true;
  results_[index] = std::move(result);
  ++completed_;
  if (options_.progress) options_.progress(completed_, tasks_.size());
  if (done_locked()) finished_.notify_all();
}

void TaskQueue::fail(std::exception_ptr error) {
  const std::lock_guard lock(mutex_);
  if (!error_) error_ = error;
  ++completed_;  // a failed task is finished too
  if (done_locked()) finished_.notify_all();
}

bool TaskQueue::done_locked() const { return completed_ == next_ && (stopped_ || error_ || next_ == tasks_.size()); }

bool TaskQueue::done() const {
  const std::lock_guard lock(mutex_);
  return done_locked();
}

void TaskQueue::wait_done() const {
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [this] { return done_locked(); });
}

std::vector<std::optional<std::string>> TaskQueue::results() {
  const std::lock_guard lock(mutex_);
  RAGGED_ASSERT(done_locked(), "results are read after every task handed out has finished");
  if (error_) std::rethrow_exception(error_);
  return results_;
}

QueueWorkers::QueueWorkers(TaskQueue& queue, const TaskWork& work, int threads) {
  for (int t = 0; t < threads; ++t) {
    threads_.emplace_back([&queue, &work] {
      while (std::optional<size_t> index = queue.take()) {
        try {
          queue.complete(*index, work(queue.task(*index)));
        } catch (...) {
          queue.fail(std::current_exception());
        }
      }
    });
  }
}

QueueWorkers::~QueueWorkers() {
  for (auto& thread : threads_) thread.join();
}

LocalTaskPool::LocalTaskPool(TaskWork work, int threads) : work_(std::move(work)), threads_(std::max(1, threads)) {}

std::vector<std::optional<std::string>> LocalTaskPool::map(const std::vector<std::string>& tasks,
                                                           const MapOptions& options) {
  TaskQueue queue(tasks, options);
  {
    QueueWorkers workers(queue, work_, static_cast<int>(std::min<size_t>(static_cast<size_t>(threads_), tasks.size())));
  }
  return queue.results();
}

void for_each_index(size_t count, int threads, const std::function<void(size_t)>& work) {
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) work(i);
    return;
  }
  std::vector<std::string> tasks;
  tasks.reserve(count);
  for (size_t i = 0; i < count; ++i) tasks.push_back(std::to_string(i));
  LocalTaskPool pool(
      [&work](const std::string& task) {
        work(std::stoul(task));
        return std::string();
      },
      threads);
  pool.map(tasks);
}

int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

}  // namespace ragged
