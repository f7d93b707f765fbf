// dot_general, dot and convolution through the interpreter: the pretty and generic attribute forms, the
// quantized path (dequantize, compute, quantize), bad attributes reported at compile time.
#include <gtest/gtest.h>

#include <random>

#include "interp_test_util.h"
#include "linalg/small_gemv.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::Fn;
using testing::RunText;

TEST(Linalg, DotGeneralPrettyFormWithBatching) {
  // [2 batches] x [1x2] . [2x1]: batch 0: 1*5 + 2*6 = 17; batch 1: 3*7 + 4*8 = 53.
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[[1, 2]], [[3, 4]]]> : tensor<2x1x2xi32>\n"
         "  %b = stablehlo.constant dense<[[[5], [6]], [[7], [8]]]> : tensor<2x2x1xi32>\n"
         "  %r = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : "
         "(tensor<2x1x2xi32>, tensor<2x2x1xi32>) -> tensor<2x1x1xi32>",
         "tensor<2x1x1xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{17, 53}));
}

TEST(Linalg, DotGeneralGenericForm) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>\n"
         "  %b = stablehlo.constant dense<[[1.0, 0.0], [0.0, 2.0]]> : tensor<2x2xf32>\n"
         "  %r = \"stablehlo.dot_general\"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<"
         "lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>} : "
         "(tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>",
         "tensor<2x2xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  // a^T . b = [[1, 6], [2, 8]]
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{1, 6, 2, 8}));
}

TEST(Linalg, DotVectorMatrix) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>\n"
         "  %b = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf64>\n"
         "  %r = stablehlo.dot %a, %b : (tensor<2xf64>, tensor<2x3xf64>) -> tensor<3xf64>",
         "tensor<3xf64>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<double>(0), (std::vector<double>{9, 12, 15}));
}

// The decode step's attention products at odd sizes (3 sequences, 5 heads of 17, 37 tokens): scores q . keys^T
// and output p . values, one row per (sequence, head) against a strided block of keys/values: the interpreter's
// plan runs them as matrix-vector products (SmallGemv, or the library with it off). Two runs of one compiled
// program on different data, each against a sum in double.
TEST(Linalg, AttentionProductsMatchADoubleSumOnEachRun) {
  constexpr int64_t B = 3, NH = 5, D = 17, T = 37;
  const auto type = [](std::initializer_list<int64_t> dims) {
    std::string s = "tensor<";
    for (int64_t d : dims) s += std::to_string(d) + "x";
    return s + "f32>";
  };
  const std::string q = type({B, NH, D}), kv = type({B, T, NH, D}), sc = type({B, NH, T});
  const std::string text = "func.func @main(%q: " + q + ", %k: " + kv + ", %p: " + sc + ") -> (" + sc + ", " + q +
                           ") {\n  %s = stablehlo.dot_general %q, %k, batching_dims = [0, 1] x [0, 2], "
                           "contracting_dims = [2] x [3] : (" +
                           q + ", " + kv + ") -> " + sc +
                           "\n  %o = stablehlo.dot_general %p, %k, batching_dims = [0, 1] x [0, 2], "
                           "contracting_dims = [2] x [1] : (" +
                           sc + ", " + kv + ") -> " + q + "\n  func.return %s, %o : " + sc + ", " + q + "\n}\n";
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (bool small : {true, false}) {
    linalg::detail::SetSmallGemvEnabled(small);
    for (int run = 0; run < 2; ++run) {
      SCOPED_TRACE(std::string(small ? "SmallGemv" : "library") + ", run " + std::to_string(run));
      std::vector<float> qv(B * NH * D), kvv(B * T * NH * D), pv(B * NH * T);
      for (auto* v : {&qv, &kvv, &pv})
        for (float& x : *v) x = dist(rng);
      const int64_t qd[] = {B, NH, D}, kd[] = {B, T, NH, D}, sd[] = {B, NH, T};
      auto r = RunText(text, {{qv.data(), ElementType::kF32, qd, 3},
                              {kvv.data(), ElementType::kF32, kd, 4},
                              {pv.data(), ElementType::kF32, sd, 3}});
      ASSERT_FALSE(r.status) << r.status->message;
      const std::vector<float> scores = r.Get<float>(0), out = r.Get<float>(1);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < NH; ++h) {
          const auto key = [&](int64_t t, int64_t d) { return double(kvv[((b * T + t) * NH + h) * D + d]); };
          for (int64_t t = 0; t < T; ++t) {
            double want = 0;
            for (int64_t d = 0; d < D; ++d) want += double(qv[(b * NH + h) * D + d]) * key(t, d);
            ASSERT_NEAR(scores[(b * NH + h) * T + t], want, 1e-5) << b << " " << h << " " << t;
          }
          for (int64_t d = 0; d < D; ++d) {
            double want = 0;
            for (int64_t t = 0; t < T; ++t) want += double(pv[(b * NH + h) * T + t]) * key(t, d);
            ASSERT_NEAR(out[(b * NH + h) * D + d], want, 1e-5) << b << " " << h << " " << d;
          }
        }
      }
    }
  }
  linalg::detail::SetSmallGemvEnabled(true);
}

TEST(Linalg, DotGeneralShapeMismatchFailsAtCompile) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<1.0> : tensor<2x3xf32>\n"
         "  %b = stablehlo.constant dense<1.0> : tensor<2x3xf32>\n"
         "  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
         "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>",
         "tensor<2x3xf32>");
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(c.status->message.find("test.mlir:4:"), std::string::npos) << c.status->message;
  EXPECT_NE(c.status->message.find("contracting"), std::string::npos) << c.status->message;
}

TEST(Linalg, ConvolutionPrettyFormWithWindow) {
  // 1-D: input [1, 2, 3, 4] (NWC, one feature), kernel [1, 1] (WIO), stride 2, pad 1 low, lhs dilation 1:
  // padded [0, 1, 2, 3, 4] -> windows at 0, 2: [0+1, 2+3] = [1, 5].
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[[1.0], [2.0], [3.0], [4.0]]]> : tensor<1x4x1xf32>\n"
         "  %k = stablehlo.constant dense<1.0> : tensor<2x1x1xf32>\n"
         "  %r = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], "
         "window = {stride = [2], pad = [[1, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
         "(tensor<1x4x1xf32>, tensor<2x1x1xf32>) -> tensor<1x2x1xf32>",
         "tensor<1x2x1xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{1, 5}));
}

TEST(Linalg, ConvolutionGenericFormWithReversal) {
  // Kernel [1, 10] reversed -> [10, 1]: windows [1,2], [2,3], [3,4] -> 12, 23, 34.
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[[1, 2, 3, 4]]]> : tensor<1x1x4xi32>\n"
         "  %k = stablehlo.constant dense<[[[1, 10]]]> : tensor<1x1x2xi32>\n"
         "  %r = \"stablehlo.convolution\"(%a, %k) {batch_group_count = 1 : i64, "
         "dimension_numbers = #stablehlo.conv<[b, f, 0]x[o, i, 0]->[b, f, 0]>, feature_group_count = 1 : i64, "
         "window_strides = array<i64: 1>, padding = dense<0> : tensor<1x2xi64>, lhs_dilation = array<i64: 1>, "
         "rhs_dilation = array<i64: 1>, window_reversal = array<i1: true>} : "
         "(tensor<1x1x4xi32>, tensor<1x1x2xi32>) -> tensor<1x1x3xi32>",
         "tensor<1x1x3xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{12, 23, 34}));
}

TEST(Linalg, QuantizedDotDequantizesComputesAndQuantizes) {
  // Storage 2 and 4 with scale 0.5 are 1.0 and 2.0; 1*2 + 1*2 = 4.0, stored with scale 0.25 as 16.
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[1.0, 1.0]]> : tensor<1x2xf32>\n"
         "  %b = stablehlo.constant dense<[[2.0], [2.0]]> : tensor<2x1xf32>\n"
         "  %qa = stablehlo.uniform_quantize %a : (tensor<1x2xf32>) -> tensor<1x2x!quant.uniform<i8:f32, 0.5>>\n"
         "  %qb = stablehlo.uniform_quantize %b : (tensor<2x1xf32>) -> tensor<2x1x!quant.uniform<i8:f32, 0.5>>\n"
         "  %r = stablehlo.dot_general %qa, %qb, contracting_dims = [1] x [0] : (tensor<1x2x!quant.uniform<i8:f32, "
         "0.5>>, tensor<2x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x!quant.uniform<i32:f32, 0.25>>",
         "tensor<1x1x!quant.uniform<i32:f32, 0.25>>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{16}));
}

TEST(Linalg, ConvolutionBadGroupCountFailsAtCompile) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<1.0> : tensor<1x4x3xf32>\n"
         "  %k = stablehlo.constant dense<1.0> : tensor<2x3x1xf32>\n"
         "  %r = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} "
         "{batch_group_count = 1 : i64, feature_group_count = 2 : i64} : "
         "(tensor<1x4x3xf32>, tensor<2x3x1xf32>) -> tensor<1x3x1xf32>",
         "tensor<1x3x1xf32>");
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
}

}  // namespace
}  // namespace neuronmem::interp
