// Helpers of the data-movement family that other families reuse.
#pragma once

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// Reads an integer scalar of type t (any integer type or pred) as int64 (ui64 saturates).
int64_t ReadInt(const char* p, ElementType t);
// The values of integer operand `input`, which must be known at compile time (a dynamic-shape op's shape
// operand: a constant or computed from constants, CompileCtx::ConstantData; the op runs when its shapes are
// static; UNIMPLEMENTED naming `what` otherwise). 1-d (or 0-d) unless `any_rank` (then flattened row-major).
Status ConstantInts(CompileCtx& cx, size_t input, const char* what, std::vector<int64_t>* out, bool any_rank = false);

// The dims of result `result` (of type `type`, which has `?` dims) of a dynamic-shape op, from its operands'
// dims and its shape operands (known at compile time): dynamic_iota, dynamic_broadcast_in_dim, dynamic_reshape,
// dynamic_pad, real_dynamic_slice, dynamic_gather, dynamic_conv. Leaves `dims` empty for other ops.
Status InferDynamicResultDims(CompileCtx& cx, size_t result, const stablehlo::Type& type, std::vector<int64_t>* dims);
// The result dims of the dynamic_gather being compiled (index.cc) and of the dynamic_conv (linalg_ops.cc).
Status GatherResultDims(CompileCtx& cx, const std::vector<int64_t>& slice_sizes, size_t result_rank,
                        std::vector<int64_t>* dims);
Status ConvolutionResultDims(CompileCtx& cx, std::vector<int64_t>* dims);

// The same view with fewer dims: drops dims of size 1 and merges each dim into the one before it when the walk
// continues from one to the other (contiguous runs, runs of a repeated element). Views with an empty dim are
// left as they are.
void SimplifyStrides(std::vector<int64_t>* dims, std::vector<int64_t>* strides);
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
