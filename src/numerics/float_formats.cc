#include "numerics/float_formats.h"

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

namespace neuronmem::numerics {
namespace {

using E = ElementType;
using NF = NonFinite;

// {type, bits, exponent bits, mantissa bits, bias, min exponent, max exponent, non-finite, sign, zero, denormals}
// The exponent ranges are APFloat's (llvm/lib/Support/APFloat.cpp, semIEEEhalf ... semFloat4E2M1FN).
constexpr FloatFormat kFormats[] = {
    {E::kF16, 16, 5, 10, 15, -14, 15, NF::kIeee, true, true, true},
    {E::kBF16, 16, 8, 7, 127, -126, 127, NF::kIeee, true, true, true},
    {E::kF8E3M4, 8, 3, 4, 3, -2, 3, NF::kIeee, true, true, true},
    {E::kF8E4M3, 8, 4, 3, 7, -6, 7, NF::kIeee, true, true, true},
    {E::kF8E4M3FN, 8, 4, 3, 7, -6, 8, NF::kNanAllOnes, true, true, true},
    {E::kF8E4M3FNUZ, 8, 4, 3, 8, -7, 7, NF::kNanNegZero, true, true, true},
    {E::kF8E4M3B11FNUZ, 8, 4, 3, 11, -10, 4, NF::kNanNegZero, true, true, true},
    {E::kF8E5M2, 8, 5, 2, 15, -14, 15, NF::kIeee, true, true, true},
    {E::kF8E5M2FNUZ, 8, 5, 2, 16, -15, 15, NF::kNanNegZero, true, true, true},
    {E::kF8E8M0FNU, 8, 8, 0, 127, -127, 127, NF::kNanAllOnes, false, false, false},
    {E::kF4E2M1FN, 4, 2, 1, 1, 0, 2, NF::kFiniteOnly, true, true, true},
    {E::kF6E2M3FN, 6, 2, 3, 1, 0, 2, NF::kFiniteOnly, true, true, true},
    {E::kF6E3M2FN, 6, 3, 2, 3, -2, 4, NF::kFiniteOnly, true, true, true},
};

uint32_t SignBit(const FloatFormat& f) { return f.has_sign ? 1u << (f.bits - 1) : 0u; }
uint32_t MantissaMask(const FloatFormat& f) { return (1u << f.mantissa_bits) - 1; }
uint32_t ExponentMask(const FloatFormat& f) { return (1u << f.exponent_bits) - 1; }

// The NaN a NaN-only format produces (APFloat's makeNaN(false, negative)); -0 for the finite-only types,
// which have no NaN (ml_dtypes' quiet_NaN() of those types).
uint32_t NanBits(const FloatFormat& f, bool negative) {
  if (f.non_finite != NF::kNanAllOnes) return SignBit(f);  // kNanNegZero's NaN, or -0
  return (negative ? SignBit(f) : 0u) | (ExponentMask(f) << f.mantissa_bits) | MantissaMask(f);
}

uint32_t LargestFinite(const FloatFormat& f) {
  uint32_t exp_field = static_cast<uint32_t>(f.max_exponent + f.bias);
  uint32_t man = MantissaMask(f);
  if (f.non_finite == NF::kNanAllOnes && f.has_denormals) man -= 1;  // all ones is NaN (f8E4M3FN)
  return (exp_field << f.mantissa_bits) | man;
}

// What overflow gives (APFloat's handleOverflow for round-to-nearest).
uint32_t OverflowBits(const FloatFormat& f, bool negative) {
  const uint32_t sign = negative ? SignBit(f) : 0u;
  switch (f.non_finite) {
    case NF::kIeee: return sign | (ExponentMask(f) << f.mantissa_bits);
    case NF::kNanAllOnes:
    case NF::kNanNegZero: return NanBits(f, negative);
    case NF::kFiniteOnly: break;
  }
  return sign | LargestFinite(f);
}

double DecodeSlow(const FloatFormat& f, uint32_t bits) {
  bits &= f.bits == 32 ? ~0u : (1u << f.bits) - 1;
  const bool negative = (bits & SignBit(f)) != 0;
  const uint32_t exp_field = (bits >> f.mantissa_bits) & ExponentMask(f);
  const uint32_t man = bits & MantissaMask(f);
  const double sign = negative ? -1.0 : 1.0;
  switch (f.non_finite) {
    case NF::kIeee:
      if (exp_field == ExponentMask(f)) {
        if (man == 0) return sign * HUGE_VAL;
        // Quiet NaN keeping the sign and the payload in the top fraction bits (as APFloat widens it).
        uint64_t d = (negative ? 1ull << 63 : 0) | (0x7FFull << 52) | (1ull << 51) |
                     (static_cast<uint64_t>(man) << (52 - f.mantissa_bits));
        double r;
        std::memcpy(&r, &d, 8);
        return r;
      }
      break;
    case NF::kNanAllOnes:
      if (exp_field == ExponentMask(f) && man == MantissaMask(f)) return std::copysign(std::nan(""), sign);
      break;
    case NF::kNanNegZero:
      if (bits == SignBit(f)) return -std::nan("");
      break;
    case NF::kFiniteOnly: break;
  }
  if (!f.has_denormals) return std::ldexp(1.0, static_cast<int>(exp_field) - f.bias);
  if (exp_field == 0) return sign * std::ldexp(static_cast<double>(man), f.min_exponent - f.mantissa_bits);
  const double significand = static_cast<double>(man | (1u << f.mantissa_bits));
  return sign * std::ldexp(significand, static_cast<int>(exp_field) - f.bias - f.mantissa_bits);
}

// 256-entry decode tables for the formats of 8 bits or fewer, built on first use.
struct DecodeTables {
  std::array<std::array<float, 256>, std::size(kFormats)> values;
  DecodeTables() {
    for (size_t i = 0; i < std::size(kFormats); ++i) {
      if (kFormats[i].bits > 8) continue;
      for (uint32_t b = 0; b < 256; ++b) values[i][b] = static_cast<float>(DecodeSlow(kFormats[i], b));
    }
  }
};

const DecodeTables& Tables() {
  static const DecodeTables tables;
  return tables;
}

size_t FormatIndex(const FloatFormat& f) { return static_cast<size_t>(&f - kFormats); }

}  // namespace

const FloatFormat* SmallFloatFormat(ElementType t) {
  for (const FloatFormat& f : kFormats) {
    if (f.type == t) return &f;
  }
  return nullptr;
}

uint32_t EncodeFloat(const FloatFormat& f, double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  const bool negative = (b >> 63) != 0;
  const uint32_t sign = negative ? SignBit(f) : 0u;
  const uint64_t exp_field = (b >> 52) & 0x7FF;
  const uint64_t man = b & ((1ull << 52) - 1);
  if (exp_field == 0x7FF) {
    if (man == 0) return OverflowBits(f, negative);  // +-inf
    if (f.non_finite != NF::kIeee) return NanBits(f, negative);
    // APFloat: truncate the payload to its top bits, and quieten (a signalling NaN becomes quiet).
    const uint32_t payload = static_cast<uint32_t>(man >> (52 - f.mantissa_bits)) | (1u << (f.mantissa_bits - 1));
    return sign | (ExponentMask(f) << f.mantissa_bits) | payload;
  }
  if (exp_field == 0 && man == 0) {  // +-0
    if (!f.has_zero) return 0;       // f8E8M0FNU: the all-zero pattern (2^-127)
    return f.non_finite == NF::kNanNegZero ? 0u : sign;
  }
  if (negative && !f.has_sign) return NanBits(f, false);

  // x = sig * 2^e exactly, with the most significant bit of sig at 2^msb_exp.
  uint64_t sig = exp_field ? (man | (1ull << 52)) : man;
  int e = exp_field ? static_cast<int>(exp_field) - 1075 : -1074;
  const int msb_exp = e + 63 - __builtin_clzll(sig);
  if (msb_exp > f.max_exponent) return OverflowBits(f, negative);
  // The quantum (value of the last mantissa bit) of the result before any carry: 2^q.
  const int q = (msb_exp < f.min_exponent ? f.min_exponent : msb_exp) - f.mantissa_bits;
  const int shift = q - e;  // low bits of sig below the quantum
  uint64_t n;               // the result in units of 2^q, rounded to nearest even
  if (shift <= 0) {
    n = sig << -shift;  // exact (shift >= -mantissa_bits, so this cannot overflow)
  } else if (shift > 63) {
    n = 0;  // sig < 2^53 <= 2^(shift-1): below half a quantum
  } else {
    n = sig >> shift;
    const uint64_t rest = sig & ((1ull << shift) - 1);
    const uint64_t half = 1ull << (shift - 1);
    if (rest > half || (rest == half && (n & 1))) ++n;
  }
  int exp_of_n = q;                  // n * 2^exp_of_n
  if (n >> (f.mantissa_bits + 1)) {  // the carry made n = 2^(mantissa_bits+1)
    n >>= 1;
    ++exp_of_n;
  }
  if (n == 0) {  // underflow to zero
    if (!f.has_zero) return 0;
    return f.non_finite == NF::kNanNegZero ? 0u : sign;
  }
  if (!(n >> f.mantissa_bits)) {  // subnormal: exponent field 0
    return sign | static_cast<uint32_t>(n);
  }
  const int unbiased = exp_of_n + f.mantissa_bits;
  if (unbiased > f.max_exponent) return OverflowBits(f, negative);
  const uint32_t out_man = static_cast<uint32_t>(n) & MantissaMask(f);
  const uint32_t out_exp = static_cast<uint32_t>(unbiased + f.bias);
  if (f.non_finite == NF::kNanAllOnes && out_exp == ExponentMask(f) && out_man == MantissaMask(f)) {
    return OverflowBits(f, negative);  // the all-ones pattern is NaN, not a number
  }
  return sign | (out_exp << f.mantissa_bits) | out_man;
}

float DecodeFloat(const FloatFormat& f, uint32_t bits) {
  if (f.bits <= 8) return Tables().values[FormatIndex(f)][bits & ((1u << f.bits) - 1)];
  if (f.type == E::kBF16) return Bf16ToFloat(static_cast<uint16_t>(bits));
  return HalfToFloat(static_cast<uint16_t>(bits));
}

double DecodeFloatToDouble(const FloatFormat& f, uint32_t bits) { return DecodeSlow(f, bits); }

uint16_t FloatToHalf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  const uint32_t sign = (b >> 16) & 0x8000;
  const uint32_t abs = b & 0x7FFFFFFF;
  if (abs >= 0x7F800000) {
    if (abs == 0x7F800000) return static_cast<uint16_t>(sign | 0x7C00);
    return static_cast<uint16_t>(sign | 0x7E00 | ((abs >> 13) & 0x3FF));
  }
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to >= 2^16: inf
  if (abs < 0x38800000) {  // below 2^-14: a half subnormal (or zero); round in units of 2^-24
    if (abs < 0x33000000) return static_cast<uint16_t>(sign);  // <= 2^-25: rounds to zero (ties to even 0)
    const uint32_t exp = abs >> 23;                            // 102 .. 112
    const uint32_t sig = (abs & 0x7FFFFF) | 0x800000;
    const uint32_t shift = 126 - exp;  // value = sig * 2^(exp-150); units of 2^-24 -> shift right by 126-exp
    uint32_t n = sig >> shift;
    const uint32_t rest = sig & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (n & 1))) ++n;
    return static_cast<uint16_t>(sign | n);
  }
  // Normal: rebias the exponent and round the 13 dropped bits (a carry correctly bumps the exponent).
  const uint32_t rebased = abs - (112u << 23);
  const uint32_t rounded = rebased + 0xFFF + ((rebased >> 13) & 1);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FF;
  uint32_t b;
  if (exp == 0x1F) {
    b = sign | 0x7F800000 | (man ? (0x400000 | (man << 13)) : 0);
  } else if (exp != 0) {
    b = sign | ((exp + 112) << 23) | (man << 13);
  } else {
    const float v = static_cast<float>(man) * 0x1p-24f;  // exact
    return sign ? -v : v;
  }
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint16_t FloatToBf16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((b >> 16) | 0x40);  // NaN: quiet
  return static_cast<uint16_t>((b + 0x7FFF + ((b >> 16) & 1)) >> 16);                 // overflow carries into inf
}

float Bf16ToFloat(uint16_t bits) {
  uint32_t b = static_cast<uint32_t>(bits) << 16;
  if ((b & 0x7F800000) == 0x7F800000 && (b & 0x7FFFFF)) b |= 0x400000;  // NaN: quiet, as APFloat widens
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

bool ParseFloatText(std::string_view text, const FloatFormat& f, uint32_t* bits) {
  if (text.empty()) return false;
  double d;
  if (text == "inf" || text == "+inf") {
    d = HUGE_VAL;
  } else if (text == "-inf") {
    d = -HUGE_VAL;
  } else if (text == "nan") {
    d = std::nan("");
  } else if (text == "-nan") {
    d = -std::nan("");
  } else {
    const std::string s(text);
    char* end = nullptr;
    errno = 0;
    d = std::strtod(s.c_str(), &end);
    if (!end || *end || end == s.c_str()) return false;
  }
  *bits = EncodeFloat(f, d);
  return true;
}

}  // namespace neuronmem::numerics
