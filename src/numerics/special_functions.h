// The CHLO special functions (lgamma, digamma, zeta, polygamma, erf, erfc, erf_inv, bessel_i1e, cosh, sinh, acos,
// asin, acosh, asinh, atan, atanh, tan, next_after) as element-wise scalar functions that give the results of
// StableHLO's reference interpreter on the CHLO decompositions of stablehlo/transforms/ChloLegalizeToStablehlo.cpp,
// ChloDecompositionPatterns.td and ChloDecompositionPatternsMath.td: the same formulas, constants and operation
// order, each StableHLO op rounded to the evaluation type as the reference interpreter rounds it (+ - * / in the
// type, as APFloat; exp, log, log1p, expm1, sin, cos, atan2, sqrt, pow computed in double and rounded once to the
// type). docs/numerics.md has the table of ops, evaluation precisions and sources.
//
// Element types: f16, bf16, f32, f64 (real inputs only). Where the legalization upcasts (materializeWithUpcast to
// f32: lgamma, digamma, zeta, polygamma, erf, erfc, erf_inv, bessel_i1e, cosh, sinh), f16 and bf16 are evaluated
// in f32 and the result is rounded back once; the other ops evaluate in the element type itself.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/element_type.h"
#include "base/status.h"

namespace neuronmem::numerics {

enum class ChloUnaryOp : uint8_t {
  kLgamma,
  kDigamma,
  kErf,
  kErfc,
  kErfInv,
  kBesselI1e,
  kCosh,
  kSinh,
  kAcos,
  kAsin,
  kAcosh,
  kAsinh,
  kAtan,
  kAtanh,
  kTan,
};

// zeta(x, q) (Hurwitz), polygamma(n, x), next_after(x, y): operands in that order.
enum class ChloBinaryOp : uint8_t { kZeta, kPolygamma, kNextAfter };

// "chlo.lgamma" -> kLgamma ...; false for any other name.
bool ChloUnaryOpFromName(std::string_view op_name, ChloUnaryOp* op);
bool ChloBinaryOpFromName(std::string_view op_name, ChloBinaryOp* op);
// "chlo.lgamma" ...
std::string_view ChloOpName(ChloUnaryOp op);
std::string_view ChloOpName(ChloBinaryOp op);

// True for the element types these functions compute (f16, bf16, f32, f64).
bool ChloSupportsElementType(ElementType type);

// One element: `x` (and `y`) must be values of `type` (f16/bf16 values as floats, exactly); the result is a value
// of `type` returned as a double (exact). For other types the result is NaN; check ChloSupportsElementType first.
double EvalChloUnary(ChloUnaryOp op, ElementType type, double x);
double EvalChloBinary(ChloBinaryOp op, ElementType type, double x, double y);

// Whole arrays in buffer layout (f16/bf16 as their 16-bit patterns, f32, f64), `n` elements each; `out` may alias
// an input. UNIMPLEMENTED naming the op for an unsupported element type (nothing written). Thread-safe.
Status ApplyChloUnary(ChloUnaryOp op, ElementType type, const void* x, void* out, int64_t n);
Status ApplyChloBinary(ChloBinaryOp op, ElementType type, const void* x, const void* y, void* out, int64_t n);

}  // namespace neuronmem::numerics
