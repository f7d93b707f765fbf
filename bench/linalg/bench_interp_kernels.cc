// The interpreter's BLAS and reduction kernels, whole programs run through interp::Program, in one run:
//   dot_general [m, k] x [k, n] through the interpreter  vs  the default BLAS's cblas_sgemm on the same data
//   (64-byte-aligned operands, as the interpreter's slots are; goal: within 1.05x-1.2x);
//   reduce programs (sum / max over the last axis and sum over the first of f32[1024x1024], sum over the last
//   axis of bf16[1024x1024], softmax and RMS norm of f32[64x1024]; reduce_window: a 3x3 max pool and a
//   cumulative sum) on the vectorized path (AVX-512, and its baseline build) vs the scalar path (programs
//   compiled with VectorReduce disabled).
// The compiled peer's figure for the sum over the last axis is 0.065 ms (../shared/tools/compiled-peer;
// goal: within 1.5x). docs/performance.md has the recorded figures.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "interp_programs.h"
#include "interpreter/interpreter.h"
#include "interpreter/reduce_vector.h"
#include "linalg/gemm.h"
#include "random_floats.h"
#include "stablehlo/parser.h"

namespace {

using namespace neuronmem;

using bench::CompileOrNull;
using bench::FixedResults;

// The slowest repetition (with --benchmark_repetitions=N: the p(1 - 1/N) bound docs/performance.md quotes).
double Slowest(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

std::string F32(int64_t a, int64_t b) { return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "xf32>"; }

// ---- dot_general through the interpreter vs the library --------------------------------------------

const std::array<int64_t, 3> kDotShapes[] = {{256, 256, 256}, {64, 1024, 1024}, {64, 64, 64},
                                             {64, 64, 128},   {64, 128, 64},    {64, 64, 256}};

void DotShapes(benchmark::internal::Benchmark* b) {
  for (const auto& s : kDotShapes) b->Args({s[0], s[1], s[2]});
}

void BM_InterpDotGeneral(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const std::string text = "func.func @main(%a: " + F32(m, k) + ", %b: " + F32(k, n) + ") -> " + F32(m, n) +
                           " {\n  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (" + F32(m, k) +
                           ", " + F32(k, n) + ") -> " + F32(m, n) + "\n  func.return %r : " + F32(m, n) + "\n}\n";
  std::vector<stablehlo::Module> mods;
  auto p = CompileOrNull(text, &mods);
  if (!p) {
    state.SkipWithError("compile failed");
    return;
  }
  bench::AlignedFloats a(m * k, 1), b(k * n, 2), out(m * n, 3);
  const int64_t ad[2] = {m, k}, bd[2] = {k, n};
  const interp::TensorView args[2] = {{a.data(), ElementType::kF32, ad, 2}, {b.data(), ElementType::kF32, bd, 2}};
  FixedResults alloc({out.data()});
  interp::Workspace ws;
  std::vector<interp::TensorView> results;
  for (auto _ : state) {
    if (p->Run(args, 2, &alloc, &results, &ws)) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(linalg::detail::ActiveGemmBackend() == linalg::detail::GemmBackend::kBlis ? "BLIS" : "not BLIS");
}
BENCHMARK(BM_InterpDotGeneral)
    ->Apply(DotShapes)
    ->ComputeStatistics("max", Slowest)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The default backend's own cblas_sgemm on the same shapes.
void BM_DefaultBlasDirect(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)),
            n = static_cast<int>(state.range(2));
  const auto sgemm = linalg::detail::LibrarySgemmForBenchmark(linalg::detail::ActiveGemmBackend());
  if (sgemm == nullptr) {
    state.SkipWithError("no BLAS installed");
    return;
  }
  bench::AlignedFloats a(size_t(m) * k, 1), b(size_t(k) * n, 2), c(size_t(m) * n, 3);
  for (auto _ : state) {
    sgemm(101, 111, 111, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
}
BENCHMARK(BM_DefaultBlasDirect)
    ->Apply(DotShapes)
    ->ComputeStatistics("max", Slowest)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// ---- reductions ----------------------------------------------------------------------------------

struct ReduceProgram {
  const char* name;
  int64_t rows, cols;
  const char* type;  // element type of the input
  std::string text;
};

std::string ReduceOp(const std::string& in, const std::string& init, const std::string& dims,
                     const std::string& in_type, const std::string& out_type, const char* op, const char* et) {
  return "stablehlo.reduce(" + in + " init: " + init + ") applies " + op + " across dimensions = [" + dims + "] : (" +
         in_type + ", tensor<" + et + ">) -> " + out_type;
}

// One reduce of f32[1024x1024] over `dim` by `op` from `init` (a literal).
ReduceProgram OneReduce(const char* name, const char* dim, const char* op, const char* init) {
  const std::string x = F32(1024, 1024);
  return {name, 1024, 1024, "f32",
          "func.func @main(%x: " + x + ") -> tensor<1024xf32> {\n  %z = stablehlo.constant dense<" + init +
              "> : tensor<f32>\n  %r = " + ReduceOp("%x", "%z", dim, x, "tensor<1024xf32>", op, "f32") +
              "\n  func.return %r : tensor<1024xf32>\n}\n"};
}

// One reduce_window of f32[rows x cols] (the generic form).
ReduceProgram Window(const char* name, int64_t rows, int64_t cols, const char* window, const char* strides,
                     const char* padding, const std::string& out_type, const char* op, const char* init) {
  const std::string x = F32(rows, cols);
  return {name, rows, cols, "f32",
          "func.func @main(%x: " + x + ") -> " + out_type + " {\n  %z = stablehlo.constant dense<" + init +
              "> : tensor<f32>\n  %r = \"stablehlo.reduce_window\"(%x, %z) <{padding = dense<" + padding +
              "> : tensor<2x2xi64>, window_dimensions = array<i64: " + window + ">, window_strides = array<i64: " +
              strides + ">}> ({\n  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n    %s = " + op +
              " %a, %b : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n  }) : (" + x + ", tensor<f32>) -> " +
              out_type + "\n  func.return %r : " + out_type + "\n}\n"};
}

ReduceProgram MakeReduce(int which) {
  switch (which) {
    case 0: return OneReduce("sum over the last axis f32[1024x1024]", "1", "stablehlo.add", "0.0");
    case 1: return OneReduce("sum over the first axis f32[1024x1024]", "0", "stablehlo.add", "0.0");
    case 2: return OneReduce("max over the last axis f32[1024x1024]", "1", "stablehlo.maximum", "0xFF800000");
    case 3: {
      const std::string b = "tensor<1024x1024xbf16>";
      return {"sum over the last axis bf16[1024x1024]", 1024, 1024, "bf16",
              "func.func @main(%x: " + b +
                  ") -> tensor<1024xbf16> {\n  %z = stablehlo.constant dense<0.0> : "
                  "tensor<bf16>\n  %r = " +
                  ReduceOp("%x", "%z", "1", b, "tensor<1024xbf16>", "stablehlo.add", "bf16") +
                  "\n  func.return %r : tensor<1024xbf16>\n}\n"};
    }
    case 4: {
      const std::string t = F32(64, 1024);
      return {"softmax f32[64x1024]", 64, 1024, "f32",
              "func.func @main(%x: " + t + ") -> " + t +
                  " {\n  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
                  "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n  %m = " +
                  ReduceOp("%x", "%ninf", "1", t, "tensor<64xf32>", "stablehlo.maximum", "f32") +
                  "\n  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<64xf32>) -> " + t +
                  "\n  %d = stablehlo.subtract %x, %mb : " + t + "\n  %e = stablehlo.exponential %d : " + t +
                  "\n  %s = " + ReduceOp("%e", "%z", "1", t, "tensor<64xf32>", "stablehlo.add", "f32") +
                  "\n  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<64xf32>) -> " + t +
                  "\n  %r = stablehlo.divide %e, %sb : " + t + "\n  func.return %r : " + t + "\n}\n"};
    }
    case 6:
      return Window("max pool 3x3 stride 2 (reduce_window) f32[256x1024]", 256, 1024, "3, 3", "2, 2",
                    "[[1, 1], [1, 1]]", F32(128, 512), "stablehlo.maximum", "0xFF800000");
    case 7:
      return Window("cumulative sum over the first axis (reduce_window) f32[128x1024]", 128, 1024, "128, 1", "1, 1",
                    "[[127, 0], [0, 0]]", F32(128, 1024), "stablehlo.add", "0.0");
    default: {
      const std::string t = F32(64, 1024);
      return {"RMS norm f32[64x1024]", 64, 1024, "f32",
              "func.func @main(%x: " + t + ") -> " + t +
                  " {\n  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
                  "  %n = stablehlo.constant dense<1024.0> : tensor<64xf32>\n"
                  "  %sq = stablehlo.multiply %x, %x : " +
                  t + "\n  %s = " + ReduceOp("%sq", "%z", "1", t, "tensor<64xf32>", "stablehlo.add", "f32") +
                  "\n  %mean = stablehlo.divide %s, %n : tensor<64xf32>\n"
                  "  %rs = stablehlo.rsqrt %mean : tensor<64xf32>\n"
                  "  %rb = stablehlo.broadcast_in_dim %rs, dims = [0] : (tensor<64xf32>) -> " +
                  t + "\n  %r = stablehlo.multiply %x, %rb : " + t + "\n  func.return %r : " + t + "\n}\n"};
    }
  }
}

// Arg 0: the program (MakeReduce); Arg 1: 0 vectorized (AVX-512 where the CPU has it), 1 vectorized, baseline
// build, 2 the scalar path.
void BM_InterpReduce(benchmark::State& state) {
  const ReduceProgram rp = MakeReduce(static_cast<int>(state.range(0)));
  const int mode = static_cast<int>(state.range(1));
  interp::VectorReduce::SetEnabled(mode != 2);
  std::vector<stablehlo::Module> mods;
  auto p = CompileOrNull(rp.text, &mods);
  interp::VectorReduce::SetEnabled(true);
  if (!p) {
    state.SkipWithError("compile failed");
    return;
  }
  const size_t es = std::string(rp.type) == "f32" ? 4 : 2;
  std::vector<float> xf = bench::RandomFloats(rp.rows * rp.cols, 3);
  std::vector<uint16_t> xh(xf.size());
  for (size_t i = 0; i < xf.size(); ++i) {  // bf16: the float's top half
    uint32_t u;
    std::memcpy(&u, &xf[i], 4);
    xh[i] = static_cast<uint16_t>(u >> 16);
  }
  void* x = es == 4 ? static_cast<void*>(xf.data()) : static_cast<void*>(xh.data());
  std::vector<char> out(static_cast<size_t>(rp.rows * rp.cols) * es);
  const int64_t dims[2] = {rp.rows, rp.cols};
  const interp::TensorView args[1] = {{x, es == 4 ? ElementType::kF32 : ElementType::kBF16, dims, 2}};
  FixedResults alloc({out.data()});
  interp::Workspace ws;
  std::vector<interp::TensorView> results;
  interp::VectorReduce::ForceBaseline(mode == 1);
  for (auto _ : state) {
    if (p->Run(args, 1, &alloc, &results, &ws)) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(out.data());
  }
  interp::VectorReduce::ForceBaseline(false);
  state.SetLabel(std::string(rp.name) + (mode == 0   ? ", vectorized"
                                         : mode == 1 ? ", vectorized baseline"
                                                     : ", scalar"));
}
BENCHMARK(BM_InterpReduce)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2}})
    ->ComputeStatistics("max", Slowest)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
