// Element-wise ops and their edge cases from the StableHLO spec.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "interp_test_util.h"
#include "interpreter/numeric.h"

namespace neuronmem::interp {
namespace {

using testing::Fn;
using testing::RunText;

std::string Binary(const std::string& op, const std::string& t, const std::string& a, const std::string& b) {
  return Fn("  %a = stablehlo.constant dense<" + a + "> : " + t + "\n  %b = stablehlo.constant dense<" + b +
                "> : " + t + "\n  %r = stablehlo." + op + " %a, %b : " + t,
            t);
}

TEST(Elementwise, IntegerDivisionByZeroAndOverflow) {
  auto r = RunText(Binary("divide", "tensor<4xi32>", "[7, -7, -2147483648, 5]", "[0, 2, -1, -2]"));
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{-1, -3, INT32_MIN, -2}));
  auto m = RunText(Binary("remainder", "tensor<4xi32>", "[7, -7, -2147483648, 5]", "[0, 2, -1, -2]"));
  ASSERT_FALSE(m.status) << m.status->message;
  EXPECT_EQ(m.Get<int32_t>(0), (std::vector<int32_t>{7, -1, 0, 1}));
}

TEST(Elementwise, SignedOverflowWraps) {
  auto r = RunText(Binary("add", "tensor<2xi8>", "[127, -128]", "[1, -1]"));
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int8_t>(0), (std::vector<int8_t>{-128, 127}));
  auto m = RunText(Binary("multiply", "tensor<1xi16>", "[300]", "[300]"));
  ASSERT_FALSE(m.status);
  EXPECT_EQ(m.Get<int16_t>(0), (std::vector<int16_t>{static_cast<int16_t>(90000 - 65536)}));
}

TEST(Elementwise, ShiftsPastTheBitWidth) {
  auto l = RunText(Binary("shift_left", "tensor<3xi8>", "[1, 1, 1]", "[7, 8, -1]"));
  ASSERT_FALSE(l.status);
  EXPECT_EQ(l.Get<int8_t>(0), (std::vector<int8_t>{-128, 0, 0}));
  auto a = RunText(Binary("shift_right_arithmetic", "tensor<3xi8>", "[-128, -128, 64]", "[7, 9, 9]"));
  ASSERT_FALSE(a.status);
  EXPECT_EQ(a.Get<int8_t>(0), (std::vector<int8_t>{-1, -1, 0}));
  auto g = RunText(Binary("shift_right_logical", "tensor<2xi8>", "[-128, -1]", "[7, 8]"));
  ASSERT_FALSE(g.status);
  EXPECT_EQ(g.Get<int8_t>(0), (std::vector<int8_t>{1, 0}));
}

TEST(Elementwise, SubByteIntegersWrapToTheirWidth) {
  auto r = RunText(Binary("add", "tensor<3xi4>", "[7, -8, 3]", "[1, -1, 2]"));
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int8_t>(0), (std::vector<int8_t>{-8, 7, 5}));
  auto u = RunText(Binary("add", "tensor<2xui2>", "[3, 2]", "[1, 1]"));
  ASSERT_FALSE(u.status);
  EXPECT_EQ(u.Get<uint8_t>(0), (std::vector<uint8_t>{0, 3}));
  auto s = RunText(Binary("shift_right_arithmetic", "tensor<1xi4>", "[-8]", "[1]"));
  ASSERT_FALSE(s.status);
  EXPECT_EQ(s.Get<int8_t>(0), (std::vector<int8_t>{-4}));
}

TEST(Elementwise, MaximumMinimumPropagateNaNAndOrderZeros) {
  auto r = RunText(Binary("maximum", "tensor<3xf32>", "[0x7FC00000, -0.0, 1.0]", "[1.0, 0.0, 2.0]"));
  ASSERT_FALSE(r.status);
  auto v = r.Get<float>(0);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_FALSE(std::signbit(v[1]));
  EXPECT_EQ(v[2], 2.0f);
  auto m = RunText(Binary("minimum", "tensor<1xf32>", "[0.0]", "[-0.0]"));
  ASSERT_FALSE(m.status);
  EXPECT_TRUE(std::signbit(m.Get<float>(0)[0]));
}

TEST(Elementwise, HalfPrecisionRoundsOnce) {
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10 in f16: round to even gives 1.
  auto r = RunText(Binary("add", "tensor<1xf16>", "[1.0]", "[0x1000]"));
  ASSERT_FALSE(r.status);
  EXPECT_EQ(r.Get<uint16_t>(0)[0], 0x3C00);
  // f64 -> f16 with a value just above the tie rounds up (double rounding through f32 would not).
  const std::string t =
      Fn("  %a = stablehlo.constant dense<1.0004882812500002> : tensor<f64>\n"
         "  %r = stablehlo.convert %a : (tensor<f64>) -> tensor<f16>",
         "tensor<f16>");
  auto c = RunText(t);
  ASSERT_FALSE(c.status) << c.status->message;
  EXPECT_EQ(c.Get<uint16_t>(0)[0], 0x3C01);
}

TEST(Elementwise, ConvertFloatToIntTruncatesAndSaturates) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[2.7, -2.7, 1.0e10, -1.0e10, 0x7FC00000]> : tensor<5xf32>\n"
         "  %r = stablehlo.convert %a : (tensor<5xf32>) -> tensor<5xi32>",
         "tensor<5xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status);
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{2, -2, INT32_MAX, INT32_MIN, 0}));
}

TEST(Elementwise, CompareTotalOrderSeparatesNegativeZeroAndNaN) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[-0.0, 1.0, 0x7FC00000]> : tensor<3xf32>\n"
         "  %b = stablehlo.constant dense<[0.0, 0x7FC00000, 0x7FC00000]> : tensor<3xf32>\n"
         "  %r = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>",
         "tensor<3xi1>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<uint8_t>(0), (std::vector<uint8_t>{1, 1, 0}));
  const std::string f =
      Fn("  %a = stablehlo.constant dense<[-0.0, 1.0]> : tensor<2xf32>\n"
         "  %b = stablehlo.constant dense<[0.0, 0x7FC00000]> : tensor<2xf32>\n"
         "  %r = stablehlo.compare LT, %a, %b, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>",
         "tensor<2xi1>");
  auto g = RunText(f);
  ASSERT_FALSE(g.status);
  EXPECT_EQ(g.Get<uint8_t>(0), (std::vector<uint8_t>{0, 0}));
}

TEST(Elementwise, IntegerPowerWithNegativeExponent) {
  auto r = RunText(Binary("power", "tensor<4xi32>", "[2, -1, 1, 3]", "[-1, -3, -5, 4]"));
  ASSERT_FALSE(r.status);
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{0, -1, 1, 81}));
}

TEST(Elementwise, ComplexAbsAndParts) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[(3.0, 4.0)]> : tensor<1xcomplex<f32>>\n"
         "  %r = stablehlo.abs %a : (tensor<1xcomplex<f32>>) -> tensor<1xf32>",
         "tensor<1xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0)[0], 5.0f);
}

TEST(Elementwise, QuantizedAddDequantizesComputesAndQuantizes) {
  const std::string q = "tensor<2x!quant.uniform<i8:f32, 0.5:-1>>";
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
         "  %q = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> " +
             q +
             "\n"
             "  %s = stablehlo.add %q, %q : " +
             q +
             "\n"
             "  %r = stablehlo.uniform_dequantize %s : (" +
             q + ") -> tensor<2xf32>",
         "tensor<2xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{2.0f, 4.0f}));
}

TEST(Elementwise, ReducePrecisionRoundsMantissaAndExponent) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1.00048828125, 65520.0, 1.0e-10]> : tensor<3xf32>\n"
         "  %r = stablehlo.reduce_precision %a, format = e5m10 : tensor<3xf32>",
         "tensor<3xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  auto v = r.Get<float>(0);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_TRUE(std::isinf(v[1]));
  EXPECT_EQ(v[2], 0.0f);
}

TEST(Elementwise, MulHiSignedAndUnsignedIncluding64Bits) {
  const std::string t =
      "func.func @main() -> (tensor<3xi8>, tensor<2xui64>, tensor<2xi64>) {\n"
      "  %a = stablehlo.constant dense<[64, -64, -128]> : tensor<3xi8>\n"
      "  %b = stablehlo.constant dense<[4, 4, -128]> : tensor<3xi8>\n"
      "  %r = \"chlo.mulhi\"(%a, %b) : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>\n"
      "  %c = stablehlo.constant dense<[18446744073709551615, 4294967296]> : tensor<2xui64>\n"
      "  %s = \"chlo.mulhi\"(%c, %c) : (tensor<2xui64>, tensor<2xui64>) -> tensor<2xui64>\n"
      "  %d = stablehlo.constant dense<[-1, -9223372036854775808]> : tensor<2xi64>\n"
      "  %e = stablehlo.constant dense<[1, -9223372036854775808]> : tensor<2xi64>\n"
      "  %u = \"chlo.mulhi\"(%d, %e) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>\n"
      "  func.return %r, %s, %u : tensor<3xi8>, tensor<2xui64>, tensor<2xi64>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int8_t>(0), (std::vector<int8_t>{1, -1, 64}));
  EXPECT_EQ(r.Get<uint64_t>(1), (std::vector<uint64_t>{18446744073709551614ull, 1}));
  EXPECT_EQ(r.Get<int64_t>(2), (std::vector<int64_t>{-1, int64_t{1} << 62}));
}

}  // namespace
}  // namespace neuronmem::interp
