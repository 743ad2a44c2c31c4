#include "backend/progress.hpp"

#include <chrono>

#include <fmt/format.h>

namespace ragged::backend {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Progress& Progress::instance() {
  static Progress progress;
  return progress;
}

void Progress::at_op(int64_t step, int64_t op) {
  step_.store(step, std::memory_order_relaxed);
  op_.store(op, std::memory_order_relaxed);
}

void Progress::enter_collective() {
  since_ns_.store(now_ns(), std::memory_order_relaxed);
  entered_.fetch_add(1, std::memory_order_relaxed);
}

void Progress::leave_collective() { since_ns_.store(-1, std::memory_order_relaxed); }

double Progress::seconds_in_collective() const {
  const int64_t since = since_ns_.load(std::memory_order_relaxed);
  return since < 0 ? -1.0 : static_cast<double>(now_ns() - since) * 1e-9;
}

// Set before the watchdog starts and cleared after it stops: never raced.
void Progress::set_op_names(std::function<std::string(int64_t)> names) { names_ = std::move(names); }

std::string Progress::describe(int64_t step, int64_t op) const {
  if (op < 0) return fmt::format("step {}, before its first op", step);
  return fmt::format("step {}, op {}{}", step, op, names_ ? " (" + names_(op) + ")" : "");
}

}  // namespace ragged::backend
