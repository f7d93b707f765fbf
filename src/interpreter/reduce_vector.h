// The vectorized path of reduce (reduce.cc): one input, a body that is one of add, multiply, maximum or minimum,
// on f16, bf16, f32, f64 or an 8..64-bit integer type. The input is walked once, in row-major order, in blocks of
// contiguous elements:
//   - the trailing input dims kept (a "column" block): the block is added element-wise into as many contiguous
//     results, so every result still folds its elements one by one in row-major order (the reference's order);
//   - the trailing input dims reduced (a "row" block of R elements): the block is folded with W independent
//     partial results (W = 256 bytes of lanes: 64 for f32, 32 for f64, 128 for 16-bit types, 256 for 8-bit),
//     element i into partial i mod W, the partials combined by halving (p[j] = op(p[j], p[j + W/2]) down to
//     one), then that into the result: result = op(result, block). A block shorter than W folds one by one.
// The order depends only on the shapes, never on the machine or the run: results are deterministic, and equal
// on the AVX-512 and the baseline builds of the same loops (docs/executor.md, "Reductions").
#pragma once

#include <cstdint>
#include <vector>

#include "interpreter/elementwise.h"

namespace neuronmem::interp {

class VectorReduce {
 public:
  // The plan for reducing an input of `in_dims` over the dims marked in `reduced` with the body `body` (a
  // ScalarRegion's direct() function on element type t). False when this path does not apply (another op or
  // type, or no element to reduce).
  static bool Plan(ScalarBinaryFn body, ElementType t, const std::vector<int64_t>& in_dims,
                   const std::vector<bool>& reduced, VectorReduce* plan);

  // out (every result, row-major) = the reduction of x, starting from the 0-d init value.
  void Run(const void* init, const void* x, void* out) const;

  // For tests and benchmarks: run the baseline (non-AVX-512) build of the loops even on an AVX-512 machine.
  static void ForceBaseline(bool force);
  // For tests and benchmarks: Plan (and VectorReduceWindow::Plan) decline everything (false) from now on, so that
  // programs compiled meanwhile take the scalar path (reduce.cc); true goes back.
  static void SetEnabled(bool enabled);

  enum class Op { kAdd, kMul, kMax, kMin };
  // The op of `body` on t, when it is one of these and t a type of this path.
  static bool FindOp(ScalarBinaryFn body, ElementType t, Op* op);

 private:
  Op op_ = Op::kAdd;
  ElementType type_ = ElementType::kF32;
  // The input without its size-1 dims, adjacent dims of one kind merged: outer dims (size, result stride; stride
  // 0 for a reduced dim), then the block: `block` contiguous elements, kept (column) or reduced (row).
  std::vector<int64_t> outer_dims_, outer_rstrides_;
  int64_t block_ = 1;
  bool block_reduced_ = false;
  int64_t out_count_ = 1;
};

// The vectorized path of reduce_window (reduce.cc) for the same bodies and types, one input, no base dilation:
// for each window position (row-major), every result row along the last dim takes its element at that position
// at once (the elements a contiguous or strided run of the input, the padding the init value). Each result sees
// its window's elements in the reference's order, so the results are the scalar path's, bit for bit.
class VectorReduceWindow {
 public:
  // False when this path does not apply (another op or type, base dilation, an empty result).
  static bool Plan(ScalarBinaryFn body, ElementType t, const std::vector<int64_t>& in_dims,
                   const std::vector<int64_t>& out_dims, const std::vector<int64_t>& window,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& base_dilations,
                   const std::vector<int64_t>& window_dilations, const std::vector<int64_t>& pad_lo,
                   VectorReduceWindow* plan);

  void Run(const void* init, const void* x, void* out) const;

 private:
  VectorReduce::Op op_ = VectorReduce::Op::kAdd;
  ElementType type_ = ElementType::kF32;
  std::vector<int64_t> in_dims_, out_dims_, window_, strides_, window_dilations_, pad_lo_;
};

}  // namespace neuronmem::interp
