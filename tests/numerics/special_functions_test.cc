// The CHLO special functions: known values, poles and domain edges, agreement with libm / libstdc++'s special
// functions over sweeps (within a few ulps of the evaluation type), the upcast rule for f16/bf16, next_after's
// bit stepping, and the array entry points.
#include "numerics/special_functions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "numerics/float_formats.h"
#include "ulp_distance.h"

namespace neuronmem::numerics {
namespace {

using E = ElementType;
using U = ChloUnaryOp;
using B = ChloBinaryOp;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

double Un(U op, E t, double x) { return EvalChloUnary(op, t, x); }
double Bin(B op, E t, double x, double y) { return EvalChloBinary(op, t, x, y); }
float F(double d) { return static_cast<float>(d); }

double RoundTo(E t, double d) {
  if (t == E::kF64) return d;
  if (t == E::kF32) return F(d);
  return DecodeFloatToDouble(*SmallFloatFormat(t), EncodeFloat(*SmallFloatFormat(t), d));
}

// Every finite value of a 16-bit type in [lo, hi].
std::vector<double> All16(E t, double lo, double hi) {
  std::vector<double> out;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const double v = DecodeFloatToDouble(*SmallFloatFormat(t), b);
    if (std::isfinite(v) && v >= lo && v <= hi) out.push_back(v);
  }
  return out;
}

// n f32 values spread over [lo, hi].
std::vector<double> Sweep32(double lo, double hi, int n = 4001) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(F(lo + (hi - lo) * i / (n - 1)));
  return out;
}

TEST(SpecialFunctions, NamesRoundTrip) {
  for (int i = 0; i <= int(U::kTan); ++i) {
    ChloUnaryOp op;
    ASSERT_TRUE(ChloUnaryOpFromName(ChloOpName(U(i)), &op)) << i;
    EXPECT_EQ(op, U(i));
  }
  for (int i = 0; i <= int(B::kNextAfter); ++i) {
    ChloBinaryOp op;
    ASSERT_TRUE(ChloBinaryOpFromName(ChloOpName(B(i)), &op)) << i;
    EXPECT_EQ(op, B(i));
  }
  ChloUnaryOp u;
  EXPECT_TRUE(ChloUnaryOpFromName("chlo.erf_inv", &u));
  EXPECT_EQ(u, U::kErfInv);
  EXPECT_FALSE(ChloUnaryOpFromName("chlo.top_k", &u));
  EXPECT_FALSE(ChloUnaryOpFromName("stablehlo.exponential", &u));
}

TEST(SpecialFunctions, LgammaKnownValuesAndPoles) {
  EXPECT_NEAR(Un(U::kLgamma, E::kF64, 0.5), 0.5 * std::log(kPi), 1e-14);
  EXPECT_NEAR(Un(U::kLgamma, E::kF64, 1.0), 0.0, 1e-14);
  EXPECT_NEAR(Un(U::kLgamma, E::kF64, 2.0), 0.0, 1e-14);
  EXPECT_NEAR(Un(U::kLgamma, E::kF64, 10.0), std::log(362880.0), 1e-12);
  EXPECT_NEAR(Un(U::kLgamma, E::kF64, -0.5), std::log(2 * std::sqrt(kPi)), 1e-13);
  for (double pole : {0.0, -1.0, -2.0, -7.0}) {
    EXPECT_EQ(Un(U::kLgamma, E::kF64, pole), kInf) << pole;
    EXPECT_EQ(Un(U::kLgamma, E::kF32, pole), kInf) << pole;
  }
  EXPECT_EQ(Un(U::kLgamma, E::kF64, kInf), kInf);
  EXPECT_EQ(Un(U::kLgamma, E::kF64, -kInf), kInf);
  EXPECT_TRUE(std::isnan(Un(U::kLgamma, E::kF32, std::nan(""))));
  for (double x : Sweep32(-20.25, 40.0)) {
    if (x <= 0 && x == std::floor(x)) continue;
    const double want = std::lgamma(x);
    EXPECT_NEAR(Un(U::kLgamma, E::kF64, x), want, 1e-12 * std::max(1.0, std::fabs(want))) << x;
    EXPECT_NEAR(Un(U::kLgamma, E::kF32, x), want, 2e-5 * std::max(1.0, std::fabs(want))) << x;
  }
}

TEST(SpecialFunctions, DigammaKnownValuesAndPoles) {
  const double euler = 0.57721566490153286061;
  EXPECT_NEAR(Un(U::kDigamma, E::kF64, 1.0), -euler, 1e-14);
  EXPECT_NEAR(Un(U::kDigamma, E::kF64, 0.5), -euler - 2 * std::log(2.0), 1e-14);
  EXPECT_NEAR(Un(U::kDigamma, E::kF64, 10.0), 2.251752589066721, 1e-13);
  EXPECT_NEAR(Un(U::kDigamma, E::kF64, -0.5), 0.03648997397857652, 1e-13);
  EXPECT_EQ(Un(U::kDigamma, E::kF64, 0.0), -kInf);
  EXPECT_EQ(Un(U::kDigamma, E::kF32, 0.0), -kInf);
  EXPECT_TRUE(std::isnan(Un(U::kDigamma, E::kF64, -1.0)));
  EXPECT_TRUE(std::isnan(Un(U::kDigamma, E::kF32, -3.0)));
  // Recurrence digamma(x + 1) = digamma(x) + 1 / x.
  for (double x : Sweep32(0.1, 30.0, 501)) {
    EXPECT_NEAR(Un(U::kDigamma, E::kF64, x + 1), Un(U::kDigamma, E::kF64, x) + 1 / x, 1e-12 * (1 + 1 / x)) << x;
  }
}

TEST(SpecialFunctions, ErfErfcAgainstLibm) {
  // Sweeps against libm: HyperbolicInverseTrigonometricAndErfAgainstLibm.
  EXPECT_EQ(Un(U::kErf, E::kF32, kInf), 1.0);
  EXPECT_EQ(Un(U::kErf, E::kF64, -kInf), -1.0);
  EXPECT_EQ(Un(U::kErfc, E::kF64, 30.0), 0.0);  // clamped below exp underflow
  EXPECT_EQ(Un(U::kErfc, E::kF64, -30.0), 2.0);
  EXPECT_EQ(Un(U::kErfc, E::kF32, 12.0), 0.0);
  EXPECT_NEAR(Un(U::kErf, E::kF64, 0.5), 0.5204998778130465, 1e-16);
  EXPECT_NEAR(Un(U::kErfc, E::kF64, 2.0), 0.004677734981047266, 1e-18);
}

TEST(SpecialFunctions, ErfInvInvertsErf) {
  EXPECT_NEAR(Un(U::kErfInv, E::kF64, 0.5), 0.4769362762044699, 1e-15);
  EXPECT_NEAR(Un(U::kErfInv, E::kF32, 0.5), 0.4769362762044699, 1e-6);
  EXPECT_EQ(Un(U::kErfInv, E::kF64, 1.0), kInf);
  EXPECT_EQ(Un(U::kErfInv, E::kF64, -1.0), -kInf);
  EXPECT_EQ(Un(U::kErfInv, E::kF32, -1.0), -kInf);
  EXPECT_TRUE(std::isnan(Un(U::kErfInv, E::kF64, 1.5)));
  EXPECT_EQ(Un(U::kErfInv, E::kF64, 0.0), 0.0);
  for (double y : Sweep32(-0.999, 0.999, 2001)) {
    EXPECT_NEAR(std::erf(Un(U::kErfInv, E::kF64, y)), y, 4e-16) << y;
    EXPECT_NEAR(std::erf(Un(U::kErfInv, E::kF32, y)), y, 4e-7) << y;
  }
  // The f64 branches for w >= 6.25 and w >= 16 (y within 1e-3 and 1e-7 of 1).
  for (double y : {0.9999, 0.9999999, 0.99999999999, -0.999999999999999}) {
    EXPECT_NEAR(std::erfc(Un(U::kErfInv, E::kF64, y)), 1 - y, 1e-9 * (1 - y)) << y;
  }
}

TEST(SpecialFunctions, BesselI1eAgainstLibstdcxx) {
  for (double x : Sweep32(-40.0, 40.0)) {
    const double ax = std::fabs(x);
    const double want = ax == 0 ? 0.0 : std::copysign(std::exp(-ax) * std::cyl_bessel_i(1.0, ax), x);
    EXPECT_NEAR(Un(U::kBesselI1e, E::kF64, x), want, 1e-15) << x;
    EXPECT_NEAR(Un(U::kBesselI1e, E::kF32, x), want, 2e-7) << x;
  }
  EXPECT_NEAR(Un(U::kBesselI1e, E::kF64, 1.0), 0.20791041534970844, 1e-16);
  EXPECT_EQ(Un(U::kBesselI1e, E::kF64, 0.0), 0.0);
}

TEST(SpecialFunctions, HyperbolicInverseTrigonometricAndErfAgainstLibm) {
  // Ulp bounds are the decompositions' own errors (measured): cosh and sinh lose |x| * eps in x + log(1/2);
  // erfc's 1 - erf(x) cancels near |x| = 1; f32 erf is Eigen's rational approximation.
  struct Case {
    U op;
    double (*ref)(double);
    double lo, hi;
    int64_t ulp64, ulp32, ulp16;
  };
  const Case cases[] = {
      {U::kCosh, [](double x) { return std::cosh(x); }, -88.0, 88.0, 20, 26, 1},
      {U::kSinh, [](double x) { return std::sinh(x); }, -88.0, 88.0, 20, 26, 1},
      {U::kAcos, [](double x) { return std::acos(x); }, -0.9999, 1.0, 2, 2, 2},
      {U::kAsin, [](double x) { return std::asin(x); }, -1.0, 1.0, 2, 2, 2},
      {U::kAcosh, [](double x) { return std::acosh(x); }, 1.0, 1e30, 2, 2, 2},
      {U::kAsinh, [](double x) { return std::asinh(x); }, -1e30, 1e30, 2, 2, 2},
      {U::kAtan, [](double x) { return std::atan(x); }, -100.0, 100.0, 1, 1, 1},
      {U::kAtanh, [](double x) { return std::atanh(x); }, -0.999, 0.999, 2, 2, 2},
      {U::kTan, [](double x) { return std::tan(x); }, -1.5, 1.5, 2, 2, 2},
      {U::kErf, [](double x) { return std::erf(x); }, -6.0, 6.0, 2, 6, 1},
      {U::kErfc, [](double x) { return std::erfc(x); }, -6.0, 3.5, 10, 9, 1},
  };
  for (const Case& c : cases) {
    for (double x : Sweep32(c.lo, c.hi)) {
      const double want = c.ref(x);
      EXPECT_LE(UlpDistance(E::kF64, Un(c.op, E::kF64, x), want), c.ulp64) << ChloOpName(c.op) << " " << x;
      EXPECT_LE(UlpDistance(E::kF32, Un(c.op, E::kF32, x), F(want)), c.ulp32) << ChloOpName(c.op) << " " << x;
    }
    // Every f16 and bf16 value in range, evaluated in the type (or upcast to f32).
    for (E t : {E::kF16, E::kBF16}) {
      for (double x : All16(t, std::max(c.lo, -60.0), std::min(c.hi, 60.0))) {
        const double want = RoundTo(t, c.ref(x));
        if (std::isinf(want)) continue;
        EXPECT_LE(UlpDistance(t, Un(c.op, t, x), want), c.ulp16)
            << ChloOpName(c.op) << " " << ElementTypeName(t) << " " << x;
      }
    }
  }
  // acos(-1): the decomposition's 2 * atan2(sqrt((1 - x) * (1 + x)), 1 + x) is 2 * atan2(+0, +0) = 0 there.
  EXPECT_EQ(Un(U::kAcos, E::kF32, -1.0), 0.0);
  EXPECT_EQ(Un(U::kAcos, E::kF64, -1.0), 0.0);
  EXPECT_EQ(Un(U::kAcos, E::kF32, 1.0), 0.0);
  EXPECT_TRUE(std::isnan(Un(U::kAtanh, E::kF32, 1.5)));
  EXPECT_EQ(Un(U::kAtanh, E::kF64, 1.0), kInf);
  EXPECT_TRUE(std::isnan(Un(U::kAcosh, E::kF32, 0.5)));
  EXPECT_NEAR(Un(U::kAcosh, E::kF64, 1e308), std::log(2.0) + std::log(1e308), 1e-12);  // the overflow branch
  EXPECT_EQ(Un(U::kCosh, E::kF32, 100.0), kInf);
  EXPECT_EQ(Un(U::kSinh, E::kF32, -100.0), -kInf);
}

TEST(SpecialFunctions, NarrowTypesUpcastWhereTheLegalizationDoes) {
  // lgamma, digamma, erf, erfc, erf_inv, bessel_i1e, cosh, sinh: computed in f32, rounded once.
  for (E t : {E::kF16, E::kBF16}) {
    for (double x : All16(t, -10.0, 10.0)) {
      for (U op : {U::kLgamma, U::kDigamma, U::kErf, U::kErfc, U::kBesselI1e, U::kCosh, U::kSinh}) {
        const double via_f32 = RoundTo(t, Un(op, E::kF32, x));
        const double got = Un(op, t, x);
        EXPECT_TRUE(got == via_f32 || (std::isnan(got) && std::isnan(via_f32))) << ChloOpName(op) << " " << x;
      }
    }
  }
  // tan evaluates in the type: sin and cos are each rounded to f16 before the division.
  const double x = 1.5;  // exactly representable in f16
  const double sin16 = RoundTo(E::kF16, std::sin(x)), cos16 = RoundTo(E::kF16, std::cos(x));
  EXPECT_EQ(Un(U::kTan, E::kF16, x), RoundTo(E::kF16, sin16 / cos16));
}

TEST(SpecialFunctions, ZetaAndPolygamma) {
  EXPECT_NEAR(Bin(B::kZeta, E::kF64, 2.0, 1.0), kPi * kPi / 6, 1e-14);
  EXPECT_NEAR(Bin(B::kZeta, E::kF64, 4.0, 1.0), std::pow(kPi, 4) / 90, 1e-14);
  EXPECT_NEAR(Bin(B::kZeta, E::kF32, 2.0, 1.0), kPi * kPi / 6, 1e-6);
  for (double s : Sweep32(1.05, 30.0, 300)) {
    EXPECT_NEAR(Bin(B::kZeta, E::kF64, s, 1.0), std::riemann_zeta(s), 1e-13 * std::riemann_zeta(s)) << s;
  }
  // zeta(s, q) - zeta(s, q + 1) = q^-s.
  for (double q : {0.5, 1.5, 3.25, 10.0}) {
    EXPECT_NEAR(Bin(B::kZeta, E::kF64, 3.0, q) - Bin(B::kZeta, E::kF64, 3.0, q + 1), std::pow(q, -3.0), 1e-13);
  }
  EXPECT_EQ(Bin(B::kZeta, E::kF64, 1.0, 2.0), kInf);
  EXPECT_TRUE(std::isnan(Bin(B::kZeta, E::kF64, 0.5, 2.0)));
  EXPECT_TRUE(std::isnan(Bin(B::kZeta, E::kF64, 2.5, -1.5)));  // q <= 0 needs an integer x
  EXPECT_EQ(Bin(B::kZeta, E::kF64, 2.0, -2.0), kInf);          // pole, even x
  EXPECT_TRUE(std::isnan(Bin(B::kZeta, E::kF64, 3.0, -2.0)));  // pole, odd x

  EXPECT_NEAR(Bin(B::kPolygamma, E::kF64, 1.0, 1.0), kPi * kPi / 6, 1e-13);
  EXPECT_NEAR(Bin(B::kPolygamma, E::kF64, 2.0, 1.0), -2 * 1.2020569031595942, 1e-12);
  EXPECT_NEAR(Bin(B::kPolygamma, E::kF64, 3.0, 0.5), std::pow(kPi, 4), 1e-9);
  EXPECT_EQ(Bin(B::kPolygamma, E::kF64, 0.0, 2.5), Un(U::kDigamma, E::kF64, 2.5));
  EXPECT_EQ(Bin(B::kPolygamma, E::kF32, 0.0, 2.5), Un(U::kDigamma, E::kF32, 2.5));
  EXPECT_TRUE(std::isnan(Bin(B::kPolygamma, E::kF64, -1.0, 2.0)));
  EXPECT_TRUE(std::isnan(Bin(B::kPolygamma, E::kF64, 1.5, 2.0)));
  EXPECT_NEAR(Bin(B::kPolygamma, E::kBF16, 1.0, 1.0), kPi * kPi / 6, 1e-2);
}

TEST(SpecialFunctions, NextAfterStepsOneBitPattern) {
  EXPECT_EQ(Bin(B::kNextAfter, E::kF32, 1.0, 2.0), 1.0 + 0x1p-23);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF32, 1.0, 0.0), 1.0 - 0x1p-24);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF64, 1.0, 2.0), 1.0 + 0x1p-52);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF64, -1.0, -2.0), -1.0 - 0x1p-52);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF64, -1.0, 5.0), -1.0 + 0x1p-53);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF16, 1.0, 2.0), 1.0 + 0x1p-10);
  EXPECT_EQ(Bin(B::kNextAfter, E::kBF16, 1.0, 0.0), 1.0 - 0x1p-8);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF32, 0.0, -1.0), -double(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(Bin(B::kNextAfter, E::kF16, 0.0, 1.0), 0x1p-24);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF32, 65504.0, kInf), 65504.0 + 0x1p-8);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF16, 65504.0, kInf), kInf);
  EXPECT_EQ(Bin(B::kNextAfter, E::kF32, 3.0, 3.0), 3.0);
  const double neg_zero = Bin(B::kNextAfter, E::kF32, 0.0, -0.0);  // x == y: the result is y
  EXPECT_TRUE(neg_zero == 0 && std::signbit(neg_zero));
  EXPECT_TRUE(std::isnan(Bin(B::kNextAfter, E::kF32, std::nan(""), 1.0)));
  EXPECT_TRUE(std::isnan(Bin(B::kNextAfter, E::kBF16, 1.0, std::nan(""))));
}

TEST(SpecialFunctions, ArraysInBufferLayout) {
  // bf16: 0.5, 1.0, -2.0 as bit patterns.
  const std::vector<uint16_t> in = {FloatToBf16(0.5f), FloatToBf16(1.0f), FloatToBf16(-2.0f)};
  std::vector<uint16_t> out(3);
  ASSERT_FALSE(ApplyChloUnary(U::kLgamma, E::kBF16, in.data(), out.data(), 3));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i], FloatToBf16(F(Un(U::kLgamma, E::kBF16, Bf16ToFloat(in[i]))))) << i;
  }
  EXPECT_EQ(Bf16ToFloat(out[2]), std::numeric_limits<float>::infinity());

  const std::vector<float> x = {1.0f, 2.0f}, y = {2.0f, 1.0f};
  std::vector<float> r(2);
  ASSERT_FALSE(ApplyChloBinary(B::kNextAfter, E::kF32, x.data(), y.data(), r.data(), 2));
  EXPECT_EQ(r[0], std::nextafter(1.0f, 2.0f));
  EXPECT_EQ(r[1], std::nextafter(2.0f, 1.0f));
  // In place.
  std::vector<double> d = {0.25, 0.75};
  ASSERT_FALSE(ApplyChloUnary(U::kErf, E::kF64, d.data(), d.data(), 2));
  EXPECT_NEAR(d[0], std::erf(0.25), 1e-16);
  EXPECT_NEAR(d[1], std::erf(0.75), 1e-16);

  const int32_t ints[1] = {1};
  int32_t iout[1] = {7};
  Status s = ApplyChloUnary(U::kErf, E::kS32, ints, iout, 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(std::string(s->message).find("chlo.erf"), std::string::npos) << s->message;
  EXPECT_EQ(iout[0], 7);
  EXPECT_FALSE(ChloSupportsElementType(E::kC64));
  EXPECT_TRUE(ChloSupportsElementType(E::kBF16));
}

}  // namespace
}  // namespace neuronmem::numerics
