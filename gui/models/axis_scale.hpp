#pragma once
// Axes that fit their data: bytes in the binary unit their largest value
// reads best in (MiB for a tiny scenario, GiB for a large one), and a value
// axis from 0 to a round top in round steps (1, 2 or 5 x 10^k). No Qt.

#include <string>

namespace ragged::gui {

struct ByteUnit {
  double bytes = 1;   // bytes in one unit
  std::string name;   // "GiB", "MiB", "KiB", "B"
};

// The largest binary unit of which `max_bytes` is at least one.
ByteUnit byte_unit_for(double max_bytes);

struct NiceAxis {
  double top = 1;   // a multiple of step, at least the data's largest value
  double step = 1;  // 1, 2 or 5 x 10^k
  int intervals = 1;
  int decimals = 0;  // what a tick label needs to show the step exactly
};

// 0 .. top in about `target` round steps holding `max` (and `max` x `headroom`).
NiceAxis nice_axis(double max, int target = 5, double headroom = 1.0);

}  // namespace ragged::gui
