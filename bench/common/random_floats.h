// Uniform random floats in [-1, 1) from a fixed seed, for benchmark inputs.
#pragma once

#include <random>
#include <vector>

namespace neuronmem::bench {

inline std::vector<float> RandomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace neuronmem::bench
