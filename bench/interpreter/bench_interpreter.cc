// Interpreter dispatch cost: a chain of 1,000 small adds (tensor<4xf32>) run by the interpreter against the
// same adds in a plain C++ loop (the floor). Per-op dispatch = (interpreter - loop) / 1000.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "interpreter/interpreter.h"
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

}  // namespace

BENCHMARK_MAIN();
