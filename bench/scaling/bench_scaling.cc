// Growth with input size (issue 23, class 7): each benchmark runs the same shape of input at sizes 1x, 2x,
// 4x, 8x and reports items_per_second; linear work keeps it flat as n grows (a quadratic cost halves it with
// each step).
//   Parse/n/d, Manifest/n/d, Compile/n/d   an entry with n func.calls, to one function (d = 0) or to n
//                        functions (d = 1): parse; parse + manifest; parse + interpreter compile
//   ChainedWrites/n      n writes into one buffer, each waiting on the previous one's event, all held by a
//                        caller event until submitted (submission; then the chain runs)
#include <neuronmem/neuronmem.h>

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "common/transfer_helpers.h"
#include "interpreter/interpreter.h"
#include "latency.h"
#include "manifest/manifest.h"
#include "stablehlo/parser.h"

namespace {

using neuronmem::bench::Check;

// An entry with n func.calls in a chain, each to @f (distinct = false) or to a function of its own.
std::string ManyCalls(int64_t n, bool distinct) {
  std::string t = "func.func @main(%a0: tensor<4xf32>) -> tensor<4xf32> {\n";
  for (int64_t i = 0; i < n; ++i) {
    const std::string callee = distinct ? "f" + std::to_string(i) : "f";
    t += "  %a" + std::to_string(i + 1) + " = func.call @" + callee + "(%a" + std::to_string(i) +
         ") : (tensor<4xf32>) -> tensor<4xf32>\n";
  }
  t += "  func.return %a" + std::to_string(n) + " : tensor<4xf32>\n}\n";
  for (int64_t i = 0; i < (distinct ? n : 1); ++i) {
    t += "func.func private @f" + (distinct ? std::to_string(i) : std::string()) +
         "(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %y = stablehlo.negate %x : tensor<4xf32>\n"
         "  func.return %y : tensor<4xf32>\n}\n";
  }
  return t;
}

// Items per second over CPU time (the host is shared: wall time counts other processes): 1e9 / items_per_second
// is the cost per item, flat when the work is linear.
void PerItem(benchmark::State& state, int64_t n) {
  state.counters["n"] = static_cast<double>(n);
  state.SetItemsProcessed(state.iterations() * n);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int distinct = 0; distinct <= 1; ++distinct)
    for (int64_t n : {5000, 10000, 20000, 40000}) b->Args({n, distinct});
  b->Unit(benchmark::kMillisecond);
}

void BM_Parse(benchmark::State& state) {
  const std::string text = ManyCalls(state.range(0), state.range(1) != 0);
  for (auto _ : state) {
    std::vector<neuronmem::stablehlo::Module> modules;
    if (neuronmem::stablehlo::ParseModules(text, "calls.mlir", &modules)) return state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(modules);
  }
  PerItem(state, state.range(0));
}
BENCHMARK(BM_Parse)->Apply(Sizes);

// Parse + the placement manifest (the executable's compile derives one first).
void BM_Manifest(benchmark::State& state) {
  const std::string text = ManyCalls(state.range(0), state.range(1) != 0);
  for (auto _ : state) {
    std::vector<neuronmem::stablehlo::Module> modules;
    if (neuronmem::stablehlo::ParseModules(text, "calls.mlir", &modules)) return state.SkipWithError("parse failed");
    neuronmem::manifest::Manifest m;
    if (neuronmem::manifest::Derive(modules[0], neuronmem::manifest::Options(), &m))
      return state.SkipWithError("manifest failed");
    benchmark::DoNotOptimize(m);
  }
  PerItem(state, state.range(0));
}
BENCHMARK(BM_Manifest)->Apply(Sizes);

void BM_Compile(benchmark::State& state) {
  const std::string text = ManyCalls(state.range(0), state.range(1) != 0);
  for (auto _ : state) {
    std::vector<neuronmem::stablehlo::Module> modules;
    if (neuronmem::stablehlo::ParseModules(text, "calls.mlir", &modules)) return state.SkipWithError("parse failed");
    neuronmem::interp::CompileOptions o;
    std::unique_ptr<neuronmem::interp::Program> program;
    if (neuronmem::interp::Compile(modules[0], o, &program)) return state.SkipWithError("compile failed");
    benchmark::DoNotOptimize(program);
  }
  PerItem(state, state.range(0));
}
BENCHMARK(BM_Compile)->Apply(Sizes);

void BM_ChainedWrites(benchmark::State& state) {
  static neuronmem_client_t* client = neuronmem::bench::CreateClient(1, 64ull << 20, 64ull << 20);
  neuronmem_memory_t* mem = nullptr;
  Check(neuronmem_client_lookup_memory(client, 0, &mem));
  int64_t dims[1] = {1024};
  neuronmem_buffer_t* buffer = nullptr;
  Check(neuronmem_test::Allocate(client, mem, NEURONMEM_ELEMENT_TYPE_S32, dims, 1, &buffer));
  const int64_t n = state.range(0);
  std::vector<neuronmem_event_t*> events(static_cast<size_t>(n));
  int32_t value = 7;
  for (auto _ : state) {
    neuronmem_event_t* gate = nullptr;
    Check(neuronmem_event_create(client, &gate));
    neuronmem_event_t* prev = gate;
    for (int64_t i = 0; i < n; ++i) {
      Check(neuronmem_test::Write(buffer, static_cast<uint64_t>(i % 1024) * 4, &value, 4, &prev, 1, &events[i]));
      prev = events[i];
    }
    state.PauseTiming();  // submission is what grows; the chain then runs (linear) off the clock
    Check(neuronmem_event_complete(gate, nullptr));
    Check(neuronmem_event_wait(prev, -1));
    for (neuronmem_event_t* e : events) neuronmem_event_destroy(e);
    neuronmem_event_destroy(gate);
    state.ResumeTiming();
  }
  neuronmem_buffer_destroy(buffer);
  PerItem(state, n);
}
BENCHMARK(BM_ChainedWrites)->Arg(8000)->Arg(16000)->Arg(32000)->Arg(64000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
