// Helpers of the data-movement family that other families reuse.
#pragma once

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// Reads an integer scalar of type t (any integer type or pred) as int64 (ui64 saturates).
int64_t ReadInt(const char* p, ElementType t);
// The values of input `input`, which must be a constant 1-d integer tensor (UNIMPLEMENTED naming `what`
// when it is not a constant).
// The values of integer operand `input`, which must be a constant (a dynamic-shape op's shape operand: the
// op runs when its shapes are static). 1-d (or 0-d) unless `any_rank` (then flattened row-major).
Status ConstantInts(CompileCtx& cx, size_t input, const char* what, std::vector<int64_t>* out, bool any_rank = false);

// Copies the view (in, dims, strides in elements) into the dense `out`.
void StridedCopy(const char* in, char* out, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                 size_t esize);

// Copies `bytes` from slot `in` to slot `out` (reshape, bitcast between types of the same storage).
class CopyKernel final : public Kernel {
 public:
  CopyKernel(uint32_t in, uint32_t out, size_t bytes) : in_(in), out_(out), bytes_(bytes) {}
  Status Run(Frame& f) const override {
    if (f.slots[out_] != f.slots[in_]) std::memmove(f.slots[out_], f.slots[in_], bytes_);
    return Status();
  }

 private:
  uint32_t in_, out_;
  size_t bytes_;
};

}  // namespace neuronmem::interp
