// What the spec allows and the interpreter used to reject, with the spec's edge cases: quantized values in
// the region ops (reduce, reduce_window, select_and_scatter, sort, scatter, map), the dynamic-shape ops with
// constant shape operands, complex operands of CHLO functions, Shardy's ops on one core, and ops the parser
// skipped (rejected at compile time with their location and name).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <string>

#include "interp_test_util.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::Fn;
using testing::RunText;

// A quantized scalar type with scale 1 and zero point 0 over `storage`.
std::string Q(const std::string& storage, const std::string& dims = "") {
  return "tensor<" + dims + "!quant.uniform<" + storage + ":f32, 1.000000e+00>>";
}

// A region (a, b) -> a + b over tensor<T>.
std::string AddRegion(const std::string& t) {
  return "({\n  ^bb0(%x: " + t + ", %y: " + t + "):\n    %s = stablehlo.add %x, %y : " + t +
         "\n    stablehlo.return %s : " + t + "\n  })";
}

// %q: the f32 constant `values` quantized to `storage`; %z: 0 quantized likewise.
std::string QuantInputs(const std::string& values, const std::string& dims, const std::string& storage) {
  return "  %c = stablehlo.constant dense<" + values + "> : tensor<" + dims + "f32>\n" +
         "  %q = stablehlo.uniform_quantize %c : (tensor<" + dims + "f32>) -> " + Q(storage, dims) + "\n" +
         "  %c0 = stablehlo.constant dense<0.0> : tensor<f32>\n" +
         "  %z = stablehlo.uniform_quantize %c0 : (tensor<f32>) -> " + Q(storage) + "\n";
}

// A quantized sum over `values` (f32 text) quantized to `in` storage, reduced by an add body (and result) of
// `out` storage, dequantized to f32.
std::string QuantSum(const std::string& values, const std::string& dims, const std::string& in,
                     const std::string& out) {
  return Fn(QuantInputs(values, dims, in) + "  %s = \"stablehlo.reduce\"(%q, %z) " + AddRegion(Q(out)) +
                " {dimensions = array<i64: 0>} : (" + Q(in, dims) + ", " + Q(in) + ") -> " + Q(out) +
                "\n  %r = stablehlo.uniform_dequantize %s : (" + Q(out) + ") -> tensor<f32>",
            "tensor<f32>");
}

TEST(QuantizedRegions, ReduceRequantizesEveryStepInItsStorageRange) {
  // 100 + 100 + 100 in i8 storage: the body's add saturates at 127 after the second step.
  auto r = RunText(QuantSum("[100.0, 100.0, 100.0]", "3x", "i8", "i8"));
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{127.0f}));
}

TEST(QuantizedRegions, ReducePromotesToTheBodysWiderStorageType) {
  // is_promotable(i8 storage, i32 storage) with equal parameters: the body and result hold 300.
  auto r = RunText(QuantSum("[100.0, 100.0, 100.0]", "3x", "i8", "i32"));
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{300.0f}));
}

TEST(QuantizedRegions, ReduceToANarrowerTypeIsRejected) {
  auto c = CompileText(QuantSum("[1.0, 2.0]", "2x", "i32", "i8"));
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
  EXPECT_NE(c.status->message.find("'stablehlo.reduce'"), std::string::npos) << c.status->message;
}

TEST(QuantizedRegions, ReduceWindowMaxWithPaddingFromTheInitValue) {
  const std::string max_region = "({\n  ^bb0(%x: " + Q("i8") + ", %y: " + Q("i8") +
                                 "):\n    %m = stablehlo.maximum %x, %y : " + Q("i8") +
                                 "\n    stablehlo.return %m : " + Q("i8") + "\n  })";
  // Windows of 2 with stride 2 over [-5, 3, -7, -2] padded by one init (0) on the left: [0,-5], [3,-7], [-2,?]
  // -> the high padding is 1 too, so the last window is [-2, 0].
  const std::string t = Fn(
      QuantInputs("[-5.0, 3.0, -7.0, -2.0]", "4x", "i8") + "  %s = \"stablehlo.reduce_window\"(%q, %z) " + max_region +
          " {window_dimensions = array<i64: 2>, window_strides = array<i64: 2>, padding = dense<[[1, 1]]> : "
          "tensor<1x2xi64>} : (" +
          Q("i8", "4x") + ", " + Q("i8") + ") -> " + Q("i8", "3x") + "\n  %r = stablehlo.uniform_dequantize %s : (" +
          Q("i8", "3x") + ") -> tensor<3xf32>",
      "tensor<3xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{0.0f, 3.0f, 0.0f}));
}

TEST(QuantizedRegions, SortComparesTheDequantizedValuesStably) {
  // Per-tensor scale 0.5, zero point 10: the comparator sees the dequantized values; ties keep index order.
  const std::string qt = "tensor<!quant.uniform<i8:f32, 5.000000e-01:10>>";
  const std::string qv = "tensor<4x!quant.uniform<i8:f32, 5.000000e-01:10>>";
  const std::string text =
      "func.func @main() -> (tensor<4xf32>, tensor<4xi32>) {\n"
      "  %c = stablehlo.constant dense<[2.0, -1.0, 2.0, 0.5]> : tensor<4xf32>\n"
      "  %q = stablehlo.uniform_quantize %c : (tensor<4xf32>) -> " +
      qv +
      "\n"
      "  %i = stablehlo.iota dim = 0 : tensor<4xi32>\n"
      "  %s:2 = \"stablehlo.sort\"(%q, %i) ({\n"
      "  ^bb0(%a: " +
      qt + ", %b: " + qt +
      ", %c1: tensor<i32>, %c2: tensor<i32>):\n"
      "    %p = stablehlo.compare GT, %a, %b : (" +
      qt + ", " + qt +
      ") -> tensor<i1>\n"
      "    stablehlo.return %p : tensor<i1>\n"
      "  }) {dimension = 0 : i64, is_stable = true} : (" +
      qv + ", tensor<4xi32>) -> (" + qv +
      ", tensor<4xi32>)\n"
      "  %r = stablehlo.uniform_dequantize %s#0 : (" +
      qv +
      ") -> tensor<4xf32>\n"
      "  func.return %r, %s#1 : tensor<4xf32>, tensor<4xi32>\n}\n";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{2.0f, 2.0f, 0.5f, -1.0f}));
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{0, 2, 3, 1}));
}

TEST(QuantizedRegions, ScatterAddsUpdatesInOrderWithSaturation) {
  // Two updates of 100 to index 1 (i8 storage): 20 + 100 = 120, then 120 + 100 saturates at 127.
  const std::string t = Fn(QuantInputs("[10.0, 20.0, 30.0]", "3x", "i8") +
                               "  %uc = stablehlo.constant dense<[100.0, 100.0]> : tensor<2xf32>\n"
                               "  %u = stablehlo.uniform_quantize %uc : (tensor<2xf32>) -> " +
                               Q("i8", "2x") + "\n" +
                               "  %idx = stablehlo.constant dense<[[1], [1]]> : tensor<2x1xi32>\n"
                               "  %s = \"stablehlo.scatter\"(%q, %idx, %u) " +
                               AddRegion(Q("i8")) +
                               " {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
                               "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (" +
                               Q("i8", "3x") + ", tensor<2x1xi32>, " + Q("i8", "2x") + ") -> " + Q("i8", "3x") +
                               "\n  %r = stablehlo.uniform_dequantize %s : (" + Q("i8", "3x") + ") -> tensor<3xf32>",
                           "tensor<3xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{10.0f, 127.0f, 30.0f}));
}

TEST(QuantizedRegions, SelectAndScatterOnQuantizedValues) {
  // The spec's 1-d pattern: windows of 2, stride 2 over [1, 5, 4, 2]: the maxima (5 and 4) get the sources.
  const std::string ge = "({\n  ^bb0(%x: " + Q("i8") + ", %y: " + Q("i8") +
                         "):\n    %p = stablehlo.compare GE, %x, %y : (" + Q("i8") + ", " + Q("i8") +
                         ") -> tensor<i1>\n    stablehlo.return %p : tensor<i1>\n  })";
  const std::string t = Fn(QuantInputs("[1.0, 5.0, 4.0, 2.0]", "4x", "i8") +
                               "  %sc = stablehlo.constant dense<[7.0, 9.0]> : tensor<2xf32>\n"
                               "  %src = stablehlo.uniform_quantize %sc : (tensor<2xf32>) -> " +
                               Q("i8", "2x") + "\n" + "  %s = \"stablehlo.select_and_scatter\"(%q, %src, %z) " +
                               ge.substr(0, ge.size() - 1) + ", " + AddRegion(Q("i8")).substr(1) +
                               " {window_dimensions = array<i64: 2>, window_strides = array<i64: 2>} : (" +
                               Q("i8", "4x") + ", " + Q("i8", "2x") + ", " + Q("i8") + ") -> " + Q("i8", "4x") +
                               "\n  %r = stablehlo.uniform_dequantize %s : (" + Q("i8", "4x") + ") -> tensor<4xf32>",
                           "tensor<4xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{0.0f, 7.0f, 9.0f, 0.0f}));
}

TEST(QuantizedRegions, DynamicGatherOfQuantizedValuesLikeGather) {
  // slice_sizes from a constant operand; the rows [30, 40] and [10, 20] keep their quantized values.
  const std::string qm = Q("i8", "2x2x"), qr = Q("i8", "2x1x2x");
  const std::string text =
      "func.func @main() -> tensor<2x1x2xf32> {\n"
      "  %c = stablehlo.constant dense<[[10.0, 20.0], [30.0, 40.0]]> : tensor<2x2xf32>\n"
      "  %q = stablehlo.uniform_quantize %c : (tensor<2x2xf32>) -> " +
      qm + "\n" +
      "  %i = stablehlo.constant dense<[[1], [0]]> : tensor<2x1xi32>\n"
      "  %sz = stablehlo.constant dense<[1, 2]> : tensor<2xi64>\n"
      "  %g = \"stablehlo.dynamic_gather\"(%q, %i, %sz) {dimension_numbers = "
      "#stablehlo.gather<offset_dims = [1, 2], start_index_map = [0], index_vector_dim = 1>} : (" +
      qm + ", tensor<2x1xi32>, tensor<2xi64>) -> " + qr + "\n" + "  %r = stablehlo.uniform_dequantize %g : (" + qr +
      ") -> tensor<2x1x2xf32>\n" + "  func.return %r : tensor<2x1x2xf32>\n}\n";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{30, 40, 10, 20}));
}

// ---- dynamic-shape ops with static shapes ---------------------------------------------------------

TEST(DynamicShapeOps, RunWhenTheirShapeOperandsAreConstants) {
  const std::string text = R"(func.func @main() -> (tensor<2x3xi32>, tensor<3x2xf32>, tensor<2xi32>) {
  %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %io = "stablehlo.dynamic_iota"(%shape) {iota_dimension = 1 : i64} : (tensor<2xi64>) -> tensor<2x3xi32>
  %v = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %s2 = stablehlo.constant dense<[3, 2]> : tensor<2xi32>
  %rs = "stablehlo.dynamic_reshape"(%v, %s2) : (tensor<6xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  %x = stablehlo.constant dense<[10, 11, 12, 13, 14, 15]> : tensor<6xi32>
  %b = stablehlo.constant dense<1> : tensor<1xi64>
  %l = stablehlo.constant dense<5> : tensor<1xi64>
  %st = stablehlo.constant dense<3> : tensor<1xi64>
  %sl = "stablehlo.real_dynamic_slice"(%x, %b, %l, %st)
      : (tensor<6xi32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi32>
  func.return %io, %rs, %sl : tensor<2x3xi32>, tensor<3x2xf32>, tensor<2xi32>
}
)";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(r.Get<float>(1), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r.Get<int32_t>(2), (std::vector<int32_t>{11, 14}));  // [1, 5) step 3: indices 1 and 4
}

TEST(DynamicShapeOps, DynamicConvTakesItsPaddingOperand) {
  // 1-d convolution of [1, 2, 3] with [1, 1], padding [1, 1] from the operand: [1, 3, 5, 3].
  const std::string text = R"(func.func @main() -> tensor<1x4x1xf32> {
  %x = stablehlo.constant dense<[[[1.0], [2.0], [3.0]]]> : tensor<1x3x1xf32>
  %w = stablehlo.constant dense<[[[1.0]], [[1.0]]]> : tensor<2x1x1xf32>
  %p = stablehlo.constant dense<[[1, 1]]> : tensor<1x2xi64>
  %r = "stablehlo.dynamic_conv"(%x, %w, %p) {
    dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>,
    feature_group_count = 1 : i64, batch_group_count = 1 : i64
  } : (tensor<1x3x1xf32>, tensor<2x1x1xf32>, tensor<1x2xi64>) -> tensor<1x4x1xf32>
  func.return %r : tensor<1x4x1xf32>
}
)";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{1, 3, 5, 3}));
}

TEST(DynamicShapeOps, AShapeOperandThatIsNoConstantFailsAtCompile) {
  const std::string text = R"(func.func @main(%s: tensor<2xi64>) -> tensor<2x3xi32> {
  %io = "stablehlo.dynamic_iota"(%s) {iota_dimension = 0 : i64} : (tensor<2xi64>) -> tensor<2x3xi32>
  func.return %io : tensor<2x3xi32>
}
)";
  auto c = CompileText(text);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED) << c.status->message;
  EXPECT_NE(c.status->message.find("test.mlir:2:3: 'stablehlo.dynamic_iota'"), std::string::npos) << c.status->message;
}

TEST(DynamicShapeOps, AShapeOperandThatDisagreesWithTheResultIsInvalid) {
  const std::string text = R"(func.func @main() -> tensor<3x2xf32> {
  %v = stablehlo.constant dense<1.0> : tensor<6xf32>
  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
  %r = "stablehlo.dynamic_reshape"(%v, %s) : (tensor<6xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}
)";
  auto c = CompileText(text);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
}

// Status of compiling `text`; "" when it compiled.
std::string CompileError(const std::string& text, neuronmem_status_code_t* code = nullptr) {
  auto c = CompileText(text);
  if (code) *code = c.status ? c.status->code : NEURONMEM_STATUS_OK;
  return c.status ? c.status->message : std::string();
}

TEST(DynamicShapeOps, AShapeComputedFromAnArgumentsValueIsUnimplementedNamingOpAndOperand) {
  const std::string text = R"(func.func @main(%n: tensor<1xi32>) -> tensor<6xf32> {
  %v = stablehlo.constant dense<1.0> : tensor<6xf32>
  %one = stablehlo.constant dense<1> : tensor<1xi32>
  %s = stablehlo.add %n, %one : tensor<1xi32>
  %r = stablehlo.dynamic_reshape %v, %s : (tensor<6xf32>, tensor<1xi32>) -> tensor<?xf32>
  func.return %r : tensor<6xf32>
}
)";
  neuronmem_status_code_t code;
  const std::string m = CompileError(text, &code);
  EXPECT_EQ(code, NEURONMEM_STATUS_UNIMPLEMENTED) << m;
  EXPECT_NE(m.find("test.mlir:5:3: 'stablehlo.dynamic_reshape': output_shape depends on the value of an argument"),
            std::string::npos)
      << m;
}

TEST(DynamicShapeOps, AShapeFromAnOpNotEvaluatedAtCompileTimeNamesThatOp) {
  // A while loop computes the shape: not evaluated at compile time (it has regions).
  const std::string text = R"(func.func @main() -> tensor<2xi32> {
  %s0 = stablehlo.constant dense<[2]> : tensor<1xi32>
  %s = stablehlo.while(%it = %s0) : tensor<1xi32>
    cond {
      %f = stablehlo.constant dense<false> : tensor<i1>
      stablehlo.return %f : tensor<i1>
    } do {
      stablehlo.return %it : tensor<1xi32>
    }
  %r = stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xi32>) -> tensor<?xi32>
  func.return %r : tensor<2xi32>
}
)";
  neuronmem_status_code_t code;
  const std::string m = CompileError(text, &code);
  EXPECT_EQ(code, NEURONMEM_STATUS_UNIMPLEMENTED) << m;
  EXPECT_NE(m.find("test.mlir:10:3: 'stablehlo.dynamic_iota': output_shape depends on the result of "
                   "'stablehlo.while' at test.mlir:3:3, which is not evaluated at compile time"),
            std::string::npos)
      << m;
}

TEST(DynamicShapeOps, FoldedShapeOpsStillRunAndTheirValuesAreResults) {
  const std::string text = R"(func.func @main() -> (tensor<?xi32>, tensor<1xi32>) {
  %x = stablehlo.constant dense<[4, 5, 6, 7]> : tensor<4xi32>
  %d = stablehlo.get_dimension_size %x, dim = 0 : (tensor<4xi32>) -> tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<i32>
  %h = stablehlo.divide %d, %two : tensor<i32>
  %s = stablehlo.reshape %h : (tensor<i32>) -> tensor<1xi32>
  %z = stablehlo.constant dense<[0]> : tensor<1xi32>
  %one = stablehlo.constant dense<[1]> : tensor<1xi32>
  %r = stablehlo.real_dynamic_slice %x, %z, %s, %one
      : (tensor<4xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xi32>
  func.return %r, %s : tensor<?xi32>, tensor<1xi32>
}
)";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{2}));
}

TEST(DynamicShapeOps, QuestionDimsOfOtherOpsAndOfParametersAreUnimplemented) {
  neuronmem_status_code_t code;
  std::string m = CompileError(R"(func.func @main(%a: tensor<4xf32>) -> tensor<2xf32> {
  %r = stablehlo.slice %a [0:2] : (tensor<4xf32>) -> tensor<?xf32>
  func.return %r : tensor<2xf32>
}
)",
                               &code);
  EXPECT_EQ(code, NEURONMEM_STATUS_UNIMPLEMENTED) << m;
  EXPECT_NE(m.find("test.mlir:2:3: 'stablehlo.slice': result type tensor<?xf32>: the interpreter cannot infer"),
            std::string::npos)
      << m;
  m = CompileError("func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {\n  func.return %a : tensor<?xf32>\n}\n",
                   &code);
  EXPECT_EQ(code, NEURONMEM_STATUS_UNIMPLEMENTED) << m;
  EXPECT_NE(m.find("dynamic shape tensor<?xf32>"), std::string::npos) << m;
}

TEST(DynamicShapeOps, AStaticDimThatDisagreesWithTheInferredShapeIsInvalid) {
  neuronmem_status_code_t code;
  const std::string m = CompileError(R"(func.func @main() -> tensor<3x4xi32> {
  %s = stablehlo.constant dense<[3, 5]> : tensor<2xi64>
  %r = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi64>) -> tensor<3x?xi32>
  %t = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi64>) -> tensor<?x4xi32>
  func.return %t : tensor<3x4xi32>
}
)",
                                     &code);
  EXPECT_EQ(code, NEURONMEM_STATUS_INVALID_ARGUMENT) << m;
  EXPECT_NE(m.find("test.mlir:4:3: 'stablehlo.dynamic_iota': result type tensor<?x4xi32> does not match the "
                   "inferred shape [3x5]"),
            std::string::npos)
      << m;
}

TEST(DynamicShapeOps, GetDimensionSizeChecksItsDimensionAndResultType) {
  neuronmem_status_code_t code;
  std::string m = CompileError(R"(func.func @main(%a: tensor<2x3xf32>) -> tensor<i32> {
  %r = stablehlo.get_dimension_size %a, dim = 2 : (tensor<2x3xf32>) -> tensor<i32>
  func.return %r : tensor<i32>
}
)",
                               &code);
  EXPECT_EQ(code, NEURONMEM_STATUS_INVALID_ARGUMENT) << m;
  EXPECT_NE(m.find("'stablehlo.get_dimension_size': dimension 2 is outside [0, 2)"), std::string::npos) << m;
  m = CompileError(R"(func.func @main(%a: tensor<2x3xf32>) -> tensor<i64> {
  %r = stablehlo.get_dimension_size %a, dim = 1 : (tensor<2x3xf32>) -> tensor<i64>
  func.return %r : tensor<i64>
}
)",
                   &code);
  EXPECT_EQ(code, NEURONMEM_STATUS_INVALID_ARGUMENT) << m;
  // Of an argument: the static dim, whatever the values.
  float a[6] = {};
  const int64_t dims[2] = {2, 3};
  auto r = RunText(R"(func.func @main(%a: tensor<2x3xf32>) -> tensor<i32> {
  %r = stablehlo.get_dimension_size %a, dim = 1 : (tensor<2x3xf32>) -> tensor<i32>
  func.return %r : tensor<i32>
}
)",
                   {TensorView{a, ElementType::kF32, dims, 2}});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{3}));
}

TEST(DynamicShapeOps, DynamicPadWhosePaddingMakesADimNegativeIsInvalid) {
  neuronmem_status_code_t code;
  const std::string m = CompileError(R"(func.func @main() -> tensor<?xi32> {
  %x = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %p = stablehlo.constant dense<0> : tensor<i32>
  %lo = stablehlo.constant dense<[-2]> : tensor<1xi32>
  %hi = stablehlo.constant dense<[-1]> : tensor<1xi32>
  %in = stablehlo.constant dense<[0]> : tensor<1xi32>
  %r = stablehlo.dynamic_pad %x, %p, %lo, %hi, %in
      : (tensor<2xi32>, tensor<i32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xi32>
  func.return %r : tensor<?xi32>
}
)",
                                     &code);
  EXPECT_EQ(code, NEURONMEM_STATUS_INVALID_ARGUMENT) << m;
  EXPECT_NE(m.find("the padding makes dimension 0 negative"), std::string::npos) << m;
}

// ---- complex CHLO --------------------------------------------------------------------------------

TEST(ComplexChlo, TrigonometricAndHyperbolicFunctionsTakeComplexOperands) {
  const std::string text = R"(func.func @main() -> (tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>) {
  %z = stablehlo.constant dense<[(0.5, 0.25), (-2.0, 1.0)]> : tensor<2xcomplex<f64>>
  %a = chlo.asin %z : tensor<2xcomplex<f64>> -> tensor<2xcomplex<f64>>
  %t = chlo.tan %z : tensor<2xcomplex<f64>> -> tensor<2xcomplex<f64>>
  func.return %a, %t : tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>
}
)";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  const auto a = r.Get<std::complex<double>>(0);
  const auto t = r.Get<std::complex<double>>(1);
  ASSERT_EQ(a.size(), 2u);
  const std::complex<double> z0(0.5, 0.25), z1(-2.0, 1.0);
  EXPECT_NEAR(std::abs(a[0] - std::asin(z0)), 0.0, 1e-15);
  EXPECT_NEAR(std::abs(a[1] - std::asin(z1)), 0.0, 1e-15);
  EXPECT_NEAR(std::abs(t[0] - std::tan(z0)), 0.0, 1e-15);
  // asin's branch cut: sin(asin(z)) == z.
  EXPECT_NEAR(std::abs(std::sin(a[1]) - z1), 0.0, 1e-14);
}

TEST(ComplexChlo, FunctionsWithoutAComplexFormStillRejectComplex) {
  const std::string text = R"(func.func @main() -> tensor<2xcomplex<f32>> {
  %z = stablehlo.constant dense<[(0.5, 0.25), (-2.0, 1.0)]> : tensor<2xcomplex<f32>>
  %r = chlo.lgamma %z : tensor<2xcomplex<f32>> -> tensor<2xcomplex<f32>>
  func.return %r : tensor<2xcomplex<f32>>
}
)";
  auto c = CompileText(text);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED) << c.status->message;
}

// ---- Shardy on one core, skipped ops --------------------------------------------------------------

TEST(Shardy, ManualComputationRunsItsBodyOnWholeOperands) {
  const std::string text = R"(module @m {
  sdy.mesh @mesh = <["a"=1]>
  func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {}]> : tensor<2x2xf32>
    %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"a"}, {}]>]
        out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<2x2xf32>) {
      %2 = stablehlo.add %arg1, %arg1 : tensor<2x2xf32>
      sdy.return %2 : tensor<2x2xf32>
    } : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %3 = stablehlo.multiply %1, %arg0 : tensor<2x2xf32>
    return %3 : tensor<2x2xf32>
  }
}
)";
  float in[4] = {1, 2, 3, 4};
  const int64_t dims[2] = {2, 2};
  TensorView arg{in, ElementType::kF32, dims, 2};
  auto r = RunText(text, {arg});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{2, 8, 18, 32}));  // (x + x) * x
  EXPECT_EQ(in[0], 1.0f);                                          // the argument is untouched
}

// ---- sdy.manual_computation over manual axes of more than one device ------------------------------

// A manual computation split over "a"=2 along dim 0: each device sums its own two rows. The same computation
// written unsharded (reshape to 2x2x2, reduce the middle dim) gives the same result.
TEST(Shardy, ManualComputationRunsItsBodyPerDeviceOnItsSlices) {
  const std::string sharded = R"(module @m {
  sdy.mesh @mesh = <["a"=2]>
  func.func @main(%arg0: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}, {}]>]
        out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<2x2xf32>) {
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %s = stablehlo.reduce(%arg1 init: %z) applies stablehlo.add across dimensions = [0]
          : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
      %b = stablehlo.broadcast_in_dim %s, dims = [1] : (tensor<2xf32>) -> tensor<2x2xf32>
      %r = stablehlo.multiply %b, %arg1 : tensor<2x2xf32>
      sdy.return %r : tensor<2x2xf32>
    } : (tensor<4x2xf32>) -> tensor<4x2xf32>
    return %1 : tensor<4x2xf32>
  }
}
)";
  const std::string unsharded = R"(func.func @main(%arg0: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %x = stablehlo.reshape %arg0 : (tensor<4x2xf32>) -> tensor<2x2x2xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<2x2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %b = stablehlo.broadcast_in_dim %s, dims = [0, 2] : (tensor<2x2xf32>) -> tensor<2x2x2xf32>
  %r = stablehlo.multiply %b, %x : tensor<2x2x2xf32>
  %o = stablehlo.reshape %r : (tensor<2x2x2xf32>) -> tensor<4x2xf32>
  func.return %o : tensor<4x2xf32>
}
)";
  float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t dims[2] = {4, 2};
  TensorView arg{in, ElementType::kF32, dims, 2};
  auto r = RunText(sharded, {arg});
  ASSERT_FALSE(r.status) << r.status->message;
  auto u = RunText(unsharded, {arg});
  ASSERT_FALSE(u.status) << u.status->message;
  // Device 0: rows [1 2; 3 4], column sums [4 6]; device 1: rows [5 6; 7 8], column sums [12 14].
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{4, 12, 12, 24, 60, 84, 84, 112}));
  EXPECT_EQ(r.Get<float>(0), u.Get<float>(0));
  EXPECT_EQ(in[0], 1.0f);  // the argument is untouched
}

// Two manual axes: device (x, y) sees block (y, x) of the operand (dim 0 split by "y", dim 1 by "x") and
// returns it as block (x, y) of the result: a transpose of the 2x2 grid of 2x3 blocks. An operand replicated
// over the axes is seen whole by every device; a result replicated over "y" comes from the devices at y = 0.
TEST(Shardy, ManualComputationOverTwoAxesPlacesEachDevicesBlock) {
  const std::string text = R"(module @m {
  sdy.mesh @mesh = <["x"=2, "y"=2, "z"=3]>
  func.func @main(%arg0: tensor<4x6xi32>, %arg1: tensor<2x3xi32>) -> (tensor<4x6xi32>, tensor<4x3xi32>) {
    %1:2 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"y"}, {"x", "z"}]>, <@mesh, [{}, {}]>]
        out_shardings=[<@mesh, [{"x"}, {"y"}]>, <@mesh, [{"x"}, {}]>] manual_axes={"x", "y"}
        (%a: tensor<2x3xi32>, %b: tensor<2x3xi32>) {
      %s = stablehlo.add %a, %b : tensor<2x3xi32>
      sdy.return %s, %a : tensor<2x3xi32>, tensor<2x3xi32>
    } : (tensor<4x6xi32>, tensor<2x3xi32>) -> (tensor<4x6xi32>, tensor<4x3xi32>)
    return %1#0, %1#1 : tensor<4x6xi32>, tensor<4x3xi32>
  }
}
)";
  int32_t in[24], add[6] = {100, 200, 300, 400, 500, 600};
  for (int i = 0; i < 24; ++i) in[i] = i;
  const int64_t dims[2] = {4, 6}, bdims[2] = {2, 3};
  auto r = RunText(text, {{in, ElementType::kS32, dims, 2}, {add, ElementType::kS32, bdims, 2}});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want(24), want1(12);
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 2; ++y)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) {
          const int32_t v = in[(2 * y + i) * 6 + 3 * x + j];
          want[(2 * x + i) * 6 + 3 * y + j] = v + add[i * 3 + j];
          if (y == 0) want1[(2 * x + i) * 3 + j] = v;
        }
  EXPECT_EQ(r.Get<int32_t>(0), want);
  EXPECT_EQ(r.Get<int32_t>(1), want1);
}

// Slices used in place (dim 1 of a 1x2x3 operand: one run of bytes per device) and copied (dim 1 of a 2x2x3
// operand: two runs per device) give each device the same rows.
TEST(Shardy, ManualComputationSlicesInPlaceAndCopiedAgree) {
  const std::string text = R"(module @m {
  sdy.mesh @mesh = <["a"=2]>
  func.func @main(%arg0: tensor<1x2x3xf32>, %arg1: tensor<2x2x3xf32>) -> tensor<2x2x3xf32> {
    %1 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{}, {"a"}, {}]>, <@mesh, [{}, {"a"}, {}]>]
        out_shardings=[<@mesh, [{}, {"a"}, {}]>] manual_axes={"a"} (%x: tensor<1x1x3xf32>, %y: tensor<2x1x3xf32>) {
      %b = stablehlo.broadcast_in_dim %x, dims = [0, 1, 2] : (tensor<1x1x3xf32>) -> tensor<2x1x3xf32>
      %r = stablehlo.subtract %y, %b : tensor<2x1x3xf32>
      sdy.return %r : tensor<2x1x3xf32>
    } : (tensor<1x2x3xf32>, tensor<2x2x3xf32>) -> tensor<2x2x3xf32>
    return %1 : tensor<2x2x3xf32>
  }
}
)";
  float x[6] = {1, 2, 3, 4, 5, 6}, y[12];
  for (int i = 0; i < 12; ++i) y[i] = 10.0f * static_cast<float>(i);
  const int64_t xd[3] = {1, 2, 3}, yd[3] = {2, 2, 3};
  auto r = RunText(text, {{x, ElementType::kF32, xd, 3}, {y, ElementType::kF32, yd, 3}});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<float> want(12);
  for (int i = 0; i < 12; ++i) want[i] = y[i] - x[i % 6];  // y[i, j, k] - x[0, j, k]
  EXPECT_EQ(r.Get<float>(0), want);
  EXPECT_EQ(x[1], 2.0f);  // the arguments are untouched
  EXPECT_EQ(y[1], 10.0f);
}

// A manual computation over "x" whose body holds one over "y", run twice by a loop: each 2x2 block of the
// 4x4 operand (rows split by "x", columns by "y") is replaced by its row sums, in f64.
TEST(Shardy, NestedManualComputationsInALoopSumEachBlocksRows) {
  const std::string text = R"(module @m {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func @main(%arg0: tensor<4x4xf64>) -> tensor<4x4xf64> {
    %c0 = stablehlo.constant dense<0> : tensor<i64>
    %0:2 = stablehlo.while(%i = %c0, %v = %arg0) : tensor<i64>, tensor<4x4xf64>
     cond {
      %c2 = stablehlo.constant dense<2> : tensor<i64>
      %lt = stablehlo.compare LT, %i, %c2 : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %1 = sdy.manual_computation(%v) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>]
          manual_axes={"x"} (%a: tensor<2x4xf64>) {
        %2 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{}, {"y"}]>] out_shardings=[<@mesh, [{}, {"y"}]>]
            manual_axes={"y"} (%b: tensor<2x2xf64>) {
          %z = stablehlo.constant dense<0.0> : tensor<f64>
          %s = stablehlo.reduce(%b init: %z) applies stablehlo.add across dimensions = [1]
              : (tensor<2x2xf64>, tensor<f64>) -> tensor<2xf64>
          %r = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<2xf64>) -> tensor<2x2xf64>
          sdy.return %r : tensor<2x2xf64>
        } : (tensor<2x4xf64>) -> tensor<2x4xf64>
        sdy.return %2 : tensor<2x4xf64>
      } : (tensor<4x4xf64>) -> tensor<4x4xf64>
      %c1 = stablehlo.constant dense<1> : tensor<i64>
      %n = stablehlo.add %i, %c1 : tensor<i64>
      stablehlo.return %n, %1 : tensor<i64>, tensor<4x4xf64>
    }
    return %0#1 : tensor<4x4xf64>
  }
}
)";
  double in[16];
  for (int i = 0; i < 16; ++i) in[i] = i * 0.5;
  const int64_t dims[2] = {4, 4};
  auto r = RunText(text, {{in, ElementType::kF64, dims, 2}});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<double> want(in, in + 16);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> next(16);
    for (int row = 0; row < 4; ++row)
      for (int col = 0; col < 4; ++col) {
        const int block = col / 2 * 2;
        next[row * 4 + col] = want[row * 4 + block] + want[row * 4 + block + 1];
      }
    want = next;
  }
  EXPECT_EQ(r.Get<double>(0), want);
}

// A body that communicates runs its devices at once as processes (1 replica x 2 partitions; manual_test.cc has
// each collective). An all_reduce without a channel groups replicas, and there is one: the run fails naming it.
TEST(Shardy, ManualComputationWhoseBodyCommunicatesRunsItsDevicesAsProcesses) {
  const std::string text = R"(module @m {
  sdy.mesh @mesh = <["a"=2]>
  func.func @main(%arg0: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}, {}]>]
        out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<2x2xf32>) {
      %r = "stablehlo.all_reduce"(%arg1) ({
        ^bb0(%x: tensor<f32>, %y: tensor<f32>):
          %s = stablehlo.add %x, %y : tensor<f32>
          stablehlo.return %s : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
      sdy.return %r : tensor<2x2xf32>
    } : (tensor<4x2xf32>) -> tensor<4x2xf32>
    return %1 : tensor<4x2xf32>
  }
}
)";
  auto c = CompileText(text);
  ASSERT_FALSE(c.status) << c.status->message;
  float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t dims[2] = {4, 2};
  auto r = RunText(text, {{in, ElementType::kF32, dims, 2}});
  ASSERT_TRUE(r.status);
  EXPECT_NE(r.status->message.find("test.mlir:4:5: 'sdy.manual_computation' on device 0"), std::string::npos)
      << r.status->message;
  EXPECT_NE(r.status->message.find("names replica 1 of a grid of 1 replicas"), std::string::npos) << r.status->message;

  // partition_id in a function the body calls: each device adds its index to its rows.
  const std::string called = R"(module @m {
  sdy.mesh @mesh = <["a"=2]>
  func.func private @f(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %p = stablehlo.partition_id : tensor<ui32>
    %c = stablehlo.convert %p : (tensor<ui32>) -> tensor<f32>
    %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %y = stablehlo.add %x, %b : tensor<2x2xf32>
    return %y : tensor<2x2xf32>
  }
  func.func @main(%arg0: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}, {}]>]
        out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<2x2xf32>) {
      %r = func.call @f(%arg1) : (tensor<2x2xf32>) -> tensor<2x2xf32>
      sdy.return %r : tensor<2x2xf32>
    } : (tensor<4x2xf32>) -> tensor<4x2xf32>
    return %1 : tensor<4x2xf32>
  }
}
)";
  auto d = RunText(called, {{in, ElementType::kF32, dims, 2}});
  ASSERT_FALSE(d.status) << d.status->message;
  EXPECT_EQ(d.Get<float>(0), (std::vector<float>{1, 2, 3, 4, 6, 7, 8, 9}));
}

TEST(Shardy, ManualComputationWithBadShapesOrMeshIsInvalid) {
  auto compile = [](const std::string& mesh, const std::string& in_sharding, const std::string& local) {
    return CompileText(R"(module @m {
  )" + mesh + R"(
  func.func @main(%arg0: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %1 = sdy.manual_computation(%arg0) in_shardings=[)" +
                       in_sharding + R"(]
        out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: )" +
                       local + R"() {
      sdy.return %arg1 : )" +
                       local +
                       R"(
    } : (tensor<4x2xf32>) -> tensor<4x2xf32>
    return %1 : tensor<4x2xf32>
  }
}
)");
  };
  // The operand split 2 ways along dim 0 is 2x2, not 4x2.
  auto c = compile(R"(sdy.mesh @mesh = <["a"=2]>)", R"(<@mesh, [{"a"}, {}]>)", "tensor<4x2xf32>");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
  EXPECT_NE(c.status->message.find("operand 0: tensor<4x2xf32> split 2 ways along dim 0 is not the body's "
                                   "tensor<4x2xf32>"),
            std::string::npos)
      << c.status->message;
  // Split 1 way (the axis has one device): the body must see the whole operand.
  c = compile(R"(sdy.mesh @mesh = <["a"=1]>)", R"(<@mesh, [{"a"}, {}]>)", "tensor<2x2xf32>");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
  EXPECT_NE(c.status->message.find("body argument 0 is typed differently from operand 0, and no manual axis splits "
                                   "it"),
            std::string::npos)
      << c.status->message;
  // A mesh the module does not declare.
  c = compile(R"(sdy.mesh @other = <["a"=2]>)", R"(<@mesh, [{"a"}, {}]>)", "tensor<2x2xf32>");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
  EXPECT_NE(c.status->message.find("mesh @mesh is not declared"), std::string::npos) << c.status->message;
  // Not a sharding.
  c = compile(R"(sdy.mesh @mesh = <["a"=2]>)", R"(<@mesh, [{"a"} {}]>)", "tensor<2x2xf32>");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
  EXPECT_NE(c.status->message.find("'sdy.manual_computation': the sharding of operand 0 is not a sharding: <@mesh, "
                                   "[{\"a\"} {}]>"),
            std::string::npos)
      << c.status->message;
  // A mesh written inline.
  c = compile(R"(sdy.mesh @mesh = <["a"=2]>)", R"(<mesh<["a"=2]>, [{"a"}, {}]>)", "tensor<2x2xf32>");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED) << c.status->message;
  EXPECT_NE(c.status->message.find("has a mesh written inline"), std::string::npos) << c.status->message;
  // A sub-axis.
  c = compile(R"(sdy.mesh @mesh = <["a"=4]>)", R"(<@mesh, [{"a":(1)2}, {}]>)", "tensor<2x2xf32>");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED) << c.status->message;
  EXPECT_NE(c.status->message.find("has a sub-axis"), std::string::npos) << c.status->message;
}

TEST(SkippedOps, AreRejectedAtCompileWithTheirLocationAndName) {
  const std::string text = R"(func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
  %1 = acme.pack %0 into {1, 2} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
)";
  auto c = CompileText(text);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED) << c.status->message;
  EXPECT_NE(c.status->message.find("test.mlir:3:3: 'acme.pack'"), std::string::npos) << c.status->message;
  EXPECT_NE(c.status->message.find("skipped"), std::string::npos) << c.status->message;
}

// ---- f8, f6, f4 -----------------------------------------------------------------------------------

TEST(SmallFloats, ElementwiseOpsRoundTheF32ResultOnceToTheFormat) {
  // f8E4M3FN has 3 mantissa bits: 1 + 0.0625 is a tie between 1.0 and 1.125 -> even (1.0); 448 is its largest
  // finite value and 448 * 2 has no inf to go to: NaN. f8E5M2 overflows to inf.
  const std::string text = R"(func.func @main() -> (tensor<3xf32>, tensor<2xf32>, tensor<3xi1>) {
  %a = stablehlo.constant dense<[1.0, 448.0, -3.0]> : tensor<3xf8E4M3FN>
  %b = stablehlo.constant dense<[0.0625, 448.0, 0.5]> : tensor<3xf8E4M3FN>
  %s = stablehlo.add %a, %b : tensor<3xf8E4M3FN>
  %sf = stablehlo.convert %s : (tensor<3xf8E4M3FN>) -> tensor<3xf32>
  %c = stablehlo.constant dense<[57344.0, 2.0]> : tensor<2xf8E5M2>
  %m = stablehlo.multiply %c, %c : tensor<2xf8E5M2>
  %mf = stablehlo.convert %m : (tensor<2xf8E5M2>) -> tensor<2xf32>
  %lt = stablehlo.compare LT, %a, %b : (tensor<3xf8E4M3FN>, tensor<3xf8E4M3FN>) -> tensor<3xi1>
  func.return %sf, %mf, %lt : tensor<3xf32>, tensor<2xf32>, tensor<3xi1>
}
)";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  const auto s = r.Get<float>(0);
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_EQ(s[2], -2.5f);
  const auto m = r.Get<float>(1);
  EXPECT_TRUE(std::isinf(m[0]) && m[0] > 0);
  EXPECT_EQ(m[1], 4.0f);
  EXPECT_EQ(r.Get<uint8_t>(2), (std::vector<uint8_t>{0, 0, 1}));
}

TEST(SmallFloats, ConvertFromIntegersAndFloatsRoundsOnceAndSaturatesToInt) {
  // 17 -> f4E2M1FN (values 0, 0.5, 1, 1.5, 2, 3, 4, 6; no inf or NaN): the largest finite, 6.
  // f6E3M2FN 2.5 -> i32 truncates to 2; f8E8M0FNU 0.75 is a tie between 0.5 and 1: up in magnitude (1).
  const std::string text = R"(func.func @main() -> (tensor<2xf32>, tensor<i32>, tensor<f32>) {
  %i = stablehlo.constant dense<[17, -1]> : tensor<2xi32>
  %f4 = stablehlo.convert %i : (tensor<2xi32>) -> tensor<2xf4E2M1FN>
  %r4 = stablehlo.convert %f4 : (tensor<2xf4E2M1FN>) -> tensor<2xf32>
  %x = stablehlo.constant dense<2.5> : tensor<f6E3M2FN>
  %xi = stablehlo.convert %x : (tensor<f6E3M2FN>) -> tensor<i32>
  %h = stablehlo.constant dense<0.75> : tensor<f16>
  %e = stablehlo.convert %h : (tensor<f16>) -> tensor<f8E8M0FNU>
  %ef = stablehlo.convert %e : (tensor<f8E8M0FNU>) -> tensor<f32>
  func.return %r4, %xi, %ef : tensor<2xf32>, tensor<i32>, tensor<f32>
}
)";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{6.0f, -1.0f}));
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{2}));
  EXPECT_EQ(r.Get<float>(2), (std::vector<float>{1.0f}));
}

TEST(SmallFloats, ReduceRoundsEveryStepAndDotComputesInF32) {
  // A row-major f8E4M3 sum 16 + 1 + 1: each step rounds to 3 mantissa bits (16 + 1 -> 16, ties to even), so
  // the result is 16, not 18. The dot of [1, 2] . [3, 4] = 11 in f8E4M3FN rounds to 11 (representable).
  const std::string text = R"(func.func @main() -> (tensor<f32>, tensor<f32>) {
  %v = stablehlo.constant dense<[16.0, 1.0, 1.0]> : tensor<3xf8E4M3>
  %z = stablehlo.constant dense<0.0> : tensor<f8E4M3>
  %s = stablehlo.reduce(%v init: %z) applies stablehlo.add across dimensions = [0]
      : (tensor<3xf8E4M3>, tensor<f8E4M3>) -> tensor<f8E4M3>
  %sf = stablehlo.convert %s : (tensor<f8E4M3>) -> tensor<f32>
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf8E4M3FN>
  %b = stablehlo.constant dense<[3.0, 4.0]> : tensor<2xf8E4M3FN>
  %d = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0]
      : (tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN>) -> tensor<f8E4M3FN>
  %df = stablehlo.convert %d : (tensor<f8E4M3FN>) -> tensor<f32>
  func.return %sf, %df : tensor<f32>, tensor<f32>
}
)";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{16.0f}));
  EXPECT_EQ(r.Get<float>(1), (std::vector<float>{11.0f}));
}

TEST(SmallFloats, DataMovementIotaAndChecksWork) {
  const std::string text = R"(func.func @main() -> tensor<4xf8E5M2FNUZ> {
  %i = stablehlo.iota dim = 0 : tensor<4xf8E5M2FNUZ>
  %r = stablehlo.reverse %i, dims = [0] : tensor<4xf8E5M2FNUZ>
  check.expect_eq_const %r, dense<[3.0, 2.0, 1.0, 0.0]> : tensor<4xf8E5M2FNUZ>
  %bad = stablehlo.constant dense<[3.0, 2.0, 1.0, 0.5]> : tensor<4xf8E5M2FNUZ>
  func.return %bad : tensor<4xf8E5M2FNUZ>
}
)";
  auto r = RunText(text);
  ASSERT_FALSE(r.status) << r.status->message;
  const std::string failing = R"(func.func @main() -> tensor<2xf8E4M3FN> {
  %a = stablehlo.constant dense<[1.0, 1.5]> : tensor<2xf8E4M3FN>
  check.expect_eq_const %a, dense<[1.0, 1.75]> : tensor<2xf8E4M3FN>
  func.return %a : tensor<2xf8E4M3FN>
}
)";
  auto f = RunText(failing);
  ASSERT_TRUE(f.status);
  EXPECT_NE(f.status->message.find("1.5 (actual) vs 1.75 (expected)"), std::string::npos) << f.status->message;
}

}  // namespace
}  // namespace neuronmem::interp
