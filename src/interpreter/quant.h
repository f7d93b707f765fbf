// Quantized types (StableHLO's uniform quantization): dequantize/quantize kernels and the wrapper that runs
// an element-wise op on quantized values as dequantize -> compute in the expressed type -> quantize.
#pragma once

#include <functional>

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// Compiles the float version of an element-wise op over dequantized copies of the quantized operands;
// `inner` builds the float kernel from the (possibly substituted) operand slots and result slot.
using InnerCompile =
    std::function<Status(CompileCtx&, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>*)>;
Status CompileQuantized(CompileCtx& cx, std::unique_ptr<Kernel>* k, const InnerCompile& inner);

// Dequantizes slot `in` (quantized) into `out` (its expressed float type) and the reverse.
Status MakeDequantize(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k);
Status MakeQuantize(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k);

void RegisterQuantOps(std::unordered_map<std::string_view, OpCompileFn>* r);

}  // namespace neuronmem::interp
