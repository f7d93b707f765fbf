// The interpreter's BLAS and reduction kernels, whole programs run through interp::Program, in one run:
//   dot_general [m, k] x [k, n] through the interpreter  vs  the default BLAS's cblas_sgemm on the same data
//   (64-byte-aligned operands, as the interpreter's slots are; goal: within 1.05x-1.2x);
//   the same and the decode step's attention products with the two alternating in one benchmark (DotAlternating:
//   thread CPU time per run, medians and p99, the ratio; what docs/performance.md records for the goal of 1.05x);
//   reduce programs (sum / max over the last axis and sum over the first of f32[1024x1024], sum over the last
//   axis of bf16[1024x1024], softmax and RMS norm of f32[64x1024]; reduce_window: a 3x3 max pool and a
//   cumulative sum) on the vectorized path (AVX-512, and its baseline build) vs the scalar path (programs
//   compiled with VectorReduce disabled).
// The compiled peer's figure for the sum over the last axis is 0.065 ms (../shared/tools/compiled-peer;
// goal: within 1.5x). docs/performance.md has the recorded figures.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
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

// ---- the decode step's products: interpreter and library alternating -----------------------------------

// A dot_general of the decode step (tools/decode at --batch 64: hidden 64, ffn 128, vocab 256, 4 heads of 16,
// 256 tokens) or a larger product: the operands' and result's dims, the op's dimension attributes, and the same
// product as a caller of the library computes it directly.
struct DotCase {
  std::string name;
  std::vector<int64_t> lhs, rhs, out;
  std::string attrs;
  std::function<void(const float*, const float*, float*)> library;
};

std::string Tensor(const std::vector<int64_t>& dims) {
  std::string s = "tensor<";
  for (int64_t d : dims) s += std::to_string(d) + "x";
  return s + "f32>";
}

int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// 0-5: [m, k] x [k, n] as kDotShapes; 6: attention's scores, q [64, 4, 16] . keys [64, 256, 4, 16] (one row
// per sequence and head against its keys, transposed); 7: attention's output, probabilities [64, 4, 256] .
// values [64, 256, 4, 16]. The library computes 6 and 7 as the interpreter does, one cblas_sgemv per row.
// 11, 12: 6 and 7 at batch 4 (the exact path: 64Ki multiply-adds).
// 8-10: one row, [1, k] x [k, n] (the decode step's projections at batch 1, and the largest product SmallGemv
// takes), against cblas_sgemv.
const std::array<int64_t, 3> kRowShapes[] = {{1, 64, 64}, {1, 64, 256}, {1, 256, 256}};

DotCase MakeDotCase(int which, linalg::detail::SgemmFn sgemm, linalg::detail::SgemvFn sgemv) {
  if (which < 6 || which == 8 || which == 9 || which == 10) {
    const bool row = which >= 8;
    const auto [m, k, n] = row ? kRowShapes[which - 8] : kDotShapes[which];
    return {std::to_string(m) + " x " + std::to_string(k) + " x " + std::to_string(n),
            {m, k},
            {k, n},
            {m, n},
            "contracting_dims = [1] x [0]",
            [=](const float* a, const float* b, float* c) {
              if (row) {
                sgemv(kRowMajor, kTrans, int(k), int(n), 1.0f, b, int(n), a, 1, 0.0f, c, 1);
              } else {
                sgemm(kRowMajor, kNoTrans, kNoTrans, int(m), int(n), int(k), 1.0f, a, int(k), b, int(n), 0.0f, c,
                      int(n));
              }
            }};
  }
  const int B = which >= 11 ? 4 : 64;
  constexpr int NH = 4, D = 16, T = 256;
  // One cblas_sgemv per (sequence, head) on that head's [T, D] block of the keys or values (row stride NH * D):
  // y[T] = K x[D] (scores), or y[D] = V^T x[T] (output).
  const auto per_head = [=](bool trans) -> std::function<void(const float*, const float*, float*)> {
    const int xn = trans ? T : D, yn = trans ? D : T;
    return [=](const float* x, const float* kv, float* y) {
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
          sgemv(kRowMajor, trans ? kTrans : kNoTrans, T, D, 1.0f, kv + (b * T * NH + h) * D, NH * D,
                x + (b * NH + h) * xn, 1, 0.0f, y + (b * NH + h) * yn, 1);
    };
  };
  const bool output = which == 7 || which == 12;
  const std::string b = std::to_string(B);
  return {output ? "attention output [" + b + ",4,256] . [" + b + ",256,4,16]"
                 : "attention scores [" + b + ",4,16] . [" + b + ",256,4,16]",
          {B, NH, output ? T : D},
          {B, T, NH, D},
          {B, NH, output ? D : T},
          std::string("batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [") + (output ? "1]" : "3]"),
          per_head(output)};
}

double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[static_cast<size_t>(q * double(v.size() - 1) + 0.5)];
}

// Each iteration is one round: a batch of R runs of the program (compiled once), then R calls of the library on
// the same data (the order swapped every other round), R chosen for about 40 us per batch. The thread's CPU time
// per run of each batch is one sample (time the thread waits for a core counts for neither: the figures hold on
// a loaded host). Counters: interp_us and library_us (medians), their p99, and ratio = interp_us / library_us.
// The outputs are compared once (the same library calls on the same data: within 1e-5 of each other).
void BM_DotAlternating(benchmark::State& state) {
  const auto backend = linalg::detail::ActiveGemmBackend();
  const auto sgemm = linalg::detail::LibrarySgemmForBenchmark(backend);
  const auto sgemv = linalg::detail::LibrarySgemvForBenchmark(backend);
  if (sgemm == nullptr || sgemv == nullptr) {
    state.SkipWithError("no BLAS installed");
    return;
  }
  const DotCase c = MakeDotCase(static_cast<int>(state.range(0)), sgemm, sgemv);
  const std::string text = "func.func @main(%a: " + Tensor(c.lhs) + ", %b: " + Tensor(c.rhs) + ") -> " + Tensor(c.out) +
                           " {\n  %r = stablehlo.dot_general %a, %b, " + c.attrs + " : (" + Tensor(c.lhs) + ", " +
                           Tensor(c.rhs) + ") -> " + Tensor(c.out) + "\n  func.return %r : " + Tensor(c.out) + "\n}\n";
  std::vector<stablehlo::Module> mods;
  auto p = CompileOrNull(text, &mods);
  if (!p) {
    state.SkipWithError("compile failed");
    return;
  }
  bench::AlignedFloats a(Elements(c.lhs), 1), b(Elements(c.rhs), 2), out(Elements(c.out), 3), ref(Elements(c.out), 4);
  const interp::TensorView args[2] = {{a.data(), ElementType::kF32, c.lhs.data(), c.lhs.size()},
                                      {b.data(), ElementType::kF32, c.rhs.data(), c.rhs.size()}};
  FixedResults alloc({out.data()});
  interp::Workspace ws;
  std::vector<interp::TensorView> results;
  const auto run = [&] { return p->Run(args, 2, &alloc, &results, &ws); };
  if (run()) {
    state.SkipWithError("run failed");
    return;
  }
  c.library(a.data(), b.data(), ref.data());
  for (int64_t i = 0; i < Elements(c.out); ++i) {
    if (std::fabs(out.data()[i] - ref.data()[i]) > 1e-5f * (1.0f + std::fabs(ref.data()[i]))) {
      state.SkipWithError("the interpreter's result differs from the library's");
      return;
    }
  }
  double t0 = ThreadSeconds();
  for (int i = 0; i < 3; ++i) c.library(a.data(), b.data(), ref.data());
  const double once = (ThreadSeconds() - t0) / 3;
  const int reps = std::max(1, static_cast<int>(40e-6 / std::max(once, 1e-9)));
  std::vector<double> interp_us, library_us;
  bool odd = false;
  for (auto _ : state) {
    for (int pass = 0; pass < 2; ++pass) {
      const bool interp = (pass == 0) != odd;
      t0 = ThreadSeconds();
      for (int r = 0; r < reps; ++r) {
        if (interp) {
          if (run()) state.SkipWithError("run failed");
        } else {
          c.library(a.data(), b.data(), ref.data());
        }
      }
      (interp ? interp_us : library_us).push_back((ThreadSeconds() - t0) * 1e6 / reps);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(ref.data());
    odd = !odd;
  }
  const double im = Quantile(interp_us, 0.5), lm = Quantile(library_us, 0.5);
  state.counters["interp_us"] = im;
  state.counters["library_us"] = lm;
  state.counters["interp_p99"] = Quantile(interp_us, 0.99);
  state.counters["library_p99"] = Quantile(library_us, 0.99);
  state.counters["ratio"] = lm > 0 ? im / lm : 0.0;
  state.SetLabel(c.name);
}
BENCHMARK(BM_DotAlternating)->DenseRange(0, 12)->Iterations(400)->Unit(benchmark::kMicrosecond);

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
