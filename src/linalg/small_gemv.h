// Internal to src/linalg: f32 matrix-vector products small enough that a BLAS call costs more than the
// arithmetic (the decode step's attention: 256 products of [256 x 16] per layer, each 0.7 us through BLIS's
// cblas_sgemv against about 0.1 us here). AVX2 + FMA, chosen at run time; Gemm falls back to the library when
// SmallGemv declines.
#pragma once

#include <cstdint>

namespace neuronmem::linalg::detail {

// y[i * incy] = sum over kk < k of M(i, kk) * x[kk * incx], for i < rows, where M(i, kk) is m[i * ld + kk]
// (!trans) or m[kk * ld + i] (trans). Sums in another order than a sequential loop (vector lanes and partial
// sums), as a blocked BLAS does: within the same bounds. NaN and infinities propagate (no zero skipping).
// Returns false, writing nothing, when it does not take the product: rows or k is 0, the product is larger than
// kSmallGemvElements, a strided x or y is longer than kSmallGemvStrided, the CPU lacks AVX2 or FMA, or the path
// is disabled (SetSmallGemvEnabled).
bool SmallGemv(int64_t rows, int64_t k, const float* m, int64_t ld, bool trans, const float* x, int64_t incx, float* y,
               int64_t incy);

// C[m x n] (row stride ldc) = A[m x k] * B[k x n] summed as the exact path sums (DotGeneralExact: for each
// element, acc = 0, then acc = acc + a * b for k ascending, the product and the sum each rounded to f32, no FMA),
// so bit-identical to it, 8 result columns at a time or more (AVX). A(i, kk) is a[i * lda + kk] (!a_trans) or
// a[kk * lda + i]; B(kk, j) is b[kk * ldb + j] (!b_trans) or b[j * ldb + kk] (8 x 8 blocks transposed in
// registers). Returns false, writing nothing, when the CPU lacks AVX or the path is disabled (SetSmallGemvEnabled).
bool ExactGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool a_trans, const float* b, int64_t ldb,
               bool b_trans, float* c, int64_t ldc);

constexpr int64_t kSmallGemvElements = int64_t{1} << 16;  // rows * k
constexpr int64_t kSmallGemvStrided = 4096;

// For tests and benchmarks (process-wide): false sends every product to the library and every exact product to
// the scalar loop, as before these paths.
void SetSmallGemvEnabled(bool enabled);
bool SmallGemvEnabled();

}  // namespace neuronmem::linalg::detail
