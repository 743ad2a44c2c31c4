#include "common/units.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace ragged {
namespace {

// Scales `value` down by `base` until it is under `base`, naming the unit used.
std::string scaled(double value, double base, const std::array<const char*, 6>& units, const char* separator) {
  size_t unit = 0;
  double magnitude = std::fabs(value);
  while (magnitude >= base && unit + 1 < units.size()) {
    value /= base;
    magnitude /= base;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f}{}{}", value, separator, units[0]);
  int decimals = magnitude >= 100 ? 1 : 2;
  return fmt::format("{:.{}f}{}{}", value, decimals, separator, units[unit]);
}

}  // namespace

std::string format_bytes(double bytes) { return scaled(bytes, 1024.0, {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}, " "); }

std::string format_count(double count) { return scaled(count, 1000.0, {"", "K", "M", "B", "T", "P"}, ""); }

std::string format_flops(double flops) {
  return scaled(flops, 1000.0, {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"}, " ");
}

std::string format_seconds(double seconds) {
  double magnitude = std::fabs(seconds);
  if (magnitude >= 1.0) return fmt::format("{:.3g} s", seconds);
  if (magnitude >= 1e-3) return fmt::format("{:.3g} ms", seconds * 1e3);
  if (magnitude >= 1e-6) return fmt::format("{:.3g} us", seconds * 1e6);
  return fmt::format("{:.3g} ns", seconds * 1e9);
}

std::string format_duration(double seconds) {
  const double magnitude = std::fabs(seconds);
  if (std::isinf(seconds)) return "never";
  if (magnitude < 60) return format_seconds(seconds);
  if (magnitude < 3600) return fmt::format("{:.3g} min", seconds / 60);
  if (magnitude < 86400) return fmt::format("{:.3g} h", seconds / 3600);
  return fmt::format("{:.3g} days", seconds / 86400);
}

std::string format_integer(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

std::string format_rounded(double value) { return format_integer(std::llround(value)); }

std::string format_throughput(double value) {
  return value >= 100 ? format_rounded(value) : fmt::format("{:.1f}", value);
}

std::string format_gib(int64_t bytes, int decimals) {
  return fmt::format("{:.{}f}", static_cast<double>(bytes) / kGiB, decimals);
}

}  // namespace ragged
