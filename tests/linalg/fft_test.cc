// stablehlo.fft: hand-computed transforms, a direct DFT in double for 1, 2 and 3 transformed dims with batches
// and prime / composite lengths, inverse and real-transform round trips, Hermitian-symmetry rules of IRFFT,
// Parseval, zero lengths, and the shape and type rules.
#include "linalg/fft.h"

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
constexpr double kPi = 3.14159265358979323846;

Tensor RandomTensor(E t, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor x(t, std::move(dims));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const bool complex = t == E::kC64 || t == E::kC128;
  for (int64_t i = 0; i < x.size(); ++i) x.Set(i, {u(rng), complex ? u(rng) : 0.0});
  return x;
}

Tensor Transform(FftType type, const std::vector<int64_t>& lengths, const Tensor& in) {
  ElementType rt;
  std::vector<int64_t> rd;
  Status s = FftShape(type, in.type, in.dims, lengths, &rt, &rd);
  EXPECT_FALSE(s) << (s ? s->message : "");
  Tensor out(rt, rd);
  s = Fft(type, lengths, in.ref(), out.mut());
  EXPECT_FALSE(s) << (s ? s->message : "");
  return out;
}

// The k-dim DFT of every batch of `in` (trailing dims `block`), by definition, in double.
std::vector<C> DirectDft(const Tensor& in, size_t k, bool inverse) {
  std::vector<int64_t> block(in.dims.end() - k, in.dims.end());
  const int64_t n = NumElements(Span<int64_t>(block));
  const int64_t batches = n ? in.size() / n : 0;
  std::vector<C> out(static_cast<size_t>(in.size()));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t o = 0; o < n; ++o) {
      const auto oi = linalg_test::Unravel(o, block);
      C sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const auto ii = linalg_test::Unravel(i, block);
        double phase = 0;
        for (size_t d = 0; d < k; ++d) phase += double(oi[d] * ii[d] % block[d]) / double(block[d]);
        sum += in.Get(b * n + i) * std::polar(1.0, sign * 2 * kPi * phase);
      }
      out[b * n + o] = inverse ? sum / double(n) : sum;
    }
  }
  return out;
}

::testing::AssertionResult Near(const Tensor& got, const std::vector<C>& want, double tol) {
  std::vector<double> scale(want.size(), 1.0);
  return linalg_test::Close(got, want, scale, tol);
}

TEST(Fft, HandComputed) {
  Tensor x(E::kC64, {4});
  for (int i = 0; i < 4; ++i) x.Set(i, double(i + 1));
  Tensor y = Transform(FftType::kFft, {4}, x);
  EXPECT_TRUE(Near(y, {C(10, 0), C(-2, 2), C(-2, 0), C(-2, -2)}, 1e-6));
  Tensor back = Transform(FftType::kIfft, {4}, y);
  EXPECT_TRUE(Near(back, {1, 2, 3, 4}, 1e-6));

  Tensor impulse(E::kC128, {5});
  impulse.Set(0, 1.0);
  EXPECT_TRUE(Near(Transform(FftType::kFft, {5}, impulse), std::vector<C>(5, C(1, 0)), 1e-15));

  Tensor r(E::kF32, {4});
  for (int i = 0; i < 4; ++i) r.Set(i, double(i + 1));
  Tensor ry = Transform(FftType::kRfft, {4}, r);
  ASSERT_EQ(ry.type, E::kC64);
  ASSERT_EQ(ry.dims, std::vector<int64_t>{3});
  EXPECT_TRUE(Near(ry, {C(10, 0), C(-2, 2), C(-2, 0)}, 1e-6));
  Tensor rb = Transform(FftType::kIrfft, {4}, ry);
  ASSERT_EQ(rb.type, E::kF32);
  EXPECT_TRUE(Near(rb, {1, 2, 3, 4}, 1e-6));
}

TEST(Fft, MatchesTheDefinitionOverOneTwoAndThreeDims) {
  std::mt19937 rng(7);
  struct Case {
    std::vector<int64_t> dims;
    size_t k;
  };
  // 67, 131 and 2 * 67 have a prime factor >= 64: Bluestein's algorithm.
  const Case cases[] = {{{3, 8}, 1}, {{2, 7}, 1},  {{12}, 1},  {{2, 5, 6}, 2}, {{4, 3}, 2}, {{2, 3, 4, 5}, 3},
                        {{1}, 1},    {{2, 67}, 1}, {{131}, 1}, {{67, 3}, 2},   {{134}, 1}};
  for (E t : {E::kC64, E::kC128}) {
    const double tol = t == E::kC64 ? 2e-5 : 1e-12;
    for (const Case& c : cases) {
      const Tensor x = RandomTensor(t, c.dims, rng);
      const std::vector<int64_t> lengths(c.dims.end() - c.k, c.dims.end());
      EXPECT_TRUE(Near(Transform(FftType::kFft, lengths, x), DirectDft(x, c.k, false), tol)) << ElementTypeName(t);
      EXPECT_TRUE(Near(Transform(FftType::kIfft, lengths, x), DirectDft(x, c.k, true), tol)) << ElementTypeName(t);
    }
  }
}

TEST(Fft, RealTransformsAreTheHalfSpectrumAndRoundTrip) {
  std::mt19937 rng(11);
  for (E t : {E::kF32, E::kF64}) {
    const E ct = t == E::kF32 ? E::kC64 : E::kC128;
    const double tol = t == E::kF32 ? 2e-5 : 1e-12;
    for (const std::vector<int64_t>& dims :
         std::vector<std::vector<int64_t>>{{3, 8}, {2, 7}, {2, 4, 6}, {2, 3, 5, 4}, {2, 67}, {3, 134}}) {
      for (size_t k = 1; k <= std::min<size_t>(3, dims.size()); ++k) {
        const Tensor x = RandomTensor(t, dims, rng);
        const std::vector<int64_t> lengths(dims.end() - k, dims.end());
        const Tensor half = Transform(FftType::kRfft, lengths, x);
        // The full complex transform of the same data, cut to L / 2 + 1 in the last dim.
        Tensor xc(ct, dims);
        for (int64_t i = 0; i < x.size(); ++i) xc.Set(i, x.Get(i));
        const Tensor full = Transform(FftType::kFft, lengths, xc);
        const int64_t last = dims.back(), h = last / 2 + 1;
        std::vector<C> want;
        for (int64_t i = 0; i < full.size(); ++i) {
          if (i % last < h) want.push_back(full.Get(i));
        }
        EXPECT_TRUE(Near(half, want, tol)) << k;
        const Tensor back = Transform(FftType::kIrfft, lengths, half);
        std::vector<C> orig;
        for (int64_t i = 0; i < x.size(); ++i) orig.push_back(x.Get(i));
        EXPECT_TRUE(Near(back, orig, tol)) << k;
      }
    }
  }
}

TEST(Fft, IrfftIgnoresImaginaryPartsThatCannotContribute) {
  // L = 4: coefficients 0, 1, 2; the imaginary parts of 0 and 2 are dropped.
  Tensor a(E::kC128, {3});
  a.Set(0, C(4, 5));
  a.Set(1, C(0, 0));
  a.Set(2, C(0, 7));
  const Tensor r = Transform(FftType::kIrfft, {4}, a);
  EXPECT_TRUE(Near(r, {1, 1, 1, 1}, 1e-15));
  // L = 5 (odd): coefficients 0, 1, 2; only 0's imaginary part is dropped.
  Tensor b(E::kC128, {3});
  b.Set(0, C(5, 3));
  const Tensor rb = Transform(FftType::kIrfft, {5}, b);
  EXPECT_TRUE(Near(rb, {1, 1, 1, 1, 1}, 1e-15));
}

TEST(Fft, Parseval) {
  std::mt19937 rng(3);
  const Tensor x = RandomTensor(E::kC128, {64}, rng);
  const Tensor y = Transform(FftType::kFft, {64}, x);
  double ex = 0, ey = 0;
  for (int64_t i = 0; i < 64; ++i) {
    ex += std::norm(x.Get(i));
    ey += std::norm(y.Get(i));
  }
  EXPECT_NEAR(ey, 64 * ex, 1e-9 * ey);
}

TEST(Fft, ZeroLengthsGiveEmptyResults) {
  Tensor x(E::kC64, {3, 0});
  Tensor y = Transform(FftType::kFft, {0}, x);
  EXPECT_EQ(y.dims, (std::vector<int64_t>{3, 0}));
  Tensor r(E::kF32, {2, 0});
  Tensor ry = Transform(FftType::kRfft, {0}, r);
  EXPECT_EQ(ry.dims, (std::vector<int64_t>{2, 0}));
}

TEST(Fft, ShapeAndTypeRules) {
  ElementType rt;
  std::vector<int64_t> rd;
  const std::vector<int64_t> d8 = {2, 8};
  EXPECT_LINALG_CODE(FftShape(FftType::kFft, E::kC64, d8, {}, &rt, &rd), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(FftShape(FftType::kFft, E::kC64, {1, 1, 1, 1}, {1, 1, 1, 1}, &rt, &rd),
                     NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(FftShape(FftType::kFft, E::kC64, d8, {1, 2, 8}, &rt, &rd), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(FftShape(FftType::kFft, E::kC64, d8, {4}, &rt, &rd), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(FftShape(FftType::kFft, E::kF32, d8, {8}, &rt, &rd), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(FftShape(FftType::kRfft, E::kC64, d8, {8}, &rt, &rd), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(FftShape(FftType::kIrfft, E::kF32, d8, {8}, &rt, &rd), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(FftShape(FftType::kFft, E::kC64, d8, {-8}, &rt, &rd), NEURONMEM_STATUS_INVALID_ARGUMENT);
  // IRFFT's operand holds L / 2 + 1 coefficients in the last dim.
  EXPECT_LINALG_CODE(FftShape(FftType::kIrfft, E::kC64, d8, {8}, &rt, &rd), NEURONMEM_STATUS_INVALID_ARGUMENT);
  ASSERT_FALSE(FftShape(FftType::kIrfft, E::kC128, {2, 5}, {8}, &rt, &rd));
  EXPECT_EQ(rt, E::kF64);
  EXPECT_EQ(rd, (std::vector<int64_t>{2, 8}));
  ASSERT_FALSE(FftShape(FftType::kRfft, E::kF32, {3, 4, 9}, {4, 9}, &rt, &rd));
  EXPECT_EQ(rt, E::kC64);
  EXPECT_EQ(rd, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_LINALG_CODE(CheckFft(FftType::kFft, {8}, E::kC64, d8, E::kC128, d8), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_LINALG_CODE(CheckFft(FftType::kFft, {8}, E::kC64, d8, E::kC64, {2, 9}), NEURONMEM_STATUS_INVALID_ARGUMENT);
  FftType t;
  EXPECT_TRUE(FftTypeFromName("IRFFT", &t));
  EXPECT_EQ(t, FftType::kIrfft);
  EXPECT_FALSE(FftTypeFromName("DCT", &t));
  // A failed call writes nothing.
  Tensor x(E::kC64, {2, 8}), out(E::kC64, {2, 4});
  out.Set(0, 42.0);
  EXPECT_LINALG_CODE(Fft(FftType::kFft, {8}, x.ref(), out.mut()), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(out.Get(0), C(42.0));
}

}  // namespace
}  // namespace neuronmem::linalg
