// stablehlo.dot_general on dense row-major tensors.
//
// Semantics (StableHLO spec, "dot_general"; the reference interpreter's dotGeneralOp):
//   result dims = [batch dims (in lhs_batching order), lhs free dims (ascending), rhs free dims (ascending)]
//   result[b..., i..., j...] = sum over the contracting index space (lexicographic in the listed order) of
//                              convert(lhs[...]) * convert(rhs[...])
// Each operand element is first converted to the result element type. Accumulation is in the result type:
//   - integers wrap (two's complement), pred is or-of-ands;
//   - f16/bf16 round every product and every partial sum to the type, in the reference's order, so the
//     result is bit-identical to the reference interpreter's;
//   - f32, f64, complex64, complex128 go through a blocked matrix product (OpenBLAS or Eigen, see gemm.h):
//     the same products, summed in another order and possibly with fused multiply-adds, so results may
//     differ from a sequential sum in the last bits. NaN and infinities propagate (no zero-skipping).
// precision_config and algorithm attributes do not change the numerics and are not inputs here.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "linalg/tensor_ref.h"

namespace neuronmem::linalg {

// Owning (build once per op, at compile time, and reuse for every run).
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batching_dimensions;
  std::vector<int64_t> rhs_batching_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions;
  std::vector<int64_t> rhs_contracting_dimensions;
};

// Checks the dimension numbers against the operand dims and computes the result dims. INVALID_ARGUMENT
// (naming the offending list and index) when: the batching or contracting lists of lhs and rhs differ in
// length; an axis is out of range or repeated (within or across an operand's two lists); a batching or
// contracting pair has different sizes. `result_dims` is replaced on success and left alone on failure.
Status DotGeneralShape(Span<int64_t> lhs_dims, Span<int64_t> rhs_dims, const DotDimensionNumbers& dn,
                       std::vector<int64_t>* result_dims);

// Everything DotGeneral checks except the data pointers, for compile time: DotGeneralShape, the result dims
// equal the computed ones (INVALID_ARGUMENT otherwise), and the element types. UNIMPLEMENTED when an element
// type is not one of pred, s8-s64, u8-u64, f16, bf16, f32, f64, complex64, complex128, or an operand type
// cannot be converted to the result type (allowed: pred->pred, integer->integer, float->float,
// float or complex->complex).
Status CheckDotGeneral(ElementType lhs_type, Span<int64_t> lhs_dims, ElementType rhs_type, Span<int64_t> rhs_dims,
                       const DotDimensionNumbers& dn, ElementType result_type, Span<int64_t> result_dims);

// A dot_general checked and planned once for fixed operand and result types and dims (an interpreter kernel
// builds it at compile time), then run any number of times on data of those shapes. The plan holds how each
// operand is seen as a batch of matrices (in place when its layout allows, else packed) and where each batch
// matrix starts, so a run does no checks and, when neither operand needs converting or re-laying out, allocates
// nothing: it is the library calls (gemm.h) and nothing else. Immutable once made: Run is thread-safe.
class DotGeneralPlan {
 public:
  DotGeneralPlan();
  ~DotGeneralPlan();
  DotGeneralPlan(DotGeneralPlan&&) noexcept;
  DotGeneralPlan& operator=(DotGeneralPlan&&) noexcept;

  // CheckDotGeneral's statuses; on success *out is replaced. `exact`: always the exact path (DotGeneralExact's
  // numerics), else DotGeneral's.
  static Status Make(ElementType lhs_type, Span<int64_t> lhs_dims, ElementType rhs_type, Span<int64_t> rhs_dims,
                     const DotDimensionNumbers& dn, ElementType result_type, Span<int64_t> result_dims, bool exact,
                     DotGeneralPlan* out);

  // result = dot_general(lhs, rhs) on data of the planned types and dims (not checked; null only where a
  // tensor has no elements). The result must not overlap an operand. A plan never made does nothing.
  void Run(const void* lhs, const void* rhs, void* result) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// result = dot_general(lhs, rhs). Runs CheckDotGeneral and CheckTensor on the three tensors first and writes
// nothing when they fail. The result must not overlap an operand. Thread-safe (no shared state besides the
// serialized OpenBLAS calls); allocates scratch only when an operand must be converted or re-laid out.
Status DotGeneral(const TensorRef& lhs, const TensorRef& rhs, const DotDimensionNumbers& dn,
                  const MutableTensorRef& result);

// The same, always on the exact path (the reference's summation order and per-step rounding, as f16/bf16 always
// are). Slower for f32, f64 and complex; bit-identical to the reference interpreter for small operands where
// a blocked product's reordering would show through cancellation.
Status DotGeneralExact(const TensorRef& lhs, const TensorRef& rhs, const DotDimensionNumbers& dn,
                       const MutableTensorRef& result);

}  // namespace neuronmem::linalg
