// Data-movement and control-flow ops.
#include <gtest/gtest.h>

#include "interp_test_util.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::Fn;
using testing::RunText;

TEST(Shape, BroadcastTransposeSliceReverse) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>\n"
         "  %b = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xi32>) -> tensor<2x3xi32>\n"
         "  %c = stablehlo.transpose %b, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>\n"
         "  %d = stablehlo.slice %c [1:3, 0:2:1] : (tensor<3x2xi32>) -> tensor<2x2xi32>\n"
         "  %r = stablehlo.reverse %d, dims = [0] : tensor<2x2xi32>",
         "tensor<2x2xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{3, 3, 2, 2}));
}

TEST(Shape, PadWithNegativeAndInteriorPadding) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[1, 2, 3]]> : tensor<1x3xi32>\n"
         "  %p = stablehlo.constant dense<0> : tensor<i32>\n"
         "  %r = stablehlo.pad %a, %p, low = [0, -1], high = [1, 1], interior = [0, 1] : (tensor<1x3xi32>, "
         "tensor<i32>) -> "
         "tensor<2x5xi32>",
         "tensor<2x5xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{0, 2, 0, 3, 0, 0, 0, 0, 0, 0}));
}

TEST(Shape, DynamicSliceClampsStartIndices) {
  const std::string t =
      Fn("  %a = stablehlo.iota dim = 0 : tensor<5xi32>\n"
         "  %i = stablehlo.constant dense<4> : tensor<i64>\n"
         "  %r = stablehlo.dynamic_slice %a, %i, sizes = [2] : (tensor<5xi32>, tensor<i64>) -> tensor<2xi32>",
         "tensor<2xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{3, 4}));
}

TEST(Shape, DynamicUpdateSliceAndConcatenate) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>\n"
         "  %u = stablehlo.constant dense<[[9]]> : tensor<1x1xi32>\n"
         "  %i = stablehlo.constant dense<-3> : tensor<i32>\n"
         "  %j = stablehlo.constant dense<1> : tensor<i32>\n"
         "  %d = stablehlo.dynamic_update_slice %a, %u, %i, %j : (tensor<2x2xi32>, tensor<1x1xi32>, tensor<i32>, "
         "tensor<i32>) -> tensor<2x2xi32>\n"
         "  %r = stablehlo.concatenate %d, %a, dim = 1 : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x4xi32>",
         "tensor<2x4xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{1, 9, 1, 2, 3, 4, 3, 4}));
}

TEST(Control, WhileLoopSumsToTen) {
  const std::string t =
      "func.func @main() -> tensor<i64> {\n"
      "  %i0 = stablehlo.constant dense<0> : tensor<i64>\n"
      "  %s0 = stablehlo.constant dense<0> : tensor<i64>\n"
      "  %r:2 = stablehlo.while(%i = %i0, %s = %s0) : tensor<i64>, tensor<i64>\n"
      "  cond {\n"
      "    %n = stablehlo.constant dense<5> : tensor<i64>\n"
      "    %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
      "    stablehlo.return %c : tensor<i1>\n"
      "  } do {\n"
      "    %one = stablehlo.constant dense<1> : tensor<i64>\n"
      "    %s1 = stablehlo.add %s, %i : tensor<i64>\n"
      "    %i1 = stablehlo.add %i, %one : tensor<i64>\n"
      "    stablehlo.return %i1, %s1 : tensor<i64>, tensor<i64>\n"
      "  }\n"
      "  func.return %r#1 : tensor<i64>\n"
      "}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int64_t>(0), (std::vector<int64_t>{10}));
}

TEST(Control, CaseOutOfRangeRunsTheLastBranchAndCallsWork) {
  const std::string t =
      "func.func @main() -> tensor<i32> {\n"
      "  %k = stablehlo.constant dense<7> : tensor<i32>\n"
      "  %r = \"stablehlo.case\"(%k) ({\n"
      "    %a = stablehlo.constant dense<10> : tensor<i32>\n"
      "    stablehlo.return %a : tensor<i32>\n"
      "  }, {\n"
      "    %b = func.call @twenty() : () -> tensor<i32>\n"
      "    stablehlo.return %b : tensor<i32>\n"
      "  }) : (tensor<i32>) -> tensor<i32>\n"
      "  func.return %r : tensor<i32>\n"
      "}\n"
      "func.func private @twenty() -> tensor<i32> {\n"
      "  %c = stablehlo.constant dense<20> : tensor<i32>\n"
      "  func.return %c : tensor<i32>\n"
      "}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{20}));
}

TEST(Shape, DynamicPadWithConstantAmounts) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>\n"
         "  %p = stablehlo.constant dense<-1> : tensor<i32>\n"
         "  %lo = stablehlo.constant dense<[1, -1]> : tensor<2xi64>\n"
         "  %hi = stablehlo.constant dense<[0, 0]> : tensor<2xi64>\n"
         "  %in = stablehlo.constant dense<[0, 1]> : tensor<2xi64>\n"
         "  %r = stablehlo.dynamic_pad %a, %p, %lo, %hi, %in : (tensor<2x2xi32>, tensor<i32>, tensor<2xi64>, "
         "tensor<2xi64>, tensor<2xi64>) -> tensor<3x2xi32>",
         "tensor<3x2xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{-1, -1, -1, 2, -1, 4}));
}

TEST(Shape, DynamicBroadcastChecksOutputDimensions) {
  const std::string ok =
      Fn("  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
         "  %d = stablehlo.constant dense<[3, 2]> : tensor<2xi64>\n"
         "  %r = \"stablehlo.dynamic_broadcast_in_dim\"(%a, %d) {broadcast_dimensions = array<i64: 1>} : "
         "(tensor<2xi32>, tensor<2xi64>) -> tensor<3x2xi32>",
         "tensor<3x2xi32>");
  auto r = RunText(ok);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{1, 2, 1, 2, 1, 2}));
  std::string bad = ok;
  bad.replace(bad.find("[3, 2]"), 6, "[4, 2]");
  auto c = CompileText(bad);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
}

TEST(Control, ScanCarriesAndReverse) {
  // Reverse cumulative sum: outputs [6, 5, 3], final carry 6.
  const std::string t =
      "func.func @main() -> (tensor<3xi32>, tensor<i32>) {\n"
      "  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>\n"
      "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
      "  %r:2 = chlo.scan(%a) inits(%z) dimension=0 attributes {is_reverse = true} {\n"
      "  ^bb0(%x: tensor<i32>, %c: tensor<i32>):\n"
      "    %s = stablehlo.add %x, %c : tensor<i32>\n"
      "    stablehlo.return %s, %s : tensor<i32>, tensor<i32>\n"
      "  } : (tensor<3xi32>, tensor<i32>) -> (tensor<3xi32>, tensor<i32>)\n"
      "  func.return %r#0, %r#1 : tensor<3xi32>, tensor<i32>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{6, 5, 3}));
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{6}));
}

}  // namespace
}  // namespace neuronmem::interp
