#pragma once
// How the validation report prints errors and throughputs, shared by its sections.

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "common/units.hpp"

namespace ragged::bench {

inline std::string pct(double value) { return fmt::format("{:+.1f}%", 100 * value); }
inline std::string abs_pct(double value) { return fmt::format("{:.1f}%", 100 * value); }

}  // namespace ragged::bench
