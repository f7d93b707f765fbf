// Issue 23, classes 1-4: malformed ops, shapes and attributes whose arithmetic overflows, signatures of
// returns, calls and control flow, and deep call chains: each gets a clear status at compile time.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "interp_test_util.h"
#include "interpreter/kernel.h"
#include "interpreter/verify.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::RunText;

std::string Message(const Status& s) { return s ? s->message : std::string("OK"); }

// ---- Class 1: every op is verified before its compile function runs -----------------------------------

TEST(Verify, EveryRegisteredOpHasAnEntry) {
  size_t n = 0;
  for (const auto& [name, fn] : OpRegistry()) {
    EXPECT_TRUE(HasVerifierEntry(name)) << name << " is registered but has no entry in verify.cc";
    ++n;
  }
  EXPECT_GT(n, 100u);
}

// The ops of the issue, without operands or results: a status, never a kernel indexing what is not there.
TEST(Verify, OpsWithoutOperandsOrResultsFailCleanly) {
  for (const char* op : {"stablehlo.slice", "stablehlo.reshape", "stablehlo.dynamic_reshape",
                         "stablehlo.dynamic_update_slice", "stablehlo.transpose", "stablehlo.add"}) {
    auto c = CompileText(std::string("func.func @main() {\n  \"") + op + "\"() : () -> ()\n  func.return\n}\n");
    ASSERT_TRUE(c.status) << op;
    EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << op << ": " << c.status->message;
    EXPECT_NE(c.status->message.find("takes"), std::string::npos) << c.status->message;
  }
}

// Every registered op in the generic form with 0 to 3 operands and 0 to 2 results (tensor<2xf32>, and
// tuples): compile, and run what compiles. Nothing may crash; what fails names the op.
TEST(Verify, EveryOpWithEveryArityCompilesOrFailsClealy) {
  size_t failed = 0, ran = 0;
  for (const auto& [name, fn] : OpRegistry()) {
    for (int nin = 0; nin <= 3; ++nin) {
      for (int nout = 0; nout <= 2; ++nout) {
        for (const char* type : {"tensor<2xf32>", "tuple<tensor<2xf32>, tensor<i32>>"}) {
          std::string params, operands, in_types, out_types;
          for (int i = 0; i < nin; ++i) {
            params += std::string(i ? ", " : "") + "%a" + std::to_string(i) + ": " + type;
            operands += std::string(i ? ", " : "") + "%a" + std::to_string(i);
            in_types += std::string(i ? ", " : "") + type;
          }
          for (int i = 0; i < nout; ++i) out_types += std::string(i ? ", " : "") + type;
          std::string text = "func.func @main(" + params + ") {\n  ";
          if (nout == 1) text += "%r = ";
          if (nout > 1) text += "%r:" + std::to_string(nout) + " = ";
          text += "\"" + std::string(name) + "\"(" + operands + ") : (" + in_types + ") -> (" + out_types +
                  ")\n  func.return\n}\n";
          auto c = CompileText(text);
          if (c.status) {
            ++failed;
            EXPECT_NE(c.status->message.find(std::string(name)), std::string::npos) << text << c.status->message;
            continue;
          }
          if (std::string(type) != "tensor<2xf32>") continue;
          float data[3][2] = {{1, 2}, {3, 4}, {5, 6}};
          const int64_t dims[1] = {2};
          std::vector<TensorView> args;
          for (int i = 0; i < nin; ++i) args.push_back({data[i], ElementType::kF32, dims, 1});
          auto r = RunText(text, args);
          ++ran;
          (void)r;  // any status: the point is that it returns
        }
      }
    }
  }
  EXPECT_GT(failed, 0u);
  EXPECT_GT(ran, 0u);
}

// The built-in custom call targets take what the op gives them: another number of operands than the two
// values they compare is a status at compile or run time.
TEST(Verify, BuiltInCustomCallTargetsCheckTheirArity) {
  for (const char* target : {"check.expect_eq", "check.expect_close", "check.expect_almost_eq", "check.eq"}) {
    for (int nin = 0; nin <= 3; ++nin) {
      for (int nout = 0; nout <= 1; ++nout) {
        if (nin == 2) continue;  // the two values they compare (a result is optional)
        std::string params, operands, types;
        for (int i = 0; i < nin; ++i) {
          params += std::string(i ? ", " : "") + "%a" + std::to_string(i) + ": tensor<2xf32>";
          operands += std::string(i ? ", " : "") + "%a" + std::to_string(i);
          types += std::string(i ? ", " : "") + "tensor<2xf32>";
        }
        const std::string text = "func.func @main(" + params + ") {\n  " + (nout ? "%r = " : "") +
                                 "stablehlo.custom_call @" + target + "(" + operands + ") : (" + types + ") -> (" +
                                 (nout ? "tensor<i1>" : "") + ")\n  func.return\n}\n";
        float data[3][2] = {{1, 2}, {1, 2}, {1, 2}};
        const int64_t dims[1] = {2};
        std::vector<TensorView> args;
        for (int i = 0; i < nin; ++i) args.push_back({data[i], ElementType::kF32, dims, 1});
        auto r = RunText(text, args);
        EXPECT_TRUE(r.status) << text;
      }
    }
  }
}

// Found by fuzz_compile: a slice whose result has another rank than its operand read past the result's dims.
TEST(Verify, SliceResultRankMustMatch) {
  auto c = CompileText(
      "func.func @main(%a: tensor<2x4xf32>) -> tensor<1xf32> {\n"
      "  %r = stablehlo.slice %a [0:1, 1:2] : (tensor<2x4xf32>) -> tensor<1xf32>\n"
      "  func.return %r : tensor<1xf32>\n}\n");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
  // The table's rank rule holds the same for the other ops whose result has the operand's rank.
  auto t = CompileText(
      "func.func @main(%a: tensor<2x4xf32>) -> tensor<8xf32> {\n"
      "  %r = \"stablehlo.transpose\"(%a) {permutation = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<8xf32>\n"
      "  func.return %r : tensor<8xf32>\n}\n");
  ASSERT_TRUE(t.status);
  EXPECT_NE(t.status->message.find("operand 0's rank"), std::string::npos) << t.status->message;
}

TEST(Verify, ElementwiseShapesMustAgree) {
  auto c = CompileText(
      "func.func @main(%a: tensor<4xf32>, %b: tensor<2xf32>) -> tensor<4xf32> {\n"
      "  %r = \"stablehlo.atan2\"(%a, %b) : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>\n"
      "  func.return %r : tensor<4xf32>\n}\n");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
}

// ---- Class 2: shape arithmetic is checked ----------------------------------------------------------------

void ExpectRefused(const std::string& text, const char* what) {
  auto c = CompileText(text);
  ASSERT_TRUE(c.status) << what << " compiled";
  EXPECT_TRUE(c.status->code == NEURONMEM_STATUS_INVALID_ARGUMENT || c.status->code == NEURONMEM_STATUS_UNIMPLEMENTED)
      << what << ": " << c.status->message;
}

TEST(CheckedShapes, ValuesWhoseCountOrBytesOverflowAreRefused) {
  ExpectRefused(
      "func.func @main() -> tensor<4294967296x4294967296xf32> {\n"
      "  %r = stablehlo.iota dim = 0 : tensor<4294967296x4294967296xf32>\n"
      "  func.return %r : tensor<4294967296x4294967296xf32>\n}\n",
      "iota 2^32 x 2^32");
  ExpectRefused(
      "func.func @main(%a: tensor<1073741824x1073741824x16xi8>) -> tensor<16x1073741824x1073741824xi8> {\n"
      "  %r = stablehlo.transpose %a, dims = [2, 1, 0] : (tensor<1073741824x1073741824x16xi8>) -> "
      "tensor<16x1073741824x1073741824xi8>\n"
      "  func.return %r : tensor<16x1073741824x1073741824xi8>\n}\n",
      "transpose 2^30 x 2^30 x 16");
  // 2^41 bytes: no wrap, but more than the interpreter makes.
  ExpectRefused(
      "func.func @main() -> tensor<549755813888xf32> {\n"
      "  %r = stablehlo.iota dim = 0 : tensor<549755813888xf32>\n"
      "  func.return %r : tensor<549755813888xf32>\n}\n",
      "iota of 2^41 bytes");
}

std::string ReduceWindow(const std::string& attrs, const std::string& result) {
  return "func.func @main(%a: tensor<4xf32>) -> tensor<" + result +
         "xf32> {\n"
         "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
         "  %r = \"stablehlo.reduce_window\"(%a, %z) ({\n"
         "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
         "    %s = stablehlo.add %x, %y : tensor<f32>\n"
         "    stablehlo.return %s : tensor<f32>\n"
         "  }) {" +
         attrs + "} : (tensor<4xf32>, tensor<f32>) -> tensor<" + result +
         "xf32>\n"
         "  func.return %r : tensor<" +
         result + "xf32>\n}\n";
}

TEST(CheckedShapes, ReduceWindowAttributesNearInt64MaxAreRefused) {
  const std::string big = "9223372036854775807";
  ExpectRefused(ReduceWindow("window_dimensions = array<i64: 2>, window_dilations = array<i64: " + big + ">", "1"),
                "window dilation");
  ExpectRefused(ReduceWindow("window_dimensions = array<i64: 2>, base_dilations = array<i64: " + big + ">", "1"),
                "base dilation");
  ExpectRefused(
      ReduceWindow("window_dimensions = array<i64: 2>, padding = dense<[[" + big + ", 1]]> : tensor<1x2xi64>", "1"),
      "padding");
  // No overflow, but windows of 2^62 elements: the run would never finish.
  ExpectRefused(ReduceWindow("window_dimensions = array<i64: 4611686018427387904>, padding = dense<[[0, "
                             "4611686018427387904]]> : tensor<1x2xi64>",
                             "1"),
                "a window of 2^62 elements");
  // Large strides are fine: the window moves once.
  auto ok =
      CompileText(ReduceWindow("window_dimensions = array<i64: 2>, window_strides = array<i64: " + big + ">", "1"));
  EXPECT_FALSE(ok.status) << Message(ok.status);
  // And run: a window of 4 over [pad, pad, 1, 2] (found by fuzz_compile: the vectorized kernel's first in-bounds
  // position, (pad + stride - 1) / stride, overflowed for a stride near INT64_MAX; UBSan stopped it).
  auto run = RunText(
      "func.func @main() -> tensor<1xf32> {\n"
      "  %a = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>\n"
      "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %r = \"stablehlo.reduce_window\"(%a, %z) ({\n"
      "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
      "    %s = stablehlo.add %x, %y : tensor<f32>\n"
      "    stablehlo.return %s : tensor<f32>\n"
      "  }) {window_dimensions = array<i64: 4>, window_strides = array<i64: " +
      big +
      ">, padding = dense<[[2, 0]]> : tensor<1x2xi64>} : (tensor<4xf32>, tensor<f32>) -> tensor<1xf32>\n"
      "  func.return %r : tensor<1xf32>\n}\n");
  ASSERT_FALSE(run.status) << Message(run.status);
  EXPECT_EQ(run.Get<float>(0), std::vector<float>{3.0f});
  // Padding beyond 2^48 elements (kMaxWindowExtent) is refused, whatever the stride.
  ExpectRefused(ReduceWindow("window_dimensions = array<i64: 2>, window_strides = array<i64: " + big +
                                 ">, padding = dense<[[281474976710657, 1]]> : tensor<1x2xi64>",
                             "1"),
                "padding beyond 2^48");
}

TEST(CheckedShapes, SliceAndPadLimitsNearInt64Max) {
  // A stride near INT64_MAX takes one element (the old formula overflowed and refused it).
  auto slice = RunText(
      "func.func @main() -> tensor<1xf32> {\n"
      "  %a = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>\n"
      "  %r = \"stablehlo.slice\"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>, "
      "strides = array<i64: 9223372036854775807>} : (tensor<3xf32>) -> tensor<1xf32>\n"
      "  func.return %r : tensor<1xf32>\n}\n");
  ASSERT_FALSE(slice.status) << Message(slice.status);
  EXPECT_EQ(slice.Get<float>(0), std::vector<float>{2.0f});
  auto pad = CompileText(
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %r = \"stablehlo.pad\"(%a, %z) {edge_padding_low = array<i64: 9223372036854775807>, edge_padding_high = "
      "array<i64: 1>, interior_padding = array<i64: 0>} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>\n"
      "  func.return %r : tensor<2xf32>\n}\n");
  ASSERT_TRUE(pad.status);
  EXPECT_NE(pad.status->message.find("overflows"), std::string::npos) << pad.status->message;
  auto interior = CompileText(
      "func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n"
      "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %r = \"stablehlo.pad\"(%a, %z) {edge_padding_low = array<i64: 0>, edge_padding_high = array<i64: 0>, "
      "interior_padding = array<i64: 4611686018427387904>} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>\n"
      "  func.return %r : tensor<3xf32>\n}\n");
  ASSERT_TRUE(interior.status);
  EXPECT_NE(interior.status->message.find("overflows"), std::string::npos) << interior.status->message;
}

TEST(CheckedShapes, ConvolutionAttributesNearInt64MaxAreRefused) {
  for (const std::string window :
       {"window_strides = array<i64: 1>, padding = dense<[[9223372036854775807, 1]]> : tensor<1x2xi64>",
        "window_strides = array<i64: 1>, lhs_dilation = array<i64: 9223372036854775807>",
        "window_strides = array<i64: 1>, rhs_dilation = array<i64: 9223372036854775807>"}) {
    auto c = CompileText(
        "func.func @main(%a: tensor<1x1x4xf32>, %k: tensor<1x1x2xf32>) -> tensor<1x1x3xf32> {\n"
        "  %r = \"stablehlo.convolution\"(%a, %k) {" +
        window +
        ", dimension_numbers = #stablehlo.conv<[b, f, 0]x[o, i, 0]->[b, f, 0]>, feature_group_count = 1 : i64, "
        "batch_group_count = 1 : i64} : (tensor<1x1x4xf32>, tensor<1x1x2xf32>) -> tensor<1x1x3xf32>\n"
        "  func.return %r : tensor<1x1x3xf32>\n}\n");
    ASSERT_TRUE(c.status) << window;
    EXPECT_NE(c.status->message.find("overflows"), std::string::npos) << c.status->message;
  }
}

// ---- Class 3: return, call and control-flow signatures --------------------------------------------------

// Compile fails with INVALID_ARGUMENT and a message containing `needle`.
void ExpectInvalid(const std::string& text, const std::string& needle) {
  auto c = CompileText(text);
  ASSERT_TRUE(c.status) << text;
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.status->message;
  EXPECT_NE(c.status->message.find(needle), std::string::npos) << c.status->message;
}

TEST(Signatures, EntryMustReturnWhatItDeclares) {
  ExpectInvalid(
      "func.func @main(%a: tensor<4xf32>) -> tensor<1024xi32> {\n"
      "  func.return %a : tensor<4xf32>\n}\n",
      "declares tensor<1024xi32>");
}

TEST(Signatures, CallResultsMustMatchTheCallee) {
  // Declared larger than the callee's result: the caller would read workspace bytes the callee never wrote.
  ExpectInvalid(
      "func.func @main(%a: tensor<4xf32>) -> tensor<1024xf32> {\n"
      "  %r = func.call @f(%a) : (tensor<4xf32>) -> tensor<1024xf32>\n"
      "  func.return %r : tensor<1024xf32>\n}\n"
      "func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  func.return %a : tensor<4xf32>\n}\n",
      "result 0 is declared tensor<1024xf32>");
}

TEST(Signatures, BranchesMustReturnTheOpsTypes) {
  ExpectInvalid(
      "func.func @main(%p: tensor<i1>, %a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {\n"
      "  %r = \"stablehlo.if\"(%p) ({\n"
      "    stablehlo.return %a : tensor<4xf32>\n"
      "  }, {\n"
      "    stablehlo.return %b : tensor<8xf32>\n"
      "  }) : (tensor<i1>) -> tensor<8xf32>\n"
      "  func.return %r : tensor<8xf32>\n}\n",
      "branch 0 returns tensor<4xf32>");
  ExpectInvalid(
      "func.func @main(%i: tensor<i32>, %a: tensor<4xf32>, %b: tensor<8xi32>) -> tensor<4xf32> {\n"
      "  %r = \"stablehlo.case\"(%i) ({\n"
      "    stablehlo.return %a : tensor<4xf32>\n"
      "  }, {\n"
      "    stablehlo.return %b : tensor<8xi32>\n"
      "  }) : (tensor<i32>) -> tensor<4xf32>\n"
      "  func.return %r : tensor<4xf32>\n}\n",
      "branch 1 returns");
}

TEST(Signatures, WhileBodyMustKeepTheLoopTypes) {
  ExpectInvalid(
      "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %r = \"stablehlo.while\"(%a) ({\n"
      "  ^bb0(%x: tensor<4xf32>):\n"
      "    %t = stablehlo.constant dense<false> : tensor<i1>\n"
      "    stablehlo.return %t : tensor<i1>\n"
      "  }, {\n"
      "  ^bb0(%x: tensor<4xf32>):\n"
      "    %w = stablehlo.constant dense<1.0> : tensor<8xf32>\n"
      "    stablehlo.return %w : tensor<8xf32>\n"
      "  }) : (tensor<4xf32>) -> tensor<4xf32>\n"
      "  func.return %r : tensor<4xf32>\n}\n",
      "body result 0");
}

// ---- Class 4: deep call chains ------------------------------------------------------------------------------

std::string CallChain(int n) {
  std::string t =
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %r = func.call @f1(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return %r : tensor<2xf32>\n}\n";
  for (int i = 1; i <= n; ++i) {
    t += "func.func private @f" + std::to_string(i) + "(%a: tensor<2xf32>) -> tensor<2xf32> {\n";
    if (i < n) {
      t += "  %b = stablehlo.add %a, %a : tensor<2xf32>\n";
      t += "  %r = func.call @f" + std::to_string(i + 1) + "(%b) : (tensor<2xf32>) -> tensor<2xf32>\n";
    } else {
      t += "  %r = stablehlo.negate %a : tensor<2xf32>\n";
    }
    t += "  func.return %r : tensor<2xf32>\n}\n";
  }
  return t;
}

TEST(CallDepth, ThousandsOfNestedCallsFailToCompileInsteadOfOverflowingTheStack) {
  auto c = CompileText(CallChain(3000));
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(c.status->message.find("nested deeper than"), std::string::npos) << c.status->message;
}

TEST(CallDepth, ChainsWithinTheLimitCompileAndRun) {
  float x[2] = {1, -2};
  const int64_t dims[1] = {2};
  auto r = RunText(CallChain(kMaxCompileNesting - 8), {{x, ElementType::kF32, dims, 1}});
  ASSERT_FALSE(r.status) << Message(r.status);
  // 2^(n-1) doublings overflow to infinity; the sign survives.
  const auto v = r.Get<float>(0);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_LT(v[0], 0);
  EXPECT_GT(v[1], 0);
}

}  // namespace
}  // namespace neuronmem::interp
