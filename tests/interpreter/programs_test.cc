// What exported programs use beyond the conformance sample (issue 26): stablehlo.composite (through its
// decomposition, or a registered target of its name), batch_norm_inference / _training / _grad, and
// chlo.ragged_dot in its three modes. The texts follow what jax.export prints (module attributes, loc(...),
// jax.result_info, generic forms of ops without a custom syntax).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <vector>

#include "interp_test_util.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::RunText;

TensorView View(void* data, ElementType type, const std::vector<int64_t>& dims) {
  TensorView v;
  v.data = data;
  v.type = type;
  v.dims = dims.data();
  v.rank = dims.size();
  return v;
}

bool Has(const Status& s, const std::string& what) { return s && s->message.find(what) != std::string::npos; }

// ---- stablehlo.composite -----------------------------------------------------------------------------------

// jax.lax.composite's export: the composite in pretty form, its decomposition a private function named after it.
const char kCompositePretty[] = R"(#loc1 = loc("x")
module @jit_my_op attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> loc("x")) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.composite "my.scale_shift" %arg0 {composite_attributes = {scale = 2.000000e+00 : f32,
        shift = 1 : i64}, decomposition = @my.scale_shift,
        version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32> loc(#loc3)
    return %0 : tensor<4xf32> loc(#loc)
  } loc(#loc)
  func.func private @my.scale_shift(%arg0: tensor<4xf32> loc("x")) -> tensor<4xf32> {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32> loc(#loc)
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32> loc(#loc)
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32> loc(#loc)
    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32> loc(#loc)
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32> loc(#loc)
    %3 = stablehlo.add %1, %2 : tensor<4xf32> loc(#loc)
    return %3 : tensor<4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("jit(my_op)/jit(main)/my.scale_shift"(#loc1))
)";

TEST(Composite, RunsItsDecompositionInPrettyForm) {
  std::vector<float> x = {0, 1, 2, -3};
  std::vector<int64_t> dims = {4};
  auto r = RunText(kCompositePretty, {View(x.data(), ElementType::kF32, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{1, 3, 5, -5}));
}

TEST(Composite, GenericFormWithTwoResults) {
  const std::string t = R"(module @m {
  func.func public @main(%arg0: tensor<2xi32>, %arg1: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
    %0:2 = "stablehlo.composite"(%arg0, %arg1) {composite_attributes = {}, decomposition = @sum_diff,
        name = "ns.sum_diff"}
        : (tensor<2xi32>, tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>)
    return %0#0, %0#1 : tensor<2xi32>, tensor<2xi32>
  }
  func.func private @sum_diff(%a: tensor<2xi32>, %b: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
    %0 = stablehlo.add %a, %b : tensor<2xi32>
    %1 = stablehlo.subtract %a, %b : tensor<2xi32>
    return %0, %1 : tensor<2xi32>, tensor<2xi32>
  }
}
)";
  std::vector<int32_t> a = {5, 7}, b = {1, 10};
  std::vector<int64_t> dims = {2};
  auto r = RunText(t, {View(a.data(), ElementType::kS32, dims), View(b.data(), ElementType::kS32, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{6, 17}));
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{4, -3}));
}

TEST(Composite, ARegisteredTargetOfItsNameTakesItOver) {
  CustomCallRegistry reg = CustomCallRegistry::BuiltIn();
  int calls = 0;
  std::string attrs;
  reg.Register("my.scale_shift", [&](const CustomCallContext& c) -> Status {
    ++calls;
    EXPECT_EQ(c.target, "my.scale_shift");
    EXPECT_EQ(c.num_operands, 1u);
    EXPECT_EQ(c.num_results, 1u);
    if (const stablehlo::Attribute* a = stablehlo::Find(c.op->attributes, "composite_attributes"))
      if (const stablehlo::Attribute* s = a->Get("scale")) attrs = std::to_string(s->f);
    const float* in = static_cast<const float*>(c.operands[0].data);
    float* out = static_cast<float*>(c.results[0].data);
    for (int64_t i = 0; i < c.operands[0].NumElements(); ++i) out[i] = in[i] * 100;
    return Status();
  });
  std::vector<stablehlo::Module> modules;
  ASSERT_FALSE(stablehlo::ParseModules(kCompositePretty, "c.mlir", &modules));
  CompileOptions o;
  o.filename = "c.mlir";
  o.custom_calls = &reg;
  std::unique_ptr<Program> p;
  Status s = Compile(modules[0], o, &p);
  ASSERT_FALSE(s) << s->message;
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<int64_t> dims = {4};
  TensorView arg = View(x.data(), ElementType::kF32, dims);
  HostResultAllocator alloc;
  std::vector<TensorView> results;
  s = p->Run(&arg, 1, &alloc, &results);
  ASSERT_FALSE(s) << s->message;
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(attrs, "2.000000");
  const float* y = static_cast<const float*>(results[0].data);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{100, 200, 300, 400}));

  // The target's failure names the composite, its location and the target.
  reg.Register("my.scale_shift", [](const CustomCallContext&) { return InvalidArgument("no luck"); });
  ASSERT_FALSE(Compile(modules[0], o, &p));
  s = p->Run(&arg, 1, &alloc, &results);
  ASSERT_TRUE(s);
  EXPECT_TRUE(Has(s, "c.mlir:4:5: 'stablehlo.composite' @my.scale_shift: no luck")) << s->message;
}

TEST(Composite, MissingDecompositionIsACompileErrorWithItsLocation) {
  const std::string t = R"(func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.composite "ns.op" %arg0 {decomposition = @nowhere} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
)";
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(Has(c.status,
                  "test.mlir:2:3: 'stablehlo.composite': composite \"ns.op\": its decomposition @nowhere "
                  "is not a function of the module"))
      << c.status->message;

  const std::string none = R"(func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.composite"(%arg0) {name = "ns.op"} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
)";
  c = CompileText(none);
  EXPECT_TRUE(Has(c.status, "'stablehlo.composite': composite \"ns.op\" has no decomposition")) << c.status->message;
}

TEST(Composite, ADecompositionOfAnotherSignatureIsACompileError) {
  const std::string t = R"(func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.composite "ns.op" %arg0 {decomposition = @impl} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @impl(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  return %arg0 : tensor<3xf32>
}
)";
  auto c = CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(Has(c.status,
                  "test.mlir:2:3: 'stablehlo.composite': composite \"ns.op\": its decomposition @impl has "
                  "the signature (tensor<3xf32>) -> (tensor<3xf32>), but the composite takes "
                  "(tensor<2xf32>) -> (tensor<2xf32>)"))
      << c.status->message;
}

TEST(Composite, ANameWithoutNamespaceIsRefused) {
  const std::string t = R"(func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.composite "op" %arg0 {decomposition = @impl} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @impl(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  return %arg0 : tensor<2xf32>
}
)";
  auto c = CompileText(t);
  EXPECT_TRUE(Has(c.status, "composite name \"op\" is not namespaced")) << (c.status ? c.status->message : "ok");
}

// ---- batch_norm -------------------------------------------------------------------------------------------------

std::string BatchNormModule(const std::string& op, const std::string& args, const std::string& sig,
                            const std::string& results, const std::string& ret) {
  return "module @jit_bn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
         "  func.func public @main(" +
         args + ") -> (" + results + ") {\n    " + op + " : " + sig + "\n    return " + ret + "\n  }\n}\n";
}

TEST(BatchNorm, Inference) {
  const std::string t = BatchNormModule(
      "%0 = \"stablehlo.batch_norm_inference\"(%arg0, %arg1, %arg2, %arg3, %arg4) <{epsilon = 0.000000e+00 : f32, "
      "feature_index = 1 : i64}>",
      "%arg0: tensor<2x2xf32>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>, %arg3: tensor<2xf32>, %arg4: tensor<2xf32>",
      "(tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>",
      "tensor<2x2xf32> {jax.result_info = \"result\"}", "%0 : tensor<2x2xf32>");
  std::vector<float> x = {1, 2, 3, 4}, scale = {1, 2}, offset = {0, 1}, mean = {2, 3}, var = {1, 4};
  std::vector<int64_t> d2 = {2, 2}, d1 = {2};
  auto r = RunText(t, {View(x.data(), ElementType::kF32, d2), View(scale.data(), ElementType::kF32, d1),
                       View(offset.data(), ElementType::kF32, d1), View(mean.data(), ElementType::kF32, d1),
                       View(var.data(), ElementType::kF32, d1)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{-1, 0, 1, 2}));
}

TEST(BatchNorm, InferenceInBf16AndOnTheLastAxisOfRank3) {
  // operand [1, 2, 2] in bf16, features on axis 2; epsilon 0.5 with variance 3.5: (x - mean) / 2 * scale + offset.
  const std::string t = R"(func.func @main() -> tensor<1x2x2xbf16> {
  %x = stablehlo.constant dense<[[[1.0, 10.0], [5.0, 14.0]]]> : tensor<1x2x2xbf16>
  %s = stablehlo.constant dense<[4.0, 1.0]> : tensor<2xbf16>
  %o = stablehlo.constant dense<[0.5, -1.0]> : tensor<2xbf16>
  %m = stablehlo.constant dense<[3.0, 12.0]> : tensor<2xbf16>
  %v = stablehlo.constant dense<3.5> : tensor<2xbf16>
  %r = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {epsilon = 5.000000e-01 : f32, feature_index = 2 : i64}
      : (tensor<1x2x2xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>, tensor<2xbf16>) -> tensor<1x2x2xbf16>
  func.return %r : tensor<1x2x2xbf16>
}
)";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<float> got;
  for (uint16_t b : r.Get<uint16_t>(0)) {
    uint32_t bits = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    got.push_back(f);
  }
  EXPECT_EQ(got, (std::vector<float>{-3.5f, -2.0f, 4.5f, 0.0f}));
}

TEST(BatchNorm, TrainingGivesTheBatchStatisticsAndTheNormalizedOperand) {
  const std::string t = BatchNormModule(
      "%output, %batch_mean, %batch_var = \"stablehlo.batch_norm_training\"(%arg0, %arg1, %arg2) <{epsilon = "
      "0.000000e+00 : f32, feature_index = 1 : i64}>",
      "%arg0: tensor<2x2xf64>, %arg1: tensor<2xf64>, %arg2: tensor<2xf64>",
      "(tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>)",
      "tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>",
      "%output, %batch_mean, %batch_var : tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>");
  std::vector<double> x = {1, 2, 3, 6}, scale = {1, 3}, offset = {0, 10};
  std::vector<int64_t> d2 = {2, 2}, d1 = {2};
  auto r = RunText(t, {View(x.data(), ElementType::kF64, d2), View(scale.data(), ElementType::kF64, d1),
                       View(offset.data(), ElementType::kF64, d1)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<double>(0), (std::vector<double>{-1, 7, 1, 13}));
  EXPECT_EQ(r.Get<double>(1), (std::vector<double>{2, 4}));
  EXPECT_EQ(r.Get<double>(2), (std::vector<double>{1, 4}));
}

TEST(BatchNorm, GradFollowsTheSpecDecomposition) {
  // One feature, x = [1, 3], mean 2, variance 4 (as given, not the batch's), scale 4, grad_output [1, 0]:
  // stddev 2; i6 = [2, 0] - 1 - (-1) * [-1, 1] / 4 = [0.75, -0.75]; grad_operand = 4 / 2 / 2 * i6;
  // grad_scale = sum(dy * centered) / stddev = -0.5; grad_offset = sum(dy) = 1.
  const std::string t = R"(func.func @main() -> (tensor<2x1xf32>, tensor<1xf32>, tensor<1xf32>) {
  %x = stablehlo.constant dense<[[1.0], [3.0]]> : tensor<2x1xf32>
  %s = stablehlo.constant dense<4.0> : tensor<1xf32>
  %m = stablehlo.constant dense<2.0> : tensor<1xf32>
  %v = stablehlo.constant dense<4.0> : tensor<1xf32>
  %dy = stablehlo.constant dense<[[1.0], [0.0]]> : tensor<2x1xf32>
  %0:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %dy) {epsilon = 0.0 : f32, feature_index = 1 : i64}
      : (tensor<2x1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<2x1xf32>)
      -> (tensor<2x1xf32>, tensor<1xf32>, tensor<1xf32>)
  func.return %0#0, %0#1, %0#2 : tensor<2x1xf32>, tensor<1xf32>, tensor<1xf32>
}
)";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{0.75f, -0.75f}));
  EXPECT_EQ(r.Get<float>(1), (std::vector<float>{-0.5f}));
  EXPECT_EQ(r.Get<float>(2), (std::vector<float>{1.0f}));
}

// Training and grad on f8 operands and on quantized ones run on f32 copies, each result rounded or quantized
// back (the values are exact in f8E4M3FN, f8E5M2 and i8 at scale 0.5).
TEST(BatchNorm, TrainingAndGradOnF8AndQuantizedOperands) {
  const std::string training = R"(func.func @main() -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %x = stablehlo.constant dense<[[1.0, 2.0], [3.0, 6.0]]> : tensor<2x2xf8E4M3FN>
  %s = stablehlo.constant dense<[1.0, 3.0]> : tensor<2xf8E4M3FN>
  %o = stablehlo.constant dense<[0.0, 10.0]> : tensor<2xf8E4M3FN>
  %y:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {epsilon = 0.0 : f32, feature_index = 1 : i64}
      : (tensor<2x2xf8E4M3FN>, tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN>)
      -> (tensor<2x2xf8E4M3FN>, tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN>)
  %a = stablehlo.convert %y#0 : (tensor<2x2xf8E4M3FN>) -> tensor<2x2xf32>
  %b = stablehlo.convert %y#1 : (tensor<2xf8E4M3FN>) -> tensor<2xf32>
  %c = stablehlo.convert %y#2 : (tensor<2xf8E4M3FN>) -> tensor<2xf32>
  func.return %a, %b, %c : tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>
}
)";
  auto r = RunText(training);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{-1, 7, 1, 13}));
  EXPECT_EQ(r.Get<float>(1), (std::vector<float>{2, 4}));
  EXPECT_EQ(r.Get<float>(2), (std::vector<float>{1, 4}));

  const std::string quantized = R"(func.func @main() -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %xf = stablehlo.constant dense<[[1.0, 2.0], [3.0, 6.0]]> : tensor<2x2xf32>
  %sf = stablehlo.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %of = stablehlo.constant dense<[0.0, 10.0]> : tensor<2xf32>
  %x = stablehlo.uniform_quantize %xf : (tensor<2x2xf32>) -> tensor<2x2x!quant.uniform<i8:f32, 5.000000e-01>>
  %s = stablehlo.uniform_quantize %sf : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>
  %o = stablehlo.uniform_quantize %of : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>
  %y:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {epsilon = 0.0 : f32, feature_index = 1 : i64}
      : (tensor<2x2x!quant.uniform<i8:f32, 5.000000e-01>>, tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>,
         tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>)
      -> (tensor<2x2x!quant.uniform<i8:f32, 5.000000e-01>>, tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>,
          tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>)
  %a = stablehlo.uniform_dequantize %y#0 : (tensor<2x2x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<2x2xf32>
  %b = stablehlo.uniform_dequantize %y#1 : (tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<2xf32>
  %c = stablehlo.uniform_dequantize %y#2 : (tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<2xf32>
  func.return %a, %b, %c : tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>
}
)";
  r = RunText(quantized);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{-1, 7, 1, 13}));
  EXPECT_EQ(r.Get<float>(1), (std::vector<float>{2, 4}));
  EXPECT_EQ(r.Get<float>(2), (std::vector<float>{1, 4}));

  // The grad example below in f8E5M2: grad_operand [0.75, -0.75], grad_scale -0.5, grad_offset 1.
  const std::string grad = R"(func.func @main() -> (tensor<2x1xf32>, tensor<1xf32>, tensor<1xf32>) {
  %x = stablehlo.constant dense<[[1.0], [3.0]]> : tensor<2x1xf8E5M2>
  %s = stablehlo.constant dense<4.0> : tensor<1xf8E5M2>
  %m = stablehlo.constant dense<2.0> : tensor<1xf8E5M2>
  %v = stablehlo.constant dense<4.0> : tensor<1xf8E5M2>
  %dy = stablehlo.constant dense<[[1.0], [0.0]]> : tensor<2x1xf8E5M2>
  %g:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %dy) {epsilon = 0.0 : f32, feature_index = 1 : i64}
      : (tensor<2x1xf8E5M2>, tensor<1xf8E5M2>, tensor<1xf8E5M2>, tensor<1xf8E5M2>, tensor<2x1xf8E5M2>)
      -> (tensor<2x1xf8E5M2>, tensor<1xf8E5M2>, tensor<1xf8E5M2>)
  %a = stablehlo.convert %g#0 : (tensor<2x1xf8E5M2>) -> tensor<2x1xf32>
  %b = stablehlo.convert %g#1 : (tensor<1xf8E5M2>) -> tensor<1xf32>
  %c = stablehlo.convert %g#2 : (tensor<1xf8E5M2>) -> tensor<1xf32>
  func.return %a, %b, %c : tensor<2x1xf32>, tensor<1xf32>, tensor<1xf32>
}
)";
  r = RunText(grad);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{0.75f, -0.75f}));
  EXPECT_EQ(r.Get<float>(1), (std::vector<float>{-0.5f}));
  EXPECT_EQ(r.Get<float>(2), (std::vector<float>{1.0f}));
}

TEST(BatchNorm, BadShapesAndFeatureIndexAreCompileErrors) {
  const std::string bad_scale =
      R"(func.func @main(%x: tensor<2x3xf32>, %s: tensor<2xf32>, %o: tensor<3xf32>) -> tensor<2x3xf32> {
  %0:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64}
      : (tensor<2x3xf32>, tensor<2xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0#0 : tensor<2x3xf32>
}
)";
  auto c = CompileText(bad_scale);
  EXPECT_TRUE(Has(c.status, "test.mlir:2:3: 'stablehlo.batch_norm_training': scale has shape [2]; expected [3]"))
      << (c.status ? c.status->message : "ok");
  const std::string bad_index = R"(func.func @main(%x: tensor<2x3xf32>, %s: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "stablehlo.batch_norm_inference"(%x, %s, %s, %s, %s) {epsilon = 1.0e-3 : f32, feature_index = 2 : i64}
      : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
)";
  c = CompileText(bad_index);
  EXPECT_TRUE(Has(c.status, "feature_index 2 is out of range for an operand of rank 2"))
      << (c.status ? c.status->message : "ok");
  const std::string integers = R"(func.func @main(%x: tensor<2x3xi32>, %s: tensor<3xi32>) -> tensor<2x3xi32> {
  %0 = "stablehlo.batch_norm_inference"(%x, %s, %s, %s, %s) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64}
      : (tensor<2x3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}
)";
  c = CompileText(integers);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(Has(c.status, "element type i32: batch norm takes floating-point tensors")) << c.status->message;
}

// ---- chlo.ragged_dot ----------------------------------------------------------------------------------------------

std::string RaggedDot(const std::string& dn, const std::string& lhs, const std::string& rhs, const std::string& gs,
                      const std::string& result) {
  return "module @jit_ragged attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
         "  func.func public @main(%arg0: " +
         lhs + ", %arg1: " + rhs + ", %arg2: " + gs + ") -> (" + result +
         " {jax.result_info = \"result\"}) {\n"
         "    %0 = \"chlo.ragged_dot\"(%arg0, %arg1, %arg2) <{precision_config = [#chlo<precision DEFAULT>, "
         "#chlo<precision DEFAULT>], ragged_dot_dimension_numbers = #chlo.ragged_dot<" +
         dn + ">}> : (" + lhs + ", " + rhs + ", " + gs + ") -> " + result + " loc(#loc5)\n    return %0 : " + result +
         "\n  }\n}\n#loc5 = loc(\"jit(f)/ragged_dot\")\n";
}

const char kMode1[] =
    "lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], "
    "rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]";

TEST(RaggedDot, NonContractingRowsTakeTheirGroupsMatrix) {
  // lhs [4, 2], rhs [2 groups, 2, 3], group sizes [1, 2]: row 0 uses rhs[0], rows 1-2 rhs[1], row 3 no group (0).
  const std::string t = RaggedDot(kMode1, "tensor<4x2xf32>", "tensor<2x2x3xf32>", "tensor<2xi32>", "tensor<4x3xf32>");
  std::vector<float> lhs = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> rhs = {1, 0, 1, 0, 1, 1,   // group 0: [[1, 0, 1], [0, 1, 1]]
                            2, 0, 0, 0, 0, 3};  // group 1: [[2, 0, 0], [0, 0, 3]]
  std::vector<int32_t> sizes = {1, 2};
  std::vector<int64_t> dl = {4, 2}, dr = {2, 2, 3}, dg = {2};
  auto r = RunText(t, {View(lhs.data(), ElementType::kF32, dl), View(rhs.data(), ElementType::kF32, dr),
                       View(sizes.data(), ElementType::kS32, dg)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{1, 2, 3, 6, 0, 12, 10, 0, 18, 0, 0, 0}));
}

// The example above with int8-quantized operands and result (a mixture-of-experts layer with quantized weights):
// dequantized, computed in f32, the result quantized at scale 1.
TEST(RaggedDot, QuantizedOperandsAndResult) {
  const std::string t = R"(func.func @main() -> tensor<4x3xf32> {
  %lf = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %rf = stablehlo.constant dense<[[[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], [[2.0, 0.0, 0.0], [0.0, 0.0, 3.0]]]>
      : tensor<2x2x3xf32>
  %g = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %l = stablehlo.uniform_quantize %lf : (tensor<4x2xf32>) -> tensor<4x2x!quant.uniform<i8:f32, 5.000000e-01>>
  %r = stablehlo.uniform_quantize %rf : (tensor<2x2x3xf32>) -> tensor<2x2x3x!quant.uniform<i8:f32, 2.500000e-01>>
  %0 = "chlo.ragged_dot"(%l, %r, %g) {ragged_dot_dimension_numbers = #chlo.ragged_dot<lhs_batching_dimensions = [],
      rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1],
      lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>}
      : (tensor<4x2x!quant.uniform<i8:f32, 5.000000e-01>>, tensor<2x2x3x!quant.uniform<i8:f32, 2.500000e-01>>,
         tensor<2xi32>) -> tensor<4x3x!quant.uniform<i8:f32, 1.000000e+00>>
  %1 = stablehlo.uniform_dequantize %0 : (tensor<4x3x!quant.uniform<i8:f32, 1.000000e+00>>) -> tensor<4x3xf32>
  func.return %1 : tensor<4x3xf32>
}
)";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{1, 2, 3, 6, 0, 12, 10, 0, 18, 0, 0, 0}));
}

TEST(RaggedDot, NonContractingWithABatchDimensionAndPerBatchGroups) {
  // lhs [2 b, 3 m, 1 k], rhs [2 g, 2 b, 1 k, 1 n]; group_sizes [b, g] = [[3, 0], [1, 2]].
  const std::string dn =
      "lhs_batching_dimensions = [0], rhs_batching_dimensions = [1], lhs_contracting_dimensions = [2], "
      "rhs_contracting_dimensions = [2], lhs_ragged_dimensions = [1], rhs_group_dimensions = [0]";
  const std::string t =
      RaggedDot(dn, "tensor<2x3x1xi32>", "tensor<2x2x1x1xi32>", "tensor<2x2xi64>", "tensor<2x3x1xi32>");
  std::vector<int32_t> lhs = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> rhs = {10, 20,     // group 0: batch 0 -> 10, batch 1 -> 20
                              100, 200};  // group 1: batch 0 -> 100, batch 1 -> 200
  std::vector<int64_t> sizes = {3, 0, 1, 2};
  std::vector<int64_t> dl = {2, 3, 1}, dr = {2, 2, 1, 1}, dg = {2, 2};
  auto r = RunText(t, {View(lhs.data(), ElementType::kS32, dl), View(rhs.data(), ElementType::kS32, dr),
                       View(sizes.data(), ElementType::kS64, dg)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{10, 20, 30, 80, 1000, 1200}));
}

TEST(RaggedDot, ContractingGivesOneResultPerGroup) {
  // lhs [2 m, 4 k], rhs [4 k, 1 n], group sizes [1, 3] over k: result [2 g, 2 m, 1 n].
  const std::string dn =
      "lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], "
      "rhs_contracting_dimensions = [0], lhs_ragged_dimensions = [1], rhs_group_dimensions = []";
  const std::string t = RaggedDot(dn, "tensor<2x4xf64>", "tensor<4x1xf64>", "tensor<2xi32>", "tensor<2x2x1xf64>");
  std::vector<double> lhs = {1, 2, 3, 4, 5, 6, 7, 8}, rhs = {1, 10, 100, 1000};
  std::vector<int32_t> sizes = {1, 3};
  std::vector<int64_t> dl = {2, 4}, dr = {4, 1}, dg = {2};
  auto r = RunText(t, {View(lhs.data(), ElementType::kF64, dl), View(rhs.data(), ElementType::kF64, dr),
                       View(sizes.data(), ElementType::kS32, dg)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<double>(0), (std::vector<double>{1, 5, 4320, 8760}));
}

TEST(RaggedDot, BatchIsABatchedProductUpToTheGroupsEnd) {
  // lhs [3 b, 1 m, 2 k], rhs [3 b, 2 k, 1 n], group sizes [1, 1] over b: batch 2 is in no group (0).
  const std::string dn =
      "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], "
      "rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = []";
  const std::string t = RaggedDot(dn, "tensor<3x1x2xf32>", "tensor<3x2x1xf32>", "tensor<2xi32>", "tensor<3x1x1xf32>");
  std::vector<float> lhs = {1, 2, 3, 4, 5, 6}, rhs = {1, 1, 2, 0, 1, 1};
  std::vector<int32_t> sizes = {1, 1};
  std::vector<int64_t> dl = {3, 1, 2}, dr = {3, 2, 1}, dg = {2};
  auto r = RunText(t, {View(lhs.data(), ElementType::kF32, dl), View(rhs.data(), ElementType::kF32, dr),
                       View(sizes.data(), ElementType::kS32, dg)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{3, 6, 0}));
}

TEST(RaggedDot, GroupSizesThatDoNotFitFailTheRunWithTheValues) {
  const std::string t = RaggedDot(kMode1, "tensor<4x2xf32>", "tensor<2x2x3xf32>", "tensor<2xi32>", "tensor<4x3xf32>");
  std::vector<float> lhs(8, 1), rhs(12, 1);
  std::vector<int64_t> dl = {4, 2}, dr = {2, 2, 3}, dg = {2};
  for (const auto& [sizes, why] : std::vector<std::pair<std::vector<int32_t>, std::string>>{
           {{3, 2},
            "group sizes [3, 2] do not fit the ragged dimension: they add up to more than the ragged "
            "dimension's 4 (from group 1)"},
           {{-1, 2}, "group sizes [-1, 2] do not fit the ragged dimension: group 0 has a negative size"}}) {
    std::vector<int32_t> s = sizes;
    auto r = RunText(t, {View(lhs.data(), ElementType::kF32, dl), View(rhs.data(), ElementType::kF32, dr),
                         View(s.data(), ElementType::kS32, dg)});
    ASSERT_TRUE(r.status);
    EXPECT_EQ(r.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(Has(r.status, "test.mlir:3:5: 'chlo.ragged_dot': " + why)) << r.status->message;
  }
}

TEST(RaggedDot, ShapeErrorsAreCompileErrors) {
  // Mode 1 without a group dimension in the rhs; a group_sizes of the wrong prefix; a wrong result shape.
  const std::string no_group =
      "lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], "
      "rhs_contracting_dimensions = [0], lhs_ragged_dimensions = [0], rhs_group_dimensions = []";
  auto c = CompileText(RaggedDot(no_group, "tensor<4x2xf32>", "tensor<2x3xf32>", "tensor<2xi32>", "tensor<4x3xf32>"));
  EXPECT_TRUE(Has(c.status, "'chlo.ragged_dot': there must be exactly one group dimension in the rhs"))
      << (c.status ? c.status->message : "ok");
  c = CompileText(RaggedDot(kMode1, "tensor<4x2xf32>", "tensor<2x2x3xf32>", "tensor<3x2xi32>", "tensor<4x3xf32>"));
  EXPECT_TRUE(Has(c.status, "group_sizes has shape [3, 2]; expected [2]")) << (c.status ? c.status->message : "ok");
  c = CompileText(RaggedDot(kMode1, "tensor<4x2xf32>", "tensor<2x2x3xf32>", "tensor<2xi32>", "tensor<4x2xf32>"));
  EXPECT_TRUE(Has(c.status, "the result has shape [4, 2]; the operands give [4, 3]"))
      << (c.status ? c.status->message : "ok");
}

// ---- Element types ------------------------------------------------------------------------------------------

int64_t UlpKey(float f) {
  int32_t b;
  std::memcpy(&b, &f, 4);
  return b < 0 ? static_cast<int64_t>(b ^ 0x7fffffff) : b;
}
int64_t Ulps(float a, float b) { return std::isnan(a) && std::isnan(b) ? 0 : std::llabs(UlpKey(a) - UlpKey(b)); }

TEST(ElementTypes, ComplexAsinIsWithin3UlpInEveryQuadrant) {
  // A grid over the four quadrants and many magnitudes, and the point where casinf is 5 ULP off.
  std::vector<std::complex<float>> z = {{-0.562574f, -1.98037f}};
  const float mags[] = {0.0f, 1e-20f, 1e-4f, 0.3f, 0.9f, 1.0f, 1.7f, 4.0f, 1e4f, 1e20f};
  for (float x : mags)
    for (float y : mags)
      for (int q = 0; q < 4; ++q) z.emplace_back(q & 1 ? -x : x, q & 2 ? -y : y);
  for (int i = 0; i < 400; ++i) z.emplace_back(-3.0f + 0.015f * i, 2.5f - 0.0125f * i);
  const std::string n = std::to_string(z.size());
  const std::string ty = "tensor<" + n + "xcomplex<f32>>";
  const std::string t = "func.func public @main(%arg0: " + ty + ") -> (" + ty +
                        " {jax.result_info = \"result\"}) {\n  %0 = chlo.asin %arg0 : " + ty + " -> " + ty +
                        "\n  return %0 : " + ty + "\n}\n";
  std::vector<int64_t> dims = {static_cast<int64_t>(z.size())};
  auto r = RunText(t, {View(z.data(), ElementType::kC64, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  const auto got = r.Get<std::complex<float>>(0);
  int64_t worst = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    const auto want = std::asin(std::complex<long double>(z[i].real(), z[i].imag()));
    const int64_t u = std::max(Ulps(got[i].real(), static_cast<float>(want.real())),
                               Ulps(got[i].imag(), static_cast<float>(want.imag())));
    EXPECT_LE(u, 3) << "asin(" << z[i].real() << ", " << z[i].imag() << ")";
    worst = std::max(worst, u);
  }
  EXPECT_LE(worst, 1);
}

TEST(ElementTypes, ComplexCbrtIsThePrincipalRoot) {
  const std::string t = R"(func.func @main() -> (tensor<4xcomplex<f32>>, tensor<2xcomplex<f64>>) {
  %a = stablehlo.constant dense<[(-8.0, 0.0), (0.0, 8.0), (0.0, 0.0), (27.0, 0.0)]> : tensor<4xcomplex<f32>>
  %b = stablehlo.constant dense<[(-8.0, 0.0), (0.0, -1.0)]> : tensor<2xcomplex<f64>>
  %0 = stablehlo.cbrt %a : tensor<4xcomplex<f32>>
  %1 = stablehlo.cbrt %b : tensor<2xcomplex<f64>>
  func.return %0, %1 : tensor<4xcomplex<f32>>, tensor<2xcomplex<f64>>
}
)";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  const auto f = r.Get<std::complex<float>>(0);
  const float s3 = std::sqrt(3.0f);
  const std::vector<std::complex<float>> want = {{1, s3}, {s3, 1}, {0, 0}, {3, 0}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_LE(Ulps(f[i].real(), want[i].real()), 1) << i << ": " << f[i].real();
    EXPECT_LE(Ulps(f[i].imag(), want[i].imag()), 1) << i << ": " << f[i].imag();
  }
  const auto d = r.Get<std::complex<double>>(1);
  EXPECT_NEAR(d[0].real(), 1.0, 1e-15);
  EXPECT_NEAR(d[0].imag(), std::sqrt(3.0), 1e-15);
  EXPECT_NEAR(d[1].real(), std::sqrt(3.0) / 2, 1e-15);
  EXPECT_NEAR(d[1].imag(), -0.5, 1e-15);
}

TEST(ElementTypes, TopKOfBooleansPutsTrueFirstInIndexOrder) {
  const std::string t = R"(func.func @main() -> (tensor<2x3xi1>, tensor<2x3xi32>) {
  %a = stablehlo.constant dense<[[false, true, false, true], [false, false, false, true]]> : tensor<2x4xi1>
  %values, %indices = chlo.top_k(%a, k = 3) : tensor<2x4xi1> -> (tensor<2x3xi1>, tensor<2x3xi32>)
  func.return %values, %indices : tensor<2x3xi1>, tensor<2x3xi32>
}
)";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<uint8_t>(0), (std::vector<uint8_t>{1, 1, 0, 1, 0, 0}));
  EXPECT_EQ(r.Get<int32_t>(1), (std::vector<int32_t>{1, 3, 0, 3, 0, 1}));
}

TEST(ElementTypes, ComplexClampIsLexicographic) {
  // minimum(maximum(x, min), max) with (real, imag) ordered lexicographically.
  const std::string t = R"(func.func @main() -> tensor<3xcomplex<f64>> {
  %lo = stablehlo.constant dense<(0.0, 1.0)> : tensor<complex<f64>>
  %hi = stablehlo.constant dense<(2.0, 0.0)> : tensor<complex<f64>>
  %x = stablehlo.constant dense<[(0.0, 0.5), (1.0, -7.0), (2.0, 3.0)]> : tensor<3xcomplex<f64>>
  %r = stablehlo.clamp %lo, %x, %hi : (tensor<complex<f64>>, tensor<3xcomplex<f64>>, tensor<complex<f64>>)
      -> tensor<3xcomplex<f64>>
  func.return %r : tensor<3xcomplex<f64>>
}
)";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<std::complex<double>>(0), (std::vector<std::complex<double>>{{0, 1}, {1, -7}, {2, 0}}));
}

TEST(ElementTypes, DotGeneralOnSubByteIntegersWrapsToTheirWidth) {
  // i4: [[1, 2], [3, -4]] x [[7, 1], [1, 7]] = [[9, 15], [17, -25]], wrapped to 4 bits: [[-7, -1], [1, 7]].
  // ui2 x ui2 -> ui2: [3, 3] . [3, 1] = 12 -> 0.
  const std::string t = R"(func.func @main() -> (tensor<2x2xi4>, tensor<ui2>, tensor<2xi32>) {
  %a = stablehlo.constant dense<[[1, 2], [3, -4]]> : tensor<2x2xi4>
  %b = stablehlo.constant dense<[[7, 1], [1, 7]]> : tensor<2x2xi4>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x2xi4>, tensor<2x2xi4>) -> tensor<2x2xi4>
  %c = stablehlo.constant dense<[3, 3]> : tensor<2xui2>
  %d = stablehlo.constant dense<[3, 1]> : tensor<2xui2>
  %1 = stablehlo.dot_general %c, %d, contracting_dims = [0] x [0] : (tensor<2xui2>, tensor<2xui2>) -> tensor<ui2>
  %2 = stablehlo.dot_general %a, %c, contracting_dims = [1] x [0] : (tensor<2x2xi4>, tensor<2xui2>) -> tensor<2xi32>
  func.return %0, %1, %2 : tensor<2x2xi4>, tensor<ui2>, tensor<2xi32>
}
)";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int8_t>(0), (std::vector<int8_t>{-7, -1, 1, 7}));
  EXPECT_EQ(r.Get<uint8_t>(1), (std::vector<uint8_t>{0}));
  EXPECT_EQ(r.Get<int32_t>(2), (std::vector<int32_t>{9, -3}));
}

TEST(ElementTypes, ChloFloatClassesAndConj) {
  const std::string t = R"(func.func @main() -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<3xi1>,
    tensor<2xcomplex<f32>>, tensor<2xf64>) {
  %a = stablehlo.constant dense<[0x7F800000, 0xFF800000, 0x7FC00000, 1.0]> : tensor<4xf32>
  %0 = chlo.is_inf %a : tensor<4xf32> -> tensor<4xi1>
  %1 = chlo.is_neg_inf %a : tensor<4xf32> -> tensor<4xi1>
  %2 = chlo.is_pos_inf %a : tensor<4xf32> -> tensor<4xi1>
  %b = stablehlo.constant dense<[0x7F800000, 0xFF800000, 2.0]> : tensor<3xf32>
  %c = stablehlo.convert %b : (tensor<3xf32>) -> tensor<3xf8E5M2>
  %3 = chlo.is_pos_inf %c : tensor<3xf8E5M2> -> tensor<3xi1>
  %z = stablehlo.constant dense<[(1.0, 2.0), (-3.0, -0.5)]> : tensor<2xcomplex<f32>>
  %4 = chlo.conj %z : tensor<2xcomplex<f32>> -> tensor<2xcomplex<f32>>
  %r = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf64>
  %5 = chlo.conj %r : tensor<2xf64> -> tensor<2xf64>
  func.return %0, %1, %2, %3, %4, %5 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<3xi1>, tensor<2xcomplex<f32>>,
    tensor<2xf64>
}
)";
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<uint8_t>(0), (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(r.Get<uint8_t>(1), (std::vector<uint8_t>{0, 1, 0, 0}));
  EXPECT_EQ(r.Get<uint8_t>(2), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(r.Get<uint8_t>(3), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(r.Get<std::complex<float>>(4), (std::vector<std::complex<float>>{{1, -2}, {-3, 0.5f}}));
  EXPECT_EQ(r.Get<double>(5), (std::vector<double>{1.5, -2.0}));
  auto c = CompileText(R"(func.func @main(%a: tensor<2xi32>) -> tensor<2xi1> {
  %0 = chlo.is_inf %a : tensor<2xi32> -> tensor<2xi1>
  return %0 : tensor<2xi1>
}
)");
  EXPECT_TRUE(Has(c.status, "test.mlir:2:3: 'chlo.is_inf': the operand must be a float tensor, found i32"))
      << (c.status ? c.status->message : "ok");
}

// ---- shape_assertion -------------------------------------------------------------------------------------------

// jax.export's check of a symbolic dimension (here specialized: `b` is the argument's leading dim, at least 2).
std::string ShapeAssertionModule(int64_t b) {
  const std::string n = std::to_string(b), ty = "tensor<" + n + "x4xf32>";
  return "module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32} {\n"
         "  func.func public @main(%arg0: " +
         ty + ") -> (" + ty +
         " {jax.result_info = \"result\"}) {\n"
         "    %c = stablehlo.constant dense<2> : tensor<i64>\n"
         "    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (" +
         ty +
         ") -> tensor<i32>\n"
         "    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>\n"
         "    %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
         "    stablehlo.custom_call @shape_assertion(%2, %1) {api_version = 2 : i32, error_message = \"Input shapes do "
         "not match the polymorphic shapes specification. Expected value >= 2 for dimension variable 'b'. Obtained "
         "dimension variables: 'b' = {0} from specifying the polymorphic shapes.\", has_side_effect = true} : "
         "(tensor<i1>, tensor<i64>) -> ()\n"
         "    %3 = stablehlo.add %arg0, %arg0 : " +
         ty +
         "\n"
         "    return %3 : " +
         ty +
         "\n"
         "  }\n"
         "}\n";
}

TEST(ShapeAssertion, PassesOrFailsTheRunWithTheValues) {
  std::vector<float> x(12, 1.5f);
  std::vector<int64_t> dims = {3, 4};
  auto r = RunText(ShapeAssertionModule(3), {View(x.data(), ElementType::kF32, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), std::vector<float>(12, 3.0f));
  dims = {1, 4};
  r = RunText(ShapeAssertionModule(1), {View(x.data(), ElementType::kF32, dims)});
  ASSERT_TRUE(r.status);
  EXPECT_EQ(r.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(Has(r.status,
                  "test.mlir:7:5: 'stablehlo.custom_call' @shape_assertion: Input shapes do not match the "
                  "polymorphic shapes specification. Expected value >= 2 for dimension variable 'b'. "
                  "Obtained dimension variables: 'b' = 1 from specifying the polymorphic shapes."))
      << r.status->message;
}

// ---- Shardy round trip -----------------------------------------------------------------------------------------

// What jax.export leaves of a shard_map under Shardy (xla/service/spmd/shardy's round trip): the annotations pass
// through, the body is a call of @xla.sdy.manual_computation_body. `mesh` names the mesh axis size.
std::string ShardyModule(int x, const std::string& local) {
  const std::string n = std::to_string(x), g = "tensor<8x4xf32>";
  return "module @jit_f attributes {mhlo.frontend_attributes = {xla.sdy.meshes = \"{mesh = #sdy.mesh<[\\22x\\22=" + n +
         "]>}\"},\n    mhlo.num_partitions = " + n +
         " : i32, mhlo.num_replicas = 1 : i32} {\n"
         "  func.func public @main(%arg0: " +
         g +
         " {mhlo.frontend_attributes = {\n"
         "      xla.sdy.sharding = \"#sdy.sharding<@mesh, [{\\22x\\22}, {}]>\"}, mhlo.sharding = "
         "\"{devices=[2,1]<=[2]}\"})\n"
         "      -> (" +
         g +
         " {jax.result_info = \"result\"}) {\n"
         "    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.frontend_attributes = {\n"
         "        xla.sdy.sharding = \"#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}, {}]>]>\"},\n"
         "        mhlo.sharding = \"{devices=[2,1]<=[2]}\"} : (" +
         g + ") -> " + g +
         "\n"
         "    %1 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%0) {has_side_effect = true,\n"
         "        mhlo.frontend_attributes = {xla.sdy.in_shardings = \"#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}, "
         "{}]>]>\",\n"
         "        xla.sdy.manual_axes = \"#sdy<manual_axes{\\22x\\22}>\"}} : (" +
         g + ") -> " + local +
         "\n"
         "    %2 = call @xla.sdy.manual_computation_body(%1) {mhlo.frontend_attributes = {inlineable = \"false\"}}\n"
         "        : (" +
         local + ") -> " + local +
         "\n"
         "    %3 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%2) {has_side_effect = true,\n"
         "        mhlo.frontend_attributes = {xla.sdy.manual_axes = \"#sdy<manual_axes{\\22x\\22}>\",\n"
         "        xla.sdy.out_shardings = \"#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}, {}]>]>\"}} : (" +
         local + ") -> " + g +
         "\n"
         "    stablehlo.custom_call @xla.sdy.ShardingGroup(%3) {has_side_effect = true,\n"
         "        mhlo.frontend_attributes = {xla.sdy.sharding_group_id = \"0 : i64\"}} : (" +
         g +
         ") -> ()\n"
         "    %4 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%3) {has_side_effect = true,\n"
         "        mhlo.frontend_attributes = {xla.sdy.sharding = \"#sdy.sharding_per_value<[<@mesh, [{}, {}]>]>\"}}\n"
         "        : (" +
         g + ") -> " + g +
         "\n"
         "    return %4 : " +
         g +
         "\n"
         "  }\n"
         "  func.func @xla.sdy.manual_computation_body(%arg0: " +
         local + ") -> " + local +
         " {\n"
         "    %0 = stablehlo.multiply %arg0, %arg0 : " +
         local +
         "\n"
         "    return %0 : " +
         local +
         "\n"
         "  }\n"
         "}\n";
}

TEST(Shardy, RoundTripAnnotationsPassThroughOnOneDevice) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 8);
  std::vector<int64_t> dims = {8, 4};
  auto r = RunText(ShardyModule(1, "tensor<8x4xf32>"), {View(x.data(), ElementType::kF32, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  const auto y = r.Get<float>(0);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], x[i] * x[i]) << i;
  // No kernel for any annotation: the program is the call and the multiply.
  auto c = CompileText(ShardyModule(1, "tensor<8x4xf32>"));
  ASSERT_FALSE(c.status) << c.status->message;
  EXPECT_EQ(c.program->num_kernels(), 2u);
}

// Over 2 devices the annotations split the value: GlobalToLocalShape, the body call and LocalToGlobalShape run as
// one manual computation (each device squares its 4 rows; manual_test.cc has bodies that communicate).
TEST(Shardy, RoundTripOverTwoDevicesRunsAsAManualComputation) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 8);
  std::vector<int64_t> dims = {8, 4};
  auto r = RunText(ShardyModule(2, "tensor<4x4xf32>"), {View(x.data(), ElementType::kF32, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  const auto y = r.Get<float>(0);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], x[i] * x[i]) << i;
}

}  // namespace
}  // namespace neuronmem::interp
