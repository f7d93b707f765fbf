#include "linalg/gemm.h"

#include <dlfcn.h>

#include <Eigen/Core>

#include <atomic>
#include <climits>
#include <complex>
#include <mutex>

#include "linalg/small_gemv.h"

namespace neuronmem::linalg::detail {
namespace {

// CBLAS enum values (cblas.h); declared here so that building needs no OpenBLAS headers.
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;
constexpr int kTrans = 112;

using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*,
                         int);
using DgemvFn = void (*)(int, int, int, int, double, const double*, int, const double*, int, double, double*, int);
using ZgemmFn = void (*)(int, int, int, int, int, int, const void*, const void*, int, const void*, int, const void*,
                         void*, int);

// One CBLAS library loaded privately with dlopen (RTLD_LOCAL: its BLAS symbols do not interpose on the host's)
// and never unloaded. `serialize`: its calls take `mu` (OpenBLAS's single-threaded build keeps unlocked global
// buffers); BLIS's serial build is thread-safe (its memory pools take their own locks), so every core calls it
// at once, each call on the calling thread only.
struct Blas {
  GemmBackend kind = GemmBackend::kEigen;
  void* handle = nullptr;
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  ZgemmFn cgemm = nullptr;
  ZgemmFn zgemm = nullptr;
  SgemvFn sgemv = nullptr;
  DgemvFn dgemv = nullptr;
  bool serialize = false;
  std::mutex mu;
};

#ifndef NEURONMEM_BLIS_SERIAL_PATH
#define NEURONMEM_BLIS_SERIAL_PATH ""
#endif
#ifndef NEURONMEM_OPENBLAS_SERIAL_PATH
#define NEURONMEM_OPENBLAS_SERIAL_PATH ""
#endif

// The library at `path` with every CBLAS function Gemm calls, or null (empty path, not installed, or a symbol
// missing). Neither build starts threads.
Blas* LoadBlas(const char* path, GemmBackend kind) {
  if (path[0] == '\0') return nullptr;
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return nullptr;
  auto* b = new Blas;
  b->kind = kind;
  b->handle = h;
  b->sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
  b->dgemm = reinterpret_cast<DgemmFn>(dlsym(h, "cblas_dgemm"));
  b->cgemm = reinterpret_cast<ZgemmFn>(dlsym(h, "cblas_cgemm"));
  b->zgemm = reinterpret_cast<ZgemmFn>(dlsym(h, "cblas_zgemm"));
  b->sgemv = reinterpret_cast<SgemvFn>(dlsym(h, "cblas_sgemv"));
  b->dgemv = reinterpret_cast<DgemvFn>(dlsym(h, "cblas_dgemv"));
  b->serialize = kind == GemmBackend::kOpenBlas;
  if (kind == GemmBackend::kBlis) {
    // Only a build without threading is taken: it runs each call on the caller's thread whatever the
    // environment says (BLIS_NUM_THREADS, OMP_NUM_THREADS), so no call spawns threads or waits on a pool.
    using EnabledFn = long (*)();
    auto threading = reinterpret_cast<EnabledFn>(dlsym(h, "bli_info_get_enable_threading"));
    if (threading == nullptr || threading() != 0) b->sgemm = nullptr;
  }
  if (!b->sgemm || !b->dgemm || !b->cgemm || !b->zgemm || !b->sgemv || !b->dgemv) {
    dlclose(h);
    delete b;
    return nullptr;
  }
  return b;
}

// Each library once, on first use.
Blas* Blis() {
  static Blas* blas = LoadBlas(NEURONMEM_BLIS_SERIAL_PATH, GemmBackend::kBlis);
  return blas;
}
Blas* OpenBlas() {
  static Blas* blas = LoadBlas(NEURONMEM_OPENBLAS_SERIAL_PATH, GemmBackend::kOpenBlas);
  return blas;
}

// The library of `kind` (null for Eigen or when it did not load).
Blas* BlasOf(GemmBackend kind) {
  switch (kind) {
    case GemmBackend::kBlis: return Blis();
    case GemmBackend::kOpenBlas: return OpenBlas();
    case GemmBackend::kEigen: return nullptr;
  }
  return nullptr;
}

// The default: BLIS's serial build, else OpenBLAS's serial build (serialized), else Eigen (null).
Blas* DefaultBlas() {
  static Blas* blas = Blis() != nullptr ? Blis() : OpenBlas();
  return blas;
}

constexpr int kNotForced = -1;
std::atomic<int> g_forced{kNotForced};

Blas* ActiveBlas() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  return forced == kNotForced ? DefaultBlas() : BlasOf(static_cast<GemmBackend>(forced));
}

template <typename T, int Order>
using MatMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;
template <typename T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;

// op(X) as an Eigen map: a row-major m x k view, or the col-major view of the transposed storage.
template <typename T, typename F>
void WithMap(int64_t rows, int64_t cols, MatrixOperand<T> x, F&& f) {
  if (!x.trans) {
    f(MatMap<T, Eigen::RowMajor>(x.data, rows, cols, Eigen::OuterStride<>(x.ld)));
  } else {
    f(MatMap<T, Eigen::ColMajor>(x.data, rows, cols, Eigen::OuterStride<>(x.ld)));
  }
}

template <typename T>
void EigenGemm(int64_t m, int64_t n, int64_t k, MatrixOperand<T> a, MatrixOperand<T> b, T* c, int64_t ldc) {
  OutMap<T> cm(c, m, n, Eigen::OuterStride<>(ldc));
  WithMap(m, k, a, [&](const auto& am) { WithMap(k, n, b, [&](const auto& bm) { cm.noalias() = am * bm; }); });
}

bool FitsInt(int64_t v) { return v <= INT_MAX; }

// One row of output, C[1 x n] = a[1 x k] * op(B)[k x n], as the matrix-vector product it is (real types):
// OpenBLAS's GEMM packs op(B) into its panels first, which for one row costs more than the product (a
// transposed B, attention's keys, takes its slowest path).
template <typename T, typename Gemv>
void GemvRow(Gemv gemv, int64_t n, int64_t k, MatrixOperand<T> a, MatrixOperand<T> b, T* c) {
  // Element j of row a: a.data[j] (stored 1 x k) or a.data[j * ld] (stored k x 1, transposed).
  const int inca = a.trans ? int(a.ld) : 1;
  if (!b.trans) {  // B stored k x n: c = B^T a
    gemv(kRowMajor, kTrans, int(k), int(n), T(1), b.data, int(b.ld), a.data, inca, T(0), c, 1);
  } else {  // B stored n x k: c = B a
    gemv(kRowMajor, kNoTrans, int(n), int(k), T(1), b.data, int(b.ld), a.data, inca, T(0), c, 1);
  }
}

// C = A * B as SmallGemv's y = M x when C is one row (y = C's row, M = op(B) transposed, x = op(A)'s row) or one
// column (y = C's column, M = op(A), x = op(B)'s column). False when SmallGemv declines.
bool SmallGemvProduct(int64_t m, int64_t n, int64_t k, MatrixOperand<float> a, MatrixOperand<float> b, float* c,
                      int64_t ldc) {
  if (m == 1) return SmallGemv(n, k, b.data, b.ld, !b.trans, a.data, a.trans ? a.ld : 1, c, 1);
  if (n == 1) return SmallGemv(m, k, a.data, a.ld, a.trans, b.data, b.trans ? 1 : b.ld, c, ldc);
  return false;
}

}  // namespace

template <typename T>
void Gemm(int64_t m, int64_t n, int64_t k, MatrixOperand<T> a, MatrixOperand<T> b, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = T(0);
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (SmallGemvProduct(m, n, k, a, b, c, ldc)) return;
  }
  Blas* blas = ActiveBlas();
  if (blas == nullptr || !FitsInt(m) || !FitsInt(n) || !FitsInt(k) || !FitsInt(a.ld) || !FitsInt(b.ld) ||
      !FitsInt(ldc)) {
    EigenGemm(m, n, k, a, b, c, ldc);
    return;
  }
  const int ta = a.trans ? kTrans : kNoTrans;
  const int tb = b.trans ? kTrans : kNoTrans;
  std::unique_lock<std::mutex> lock(blas->mu, std::defer_lock);
  if (blas->serialize) lock.lock();
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (m == 1) {
      if constexpr (std::is_same_v<T, float>) {
        GemvRow(blas->sgemv, n, k, a, b, c);
      } else {
        GemvRow(blas->dgemv, n, k, a, b, c);
      }
      return;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    blas->sgemm(kRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a.data, int(a.ld), b.data, int(b.ld), 0.0f, c,
                int(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    blas->dgemm(kRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a.data, int(a.ld), b.data, int(b.ld), 0.0, c, int(ldc));
  } else {
    const T one(1), zero(0);
    auto fn = std::is_same_v<T, std::complex<float>> ? blas->cgemm : blas->zgemm;
    fn(kRowMajor, ta, tb, int(m), int(n), int(k), &one, a.data, int(a.ld), b.data, int(b.ld), &zero, c, int(ldc));
  }
}

template void Gemm<float>(int64_t, int64_t, int64_t, MatrixOperand<float>, MatrixOperand<float>, float*, int64_t);
template void Gemm<double>(int64_t, int64_t, int64_t, MatrixOperand<double>, MatrixOperand<double>, double*, int64_t);
template void Gemm<std::complex<float>>(int64_t, int64_t, int64_t, MatrixOperand<std::complex<float>>,
                                        MatrixOperand<std::complex<float>>, std::complex<float>*, int64_t);
template void Gemm<std::complex<double>>(int64_t, int64_t, int64_t, MatrixOperand<std::complex<double>>,
                                         MatrixOperand<std::complex<double>>, std::complex<double>*, int64_t);

GemmBackend ActiveGemmBackend() {
  const Blas* blas = ActiveBlas();
  return blas != nullptr ? blas->kind : GemmBackend::kEigen;
}

bool ForceGemmBackend(GemmBackend kind) {
  if (kind != GemmBackend::kEigen && BlasOf(kind) == nullptr) return false;
  g_forced.store(static_cast<int>(kind), std::memory_order_relaxed);
  return true;
}

void ResetGemmBackend() { g_forced.store(kNotForced, std::memory_order_relaxed); }

void ForceEigenGemm(bool force) {
  if (force) {
    ForceGemmBackend(GemmBackend::kEigen);
  } else {
    ResetGemmBackend();
  }
}

SgemmFn LibrarySgemmForBenchmark(GemmBackend kind) {
  const Blas* blas = BlasOf(kind);
  return blas != nullptr ? blas->sgemm : nullptr;
}

SgemvFn LibrarySgemvForBenchmark(GemmBackend kind) {
  const Blas* blas = BlasOf(kind);
  return blas != nullptr ? blas->sgemv : nullptr;
}

}  // namespace neuronmem::linalg::detail
