// stablehlo.triangular_solve and stablehlo.cholesky: hand-computed solutions and factors, the defining
// equations checked on random well-conditioned batches for every combination of left_side, lower,
// unit_diagonal and transpose_a and every element type, the unread triangle and diagonal, non-positive-definite
// input, and the shape and type rules.
#include "linalg/triangular.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "linalg_test_util.h"

namespace neuronmem::linalg {
namespace {

using linalg_test::Tensor;
using E = ElementType;
using C = std::complex<double>;
constexpr double kGarbage = 1e6;  // in the triangle (or diagonal) that must not be read

// Sets the first v.size() elements.
void Fill(Tensor* t, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) t->Set(static_cast<int64_t>(i), v[i]);
}

bool IsComplexType(E t) { return t == E::kC64 || t == E::kC128; }

double Tolerance(E t) {
  switch (t) {
    case E::kF16: return 2e-2;
    case E::kBF16: return 1e-1;
    case E::kF32:
    case E::kC64: return 1e-4;
    default: return 1e-11;
  }
}

// Element (r, c) of op(tri(a)) for matrix `batch` of a: the triangle a solve reads, with a unit diagonal if asked.
C OpA(const Tensor& a, int64_t batch, int64_t m, int64_t r, int64_t c, const TriangularSolveParams& p) {
  int64_t i = r, j = c;
  if (p.transpose_a != TransposeA::kNoTranspose) std::swap(i, j);
  if (p.lower ? j > i : i > j) return 0;
  C v = (i == j && p.unit_diagonal) ? C(1) : a.Get(batch * m * m + i * m + j);
  if (p.transpose_a == TransposeA::kAdjoint) v = std::conj(v);
  return v;
}

// A random batch of triangular matrices: a dominant diagonal, garbage in the unread triangle (and on the
// diagonal when unit_diagonal).
Tensor RandomTriangular(E t, std::vector<int64_t> dims, const TriangularSolveParams& p, std::mt19937& rng) {
  Tensor a(t, dims);
  const int64_t m = dims.back();
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (int64_t i = 0; i < a.size(); ++i) {
    const int64_t r = (i / m) % m, c = i % m;
    const bool unread = p.lower ? c > r : r > c;
    C v(u(rng), IsComplexType(t) ? u(rng) : 0.0);
    if (r == c) v += 2.0;
    if (unread || (r == c && p.unit_diagonal)) v = C(kGarbage, IsComplexType(t) ? kGarbage : 0.0);
    if (t == E::kF16 || t == E::kBF16) v = C(std::round(v.real() * 16) / 16, 0);
    a.Set(i, v);
  }
  return a;
}

TEST(TriangularSolve, HandComputed) {
  // Lower [[2, 0], [1, 4]] (the 99 is in the unread upper triangle): x = [1, 2] solves a x = [2, 9].
  Tensor a(E::kF64, {2, 2}), b(E::kF64, {2, 1}), x(E::kF64, {2, 1});
  Fill(&a, {2.0, 99.0, 1.0, 4.0});
  Fill(&b, {2.0, 9.0});
  TriangularSolveParams p;
  ASSERT_FALSE(TriangularSolve(a.ref(), b.ref(), p, x.mut()));
  EXPECT_DOUBLE_EQ(x.Get(0).real(), 1.0);
  EXPECT_DOUBLE_EQ(x.Get(1).real(), 2.0);
  // transpose(a) x = b: [[2, 1], [0, 4]] x = [4, 8] -> x = [1, 2].
  b.Set(0, 4.0);
  b.Set(1, 8.0);
  p.transpose_a = TransposeA::kTranspose;
  ASSERT_FALSE(TriangularSolve(a.ref(), b.ref(), p, x.mut()));
  EXPECT_DOUBLE_EQ(x.Get(0).real(), 1.0);
  EXPECT_DOUBLE_EQ(x.Get(1).real(), 2.0);
  // Right side: x a = b for a row x: x [[2, 0], [1, 4]] = [4, 8] -> x = [1, 2].
  Tensor br(E::kF64, {1, 2}), xr(E::kF64, {1, 2});
  br.Set(0, 4.0);
  br.Set(1, 8.0);
  p.transpose_a = TransposeA::kNoTranspose;
  p.left_side = false;
  ASSERT_FALSE(TriangularSolve(a.ref(), br.ref(), p, xr.mut()));
  EXPECT_DOUBLE_EQ(xr.Get(0).real(), 1.0);
  EXPECT_DOUBLE_EQ(xr.Get(1).real(), 2.0);
  // Unit diagonal: [[1, 0], [1, 1]] x = [4, 8] -> x = [4, 4]; the 2 and 4 on the diagonal are not read.
  p.left_side = true;
  p.unit_diagonal = true;
  ASSERT_FALSE(TriangularSolve(a.ref(), b.ref(), p, x.mut()));
  EXPECT_DOUBLE_EQ(x.Get(0).real(), 4.0);
  EXPECT_DOUBLE_EQ(x.Get(1).real(), 4.0);
}

TEST(TriangularSolve, SolvesTheDefiningEquationForEveryVariantAndType) {
  std::mt19937 rng(5);
  for (E t : {E::kF16, E::kBF16, E::kF32, E::kF64, E::kC64, E::kC128}) {
    for (int mask = 0; mask < 8; ++mask) {
      for (TransposeA tr : {TransposeA::kNoTranspose, TransposeA::kTranspose, TransposeA::kAdjoint}) {
        TriangularSolveParams p;
        p.left_side = mask & 1;
        p.lower = mask & 2;
        p.unit_diagonal = mask & 4;
        p.transpose_a = tr;
        const int64_t m = 4, n = 3;
        const Tensor a = RandomTriangular(t, {2, 3, m, m}, p, rng);
        const std::vector<int64_t> bd =
            p.left_side ? std::vector<int64_t>{2, 3, m, n} : std::vector<int64_t>{2, 3, n, m};
        const Tensor b = linalg_test::Random(t, bd, rng, 4);
        Tensor x(t, bd);
        ASSERT_FALSE(TriangularSolve(a.ref(), b.ref(), p, x.mut()));
        // op(a) x (or x op(a)) reproduces b.
        const int64_t rows = bd[2], cols = bd[3];
        double worst = 0;
        for (int64_t batch = 0; batch < 6; ++batch) {
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
              C sum = 0;
              for (int64_t k = 0; k < m; ++k) {
                sum += p.left_side ? OpA(a, batch, m, r, k, p) * x.Get(batch * rows * cols + k * cols + c)
                                   : x.Get(batch * rows * cols + r * cols + k) * OpA(a, batch, m, k, c, p);
              }
              worst = std::max(worst, std::abs(sum - b.Get(batch * rows * cols + r * cols + c)));
            }
          }
        }
        EXPECT_LT(worst, Tolerance(t) * 8) << ElementTypeName(t) << " mask " << mask << " transpose " << int(tr);
      }
    }
  }
}

TEST(TriangularSolve, ShapeAndTypeRules) {
  TriangularSolveParams p;
  const std::vector<int64_t> a = {2, 3, 3}, b = {2, 3, 4};
  EXPECT_FALSE(CheckTriangularSolve(E::kF32, a, E::kF32, b, p, E::kF32, b));
  EXPECT_LINALG_CODE(CheckTriangularSolve(E::kF32, {3}, E::kF32, {3}, p, E::kF32, {3}),
                     NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckTriangularSolve(E::kF32, {2, 3, 4}, E::kF32, b, p, E::kF32, b),
                     NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckTriangularSolve(E::kF32, a, E::kF32, {3, 3, 4}, p, E::kF32, {3, 3, 4}),
                     NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckTriangularSolve(E::kF32, a, E::kF32, {2, 4, 3}, p, E::kF32, {2, 4, 3}),
                     NEURONMEM_STATUS_INVALID_ARGUMENT);
  p.left_side = false;
  EXPECT_FALSE(CheckTriangularSolve(E::kF32, a, E::kF32, {2, 4, 3}, p, E::kF32, {2, 4, 3}));
  EXPECT_LINALG_CODE(CheckTriangularSolve(E::kF32, a, E::kF64, {2, 4, 3}, p, E::kF32, {2, 4, 3}),
                     NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckTriangularSolve(E::kF32, a, E::kF32, {2, 4, 3}, p, E::kF32, {2, 4, 4}),
                     NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckTriangularSolve(E::kS32, a, E::kS32, {2, 4, 3}, p, E::kS32, {2, 4, 3}),
                     NEURONMEM_STATUS_UNIMPLEMENTED);
  TransposeA t;
  EXPECT_TRUE(TransposeAFromName("ADJOINT", &t));
  EXPECT_EQ(t, TransposeA::kAdjoint);
  EXPECT_FALSE(TransposeAFromName("CONJUGATE", &t));
}

TEST(Cholesky, HandComputed) {
  // [[4, 2], [2, 3]] = L L^T with L = [[2, 0], [1, sqrt(2)]].
  Tensor a(E::kF64, {2, 2}), l(E::kF64, {2, 2});
  Fill(&a, {4.0, kGarbage, 2.0, 3.0});  // the upper triangle is not read when lower
  ASSERT_FALSE(Cholesky(a.ref(), true, l.mut()));
  EXPECT_DOUBLE_EQ(l.Get(0).real(), 2.0);
  EXPECT_DOUBLE_EQ(l.Get(1).real(), 0.0);
  EXPECT_DOUBLE_EQ(l.Get(2).real(), 1.0);
  EXPECT_DOUBLE_EQ(l.Get(3).real(), std::sqrt(2.0));
  a.Set(1, 2.0);
  a.Set(2, kGarbage);  // lower triangle: not read when upper
  ASSERT_FALSE(Cholesky(a.ref(), false, l.mut()));
  EXPECT_DOUBLE_EQ(l.Get(0).real(), 2.0);
  EXPECT_DOUBLE_EQ(l.Get(1).real(), 1.0);
  EXPECT_DOUBLE_EQ(l.Get(2).real(), 0.0);
  EXPECT_DOUBLE_EQ(l.Get(3).real(), std::sqrt(2.0));
}

TEST(Cholesky, ReconstructsRandomHermitianPositiveDefiniteBatches) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (E t : {E::kF16, E::kBF16, E::kF32, E::kF64, E::kC64, E::kC128}) {
    for (bool lower : {true, false}) {
      const int64_t n = 5, batches = 3;
      Tensor a(t, {batches, n, n}), f(t, {batches, n, n});
      std::vector<C> full(static_cast<size_t>(batches * n * n));
      for (int64_t b = 0; b < batches; ++b) {
        // a = m m^H + n I.
        std::vector<C> m(static_cast<size_t>(n * n));
        for (auto& v : m) v = C(u(rng), IsComplexType(t) ? u(rng) : 0.0);
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t c = 0; c < n; ++c) {
            C s = r == c ? C(double(n)) : C(0);
            for (int64_t k = 0; k < n; ++k) s += m[r * n + k] * std::conj(m[c * n + k]);
            if (t == E::kF16 || t == E::kBF16) s = C(std::round(s.real() * 8) / 8, 0);
            full[b * n * n + r * n + c] = s;
          }
        }
        // Symmetrize what was rounded, then store (the real types keep only the real part).
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t c = 0; c < n; ++c) a.Set(b * n * n + r * n + c, full[b * n * n + r * n + c]);
        }
      }
      ASSERT_FALSE(Cholesky(a.ref(), lower, f.mut()));
      double worst = 0;
      for (int64_t b = 0; b < batches; ++b) {
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t c = 0; c < n; ++c) {
            const C v = f.Get(b * n * n + r * n + c);
            if (lower ? c > r : r > c) {
              EXPECT_EQ(v, C(0)) << "the other triangle is zero";
            }
            C s = 0;
            for (int64_t k = 0; k < n; ++k) {
              // lower: (L L^H)[r][c]; upper: (U^H U)[r][c].
              s += lower ? f.Get(b * n * n + r * n + k) * std::conj(f.Get(b * n * n + c * n + k))
                         : std::conj(f.Get(b * n * n + k * n + r)) * f.Get(b * n * n + k * n + c);
            }
            worst = std::max(worst, std::abs(s - a.Get(b * n * n + r * n + c)));
          }
        }
      }
      EXPECT_LT(worst, Tolerance(t) * 20) << ElementTypeName(t) << (lower ? " lower" : " upper");
    }
  }
}

TEST(Cholesky, NotPositiveDefiniteGivesNaNForThatMatrixOnly) {
  Tensor a(E::kF32, {2, 2, 2}), f(E::kF32, {2, 2, 2});
  // Batch 0: [[1, 2], [2, 1]] (eigenvalues 3 and -1); batch 1: the identity.
  Fill(&a, {1.0, 2.0, 2.0, 1.0, 1.0, 0.0, 0.0, 1.0});
  ASSERT_FALSE(Cholesky(a.ref(), true, f.mut()));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(f.Get(i).real())) << i;
  EXPECT_EQ(f.Get(4).real(), 1.0);
  EXPECT_EQ(f.Get(5).real(), 0.0);
  EXPECT_EQ(f.Get(6).real(), 0.0);
  EXPECT_EQ(f.Get(7).real(), 1.0);
}

TEST(Cholesky, ShapeAndTypeRules) {
  EXPECT_FALSE(CheckCholesky(E::kF32, {2, 3, 3}, E::kF32, {2, 3, 3}));
  EXPECT_LINALG_CODE(CheckCholesky(E::kF32, {3}, E::kF32, {3}), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckCholesky(E::kF32, {3, 4}, E::kF32, {3, 4}), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckCholesky(E::kF32, {3, 3}, E::kF64, {3, 3}), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckCholesky(E::kF32, {3, 3}, E::kF32, {2, 3, 3}), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckCholesky(E::kS8, {3, 3}, E::kS8, {3, 3}), NEURONMEM_STATUS_UNIMPLEMENTED);
  Tensor a(E::kF32, {3, 4}), f(E::kF32, {3, 4});
  f.Set(0, 42.0);
  EXPECT_LINALG_CODE(Cholesky(a.ref(), true, f.mut()), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(f.Get(0).real(), 42.0);
}

}  // namespace
}  // namespace neuronmem::linalg
