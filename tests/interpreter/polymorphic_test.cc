// Shape-polymorphic entries (issue 26): modules as jax.export writes them with symbolic dimensions (@main over
// tensor<?x...>, jax.uses_shape_polymorphism, get_dimension_size, a shape_assertion per dimension variable, the
// body in a private function that takes the dimension variables as jax.global_constant arguments, dynamic-shape
// ops inside), compiled per argument-shape tuple (Specializations) with the shapes refined from the arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "interp_test_util.h"
#include "interpreter/specialize.h"
#include "stablehlo/parser.h"

namespace neuronmem::interp {
namespace {

bool Has(const Status& s, const std::string& what) { return s && s->message.find(what) != std::string::npos; }

// jax.export(jax.jit(f))(jax.ShapeDtypeStruct(("b", 4), f32)) of f(x, w) = tanh(x @ w) * 2 + sum(x, axis=1)[:, None]
// (w: f32[4, 3]), as jax prints it: the check b >= 1, then the body in @_wrapped_jax_export_main.
const char kExported[] =
    "#loc1 = loc(\"x\")\n"
    "#loc2 = loc(\"w\")\n"
    "module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32, "
    "mhlo.num_replicas = 1 : i32} {\n"
    "  func.func public @main(%arg0: tensor<?x4xf32> loc(\"x\"), %arg1: tensor<4x3xf32> loc(\"w\")) -> "
    "(tensor<?x3xf32> {jax.result_info = \"result\"}) {\n"
    "    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32> loc(#loc4)\n"
    "    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64> loc(#loc4)\n"
    "    %c = stablehlo.constant dense<1> : tensor<i64> loc(#loc)\n"
    "    %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1> loc(#loc4)\n"
    "    stablehlo.custom_call @shape_assertion(%2, %1) {api_version = 2 : i32, error_message = "
    "\"Input shapes do not match the polymorphic shapes specification. Expected value >= 1 for "
    "dimension variable 'b'. Using the following polymorphic shapes specifications: args[0].shape = "
    "(b, 4). Obtained dimension variables: 'b' = {0} from specifying the polymorphic shapes.\", "
    "has_side_effect = true} : (tensor<i1>, tensor<i64>) -> () loc(#loc4)\n"
    "    %3 = call @_wrapped_jax_export_main(%1, %arg0, %arg1) : (tensor<i64>, tensor<?x4xf32>, "
    "tensor<4x3xf32>) -> tensor<?x3xf32> loc(#loc)\n"
    "    return %3 : tensor<?x3xf32> loc(#loc)\n"
    "  } loc(#loc)\n"
    "  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = \"b\"} "
    "loc(unknown), %arg1: tensor<?x4xf32> loc(\"x\"), %arg2: tensor<4x3xf32> loc(\"w\")) -> "
    "(tensor<?x3xf32> {jax.result_info = \"result\"}) {\n"
    "    %0 = stablehlo.dot_general %arg1, %arg2, contracting_dims = [1] x [0], precision = "
    "[DEFAULT, DEFAULT] : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32> loc(#loc5)\n"
    "    %1 = stablehlo.tanh %0 : tensor<?x3xf32> loc(#loc6)\n"
    "    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32> loc(#loc)\n"
    "    %2 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32> loc(#loc)\n"
    "    %3 = stablehlo.reshape %2 : (tensor<i32>) -> tensor<1xi32> loc(#loc)\n"
    "    %c = stablehlo.constant dense<3> : tensor<1xi32> loc(#loc)\n"
    "    %4 = stablehlo.concatenate %3, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> "
    "tensor<2xi32> loc(#loc)\n"
    "    %5 = stablehlo.dynamic_broadcast_in_dim %cst, %4, dims = [] : (tensor<f32>, tensor<2xi32>) "
    "-> tensor<?x3xf32> loc(#loc7)\n"
    "    %6 = stablehlo.multiply %1, %5 : tensor<?x3xf32> loc(#loc7)\n"
    "    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc(#loc)\n"
    "    %7 = stablehlo.reduce(%arg1 init: %cst_0) applies stablehlo.add across dimensions = [1] : "
    "(tensor<?x4xf32>, tensor<f32>) -> tensor<?xf32> loc(#loc8)\n"
    "    %8 = stablehlo.reshape %2 : (tensor<i32>) -> tensor<1xi32> loc(#loc)\n"
    "    %c_1 = stablehlo.constant dense<1> : tensor<1xi32> loc(#loc)\n"
    "    %9 = stablehlo.concatenate %8, %c_1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> "
    "tensor<2xi32> loc(#loc)\n"
    "    %10 = stablehlo.dynamic_reshape %7, %9 : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x1xf32> "
    "loc(#loc9)\n"
    "    %11 = stablehlo.concatenate %8, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> "
    "tensor<2xi32> loc(#loc)\n"
    "    %12 = stablehlo.dynamic_broadcast_in_dim %10, %11, dims = [0, 1] : (tensor<?x1xf32>, "
    "tensor<2xi32>) -> tensor<?x3xf32> loc(#loc9)\n"
    "    %13 = stablehlo.add %6, %12 : tensor<?x3xf32> loc(#loc9)\n"
    "    return %13 : tensor<?x3xf32> loc(#loc)\n"
    "  } loc(#loc)\n"
    "} loc(#loc)\n"
    "#loc = loc(unknown)\n"
    "#loc4 = loc(\"jit(f)/dimension_size\")\n"
    "#loc5 = loc(\"jit(f)/dot_general\")\n"
    "#loc6 = loc(\"jit(f)/tanh\")\n"
    "#loc7 = loc(\"jit(f)/mul\")\n"
    "#loc8 = loc(\"jit(f)/reduce_sum\")\n"
    "#loc9 = loc(\"jit(f)/add\")\n";

struct Fixture {
  std::vector<stablehlo::Module> modules;
  Status parse = stablehlo::ParseModules(kExported, "f.mlir", &modules);
};

CompileOptions Options() {
  CompileOptions o;
  o.filename = "f.mlir";
  return o;
}

TensorView View(const void* data, ElementType type, const std::vector<int64_t>& dims) {
  TensorView v;
  v.data = const_cast<void*>(data);
  v.type = type;
  v.dims = dims.data();
  v.rank = dims.size();
  return v;
}

// Runs the specialization for x: f32[b, 4] and w: f32[4, 3]; checks the result against f computed here.
void RunAndCheck(Specializations* s, int64_t b) {
  std::vector<float> x(b * 4), w(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(i) - 0.2f;
  const std::vector<int64_t> xd = {b, 4}, wd = {4, 3};
  std::shared_ptr<const Program> p;
  ASSERT_FALSE(s->Get({xd, wd}, &p)) << b;
  ASSERT_EQ(p->parameters()[0].dims, xd);
  ASSERT_EQ(p->results().size(), 1u);
  EXPECT_EQ(p->results()[0].dims, (std::vector<int64_t>{b, 3}));
  const TensorView args[] = {View(x.data(), ElementType::kF32, xd), View(w.data(), ElementType::kF32, wd)};
  HostResultAllocator alloc;
  std::vector<TensorView> results;
  Status st = p->Run(args, 2, &alloc, &results);
  ASSERT_FALSE(st) << st->message;
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].rank, 2u);
  EXPECT_EQ(results[0].dims[0], b);
  const float* y = static_cast<const float*>(results[0].data);
  for (int64_t i = 0; i < b; ++i) {
    double row = 0;
    for (int k = 0; k < 4; ++k) row += x[i * 4 + k];
    for (int j = 0; j < 3; ++j) {
      double dot = 0;
      for (int k = 0; k < 4; ++k) dot += static_cast<double>(x[i * 4 + k]) * w[k * 3 + j];
      EXPECT_NEAR(y[i * 3 + j], std::tanh(dot) * 2 + row, 1e-5) << "b=" << b << " [" << i << "," << j << "]";
    }
  }
}

TEST(ShapePolymorphism, TheEntryIsRefinedFromTheArgumentsOncePerShape) {
  Fixture f;
  ASSERT_FALSE(f.parse) << f.parse->message;
  EXPECT_TRUE(Specializations::IsPolymorphic(f.modules[0], "main"));
  Specializations s(f.modules[0], Options());
  EXPECT_EQ(s.capacity(), Specializations::kDefaultCapacity);
  RunAndCheck(&s, 3);
  RunAndCheck(&s, 5);
  RunAndCheck(&s, 1);
  EXPECT_EQ(s.num_compiled(), 3u);
  RunAndCheck(&s, 3);  // from the cache
  RunAndCheck(&s, 5);
  EXPECT_EQ(s.num_compiled(), 3u);
  EXPECT_EQ(s.num_cached(), 3u);
}

TEST(ShapePolymorphism, TheCacheIsBounded) {
  Fixture f;
  ASSERT_FALSE(f.parse) << f.parse->message;
  Specializations s(f.modules[0], Options(), 2);
  RunAndCheck(&s, 2);
  RunAndCheck(&s, 3);
  RunAndCheck(&s, 2);  // most recently used: 2, then 3
  RunAndCheck(&s, 4);  // drops 3
  EXPECT_EQ(s.num_compiled(), 3u);
  EXPECT_EQ(s.num_cached(), 2u);
  RunAndCheck(&s, 2);  // kept
  EXPECT_EQ(s.num_compiled(), 3u);
  RunAndCheck(&s, 3);  // compiled again
  EXPECT_EQ(s.num_compiled(), 4u);
  EXPECT_EQ(s.num_cached(), 2u);
}

// b = 0 passes the shapes but not the module's own check: the run fails with jax's message and the value.
TEST(ShapePolymorphism, AFailingShapeAssertionFailsTheRunWithItsMessage) {
  Fixture f;
  ASSERT_FALSE(f.parse) << f.parse->message;
  Specializations s(f.modules[0], Options());
  const std::vector<int64_t> xd = {0, 4}, wd = {4, 3};
  std::shared_ptr<const Program> p;
  Status st = s.Get({xd, wd}, &p);
  ASSERT_FALSE(st) << st->message;
  std::vector<float> w(12, 1.0f);
  const TensorView args[] = {View(nullptr, ElementType::kF32, xd), View(w.data(), ElementType::kF32, wd)};
  HostResultAllocator alloc;
  std::vector<TensorView> results;
  st = p->Run(args, 2, &alloc, &results);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(Has(st,
                  "f.mlir:9:5: 'stablehlo.custom_call' @shape_assertion: Input shapes do not match the polymorphic "
                  "shapes specification. Expected value >= 1 for dimension variable 'b'."))
      << st->message;
  EXPECT_TRUE(Has(st, "'b' = 0 from specifying the polymorphic shapes.")) << st->message;
}

TEST(ShapePolymorphism, ArgumentsThatDoNotFitTheEntryAreRefusedByName) {
  Fixture f;
  ASSERT_FALSE(f.parse) << f.parse->message;
  Specializations s(f.modules[0], Options());
  std::shared_ptr<const Program> p;
  Status st = s.Get({{3, 5}, {4, 3}}, &p);  // the static dim 4
  ASSERT_TRUE(st);
  EXPECT_EQ(st->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(st->message,
            "f.mlir:4:26: function @main: argument 0 (%arg0) of shape [3,5] does not fit its type "
            "tensor<?x4xf32>");
  st = s.Get({{3}, {4, 3}}, &p);  // the rank
  EXPECT_TRUE(Has(st, "argument 0 (%arg0) of shape [3] does not fit its type tensor<?x4xf32>")) << st->message;
  st = s.Get({{3, 4}, {4, 2}}, &p);  // a parameter without `?` dims
  ASSERT_TRUE(st);
  EXPECT_TRUE(Has(st, "argument 1 (%arg1) of shape [4,2] does not fit its type tensor<4x3xf32>")) << st->message;
  st = s.Get({{3, 4}}, &p);
  EXPECT_TRUE(Has(st, "function @main takes 2 parameters, not 1")) << st->message;
  st = s.Get({{}, {4, 3}}, &p);
  EXPECT_TRUE(Has(st, "argument 0 (%arg0) of rank 0 does not fit its type tensor<?x4xf32>")) << st->message;
  EXPECT_EQ(s.num_compiled(), 0u);
}

// Two arguments that share the dimension variable `b` but disagree: the element-wise op names both shapes.
TEST(ShapePolymorphism, ASymbolicDimensionThatDisagreesBetweenArgumentsIsAnError) {
  const char text[] = R"(module @jit_g attributes {jax.uses_shape_polymorphism = true} {
  func.func public @main(%arg0: tensor<?xf32>, %arg1: tensor<?xf32>) -> tensor<?xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<?xf32>
    return %0 : tensor<?xf32>
  }
}
)";
  std::vector<stablehlo::Module> modules;
  ASSERT_FALSE(stablehlo::ParseModules(text, "g.mlir", &modules));
  Specializations s(modules[0], Options());
  std::shared_ptr<const Program> p;
  ASSERT_FALSE(s.Get({{3}, {3}}, &p));
  Status st = s.Get({{3}, {4}}, &p);
  ASSERT_TRUE(st);
  EXPECT_TRUE(Has(st, "f.mlir:3:5: 'stablehlo.add'")) << st->message;
  EXPECT_EQ(s.num_compiled(), 1u);
}

// Without refinement a `?` parameter is still refused at compile time, as before.
TEST(ShapePolymorphism, AnUnrefinedPolymorphicEntryIsRefused) {
  auto c = testing::CompileText(kExported);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_TRUE(Has(c.status, "dynamic shape tensor<?x4xf32> is not supported")) << c.status->message;
  std::vector<stablehlo::Module> modules;
  ASSERT_FALSE(
      stablehlo::ParseModules("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : "
                              "tensor<2xf32>\n}\n",
                              "s.mlir", &modules));
  EXPECT_FALSE(Specializations::IsPolymorphic(modules[0], "main"));
  EXPECT_FALSE(Specializations::IsPolymorphic(modules[0], "nowhere"));
}

}  // namespace
}  // namespace neuronmem::interp
