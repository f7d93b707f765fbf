// dot_general against a naive loop written from the spec, on random shapes and dimension numbers, for
// every element type, with both matrix-product backends; spec example; edge cases; bad shapes.
#include "linalg/dot_general.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <thread>

#include "linalg/gemm.h"
#include "linalg/small_gemv.h"
#include "linalg_test_util.h"

namespace {

using namespace linalg_test;
using neuronmem::linalg::DotDimensionNumbers;
using neuronmem::linalg::DotGeneral;
using neuronmem::linalg::DotGeneralShape;
using E = ElementType;

struct Dn {
  std::vector<int64_t> lb, rb, lc, rc;
  DotDimensionNumbers view() const { return {lb, rb, lc, rc}; }
};

std::vector<int64_t> Free(size_t rank, const std::vector<int64_t>& b, const std::vector<int64_t>& c) {
  std::vector<int64_t> f;
  for (int64_t d = 0; d < int64_t(rank); ++d) {
    if (std::count(b.begin(), b.end(), d) == 0 && std::count(c.begin(), c.end(), d) == 0) f.push_back(d);
  }
  return f;
}

// The spec's formula, element by element, with the accumulation the reference interpreter does in the
// result type: exact wrap for integers, or/and for pred, f16/bf16 rounded after each step (emulated here in
// float, independently of the library's double-based rounding), doubles for f32/f64/complex (compared
// with a tolerance). Returns the expected values and a magnitude bound per element.
void Naive(const Tensor& lhs, const Tensor& rhs, const Dn& dn, E rt, const std::vector<int64_t>& rdims, Tensor* exact,
           std::vector<std::complex<double>>* approx, std::vector<double>* scale) {
  const auto lf = Free(lhs.dims.size(), dn.lb, dn.lc), rf = Free(rhs.dims.size(), dn.rb, dn.rc);
  std::vector<int64_t> cdims;
  for (int64_t a : dn.lc) cdims.push_back(lhs.dims[a]);
  const int64_t csize = neuronmem::linalg::NumElements(cdims);
  const int64_t n = neuronmem::linalg::NumElements(rdims);
  approx->assign(n, 0.0);
  scale->assign(n, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    const auto ri = Unravel(r, rdims);
    std::vector<int64_t> li(lhs.dims.size()), rj(rhs.dims.size());
    size_t p = 0;
    for (size_t i = 0; i < dn.lb.size(); ++i, ++p) li[dn.lb[i]] = rj[dn.rb[i]] = ri[p];
    for (int64_t a : lf) li[a] = ri[p++];
    for (int64_t a : rf) rj[a] = ri[p++];
    std::complex<double> sum = 0;
    double mag = 0;
    uint64_t isum = 0;
    bool any = false;
    float hsum = 0;
    for (int64_t c = 0; c < csize; ++c) {
      const auto ci = Unravel(c, cdims);
      for (size_t i = 0; i < dn.lc.size(); ++i) li[dn.lc[i]] = rj[dn.rc[i]] = ci[i];
      const auto a = lhs.Get(Ravel(li, lhs.dims)), b = rhs.Get(Ravel(rj, rhs.dims));
      sum += a * b;
      mag += std::abs(a) * std::abs(b);
      isum += uint64_t(int64_t(a.real())) * uint64_t(int64_t(b.real()));
      any = any || (a.real() != 0 && b.real() != 0);
      if (rt == E::kF16) {
        const float prod = float(Eigen::half(float(a.real()) * float(b.real())));
        hsum = float(Eigen::half(hsum + prod));
      } else if (rt == E::kBF16) {
        const float prod = float(Eigen::bfloat16(float(a.real()) * float(b.real())));
        hsum = float(Eigen::bfloat16(hsum + prod));
      }
    }
    (*approx)[r] = sum;
    (*scale)[r] = mag;
    if (rt == E::kPred)
      exact->Set(r, any ? 1 : 0);
    else if (rt == E::kF16 || rt == E::kBF16)
      exact->Set(r, hsum);
    else if (neuronmem::IsInteger(rt)) {
      detail::Dispatch(rt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (detail::kIsInt<T>) exact->as<T>()[r] = static_cast<T>(isum);
      });
    }
  }
}

// Random dimension numbers: `nb` batching, `nc` contracting and some free dims, each operand's axes in a
// random order.
void RandomCase(std::mt19937& rng, int nb, int nc, int nlf, int nrf, std::vector<int64_t>* ldims,
                std::vector<int64_t>* rdims, Dn* dn, int max_dim) {
  std::uniform_int_distribution<int> size(1, max_dim);
  std::vector<int64_t> bs(nb), cs(nc), lfs(nlf), rfs(nrf);
  for (auto* v : {&bs, &cs, &lfs, &rfs}) {
    for (auto& x : *v) x = size(rng);
  }
  const int lr = nb + nc + nlf, rr = nb + nc + nrf;
  std::vector<int64_t> lperm(lr), rperm(rr);
  std::iota(lperm.begin(), lperm.end(), 0);
  std::iota(rperm.begin(), rperm.end(), 0);
  std::shuffle(lperm.begin(), lperm.end(), rng);
  std::shuffle(rperm.begin(), rperm.end(), rng);
  ldims->assign(lr, 0);
  rdims->assign(rr, 0);
  *dn = {};
  int li = 0, ri = 0;
  for (int i = 0; i < nb; ++i) {
    dn->lb.push_back(lperm[li]);
    (*ldims)[lperm[li++]] = bs[i];
    dn->rb.push_back(rperm[ri]);
    (*rdims)[rperm[ri++]] = bs[i];
  }
  for (int i = 0; i < nc; ++i) {
    dn->lc.push_back(lperm[li]);
    (*ldims)[lperm[li++]] = cs[i];
    dn->rc.push_back(rperm[ri]);
    (*rdims)[rperm[ri++]] = cs[i];
  }
  for (int i = 0; i < nlf; ++i) (*ldims)[lperm[li++]] = lfs[i];
  for (int i = 0; i < nrf; ++i) (*rdims)[rperm[ri++]] = rfs[i];
}

// `got` (result type rt, dims rdims) against the naive loop: bit-equal where the result is exact, else within the
// type's tolerance.
void ExpectNaive(const Tensor& lhs, const Tensor& rhs, const Dn& dn, E rt, const std::vector<int64_t>& rdims,
                 const Tensor& got) {
  Tensor exact(rt, rdims);
  std::vector<std::complex<double>> approx;
  std::vector<double> scale;
  Naive(lhs, rhs, dn, rt, rdims, &exact, &approx, &scale);
  if (rt == E::kF32 || rt == E::kC64) {
    EXPECT_TRUE(Close(got, approx, scale, 1e-6));
  } else if (rt == E::kF64 || rt == E::kC128) {
    EXPECT_TRUE(Close(got, approx, scale, 1e-14));
  } else {
    EXPECT_TRUE(BitEqual(got, exact));
  }
}

void CheckAgainstNaive(const Tensor& lhs, const Tensor& rhs, const Dn& dn, E rt) {
  std::vector<int64_t> rdims;
  ASSERT_LINALG_OK(DotGeneralShape(lhs.dims, rhs.dims, dn.view(), &rdims));
  Tensor got(rt, rdims);
  ASSERT_LINALG_OK(DotGeneral(lhs.ref(), rhs.ref(), dn.view(), got.mut()));
  ExpectNaive(lhs, rhs, dn, rt, rdims, got);
}

using DotGeneralTypes = TypeAndBackendTest;

TEST_P(DotGeneralTypes, RandomShapesMatchNaiveLoop) {
  const E t = std::get<0>(GetParam());
  std::mt19937 rng(1234 + int(t));
  for (int iter = 0; iter < 60; ++iter) {
    std::uniform_int_distribution<int> count(0, 2);
    std::vector<int64_t> ldims, rdims;
    Dn dn;
    RandomCase(rng, count(rng), count(rng), count(rng), count(rng), &ldims, &rdims, &dn, 5);
    SCOPED_TRACE("iteration " + std::to_string(iter));
    CheckAgainstNaive(Random(t, ldims, rng), Random(t, rdims, rng), dn, t);
  }
}

TEST_P(DotGeneralTypes, MatrixLayoutsAndLongContractions) {
  const E t = std::get<0>(GetParam());
  std::mt19937 rng(99 + int(t));
  // Plain, transposed lhs, transposed rhs, both, and a batch dim in the middle: direct and packed operands.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{17, 40}, {40, 9}}, {{40, 17}, {40, 9}}, {{17, 40}, {9, 40}}, {{40, 17}, {9, 40}}};
  const std::vector<Dn> dns = {{{}, {}, {1}, {0}}, {{}, {}, {0}, {0}}, {{}, {}, {1}, {1}}, {{}, {}, {0}, {1}}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    CheckAgainstNaive(Random(t, shapes[i].first, rng), Random(t, shapes[i].second, rng), dns[i], t);
  }
  CheckAgainstNaive(Random(t, {6, 3, 33}, rng), Random(t, {3, 33, 7}, rng), {{1}, {0}, {2}, {1}}, t);
  CheckAgainstNaive(Random(t, {3, 6, 33}, rng), Random(t, {33, 3, 7}, rng), {{0}, {1}, {2}, {0}}, t);
  // Attention: q [batch, heads, head_dim] against keys [batch, tokens, heads, head_dim] (batch axes 0 and 2 of
  // the keys do not merge into one stride; each batch matrix is read in place, transposed) and the scores
  // [batch, heads, tokens] against values of the keys' layout (not transposed); one row per batch matrix.
  CheckAgainstNaive(Random(t, {3, 4, 16}, rng), Random(t, {3, 40, 4, 16}, rng), {{0, 1}, {0, 2}, {2}, {3}}, t);
  CheckAgainstNaive(Random(t, {3, 4, 40}, rng), Random(t, {3, 40, 4, 16}, rng), {{0, 1}, {0, 2}, {2}, {1}}, t);
  // The same with a transposed row (lhs [batch, head_dim, heads]) and two rows per batch matrix.
  CheckAgainstNaive(Random(t, {3, 16, 4}, rng), Random(t, {3, 40, 4, 16}, rng), {{0, 2}, {0, 2}, {1}, {3}}, t);
  CheckAgainstNaive(Random(t, {3, 4, 2, 16}, rng), Random(t, {3, 40, 4, 16}, rng), {{0, 1}, {0, 2}, {3}, {3}}, t);
}

// One plan (made once, as an interpreter kernel makes it at compile time) run on several sets of data: each run
// equals the naive loop on its own data, so nothing of one run's operands is kept in the plan. The shapes cover
// operands read in place (plain and transposed), packed (a batch dim in the middle, a type to convert), and a
// batch of more matrices than the plan keeps offsets for (each run computes them).
void CheckPlanAgainstNaive(E lt, std::vector<int64_t> ldims, E rt, std::vector<int64_t> rdims, const Dn& dn, E out_t,
                           std::mt19937& rng) {
  std::vector<int64_t> odims;
  ASSERT_LINALG_OK(DotGeneralShape(ldims, rdims, dn.view(), &odims));
  neuronmem::linalg::DotGeneralPlan plan;
  ASSERT_LINALG_OK(
      neuronmem::linalg::DotGeneralPlan::Make(lt, ldims, rt, rdims, dn.view(), out_t, odims, false, &plan));
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const Tensor lhs = Random(lt, ldims, rng), rhs = Random(rt, rdims, rng);
    Tensor got(out_t, odims);
    plan.Run(lhs.bytes.data(), rhs.bytes.data(), got.bytes.data());
    ExpectNaive(lhs, rhs, dn, out_t, odims, got);
  }
}

// One-row and one-column products (the matrix-vector path), plain and transposed, odd sizes, batch dims.
void CheckOneRowsAndColumns(E t, std::mt19937& rng) {
  CheckPlanAgainstNaive(t, {1, 33}, t, {33, 19}, {{}, {}, {1}, {0}}, t, rng);
  CheckPlanAgainstNaive(t, {33, 1}, t, {19, 33}, {{}, {}, {0}, {1}}, t, rng);
  CheckPlanAgainstNaive(t, {21, 37}, t, {37, 1}, {{}, {}, {1}, {0}}, t, rng);
  CheckPlanAgainstNaive(t, {37, 21}, t, {1, 37}, {{}, {}, {0}, {1}}, t, rng);
  CheckPlanAgainstNaive(t, {5, 3, 1, 17}, t, {5, 23, 3, 17}, {{0, 1}, {0, 2}, {3}, {3}}, t, rng);
  CheckPlanAgainstNaive(t, {5, 3, 23}, t, {5, 23, 3, 17}, {{0, 1}, {0, 2}, {2}, {1}}, t, rng);
}

TEST_P(DotGeneralTypes, OnePlanRunsOnNewDataEachTime) {
  const E t = std::get<0>(GetParam());
  std::mt19937 rng(7 + int(t));
  for (bool small : {true, false}) {  // f32 matrix-vector products on SmallGemv, or all on the library
    SCOPED_TRACE(small ? "SmallGemv" : "library only");
    detail::SetSmallGemvEnabled(small);
    CheckOneRowsAndColumns(t, rng);
  }
  detail::SetSmallGemvEnabled(true);
  CheckPlanAgainstNaive(t, {17, 40}, t, {40, 9}, {{}, {}, {1}, {0}}, t, rng);
  CheckPlanAgainstNaive(t, {40, 17}, t, {9, 40}, {{}, {}, {0}, {1}}, t, rng);
  CheckPlanAgainstNaive(t, {1, 33}, t, {7, 33}, {{}, {}, {1}, {1}}, t, rng);  // one row: the gemv path
  CheckPlanAgainstNaive(t, {6, 3, 33}, t, {3, 33, 7}, {{1}, {0}, {2}, {1}}, t, rng);
  CheckPlanAgainstNaive(t, {3, 4, 16}, t, {3, 40, 4, 16}, {{0, 1}, {0, 2}, {2}, {3}}, t, rng);
  // 4100 batch matrices (above the 4096 whose offsets a plan keeps), batch axes that do not merge.
  CheckPlanAgainstNaive(t, {41, 100, 3}, t, {41, 2, 100, 3}, {{0, 1}, {0, 2}, {2}, {3}}, t, rng);
}

TEST(DotGeneralPlan, ConvertsOperandsOfAnotherTypeAtEachRun) {
  std::mt19937 rng(11);
  CheckPlanAgainstNaive(E::kF16, {17, 40}, E::kF32, {40, 9}, {{}, {}, {1}, {0}}, E::kF32, rng);
  CheckPlanAgainstNaive(E::kBF16, {5, 2, 40}, E::kF16, {5, 40, 9}, {{0}, {0}, {2}, {1}}, E::kF64, rng);
  CheckPlanAgainstNaive(E::kS8, {17, 40}, E::kS16, {40, 9}, {{}, {}, {1}, {0}}, E::kS32, rng);
}

TEST(DotGeneralPlan, BadShapesAreRefusedAndAnUnmadePlanDoesNothing) {
  neuronmem::linalg::DotGeneralPlan plan;
  const int64_t a[] = {2, 3}, b[] = {2, 4}, c[] = {2, 4};
  const neuronmem::Status s = neuronmem::linalg::DotGeneralPlan::Make(
      E::kF32, {a, 2}, E::kF32, {b, 2}, {{}, {}, {1}, {0}}, E::kF32, {c, 2}, false, &plan);  // 3 vs 2
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  float out[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  plan.Run(nullptr, nullptr, out);
  for (float v : out) EXPECT_EQ(v, 1.0f);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DotGeneralTypes,
                         ::testing::Combine(::testing::Values(E::kPred, E::kS8, E::kS16, E::kS32, E::kS64, E::kU8,
                                                              E::kU16, E::kU32, E::kU64, E::kF16, E::kBF16, E::kF32,
                                                              E::kF64, E::kC64, E::kC128),
                                            ::testing::ValuesIn(kAllGemmBackends)),
                         TypeAndBackendName);

TEST(DotGeneral, SpecExample) {
  // The spec's example: batching [0] x [0], contracting [2] x [1].
  Tensor lhs(E::kS64, {2, 2, 2}), rhs(E::kS64, {2, 2, 2}), out(E::kS64, {2, 2, 2});
  const int64_t l[] = {1, 2, 3, 4, 5, 6, 7, 8}, r[] = {1, 0, 0, 1, 1, 0, 0, 1};
  std::copy(l, l + 8, lhs.as<int64_t>());
  std::copy(r, r + 8, rhs.as<int64_t>());
  ASSERT_LINALG_OK(DotGeneral(lhs.ref(), rhs.ref(), {{0}, {0}, {2}, {1}}, out.mut()));
  EXPECT_TRUE(std::equal(l, l + 8, out.as<int64_t>()));
}

TEST(DotGeneral, IntegersWrapInTheResultType) {
  Tensor lhs(E::kS8, {1, 2}), rhs(E::kS8, {2, 1}), out(E::kS8, {1, 1});
  lhs.as<int8_t>()[0] = 100;
  lhs.as<int8_t>()[1] = 100;
  rhs.as<int8_t>()[0] = 2;
  rhs.as<int8_t>()[1] = 2;
  ASSERT_LINALG_OK(DotGeneral(lhs.ref(), rhs.ref(), {{}, {}, {1}, {0}}, out.mut()));
  EXPECT_EQ(out.as<int8_t>()[0], int8_t(400 - 512));
  // u16 * u16 does not overflow a promoted int (it would be undefined behaviour).
  Tensor ul(E::kU16, {1, 1}), ur(E::kU16, {1, 1}), uo(E::kU16, {1, 1});
  ul.as<uint16_t>()[0] = 65535;
  ur.as<uint16_t>()[0] = 65535;
  ASSERT_LINALG_OK(DotGeneral(ul.ref(), ur.ref(), {{}, {}, {1}, {0}}, uo.mut()));
  EXPECT_EQ(uo.as<uint16_t>()[0], uint16_t(1));
}

TEST(DotGeneral, OperandsConvertToTheResultType) {
  // i8 x u8 -> i32: sign- and zero-extension before the product.
  Tensor lhs(E::kS8, {1, 2}), rhs(E::kU8, {2, 1}), out(E::kS32, {1, 1});
  lhs.as<int8_t>()[0] = -1;
  lhs.as<int8_t>()[1] = 2;
  rhs.as<uint8_t>()[0] = 255;
  rhs.as<uint8_t>()[1] = 3;
  ASSERT_LINALG_OK(DotGeneral(lhs.ref(), rhs.ref(), {{}, {}, {1}, {0}}, out.mut()));
  EXPECT_EQ(out.as<int32_t>()[0], -255 + 6);
  // f16 x f32 -> c64.
  Tensor hl(E::kF16, {1, 1}), fr(E::kF32, {1, 1}), co(E::kC64, {1, 1});
  hl.Set(0, 1.5);
  fr.Set(0, -2.0);
  ASSERT_LINALG_OK(DotGeneral(hl.ref(), fr.ref(), {{}, {}, {1}, {0}}, co.mut()));
  EXPECT_EQ(co.Get(0), std::complex<double>(-3.0, 0.0));
}

TEST(DotGeneral, HalfRoundsEveryStepLikeTheReference) {
  // 2048 + 1 + 1 in f16: each partial sum rounds back to 2048 (ulp 2); a wider accumulator would give 2050.
  Tensor lhs(E::kF16, {1, 3}), rhs(E::kF16, {3, 1}), out(E::kF16, {1, 1});
  for (int i = 0; i < 3; ++i) {
    lhs.Set(i, i == 0 ? 2048.0 : 1.0);
    rhs.Set(i, 1.0);
  }
  ASSERT_LINALG_OK(DotGeneral(lhs.ref(), rhs.ref(), {{}, {}, {1}, {0}}, out.mut()));
  EXPECT_EQ(out.Get(0).real(), 2048.0);
}

TEST(DotGeneral, EmptyAndSizeOneDims) {
  for (detail::GemmBackend backend : kAllGemmBackends) {
    if (!detail::ForceGemmBackend(backend)) continue;
    SCOPED_TRACE(GemmBackendName(backend));
    // K = 0: every result element is the zero of the type.
    Tensor lhs(E::kF32, {3, 0}), rhs(E::kF32, {0, 4}), out(E::kF32, {3, 4});
    for (int i = 0; i < 12; ++i) out.as<float>()[i] = 7.0f;
    ASSERT_LINALG_OK(DotGeneral(lhs.ref(), rhs.ref(), {{}, {}, {1}, {0}}, out.mut()));
    for (int i = 0; i < 12; ++i) EXPECT_EQ(out.as<float>()[i], 0.0f);
    Tensor il(E::kS32, {2, 0}), ir(E::kS32, {0, 2}), io(E::kS32, {2, 2});
    io.as<int32_t>()[0] = 5;
    ASSERT_LINALG_OK(DotGeneral(il.ref(), ir.ref(), {{}, {}, {1}, {0}}, io.mut()));
    EXPECT_EQ(io.as<int32_t>()[0], 0);
    // M = 0: nothing to write; null data is fine for empty tensors.
    Tensor r52(E::kF32, {5, 2});
    ASSERT_LINALG_OK(DotGeneral({E::kF32, nullptr, {0, 5}}, r52.ref(), {{}, {}, {1}, {0}}, {E::kF32, nullptr, {0, 2}}));
    // Rank-0 result of a vector dot product, and all dims of size 1.
    std::mt19937 rng(5);
    CheckAgainstNaive(Random(E::kF32, {7}, rng), Random(E::kF32, {7}, rng), {{}, {}, {0}, {0}}, E::kF32);
    CheckAgainstNaive(Random(E::kF32, {1, 1, 1}, rng), Random(E::kF32, {1, 1}, rng), {{0}, {1}, {2}, {0}}, E::kF32);
    // No contracting dims: an outer product.
    CheckAgainstNaive(Random(E::kF64, {3}, rng), Random(E::kF64, {4}, rng), {{}, {}, {}, {}}, E::kF64);
  }
  detail::ResetGemmBackend();
}

TEST(DotGeneral, NanAndInfinityPropagate) {
  for (detail::GemmBackend backend : kAllGemmBackends) {
    if (!detail::ForceGemmBackend(backend)) continue;
    SCOPED_TRACE(GemmBackendName(backend));
    // NaN * 0 and inf * 0 are NaN: a product that skipped zeros would lose them.
    Tensor lhs(E::kF32, {2, 2}), rhs(E::kF32, {2, 2}), out(E::kF32, {2, 2});
    lhs.Set(0, NAN);
    lhs.Set(1, 1);
    lhs.Set(2, INFINITY);
    lhs.Set(3, 1);
    rhs.Set(0, 0);
    rhs.Set(1, 0);
    rhs.Set(2, 1);
    rhs.Set(3, 2);
    ASSERT_LINALG_OK(DotGeneral(lhs.ref(), rhs.ref(), {{}, {}, {1}, {0}}, out.mut()));
    EXPECT_TRUE(std::isnan(out.as<float>()[0]));
    EXPECT_TRUE(std::isnan(out.as<float>()[1]));
    EXPECT_TRUE(std::isnan(out.as<float>()[2]));
    EXPECT_TRUE(std::isnan(out.as<float>()[3]));
    Tensor hl(E::kF16, {1, 2}), hr(E::kF16, {2, 1}), ho(E::kF16, {1, 1});
    hl.Set(0, 60000);
    hl.Set(1, 60000);
    hr.Set(0, 2);
    hr.Set(1, -2);
    ASSERT_LINALG_OK(DotGeneral(hl.ref(), hr.ref(), {{}, {}, {1}, {0}}, ho.mut()));
    EXPECT_TRUE(std::isnan(ho.Get(0).real())) << "inf + -inf in f16";
  }
  detail::ResetGemmBackend();
}

// SmallGemv against a sum in double, on sizes around its vector widths (8 lanes, 4 rows, 16 columns at a time),
// both layouts of M, rows of M padded (ld > width), and strided x and y.
TEST(SmallGemv, MatchesADoubleSumOnOddSizesLayoutsAndStrides) {
  if (!detail::SmallGemv(1, 1, std::vector<float>{1}.data(), 1, false, std::vector<float>{1}.data(), 1,
                         std::vector<float>(1).data(), 1))
    GTEST_SKIP() << "no AVX2 and FMA: every product goes to the library";
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t rows : {1, 3, 4, 5, 8, 15, 16, 17, 33, 256}) {
    for (int64_t k : {1, 2, 7, 8, 9, 16, 17, 31, 256}) {
      for (bool trans : {false, true}) {
        for (int64_t inc : {1, 3}) {
          SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(k) + (trans ? " trans" : "") + " inc " +
                       std::to_string(inc));
          const int64_t width = trans ? rows : k, height = trans ? k : rows, ld = width + 5;
          std::vector<float> m(static_cast<size_t>(height * ld)), x(static_cast<size_t>(k * inc)),
              y(static_cast<size_t>(rows * inc), 7.0f);
          for (float& v : m) v = dist(rng);
          for (float& v : x) v = dist(rng);
          ASSERT_TRUE(detail::SmallGemv(rows, k, m.data(), ld, trans, x.data(), inc, y.data(), inc));
          for (int64_t i = 0; i < rows; ++i) {
            double want = 0, mag = 0;
            for (int64_t kk = 0; kk < k; ++kk) {
              const double a = m[static_cast<size_t>(trans ? kk * ld + i : i * ld + kk)], b = x[kk * inc];
              want += a * b;
              mag += std::fabs(a * b);
            }
            ASSERT_NEAR(y[i * inc], want, 1e-6 * (mag + 1)) << "row " << i;
            for (int64_t g = 1; g < inc; ++g) ASSERT_EQ(y[i * inc + g], 7.0f) << "between the strided results";
          }
        }
      }
    }
  }
}

// The exact path's f32 kernels (ExactGemm: 64 and 8 columns at a time and a scalar tail; for a transposed rhs, 8 x 8
// blocks transposed in registers) against the scalar loop they replace: bit for bit, on column and contraction
// counts around their widths, transposed lhs and rhs, batch dims (attention's keys), and NaN and infinities.
TEST(SmallGemv, ExactF32KernelIsBitIdenticalToTheScalarLoop) {
  std::mt19937 rng(23);
  const std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, Dn>> cases = {
      {{1, 64}, {64, 64}, {{}, {}, {1}, {0}}},
      {{3, 17}, {17, 71}, {{}, {}, {1}, {0}}},
      {{17, 3}, {17, 135}, {{}, {}, {0}, {0}}},
      {{2, 9}, {9, 7}, {{}, {}, {1}, {0}}},
      {{4, 1, 40}, {4, 40, 9}, {{0}, {0}, {2}, {1}}},
      {{2, 3, 37}, {2, 37, 3, 16}, {{0, 1}, {0, 2}, {2}, {1}}},
      // Transposed rhs: n and k below, at and above 8, and attention's scores (keys [batch, tokens, heads, dim]).
      {{1, 16}, {256, 16}, {{}, {}, {1}, {1}}},
      {{3, 5}, {7, 5}, {{}, {}, {1}, {1}}},
      {{2, 8}, {8, 8}, {{}, {}, {1}, {1}}},
      {{19, 2}, {13, 19}, {{}, {}, {0}, {1}}},
      {{2, 3, 17}, {2, 37, 3, 17}, {{0, 1}, {0, 2}, {2}, {3}}}};
  for (const auto& [ld, rd, dn] : cases) {
    Tensor lhs = Random(E::kF32, ld, rng), rhs = Random(E::kF32, rd, rng);
    lhs.Set(1, NAN);
    rhs.Set(2, INFINITY);
    std::vector<int64_t> od;
    ASSERT_LINALG_OK(DotGeneralShape(ld, rd, dn.view(), &od));
    Tensor fast(E::kF32, od), scalar(E::kF32, od);
    ASSERT_LINALG_OK(neuronmem::linalg::DotGeneralExact(lhs.ref(), rhs.ref(), dn.view(), fast.mut()));
    detail::SetSmallGemvEnabled(false);
    ASSERT_LINALG_OK(neuronmem::linalg::DotGeneralExact(lhs.ref(), rhs.ref(), dn.view(), scalar.mut()));
    detail::SetSmallGemvEnabled(true);
    EXPECT_TRUE(BitEqual(fast, scalar)) << neuronmem::linalg::DimsToString(ld) << " . "
                                        << neuronmem::linalg::DimsToString(rd);
  }
}

TEST(SmallGemv, PropagatesNanAndInfinityAndDeclinesWhatItDoesNotTake) {
  if (!detail::SmallGemvEnabled()) GTEST_SKIP();
  std::vector<float> m(64 * 64, 0.0f), x(64, 1.0f), y(64, 5.0f);
  x[3] = NAN;                // NaN * 0 in every row
  m[1 * 64 + 2] = INFINITY;  // inf * 1 in row 1 (not transposed)
  if (!detail::SmallGemv(64, 64, m.data(), 64, false, x.data(), 1, y.data(), 1)) GTEST_SKIP() << "no AVX2 and FMA";
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
  x[3] = 1.0f;
  ASSERT_TRUE(detail::SmallGemv(64, 64, m.data(), 64, true, x.data(), 1, y.data(), 1));
  EXPECT_TRUE(std::isinf(y[2])) << "column 2 holds the infinity when transposed";
  EXPECT_EQ(y[1], 0.0f);
  // Too large, empty, too long a strided vector, or disabled: false, nothing written.
  std::vector<float> big(static_cast<size_t>(detail::kSmallGemvElements) + 64, 1.0f);
  std::fill(y.begin(), y.end(), 5.0f);
  EXPECT_FALSE(
      detail::SmallGemv(64, detail::kSmallGemvElements / 64 + 1, big.data(), 1, true, big.data(), 1, y.data(), 1));
  EXPECT_FALSE(detail::SmallGemv(0, 8, m.data(), 8, false, x.data(), 1, y.data(), 1));
  EXPECT_FALSE(detail::SmallGemv(8, 0, m.data(), 8, false, x.data(), 1, y.data(), 1));
  EXPECT_FALSE(detail::SmallGemv(1, detail::kSmallGemvStrided + 1, big.data(), 1, false, big.data(), 2, y.data(), 1));
  detail::SetSmallGemvEnabled(false);
  EXPECT_FALSE(detail::SmallGemv(8, 8, m.data(), 8, false, x.data(), 1, y.data(), 1));
  detail::SetSmallGemvEnabled(true);
  for (float v : y) EXPECT_EQ(v, 5.0f);
}

// Every backend called from several threads at once, each thread on its own operands (products, and the
// matrix-vector path of one-row products): each result equals the one the same call gives alone. A BLAS whose
// buffers are shared without a lock corrupts some of them.
TEST(Gemm, ConcurrentCallsGiveTheResultsOfSingleCalls) {
  constexpr int kThreads = 4, kRounds = 30;
  struct Job {
    int64_t m, n, k;
    std::vector<float> a, b, want, got;
  };
  for (detail::GemmBackend backend : kAllGemmBackends) {
    if (!detail::ForceGemmBackend(backend)) continue;
    SCOPED_TRACE(GemmBackendName(backend));
    std::vector<Job> jobs;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int t = 0; t < kThreads; ++t) {
      Job j;
      j.m = t % 2 == 0 ? 1 : 96 + 8 * t;  // one-row products take the gemv path
      j.n = 160 + 16 * t;
      j.k = 136 + 8 * t;
      j.a.resize(j.m * j.k);
      j.b.resize(j.k * j.n);
      for (float& x : j.a) x = dist(rng);
      for (float& x : j.b) x = dist(rng);
      j.want.resize(j.m * j.n);
      j.got.resize(j.m * j.n);
      detail::Gemm<float>(j.m, j.n, j.k, {j.a.data(), j.k, false}, {j.b.data(), j.n, false}, j.want.data(), j.n);
      jobs.push_back(std::move(j));
    }
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Job& j = jobs[t];
        for (int r = 0; r < kRounds; ++r) {
          std::fill(j.got.begin(), j.got.end(), -7.0f);
          detail::Gemm<float>(j.m, j.n, j.k, {j.a.data(), j.k, false}, {j.b.data(), j.n, false}, j.got.data(), j.n);
          mismatches[t] += j.got != j.want;
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
  detail::ResetGemmBackend();
}

// The default backend is BLIS's serial build when it is installed (scripts/install-deps.sh installs it).
TEST(Gemm, DefaultBackendIsBlisWhenInstalled) {
  detail::ResetGemmBackend();
  if (detail::LibrarySgemmForBenchmark(detail::GemmBackend::kBlis) == nullptr) GTEST_SKIP() << "BLIS not installed";
  EXPECT_EQ(detail::ActiveGemmBackend(), detail::GemmBackend::kBlis);
  EXPECT_FALSE(detail::ForceGemmBackend(static_cast<detail::GemmBackend>(7)));
  EXPECT_EQ(detail::ActiveGemmBackend(), detail::GemmBackend::kBlis);
}

TEST(DotGeneral, BadShapesAreInvalidArgument) {
  Tensor a(E::kF32, {2, 3}), b(E::kF32, {3, 4}), c(E::kF32, {2, 4}), wrong(E::kF32, {4, 2});
  const auto code = NEURONMEM_STATUS_INVALID_ARGUMENT;
  EXPECT_LINALG_CODE(DotGeneral(a.ref(), b.ref(), {{}, {}, {0}, {0}}, c.mut()), code);      // 2 vs 3
  EXPECT_LINALG_CODE(DotGeneral(a.ref(), b.ref(), {{}, {}, {1}, {}}, c.mut()), code);       // lengths differ
  EXPECT_LINALG_CODE(DotGeneral(a.ref(), b.ref(), {{}, {}, {2}, {0}}, c.mut()), code);      // out of range
  EXPECT_LINALG_CODE(DotGeneral(a.ref(), b.ref(), {{}, {}, {-1}, {0}}, c.mut()), code);     // negative
  EXPECT_LINALG_CODE(DotGeneral(a.ref(), b.ref(), {{1}, {0}, {1}, {0}}, c.mut()), code);    // repeated
  EXPECT_LINALG_CODE(DotGeneral(a.ref(), b.ref(), {{}, {}, {1}, {0}}, wrong.mut()), code);  // result dims
  EXPECT_LINALG_CODE(DotGeneral(a.ref(), b.ref(), {{0}, {0}, {1}, {0}}, c.mut()), code);    // batch sizes
  EXPECT_LINALG_CODE(DotGeneral({E::kF32, nullptr, {2, 3}}, b.ref(), {{}, {}, {1}, {0}}, c.mut()), code);
  EXPECT_LINALG_CODE(DotGeneral({E::kF32, a.bytes.data(), {2, -3}}, b.ref(), {{}, {}, {1}, {0}}, c.mut()), code);
  // Nothing was written by the failed calls.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(c.as<float>()[i], 0.0f);
}

TEST(DotGeneral, UnsupportedTypesAreUnimplemented) {
  Tensor a(E::kF32, {2, 3}), b(E::kF32, {3, 4}), c(E::kF32, {2, 4});
  const auto code = NEURONMEM_STATUS_UNIMPLEMENTED;
  EXPECT_LINALG_CODE(DotGeneral({E::kF8E4M3FN, a.bytes.data(), {2, 3}}, b.ref(), {{}, {}, {1}, {0}}, c.mut()), code);
  EXPECT_LINALG_CODE(DotGeneral({E::kS32, a.bytes.data(), {2, 3}}, b.ref(), {{}, {}, {1}, {0}}, c.mut()), code);
  EXPECT_LINALG_CODE(DotGeneral(a.ref(), b.ref(), {{}, {}, {1}, {0}}, {E::kS4, c.bytes.data(), {2, 4}}), code);
}

}  // namespace

namespace {

TEST(DotGeneralExact, F32SumsInTheReferenceOrder) {
  // 1e8 + 1 - 1e8 summed left to right in f32: 1e8 + 1 rounds to 1e8, so the exact path gives 0 (any other
  // order, as a blocked product may take, can give 1).
  Tensor lhs(E::kF32, {1, 3}), rhs(E::kF32, {3, 1}), out(E::kF32, {1, 1});
  const double v[3] = {1e8, 1.0, -1e8};
  for (int i = 0; i < 3; ++i) {
    lhs.Set(i, v[i]);
    rhs.Set(i, 1.0);
  }
  ASSERT_LINALG_OK(neuronmem::linalg::DotGeneralExact(lhs.ref(), rhs.ref(), {{}, {}, {1}, {0}}, out.mut()));
  EXPECT_EQ(out.Get(0).real(), 0.0);
}

TEST(DotGeneralExact, ComplexMatchesSequentialSum) {
  Tensor lhs(E::kC64, {2, 3}), rhs(E::kC64, {3, 2}), out(E::kC64, {2, 2});
  for (int i = 0; i < 6; ++i) {
    lhs.Set(i, std::complex<double>(0.5 * i - 1.25, 0.75 - 0.3 * i));
    rhs.Set(i, std::complex<double>(1.5 - 0.2 * i, 0.1 * i + 0.05));
  }
  ASSERT_LINALG_OK(neuronmem::linalg::DotGeneralExact(lhs.ref(), rhs.ref(), {{}, {}, {1}, {0}}, out.mut()));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      std::complex<float> acc = 0;
      for (int k = 0; k < 3; ++k) {
        const auto a = std::complex<float>(lhs.Get(i * 3 + k)), b = std::complex<float>(rhs.Get(k * 2 + j));
        acc += a * b;
      }
      EXPECT_EQ(std::complex<float>(out.Get(i * 2 + j)), acc) << i << "," << j;
    }
  }
}

TEST(DotGeneralExact, ChecksLikeDotGeneral) {
  Tensor lhs(E::kF32, {2, 3}), rhs(E::kF32, {4, 2}), out(E::kF32, {2, 2});
  EXPECT_TRUE(neuronmem::linalg::DotGeneralExact(lhs.ref(), rhs.ref(), {{}, {}, {1}, {0}}, out.mut()));
}

}  // namespace
