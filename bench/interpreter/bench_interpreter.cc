// Interpreter benchmarks: dispatch cost (a chain of 1,000 small adds (tensor<4xf32>) against the same adds in a
// plain C++ loop: per-op dispatch = (interpreter - loop) / 1000); one decode step of two MLP blocks end to end (the
// GELU + LayerNorm block also hand-written on the same library, in the same run); whether running independent
// ops in parallel on oneTBB would pay (the MLP's independent projections and element-wise ops, sequential
// against a task_group in a 2-thread task_arena); the cost per result of a run with many results; the compile
// time of bench/parse's generated 10k-op module.
#include <benchmark/benchmark.h>

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "generated_module.h"
#include "interp_programs.h"
#include "interpreter/interpreter.h"
#include "linalg/dot_general.h"
#include "linalg/gemm.h"
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

// (dot_general through the interpreter against the BLAS called directly: bench/linalg/bench_interp_kernels.cc.)

using bench::CompileOrNull;
using bench::FixedResults;

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

// ---- A GELU + LayerNorm MLP block, interpreter against the same computation hand-written ------------
// y = LayerNorm(x + gelu(x . w1) . w2) over the model dim, gelu the tanh form; x [8, 1024], w1 [1024, 4096],
// w2 [4096, 1024], f32 (32 MB of weights). The hand-written version calls linalg::DotGeneral (the library the
// interpreter's dot_general uses) and plain loops for the rest, in the interpreter's operation order.

constexpr int64_t kFf = 4096;

std::string GeluLnText() {
  const std::string x = "tensor<8x1024xf32>", h = "tensor<8x4096xf32>", r = "tensor<8xf32>";
  const auto c = [](const char* name, const char* v, const std::string& t) {
    return std::string("  %") + name + " = stablehlo.constant dense<" + v + "> : " + t + "\n";
  };
  std::string t = "func.func @main(%x: " + x + ", %w1: tensor<1024x4096xf32>, %w2: tensor<4096x1024xf32>, %gamma: " +
                  "tensor<1024xf32>, %beta: tensor<1024xf32>) -> " + x + " {\n";
  t += "  %h = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (" + x + ", tensor<1024x4096xf32>) -> " +
       h + "\n";
  // gelu(h) = 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))
  t += c("k0", "0.797884583", h) + c("k1", "0.044715", h) + c("half", "0.5", h) + c("one", "1.0", h);
  t += "  %h2 = stablehlo.multiply %h, %h : " + h + "\n  %h3 = stablehlo.multiply %h2, %h : " + h +
       "\n  %c3 = stablehlo.multiply %k1, %h3 : " + h + "\n  %in = stablehlo.add %h, %c3 : " + h +
       "\n  %sc = stablehlo.multiply %k0, %in : " + h + "\n  %th = stablehlo.tanh %sc : " + h +
       "\n  %op = stablehlo.add %one, %th : " + h + "\n  %hh = stablehlo.multiply %half, %h : " + h +
       "\n  %g = stablehlo.multiply %hh, %op : " + h + "\n";
  t += "  %d = stablehlo.dot_general %g, %w2, contracting_dims = [1] x [0] : (" + h + ", tensor<4096x1024xf32>) -> " +
       x + "\n  %y = stablehlo.add %x, %d : " + x + "\n";
  // LayerNorm over dim 1: mean, centred, variance, scale and shift.
  t += "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n" + c("n", "1024.0", r) + c("eps", "1.0e-5", r);
  t += "  %s = stablehlo.reduce(%y init: %z) applies stablehlo.add across dimensions = [1] : (" + x +
       ", tensor<f32>) -> " + r + "\n  %mean = stablehlo.divide %s, %n : " + r +
       "\n  %mb = stablehlo.broadcast_in_dim %mean, dims = [0] : (" + r + ") -> " + x +
       "\n  %cen = stablehlo.subtract %y, %mb : " + x + "\n  %sq = stablehlo.multiply %cen, %cen : " + x +
       "\n  %vs = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [1] : (" + x +
       ", tensor<f32>) -> " + r + "\n  %var = stablehlo.divide %vs, %n : " + r +
       "\n  %ve = stablehlo.add %var, %eps : " + r + "\n  %rs = stablehlo.rsqrt %ve : " + r +
       "\n  %rb = stablehlo.broadcast_in_dim %rs, dims = [0] : (" + r + ") -> " + x +
       "\n  %nrm = stablehlo.multiply %cen, %rb : " + x +
       "\n  %gb = stablehlo.broadcast_in_dim %gamma, dims = [1] : (tensor<1024xf32>) -> " + x +
       "\n  %bb = stablehlo.broadcast_in_dim %beta, dims = [1] : (tensor<1024xf32>) -> " + x +
       "\n  %sc2 = stablehlo.multiply %nrm, %gb : " + x + "\n  %out = stablehlo.add %sc2, %bb : " + x +
       "\n  func.return %out : " + x + "\n}\n";
  return t;
}

struct GeluLnData {
  std::vector<float> x = bench::RandomFloats(kTokens * kModel, 11), w1 = bench::RandomFloats(kModel * kFf, 12),
                     w2 = bench::RandomFloats(kFf * kModel, 13), gamma = bench::RandomFloats(kModel, 14),
                     beta = bench::RandomFloats(kModel, 15);
};

// The block hand-written: two linalg::DotGeneral calls and loops, in the interpreter's order of operations.
class HandWrittenGeluLn {
 public:
  HandWrittenGeluLn() : h_(kTokens * kFf), d_(kTokens * kModel) {}
  bool Run(const GeluLnData& in, float* out) {
    const std::vector<int64_t> xd = {kTokens, kModel}, w1d = {kModel, kFf}, hd = {kTokens, kFf}, w2d = {kFf, kModel};
    const linalg::DotDimensionNumbers dn{{}, {}, {1}, {0}};
    if (linalg::DotGeneral({ElementType::kF32, in.x.data(), xd}, {ElementType::kF32, in.w1.data(), w1d}, dn,
                           {ElementType::kF32, h_.data(), hd}))
      return false;
    for (float& v : h_) {
      const float c3 = 0.044715f * (v * v * v);
      const float th = std::tanh(0.797884583f * (v + c3));
      v = (0.5f * v) * (1.0f + th);
    }
    if (linalg::DotGeneral({ElementType::kF32, h_.data(), hd}, {ElementType::kF32, in.w2.data(), w2d}, dn,
                           {ElementType::kF32, d_.data(), xd}))
      return false;
    for (int64_t t = 0; t < kTokens; ++t) {
      float* y = d_.data() + t * kModel;
      const float* x = in.x.data() + t * kModel;
      float s = 0;
      for (int64_t i = 0; i < kModel; ++i) {
        y[i] = x[i] + y[i];
        s += y[i];
      }
      const float mean = s / 1024.0f;
      float vs = 0;
      for (int64_t i = 0; i < kModel; ++i) vs += (y[i] - mean) * (y[i] - mean);
      const float rs = static_cast<float>(1.0 / std::sqrt(static_cast<double>(vs / 1024.0f + 1.0e-5f)));
      for (int64_t i = 0; i < kModel; ++i) out[t * kModel + i] = (y[i] - mean) * rs * in.gamma[i] + in.beta[i];
    }
    return true;
  }

 private:
  std::vector<float> h_, d_;
};

void BM_InterpreterMlpGeluLayerNorm(benchmark::State& state) {
  const std::string text = GeluLnText();
  std::vector<stablehlo::Module> mods;
  auto p = CompileOrNull(text, &mods);
  if (!p) {
    state.SkipWithError("compile failed");
    return;
  }
  const GeluLnData in;
  const int64_t xd[2] = {kTokens, kModel}, w1d[2] = {kModel, kFf}, w2d[2] = {kFf, kModel}, gd[1] = {kModel};
  const interp::TensorView args[5] = {{const_cast<float*>(in.x.data()), ElementType::kF32, xd, 2},
                                      {const_cast<float*>(in.w1.data()), ElementType::kF32, w1d, 2},
                                      {const_cast<float*>(in.w2.data()), ElementType::kF32, w2d, 2},
                                      {const_cast<float*>(in.gamma.data()), ElementType::kF32, gd, 1},
                                      {const_cast<float*>(in.beta.data()), ElementType::kF32, gd, 1}};
  std::vector<float> out(kTokens * kModel), ref(kTokens * kModel);
  FixedResults alloc({out.data()});
  interp::Workspace ws;
  std::vector<interp::TensorView> results;
  // Both compute the same block: check once that they agree (the sums may differ in the last bits).
  HandWrittenGeluLn hand;
  if (p->Run(args, 5, &alloc, &results, &ws) || !hand.Run(in, ref.data())) {
    state.SkipWithError("run failed");
    return;
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (!(std::fabs(out[i] - ref[i]) <= 1e-3f * (1.0f + std::fabs(ref[i])))) {
      state.SkipWithError("the interpreter and the hand-written block disagree");
      return;
    }
  for (auto _ : state) {
    if (p->Run(args, 5, &alloc, &results, &ws)) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["kernels"] = static_cast<double>(p->num_kernels());
  state.counters["workspace_bytes"] = static_cast<double>(p->workspace_bytes());
}
BENCHMARK(BM_InterpreterMlpGeluLayerNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_HandWrittenMlpGeluLayerNorm(benchmark::State& state) {
  const GeluLnData in;
  std::vector<float> out(kTokens * kModel);
  HandWrittenGeluLn hand;
  for (auto _ : state) {
    if (!hand.Run(in, out.data())) state.SkipWithError("dot_general failed");
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_HandWrittenMlpGeluLayerNorm)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- Would running independent ops in parallel on oneTBB pay? ---------------------------------------
// The upper bound of what an interpreter scheduler could gain on a decode MLP: its two independent ops run one
// after the other, or as two tasks of a task_group in a 2-thread task_arena (the scheduler's best case: no
// dependency tracking counted). Arg 0: the gate and up projections [8, 1024] x [1024, 2816] through
// linalg::DotGeneral on the default BLAS (range(1) = 0) or on Eigen (1: ForceEigenGemm); Arg 0 = 1: two independent
// element-wise ops on [8, 2816] (logistic of one product, square of the other), the MLP's next step.

struct IndependentPair {
  std::vector<float> x = bench::RandomFloats(kTokens * kModel, 21), w1 = bench::RandomFloats(kModel * kHidden, 22),
                     w3 = bench::RandomFloats(kModel * kHidden, 23);
  std::vector<float> a = std::vector<float>(kTokens * kHidden), b = std::vector<float>(kTokens * kHidden);
  std::vector<float> ea = std::vector<float>(kTokens * kHidden), eb = std::vector<float>(kTokens * kHidden);

  bool Dot(const std::vector<float>& w, std::vector<float>* out) const {
    const std::vector<int64_t> xd = {kTokens, kModel}, wd = {kModel, kHidden}, od = {kTokens, kHidden};
    return !linalg::DotGeneral({ElementType::kF32, x.data(), xd}, {ElementType::kF32, w.data(), wd},
                               linalg::DotDimensionNumbers{{}, {}, {1}, {0}}, {ElementType::kF32, out->data(), od});
  }
  static void Logistic(const std::vector<float>& in, std::vector<float>* out) {
    for (size_t i = 0; i < in.size(); ++i) (*out)[i] = 1.0f / (1.0f + std::exp(-in[i]));
  }
  static void Square(const std::vector<float>& in, std::vector<float>* out) {
    for (size_t i = 0; i < in.size(); ++i) (*out)[i] = in[i] * in[i];
  }
  // Runs the pair: the two products (kind 0) or the two element-wise ops (kind 1).
  bool First(int kind) {
    if (kind == 0) return Dot(w1, &a);
    Logistic(a, &ea);
    return true;
  }
  bool Second(int kind) {
    if (kind == 0) return Dot(w3, &b);
    Square(b, &eb);
    return true;
  }
};

void SetGemmBackend(benchmark::State& state) {
  linalg::detail::ForceEigenGemm(state.range(1) == 1);
  state.SetLabel(state.range(0) == 1   ? "element-wise"
                 : state.range(1) == 1 ? "dot on Eigen"
                                       : "dot on the default BLAS");
}

void BM_IndependentOpsSequential(benchmark::State& state) {
  SetGemmBackend(state);
  IndependentPair p;
  const int kind = static_cast<int>(state.range(0));
  for (auto _ : state) {
    if (!p.First(kind) || !p.Second(kind)) state.SkipWithError("dot_general failed");
    benchmark::DoNotOptimize(p.a.data());
    benchmark::DoNotOptimize(p.b.data());
  }
  linalg::detail::ForceEigenGemm(false);
}
BENCHMARK(BM_IndependentOpsSequential)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_IndependentOpsTbbParallel(benchmark::State& state) {
  SetGemmBackend(state);
  IndependentPair p;
  const int kind = static_cast<int>(state.range(0));
  tbb::task_arena arena(2);
  for (auto _ : state) {
    bool ok1 = true, ok2 = true;
    arena.execute([&] {
      tbb::task_group g;
      g.run([&] { ok1 = p.First(kind); });
      ok2 = p.Second(kind);
      g.wait();
    });
    if (!ok1 || !ok2) state.SkipWithError("dot_general failed");
    benchmark::DoNotOptimize(p.a.data());
    benchmark::DoNotOptimize(p.b.data());
  }
  linalg::detail::ForceEigenGemm(false);
}
BENCHMARK(BM_IndependentOpsTbbParallel)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// ---- The cost of many results -------------------------------------------------------------------
// Program::Run checks whether a result's source overlaps another result's memory (a donated argument) only
// for results that return an entry parameter. Arg(0) = number of results R; Arg(1) = 1: every result is an
// add of the argument (R kernels, R results); 0: the same R adds chained into one result (the baseline in
// the same run: R kernels, 1 result). (many - chain) / R is the cost per result.

std::string ManyResultsText(int64_t r, bool many) {
  const std::string t = "tensor<4xf32>";
  std::string s = "func.func @main(%x: " + t + ") -> (";
  for (int64_t i = 0; i < (many ? r : 1); ++i) s += (i ? ", " : "") + t;
  s += ") {\n  %v0 = stablehlo.add %x, %x : " + t + "\n";
  for (int64_t i = 1; i < r; ++i)
    s += "  %v" + std::to_string(i) + " = stablehlo.add " + (many ? std::string("%x") : "%v" + std::to_string(i - 1)) +
         ", %x : " + t + "\n";
  s += "  func.return ";
  for (int64_t i = many ? 0 : r - 1; i < r; ++i) s += (many && i ? ", %v" : "%v") + std::to_string(i);
  s += " : ";
  for (int64_t i = 0; i < (many ? r : 1); ++i) s += (i ? ", " : "") + t;
  return s + "\n}\n";
}

void BM_InterpreterManyResults(benchmark::State& state) {
  const int64_t r = state.range(0);
  const bool many = state.range(1) != 0;
  const std::string text = ManyResultsText(r, many);
  std::vector<stablehlo::Module> mods;
  std::unique_ptr<interp::Program> p = CompileOrNull(text, &mods);
  if (!p) {
    state.SkipWithError("compile failed");
    return;
  }
  std::vector<float> out(static_cast<size_t>(r) * 16);
  std::vector<void*> bufs;
  for (int64_t i = 0; i < r; ++i) bufs.push_back(out.data() + i * 16);
  FixedResults alloc(bufs);
  float x[4] = {1, 2, 3, 4};
  const int64_t dims[1] = {4};
  interp::TensorView arg{x, ElementType::kF32, dims, 1};
  interp::Workspace ws;
  std::vector<interp::TensorView> results;
  results.reserve(static_cast<size_t>(r));
  for (auto _ : state) {
    neuronmem::Status s = p->Run(&arg, 1, &alloc, &results, &ws);
    benchmark::DoNotOptimize(out.data());
    if (s) state.SkipWithError("run failed");
  }
}
BENCHMARK(BM_InterpreterManyResults)
    ->Args({64, 0})
    ->Args({64, 1})
    ->Args({256, 0})
    ->Args({256, 1})
    ->Unit(benchmark::kMicrosecond);

// ---- Compile time of bench/parse's generated 10k-op module (1.87 MB) -------------------------------

void BM_CompileGenerated10kOps(benchmark::State& state) {
  const std::string text = bench::GenerateDecodeModule(10000);
  std::vector<stablehlo::Module> mods;
  if (stablehlo::ParseModules(text, "gen.mlir", &mods)) {
    state.SkipWithError("parse failed");
    return;
  }
  interp::CompileOptions o;
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
