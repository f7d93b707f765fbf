// Internal to src/linalg: the C++ storage type of each element type the routines compute with, a
// dispatcher from ElementType to a template, conversions between storage types with the StableHLO
// `convert` rounding, and arithmetic "in the result type" as the reference interpreter does it
// (wrapping integers, f16/bf16 rounded after every multiply and every add).
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/element_type.h"

namespace neuronmem::linalg::detail {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

// pred is stored as one byte, 0 or 1 (any non-zero byte reads as true).
struct Pred {
  uint8_t v;
};

template <ElementType E>
struct StorageOf;
template <>
struct StorageOf<ElementType::kPred> {
  using type = Pred;
};
template <>
struct StorageOf<ElementType::kS8> {
  using type = int8_t;
};
template <>
struct StorageOf<ElementType::kS16> {
  using type = int16_t;
};
template <>
struct StorageOf<ElementType::kS32> {
  using type = int32_t;
};
template <>
struct StorageOf<ElementType::kS64> {
  using type = int64_t;
};
template <>
struct StorageOf<ElementType::kU8> {
  using type = uint8_t;
};
template <>
struct StorageOf<ElementType::kU16> {
  using type = uint16_t;
};
template <>
struct StorageOf<ElementType::kU32> {
  using type = uint32_t;
};
template <>
struct StorageOf<ElementType::kU64> {
  using type = uint64_t;
};
template <>
struct StorageOf<ElementType::kF16> {
  using type = half;
};
template <>
struct StorageOf<ElementType::kBF16> {
  using type = bfloat16;
};
template <>
struct StorageOf<ElementType::kF32> {
  using type = float;
};
template <>
struct StorageOf<ElementType::kF64> {
  using type = double;
};
template <>
struct StorageOf<ElementType::kC64> {
  using type = c64;
};
template <>
struct StorageOf<ElementType::kC128> {
  using type = c128;
};

template <typename T>
struct Tag {
  using type = T;
};

// The element type whose storage is T.
template <typename T>
constexpr ElementType ElementTypeOf() {
  if constexpr (std::is_same_v<T, Pred>)
    return ElementType::kPred;
  else if constexpr (std::is_same_v<T, int8_t>)
    return ElementType::kS8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return ElementType::kS16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return ElementType::kS32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return ElementType::kS64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return ElementType::kU8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return ElementType::kU16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return ElementType::kU32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return ElementType::kU64;
  else if constexpr (std::is_same_v<T, half>)
    return ElementType::kF16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return ElementType::kBF16;
  else if constexpr (std::is_same_v<T, float>)
    return ElementType::kF32;
  else if constexpr (std::is_same_v<T, double>)
    return ElementType::kF64;
  else if constexpr (std::is_same_v<T, c64>)
    return ElementType::kC64;
  else if constexpr (std::is_same_v<T, c128>)
    return ElementType::kC128;
  else
    return ElementType::kInvalid;
}

// Calls f(Tag<T>{}) with T the storage type of `t`; returns false (without calling) for element types
// the routines do not compute with (sub-byte integers, f8/f6/f4, kInvalid, kOther).
template <typename F>
bool Dispatch(ElementType t, F&& f) {
  switch (t) {
    case ElementType::kPred: f(Tag<Pred>{}); return true;
    case ElementType::kS8: f(Tag<int8_t>{}); return true;
    case ElementType::kS16: f(Tag<int16_t>{}); return true;
    case ElementType::kS32: f(Tag<int32_t>{}); return true;
    case ElementType::kS64: f(Tag<int64_t>{}); return true;
    case ElementType::kU8: f(Tag<uint8_t>{}); return true;
    case ElementType::kU16: f(Tag<uint16_t>{}); return true;
    case ElementType::kU32: f(Tag<uint32_t>{}); return true;
    case ElementType::kU64: f(Tag<uint64_t>{}); return true;
    case ElementType::kF16: f(Tag<half>{}); return true;
    case ElementType::kBF16: f(Tag<bfloat16>{}); return true;
    case ElementType::kF32: f(Tag<float>{}); return true;
    case ElementType::kF64: f(Tag<double>{}); return true;
    case ElementType::kC64: f(Tag<c64>{}); return true;
    case ElementType::kC128: f(Tag<c128>{}); return true;
    default: return false;
  }
}

template <typename T>
constexpr bool kIsPred = std::is_same_v<T, Pred>;
template <typename T>
constexpr bool kIsInt = std::is_integral_v<T>;
template <typename T>
constexpr bool kIsHalfLike = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
template <typename T>
constexpr bool kIsComplex = std::is_same_v<T, c64> || std::is_same_v<T, c128>;
template <typename T>
constexpr bool kIsFloat = kIsHalfLike<T> || std::is_same_v<T, float> || std::is_same_v<T, double>;

// Rounds a double to the nearest T (ties to even) with one rounding: the double is first rounded to
// float with round-to-odd (enough extra bits that the second rounding is exact), then to T.
template <typename T>
inline T RoundFromDouble(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d && d == d) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits |= 1u;  // sticky: the value was inexact
    std::memcpy(&f, &bits, sizeof bits);
  }
  return T(f);
}

// Can a value of class `from` be converted to `to` by a dot_general or convolution operand
// conversion? pred -> pred, integer -> integer, float -> float, float/complex -> complex.
inline bool OperandConvertible(ElementType from, ElementType to) {
  if (to == ElementType::kPred) return from == ElementType::kPred;
  if (IsInteger(to)) return IsInteger(from);
  if (IsFloat(to)) return IsFloat(from);
  if (IsComplex(to)) return IsFloat(from) || IsComplex(from);
  return false;
}

// Converts one operand element into the result type (only the pairs OperandConvertible allows).
template <typename To, typename From>
inline To ConvertElement(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (kIsInt<To> && kIsInt<From>) {
    return static_cast<To>(x);  // two's complement truncation or extension, as StableHLO convert
  } else if constexpr (kIsFloat<To> && kIsFloat<From>) {
    if constexpr (kIsHalfLike<To>) {
      return RoundFromDouble<To>(static_cast<double>(static_cast<float>(x)));
    } else if constexpr (kIsHalfLike<From>) {
      return static_cast<To>(static_cast<float>(x));
    } else {
      return static_cast<To>(x);
    }
  } else if constexpr (kIsComplex<To> && kIsComplex<From>) {
    using R = typename To::value_type;
    return To(static_cast<R>(x.real()), static_cast<R>(x.imag()));
  } else if constexpr (kIsComplex<To> && kIsFloat<From>) {
    using R = typename To::value_type;
    return To(static_cast<R>(static_cast<double>(static_cast<float>(x))), R(0));
  } else {
    static_assert(kIsPred<To> && kIsPred<From>, "unsupported operand conversion");
    return x;
  }
}

// Multiply-accumulate in the result type, exactly as the reference interpreter: acc + (a * b) with
// the product rounded to T before the add (no fused multiply-add), integers wrapping, pred as or/and.
template <typename T>
struct Arith {
  using Acc = T;
  static Acc Zero() { return T(0); }
  static Acc Load(T x) { return x; }
  static T Store(Acc a) { return a; }
  static Acc MulAdd(Acc acc, T a, T b) {
    const T p = a * b;  // separate statements: no contraction into an FMA
    return acc + p;
  }
};

template <>
struct Arith<Pred> {
  using Acc = uint8_t;
  static Acc Zero() { return 0; }
  static Acc Load(Pred x) { return x.v != 0; }
  static Pred Store(Acc a) { return Pred{a}; }
  static Acc MulAdd(Acc acc, Pred a, Pred b) { return acc | ((a.v != 0) & (b.v != 0)); }
};

template <typename I>
struct IntArith {
  // Wide enough that the promoted arithmetic cannot overflow a signed int (uint16 * uint16 would).
  using Acc = std::conditional_t<(sizeof(I) < 4), uint32_t, std::make_unsigned_t<I>>;
  static Acc Zero() { return 0; }
  static Acc Load(I x) { return static_cast<Acc>(x); }
  static I Store(Acc a) { return static_cast<I>(a); }
  static Acc MulAdd(Acc acc, I a, I b) { return acc + static_cast<Acc>(a) * static_cast<Acc>(b); }
};
template <>
struct Arith<int8_t> : IntArith<int8_t> {};
template <>
struct Arith<int16_t> : IntArith<int16_t> {};
template <>
struct Arith<int32_t> : IntArith<int32_t> {};
template <>
struct Arith<int64_t> : IntArith<int64_t> {};
template <>
struct Arith<uint8_t> : IntArith<uint8_t> {};
template <>
struct Arith<uint16_t> : IntArith<uint16_t> {};
template <>
struct Arith<uint32_t> : IntArith<uint32_t> {};
template <>
struct Arith<uint64_t> : IntArith<uint64_t> {};

// f16/bf16: the accumulator holds a value of T in a double; the product and the sum of two values of T
// are exact in double (f16) or off only far below T's rounding point (bf16), and each is rounded to T.
template <typename H>
struct HalfArith {
  using Acc = double;
  static Acc Zero() { return 0.0; }
  static Acc Load(H x) { return static_cast<double>(static_cast<float>(x)); }
  static H Store(Acc a) { return RoundFromDouble<H>(a); }
  static double Round(double d) { return static_cast<double>(static_cast<float>(RoundFromDouble<H>(d))); }
  static Acc MulAdd(Acc acc, H a, H b) {
    const double p = Round(static_cast<double>(static_cast<float>(a)) * static_cast<double>(static_cast<float>(b)));
    return Round(acc + p);
  }
};
template <>
struct Arith<half> : HalfArith<half> {};
template <>
struct Arith<bfloat16> : HalfArith<bfloat16> {};

// The types the BLAS-style matrix product (gemm.h) computes with.
template <typename T>
constexpr bool kIsGemmType = std::is_same_v<T, float> || std::is_same_v<T, double> || kIsComplex<T>;

}  // namespace neuronmem::linalg::detail
