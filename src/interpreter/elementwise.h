// Kernels of the element-wise family that other families reuse.
#pragma once

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// A convert kernel from slot `in` to slot `out` (same element count, any supported types).
Status MakeConvert(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k);

// A scalar binary function on elements of one type: *out = op(*a, *b) (out may alias a or b; unaligned is fine).
using ScalarBinaryFn = void (*)(const void* a, const void* b, void* out);
// The scalar function of the element-wise binary op `name` ("stablehlo.add", "stablehlo.maximum", ...) for
// element type t, with the op's numerics (integer wrap, sub-byte widths, shifts past the width); nullptr if
// `name` is not such an op or does not take t.
ScalarBinaryFn FindScalarBinary(std::string_view name, ElementType t);
// Folds n consecutive elements into *acc in order, acc = op(acc, x[i]) (op(x[i], acc) when swapped), with the
// accumulator in a register: the same results as n calls of the scalar function.
using ScalarFoldFn = void (*)(void* acc, const void* xs, int64_t n, bool swapped);
struct ScalarFns {
  ScalarBinaryFn binary = nullptr;
  ScalarFoldFn fold = nullptr;  // nullptr for the f8/f6/f4 types
};
// Both functions of the op (empty where FindScalarBinary gives nullptr).
ScalarFns FindScalarFns(std::string_view name, ElementType t);

// The CHLO functions that take complex operands (acos, acosh, asin, asinh, atan, atanh, cosh, sinh, tan)
// on complex64/complex128: their complex principal values. chlo_special.cc, which implements the real
// versions, hands complex operands here. UNIMPLEMENTED for other ops.
Status CompileComplexChlo(CompileCtx& cx, std::unique_ptr<Kernel>* k);

}  // namespace neuronmem::interp
