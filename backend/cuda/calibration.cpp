// The calibration file (calibration.hpp), in the format of
// ComputeModel::from_calibration (sim/compute_model.cpp).

#include "backend/cuda/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/errors.hpp"
#include "scenarios/gpu_presets.hpp"

namespace ragged::backend::gpu {
namespace {

void require(bool ok, std::string_view field, double value, std::string_view what) {
  if (!ok) throw InternalError(fmt::format("calibration: field '{}' must be {} (got {})", field, what, value));
}

void require_positive(std::string_view field, double value) {
  require(std::isfinite(value) && value > 0, field, value, "a positive number");
}

void require_fraction(std::string_view field, double value) {
  require(std::isfinite(value) && value > 0 && value <= 1, field, value, "a number in (0, 1]");
}

}  // namespace

std::string calibration_json(const Calibration& c) {
  if (c.device.empty() || c.source.empty()) throw InternalError("calibration: 'device' and 'source' must be non-empty");
  if (c.gemm.empty()) throw InternalError("calibration: 'gemm' needs at least one measured point");
  require_positive("peak_flops", c.peak_flops);
  require_positive("hbm_bytes_per_s", c.hbm_bytes_per_s);
  const bool attention = c.attention_forward_efficiency > 0 || c.attention_backward_efficiency > 0;
  if (attention) {
    require_fraction("attention.forward_efficiency", c.attention_forward_efficiency);
    require_fraction("attention.backward_efficiency", c.attention_backward_efficiency);
  }
  require_fraction("memory_efficiency", c.memory_efficiency);
  require_positive("launch_seconds", c.launch_seconds);

  std::vector<CalibrationGemm> points = c.gemm;
  auto flops = [](const CalibrationGemm& p) {
    return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  };
  std::stable_sort(points.begin(), points.end(),
                   [&](const CalibrationGemm& a, const CalibrationGemm& b) { return flops(a) < flops(b); });
  nlohmann::ordered_json gemm = nlohmann::ordered_json::array();
  for (size_t i = 0; i < points.size(); ++i) {
    const CalibrationGemm& p = points[i];
    if (p.m <= 0 || p.n <= 0 || p.k <= 0)
      throw InternalError(fmt::format("calibration: gemm[{}] has a non-positive dimension", i));
    require_positive(fmt::format("gemm[{}].seconds", i), p.seconds);
    gemm.push_back({{"m", p.m}, {"n", p.n}, {"k", p.k}, {"seconds", p.seconds}});
  }
  nlohmann::ordered_json root;
  root["device"] = c.device;
  root["peak_flops"] = c.peak_flops;
  root["hbm_bytes_per_s"] = c.hbm_bytes_per_s;
  root["gemm"] = std::move(gemm);
  if (attention) {
    root["attention"] = {{"forward_efficiency", c.attention_forward_efficiency},
                         {"backward_efficiency", c.attention_backward_efficiency}};
  }
  root["memory_efficiency"] = c.memory_efficiency;
  root["launch_seconds"] = c.launch_seconds;
  if (c.sms < 0) throw InternalError(fmt::format("calibration: field 'sms' must be positive or 0 (got {})", c.sms));
  if (c.sms > 0) root["sms"] = c.sms;
  if (c.persistent_gemms >= 0) root["persistent_gemms"] = c.persistent_gemms == 1;
  if (c.sustained_clock != 0) {
    require_fraction("sustained_clock", c.sustained_clock);
    root["sustained_clock"] = c.sustained_clock;
  }
  const std::pair<const char*, double> allocator[] = {{"malloc_seconds", c.malloc_calls.intercept},
                                                      {"malloc_seconds_per_gib", c.malloc_calls.slope},
                                                      {"free_seconds", c.free_calls.intercept},
                                                      {"free_seconds_per_gib", c.free_calls.slope}};
  bool allocator_measured = false;
  for (const auto& [name, seconds] : allocator) {
    require(std::isfinite(seconds) && seconds >= 0, fmt::format("allocator.{}", name), seconds, "a number >= 0");
    allocator_measured = allocator_measured || seconds > 0;
  }
  if (allocator_measured) {
    for (const auto& [name, seconds] : allocator) root["allocator"][name] = seconds;
  }
  root["source"] = c.source;
  return root.dump(2) + "\n";
}

double dense_bf16_peak_flops(std::string_view device_name) {
  const std::string cls = device_class(device_name);
  return cls.empty() ? 0 : scenarios::find_gpu_preset(cls).peak_bf16_tflops * 1e12;
}

std::string device_class(std::string_view device_name) { return scenarios::gpu_preset_for_device(device_name); }

std::string device_slug(std::string_view device_name) {
  std::string slug;
  for (char c : device_name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      slug += static_cast<char>(std::tolower(u));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  if (slug.rfind("nvidia-", 0) == 0) slug.erase(0, 7);
  return slug.empty() ? "unknown-gpu" : slug;
}

}  // namespace ragged::backend::gpu
