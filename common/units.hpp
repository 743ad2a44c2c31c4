#pragma once
// Human-readable quantities for reports: bytes in binary units, counts and
// rates in decimal units, durations in the unit that reads best.

#include <cstdint>
#include <string>

namespace ragged {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Bytes in `gib` binary gigabytes, rounded down to a whole byte.
inline int64_t gib_to_bytes(double gib) { return static_cast<int64_t>(gib * kGiB); }

std::string format_bytes(double bytes);       // "1.50 GiB", "512 B"
std::string format_count(double count);       // "8.03B", "14.3M", "512"
std::string format_flops(double flops);       // "1.23 TFLOP"
std::string format_seconds(double seconds);   // "12.3 ms", "4.56 s"
std::string format_duration(double seconds);  // format_seconds below a minute, then "3.9 min", "3.09 h", "2.15 days"
std::string format_integer(int64_t value);    // "8,030,261,248"
// "8,030,261": to the nearest whole (halves away from zero), as format_integer.
std::string format_rounded(double value);
std::string format_throughput(double value);  // "3,486" from 100 up, "54.3" below: a tokens/s figure in a table
std::string format_gib(int64_t bytes, int decimals = 2);  // "71.25": the number of GiB alone, for a table's column

}  // namespace ragged
