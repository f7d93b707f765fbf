// Compile-time errors, arguments, checks, workspace planning.
#include <gtest/gtest.h>

#include "interp_test_util.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::Fn;
using testing::RunText;

TEST(Program, UnknownOpFailsAtCompileTimeWithItsLocation) {
  auto c =
      CompileText(Fn("  %a = stablehlo.constant dense<1.0> : tensor<f32>\n"
                     "  %r = stablehlo.frobnicate %a : tensor<f32>",
                     "tensor<f32>"));
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(c.status->message.find("test.mlir:3:3: 'stablehlo.frobnicate'"), std::string::npos) << c.status->message;
}

TEST(Program, UnsupportedElementTypeFailsAtCompileTime) {
  // tf32 is a valid MLIR element type that no buffer holds and nothing computes with.
  auto c = CompileText(
      "func.func @main(%a: tensor<2xtf32>) -> tensor<2xtf32> {\n"
      "  %r = stablehlo.add %a, %a : tensor<2xtf32>\n"
      "  func.return %r : tensor<2xtf32>\n}\n");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED) << c.status->message;
  EXPECT_NE(c.status->message.find("tf32"), std::string::npos) << c.status->message;
}

TEST(Program, RunsWithArgumentViewsAndChecksThem) {
  const std::string t =
      "func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {\n"
      "  %r = stablehlo.multiply %x, %y : tensor<3xf32>\n"
      "  func.return %r : tensor<3xf32>\n}\n";
  float x[3] = {1, 2, 3}, y[3] = {4, 5, 6};
  const int64_t dims[1] = {3};
  std::vector<TensorView> args = {{x, ElementType::kF32, dims, 1}, {y, ElementType::kF32, dims, 1}};
  auto r = RunText(t, args);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{4, 10, 18}));
  const int64_t bad_dims[1] = {2};
  args[1].dims = bad_dims;
  auto bad = RunText(t, args);
  ASSERT_TRUE(bad.status);
  EXPECT_EQ(bad.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(bad.status->message.find("argument 1"), std::string::npos);
}

// More results than a run keeps on its stack (8): the rest of the per-result lists go to the heap. Eleven
// results: nine distinct sums, one value returned twice and the argument itself.
TEST(Program, ManyResultsAreEachWrittenWhereTheirAllocatorPutsThem) {
  std::string text = "func.func @main(%x: tensor<2xf32>) -> (";
  for (int i = 0; i < 11; ++i) text += std::string(i ? ", " : "") + "tensor<2xf32>";
  text += ") {\n";
  for (int i = 1; i <= 9; ++i) {
    text += "  %c" + std::to_string(i) + " = stablehlo.constant dense<" + std::to_string(i) + ".0> : tensor<2xf32>\n";
    text += "  %r" + std::to_string(i) + " = stablehlo.add %x, %c" + std::to_string(i) + " : tensor<2xf32>\n";
  }
  text += "  func.return ";
  for (int i = 1; i <= 9; ++i) text += "%r" + std::to_string(i) + ", ";
  text += "%r9, %x : ";
  for (int i = 0; i < 11; ++i) text += std::string(i ? ", " : "") + "tensor<2xf32>";
  text += "\n}\n";
  float x[2] = {10, 20};
  const int64_t dims[1] = {2};
  auto r = RunText(text, {{x, ElementType::kF32, dims, 1}});
  ASSERT_FALSE(r.status) << r.status->message;
  ASSERT_EQ(r.outputs.size(), 11u);
  for (int i = 1; i <= 9; ++i) EXPECT_EQ(r.Get<float>(i - 1), (std::vector<float>{10.0f + i, 20.0f + i})) << i;
  EXPECT_EQ(r.Get<float>(9), (std::vector<float>{19, 29}));
  EXPECT_EQ(r.Get<float>(10), (std::vector<float>{10, 20}));
}

TEST(Program, FailedCheckNamesTheCheckIndexAndValues) {
  const std::string t =
      "func.func @main() {\n"
      "  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
      "  %b = stablehlo.constant dense<[1.0, 2.5]> : tensor<2xf32>\n"
      "  stablehlo.custom_call @check.expect_close(%a, %b) {has_side_effect = true} : "
      "(tensor<2xf32>, tensor<2xf32>) -> ()\n"
      "  func.return\n}\n";
  auto r = RunText(t);
  ASSERT_TRUE(r.status);
  const std::string& m = r.status->message;
  EXPECT_NE(m.find("test.mlir:4:3"), std::string::npos) << m;
  EXPECT_NE(m.find("check.expect_close"), std::string::npos) << m;
  EXPECT_NE(m.find("[1]"), std::string::npos) << m;
  EXPECT_NE(m.find("2.5"), std::string::npos) << m;
}

TEST(Program, CheckToleranceAndUlps) {
  const std::string close =
      "func.func @main() {\n"
      "  %a = stablehlo.constant dense<[1.0]> : tensor<1xf32>\n"
      "  %b = stablehlo.constant dense<[0x3F800003]> : tensor<1xf32>\n"
      "  stablehlo.custom_call @check.expect_close(%a, %b) : (tensor<1xf32>, tensor<1xf32>) -> ()\n"
      "  check.expect_almost_eq_const %a, dense<[1.00009]> : tensor<1xf32>\n"
      "  func.return\n}\n";
  auto ok = RunText(close);
  EXPECT_FALSE(ok.status) << ok.status->message;
  const std::string far =
      "func.func @main() {\n"
      "  %a = stablehlo.constant dense<[1.0]> : tensor<1xf32>\n"
      "  %b = stablehlo.constant dense<[0x3F800004]> : tensor<1xf32>\n"
      "  stablehlo.custom_call @check.expect_close(%a, %b) : (tensor<1xf32>, tensor<1xf32>) -> ()\n"
      "  func.return\n}\n";
  EXPECT_TRUE(RunText(far).status);
}

TEST(Program, WorkspaceReusesDeadIntermediates) {
  // A chain of 10 adds on 1 KiB tensors needs a few buffers at a time, not 10.
  std::string body = "  %v0 = stablehlo.constant dense<1.0> : tensor<256xf32>\n";
  for (int i = 1; i <= 10; ++i)
    body += "  %v" + std::to_string(i) + " = stablehlo.add %v" + std::to_string(i - 1) + ", %v0 : tensor<256xf32>\n";
  body += "  %r = stablehlo.add %v10, %v0 : tensor<256xf32>";
  auto c = CompileText(Fn(body, "tensor<256xf32>"));
  ASSERT_FALSE(c.status) << c.status->message;
  EXPECT_LE(c.program->workspace_bytes(), 4 * 1024 + 1024u);
  HostResultAllocator alloc;
  std::vector<TensorView> results;
  Workspace ws;
  ASSERT_FALSE(c.program->Run(nullptr, 0, &alloc, &results, &ws));
  EXPECT_EQ(static_cast<const float*>(results[0].data)[0], 12.0f);
}

TEST(Program, CustomCallTargetsRegisterLikeTheBuiltIns) {
  CustomCallRegistry reg;
  reg.Register("my.double", [](const CustomCallContext& c) {
    const float* in = static_cast<const float*>(c.operands[0].data);
    float* out = static_cast<float*>(c.results[0].data);
    for (int64_t i = 0; i < c.operands[0].NumElements(); ++i) out[i] = 2 * in[i];
    return Status();
  });
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1.0, 3.0]> : tensor<2xf32>\n"
         "  %r = stablehlo.custom_call @my.double(%a) : (tensor<2xf32>) -> tensor<2xf32>",
         "tensor<2xf32>");
  std::vector<stablehlo::Module> mods;
  ASSERT_FALSE(stablehlo::ParseModules(t, "t.mlir", &mods));
  CompileOptions o;
  o.custom_calls = &reg;
  std::unique_ptr<Program> p;
  ASSERT_FALSE(Compile(mods[0], o, &p));
  HostResultAllocator alloc;
  std::vector<TensorView> results;
  ASSERT_FALSE(p->Run(nullptr, 0, &alloc, &results));
  EXPECT_EQ(static_cast<const float*>(results[0].data)[1], 6.0f);
  o.custom_calls = nullptr;  // the built-in registry does not know the target
  Status s = Compile(mods[0], o, &p);
  ASSERT_TRUE(s);
  EXPECT_NE(s->message.find("unknown custom call target"), std::string::npos);
}

TEST(Program, PlacementAnnotationsPassValuesThrough) {
  const std::string t =
      Fn("  %a = stablehlo.constant dense<[1.5, 2.5]> : tensor<2xf32>\n"
         "  %h = stablehlo.custom_call @annotate_device_placement(%a) {has_side_effect = true, "
         "mhlo.frontend_attributes = {_xla_buffer_placement = \"pinned_host\"}} : (tensor<2xf32>) -> tensor<2xf32>\n"
         "  %d = stablehlo.custom_call @MoveToDevice(%h) : (tensor<2xf32>) -> tensor<2xf32>\n"
         "  %r = stablehlo.custom_call @MoveToHost(%d) : (tensor<2xf32>) -> tensor<2xf32>",
         "tensor<2xf32>");
  auto r = RunText(t);
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<float>(0), (std::vector<float>{1.5f, 2.5f}));
}

}  // namespace
}  // namespace neuronmem::interp
