// Distance in units in the last place between two values of a float type (f16, bf16, f32, f64), for the
// numerics tests: the number of representable values between them, -0 and +0 counted as one.
#pragma once

#include <cstdint>
#include <cstring>

#include "base/element_type.h"
#include "numerics/float_formats.h"

namespace neuronmem::numerics {

// The value's position on the line of bit patterns ordered by value (-0 and +0 both at 0).
inline int64_t OrderedBits(ElementType type, double v) {
  int64_t bits = 0, sign = 0;
  if (type == ElementType::kF64) {
    std::memcpy(&bits, &v, 8);
    sign = INT64_MIN;
  } else if (type == ElementType::kF32) {
    const float f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bits = u;
    sign = int64_t(1) << 31;
  } else {
    bits = EncodeFloat(*SmallFloatFormat(type), v);
    sign = int64_t(1) << 15;
  }
  return (bits & sign) ? -(bits & ~sign) : bits;
}

// Both values finite, or equal infinities (an infinity is one ulp beyond the largest finite value).
inline int64_t UlpDistance(ElementType type, double a, double b) {
  if (a == b) return 0;
  const int64_t oa = OrderedBits(type, a), ob = OrderedBits(type, b);
  // Opposite signs: the distance can exceed int64 for f64 (saturates).
  const uint64_t ua = oa < 0 ? 0 - static_cast<uint64_t>(oa) : static_cast<uint64_t>(oa);
  const uint64_t ub = ob < 0 ? 0 - static_cast<uint64_t>(ob) : static_cast<uint64_t>(ob);
  if ((oa < 0) == (ob < 0)) return static_cast<int64_t>(ua > ub ? ua - ub : ub - ua);
  const uint64_t d = ua + ub;
  return d < ua || d > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(d);
}

}  // namespace neuronmem::numerics
