#include "sim/gpu_share.hpp"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace ragged::sim {

namespace sg4 = simgrid::s4u;

void GpuShare::create() {
  mutex_ = sg4::Mutex::create();
  changed_ = sg4::ConditionVariable::create();
}

double GpuShare::hbm_scale() const {
  if (resources_.hbm_bytes_per_s <= 0) return 1.0;
  double demand = static_cast<double>(memory_kernels_) * resources_.hbm_bytes_per_s;
  for (const auto& [id, c] : collectives_) demand += c.hbm_bytes_per_s;
  return demand > resources_.hbm_bytes_per_s ? resources_.hbm_bytes_per_s / demand : 1.0;
}

int GpuShare::collective_ctas() const {
  int held = 0;
  for (const auto& [id, c] : collectives_) held += c.ctas;
  return held;
}

int GpuShare::unheld_sms() const { return resources_.sms - collective_ctas() - persistent_ctas_; }

double GpuShare::rate(Kind kind) const {
  if (kind == Kind::kMemory) return hbm_scale();
  // NCCL never holds every SM; keep one for the compute kernel.
  const int free = std::max(1, resources_.sms - collective_ctas());
  return static_cast<double>(free) / static_cast<double>(resources_.sms) / static_cast<double>(std::max(1, sm_kernels_));
}

void GpuShare::changed() {
  const double scale = hbm_scale();
  if (scale != applied_scale_) {
    applied_scale_ = scale;
    if (scale_callback_) scale_callback_(scale);
  }
  changed_->notify_all();
}

void GpuShare::run(Kind kind, double seconds) {
  if (seconds <= 0) return;
  if (!shared(kind)) {
    sg4::this_actor::sleep_for(seconds);
    return;
  }
  std::unique_lock lock(*mutex_);
  // Without SM sharing nothing waits for its dispatch.
  const int kernel = next_kernel_++;
  if (resources_.sms > 0) dispatching_.insert(kernel);
  (kind == Kind::kSm ? sm_kernels_ : memory_kernels_) += 1;
  changed();
  double remaining = seconds;  // work left, in seconds at the rate alone
  while (remaining > 0) {
    const double r = rate(kind);
    const double start = sg4::Engine::get_clock();
    if (changed_->wait_for(lock, remaining / r) == std::cv_status::timeout) break;
    remaining -= (sg4::Engine::get_clock() - start) * r;
  }
  (kind == Kind::kSm ? sm_kernels_ : memory_kernels_) -= 1;
  dispatching_.erase(kernel);
  changed();
}

void GpuShare::run_memory_bound(double seconds, int64_t kernels) {
  const int64_t n = std::max<int64_t>(1, kernels);
  for (int64_t i = 0; i < n; ++i) run(Kind::kMemory, seconds / static_cast<double>(n));
}

void GpuShare::run_persistent(double seconds) {
  if (seconds <= 0) return;
  if (resources_.sms <= 0) {
    sg4::this_actor::sleep_for(seconds);
    return;
  }
  // Wave ends within this of each other are one instant (the engine's clock
  // is a double; kernels last microseconds or more).
  constexpr double kSameInstant = 1e-12;
  std::unique_lock lock(*mutex_);
  sm_kernels_ += 1;
  const int kernel = next_kernel_++;
  dispatching_.insert(kernel);
  int waiting = resources_.sms;            // CTAs not started yet
  std::vector<std::pair<double, int>> waves;  // end time and CTAs of each started group
  while (true) {
    const double now = sg4::Engine::get_clock();
    bool moved = false;
    for (auto it = waves.begin(); it != waves.end();) {
      if (it->first <= now + kSameInstant) {
        persistent_ctas_ -= it->second;
        it = waves.erase(it);
        moved = true;
      } else {
        ++it;
      }
    }
    const int free = unheld_sms() - pending_ctas_;
    // With nothing of its own running, it takes at least one SM: the
    // collectives never hold them all.
    const int start = std::min(waiting, waves.empty() ? std::max(1, free) : std::max(0, free));
    if (start > 0) {
      waves.emplace_back(now + seconds, start);
      waiting -= start;
      persistent_ctas_ += start;
      if (waiting == 0) dispatching_.erase(kernel);
      moved = true;
    }
    // Only a change wakes the others (two persistent kernels must not wake
    // each other forever at one instant).
    if (moved) changed();
    if (waves.empty()) break;
    double next = waves.front().first;
    for (const auto& wave : waves) next = std::min(next, wave.first);
    changed_->wait_for(lock, next - now);
  }
  sm_kernels_ -= 1;
  changed();
}

int GpuShare::begin_collective(int ctas) {
  if (resources_.sms <= 0 && resources_.hbm_bytes_per_s <= 0) return -1;
  std::unique_lock lock(*mutex_);
  // The kernels that became ready before this one dispatch their CTAs first.
  const std::set<int> ahead = dispatching_;
  const auto dispatched = [&] {
    return std::none_of(ahead.begin(), ahead.end(), [&](int k) { return dispatching_.contains(k); });
  };
  // A copy-engine transfer (no CTAs) waits for no SM.
  if (resources_.sms > 0 && ctas > 0 && (persistent_ctas_ > 0 || !ahead.empty())) {
    pending_ctas_ += ctas;
    changed_->wait(lock, [&] {
      return dispatched() && (persistent_ctas_ == 0 || unheld_sms() >= ctas);
    });
    pending_ctas_ -= ctas;
  }
  const int id = next_id_++;
  collectives_[id] = {ctas, 0.0};
  changed();
  return id;
}

void GpuShare::set_collective_traffic(int id, double hbm_bytes_per_s) {
  if (id < 0) return;
  std::unique_lock lock(*mutex_);
  collectives_[id].hbm_bytes_per_s = hbm_bytes_per_s;
  changed();
}

void GpuShare::end_collective(int id) {
  if (id < 0) return;
  std::unique_lock lock(*mutex_);
  collectives_.erase(id);
  changed();
}

}  // namespace ragged::sim
