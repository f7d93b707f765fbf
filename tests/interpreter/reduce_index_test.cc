// reduce, reduce_window, select_and_scatter, map, gather, scatter, sort, chlo.top_k: the spec's examples and
// edge cases (evaluation order, out-of-bounds indices, padding, empty dimensions, bad attributes).
#include <gtest/gtest.h>

#include <cmath>

#include "interp_test_util.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::Fn;
using testing::RunText;

const char kAddI64[] =
    "({\n  ^bb0(%x: tensor<i64>, %y: tensor<i64>):\n"
    "    %s = stablehlo.add %x, %y : tensor<i64>\n    stablehlo.return %s : tensor<i64>\n  })";

TEST(Reduce, SpecExampleGenericForm) {
  const std::string t =
      Fn(std::string("  %a = stablehlo.constant dense<[[0, 1, 2, 3, 4, 5]]> : tensor<1x6xi64>\n"
                     "  %z = stablehlo.constant dense<0> : tensor<i64>\n"
                     "  %r = \"stablehlo.reduce\"(%a, %z) ") +
             kAddI64 + " {dimensions = array<i64: 1>} : (tensor<1x6xi64>, tensor<i64>) -> tensor<1xi64>",
         "tensor<1xi64>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int64_t>(0), (std::vector<int64_t>{15}));
}

TEST(Reduce, AppliesFormOverSeveralDimensions) {
  const std::string t =
      Fn("  %a = stablehlo.iota dim = 1 : tensor<2x3x4xi32>\n"
         "  %z = stablehlo.constant dense<1> : tensor<i32>\n"
         "  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0, 2] : "
         "(tensor<2x3x4xi32>, tensor<i32>) -> tensor<3xi32>",
         "tensor<3xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{1, 9, 17}));  // 1 + 8 * i
}

TEST(Reduce, SumsInRowMajorOrderFromTheInitValue) {
  // ((0 + 1e8) + 1) - 1e8 in f32 is 0: the reference's order, not a pairwise or reordered sum.
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1.0e8, 1.0, -1.0e8]> : tensor<3xf32>\n"
         "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
         "  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : "
         "(tensor<3xf32>, tensor<f32>) -> tensor<f32>",
         "tensor<f32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{0.0f}));
}

TEST(Reduce, VariadicArgmaxPrettyFormKeepsTheFirstMaximum) {
  // reducer(%acc_v, %x_v) (%acc_i, %x_i): the pretty form pairs the arguments per operand.
  const std::string t =
      Fn("  %v = stablehlo.constant dense<[3.0, 7.0, 7.0, 1.0]> : tensor<4xf32>\n"
         "  %i = stablehlo.iota dim = 0 : tensor<4xi32>\n"
         "  %nv = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
         "  %ni = stablehlo.constant dense<-1> : tensor<i32>\n"
         "  %m:2 = stablehlo.reduce(%v init: %nv), (%i init: %ni) across dimensions = [0] : "
         "(tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)\n"
         "   reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>)  {\n"
         "    %gt = stablehlo.compare  GT, %b, %a,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
         "    %sv = stablehlo.select %gt, %b, %a : tensor<i1>, tensor<f32>\n"
         "    %si = stablehlo.select %gt, %d, %c : tensor<i1>, tensor<i32>\n"
         "    stablehlo.return %sv, %si : tensor<f32>, tensor<i32>\n"
         "  }\n"
         "  %r = stablehlo.convert %m#1 : (tensor<i32>) -> tensor<i32>",
         "tensor<i32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{1}));
}

TEST(Reduce, ArgmaxOverRowsRunsItsBodyForEveryRowAtOnce) {
  // JAX's argmax reducer (NaN wins, ties to the smaller index) over the last dim of 3 rows: the body runs once
  // per column for the three rows, each row still folding its elements in order. Row 2 ends at +0.0 (the tie
  // with -0.0 keeps index 0 but takes the later value).
  const std::string t =
      "func.func @main() -> (tensor<3xf32>, tensor<3xi32>) {\n"
      "  %v = stablehlo.constant dense<[[3.0, 7.0, 7.0, 1.0], [0x7FC00000, 2.0, 0x7FC00000, 5.0], "
      "[-0.0, 0.0, -1.0, 0.0]]> : tensor<3x4xf32>\n"
      "  %i = stablehlo.iota dim = 1 : tensor<3x4xi32>\n"
      "  %nv = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
      "  %ni = stablehlo.constant dense<0> : tensor<i32>\n"
      "  %m:2 = stablehlo.reduce(%v init: %nv), (%i init: %ni) across dimensions = [1] : "
      "(tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)\n"
      "   reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>)  {\n"
      "    %gt = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    %ne = stablehlo.compare  NE, %a, %a,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    %p = stablehlo.or %gt, %ne : tensor<i1>\n"
      "    %eq = stablehlo.compare  EQ, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    %lt = stablehlo.compare  LT, %c, %d,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    %q = stablehlo.and %eq, %lt : tensor<i1>\n"
      "    %s = stablehlo.or %p, %q : tensor<i1>\n"
      "    %sv = stablehlo.select %p, %a, %b : tensor<i1>, tensor<f32>\n"
      "    %si = stablehlo.select %s, %c, %d : tensor<i1>, tensor<i32>\n"
      "    stablehlo.return %sv, %si : tensor<f32>, tensor<i32>\n"
      "  }\n"
      "  func.return %m#0, %m#1 : tensor<3xf32>, tensor<3xi32>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{1, 0, 0}));
  const std::vector<float> v = r.Get<float>(0);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], 7.0f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_FALSE(std::signbit(v[2]));
}

TEST(Reduce, RowsAtOnceInChunksCoverEveryRow) {
  // 1500 rows: the body runs on 1024 rows at once, then on the last 476. Row r is one-hot at column r mod 3.
  const std::string t =
      "func.func @main() -> tensor<1500xi32> {\n"
      "  %r = stablehlo.iota dim = 0 : tensor<1500x3xi32>\n"
      "  %c = stablehlo.iota dim = 1 : tensor<1500x3xi32>\n"
      "  %three = stablehlo.constant dense<3> : tensor<1500x3xi32>\n"
      "  %m = stablehlo.remainder %r, %three : tensor<1500x3xi32>\n"
      "  %hot = stablehlo.compare  EQ, %m, %c,  SIGNED : (tensor<1500x3xi32>, tensor<1500x3xi32>) -> "
      "tensor<1500x3xi1>\n"
      "  %one = stablehlo.constant dense<1.0> : tensor<1500x3xf32>\n"
      "  %zero = stablehlo.constant dense<0.0> : tensor<1500x3xf32>\n"
      "  %v = stablehlo.select %hot, %one, %zero : tensor<1500x3xi1>, tensor<1500x3xf32>\n"
      "  %nv = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
      "  %ni = stablehlo.constant dense<0> : tensor<i32>\n"
      "  %out:2 = stablehlo.reduce(%v init: %nv), (%c init: %ni) across dimensions = [1] : "
      "(tensor<1500x3xf32>, tensor<1500x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<1500xf32>, tensor<1500xi32>)\n"
      "   reducer(%a: tensor<f32>, %b: tensor<f32>) (%i: tensor<i32>, %j: tensor<i32>)  {\n"
      "    %gt = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    %sv = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<f32>\n"
      "    %si = stablehlo.select %gt, %i, %j : tensor<i1>, tensor<i32>\n"
      "    stablehlo.return %sv, %si : tensor<f32>, tensor<i32>\n"
      "  }\n"
      "  func.return %out#1 : tensor<1500xi32>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  const std::vector<int32_t> got = r.Get<int32_t>(0);
  ASSERT_EQ(got.size(), 1500u);
  for (int32_t row = 0; row < 1500; ++row) ASSERT_EQ(got[static_cast<size_t>(row)], row % 3) << "row " << row;
}

TEST(Reduce, RowsAtOnceKeepResultsThatReturnAnotherAccumulator) {
  // The body returns (acc_w + x_u, acc_u): the second result is the first accumulator, read after the first
  // result is computed. Row [1, 2, 3]: (1, 0), (2, 1), (4, 2); row [4, 5, 6]: (4, 0), (5, 4), (10, 5).
  const std::string t =
      "func.func @main() -> (tensor<2xi32>, tensor<2xi32>) {\n"
      "  %u = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>\n"
      "  %w = stablehlo.constant dense<[[10, 20, 30], [40, 50, 60]]> : tensor<2x3xi32>\n"
      "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
      "  %m:2 = \"stablehlo.reduce\"(%u, %w, %z, %z) ({\n"
      "  ^bb0(%au: tensor<i32>, %aw: tensor<i32>, %xu: tensor<i32>, %xw: tensor<i32>):\n"
      "    %s = stablehlo.add %aw, %xu : tensor<i32>\n"
      "    stablehlo.return %s, %au : tensor<i32>, tensor<i32>\n"
      "  }) {dimensions = array<i64: 1>} : (tensor<2x3xi32>, tensor<2x3xi32>, tensor<i32>, tensor<i32>) -> "
      "(tensor<2xi32>, tensor<2xi32>)\n"
      "  func.return %m#0, %m#1 : tensor<2xi32>, tensor<2xi32>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{4, 10}));
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{2, 5}));
}

TEST(Reduce, EmptyReducedDimensionGivesTheInitValue) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<> : tensor<2x0xi32>\n"
         "  %z = stablehlo.constant dense<7> : tensor<i32>\n"
         "  %r = stablehlo.reduce(%a init: %z) applies stablehlo.multiply across dimensions = [1] : "
         "(tensor<2x0xi32>, tensor<i32>) -> tensor<2xi32>",
         "tensor<2xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{7, 7}));
}

TEST(Reduce, BadDimensionsFailAtCompile) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<1> : tensor<2xi32>\n"
         "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
         "  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : "
         "(tensor<2xi32>, tensor<i32>) -> tensor<i32>",
         "tensor<i32>");
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
  EXPECT_NE(c.status->message.find("test.mlir:4:"), std::string::npos) << c.status->message;
}

TEST(ReduceWindow, SpecExampleWithDilationsAndPadding) {
  const std::string t = Fn(std::string("  %a = stablehlo.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi64>\n"
                                       "  %z = stablehlo.constant dense<0> : tensor<i64>\n"
                                       "  %r = \"stablehlo.reduce_window\"(%a, %z) ") +
                               kAddI64 +
                               " {window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 4, 1>, "
                               "base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 3, 1>, "
                               "padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>} : "
                               "(tensor<3x2xi64>, tensor<i64>) -> tensor<2x2xi64>",
                           "tensor<2x2xi64>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int64_t>(0), (std::vector<int64_t>{0, 0, 3, 4}));
}

TEST(ReduceWindow, PaddingTakesTheInitValueIntoTheBody) {
  // Max over windows of 2 with one padded element on each side, init 100: the pads contribute 100.
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
         "  %z = stablehlo.constant dense<100> : tensor<i32>\n"
         "  %r = \"stablehlo.reduce_window\"(%a, %z) ({\n  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
         "    %s = stablehlo.subtract %x, %y : tensor<i32>\n    stablehlo.return %s : tensor<i32>\n  }) "
         "{window_dimensions = array<i64: 2>, padding = dense<[[1, 1]]> : tensor<1x2xi64>} : "
         "(tensor<2xi32>, tensor<i32>) -> tensor<3xi32>",
         "tensor<3xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  // (100 - 100) - 1 = -1; (100 - 1) - 2 = 97; (100 - 2) - 100 = -2
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{-1, 97, -2}));
}

TEST(SelectAndScatter, SpecExample) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[1, 5], [2, 5], [3, 6], [4, 4]]> : tensor<4x2xi64>\n"
         "  %s = stablehlo.constant dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>\n"
         "  %z = stablehlo.constant dense<0> : tensor<i64>\n"
         "  %r = \"stablehlo.select_and_scatter\"(%a, %s, %z) ({\n"
         "  ^bb0(%x: tensor<i64>, %y: tensor<i64>):\n"
         "    %p = stablehlo.compare GE, %x, %y : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
         "    stablehlo.return %p : tensor<i1>\n  }, {\n"
         "  ^bb0(%x: tensor<i64>, %y: tensor<i64>):\n"
         "    %q = stablehlo.add %x, %y : tensor<i64>\n    stablehlo.return %q : tensor<i64>\n  }) "
         "{window_dimensions = array<i64: 3, 1>, window_strides = array<i64: 2, 1>, "
         "padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>} : "
         "(tensor<4x2xi64>, tensor<2x2xi64>, tensor<i64>) -> tensor<4x2xi64>",
         "tensor<4x2xi64>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int64_t>(0), (std::vector<int64_t>{0, 0, 0, 0, 5, 14, 7, 0}));
}

TEST(Map, AppliesTheComputationPerElement) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>\n"
         "  %b = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi32>\n"
         "  %r = \"stablehlo.map\"(%a, %b) ({\n  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
         "    %m = stablehlo.multiply %x, %y : tensor<i32>\n    %s = stablehlo.add %m, %x : tensor<i32>\n"
         "    stablehlo.return %s : tensor<i32>\n  }) {dimensions = array<i64: 0>} : "
         "(tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>",
         "tensor<3xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{11, 42, 93}));
}

TEST(Gather, SpecExampleWithBatchingDims) {
  const std::string t =
      Fn("  %a = stablehlo.iota dim = 0 : tensor<48xi32>\n"
         "  %one = stablehlo.constant dense<1> : tensor<48xi32>\n"
         "  %b = stablehlo.add %a, %one : tensor<48xi32>\n"
         "  %op = stablehlo.reshape %b : (tensor<48xi32>) -> tensor<2x3x4x2xi32>\n"
         "  %i = stablehlo.constant dense<[[[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]], "
         "[[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]]]> : tensor<2x2x3x2xi64>\n"
         "  %r = \"stablehlo.gather\"(%op, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [3, 4], "
         "collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [1], "
         "start_index_map = [2, 1], index_vector_dim = 3>, slice_sizes = array<i64: 1, 1, 2, 2>, "
         "indices_are_sorted = false} : (tensor<2x3x4x2xi32>, tensor<2x2x3x2xi64>) -> tensor<2x2x3x2x2xi32>",
         "tensor<2x2x3x2x2xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{1,  2,  3,  4,  3,  4,  5,  6,  13, 14, 15, 16, 33, 34, 35, 36,
                                                     35, 36, 37, 38, 41, 42, 43, 44, 1,  2,  3,  4,  13, 14, 15, 16,
                                                     21, 22, 23, 24, 43, 44, 45, 46, 33, 34, 35, 36, 27, 28, 29, 30}));
}

TEST(Gather, StartIndicesAreClampedIntoTheOperand) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[10, 11, 12, 13]> : tensor<4xi32>\n"
         "  %i = stablehlo.constant dense<[[-5], [3], [100]]> : tensor<3x1xi32>\n"
         "  %r = \"stablehlo.gather\"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], "
         "start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 2>} : "
         "(tensor<4xi32>, tensor<3x1xi32>) -> tensor<3x2xi32>",
         "tensor<3x2xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{10, 11, 12, 13, 12, 13}));
}

TEST(Scatter, SpecExample) {
  const std::string t = Fn(
      std::string("  %a = stablehlo.iota dim = 0 : tensor<24xi64>\n"
                  "  %one = stablehlo.constant dense<1> : tensor<24xi64>\n"
                  "  %b = stablehlo.add %a, %one : tensor<24xi64>\n"
                  "  %in = stablehlo.reshape %b : (tensor<24xi64>) -> tensor<3x4x2xi64>\n"
                  "  %i = stablehlo.constant dense<[[[0, 2], [1, 0], [2, 1]], [[0, 1], [1, 0], [2, 0]]]> : "
                  "tensor<2x3x2xi64>\n"
                  "  %u = stablehlo.constant dense<1> : tensor<2x3x2x2xi64>\n"
                  "  %r = \"stablehlo.scatter\"(%in, %i, %u) ") +
          kAddI64 +
          " {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2, 3], inserted_window_dims = [0], "
          "scatter_dims_to_operand_dims = [1, 0], index_vector_dim = 2>, indices_are_sorted = false, "
          "unique_indices = false} : (tensor<3x4x2xi64>, tensor<2x3x2xi64>, tensor<2x3x2x2xi64>) -> "
          "tensor<3x4x2xi64>",
      "tensor<3x4x2xi64>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int64_t>(0), (std::vector<int64_t>{1,  2,  5,  6,  8,  9,  8,  9,  10, 11, 12, 13,
                                                     14, 15, 16, 17, 18, 19, 20, 21, 21, 22, 23, 24}));
}

TEST(Scatter, OutOfBoundsUpdatesAreSkippedAndRepeatsApplyInOrder) {
  // Bounds are checked per element, as the spec says: start 5 is out of bounds for both window elements,
  // start -1 only for the first (its second updates element 0), start 3 only for the second. Start 1 twice
  // with a non-commutative body applies in order: ((x - 1) - 2).
  const std::string t =
      Fn("  %in = stablehlo.constant dense<[10, 20, 30, 40]> : tensor<4xi32>\n"
         "  %i = stablehlo.constant dense<[[1], [5], [-1], [3], [1]]> : tensor<5x1xi32>\n"
         "  %u = stablehlo.constant dense<[[1, 1], [9, 9], [9, 9], [9, 9], [2, 2]]> : tensor<5x2xi32>\n"
         "  %r = \"stablehlo.scatter\"(%in, %i, %u) ({\n  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
         "    %s = stablehlo.subtract %x, %y : tensor<i32>\n    stablehlo.return %s : tensor<i32>\n  }) "
         "{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
         "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : "
         "(tensor<4xi32>, tensor<5x1xi32>, tensor<5x2xi32>) -> tensor<4xi32>",
         "tensor<4xi32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{1, 17, 27, 31}));
}

TEST(Scatter, ReplacementsCopyWholeRunsAndSkipTheElementsOutOfBounds) {
  // A body that returns the update: each in-bounds run of a window (its trailing axes) is one copy; a run that
  // crosses the end or the start of the input is applied element by element. 1-D: start 1 (in bounds), 5
  // (out), -1 (only its second element lands: 0), 3 (only its first: 3), then 1 again (the later update wins).
  const std::string t1 =
      Fn("  %in = stablehlo.constant dense<[10, 20, 30, 40]> : tensor<4xi32>\n"
         "  %i = stablehlo.constant dense<[[1], [5], [-1], [3], [1]]> : tensor<5x1xi32>\n"
         "  %u = stablehlo.constant dense<[[1, 1], [8, 8], [7, 9], [9, 6], [2, 3]]> : tensor<5x2xi32>\n"
         "  %r = \"stablehlo.scatter\"(%in, %i, %u) ({\n  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
         "    stablehlo.return %y : tensor<i32>\n  }) "
         "{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
         "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : "
         "(tensor<4xi32>, tensor<5x1xi32>, tensor<5x2xi32>) -> tensor<4xi32>",
         "tensor<4xi32>");
  auto r1 = RunText(t1);
  ASSERT_FALSE(r1.status) << r1.status->message;
  EXPECT_EQ(r1.Get<int32_t>(0), (std::vector<int32_t>{9, 2, 3, 9}));
  // 2-D: windows of two whole rows (6 contiguous elements); the second starts at the last row.
  const std::string t2 =
      Fn("  %a = stablehlo.iota dim = 0 : tensor<12xf32>\n"
         "  %in = stablehlo.reshape %a : (tensor<12xf32>) -> tensor<4x3xf32>\n"
         "  %i = stablehlo.constant dense<[[0], [3]]> : tensor<2x1xi32>\n"
         "  %b = stablehlo.iota dim = 0 : tensor<12xf32>\n"
         "  %h = stablehlo.constant dense<100.0> : tensor<12xf32>\n"
         "  %c = stablehlo.add %b, %h : tensor<12xf32>\n"
         "  %u = stablehlo.reshape %c : (tensor<12xf32>) -> tensor<2x2x3xf32>\n"
         "  %r = \"stablehlo.scatter\"(%in, %i, %u) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
         "    stablehlo.return %y : tensor<f32>\n  }) "
         "{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], "
         "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : "
         "(tensor<4x3xf32>, tensor<2x1xi32>, tensor<2x2x3xf32>) -> tensor<4x3xf32>",
         "tensor<4x3xf32>");
  auto r2 = RunText(t2);
  ASSERT_FALSE(r2.status) << r2.status->message;
  EXPECT_EQ(r2.Get<float>(0), (std::vector<float>{100, 101, 102, 103, 104, 105, 6, 7, 8, 106, 107, 108}));
  // Runs along a row that cross its end (row 0 from column 3) or start (row 1 from column -1): only the
  // elements inside the row land; copying the run whole would spill into the next or the previous row.
  const std::string t3 =
      Fn("  %in = stablehlo.constant dense<0> : tensor<2x4xi32>\n"
         "  %i = stablehlo.constant dense<[[0, 3], [1, -1]]> : tensor<2x2xi32>\n"
         "  %u = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>\n"
         "  %r = \"stablehlo.scatter\"(%in, %i, %u) ({\n  ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
         "    stablehlo.return %y : tensor<i32>\n  }) "
         "{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], "
         "scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>} : "
         "(tensor<2x4xi32>, tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x4xi32>",
         "tensor<2x4xi32>");
  auto r3 = RunText(t3);
  ASSERT_FALSE(r3.status) << r3.status->message;
  EXPECT_EQ(r3.Get<int32_t>(0), (std::vector<int32_t>{0, 0, 0, 1, 4, 0, 0, 0}));
}

TEST(Reduce, TrailingDimensionsFoldInOrderWithTheBodysArgumentOrder) {
  // Reducing the trailing dims folds each run in order; the body takes (accumulator, element) and here
  // computes element - accumulator, so the order and the argument order both show: [1, 2, 3, 4] gives
  // 1, 1, 2, 2; [5, 6, 7, 9] gives 5, 1, 6, 3.
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 9.0]]]> : tensor<2x2x2xf32>\n"
         "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
         "  %r = \"stablehlo.reduce\"(%a, %z) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
         "    %s = stablehlo.subtract %y, %x : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n  }) "
         "{dimensions = array<i64: 1, 2>} : (tensor<2x2x2xf32>, tensor<f32>) -> tensor<2xf32>",
         "tensor<2xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{2, 3}));
}

TEST(Sort, SpecExampleTwoOperandsStable) {
  const std::string t =
      "func.func @main() -> (tensor<2x3xi64>, tensor<2x3xi64>) {\n"
      "  %a = stablehlo.constant dense<[[1, 2, 3], [3, 2, 1]]> : tensor<2x3xi64>\n"
      "  %b = stablehlo.constant dense<[[3, 2, 1], [1, 2, 3]]> : tensor<2x3xi64>\n"
      "  %r:2 = \"stablehlo.sort\"(%a, %b) ({\n"
      "  ^bb0(%x: tensor<i64>, %y: tensor<i64>, %z: tensor<i64>, %w: tensor<i64>):\n"
      "    %p = stablehlo.compare GT, %x, %y : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
      "    stablehlo.return %p : tensor<i1>\n  }) {dimension = 0 : i64, is_stable = true} : "
      "(tensor<2x3xi64>, tensor<2x3xi64>) -> (tensor<2x3xi64>, tensor<2x3xi64>)\n"
      "  func.return %r#0, %r#1 : tensor<2x3xi64>, tensor<2x3xi64>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int64_t>(0), (std::vector<int64_t>{3, 2, 3, 1, 2, 1}));
  EXPECT_EQ(r.Get<int64_t>(1), (std::vector<int64_t>{1, 2, 1, 3, 2, 3}));
}

TEST(Sort, NegativeDimensionAndStableTies) {
  // Sort by the first operand only (last dim); equal keys keep their order, seen through the second operand.
  const std::string t =
      "func.func @main() -> tensor<4xi32> {\n"
      "  %a = stablehlo.constant dense<[2, 1, 2, 1]> : tensor<4xi32>\n"
      "  %b = stablehlo.iota dim = 0 : tensor<4xi32>\n"
      "  %r:2 = \"stablehlo.sort\"(%a, %b) ({\n"
      "  ^bb0(%x: tensor<i32>, %y: tensor<i32>, %z: tensor<i32>, %w: tensor<i32>):\n"
      "    %p = stablehlo.compare LT, %x, %y : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    stablehlo.return %p : tensor<i1>\n  }) {dimension = -1 : i64, is_stable = true} : "
      "(tensor<4xi32>, tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>)\n"
      "  func.return %r#1 : tensor<4xi32>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{1, 3, 0, 2}));
}

TEST(TopK, LargestFirstTiesByIndexNanOnTop) {
  const std::string t =
      "func.func @main() -> (tensor<2x2xf32>, tensor<2x2xi32>) {\n"
      "  %a = stablehlo.constant dense<[[1.0, 3.0, 3.0], [0x7FC00000, -1.0, 2.0]]> : tensor<2x3xf32>\n"
      "  %v, %i = chlo.top_k(%a, k = 2) : tensor<2x3xf32> -> (tensor<2x2xf32>, tensor<2x2xi32>)\n"
      "  func.return %v, %i : tensor<2x2xf32>, tensor<2x2xi32>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{1, 2, 0, 2}));
  EXPECT_EQ(r.Get<float>(0)[0], 3.0f);
  EXPECT_TRUE(std::isnan(r.Get<float>(0)[2]));
  EXPECT_EQ(r.Get<float>(0)[3], 2.0f);
}

TEST(Rng, ThreeFryAndPhiloxKnownAnswers) {
  // Random123's known-answer vectors for key 0, counter 0: threefry2x32_20 -> (0x6b200159, 0x99ba4efe);
  // philox4x32_10 -> (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8). The state's counter advances by the
  // number of blocks drawn.
  const std::string t =
      "func.func @main() -> (tensor<2xui64>, tensor<1xui64>, tensor<2xui64>, tensor<4xui32>) {\n"
      "  %s = stablehlo.constant dense<[0, 0]> : tensor<2xui64>\n"
      "  %a, %b = \"stablehlo.rng_bit_generator\"(%s) {rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : "
      "(tensor<2xui64>) -> (tensor<2xui64>, tensor<1xui64>)\n"
      "  %c, %d = \"stablehlo.rng_bit_generator\"(%s) {rng_algorithm = #stablehlo<rng_algorithm PHILOX>} : "
      "(tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)\n"
      "  func.return %a, %b, %c, %d : tensor<2xui64>, tensor<1xui64>, tensor<2xui64>, tensor<4xui32>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<uint64_t>(0), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(r.Get<uint64_t>(1), (std::vector<uint64_t>{0x99ba4efe6b200159ull}));
  EXPECT_EQ(r.Get<uint64_t>(2), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(r.Get<uint32_t>(3), (std::vector<uint32_t>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(Rng, ThreeFry32InterleavesPairsAlongTheHalvedDim) {
  // A [3] u32 output: one dim, odd, so it is halved to 2 counters: [x0(c), x1(c), x0(c + 1)].
  const std::string t =
      "func.func @main() -> (tensor<2xui64>, tensor<3xui32>, tensor<1xui64>) {\n"
      "  %s = stablehlo.constant dense<[0, 0]> : tensor<2xui64>\n"
      "  %a, %b = \"stablehlo.rng_bit_generator\"(%s) {rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : "
      "(tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui32>)\n"
      "  %e, %f = \"stablehlo.rng_bit_generator\"(%s) {rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : "
      "(tensor<2xui64>) -> (tensor<2xui64>, tensor<1xui64>)\n"
      "  func.return %a, %b, %f : tensor<2xui64>, tensor<3xui32>, tensor<1xui64>\n}\n";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<uint64_t>(0), (std::vector<uint64_t>{0, 2}));
  const auto bits = r.Get<uint32_t>(1);
  ASSERT_EQ(bits.size(), 3u);
  EXPECT_EQ(bits[0], 0x6b200159u);
  EXPECT_EQ(bits[1], 0x99ba4efeu);
  EXPECT_NE(bits[2], bits[0]);
}

TEST(Rng, UnsupportedStateShapeFailsAtCompile) {
  const std::string t =
      "func.func @main() -> tensor<4xui32> {\n"
      "  %s = stablehlo.constant dense<[0, 0, 0]> : tensor<3xui32>\n"
      "  %a, %b = \"stablehlo.rng_bit_generator\"(%s) {rng_algorithm = #stablehlo<rng_algorithm PHILOX>} : "
      "(tensor<3xui32>) -> (tensor<3xui32>, tensor<4xui32>)\n"
      "  func.return %b : tensor<4xui32>\n}\n";
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED) << c.status->message;
}

}  // namespace
}  // namespace neuronmem::interp
