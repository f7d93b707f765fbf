// The CHLO special functions through the interpreter (chlo_special.cc): results equal src/numerics's element
// functions, binary ops, and unsupported element types reported at compile time with the op's location.
#include <gtest/gtest.h>

#include <cmath>

#include "interp_test_util.h"
#include "numerics/special_functions.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::Fn;
using testing::RunText;

TEST(ChloSpecial, UnaryOpsMatchTheNumericsLibrary) {
  for (const char* op : {"chlo.lgamma", "chlo.digamma", "chlo.erf_inv", "chlo.bessel_i1e", "chlo.erf", "chlo.tan"}) {
    const std::string t = Fn(std::string("  %a = stablehlo.constant dense<[0.25, 0.5, -0.75, 3.0]> : tensor<4xf32>\n"
                                         "  %r = ") +
                                 op + " %a : tensor<4xf32> -> tensor<4xf32>",
                             "tensor<4xf32>");
    auto r = RunText(t);
    ASSERT_FALSE(r.status) << op << ": " << r.status->message;
    numerics::ChloUnaryOp u;
    ASSERT_TRUE(numerics::ChloUnaryOpFromName(op, &u));
    const auto got = r.Get<float>(0);
    const double in[] = {0.25, 0.5, -0.75, 3.0};
    for (int i = 0; i < 4; ++i) {
      const double want = numerics::EvalChloUnary(u, ElementType::kF32, in[i]);
      EXPECT_TRUE(got[i] == want || (std::isnan(got[i]) && std::isnan(want))) << op << " " << in[i];
    }
  }
}

TEST(ChloSpecial, BinaryOps) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[2.0, 1.0]> : tensor<2xf64>\n"
         "  %b = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf64>\n"
         "  %r = chlo.zeta %a, %b : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>",
         "tensor<2xf64>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  const auto z = r.Get<double>(0);
  EXPECT_NEAR(z[0], 3.14159265358979323846 * 3.14159265358979323846 / 6, 1e-14);
  EXPECT_EQ(z[1], INFINITY);
}

TEST(ChloSpecial, IntegerOperandIsUnsupportedAtCompileTime) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
         "  %r = chlo.lgamma %a : tensor<2xi32> -> tensor<2xi32>",
         "tensor<2xi32>");
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(c.status->message.find("chlo.lgamma"), std::string::npos) << c.status->message;
}

}  // namespace
}  // namespace neuronmem::interp
