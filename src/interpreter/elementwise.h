// Kernels of the element-wise family that other families reuse.
#pragma once

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// A convert kernel from slot `in` to slot `out` (same element count, any supported types).
Status MakeConvert(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k);

}  // namespace neuronmem::interp
