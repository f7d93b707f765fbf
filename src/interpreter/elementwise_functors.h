// The element-wise family's functors: per op, which element types it takes (Supports<T>()) and what it
// computes on one element (Apply), unary and binary, with the kernels that run them over a tensor. Included by
// elementwise.cc only (its compile functions pick a functor per op and element type).
#pragma once

#include <bit>
#include <cfenv>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <functional>
#include <type_traits>

#include "interpreter/kernel.h"
#include "interpreter/quant.h"
#include "interpreter/shape.h"
#include "numerics/float_formats.h"

namespace neuronmem::interp::elementwise {

template <typename T>
using U = std::make_unsigned_t<T>;

// ---- Unary functors: Supports<T>() and Apply(T) -------------------------------------------------
// Each functor derives Supports<T>() (which element types the op takes) from one of these bases.

#define TAKES(Name, cond)              \
  struct Name {                        \
    template <typename T>              \
    static constexpr bool Supports() { \
      return cond;                     \
    }                                  \
  };
TAKES(TakesAll, true)
TAKES(TakesNonBool, !kIsBool<T>)
TAKES(TakesFloat, kIsFloat<T>)
TAKES(TakesFloatComplex, kIsFloat<T> || kIsComplex<T>)
TAKES(TakesIntFloat, kIsInt<T> || kIsFloat<T>)
TAKES(TakesIntBool, kIsInt<T> || kIsBool<T>)
TAKES(TakesInt, kIsInt<T>)
#undef TAKES

// A unary op computed in Acc<T>; `supports` is a constant expression over T.
#define UNARY_IN_ACC(Name, Takes, expr) \
  struct Name : Takes {                 \
    template <typename T>               \
    static T Apply(T v) {               \
      using A = Acc<T>;                 \
      const A x = static_cast<A>(v);    \
      return T(expr);                   \
    }                                   \
  };
#define FLOAT_UNARY(Name, expr) UNARY_IN_ACC(Name, TakesFloat, expr)
#define FLOAT_COMPLEX_UNARY(Name, expr) UNARY_IN_ACC(Name, TakesFloatComplex, expr)

FLOAT_COMPLEX_UNARY(Exp, std::exp(x))
FLOAT_COMPLEX_UNARY(Log, std::log(x))
FLOAT_COMPLEX_UNARY(Sqrt, std::sqrt(x))
FLOAT_COMPLEX_UNARY(Sin, std::sin(x))
FLOAT_COMPLEX_UNARY(Cos, std::cos(x))
FLOAT_COMPLEX_UNARY(Tan, std::tan(x))
FLOAT_COMPLEX_UNARY(Tanh, std::tanh(x))
FLOAT_COMPLEX_UNARY(Sinh, std::sinh(x))
FLOAT_COMPLEX_UNARY(Cosh, std::cosh(x))
// The inverse trigonometric and hyperbolic functions of complex numbers: the C library's complex<float> ones are
// up to 5 ULP off (casinf near (-0.56, -1.98)), so complex64 computes in complex128 and complex128 in long double,
// each rounded once (0 ULP from the correctly rounded value over a grid of every quadrant and magnitude).
template <typename T>
using WiderComplex = std::conditional_t<std::is_same_v<T, c64>, c128, std::complex<long double>>;
#define INVERSE_UNARY(Name, fn)                                       \
  struct Name : TakesFloatComplex {                                   \
    template <typename T>                                             \
    static T Apply(T v) {                                             \
      if constexpr (kIsComplex<T>) {                                  \
        using R = typename T::value_type;                             \
        const auto w = fn(WiderComplex<T>(v.real(), v.imag()));       \
        return T(static_cast<R>(w.real()), static_cast<R>(w.imag())); \
      } else {                                                        \
        return T(fn(static_cast<Acc<T>>(v)));                         \
      }                                                               \
    }                                                                 \
  };
INVERSE_UNARY(Asin, std::asin)
INVERSE_UNARY(Acos, std::acos)
INVERSE_UNARY(Atan, std::atan)
INVERSE_UNARY(Asinh, std::asinh)
INVERSE_UNARY(Acosh, std::acosh)
INVERSE_UNARY(Atanh, std::atanh)
#undef INVERSE_UNARY

// cbrt: the real cube root; of a complex number the principal one, exp(log(z) / 3) = |z|^(1/3) e^(i arg(z) / 3)
// (XLA's), computed one precision up (complex128 in long double) and rounded once.
struct Cbrt : TakesFloatComplex {
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsComplex<T>) {
      using R = typename T::value_type;
      using W = typename WiderComplex<T>::value_type;
      const W x = v.real(), y = v.imag();
      if (x == 0 && y == 0) return T(R(0), R(0));
      const W r = std::cbrt(std::hypot(x, y)), t = std::atan2(y, x) / 3;
      return T(static_cast<R>(r * std::cos(t)), static_cast<R>(r * std::sin(t)));
    } else {
      return T(std::cbrt(static_cast<Acc<T>>(v)));
    }
  }
};
FLOAT_UNARY(Floor, std::floor(x))
FLOAT_UNARY(Ceil, std::ceil(x))
FLOAT_UNARY(RoundAfz, std::round(x))
FLOAT_UNARY(RoundEven, std::nearbyint(x))
FLOAT_UNARY(Erf, std::erf(x))
FLOAT_UNARY(Erfc, std::erfc(x))

struct Expm1 : TakesFloatComplex {
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsComplex<T>) {
      // exp(z) - 1 = expm1(x) cos(y) - 2 sin^2(y/2) + i exp(x) sin(y), without cancellation for small z.
      using R = typename T::value_type;
      const R x = v.real(), y = v.imag();
      const R s = std::sin(y / 2);
      return T(std::expm1(x) * std::cos(y) - 2 * s * s, std::exp(x) * std::sin(y));
    } else {
      return T(std::expm1(static_cast<Acc<T>>(v)));
    }
  }
};

struct Log1p : TakesFloatComplex {
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsComplex<T>) {
      // log(1 + z): real part log|1+z| = 0.5 log1p(2x + x^2 + y^2), imaginary part atan2(y, 1 + x).
      using R = typename T::value_type;
      const R x = v.real(), y = v.imag();
      return T(R(0.5) * std::log1p(x * (2 + x) + y * y), std::atan2(y, 1 + x));
    } else {
      return T(std::log1p(static_cast<Acc<T>>(v)));
    }
  }
};

struct Logistic : TakesFloatComplex {
  template <typename T>
  static T Apply(T v) {
    using A = Acc<T>;
    const A x = static_cast<A>(v);
    return T(A(1) / (A(1) + std::exp(-x)));
  }
};

struct Rsqrt : TakesFloatComplex {
  template <typename T>
  static T Apply(T v) {
    using A = Acc<T>;
    if constexpr (kIsHalfLike<T>) {
      return FromDouble<T>(1.0 / std::sqrt(static_cast<double>(static_cast<float>(v))));
    } else if constexpr (std::is_same_v<T, float>) {
      return static_cast<float>(1.0 / std::sqrt(static_cast<double>(v)));
    } else {
      return T(A(1) / std::sqrt(static_cast<A>(v)));
    }
  }
};

struct Negate : TakesNonBool {
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsInt<T>) {
      return static_cast<T>(U<T>(0) - static_cast<U<T>>(v));
    } else {
      return -v;
    }
  }
};

struct Abs : TakesIntFloat {  // complex abs is its own kernel (real result)
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsInt<T>) {
      if constexpr (std::is_signed_v<T>) {
        return v < 0 ? static_cast<T>(U<T>(0) - static_cast<U<T>>(v)) : v;
      } else {
        return v;
      }
    } else if constexpr (kIsHalfLike<T>) {
      return T(std::fabs(static_cast<float>(v)));
    } else {
      return std::fabs(v);
    }
  }
};

struct Sign : TakesNonBool {
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsInt<T>) {
      if constexpr (std::is_signed_v<T>) {
        return static_cast<T>((v > 0) - (v < 0));
      } else {
        return static_cast<T>(v > 0 ? 1 : 0);
      }
    } else if constexpr (kIsComplex<T>) {
      using R = typename T::value_type;
      if (std::isnan(v.real()) || std::isnan(v.imag())) {
        const R nan = std::numeric_limits<R>::quiet_NaN();
        return T(nan, nan);
      }
      if (v.real() == 0 && v.imag() == 0) return v;
      const R a = std::abs(v);
      return T(v.real() / a, v.imag() / a);
    } else {
      using A = Acc<T>;
      const A x = static_cast<A>(v);
      if (std::isnan(x) || x == 0) return v;
      return T(x > 0 ? A(1) : A(-1));
    }
  }
};

struct Not : TakesIntBool {
  template <typename T>
  static T Apply(T v) {
    if constexpr (kIsBool<T>) {
      return !v;
    } else {
      return static_cast<T>(~v);
    }
  }
};

// Integer ops that depend on the bit width get it through a second parameter.
// The low `bits` of v, unsigned.
template <typename T>
U<T> LowBits(T v, int bits) {
  U<T> u = static_cast<U<T>>(v);
  if (bits < static_cast<int>(8 * sizeof(T))) u &= static_cast<U<T>>((U<T>(1) << bits) - 1);
  return u;
}

struct Popcnt : TakesInt {
  template <typename T>
  static T ApplyBits(T v, int bits) {
    const U<T> u = LowBits(v, bits);
    return static_cast<T>(__builtin_popcountll(static_cast<unsigned long long>(u)));
  }
};

struct Clz : TakesInt {
  template <typename T>
  static T ApplyBits(T v, int bits) {
    const U<T> u = LowBits(v, bits);
    int n = 0;
    for (int b = bits - 1; b >= 0 && !((u >> b) & 1); --b) ++n;
    return static_cast<T>(n);
  }
};

template <typename F, typename = void>
struct HasBits : std::false_type {};
template <typename F>
struct HasBits<F, std::void_t<decltype(F::template ApplyBits<int32_t>(0, 0))>> : std::true_type {};

template <typename T, typename F>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(uint32_t in, uint32_t out, int64_t n, int bits, int sub)
      : in_(in), out_(out), n_(n), bits_(bits), sub_(sub) {}
  Status Run(Frame& f) const override {
    const T* a = Ptr<T>(f, in_);
    T* r = Ptr<T>(f, out_);
    if constexpr (HasBits<F>::value) {
      for (int64_t i = 0; i < n_; ++i) r[i] = F::template ApplyBits<T>(a[i], bits_);
    } else {
      for (int64_t i = 0; i < n_; ++i) r[i] = F::template Apply<T>(a[i]);
    }
    if constexpr (kIsInt<T>) {
      if (sub_)
        for (int64_t i = 0; i < n_; ++i) r[i] = WrapBits(r[i], sub_);
    }
    return Status();
  }

 private:
  uint32_t in_, out_;
  int64_t n_;
  int bits_, sub_;
};

// ---- Binary functors -----------------------------------------------------------------------------

struct Add : TakesAll {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsBool<T>)
      return a || b;
    else if constexpr (kIsInt<T>)
      return static_cast<T>(static_cast<U<T>>(a) + static_cast<U<T>>(b));
    else if constexpr (kIsHalfLike<T>)
      return T(static_cast<float>(a) + static_cast<float>(b));
    else
      return a + b;
  }
};
struct Sub : TakesNonBool {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsInt<T>)
      return static_cast<T>(static_cast<U<T>>(a) - static_cast<U<T>>(b));
    else if constexpr (kIsHalfLike<T>)
      return T(static_cast<float>(a) - static_cast<float>(b));
    else
      return a - b;
  }
};
struct Mul : TakesAll {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsBool<T>)
      return a && b;
    else if constexpr (kIsInt<T>) {
      using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, U<T>>;
      return static_cast<T>(static_cast<W>(static_cast<U<T>>(a)) * static_cast<W>(static_cast<U<T>>(b)));
    } else if constexpr (kIsHalfLike<T>)
      return T(static_cast<float>(a) * static_cast<float>(b));
    else
      return a * b;
  }
};
struct Div : TakesNonBool {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsInt<T>) {
      if (b == 0) return static_cast<T>(-1);  // all bits set, as XLA
      if constexpr (std::is_signed_v<T>) {
        if (a == std::numeric_limits<T>::min() && b == -1) return a;
      }
      return static_cast<T>(a / b);
    } else if constexpr (kIsHalfLike<T>) {
      return T(static_cast<float>(a) / static_cast<float>(b));
    } else {
      return a / b;
    }
  }
};
struct Rem : TakesIntFloat {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsInt<T>) {
      if (b == 0) return a;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return 0;
      }
      return static_cast<T>(a % b);
    } else if constexpr (kIsHalfLike<T>) {
      return T(std::fmod(static_cast<float>(a), static_cast<float>(b)));
    } else {
      return std::fmod(a, b);
    }
  }
};
struct Max : TakesAll {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsBool<T>)
      return a || b;
    else if constexpr (kIsInt<T>)
      return a > b ? a : b;
    else if constexpr (kIsComplex<T>) {
      if (a.real() != b.real()) return a.real() > b.real() ? a : b;
      return a.imag() >= b.imag() ? a : b;
    } else {
      const auto x = static_cast<Acc<T>>(a), y = static_cast<Acc<T>>(b);
      if (std::isnan(x)) return a;
      if (std::isnan(y)) return b;
      if (x == y) return std::signbit(x) ? b : a;
      return x > y ? a : b;
    }
  }
};
struct Min : TakesAll {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsBool<T>)
      return a && b;
    else if constexpr (kIsInt<T>)
      return a < b ? a : b;
    else if constexpr (kIsComplex<T>) {
      if (a.real() != b.real()) return a.real() < b.real() ? a : b;
      return a.imag() <= b.imag() ? a : b;
    } else {
      const auto x = static_cast<Acc<T>>(a), y = static_cast<Acc<T>>(b);
      if (std::isnan(x)) return a;
      if (std::isnan(y)) return b;
      if (x == y) return std::signbit(x) ? a : b;
      return x < y ? a : b;
    }
  }
};
// and, or, xor: logical on i1, bitwise on integers.
template <typename Logical, typename Bitwise>
struct BitwiseOp : TakesIntBool {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsBool<T>)
      return Logical()(a, b);
    else
      return static_cast<T>(Bitwise()(a, b));
  }
};
using And = BitwiseOp<std::logical_and<>, std::bit_and<>>;
using Or = BitwiseOp<std::logical_or<>, std::bit_or<>>;
using Xor = BitwiseOp<std::not_equal_to<>, std::bit_xor<>>;
struct Pow : TakesNonBool {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsInt<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == -1) return (b & 1) ? -1 : 1;
          return 0;
        }
      }
      U<T> base = static_cast<U<T>>(a), r = 1;
      uint64_t e = static_cast<uint64_t>(b);
      while (e) {
        if (e & 1) r = static_cast<U<T>>(Mul::Apply<U<T>>(r, base));
        base = static_cast<U<T>>(Mul::Apply<U<T>>(base, base));
        e >>= 1;
      }
      return static_cast<T>(r);
    } else if constexpr (kIsHalfLike<T>) {
      return FromDouble<T>(
          std::pow(static_cast<double>(static_cast<float>(a)), static_cast<double>(static_cast<float>(b))));
    } else {
      return std::pow(a, b);
    }
  }
};
struct Atan2 : TakesFloatComplex {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsComplex<T>) {
      // atan2(y, x) = -i log((x + i y) / sqrt(x^2 + y^2))
      const T i(0, 1);
      return -i * std::log((b + i * a) / std::sqrt(b * b + a * a));
    } else {
      using A = Acc<T>;
      return T(std::atan2(static_cast<A>(a), static_cast<A>(b)));
    }
  }
};
struct NextAfter : TakesFloat {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (kIsHalfLike<T>) {
      const float x = static_cast<float>(a), y = static_cast<float>(b);
      if (std::isnan(x) || std::isnan(y)) return T(std::numeric_limits<float>::quiet_NaN());
      if (x == y) return b;
      uint16_t bits = Eigen::numext::bit_cast<uint16_t>(a);
      if (x == 0) {
        bits = 1;
        if (y < 0) bits |= 0x8000;
      } else if ((x < y) == (x > 0)) {
        ++bits;
      } else {
        --bits;
      }
      return Eigen::numext::bit_cast<T>(bits);
    } else {
      return std::nextafter(a, b);
    }
  }
};
// Shifts: amounts outside [0, bits) give 0 (left, logical) or the sign fill (arithmetic).
struct Shl : TakesInt {
  template <typename T>
  static T ApplyBits(T a, T b, int bits) {
    if (b < 0 || static_cast<uint64_t>(b) >= static_cast<uint64_t>(bits)) return 0;
    return static_cast<T>(static_cast<U<T>>(a) << b);
  }
};
struct Shrl : TakesInt {
  template <typename T>
  static T ApplyBits(T a, T b, int bits) {
    if (b < 0 || static_cast<uint64_t>(b) >= static_cast<uint64_t>(bits)) return 0;
    return static_cast<T>(LowBits(a, bits) >> b);
  }
};
struct Shra : TakesInt {
  template <typename T>
  static T ApplyBits(T a, T b, int bits) {
    using S = std::make_signed_t<T>;
    S s = static_cast<S>(a);
    if (bits < static_cast<int>(8 * sizeof(T))) s = WrapBits<S>(s, bits);  // sign-extend from the width
    if (b < 0 || static_cast<uint64_t>(b) >= static_cast<uint64_t>(bits)) return static_cast<T>(s < 0 ? -1 : 0);
    return static_cast<T>(s >> b);
  }
};

// chlo.mulhi: the high half of the double-width product (signed or unsigned), as bits of T's width.
struct MulHi : TakesInt {
  template <typename T>
  static T ApplyBits(T a, T b, int bits) {
    __extension__ using Wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return static_cast<T>((static_cast<Wide>(a) * static_cast<Wide>(b)) >> bits);
  }
};

template <typename F, typename = void>
struct HasBits2 : std::false_type {};
template <typename F>
struct HasBits2<F, std::void_t<decltype(F::template ApplyBits<int32_t>(0, 0, 0))>> : std::true_type {};

template <typename T, typename F>
class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(uint32_t a, uint32_t b, uint32_t out, int64_t n, int bits, int sub)
      : a_(a), b_(b), out_(out), n_(n), bits_(bits), sub_(sub) {}
  Status Run(Frame& f) const override {
    const T* a = Ptr<T>(f, a_);
    const T* b = Ptr<T>(f, b_);
    T* r = Ptr<T>(f, out_);
    if constexpr (HasBits2<F>::value) {
      for (int64_t i = 0; i < n_; ++i) r[i] = F::template ApplyBits<T>(a[i], b[i], bits_);
    } else {
      for (int64_t i = 0; i < n_; ++i) r[i] = F::template Apply<T>(a[i], b[i]);
    }
    if constexpr (kIsInt<T>) {
      if (sub_)
        for (int64_t i = 0; i < n_; ++i) r[i] = WrapBits(r[i], sub_);
    }
    return Status();
  }

 private:
  uint32_t a_, b_, out_;
  int64_t n_;
  int bits_, sub_;
};

}  // namespace neuronmem::interp::elementwise
