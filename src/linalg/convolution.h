// stablehlo.convolution on dense row-major tensors, in the spec's general form.
//
// Semantics (StableHLO spec, "convolution"; the reference interpreter's convolutionOp):
//   - feature_group_count G: lhs is split into G chunks along input_feature_dimension and rhs into G chunks
//     along kernel_output_feature_dimension; chunk g of the result's output features is the convolution of
//     chunk g of lhs with chunk g of rhs. batch_group_count B: lhs split into B chunks along
//     input_batch_dimension, rhs into B chunks along kernel_output_feature_dimension, results concatenated
//     along output_feature_dimension. At most one of G and B is greater than 1.
//   - lhs is padded on its spatial dims with zeros: lhs_dilation - 1 zeros between elements, then
//     padding[i] = (low, high) at the edges (negative values cut elements off).
//   - result[b, o, s...] = sum over kernel spatial index k... (lexicographic, in the order of
//     kernel_spatial_dimensions) and kernel input feature c (innermost) of
//       padded_lhs[b, c, s * window_strides + k' * rhs_dilation] * rhs[k..., c, o],
//     with k' = K - 1 - k on spatial dims whose window_reversal is true, else k.
//   - output spatial size: padded = low + dilated + high, dilated = (in - 1) * lhs_dilation + 1 (0 if in = 0),
//     window = (K - 1) * rhs_dilation + 1 (0 if K = 0); 0 if padded <= 0 or window > padded, else
//     (padded - window) / window_stride + 1.
// Padded zeros take part in the products (0 * inf is NaN, as in the reference). Operand elements are converted
// to the result type as for dot_general; accumulation is in the result type (dot_general.h explains the
// per-type numerics).
//
// Two paths: Convolution uses im2col + a blocked matrix product (gemm.h) for f32, f64, complex64 and
// complex128 and the exact path for every other type; ConvolutionExact always sums in the reference's order
// with the reference's per-step rounding.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"
#include "linalg/tensor_ref.h"

namespace neuronmem::linalg {

// Owning; empty lists mean the spec's defaults (strides and dilations 1, padding 0, no reversal).
struct ConvolutionParams {
  std::vector<int64_t> window_strides;
  std::vector<std::pair<int64_t, int64_t>> padding;  // (low, high) per spatial dim
  std::vector<int64_t> lhs_dilation;
  std::vector<int64_t> rhs_dilation;
  std::vector<bool> window_reversal;
  int64_t input_batch_dimension = 0;
  int64_t input_feature_dimension = 1;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 1;
  int64_t kernel_output_feature_dimension = 0;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0;
  int64_t output_feature_dimension = 1;
  std::vector<int64_t> output_spatial_dimensions;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
};

// Checks the attributes against the operand dims and computes the result dims. INVALID_ARGUMENT, naming the
// attribute, when: ranks differ or are below 2; a list does not have rank - 2 entries; a stride or dilation
// is not positive; a dimension number is out of range or repeated within its operand; a group count is not
// positive, both are above 1, or does not divide the dims it splits (input feature and kernel output
// feature for G, input batch and kernel output feature for B); the kernel input feature size is not the
// input feature size / G. `result_dims` is replaced on success only.
Status ConvolutionShape(Span<int64_t> lhs_dims, Span<int64_t> rhs_dims, const ConvolutionParams& params,
                        std::vector<int64_t>* result_dims);

// ConvolutionShape, the result dims equal the computed ones (INVALID_ARGUMENT otherwise), and the element
// types (UNIMPLEMENTED as for CheckDotGeneral).
Status CheckConvolution(ElementType lhs_type, Span<int64_t> lhs_dims, ElementType rhs_type, Span<int64_t> rhs_dims,
                        const ConvolutionParams& params, ElementType result_type, Span<int64_t> result_dims);

// result = convolution(lhs, rhs): the fast path where the type allows it (see above). Runs CheckConvolution
// and CheckTensor first and writes nothing when they fail. The result must not overlap an operand. Allocates
// scratch (im2col blocks of at most ~4 MiB, the packed kernel). Thread-safe.
Status Convolution(const TensorRef& lhs, const TensorRef& rhs, const ConvolutionParams& params,
                   const MutableTensorRef& result);

// The same, always on the exact path (the reference's summation order and rounding). Slower for f32/f64.
Status ConvolutionExact(const TensorRef& lhs, const TensorRef& rhs, const ConvolutionParams& params,
                        const MutableTensorRef& result);

}  // namespace neuronmem::linalg
