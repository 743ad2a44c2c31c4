#include "gui/models/axis_scale.hpp"

#include <algorithm>
#include <cmath>

namespace ragged::gui {

ByteUnit byte_unit_for(double max_bytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  double bytes = 1;
  while (unit < 5 && max_bytes >= bytes * 1024) {
    bytes *= 1024;
    ++unit;
  }
  return {bytes, names[unit]};
}

NiceAxis nice_axis(double max, int target, double headroom) {
  const double want = std::max(0.0, max) * std::max(1.0, headroom);
  if (!(want > 0) || !std::isfinite(want)) return {1, 0.2, 5, 1};
  target = std::max(1, target);
  const double raw = want / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw * (1 - 1e-12)) break;
  }
  NiceAxis axis;
  axis.step = step;
  axis.intervals = std::max(1, static_cast<int>(std::ceil(want / step - 1e-9)));
  axis.top = axis.intervals * step;
  axis.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return axis;
}

}  // namespace ragged::gui
