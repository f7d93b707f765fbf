// convolution against a naive loop written from the spec (explicitly padded and dilated lhs, groups by
// splitting), on random shapes with random dimension orders, strides, dilations, negative padding, window
// reversal and feature/batch groups; the fast (im2col + GEMM) path against the exact one; spec examples;
// edge cases; bad attributes.
#include "linalg/convolution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "linalg/gemm.h"
#include "linalg_test_util.h"

namespace {

using namespace linalg_test;
using neuronmem::linalg::Convolution;
using neuronmem::linalg::ConvolutionExact;
using neuronmem::linalg::ConvolutionParams;
using neuronmem::linalg::ConvolutionShape;
using E = ElementType;

// NCHW-style defaults for `spatial` spatial dims.
ConvolutionParams Plain(int spatial) {
  ConvolutionParams p;
  p.input_batch_dimension = 0;
  p.input_feature_dimension = 1;
  p.kernel_output_feature_dimension = 0;
  p.kernel_input_feature_dimension = 1;
  p.output_batch_dimension = 0;
  p.output_feature_dimension = 1;
  for (int i = 0; i < spatial; ++i) {
    p.input_spatial_dimensions.push_back(2 + i);
    p.kernel_spatial_dimensions.push_back(2 + i);
    p.output_spatial_dimensions.push_back(2 + i);
  }
  return p;
}

// [b, 0, 1, f] x [0, 1, i, o] -> [b, 0, 1, f]: NHWC input, HWIO kernel, NHWC output (2 spatial dims).
ConvolutionParams Nhwc2d() {
  ConvolutionParams p;
  p.input_batch_dimension = 0;
  p.input_feature_dimension = 3;
  p.input_spatial_dimensions = {1, 2};
  p.kernel_input_feature_dimension = 2;
  p.kernel_output_feature_dimension = 3;
  p.kernel_spatial_dimensions = {0, 1};
  p.output_batch_dimension = 0;
  p.output_feature_dimension = 3;
  p.output_spatial_dimensions = {1, 2};
  return p;
}

// The spec, step by step: split into groups, pad and dilate lhs into an explicit array, slide the window,
// reverse it, contract spatial dims then feature. Values as doubles (approx + magnitude), plus the result
// type's exact arithmetic for integers (wrapping) and f16 (rounded per step, emulated in float).
void Naive(const Tensor& lhs, const Tensor& rhs, const ConvolutionParams& p, const std::vector<int64_t>& rdims, E rt,
           Tensor* exact, std::vector<std::complex<double>>* approx, std::vector<double>* scale) {
  const size_t S = p.input_spatial_dimensions.size();
  const int64_t G = p.feature_group_count, B = p.batch_group_count;
  const int64_t O = rhs.dims[p.kernel_output_feature_dimension];
  const int64_t Cg = rhs.dims[p.kernel_input_feature_dimension];
  const int64_t Nout = lhs.dims[p.input_batch_dimension] / B;
  std::vector<int64_t> in(S), k(S), lo(S), hi(S), ld(S), rd(S), st(S), padded(S);
  for (size_t i = 0; i < S; ++i) {
    in[i] = lhs.dims[p.input_spatial_dimensions[i]];
    k[i] = rhs.dims[p.kernel_spatial_dimensions[i]];
    lo[i] = p.padding.empty() ? 0 : p.padding[i].first;
    hi[i] = p.padding.empty() ? 0 : p.padding[i].second;
    ld[i] = p.lhs_dilation.empty() ? 1 : p.lhs_dilation[i];
    rd[i] = p.rhs_dilation.empty() ? 1 : p.rhs_dilation[i];
    st[i] = p.window_strides.empty() ? 1 : p.window_strides[i];
    padded[i] = std::max<int64_t>(0, lo[i] + (in[i] ? (in[i] - 1) * ld[i] + 1 : 0) + hi[i]);
  }
  // padded lhs as [batch][feature][padded spatial...], by scattering each lhs element (pad op semantics).
  const int64_t NB = lhs.dims[p.input_batch_dimension], C = lhs.dims[p.input_feature_dimension];
  std::vector<int64_t> pdims = {NB, C};
  pdims.insert(pdims.end(), padded.begin(), padded.end());
  std::vector<std::complex<double>> pad(neuronmem::linalg::NumElements(pdims), 0.0);
  for (int64_t i = 0; i < lhs.size(); ++i) {
    const auto li = Unravel(i, lhs.dims);
    std::vector<int64_t> pi = {li[p.input_batch_dimension], li[p.input_feature_dimension]};
    bool inside = true;
    for (size_t d = 0; d < S; ++d) {
      const int64_t x = lo[d] + li[p.input_spatial_dimensions[d]] * ld[d];
      inside = inside && x >= 0 && x < padded[d];
      pi.push_back(x);
    }
    if (inside) pad[Ravel(pi, pdims)] = lhs.Get(i);
  }
  const int64_t n = neuronmem::linalg::NumElements(rdims);
  approx->assign(n, 0.0);
  scale->assign(n, 0.0);
  const int64_t kcount = neuronmem::linalg::NumElements(k);
  for (int64_t r = 0; r < n; ++r) {
    const auto ri = Unravel(r, rdims);
    const int64_t b = ri[p.output_batch_dimension], o = ri[p.output_feature_dimension];
    const int64_t fgroup = G > 1 ? o / (O / G) : 0, bgroup = B > 1 ? o / (O / B) : 0;
    std::complex<double> sum = 0;
    double mag = 0;
    uint64_t isum = 0;
    float hsum = 0;
    for (int64_t kk = 0; kk < kcount; ++kk) {
      const auto ki = Unravel(kk, k);
      for (int64_t c = 0; c < Cg; ++c) {
        std::vector<int64_t> pi = {bgroup * Nout + b, fgroup * Cg + c};
        for (size_t d = 0; d < S; ++d) {
          const bool rev = !p.window_reversal.empty() && p.window_reversal[d];
          pi.push_back(ri[p.output_spatial_dimensions[d]] * st[d] + (rev ? k[d] - 1 - ki[d] : ki[d]) * rd[d]);
        }
        std::vector<int64_t> rj(rhs.dims.size());
        rj[p.kernel_output_feature_dimension] = o;
        rj[p.kernel_input_feature_dimension] = c;
        for (size_t d = 0; d < S; ++d) rj[p.kernel_spatial_dimensions[d]] = ki[d];
        const auto a = pad[Ravel(pi, pdims)], w = rhs.Get(Ravel(rj, rhs.dims));
        sum += a * w;
        mag += std::abs(a) * std::abs(w);
        isum += uint64_t(int64_t(a.real())) * uint64_t(int64_t(w.real()));
        hsum = float(Eigen::half(hsum + float(Eigen::half(float(a.real()) * float(w.real())))));
      }
    }
    (*approx)[r] = sum;
    (*scale)[r] = mag;
    if (rt == E::kF16) exact->Set(r, hsum);
    if (rt == E::kS32) exact->as<int32_t>()[r] = static_cast<int32_t>(isum);
    if (rt == E::kS8) exact->as<int8_t>()[r] = static_cast<int8_t>(isum);
  }
}

// A random convolution: 0-3 spatial dims, every dimension list in a random order, random strides,
// dilations, padding in [-2, 3], reversal, and either feature or batch groups.
ConvolutionParams RandomParams(std::mt19937& rng, std::vector<int64_t>* ldims, std::vector<int64_t>* rdims) {
  std::uniform_int_distribution<int> spatial_dist(0, 3), small(1, 3), pad(-2, 3), coin(0, 1), groups(1, 3);
  const int S = spatial_dist(rng);
  const int rank = S + 2;
  ConvolutionParams p;
  auto order = [&]() {
    std::vector<int64_t> v(rank);
    std::iota(v.begin(), v.end(), 0);
    std::shuffle(v.begin(), v.end(), rng);
    return v;
  };
  const auto lo = order(), ko = order(), oo = order();
  p.input_batch_dimension = lo[0];
  p.input_feature_dimension = lo[1];
  p.kernel_input_feature_dimension = ko[0];
  p.kernel_output_feature_dimension = ko[1];
  p.output_batch_dimension = oo[0];
  p.output_feature_dimension = oo[1];
  const int64_t g = groups(rng);
  if (coin(rng))
    p.feature_group_count = g;
  else
    p.batch_group_count = g;
  const int64_t cg = small(rng), og = small(rng), nb = small(rng) * p.batch_group_count;
  ldims->assign(rank, 0);
  rdims->assign(rank, 0);
  (*ldims)[p.input_batch_dimension] = nb;
  (*ldims)[p.input_feature_dimension] = cg * p.feature_group_count;
  (*rdims)[p.kernel_input_feature_dimension] = cg;
  (*rdims)[p.kernel_output_feature_dimension] = og * p.feature_group_count * p.batch_group_count;
  for (int i = 0; i < S; ++i) {
    p.input_spatial_dimensions.push_back(lo[2 + i]);
    p.kernel_spatial_dimensions.push_back(ko[2 + i]);
    p.output_spatial_dimensions.push_back(oo[2 + i]);
    (*ldims)[lo[2 + i]] = std::uniform_int_distribution<int>(1, 7)(rng);
    (*rdims)[ko[2 + i]] = small(rng);
    p.window_strides.push_back(small(rng));
    p.lhs_dilation.push_back(small(rng));
    p.rhs_dilation.push_back(small(rng));
    p.padding.push_back({pad(rng), pad(rng)});
    p.window_reversal.push_back(coin(rng));
  }
  return p;
}

void CheckCase(const Tensor& lhs, const Tensor& rhs, const ConvolutionParams& p, E rt) {
  std::vector<int64_t> rdims;
  ASSERT_LINALG_OK(ConvolutionShape(lhs.dims, rhs.dims, p, &rdims));
  Tensor fast(rt, rdims), exact_path(rt, rdims), want(rt, rdims);
  ASSERT_LINALG_OK(Convolution(lhs.ref(), rhs.ref(), p, fast.mut()));
  ASSERT_LINALG_OK(ConvolutionExact(lhs.ref(), rhs.ref(), p, exact_path.mut()));
  std::vector<std::complex<double>> approx;
  std::vector<double> scale;
  Naive(lhs, rhs, p, rdims, rt, &want, &approx, &scale);
  if (rt == E::kF16 || rt == E::kS32 || rt == E::kS8) {
    EXPECT_TRUE(BitEqual(exact_path, want));
    EXPECT_TRUE(BitEqual(fast, want));
  } else {
    const double tol = (rt == E::kF32 || rt == E::kC64) ? 1e-6 : 1e-14;
    EXPECT_TRUE(Close(fast, approx, scale, tol)) << "fast path";
    EXPECT_TRUE(Close(exact_path, approx, scale, tol)) << "exact path";
  }
}

using ConvolutionTypes = TypeAndBackendTest;

TEST_P(ConvolutionTypes, RandomConvolutionsMatchNaiveLoop) {
  const E t = std::get<0>(GetParam());
  std::mt19937 rng(77 + int(t));
  int nonempty = 0;
  for (int iter = 0; iter < 150; ++iter) {
    std::vector<int64_t> ldims, rdims;
    const ConvolutionParams p = RandomParams(rng, &ldims, &rdims);
    SCOPED_TRACE("iteration " + std::to_string(iter));
    const Tensor lhs = Random(t, ldims, rng), rhs = Random(t, rdims, rng);
    std::vector<int64_t> out;
    ASSERT_LINALG_OK(ConvolutionShape(ldims, rdims, p, &out));
    nonempty += neuronmem::linalg::NumElements(out) > 0;
    CheckCase(lhs, rhs, p, t);
  }
  EXPECT_GT(nonempty, 100);  // the random attributes leave most results non-empty
}

INSTANTIATE_TEST_SUITE_P(Types, ConvolutionTypes,
                         ::testing::Combine(::testing::Values(E::kF32, E::kF64, E::kC64, E::kF16, E::kS32, E::kS8),
                                            ::testing::ValuesIn(kAllGemmBackends)),
                         TypeAndBackendName);

TEST(Convolution, SpecExample) {
  // The spec's example: NHWC input 1x4x4x1, HWIO kernel 3x3x1x1 of ones, stride 4, lhs dilation 2.
  ConvolutionParams p = Nhwc2d();
  p.window_strides = {4, 4};
  p.padding = {{0, 0}, {0, 0}};
  p.lhs_dilation = {2, 2};
  p.rhs_dilation = {1, 1};
  p.window_reversal = {false, false};
  Tensor lhs(E::kS64, {1, 4, 4, 1}), rhs(E::kS64, {3, 3, 1, 1}), out(E::kS64, {1, 2, 2, 1});
  const int64_t l[] = {1, 2, 5, 6, 3, 4, 7, 8, 10, 11, 14, 15, 12, 13, 16, 17};
  std::copy(l, l + 16, lhs.as<int64_t>());
  for (int i = 0; i < 9; ++i) rhs.as<int64_t>()[i] = 1;
  ASSERT_LINALG_OK(Convolution(lhs.ref(), rhs.ref(), p, out.mut()));
  const int64_t want[] = {10, 26, 46, 62};
  EXPECT_TRUE(std::equal(want, want + 4, out.as<int64_t>()));
}

TEST(Convolution, ConformanceShapes) {
  // The shapes of the conformance files (conv_general_dilated ...): feature groups, rhs dilation, stride and
  // padding larger than the input, lhs dilation.
  std::mt19937 rng(3);
  {
    ConvolutionParams p = Plain(2);
    p.feature_group_count = 3;
    CheckCase(Random(E::kF32, {2, 3, 9, 9}, rng), Random(E::kF32, {12, 1, 3, 3}, rng), p, E::kF32);
  }
  {
    ConvolutionParams p = Plain(2);
    p.window_strides = {2, 2};
    p.padding = {{3, 3}, {3, 3}};
    CheckCase(Random(E::kF32, {1, 3, 2, 2}, rng), Random(E::kF32, {64, 3, 7, 7}, rng), p, E::kF32);
  }
  {
    // NHWC x HWIO with lhs dilation.
    ConvolutionParams p = Nhwc2d();
    p.padding = {{1, 1}, {2, 2}};
    p.lhs_dilation = {2, 2};
    std::vector<int64_t> out;
    ASSERT_LINALG_OK(ConvolutionShape(std::vector<int64_t>{1, 16, 16, 2}, std::vector<int64_t>{2, 3, 2, 2}, p, &out));
    EXPECT_EQ(out, (std::vector<int64_t>{1, 32, 33, 2}));
    CheckCase(Random(E::kF32, {1, 16, 16, 2}, rng), Random(E::kF32, {2, 3, 2, 2}, rng), p, E::kF32);
  }
}

TEST(Convolution, EdgeCases) {
  std::mt19937 rng(11);
  // Window larger than the padded input: empty spatial result.
  ConvolutionParams p = Plain(1);
  std::vector<int64_t> out;
  ASSERT_LINALG_OK(ConvolutionShape(std::vector<int64_t>{1, 1, 2}, std::vector<int64_t>{1, 1, 3}, p, &out));
  EXPECT_EQ(out, (std::vector<int64_t>{1, 1, 0}));
  // Padding that cuts the whole input away: padded size <= 0.
  p.padding = {{-2, -1}};
  ASSERT_LINALG_OK(ConvolutionShape(std::vector<int64_t>{1, 1, 3}, std::vector<int64_t>{1, 1, 1}, p, &out));
  EXPECT_EQ(out, (std::vector<int64_t>{1, 1, 0}));
  // Zero input features: every output is zero.
  Tensor lhs(E::kF32, {2, 0, 4}), rhs(E::kF32, {3, 0, 2}), res(E::kF32, {2, 3, 3});
  for (int i = 0; i < 18; ++i) res.as<float>()[i] = 5;
  ASSERT_LINALG_OK(Convolution(lhs.ref(), rhs.ref(), Plain(1), res.mut()));
  for (int i = 0; i < 18; ++i) EXPECT_EQ(res.as<float>()[i], 0.0f);
  // No spatial dims: a matrix product.
  CheckCase(Random(E::kF32, {3, 4}, rng), Random(E::kF32, {5, 4}, rng), Plain(0), E::kF32);
  // NaN and inf propagate, and padding zeros times inf give NaN (as in the reference).
  ConvolutionParams padded = Plain(1);
  padded.padding = {{1, 0}};
  Tensor nl(E::kF32, {1, 1, 2}), nr(E::kF32, {1, 1, 2}), no(E::kF32, {1, 1, 2});
  nl.Set(0, 1);
  nl.Set(1, NAN);
  nr.Set(0, INFINITY);
  nr.Set(1, 1);
  for (bool exact : {false, true}) {
    ASSERT_LINALG_OK(exact ? ConvolutionExact(nl.ref(), nr.ref(), padded, no.mut())
                           : Convolution(nl.ref(), nr.ref(), padded, no.mut()));
    EXPECT_TRUE(std::isnan(no.as<float>()[0])) << "0 (padding) * inf";
    EXPECT_TRUE(std::isnan(no.as<float>()[1])) << "NaN input";
  }
}

TEST(Convolution, BadAttributesAreInvalidArgument) {
  const auto code = NEURONMEM_STATUS_INVALID_ARGUMENT;
  Tensor lhs(E::kF32, {1, 2, 5}), rhs(E::kF32, {3, 2, 2}), res(E::kF32, {1, 3, 4});
  ASSERT_LINALG_OK(Convolution(lhs.ref(), rhs.ref(), Plain(1), res.mut()));
  auto bad = [&](auto mutate) {
    ConvolutionParams p = Plain(1);
    mutate(p);
    return Convolution(lhs.ref(), rhs.ref(), p, res.mut());
  };
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.window_strides = {0}; }), code);
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.window_strides = {1, 1}; }), code);
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.lhs_dilation = {-1}; }), code);
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.input_feature_dimension = 0; }), code);
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.kernel_spatial_dimensions = {3}; }), code);
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.output_spatial_dimensions = {}; }), code);
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.feature_group_count = 0; }), code);
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.feature_group_count = 2; }), code);  // kernel in != 2/2
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.batch_group_count = 2; }), code);    // batch 1 % 2
  EXPECT_LINALG_CODE(bad([](ConvolutionParams& p) { p.padding = {{1, 0}}; }), code);       // result dims change
  Tensor r2(E::kF32, {3, 2}), l2(E::kF32, {1, 2, 5});
  EXPECT_LINALG_CODE(Convolution(l2.ref(), r2.ref(), Plain(1), res.mut()), code);  // ranks differ
  EXPECT_LINALG_CODE(Convolution(lhs.ref(), rhs.ref(), Plain(1), {E::kF8E5M2, res.bytes.data(), res.dims}),
                     NEURONMEM_STATUS_UNIMPLEMENTED);
}

}  // namespace
