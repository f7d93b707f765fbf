// stablehlo.triangular_solve and stablehlo.cholesky on dense row-major tensors with leading batch dims.
//
// triangular_solve (StableHLO spec): a is [..., M, M]; b is [..., M, N] when left_side, else [..., N, M]; the
// batch dims of a and b are equal. It solves op(a) * x = b (left_side) or x * op(a) = b (right side) for x,
// where op(a) is a, transpose(a) or adjoint(a) (transpose_a NO_TRANSPOSE, TRANSPOSE, ADJOINT) and only the lower
// (lower = true) or upper triangle of a is read; with unit_diagonal the diagonal is taken as ones and not read.
// The result has b's shape. A zero on the diagonal gives infinities and NaNs, as a substitution does.
//
// cholesky (StableHLO spec): a is [..., N, N] Hermitian positive definite; only the lower (lower = true) or
// upper triangle is read. The result is L with a = L * adjoint(L) (lower) or U with a = adjoint(U) * U; the
// other triangle of the result is zero. A matrix that is not positive definite gives NaN in every element of
// its result (the spec leaves the values implementation-defined).
//
// Element types: f16, bf16, f32, f64, complex64, complex128 (a, b and the result of one type). Every matrix is
// computed in double or complex<double> with Eigen (triangularView::solveInPlace, LLT) and rounded once to the
// result type.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "linalg/tensor_ref.h"

namespace neuronmem::linalg {

enum class TransposeA { kNoTranspose, kTranspose, kAdjoint };

// "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"; false for anything else.
bool TransposeAFromName(const std::string& name, TransposeA* t);

struct TriangularSolveParams {
  bool left_side = true;
  bool lower = true;
  bool unit_diagonal = false;
  TransposeA transpose_a = TransposeA::kNoTranspose;
};

// INVALID_ARGUMENT naming the rule when: a's rank is below 2 or its last two dims differ; b's rank differs from
// a's; the batch dims differ; b's solved dim (rank-2 when left_side, rank-1 otherwise) is not M; the result
// dims are not b's; the types differ. UNIMPLEMENTED for element types other than the six above.
Status CheckTriangularSolve(ElementType a_type, Span<int64_t> a_dims, ElementType b_type, Span<int64_t> b_dims,
                            const TriangularSolveParams& params, ElementType result_type, Span<int64_t> result_dims);

// Solves every batch into `result` (CheckTriangularSolve first; nothing is written on error). Thread-safe.
Status TriangularSolve(const TensorRef& a, const TensorRef& b, const TriangularSolveParams& params,
                       const MutableTensorRef& result);

// INVALID_ARGUMENT when a's rank is below 2, its last two dims differ, the result dims or type are not a's;
// UNIMPLEMENTED for element types other than the six above.
Status CheckCholesky(ElementType a_type, Span<int64_t> a_dims, ElementType result_type, Span<int64_t> result_dims);

// Factors every batch into `result` (CheckCholesky first; nothing is written on error). Thread-safe.
Status Cholesky(const TensorRef& a, bool lower, const MutableTensorRef& result);

}  // namespace neuronmem::linalg
