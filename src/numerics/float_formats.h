// Small floating-point formats: f16, bf16 and the f8/f6/f4 types of src/base/element_type.h, encoded from
// and decoded to float/double with the semantics of LLVM's APFloat (which MLIR, StableHLO's reference
// interpreter and XLA's constant folding use) and ml_dtypes (which XLA's CPU runtime uses).
//
// Every encoding here is the value's bit pattern in the low bits of a uint32_t (the 4- and 6-bit types use
// the low 4 / 6 bits of their storage byte; the upper bits are zero). Conversions round to nearest, ties to
// even, in ONE step from the double given (never through float), as APFloat::convert does.
//
// Format parameters (APFloat's fltSemantics; precision = mantissa bits + 1, exponents of normal numbers):
//   type           exp man  bias  max finite   inf  NaN encodings                 zero
//   f16             5   10   15   65504        yes  IEEE (exp all ones, man != 0)  +-0
//   bf16            8    7  127   3.39e38      yes  IEEE                           +-0
//   f8E5M2          5    2   15   57344        yes  IEEE                           +-0
//   f8E4M3          4    3    7   240          yes  IEEE                           +-0
//   f8E3M4          3    4    3   15.5         yes  IEEE                           +-0
//   f8E4M3FN        4    3    7   448          no   S.1111.111 (0x7F, 0xFF)        +-0
//   f8E4M3FNUZ      4    3    8   240          no   0x80 only (the -0 pattern)     +0 only
//   f8E4M3B11FNUZ   4    3   11   30           no   0x80 only                      +0 only
//   f8E5M2FNUZ      5    2   16   57344        no   0x80 only                      +0 only
//   f8E8M0FNU       8    0  127   2^127        no   0xFF; no sign bit              none: 0x00 is 2^-127
//   f6E3M2FN        3    2    3   28           no   none                           +-0
//   f6E2M3FN        2    3    1   7.5          no   none                           +-0
//   f4E2M1FN        2    1    1   6            no   none                           +-0
//
// Special values when encoding (APFloat's convert with rmNearestTiesToEven):
// - Overflow (|x| rounds above the largest finite value, or to the all-ones NaN pattern of f8E4M3FN):
//   +-inf for types with inf, NaN for the NaN-only types (FN, FNUZ, E8M0FNU), +-largest finite for the
//   finite-only f6/f4 types. +-inf input behaves the same way.
// - NaN input: IEEE types keep the sign and the top payload bits and set the quiet bit; NaN-only types give
//   their NaN (f8E4M3FN keeps the sign). Finite-only types have no NaN (APFloat leaves it undefined): they
//   give -0, as ml_dtypes does (its quiet_NaN() of those types).
// - Zero and underflow: keep the sign, except FNUZ types (no -0: +0) and f8E8M0FNU (no zero: 0x00 = 2^-127).
// - f8E8M0FNU has no sign: negative non-zero input gives NaN (0xFF), as ml_dtypes does (APFloat leaves it
//   undefined). Its ties round up in magnitude (APFloat: the significand is the implicit bit, always odd).
// Decoding is exact: every value of these types is a float (f8E8M0FNU's 2^-127 is a float denormal).
#pragma once

#include <cstdint>
#include <string_view>

#include "base/element_type.h"

namespace neuronmem::numerics {

// How a format represents inf and NaN (APFloat's fltNonfiniteBehavior and fltNanEncoding together).
enum class NonFinite : uint8_t {
  kIeee,        // exponent all ones: inf (mantissa 0) or NaN (mantissa != 0)
  kNanAllOnes,  // no inf; NaN is exponent and mantissa all ones (either sign)
  kNanNegZero,  // no inf; NaN is the negative-zero pattern (sign set, rest zero); no -0
  kFiniteOnly,  // no inf, no NaN
};

struct FloatFormat {
  ElementType type;
  uint8_t bits;  // encoded width: 16, 8, 6 or 4
  uint8_t exponent_bits;
  uint8_t mantissa_bits;  // stored fraction bits (precision - 1)
  int16_t bias;           // stored exponent = unbiased exponent + bias (for normal numbers)
  int16_t min_exponent;   // smallest unbiased exponent of a normal number (APFloat's minExponent)
  int16_t max_exponent;   // largest unbiased exponent of a finite number (APFloat's maxExponent)
  NonFinite non_finite;
  bool has_sign;       // false only for f8E8M0FNU
  bool has_zero;       // false only for f8E8M0FNU
  bool has_denormals;  // false only for f8E8M0FNU (no mantissa)
};

// The format of `t`: f16, bf16 and the f8/f6/f4 types; nullptr for every other type (f32 and f64 included:
// they are the host's float and double).
const FloatFormat* SmallFloatFormat(ElementType t);

// Encodes `x` in `format` (rounding to nearest even, special values as described above). Exact for every
// input; about 10 ns. Thread-safe.
uint32_t EncodeFloat(const FloatFormat& format, double x);

// The value of `bits` in `format` (bits above format.bits are ignored); exact. NaN patterns give a quiet NaN
// with the pattern's sign (IEEE types keep the payload in the top fraction bits). Table lookup for 8 bits and
// narrower. Thread-safe.
float DecodeFloat(const FloatFormat& format, uint32_t bits);
double DecodeFloatToDouble(const FloatFormat& format, uint32_t bits);

// Fast paths for the two 16-bit types, bit-identical to EncodeFloat/DecodeFloat with their formats (and
// therefore to APFloat). Encoding from float rounds once (float -> f16 directly); for double input use
// EncodeFloat, which also rounds once (double -> float -> f16 could round twice).
uint16_t FloatToHalf(float x);
float HalfToFloat(uint16_t bits);
uint16_t FloatToBf16(float x);
float Bf16ToFloat(uint16_t bits);

// Decimal (or inf/nan) text of a dense-literal element -> the bit pattern of a small float type, as MLIR's
// parser builds it: the text is read as a double (strtod: correctly rounded), then converted with
// EncodeFloat. Accepts what strtod accepts over the whole text plus "inf", "+inf", "-inf", "nan", "-nan"
// (MLIR prints those for non-finite values); returns false for anything else or a type with no format.
bool ParseFloatText(std::string_view text, const FloatFormat& format, uint32_t* bits);

}  // namespace neuronmem::numerics
