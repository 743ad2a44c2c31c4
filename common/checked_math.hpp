#pragma once
// Arithmetic on numbers that come from the user (scenario fields, config.json
// values, command-line counts). A product or sum that does not fit in 64 bits
// is a FieldError naming the field, never a wrapped or negative number.
// docs/RELIABILITY.md, "Input limits", lists the ranges that keep every
// derived count far below these limits; these helpers are the last guard.

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/errors.hpp"

namespace ragged {

// The largest integer a double holds exactly (2^53): every count, FLOP and
// byte number Ragged derives stays at or below it, so converting between
// int64_t and double never rounds.
inline constexpr int64_t kMaxExactCount = int64_t{1} << 53;

[[noreturn]] void throw_overflow(std::string_view field, std::string_view operation, int64_t a, int64_t b);

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view field) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) throw_overflow(field, "x", a, b);
  return product;
}

inline int64_t checked_add(int64_t a, int64_t b, std::string_view field) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) throw_overflow(field, "+", a, b);
  return sum;
}

// A non-negative finite double as a whole count (rounded toward zero);
// refuses NaN, infinity, negatives and values above kMaxExactCount.
int64_t checked_count(double value, std::string_view field);

}  // namespace ragged
