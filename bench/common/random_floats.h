// Uniform random floats in [-1, 1) from a fixed seed, for benchmark inputs.
#pragma once

#include <algorithm>
#include <cstdint>
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

// The same values at a 64-byte-aligned address, as the interpreter's slots and the arenas place tensors (a large
// std::vector is only 16-byte aligned, which costs BLIS up to 1.8x on wide products: docs/linalg.md).
class AlignedFloats {
 public:
  AlignedFloats(size_t n, unsigned seed) : storage_(n + 16) {
    const std::vector<float> v = RandomFloats(n, seed);
    const auto addr = reinterpret_cast<uintptr_t>(storage_.data());
    data_ = storage_.data() + ((64 - addr % 64) % 64) / sizeof(float);
    std::copy(v.begin(), v.end(), data_);
  }
  float* data() { return data_; }
  const float* data() const { return data_; }

 private:
  std::vector<float> storage_;
  float* data_;
};

}  // namespace neuronmem::bench
