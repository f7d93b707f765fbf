// The vectorized reduce loops (src/interpreter/reduce_vector.h) against the op's scalar function folded one
// element at a time in row-major order (the reference's order): integers and maximum / minimum exactly, float
// sums and products within a tolerance; trailing kept dims exactly (their order is the reference's); the AVX-512
// and the baseline builds bit for bit; NaN and signed zeros as the scalar functions treat them.
#include "interpreter/reduce_vector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "interpreter/numeric.h"

namespace neuronmem::interp {
namespace {

using Op = VectorReduce::Op;

const char* OpName(Op op) {
  switch (op) {
    case Op::kAdd: return "stablehlo.add";
    case Op::kMul: return "stablehlo.multiply";
    case Op::kMax: return "stablehlo.maximum";
    case Op::kMin: return "stablehlo.minimum";
  }
  return "";
}

struct Case {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
};

// The shapes: a long row (several lane blocks and a tail), short rows, columns, mixed kept/reduced dims, size-1
// dims, nothing reduced, everything reduced.
const Case kCases[] = {
    {{3, 1000}, {false, true}},
    {{40, 7}, {false, true}},
    {{300, 5}, {true, false}},
    {{4, 7, 130}, {true, false, true}},
    {{2, 3, 4, 5}, {false, true, false, true}},
    {{1000}, {true}},
    {{5, 1, 7}, {false, false, false}},
    {{6, 1, 600}, {true, true, true}},
    {{129, 3, 1}, {true, false, true}},
};

// Row-major result index of every input element.
std::vector<int64_t> ResultIndex(const Case& c) {
  int64_t count = 1;
  for (int64_t d : c.dims) count *= d;
  std::vector<int64_t> idx(c.dims.size(), 0), out(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t r = 0;
    for (size_t d = 0; d < c.dims.size(); ++d)
      if (!c.reduced[d]) r = r * c.dims[d] + idx[d];
    out[i] = r;
    for (size_t d = c.dims.size(); d-- > 0;) {
      if (++idx[d] < c.dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

template <typename T>
double AsDouble(T v) {
  return static_cast<double>(static_cast<std::conditional_t<kIsHalfLike<T>, float, T>>(v));
}

// Checks one (type, op, shape): the vector path against the sequential fold.
template <typename T>
void Check(ElementType t, Op op, const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(std::string(ElementTypeName(t)) + " " + OpName(op) + " case of rank " + std::to_string(c.dims.size()));
  const ScalarBinaryFn fn = FindScalarBinary(OpName(op), t);
  ASSERT_NE(fn, nullptr);
  VectorReduce plan;
  ASSERT_TRUE(VectorReduce::Plan(fn, t, c.dims, c.reduced, &plan));
  const std::vector<int64_t> ridx = ResultIndex(c);
  int64_t out_count = 1;
  for (size_t d = 0; d < c.dims.size(); ++d)
    if (!c.reduced[d]) out_count *= c.dims[d];
  // Products stay near 1 (no overflow to inf); sums of small values; integer products wrap, which is exact.
  std::vector<T> x(ridx.size());
  std::uniform_int_distribution<int> small(-8, 8);
  for (T& v : x) {
    const int s = small(rng);
    if constexpr (std::is_floating_point_v<T> || kIsHalfLike<T>) {
      v = static_cast<T>(op == Op::kMul ? 1.0f + s / 512.0f : s / 4.0f + s / 64.0f);
    } else {
      v = static_cast<T>(std::is_unsigned_v<T> ? s + 8 : s);
    }
  }
  const T init = static_cast<T>(op == Op::kMul ? 1 : op == Op::kAdd ? 0 : std::is_unsigned_v<T> ? 3 : -3);
  std::vector<T> want(out_count, init);
  std::vector<double> magnitude(out_count, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    fn(&want[ridx[i]], &x[i], &want[ridx[i]]);
    magnitude[ridx[i]] += std::abs(AsDouble(x[i]));
  }
  std::vector<T> got(out_count), baseline(out_count);
  plan.Run(&init, x.data(), got.data());
  VectorReduce::ForceBaseline(true);
  plan.Run(&init, x.data(), baseline.data());
  VectorReduce::ForceBaseline(false);
  EXPECT_EQ(0, std::memcmp(got.data(), baseline.data(), sizeof(T) * got.size())) << "AVX-512 and baseline differ";
  const bool exact = !(std::is_floating_point_v<T> || kIsHalfLike<T>) || op == Op::kMax || op == Op::kMin ||
                     !c.reduced.back() || c.dims.back() == 1;
  const double eps = std::is_same_v<T, double> ? 1e-15 : std::is_same_v<T, float> ? 1e-6 : 1e-2;
  for (int64_t o = 0; o < out_count; ++o) {
    if (exact) {
      ASSERT_EQ(AsDouble(got[o]), AsDouble(want[o])) << "result " << o;
    } else {
      const double per_out = static_cast<double>(x.size()) / static_cast<double>(out_count);
      const double scale = op == Op::kMul ? std::abs(AsDouble(want[o])) * per_out : magnitude[o];
      ASSERT_NEAR(AsDouble(got[o]), AsDouble(want[o]), eps * (scale + 1.0)) << "result " << o;
    }
  }
}

TEST(VectorReduce, EveryTypeOpAndLayoutMatchesTheSequentialFold) {
  std::mt19937 rng(3);
  const ElementType types[] = {ElementType::kF32, ElementType::kF64, ElementType::kF16, ElementType::kBF16,
                               ElementType::kS8,  ElementType::kS16, ElementType::kS32, ElementType::kS64,
                               ElementType::kU8,  ElementType::kU16, ElementType::kU32, ElementType::kU64};
  for (ElementType t : types) {
    for (Op op : {Op::kAdd, Op::kMul, Op::kMax, Op::kMin}) {
      for (const Case& c : kCases) {
        Dispatch(t, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_floating_point_v<T> || kIsHalfLike<T> || kIsInt<T>) Check<T>(t, op, c, rng);
        });
      }
    }
  }
}

// A long f32 row whose sequential sum differs from the lane order's: the vector path gives the documented order
// (element i into partial i mod 64, partials halved), the same value every run.
TEST(VectorReduce, FloatSumFollowsTheDocumentedOrder) {
  const int64_t n = 64 * 5 + 17;
  std::vector<float> x(n);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : x) v = dist(rng) * (1 << (rng() % 20));
  float p[64];
  for (int j = 0; j < 64; ++j) p[j] = x[j];
  int64_t i = 64;
  for (; i + 64 <= n; i += 64)
    for (int j = 0; j < 64; ++j) p[j] += x[i + j];
  for (int j = 0; i + j < n; ++j) p[j] += x[i + j];
  for (int h = 32; h >= 1; h /= 2)
    for (int j = 0; j < h; ++j) p[j] += p[j + h];
  const float init = 0.5f, want = init + p[0];
  VectorReduce plan;
  ASSERT_TRUE(
      VectorReduce::Plan(FindScalarBinary("stablehlo.add", ElementType::kF32), ElementType::kF32, {n}, {true}, &plan));
  for (int run = 0; run < 3; ++run) {
    float got = 0;
    plan.Run(&init, x.data(), &got);
    EXPECT_EQ(got, want);
  }
}

TEST(VectorReduce, NanAndSignedZeros) {
  const ScalarBinaryFn max = FindScalarBinary("stablehlo.maximum", ElementType::kF32);
  const ScalarBinaryFn min = FindScalarBinary("stablehlo.minimum", ElementType::kF32);
  VectorReduce pmax, pmin;
  ASSERT_TRUE(VectorReduce::Plan(max, ElementType::kF32, {2, 200}, {false, true}, &pmax));
  ASSERT_TRUE(VectorReduce::Plan(min, ElementType::kF32, {2, 200}, {false, true}, &pmin));
  std::vector<float> x(400);
  for (int i = 0; i < 200; ++i) x[i] = i % 2 ? -0.0f : 0.0f;  // row 0: signed zeros
  for (int i = 200; i < 400; ++i) x[i] = static_cast<float>(i % 7);
  x[333] = NAN;  // row 1: one NaN
  const float init = -0.0f;
  float got[2];
  pmax.Run(&init, x.data(), got);
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_FALSE(std::signbit(got[0])) << "the maximum of +0 and -0 is +0";
  EXPECT_TRUE(std::isnan(got[1]));
  pmin.Run(&init, x.data(), got);
  EXPECT_TRUE(std::signbit(got[0])) << "the minimum of +0 and -0 is -0";
  EXPECT_TRUE(std::isnan(got[1]));
}

// Rows of 64 lanes or more fold maximum / minimum on integer keys (falling back to the element fold when a row
// holds a NaN): bit for bit the element fold's results, for rows of infinities, zeros of both signs, negative NaN
// (which no key maximum would find), NaN in the tail, subnormals, on f32 and f64.
template <typename T>
void ExpectKeyFoldMatches(ElementType t) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const int64_t rows = 8, n = 300;
  std::vector<T> x(rows * n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<T> u(-5, 5);
  for (T& v : x) v = u(rng);
  for (int64_t i = 0; i < n; ++i) x[n + i] = static_cast<T>(i % 3 ? -0.0 : 0.0);  // row 1: zeros
  for (int64_t i = 0; i < n; ++i) x[2 * n + i] = -inf;                            // row 2: -inf only
  x[3 * n + 17] = -nan;                                                           // row 3: a negative NaN
  x[4 * n + n - 1] = nan;                                                         // row 4: NaN in the tail
  x[5 * n + 3] = inf, x[5 * n + 250] = -inf;                                      // row 5: infinities
  for (int64_t i = 0; i < n; ++i) x[6 * n + i] = std::numeric_limits<T>::denorm_min() * static_cast<T>(i - 150);
  for (const char* name : {"stablehlo.maximum", "stablehlo.minimum"}) {
    const ScalarBinaryFn fn = FindScalarBinary(name, t);
    VectorReduce plan;
    ASSERT_TRUE(VectorReduce::Plan(fn, t, {rows, n}, {false, true}, &plan));
    for (const T init : {-inf, inf, static_cast<T>(-0.0), static_cast<T>(1.0)}) {
      std::vector<T> got(rows);
      plan.Run(&init, x.data(), got.data());
      for (int64_t r = 0; r < rows; ++r) {
        T want = init;
        for (int64_t i = 0; i < n; ++i) fn(&want, &x[static_cast<size_t>(r * n + i)], &want);
        EXPECT_EQ(std::memcmp(&want, &got[static_cast<size_t>(r)], sizeof(T)), 0)
            << name << " row " << r << " init " << init << ": " << got[static_cast<size_t>(r)] << " vs " << want;
      }
    }
  }
}

TEST(VectorReduce, MaximumAndMinimumByKeysMatchTheFold) {
  ExpectKeyFoldMatches<float>(ElementType::kF32);
  ExpectKeyFoldMatches<double>(ElementType::kF64);
}

TEST(VectorReduce, OtherBodiesTypesAndEmptyInputsAreNotPlanned) {
  VectorReduce plan;
  EXPECT_FALSE(VectorReduce::Plan(FindScalarBinary("stablehlo.subtract", ElementType::kF32), ElementType::kF32, {8},
                                  {true}, &plan));
  EXPECT_FALSE(VectorReduce::Plan(FindScalarBinary("stablehlo.and", ElementType::kPred), ElementType::kPred, {8},
                                  {true}, &plan));
  EXPECT_FALSE(
      VectorReduce::Plan(FindScalarBinary("stablehlo.add", ElementType::kS4), ElementType::kS4, {8}, {true}, &plan));
  EXPECT_FALSE(
      VectorReduce::Plan(FindScalarBinary("stablehlo.add", ElementType::kC64), ElementType::kC64, {8}, {true}, &plan));
  EXPECT_FALSE(VectorReduce::Plan(FindScalarBinary("stablehlo.add", ElementType::kF32), ElementType::kF32, {0, 8},
                                  {false, true}, &plan));
  EXPECT_FALSE(VectorReduce::Plan(nullptr, ElementType::kF32, {8}, {true}, &plan));
}

// reduce_window: every result equals the scalar path's fold (init, then the window's elements in row-major order,
// padding as the init value), bit for bit, floats included; AVX-512 = baseline.
struct WindowCase {
  std::vector<int64_t> in, window, strides, dilations, lo, hi;
};

template <typename T>
void CheckWindow(ElementType t, Op op, const WindowCase& c, std::mt19937& rng) {
  SCOPED_TRACE(std::string(ElementTypeName(t)) + " " + OpName(op));
  const size_t rank = c.in.size();
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t padded = c.in[d] + c.lo[d] + c.hi[d], extent = (c.window[d] - 1) * c.dilations[d] + 1;
    out[d] = padded < extent ? 0 : (padded - extent) / c.strides[d] + 1;
  }
  const ScalarBinaryFn fn = FindScalarBinary(OpName(op), t);
  VectorReduceWindow plan;
  ASSERT_TRUE(VectorReduceWindow::Plan(fn, t, c.in, out, c.window, c.strides, std::vector<int64_t>(rank, 1),
                                       c.dilations, c.lo, &plan));
  int64_t in_count = 1, out_count = 1, win_count = 1;
  for (size_t d = 0; d < rank; ++d) {
    in_count *= c.in[d];
    out_count *= out[d];
    win_count *= c.window[d];
  }
  std::vector<T> x(in_count);
  std::uniform_int_distribution<int> small(-8, 8);
  for (T& v : x) {
    const int s = small(rng);
    if constexpr (std::is_floating_point_v<T> || kIsHalfLike<T>) {
      v = static_cast<T>(op == Op::kMul ? 1.0f + s / 512.0f : s / 4.0f + s / 64.0f + s / 1000.0f);
    } else {
      v = static_cast<T>(s);
    }
  }
  const T init = static_cast<T>(op == Op::kMul ? 1 : op == Op::kAdd ? 0 : -3);
  std::vector<T> want(out_count, init);
  std::vector<int64_t> o(rank, 0), w(rank, 0);
  for (int64_t oi = 0; oi < out_count; ++oi) {
    std::fill(w.begin(), w.end(), 0);
    for (int64_t wi = 0; wi < win_count; ++wi) {
      int64_t off = 0;
      bool in_bounds = true;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t p = o[d] * c.strides[d] + w[d] * c.dilations[d] - c.lo[d];
        if (p < 0 || p >= c.in[d]) in_bounds = false;
        off = off * c.in[d] + p;
      }
      fn(&want[oi], in_bounds ? &x[off] : &init, &want[oi]);
      for (size_t d = rank; d-- > 0;) {
        if (++w[d] < c.window[d]) break;
        w[d] = 0;
      }
    }
    for (size_t d = rank; d-- > 0;) {
      if (++o[d] < out[d]) break;
      o[d] = 0;
    }
  }
  std::vector<T> got(out_count), baseline(out_count);
  plan.Run(&init, x.data(), got.data());
  VectorReduce::ForceBaseline(true);
  plan.Run(&init, x.data(), baseline.data());
  VectorReduce::ForceBaseline(false);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(T) * got.size())) << "differs from the scalar fold";
  EXPECT_EQ(0, std::memcmp(baseline.data(), want.data(), sizeof(T) * got.size())) << "baseline differs";
}

TEST(VectorReduceWindow, MatchesTheScalarFoldBitForBit) {
  // Pooling 3x3 stride 2 with padding; a cumulative sum over the last axis (window = length, padding before);
  // window dilation; a stride on the last dim; a window larger than the padded input in one dim is not planned.
  const WindowCase cases[] = {
      {{2, 9, 11}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
      {{3, 40}, {1, 40}, {1, 1}, {1, 1}, {0, 39}, {0, 0}},
      {{7, 13}, {2, 3}, {1, 1}, {2, 3}, {1, 2}, {0, 2}},
      {{5, 33}, {1, 4}, {1, 3}, {1, 1}, {0, 0}, {0, 5}},
  };
  std::mt19937 rng(5);
  for (ElementType t :
       {ElementType::kF32, ElementType::kF64, ElementType::kBF16, ElementType::kS32, ElementType::kU8}) {
    for (Op op : {Op::kAdd, Op::kMul, Op::kMax, Op::kMin}) {
      for (const WindowCase& c : cases) {
        Dispatch(t, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_floating_point_v<T> || kIsHalfLike<T> || kIsInt<T>) CheckWindow<T>(t, op, c, rng);
        });
      }
    }
  }
  VectorReduceWindow plan;
  EXPECT_FALSE(VectorReduceWindow::Plan(FindScalarBinary("stablehlo.add", ElementType::kF32), ElementType::kF32, {4},
                                        {2}, {2}, {1}, {2}, {1}, {0}, &plan))
      << "base dilation is not planned";
  EXPECT_FALSE(VectorReduceWindow::Plan(FindScalarBinary("stablehlo.add", ElementType::kF32), ElementType::kF32, {4},
                                        {0}, {5}, {1}, {1}, {1}, {0}, &plan))
      << "an empty result is not planned";
}

}  // namespace
}  // namespace neuronmem::interp
