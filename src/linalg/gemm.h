// Internal to src/linalg: one row-major matrix product C = op(A) * op(B) for f32, f64, complex64 and
// complex128, on OpenBLAS (Debian's single-threaded build, loaded privately with dlopen) or Eigen when
// OpenBLAS is not installed. docs/linalg.md has the measurements behind the choice.
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
// T is float, double, std::complex<float> or std::complex<double>. Thread-safe (OpenBLAS calls are
// serialized: its single-threaded build keeps unlocked global buffers).
template <typename T>
void Gemm(int64_t m, int64_t n, int64_t k, MatrixOperand<T> a, MatrixOperand<T> b, T* c, int64_t ldc);

enum class GemmBackend { kOpenBlas, kEigen };

// The backend Gemm uses now: OpenBLAS when it loaded, otherwise Eigen.
GemmBackend ActiveGemmBackend();

// For tests and benchmarks: use Eigen even when OpenBLAS is available (true), or go back to the default.
void ForceEigenGemm(bool force);

// For benchmarks: OpenBLAS's own cblas_sgemm (row-major, no transposes), or null when not loaded.
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
SgemmFn OpenBlasSgemmForBenchmark();

}  // namespace neuronmem::linalg::detail
