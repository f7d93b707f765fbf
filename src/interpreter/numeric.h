// Element types as C++ types, type dispatch, and the conversions the interpreter's numerics rest on.
//
// Storage types: pred -> bool; i2/i4/i8 -> int8_t, ui2/ui4/ui8 -> uint8_t (one byte per element, the value
// kept wrapped to its width); f16 -> Eigen::half; bf16 -> Eigen::bfloat16; complex<f32|f64> ->
// std::complex. f16 and bf16 compute in float and round once (exact for + - * / sqrt, which need fewer
// than 2p+2 bits); f64 -> f16/bf16 goes through float with round-to-odd, so it is rounded only once.
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/element_type.h"

namespace neuronmem::interp {

using half = Eigen::half;
using bf16 = Eigen::bfloat16;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

template <typename T>
struct Tag {
  using type = T;
};

template <typename T>
constexpr bool kIsHalfLike = std::is_same_v<T, half> || std::is_same_v<T, bf16>;
template <typename T>
constexpr bool kIsFloat = kIsHalfLike<T> || std::is_floating_point_v<T>;
template <typename T>
constexpr bool kIsComplex = std::is_same_v<T, c64> || std::is_same_v<T, c128>;
template <typename T>
constexpr bool kIsBool = std::is_same_v<T, bool>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !kIsBool<T>;

// The type arithmetic on T is done in.
template <typename T>
using Acc = std::conditional_t<kIsHalfLike<T>, float, T>;

// Calls f(Tag<T>{}) for the storage type of `t`; f(Tag<void>{}) for types the interpreter does not compute
// with (f8/f6/f4, other).
template <typename F>
decltype(auto) Dispatch(ElementType t, F&& f) {
  switch (t) {
    case ElementType::kPred: return f(Tag<bool>{});
    case ElementType::kS2:
    case ElementType::kS4:
    case ElementType::kS8: return f(Tag<int8_t>{});
    case ElementType::kS16: return f(Tag<int16_t>{});
    case ElementType::kS32: return f(Tag<int32_t>{});
    case ElementType::kS64: return f(Tag<int64_t>{});
    case ElementType::kU2:
    case ElementType::kU4:
    case ElementType::kU8: return f(Tag<uint8_t>{});
    case ElementType::kU16: return f(Tag<uint16_t>{});
    case ElementType::kU32: return f(Tag<uint32_t>{});
    case ElementType::kU64: return f(Tag<uint64_t>{});
    case ElementType::kF16: return f(Tag<half>{});
    case ElementType::kBF16: return f(Tag<bf16>{});
    case ElementType::kF32: return f(Tag<float>{});
    case ElementType::kF64: return f(Tag<double>{});
    case ElementType::kC64: return f(Tag<c64>{});
    case ElementType::kC128: return f(Tag<c128>{});
    default: return f(Tag<void>{});
  }
}

// A key whose signed order is the IEEE total order of a float (compare's TOTALORDER): -NaN < -inf < ... < -0 < +0
// < ... < +inf < +NaN.
template <typename T>
inline int64_t TotalOrderKey(T v) {
  if constexpr (kIsHalfLike<T>) {
    int16_t b = static_cast<int16_t>(Eigen::numext::bit_cast<uint16_t>(v));
    return b < 0 ? static_cast<int64_t>(static_cast<int16_t>(b ^ 0x7fff)) : b;
  } else if constexpr (std::is_same_v<T, float>) {
    int32_t b;
    std::memcpy(&b, &v, 4);
    return b < 0 ? static_cast<int64_t>(b ^ 0x7fffffff) : b;
  } else {
    int64_t b;
    std::memcpy(&b, &v, 8);
    return b < 0 ? (b ^ INT64_C(0x7fffffffffffffff)) : b;
  }
}

// True for the element types the interpreter computes with.
bool IsSupportedType(ElementType t);

// f8 (every variant), f6 and f4: one byte per element holding the encoding (src/numerics/float_formats.h).
// Dispatch gives Tag<void> for them: kernels that compute convert them to f32, compute, and round the
// result back once (CompileQuantized); data movement copies their bytes.
inline bool IsSmallFloat(ElementType t) { return IsFloat(t) && ElementInfo(t).bits <= 8; }

// Integers narrower than their storage (i2, i4, ui2, ui4): the bit width, else 0.
inline int SubByteBits(ElementType t) {
  switch (t) {
    case ElementType::kS2:
    case ElementType::kU2: return 2;
    case ElementType::kS4:
    case ElementType::kU4: return 4;
    default: return 0;
  }
}

// Wraps v to `bits` (two's complement for signed T).
template <typename T>
inline T WrapBits(T v, int bits) {
  using U = std::make_unsigned_t<T>;
  const U mask = static_cast<U>((U(1) << bits) - 1);
  U u = static_cast<U>(static_cast<U>(v) & mask);
  if constexpr (std::is_signed_v<T>) {
    if (u & (U(1) << (bits - 1))) u = static_cast<U>(u | static_cast<U>(~mask));
  }
  return static_cast<T>(u);
}

// Bit width of an element of type t (i4 -> 4, i32 -> 32, f16 -> 16).
inline int BitWidth(ElementType t) { return ElementInfo(t).bits; }

// double -> float rounded to odd (so a following rounding to a narrower type rounds only once).
inline float DoubleToFloatOdd(double d) {
  float f = static_cast<float>(d);
  if (std::isfinite(d) && static_cast<double>(f) != d && !std::isnan(f)) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits |= 1;
    std::memcpy(&f, &bits, 4);
  }
  return f;
}

// Converts a double to float type T with a single rounding (T = half, bf16, float, double).
template <typename T>
inline T FromDouble(double d) {
  if constexpr (kIsHalfLike<T>) {
    return T(DoubleToFloatOdd(d));
  } else {
    return static_cast<T>(d);
  }
}

template <typename T>
inline double ToDouble(T v) {
  if constexpr (kIsHalfLike<T>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

// Float -> integer: toward zero, NaN -> 0, saturating at the type's (or sub-byte width's) range.
template <typename I, typename F>
inline I FloatToInt(F f, int bits) {
  const double d = ToDouble(f);
  if (std::isnan(d)) return 0;
  double lo, hi;
  if (bits == 0) bits = 8 * sizeof(I);
  if constexpr (std::is_signed_v<I>) {
    lo = -std::ldexp(1.0, bits - 1);
    hi = std::ldexp(1.0, bits - 1) - 1;
  } else {
    lo = 0;
    hi = std::ldexp(1.0, bits) - 1;
  }
  const double t = std::trunc(d);
  if (t <= lo) {
    if constexpr (std::is_signed_v<I>) {
      return bits == 64 ? std::numeric_limits<I>::min() : static_cast<I>(static_cast<int64_t>(lo));
    } else {
      return 0;
    }
  }
  if (t >= hi) {
    if (bits == 64) return std::numeric_limits<I>::max();
    return static_cast<I>(static_cast<uint64_t>(hi));
  }
  return static_cast<I>(t);
}

// Converts one element between any two supported types, with StableHLO's convert semantics
// (integers wrap to the destination width, floats round to nearest even, float -> int truncates and
// saturates, complex -> real takes the real part, anything -> pred is `!= 0`).
template <typename To, typename From>
inline To ConvertElement(From v, int to_bits) {
  if constexpr (kIsBool<To>) {
    if constexpr (kIsComplex<From>) {
      return v.real() != 0;  // complex -> anything converts the real part
    } else if constexpr (kIsHalfLike<From>) {
      return static_cast<float>(v) != 0.0f;
    } else {
      return v != From(0);
    }
  } else if constexpr (kIsComplex<To>) {
    using R = typename To::value_type;
    if constexpr (kIsComplex<From>) {
      return To(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    } else {
      return To(static_cast<R>(ToDouble(v)), R(0));
    }
  } else if constexpr (kIsComplex<From>) {
    return ConvertElement<To>(v.real(), to_bits);
  } else if constexpr (kIsFloat<To>) {
    if constexpr (kIsBool<From>) {
      return To(v ? 1.0f : 0.0f);
    } else if constexpr (std::is_same_v<To, double> || std::is_same_v<To, float>) {
      if constexpr (kIsHalfLike<From>) {
        return static_cast<To>(static_cast<float>(v));
      } else {
        return static_cast<To>(v);
      }
    } else {  // half or bf16
      if constexpr (kIsHalfLike<From>) {
        return To(static_cast<float>(v));
      } else if constexpr (std::is_same_v<From, float>) {
        return To(v);
      } else {
        return FromDouble<To>(static_cast<double>(v));
      }
    }
  } else {  // integer destination
    if constexpr (kIsBool<From>) {
      return static_cast<To>(v ? 1 : 0);
    } else if constexpr (kIsFloat<From>) {
      return FloatToInt<To>(v, to_bits);
    } else {
      To r = static_cast<To>(v);
      return to_bits ? WrapBits(r, to_bits) : r;
    }
  }
}

}  // namespace neuronmem::interp
