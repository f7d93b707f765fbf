// Small float formats: every bit pattern of every format, the rounding of every halfway point, overflow,
// underflow and the special values of each NaN/inf convention (APFloat's semantics, ml_dtypes where APFloat
// leaves a case undefined).
#include "numerics/float_formats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace neuronmem::numerics {
namespace {

using E = ElementType;

const std::vector<E>& AllTypes() {
  static const std::vector<E> types = {E::kF16,        E::kBF16,          E::kF8E3M4,  E::kF8E4M3,     E::kF8E4M3FN,
                                       E::kF8E4M3FNUZ, E::kF8E4M3B11FNUZ, E::kF8E5M2,  E::kF8E5M2FNUZ, E::kF8E8M0FNU,
                                       E::kF4E2M1FN,   E::kF6E2M3FN,      E::kF6E3M2FN};
  return types;
}

const FloatFormat& Fmt(E t) {
  const FloatFormat* f = SmallFloatFormat(t);
  EXPECT_NE(f, nullptr) << ElementTypeName(t);
  return *f;
}

uint32_t Enc(E t, double x) { return EncodeFloat(Fmt(t), x); }
double Dec(E t, uint32_t b) { return DecodeFloatToDouble(Fmt(t), b); }

TEST(FloatFormats, OnlySmallFloatTypesHaveAFormat) {
  for (E t : AllTypes()) {
    ASSERT_NE(SmallFloatFormat(t), nullptr) << ElementTypeName(t);
    EXPECT_EQ(SmallFloatFormat(t)->type, t);
    EXPECT_EQ(SmallFloatFormat(t)->bits, ElementInfo(t).bits) << ElementTypeName(t);
  }
  for (E t : {E::kF32, E::kF64, E::kS8, E::kC64, E::kPred, E::kInvalid}) EXPECT_EQ(SmallFloatFormat(t), nullptr);
}

// Every pattern decodes (float and double agree exactly), and re-encodes to itself; NaN patterns re-encode
// to a NaN pattern (IEEE types: the same pattern with the quiet bit set, as APFloat quietens).
TEST(FloatFormats, EveryBitPatternRoundTrips) {
  for (E t : AllTypes()) {
    const FloatFormat& f = Fmt(t);
    const uint32_t count = 1u << f.bits;
    int nans = 0;
    for (uint32_t b = 0; b < count; ++b) {
      const double d = DecodeFloatToDouble(f, b);
      const float x = DecodeFloat(f, b);
      if (std::isnan(d)) {
        ++nans;
        ASSERT_TRUE(std::isnan(x));
        const uint32_t back = EncodeFloat(f, d);
        ASSERT_TRUE(std::isnan(DecodeFloatToDouble(f, back))) << ElementTypeName(t) << " " << b;
        if (f.non_finite == NonFinite::kIeee) {
          ASSERT_EQ(back, b | (1u << (f.mantissa_bits - 1))) << ElementTypeName(t) << " " << b;
        } else {
          ASSERT_EQ(back, b) << ElementTypeName(t) << " " << b;  // the format's only NaN patterns
        }
        continue;
      }
      ASSERT_EQ(static_cast<double>(x), d) << ElementTypeName(t) << " " << b;
      ASSERT_EQ(EncodeFloat(f, d), b) << ElementTypeName(t) << " pattern " << b << " value " << d;
      ASSERT_EQ(EncodeFloat(f, x), b) << ElementTypeName(t) << " " << b;
      ASSERT_EQ(std::signbit(d), f.has_sign && (b >> (f.bits - 1)) != 0) << ElementTypeName(t) << " " << b;
    }
    switch (f.non_finite) {
      case NonFinite::kIeee:  // exponent all ones, mantissa non-zero, both signs
        EXPECT_EQ(nans, 2 * ((1 << f.mantissa_bits) - 1)) << ElementTypeName(t);
        break;
      case NonFinite::kNanAllOnes: EXPECT_EQ(nans, f.has_sign ? 2 : 1) << ElementTypeName(t); break;
      case NonFinite::kNanNegZero: EXPECT_EQ(nans, 1) << ElementTypeName(t); break;
      case NonFinite::kFiniteOnly: EXPECT_EQ(nans, 0) << ElementTypeName(t); break;
    }
  }
}

// The finite values of a format in increasing order (with +0 once).
std::vector<double> FiniteValues(const FloatFormat& f) {
  std::vector<double> v;
  for (uint32_t b = 0; b < (1u << f.bits); ++b) {
    const double d = DecodeFloatToDouble(f, b);
    if (std::isfinite(d) && !(d == 0 && std::signbit(d))) v.push_back(d);
  }
  std::sort(v.begin(), v.end());
  return v;
}

// Between every two neighbouring finite values: the midpoint rounds to the one with the even pattern
// (f8E8M0FNU: up, see the header), a hair either side rounds to the nearer one.
TEST(FloatFormats, EveryHalfwayCaseRoundsToEven) {
  for (E t : AllTypes()) {
    const FloatFormat& f = Fmt(t);
    const std::vector<double> v = FiniteValues(f);
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      const double lo = v[i], hi = v[i + 1];
      const double mid = (lo + hi) / 2;  // exact: both have few significant bits
      const uint32_t blo = EncodeFloat(f, lo);
      const uint32_t bhi = EncodeFloat(f, hi == 0 ? -0.0 : hi);  // negative values round up to -0
      uint32_t expect_mid = (blo & 1) == 0 ? blo : bhi;
      if (!f.has_denormals) expect_mid = bhi;
      if (lo == 0 && !f.has_zero) continue;
      ASSERT_EQ(EncodeFloat(f, mid), expect_mid) << ElementTypeName(t) << " between " << lo << " and " << hi;
      ASSERT_EQ(EncodeFloat(f, std::nextafter(mid, lo)), blo) << ElementTypeName(t) << " " << mid;
      ASSERT_EQ(EncodeFloat(f, std::nextafter(mid, hi)), bhi) << ElementTypeName(t) << " " << mid;
    }
  }
}

TEST(FloatFormats, KnownEncodings) {
  EXPECT_EQ(Enc(E::kF16, 1.0), 0x3C00u);
  EXPECT_EQ(Enc(E::kF16, 65504.0), 0x7BFFu);
  EXPECT_EQ(Enc(E::kF16, 0x1p-24), 0x0001u);
  EXPECT_EQ(Enc(E::kF16, -2.0), 0xC000u);
  EXPECT_EQ(Enc(E::kBF16, 1.0), 0x3F80u);
  EXPECT_EQ(Enc(E::kBF16, -2.5), 0xC020u);
  EXPECT_EQ(Enc(E::kF8E4M3FN, 448.0), 0x7Eu);
  EXPECT_EQ(Enc(E::kF8E4M3FN, -448.0), 0xFEu);
  EXPECT_EQ(Enc(E::kF8E4M3FN, 0x1p-9), 0x01u);
  EXPECT_EQ(Enc(E::kF8E4M3FNUZ, 240.0), 0x7Fu);
  EXPECT_EQ(Enc(E::kF8E4M3FNUZ, 0x1p-10), 0x01u);
  EXPECT_EQ(Enc(E::kF8E4M3B11FNUZ, 30.0), 0x7Fu);
  EXPECT_EQ(Enc(E::kF8E4M3B11FNUZ, 1.0), 0x58u);
  EXPECT_EQ(Enc(E::kF8E4M3, 240.0), 0x77u);
  EXPECT_EQ(Enc(E::kF8E4M3, 1.0), 0x38u);
  EXPECT_EQ(Enc(E::kF8E3M4, 15.5), 0x6Fu);
  EXPECT_EQ(Enc(E::kF8E3M4, 1.0), 0x30u);
  EXPECT_EQ(Enc(E::kF8E5M2, 57344.0), 0x7Bu);
  EXPECT_EQ(Enc(E::kF8E5M2, 1.0), 0x3Cu);
  EXPECT_EQ(Enc(E::kF8E5M2FNUZ, 57344.0), 0x7Fu);
  EXPECT_EQ(Enc(E::kF8E5M2FNUZ, 1.0), 0x40u);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, 1.0), 0x7Fu);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, 0x1p127), 0xFEu);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, 0x1p-127), 0x00u);
  EXPECT_EQ(Enc(E::kF6E3M2FN, 28.0), 0x1Fu);
  EXPECT_EQ(Enc(E::kF6E3M2FN, -0.0625), 0x21u);  // smallest denormal 2^-4, negative
  EXPECT_EQ(Enc(E::kF6E2M3FN, 7.5), 0x1Fu);
  EXPECT_EQ(Enc(E::kF6E2M3FN, 0.125), 0x01u);
  EXPECT_EQ(Enc(E::kF4E2M1FN, 6.0), 0x7u);
  EXPECT_EQ(Enc(E::kF4E2M1FN, -0.5), 0x9u);
  EXPECT_EQ(Dec(E::kF4E2M1FN, 0xF), -6.0);
  EXPECT_EQ(Dec(E::kF8E8M0FNU, 0x00), 0x1p-127);
  EXPECT_EQ(DecodeFloat(Fmt(E::kF8E8M0FNU), 0x00), 0x1p-127f);
}

TEST(FloatFormats, OverflowGivesInfNanOrSaturates) {
  const double inf = std::numeric_limits<double>::infinity();
  // IEEE types: inf.
  EXPECT_EQ(Enc(E::kF16, 65520.0), 0x7C00u);  // halfway to 2^16 ties away from the odd 0x7BFF
  EXPECT_EQ(Enc(E::kF16, 65519.99), 0x7BFFu);
  EXPECT_EQ(Enc(E::kF16, -1e300), 0xFC00u);
  EXPECT_EQ(Enc(E::kBF16, 1e300), 0x7F80u);
  EXPECT_EQ(Enc(E::kF8E5M2, 61440.0), 0x7Cu);
  EXPECT_EQ(Enc(E::kF8E5M2, 61439.0), 0x7Bu);
  EXPECT_EQ(Enc(E::kF8E4M3, 248.0), 0x78u);
  EXPECT_EQ(Enc(E::kF8E3M4, -inf), 0xF0u);
  // NaN-only types: NaN (f8E4M3FN keeps the sign).
  EXPECT_EQ(Enc(E::kF8E4M3FN, 464.0), 0x7Eu);  // tie between 448 (even) and the NaN pattern
  EXPECT_EQ(Enc(E::kF8E4M3FN, 464.01), 0x7Fu);
  EXPECT_EQ(Enc(E::kF8E4M3FN, -480.0), 0xFFu);
  EXPECT_EQ(Enc(E::kF8E4M3FN, inf), 0x7Fu);
  EXPECT_EQ(Enc(E::kF8E4M3FNUZ, 248.0), 0x80u);
  EXPECT_EQ(Enc(E::kF8E4M3FNUZ, -inf), 0x80u);
  EXPECT_EQ(Enc(E::kF8E4M3B11FNUZ, 31.0), 0x80u);
  EXPECT_EQ(Enc(E::kF8E5M2FNUZ, 1e10), 0x80u);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, 0x1p128), 0xFFu);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, inf), 0xFFu);
  // Finite-only types: the largest finite value.
  EXPECT_EQ(Enc(E::kF4E2M1FN, 7.0), 0x7u);
  EXPECT_EQ(Enc(E::kF4E2M1FN, -1e30), 0xFu);
  EXPECT_EQ(Enc(E::kF4E2M1FN, inf), 0x7u);
  EXPECT_EQ(Enc(E::kF6E2M3FN, 100.0), 0x1Fu);
  EXPECT_EQ(Enc(E::kF6E3M2FN, -inf), 0x3Fu);
}

TEST(FloatFormats, UnderflowAndZeros) {
  EXPECT_EQ(Enc(E::kF16, 0x1p-25), 0x0000u);  // tie with 2^-24 goes to even 0
  EXPECT_EQ(Enc(E::kF16, std::nextafter(0x1p-25, 1.0)), 0x0001u);
  EXPECT_EQ(Enc(E::kF16, -0x1p-30), 0x8000u);  // underflow keeps the sign
  EXPECT_EQ(Enc(E::kF16, -0.0), 0x8000u);
  EXPECT_EQ(Enc(E::kBF16, 0x1p-140), 0x0000u);
  EXPECT_EQ(Enc(E::kBF16, 0x1p-133), 0x0001u);  // smallest bf16 denormal
  EXPECT_EQ(Enc(E::kF8E4M3FN, -0.0), 0x80u);
  EXPECT_EQ(Enc(E::kF8E4M3FN, -0x1p-11), 0x80u);
  // FNUZ: no negative zero (that pattern is NaN).
  EXPECT_EQ(Enc(E::kF8E4M3FNUZ, -0.0), 0x00u);
  EXPECT_EQ(Enc(E::kF8E4M3FNUZ, -0x1p-12), 0x00u);
  EXPECT_EQ(Enc(E::kF8E5M2FNUZ, -0.0), 0x00u);
  EXPECT_EQ(Enc(E::kF8E4M3B11FNUZ, -0x1p-20), 0x00u);
  // E8M0: no zero; everything at or below 2^-127 (after rounding) is the all-zero pattern.
  EXPECT_EQ(Enc(E::kF8E8M0FNU, 0.0), 0x00u);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, -0.0), 0x00u);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, 0x1p-200), 0x00u);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, 1.5), 0x80u);  // ties round up
  EXPECT_EQ(Enc(E::kF8E8M0FNU, 1.49), 0x7Fu);
  EXPECT_EQ(Enc(E::kF6E2M3FN, -0x1p-5), 0x20u);
  EXPECT_EQ(Enc(E::kF4E2M1FN, 0.25), 0x0u);  // tie between 0 and 0.5
  EXPECT_EQ(Enc(E::kF4E2M1FN, 0.26), 0x1u);
}

TEST(FloatFormats, NanInputs) {
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  const double snan = std::numeric_limits<double>::signaling_NaN();
  EXPECT_EQ(Enc(E::kF16, qnan), 0x7E00u);
  EXPECT_EQ(Enc(E::kF16, -qnan), 0xFE00u);
  EXPECT_EQ(Enc(E::kF16, snan), 0x7F00u);  // quietened, payload bit 50 kept as bit 8
  EXPECT_EQ(Enc(E::kBF16, qnan), 0x7FC0u);
  EXPECT_EQ(Enc(E::kF8E5M2, -qnan), 0xFEu);
  EXPECT_EQ(Enc(E::kF8E4M3, qnan), 0x7Cu);
  EXPECT_EQ(Enc(E::kF8E3M4, qnan), 0x78u);
  EXPECT_EQ(Enc(E::kF8E4M3FN, qnan), 0x7Fu);
  EXPECT_EQ(Enc(E::kF8E4M3FN, -qnan), 0xFFu);
  EXPECT_EQ(Enc(E::kF8E4M3FNUZ, qnan), 0x80u);
  EXPECT_EQ(Enc(E::kF8E5M2FNUZ, -qnan), 0x80u);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, qnan), 0xFFu);
  EXPECT_EQ(Enc(E::kF8E8M0FNU, -1.0), 0xFFu);  // no sign: negative is NaN
  EXPECT_EQ(Enc(E::kF4E2M1FN, qnan), 0x8u);    // no NaN: -0
  EXPECT_EQ(Enc(E::kF6E2M3FN, qnan), 0x20u);
  EXPECT_EQ(Enc(E::kF6E3M2FN, qnan), 0x20u);
  // Payload: the top fraction bits survive.
  uint64_t payload_bits = 0x7FF8000000000000ull | (1ull << 50);
  double payload;
  std::memcpy(&payload, &payload_bits, 8);
  EXPECT_EQ(Enc(E::kF16, payload), 0x7F00u);
}

// Rounding once from double differs from rounding through float: 1 + 2^-8 + 2^-30 is above the bf16 tie,
// but as a float it is exactly the tie.
TEST(FloatFormats, DoubleRoundsOnce) {
  const double x = 1.0 + 0x1p-8 + 0x1p-30;
  EXPECT_EQ(Enc(E::kBF16, x), 0x3F81u);
  EXPECT_EQ(FloatToBf16(static_cast<float>(x)), 0x3F80u);
  const double y = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(Enc(E::kF16, y), 0x3C01u);
  EXPECT_EQ(FloatToHalf(static_cast<float>(y)), 0x3C00u);
}

// Equal values of equal sign, or two NaNs of equal sign.
bool Same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// The 16-bit fast paths agree with the generic encoder: every half/bf16 value, the midpoints around each,
// their neighbouring floats, and a stride over all floats.
TEST(FloatFormats, FastPathsMatchGeneric) {
  const FloatFormat& h = Fmt(E::kF16);
  const FloatFormat& b = Fmt(E::kBF16);
  auto check = [&](float x) {
    ASSERT_EQ(FloatToHalf(x), EncodeFloat(h, x)) << x;
    ASSERT_EQ(FloatToBf16(x), EncodeFloat(b, x)) << x;
  };
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float hv = HalfToFloat(static_cast<uint16_t>(bits));
    const float bv = Bf16ToFloat(static_cast<uint16_t>(bits));
    ASSERT_TRUE(Same(hv, DecodeFloatToDouble(h, bits))) << bits;
    ASSERT_TRUE(Same(bv, DecodeFloatToDouble(b, bits))) << bits;
    ASSERT_TRUE(Same(hv, DecodeFloat(h, bits))) << bits;
    ASSERT_TRUE(Same(bv, DecodeFloat(b, bits))) << bits;
    for (float v : {hv, bv}) {
      if (!std::isfinite(v)) continue;
      check(v);
      check(std::nextafter(v, 1e30f));
      check(std::nextafter(v, -1e30f));
    }
    if (std::isfinite(hv)) {
      const float next = HalfToFloat(static_cast<uint16_t>(bits + 1));
      if (std::isfinite(next) && (bits & 0x7FFF) != 0x7BFF) {
        const float mid = static_cast<float>((static_cast<double>(hv) + next) / 2);
        check(mid);
        check(std::nextafter(mid, 1e30f));
        check(std::nextafter(mid, -1e30f));
      }
    }
  }
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 1999) {
    float x;
    const uint32_t b32 = static_cast<uint32_t>(bits);
    std::memcpy(&x, &b32, 4);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(HalfToFloat(FloatToHalf(x))));
      ASSERT_EQ(FloatToBf16(x), EncodeFloat(b, x));
      ASSERT_EQ(FloatToHalf(x), EncodeFloat(h, x));
      continue;
    }
    check(x);
  }
}

TEST(FloatFormats, ParseFloatText) {
  struct Case {
    const char* text;
    E type;
    uint32_t bits;
  };
  const Case cases[] = {
      {"1.0", E::kF8E4M3FN, 0x38},
      {"-4.480000e+02", E::kF8E4M3FN, 0xFE},
      {"0.001953125", E::kF8E4M3FN, 0x01},
      {"inf", E::kF8E5M2, 0x7C},
      {"-inf", E::kF8E4M3FNUZ, 0x80},
      {"nan", E::kF8E4M3FN, 0x7F},
      {"3", E::kF4E2M1FN, 0x5},
      {"1.003906250931322574615478515625", E::kBF16, 0x3F81},
  };
  for (const Case& c : cases) {
    uint32_t bits = 0;
    ASSERT_TRUE(ParseFloatText(c.text, Fmt(c.type), &bits)) << c.text;
    EXPECT_EQ(bits, c.bits) << c.text;
  }
  uint32_t bits = 0;
  for (const char* bad : {"", "1.0x", "abc", "1e"}) EXPECT_FALSE(ParseFloatText(bad, Fmt(E::kF16), &bits)) << bad;
}

}  // namespace
}  // namespace neuronmem::numerics
