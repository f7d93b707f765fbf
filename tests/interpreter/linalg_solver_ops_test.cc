// fft, triangular_solve and cholesky through the interpreter: pretty and generic attribute forms, results,
// and bad attributes or shapes reported at compile time with the op's location.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "interp_test_util.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::Fn;
using testing::RunText;

TEST(LinalgSolver, FftPrettyAndGenericForms) {
  const std::string pretty =
      Fn("  %a = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>\n"
         "  %r = stablehlo.fft %a, type = RFFT, length = [4] : (tensor<4xf32>) -> tensor<3xcomplex<f32>>",
         "tensor<3xcomplex<f32>>");
  auto r = RunText(pretty);
  ASSERT_FALSE(r.status) << r.status->message;
  const auto v = r.Get<std::complex<float>>(0);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], std::complex<float>(10, 0));
  EXPECT_NEAR(v[1].real(), -2, 1e-6);
  EXPECT_NEAR(v[1].imag(), 2, 1e-6);
  EXPECT_NEAR(v[2].real(), -2, 1e-6);

  const std::string generic =
      Fn("  %a = stablehlo.constant dense<[(10.0, 0.0), (-2.0, 2.0), (-2.0, 0.0), (-2.0, -2.0)]> : "
         "tensor<4xcomplex<f64>>\n"
         "  %r = \"stablehlo.fft\"(%a) {fft_type = #stablehlo<fft_type IFFT>, fft_length = array<i64: 4>} : "
         "(tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>>",
         "tensor<4xcomplex<f64>>");
  auto g = RunText(generic);
  ASSERT_FALSE(g.status) << g.status->message;
  const auto w = g.Get<std::complex<double>>(0);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(std::abs(w[i] - std::complex<double>(i + 1, 0)), 0, 1e-14) << i;
}

TEST(LinalgSolver, FftBadLengthIsACompileError) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>\n"
         "  %r = stablehlo.fft %a, type = RFFT, length = [8] : (tensor<4xf32>) -> tensor<5xcomplex<f32>>",
         "tensor<5xcomplex<f32>>");
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(c.status->message.find("stablehlo.fft"), std::string::npos) << c.status->message;
  EXPECT_NE(c.status->message.find(":3:"), std::string::npos) << c.status->message;
}

TEST(LinalgSolver, TriangularSolveGenericForm) {
  // Lower [[2, 0], [1, 4]]: x = [1, 2] solves a x = [2, 9]; the 99 is in the unread upper triangle.
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[2.0, 99.0], [1.0, 4.0]]> : tensor<2x2xf64>\n"
         "  %b = stablehlo.constant dense<[[2.0], [9.0]]> : tensor<2x1xf64>\n"
         "  %r = \"stablehlo.triangular_solve\"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, "
         "transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<2x2xf64>, tensor<2x1xf64>) -> tensor<2x1xf64>",
         "tensor<2x1xf64>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<double>(0), (std::vector<double>{1.0, 2.0}));
}

TEST(LinalgSolver, TriangularSolveMissingAttributeIsACompileError) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[2.0, 0.0], [1.0, 4.0]]> : tensor<2x2xf32>\n"
         "  %b = stablehlo.constant dense<[[2.0], [9.0]]> : tensor<2x1xf32>\n"
         "  %r = \"stablehlo.triangular_solve\"(%a, %b) {left_side = true, lower = true, unit_diagonal = false} : "
         "(tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>",
         "tensor<2x1xf32>");
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_NE(c.status->message.find("transpose_a"), std::string::npos) << c.status->message;
}

TEST(LinalgSolver, CholeskyLowerAndUpper) {
  const std::string lower =
      Fn("  %a = stablehlo.constant dense<[[4.0, 0.0], [2.0, 3.0]]> : tensor<2x2xf64>\n"
         "  %r = \"stablehlo.cholesky\"(%a) {lower = true} : (tensor<2x2xf64>) -> tensor<2x2xf64>",
         "tensor<2x2xf64>");
  auto r = RunText(lower);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<double>(0), (std::vector<double>{2.0, 0.0, 1.0, std::sqrt(2.0)}));
  // Without `lower` the upper triangle is read (the spec's default).
  const std::string upper =
      Fn("  %a = stablehlo.constant dense<[[4.0, 2.0], [0.0, 3.0]]> : tensor<2x2xf64>\n"
         "  %r = \"stablehlo.cholesky\"(%a) : (tensor<2x2xf64>) -> tensor<2x2xf64>",
         "tensor<2x2xf64>");
  auto u = RunText(upper);
  ASSERT_FALSE(u.status) << u.status->message;
  EXPECT_EQ(u.Get<double>(0), (std::vector<double>{2.0, 1.0, 0.0, std::sqrt(2.0)}));
}

TEST(LinalgSolver, CholeskyIntegerIsUnsupportedAtCompileTime) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[4, 0], [2, 3]]> : tensor<2x2xi32>\n"
         "  %r = \"stablehlo.cholesky\"(%a) {lower = true} : (tensor<2x2xi32>) -> tensor<2x2xi32>",
         "tensor<2x2xi32>");
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED) << c.status->message;
}

}  // namespace
}  // namespace neuronmem::interp
