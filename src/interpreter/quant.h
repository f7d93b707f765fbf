// Quantized types (StableHLO's uniform quantization): dequantize/quantize kernels and the wrapper that runs
// an element-wise op on quantized values as dequantize -> compute in the expressed type -> quantize.
#pragma once

#include <functional>

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// Compiles the f32 version of an op over f32 copies of its quantized (dequantized) and small-float (f8, f6,
// f4: converted exactly) operands; a quantized result is quantized from the f32 result, a small-float result
// rounded once from it. `inner` builds the f32 kernel from the (possibly substituted) operand slots and
// result slot.
using InnerCompile =
    std::function<Status(CompileCtx&, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>*)>;
Status CompileQuantized(CompileCtx& cx, std::unique_ptr<Kernel>* k, const InnerCompile& inner);

// True if an operand or result of the current op is quantized, or of a small float type (IsSmallFloat): the
// op then compiles through CompileQuantized.
bool NeedsF32(CompileCtx& cx);

// `make` on the op's own operand slots and result slot, or through CompileQuantized when NeedsF32(cx).
Status CompileOnSlots(CompileCtx& cx, std::unique_ptr<Kernel>* k, const InnerCompile& make);

// A kernel running `ks` in order.
std::unique_ptr<Kernel> MakeSequence(std::vector<std::unique_ptr<Kernel>> ks);

// Dequantizes slot `in` (quantized) into `out` (its expressed float type) and the reverse.
Status MakeDequantize(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k);
Status MakeQuantize(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k);

// One per-tensor quantized scalar type, for code that (de)quantizes single values (the `applies` form of a
// quantized reduce): the same arithmetic as the quantize/dequantize kernels (in f32; NaN quantizes to 0).
struct ScalarQuant {
  ElementType storage = ElementType::kInvalid;
  float scale = 1, zero_point = 0, lo = 0, hi = 0;
  float Dequantize(const void* q) const;
  void Quantize(float x, void* q) const;
};
// UNIMPLEMENTED for expressed or storage types the kernels do not take; INVALID_ARGUMENT for per-axis types.
Status GetScalarQuant(CompileCtx& cx, const stablehlo::QuantType& q, ScalarQuant* out);

// True if both are unquantized, or both quantized with the same storage type, range, expressed type, axis,
// scales and zero points (types parsed separately are separate objects).
bool SameQuant(const stablehlo::QuantType* a, const stablehlo::QuantType* b);

// Same element type (quantization included) and shape.
inline bool SameValueType(const Slot& a, const Slot& b) {
  return a.type == b.type && a.dims == b.dims && SameQuant(a.quant, b.quant);
}

void RegisterQuantOps(OpTable* r);

}  // namespace neuronmem::interp
