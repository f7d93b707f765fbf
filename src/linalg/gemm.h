// Internal to src/linalg: one row-major matrix product C = op(A) * op(B) for f32, f64, complex64 and
// complex128, on BLIS (Debian's serial build, libblis4-serial, loaded privately with dlopen), else OpenBLAS's
// serial build (libopenblas0-serial, calls serialized), else Eigen. docs/linalg.md and docs/executor.md have the
// measurements behind the choice.
#pragma once

#include <cstdint>

namespace neuronmem::linalg::detail {

// A strided row-major matrix operand: element (i, j) of op(X) is at data[i * ld + j] when !trans and at
// data[j * ld + i] when trans. ld >= max(1, columns of the stored matrix).
template <typename T>
struct MatrixOperand {
  const T* data;
  int64_t ld;
  bool trans;
};

// C[m x n] (row-major, leading dimension ldc >= max(1, n)) = A[m x k] * B[k x n]. k == 0 writes zeros.
// T is float, double, std::complex<float> or std::complex<double>. Thread-safe, and every call runs on the
// calling thread only (no BLAS thread pool). On BLIS and Eigen, calls from several threads run at once; on the
// OpenBLAS fallback they are serialized (its single-threaded build keeps unlocked global buffers). f32 products of
// one row or one column small enough for a library call to cost more than the arithmetic run on SmallGemv
// (small_gemv.h) whatever the backend.
template <typename T>
void Gemm(int64_t m, int64_t n, int64_t k, MatrixOperand<T> a, MatrixOperand<T> b, T* c, int64_t ldc);

enum class GemmBackend { kBlis, kOpenBlas, kEigen };

// The backend Gemm uses now: by default BLIS when it loaded, else OpenBLAS when it loaded, else Eigen.
GemmBackend ActiveGemmBackend();

// For tests and benchmarks (process-wide, not for use while other threads call Gemm): use `kind` from now on.
// False, and nothing changes, when that library is not installed (Eigen always is). ResetGemmBackend goes
// back to the default.
bool ForceGemmBackend(GemmBackend kind);
void ResetGemmBackend();
// ForceGemmBackend(kEigen) (true) or ResetGemmBackend() (false).
void ForceEigenGemm(bool force);

// For benchmarks: the library's own cblas_sgemm (CBLAS arguments: order, transa, transb, m, n, k, alpha, a, lda,
// b, ldb, beta, c, ldc), or null when that library is not loaded (and for kEigen).
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
SgemmFn LibrarySgemmForBenchmark(GemmBackend kind);
// The same for cblas_sgemv (order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy).
using SgemvFn = void (*)(int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
SgemvFn LibrarySgemvForBenchmark(GemmBackend kind);

}  // namespace neuronmem::linalg::detail
