#pragma once
// Random inputs and bitwise comparisons shared by the optimizer tests.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

namespace ragged::backend::optimizer_test {

// n values uniform in [lo, hi).
inline std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& x : out) x = dist(rng);
  return out;
}

// n values from N(0, sigma^2).
inline std::vector<float> gaussian_vector(std::size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> out(n);
  for (float& x : out) x = dist(rng);
  return out;
}

// Sorted random cut points in (0, n), always including 0 and n.
inline std::vector<std::size_t> random_cuts(std::size_t n, std::size_t pieces, std::mt19937& rng) {
  std::uniform_int_distribution<std::size_t> dist(0, n);
  std::vector<std::size_t> cuts{0, n};
  for (std::size_t i = 0; i + 1 < pieces; ++i) cuts.push_back(dist(rng));
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

template <typename T>
bool same_bits(const T* a, const T* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(T)) == 0;
}

template <typename T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && same_bits(a.data(), b.data(), a.size());
}

}  // namespace ragged::backend::optimizer_test
