#include "linalg/small_gemv.h"

#include <algorithm>
#include <atomic>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace neuronmem::linalg::detail {
namespace {

std::atomic<bool> g_enabled{true};

#if defined(__x86_64__)
#define NEURONMEM_AVX2 __attribute__((target("avx2,fma")))

// Lanes [0, n) of a 256-bit mask (n in 0..8).
NEURONMEM_AVX2 __m256i LaneMask(int64_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes);
}

// The sum of the 8 lanes.
NEURONMEM_AVX2 float Sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 8 floats at p, or the lanes of `mask` (the others 0, not read) when !full.
NEURONMEM_AVX2 inline __m256 Load8(const float* p, bool full, __m256i mask) {
  return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}

// Rows of M contiguous (M(i, kk) = m[i * ld + kk]): one dot product per row, four rows at a time; each row's
// 8-lane partial sums are reduced at the end.
NEURONMEM_AVX2 void RowsAvx2(int64_t rows, int64_t k, const float* m, int64_t ld, const float* x, float* y) {
  const int64_t kv = k & ~int64_t{7};
  const __m256i tail = LaneMask(k - kv);
  const bool has_tail = kv < k;
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* r0 = m + i * ld;
    const float *r1 = r0 + ld, *r2 = r1 + ld, *r3 = r2 + ld;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t kk = 0; kk < kv; kk += 8) {
      const __m256 xv = _mm256_loadu_ps(x + kk);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + kk), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + kk), xv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + kk), xv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + kk), xv, a3);
    }
    if (has_tail) {
      const __m256 xv = _mm256_maskload_ps(x + kv, tail);
      a0 = _mm256_fmadd_ps(_mm256_maskload_ps(r0 + kv, tail), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_maskload_ps(r1 + kv, tail), xv, a1);
      a2 = _mm256_fmadd_ps(_mm256_maskload_ps(r2 + kv, tail), xv, a2);
      a3 = _mm256_fmadd_ps(_mm256_maskload_ps(r3 + kv, tail), xv, a3);
    }
    // [a0 a1 a2 a3] pairwise: lanes 0-3 of the low half and of the high half hold the four rows' partial sums.
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    _mm_storeu_ps(y + i, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
  for (; i < rows; ++i) {
    const float* r = m + i * ld;
    __m256 a = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < kv; kk += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(r + kk), _mm256_loadu_ps(x + kk), a);
    if (has_tail) a = _mm256_fmadd_ps(_mm256_maskload_ps(r + kv, tail), _mm256_maskload_ps(x + kv, tail), a);
    y[i] = Sum8(a);
  }
}

// One step of ColsAvx2: x[kk] times the 16 floats of row kk at r, into (l, h).
NEURONMEM_AVX2 inline void ColStep(const float* r, const float* xk, bool full, __m256i lo, __m256i hi, __m256& l,
                                   __m256& h) {
  const __m256 xb = _mm256_broadcast_ss(xk);
  l = _mm256_fmadd_ps(Load8(r, full, lo), xb, l);
  h = _mm256_fmadd_ps(Load8(r + 8, full, hi), xb, h);
}

// Columns of M contiguous (M(i, kk) = m[kk * ld + i]): y[i0, i0 + 16) accumulates x[kk] times row kk of the
// block, four kk at a time into separate sums (independent FMA chains), added at the end. Lanes past `rows` are
// neither loaded nor stored.
NEURONMEM_AVX2 void ColsAvx2(int64_t rows, int64_t k, const float* m, int64_t ld, const float* x, float* y) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    const int64_t w = std::min<int64_t>(16, rows - i0);
    const __m256i lo = LaneMask(std::min<int64_t>(8, w)), hi = LaneMask(std::max<int64_t>(0, w - 8));
    const bool full = w == 16;
    const float* b = m + i0;
    // Named accumulators (an array of them GCC keeps in memory): u0-u3 for kk modulo 4, low and high 8 lanes.
    __m256 u0l = _mm256_setzero_ps(), u0h = u0l, u1l = u0l, u1h = u0l, u2l = u0l, u2h = u0l, u3l = u0l, u3h = u0l;
    int64_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {
      const float* r = b + kk * ld;
      ColStep(r, x + kk, full, lo, hi, u0l, u0h);
      ColStep(r + ld, x + kk + 1, full, lo, hi, u1l, u1h);
      ColStep(r + 2 * ld, x + kk + 2, full, lo, hi, u2l, u2h);
      ColStep(r + 3 * ld, x + kk + 3, full, lo, hi, u3l, u3h);
    }
    for (; kk < k; ++kk) ColStep(b + kk * ld, x + kk, full, lo, hi, u0l, u0h);
    const __m256 sl = _mm256_add_ps(_mm256_add_ps(u0l, u1l), _mm256_add_ps(u2l, u3l));
    const __m256 sh = _mm256_add_ps(_mm256_add_ps(u0h, u1h), _mm256_add_ps(u2h, u3h));
    if (full) {
      _mm256_storeu_ps(y + i0, sl);
      _mm256_storeu_ps(y + i0 + 8, sh);
    } else {
      _mm256_maskstore_ps(y + i0, lo, sl);
      _mm256_maskstore_ps(y + i0 + 8, hi, sh);
    }
  }
}

// ExactGemm's loops for B's rows contiguous. Built for AVX without FMA, so that no multiply and add can be contracted
// into one rounding: each product and each sum rounds to f32 as the exact path's scalar loop does.
__attribute__((target("avx"))) void ExactAvx(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool a_trans,
                                             const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    const auto a_at = [&](int64_t kk) { return a_trans ? a[kk * lda + i] : a[i * lda + kk]; };
    float* crow = c + i * ldc;
    int64_t j = 0;
    // 64 columns at a time: 8 independent chains of adds keep both adders busy through their latency.
    for (; j + 64 <= n; j += 64) {
      // Named accumulators: GCC keeps an array of them in memory, a store per step.
      __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const __m256 av = _mm256_set1_ps(a_at(kk));
        const float* r = b + kk * ldb + j;
        c0 = _mm256_add_ps(c0, _mm256_mul_ps(av, _mm256_loadu_ps(r)));
        c1 = _mm256_add_ps(c1, _mm256_mul_ps(av, _mm256_loadu_ps(r + 8)));
        c2 = _mm256_add_ps(c2, _mm256_mul_ps(av, _mm256_loadu_ps(r + 16)));
        c3 = _mm256_add_ps(c3, _mm256_mul_ps(av, _mm256_loadu_ps(r + 24)));
        c4 = _mm256_add_ps(c4, _mm256_mul_ps(av, _mm256_loadu_ps(r + 32)));
        c5 = _mm256_add_ps(c5, _mm256_mul_ps(av, _mm256_loadu_ps(r + 40)));
        c6 = _mm256_add_ps(c6, _mm256_mul_ps(av, _mm256_loadu_ps(r + 48)));
        c7 = _mm256_add_ps(c7, _mm256_mul_ps(av, _mm256_loadu_ps(r + 56)));
      }
      float* o = crow + j;
      _mm256_storeu_ps(o, c0);
      _mm256_storeu_ps(o + 8, c1);
      _mm256_storeu_ps(o + 16, c2);
      _mm256_storeu_ps(o + 24, c3);
      _mm256_storeu_ps(o + 32, c4);
      _mm256_storeu_ps(o + 40, c5);
      _mm256_storeu_ps(o + 48, c6);
      _mm256_storeu_ps(o + 56, c7);
    }
    for (; j + 8 <= n; j += 8) {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t kk = 0; kk < k; ++kk)
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(a_at(kk)), _mm256_loadu_ps(b + kk * ldb + j)));
      _mm256_storeu_ps(crow + j, acc);
    }
    for (; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) {
        const float p = a_at(kk) * b[kk * ldb + j];
        acc = acc + p;
      }
      crow[j] = acc;
    }
  }
}

// A strided x or y through copies on the stack (32 KiB, only on this path: the contiguous one keeps a small frame).
__attribute__((noinline)) void StridedGemv(int64_t rows, int64_t k, const float* m, int64_t ld, bool trans,
                                           const float* x, int64_t incx, float* y, int64_t incy) {
  float xbuf[kSmallGemvStrided], ybuf[kSmallGemvStrided];
  if (incx != 1) {
    for (int64_t kk = 0; kk < k; ++kk) xbuf[kk] = x[kk * incx];
    x = xbuf;
  }
  float* out = incy == 1 ? y : ybuf;
  (trans ? ColsAvx2 : RowsAvx2)(rows, k, m, ld, x, out);
  if (incy != 1) {
    for (int64_t i = 0; i < rows; ++i) y[i * incy] = ybuf[i];
  }
}

// The lanes [0, n) of a mask, n in 0..8 (AVX has no integer compare).
__attribute__((target("avx"))) inline __m256i FirstLanes(int64_t n) {
  static const int32_t kOnes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kOnes + 8 - n));
}

// acc + a * col, the product rounded before the sum (no FMA in this target).
__attribute__((target("avx"))) inline __m256 AddProduct(__m256 acc, float a, __m256 col) {
  return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(a), col));
}

// 8 floats of a row of B at p (the lanes of `mask` when !full), or zeros for a row past the last.
__attribute__((target("avx"))) inline __m256 RowChunk(const float* p, bool valid, bool full, __m256i mask) {
  if (!valid) return _mm256_setzero_ps();
  return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}

// ExactGemm's loops for a transposed B (B(kk, j) = b[j * ldb + kk]): 8 columns of the result at a time, each 8 x 8
// block of B transposed in registers so that step kk adds a(kk) times B's column kk to the 8 sums, k ascending as
// the scalar loop does. AVX without FMA, as ExactAvx.
__attribute__((target("avx"))) void ExactAvxTransB(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                                                   bool a_trans, const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    const auto a_at = [&](int64_t kk) { return a_trans ? a[kk * lda + i] : a[i * lda + kk]; };
    for (int64_t j = 0; j < n; j += 8) {
      const int64_t w = std::min<int64_t>(8, n - j);
      const float* rows = b + j * ldb;
      __m256 acc = _mm256_setzero_ps();
      for (int64_t k0 = 0; k0 < k; k0 += 8) {
        const int64_t cnt = std::min<int64_t>(8, k - k0);
        const bool full = cnt == 8;
        const __m256i km = FirstLanes(cnt);
        const float* p = rows + k0;
        const __m256 r0 = RowChunk(p, true, full, km), r1 = RowChunk(p + ldb, w > 1, full, km),
                     r2 = RowChunk(p + 2 * ldb, w > 2, full, km), r3 = RowChunk(p + 3 * ldb, w > 3, full, km),
                     r4 = RowChunk(p + 4 * ldb, w > 4, full, km), r5 = RowChunk(p + 5 * ldb, w > 5, full, km),
                     r6 = RowChunk(p + 6 * ldb, w > 6, full, km), r7 = RowChunk(p + 7 * ldb, w > 7, full, km);
        const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
        const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
        const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
        const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
        const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
        // c<t> holds B(k0 + t, j .. j + 7).
        const __m256 c0 = _mm256_permute2f128_ps(s0, s4, 0x20), c1 = _mm256_permute2f128_ps(s1, s5, 0x20),
                     c2 = _mm256_permute2f128_ps(s2, s6, 0x20), c3 = _mm256_permute2f128_ps(s3, s7, 0x20),
                     c4 = _mm256_permute2f128_ps(s0, s4, 0x31), c5 = _mm256_permute2f128_ps(s1, s5, 0x31),
                     c6 = _mm256_permute2f128_ps(s2, s6, 0x31), c7 = _mm256_permute2f128_ps(s3, s7, 0x31);
        if (full) {  // named registers: an array of the columns would live in memory
          acc = AddProduct(AddProduct(AddProduct(AddProduct(acc, a_at(k0), c0), a_at(k0 + 1), c1), a_at(k0 + 2), c2),
                           a_at(k0 + 3), c3);
          acc =
              AddProduct(AddProduct(AddProduct(AddProduct(acc, a_at(k0 + 4), c4), a_at(k0 + 5), c5), a_at(k0 + 6), c6),
                         a_at(k0 + 7), c7);
        } else {
          const __m256 col[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
          for (int64_t t = 0; t < cnt; ++t) acc = AddProduct(acc, a_at(k0 + t), col[t]);
        }
      }
      if (w == 8) {
        _mm256_storeu_ps(c + i * ldc + j, acc);
      } else {
        _mm256_maskstore_ps(c + i * ldc + j, FirstLanes(w), acc);
      }
    }
  }
}

bool HasAvx() {
  static const bool has = __builtin_cpu_supports("avx");
  return has;
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

}  // namespace

bool SmallGemv(int64_t rows, int64_t k, const float* m, int64_t ld, bool trans, const float* x, int64_t incx, float* y,
               int64_t incy) {
#if defined(__x86_64__)
  if (rows <= 0 || k <= 0 || rows * k > kSmallGemvElements || !g_enabled.load(std::memory_order_relaxed) ||
      !HasAvx2Fma())
    return false;
  if ((incx != 1 && k > kSmallGemvStrided) || (incy != 1 && rows > kSmallGemvStrided)) return false;
  if (incx != 1 || incy != 1) {
    StridedGemv(rows, k, m, ld, trans, x, incx, y, incy);
  } else {
    (trans ? ColsAvx2 : RowsAvx2)(rows, k, m, ld, x, y);
  }
  return true;
#else
  (void)rows, (void)k, (void)m, (void)ld, (void)trans, (void)x, (void)incx, (void)y, (void)incy;
  return false;
#endif
}

bool ExactGemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool a_trans, const float* b, int64_t ldb,
               bool b_trans, float* c, int64_t ldc) {
#if defined(__x86_64__)
  if (!g_enabled.load(std::memory_order_relaxed) || !HasAvx()) return false;
  (b_trans ? ExactAvxTransB : ExactAvx)(m, n, k, a, lda, a_trans, b, ldb, c, ldc);
  return true;
#else
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)a_trans, (void)b, (void)ldb, (void)b_trans, (void)c, (void)ldc;
  return false;
#endif
}

void SetSmallGemvEnabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }
bool SmallGemvEnabled() { return g_enabled.load(std::memory_order_relaxed); }

}  // namespace neuronmem::linalg::detail
