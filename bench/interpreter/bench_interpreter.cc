// Interpreter benchmarks: dispatch cost (a chain of 1,000 small adds (tensor<4xf32>) against the same adds in a
// plain C++ loop: per-op dispatch = (interpreter - loop) / 1000); dot_general f32 256 and 1024 through the
// interpreter against linalg::DotGeneral called directly; one decode step of an MLP block end to end; the
// compile time of bench/parse's generated 10k-op module.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "generated_module.h"
#include "interpreter/interpreter.h"
#include "linalg/dot_general.h"
#include "random_floats.h"
#include "stablehlo/parser.h"

namespace {

using namespace neuronmem;

constexpr int kOps = 1000;

std::string ChainText() {
  std::string t =
      "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %v0 = stablehlo.add %x, %x : tensor<4xf32>\n";
  for (int i = 1; i < kOps; ++i)
    t += "  %v" + std::to_string(i) + " = stablehlo.add %v" + std::to_string(i - 1) + ", %x : tensor<4xf32>\n";
  t += "  func.return %v" + std::to_string(kOps - 1) + " : tensor<4xf32>\n}\n";
  return t;
}

void BM_InterpreterAddChain(benchmark::State& state) {
  const std::string text = ChainText();
  std::vector<stablehlo::Module> mods;
  if (stablehlo::ParseModules(text, "chain.mlir", &mods)) {
    state.SkipWithError("parse failed");
    return;
  }
  interp::CompileOptions o;
  o.source = text;
  std::unique_ptr<interp::Program> p;
  if (interp::Compile(mods[0], o, &p)) {
    state.SkipWithError("compile failed");
    return;
  }
  float x[4] = {1, 2, 3, 4};
  const int64_t dims[1] = {4};
  interp::TensorView arg{x, ElementType::kF32, dims, 1};
  interp::Workspace ws;
  float out[4];
  class Fixed : public interp::ResultAllocator {
   public:
    explicit Fixed(float* p) : p_(p) {}
    void* Allocate(size_t, size_t) override { return p_; }
    float* p_;
  } alloc(out);
  std::vector<interp::TensorView> results;
  results.reserve(1);
  for (auto _ : state) {
    neuronmem::Status s = p->Run(&arg, 1, &alloc, &results, &ws);
    benchmark::DoNotOptimize(out);
    if (s) state.SkipWithError("run failed");
  }
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(kOps), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["workspace_bytes"] = static_cast<double>(p->workspace_bytes());
}
BENCHMARK(BM_InterpreterAddChain);

void BM_PlainLoopAddChain(benchmark::State& state) {
  float x[4] = {1, 2, 3, 4};
  std::vector<float> bufs(2 * 4);
  for (auto _ : state) {
    float* a = bufs.data();
    float* b = bufs.data() + 4;
    for (int j = 0; j < 4; ++j) a[j] = x[j] + x[j];
    for (int i = 1; i < kOps; ++i) {
      for (int j = 0; j < 4; ++j) b[j] = a[j] + x[j];
      benchmark::DoNotOptimize(b);
      std::swap(a, b);
    }
    benchmark::DoNotOptimize(a);
  }
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(kOps), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PlainLoopAddChain);

// ---- dot_general through the interpreter against linalg::DotGeneral called directly ----------------

std::unique_ptr<interp::Program> CompileOrNull(const std::string& text, std::vector<stablehlo::Module>* mods) {
  if (stablehlo::ParseModules(text, "bench.mlir", mods)) return nullptr;
  interp::CompileOptions o;
  o.source = text;
  std::unique_ptr<interp::Program> p;
  if (interp::Compile((*mods)[0], o, &p)) return nullptr;
  return p;
}

// Results into caller-owned buffers, one per result index.
class FixedResults : public interp::ResultAllocator {
 public:
  explicit FixedResults(std::vector<void*> bufs) : bufs_(std::move(bufs)) {}
  void* Allocate(size_t index, size_t) override { return index < bufs_.size() ? bufs_[index] : nullptr; }

 private:
  std::vector<void*> bufs_;
};

void BM_InterpreterDotGeneral(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::string t = "tensor<" + std::to_string(n) + "x" + std::to_string(n) + "xf32>";
  const std::string text = "func.func @main(%a: " + t + ", %b: " + t + ") -> " + t +
                           " {\n  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (" + t + ", " + t +
                           ") -> " + t + "\n  func.return %r : " + t + "\n}\n";
  std::vector<stablehlo::Module> mods;
  auto p = CompileOrNull(text, &mods);
  if (!p) {
    state.SkipWithError("compile failed");
    return;
  }
  const std::vector<float> a = bench::RandomFloats(n * n, 1), b = bench::RandomFloats(n * n, 2);
  std::vector<float> out(n * n);
  const int64_t dims[2] = {n, n};
  const interp::TensorView args[2] = {{const_cast<float*>(a.data()), ElementType::kF32, dims, 2},
                                      {const_cast<float*>(b.data()), ElementType::kF32, dims, 2}};
  FixedResults alloc({out.data()});
  interp::Workspace ws;
  std::vector<interp::TensorView> results;
  for (auto _ : state) {
    if (p->Run(args, 2, &alloc, &results, &ws)) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_InterpreterDotGeneral)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LinalgDotGeneralDirect(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<float> a = bench::RandomFloats(n * n, 1), b = bench::RandomFloats(n * n, 2);
  std::vector<float> out(n * n);
  const std::vector<int64_t> dims = {n, n};
  const linalg::DotDimensionNumbers dn{{}, {}, {1}, {0}};
  for (auto _ : state) {
    if (linalg::DotGeneral({ElementType::kF32, a.data(), dims}, {ElementType::kF32, b.data(), dims}, dn,
                           {ElementType::kF32, out.data(), dims}))
      state.SkipWithError("dot_general failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_LinalgDotGeneralDirect)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- One decode step of a transformer MLP block, end to end ------------------------------------------
// RMSNorm (reduce of squares, rsqrt, scale), gate and up projections (1024 -> 2816), SiLU gate, down projection
// (2816 -> 1024), residual add; 8 tokens, f32, 35 MB of weights.

constexpr int64_t kTokens = 8, kModel = 1024, kHidden = 2816;

std::string MlpText() {
  const std::string x = "tensor<8x1024xf32>", h = "tensor<8x2816xf32>";
  return "func.func @main(%x: " + x +
         ", %g: tensor<1024xf32>, %w1: tensor<1024x2816xf32>, "
         "%w3: tensor<1024x2816xf32>, %w2: tensor<2816x1024xf32>) -> " +
         x +
         " {\n"
         "  %sq = stablehlo.multiply %x, %x : " +
         x +
         "\n"
         "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
         "  %ss = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [1] : (" +
         x +
         ", tensor<f32>) -> tensor<8xf32>\n"
         "  %n = stablehlo.constant dense<1024.0> : tensor<8xf32>\n"
         "  %eps = stablehlo.constant dense<1.0e-6> : tensor<8xf32>\n"
         "  %ms = stablehlo.divide %ss, %n : tensor<8xf32>\n"
         "  %mse = stablehlo.add %ms, %eps : tensor<8xf32>\n"
         "  %rs = stablehlo.rsqrt %mse : tensor<8xf32>\n"
         "  %rsb = stablehlo.broadcast_in_dim %rs, dims = [0] : (tensor<8xf32>) -> " +
         x +
         "\n"
         "  %gb = stablehlo.broadcast_in_dim %g, dims = [1] : (tensor<1024xf32>) -> " +
         x +
         "\n"
         "  %xn0 = stablehlo.multiply %x, %rsb : " +
         x +
         "\n"
         "  %xn = stablehlo.multiply %xn0, %gb : " +
         x +
         "\n"
         "  %a = stablehlo.dot_general %xn, %w1, contracting_dims = [1] x [0] : (" +
         x + ", tensor<1024x2816xf32>) -> " + h +
         "\n"
         "  %b = stablehlo.dot_general %xn, %w3, contracting_dims = [1] x [0] : (" +
         x + ", tensor<1024x2816xf32>) -> " + h +
         "\n"
         "  %s = stablehlo.logistic %a : " +
         h +
         "\n"
         "  %silu = stablehlo.multiply %a, %s : " +
         h +
         "\n"
         "  %gated = stablehlo.multiply %silu, %b : " +
         h +
         "\n"
         "  %d = stablehlo.dot_general %gated, %w2, contracting_dims = [1] x [0] : (" +
         h + ", tensor<2816x1024xf32>) -> " + x +
         "\n"
         "  %r = stablehlo.add %x, %d : " +
         x +
         "\n"
         "  func.return %r : " +
         x + "\n}\n";
}

void BM_InterpreterMlpBlockDecode(benchmark::State& state) {
  const std::string text = MlpText();
  std::vector<stablehlo::Module> mods;
  auto p = CompileOrNull(text, &mods);
  if (!p) {
    state.SkipWithError("compile failed");
    return;
  }
  const std::vector<float> x = bench::RandomFloats(kTokens * kModel, 1), g = bench::RandomFloats(kModel, 2),
                           w1 = bench::RandomFloats(kModel * kHidden, 3), w3 = bench::RandomFloats(kModel * kHidden, 4),
                           w2 = bench::RandomFloats(kHidden * kModel, 5);
  const int64_t xd[2] = {kTokens, kModel}, gd[1] = {kModel}, w1d[2] = {kModel, kHidden}, w2d[2] = {kHidden, kModel};
  const interp::TensorView args[5] = {{const_cast<float*>(x.data()), ElementType::kF32, xd, 2},
                                      {const_cast<float*>(g.data()), ElementType::kF32, gd, 1},
                                      {const_cast<float*>(w1.data()), ElementType::kF32, w1d, 2},
                                      {const_cast<float*>(w3.data()), ElementType::kF32, w1d, 2},
                                      {const_cast<float*>(w2.data()), ElementType::kF32, w2d, 2}};
  std::vector<float> out(kTokens * kModel);
  FixedResults alloc({out.data()});
  interp::Workspace ws;
  std::vector<interp::TensorView> results;
  for (auto _ : state) {
    if (p->Run(args, 5, &alloc, &results, &ws)) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * kTokens * kModel * kHidden * 3, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["workspace_bytes"] = static_cast<double>(p->workspace_bytes());
}
BENCHMARK(BM_InterpreterMlpBlockDecode)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- Compile time of bench/parse's generated 10k-op module (1.87 MB) -------------------------------

void BM_CompileGenerated10kOps(benchmark::State& state) {
  const std::string text = bench::GenerateDecodeModule(10000);
  std::vector<stablehlo::Module> mods;
  if (stablehlo::ParseModules(text, "gen.mlir", &mods)) {
    state.SkipWithError("parse failed");
    return;
  }
  interp::CompileOptions o;
  o.source = text;
  size_t kernels = 0;
  for (auto _ : state) {
    std::unique_ptr<interp::Program> p;
    if (neuronmem::Status s = interp::Compile(mods[0], o, &p)) {
      state.SkipWithError(s->message.c_str());
      break;
    }
    kernels = p->num_kernels();
  }
  state.counters["kernels"] = static_cast<double>(kernels);
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_CompileGenerated10kOps)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
