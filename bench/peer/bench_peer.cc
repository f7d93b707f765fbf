// The interpreter against compiled code (issue 28): the programs of ../shared/tools/compiled-peer's table
// (gen_programs.py: dot_general 256^3 and 64x1024x1024, 64 chained add/multiply/exponential on f32[1024x1024],
// a sum over the last axis) plus the ones issue 28 added, read from programs/ (compiled/gen_programs.py): MLP
// blocks x[64x1024] . W1[1024x4096] + b1, gelu (tanh form) or silu (logistic), . W2[4096x1024] + b2, residual;
// softmax over the last axis of f32[1024x1024] and of the decode step's scores f32[64x4x256]. Each runs through
// the interpreter with fused element-wise regions on (/1) and off (/0) in the same run. The compiled peer's
// figures are read from compiled_peer.json (recorded by compiled/run_peer.sh; never rebuilt here); counters: ms
// (mean wall time per run), cpu_ms (the run's thread CPU time), compiled_ms, and ratio = ms / compiled_ms,
// cpu_ratio = cpu_ms / compiled_ms where the peer has a figure. Run at high priority, e.g.
//   nice -n -10 build/bench/peer/bench_peer --benchmark_repetitions=5 --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "interpreter/interpreter.h"
#include "random_floats.h"
#include "stablehlo/parser.h"

namespace {

using namespace neuronmem;

std::string T(int64_t a, int64_t b) { return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "xf32>"; }

std::string MatMul(int64_t m, int64_t k, int64_t n) {
  return "func.func @main(%a: " + T(m, k) + ", %b: " + T(k, n) + ") -> " + T(m, n) +
         " {\n  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (" + T(m, k) + ", " + T(k, n) +
         ") -> " + T(m, n) + "\n  return %0 : " + T(m, n) + "\n}\n";
}

// As gen_programs.py: op k is add(v, a) for k % 3 == 0, multiply(v, b) for 1, exponential(v) for 2.
std::string Chain64() {
  const std::string t = T(1024, 1024);
  std::string s = "func.func @main(%a: " + t + ", %b: " + t + ") -> " + t + " {\n";
  std::string prev = "%a";
  for (int k = 0; k < 64; ++k) {
    const std::string v = "%v" + std::to_string(k);
    if (k % 3 == 0) s += "  " + v + " = stablehlo.add " + prev + ", %a : " + t + "\n";
    if (k % 3 == 1) s += "  " + v + " = stablehlo.multiply " + prev + ", %b : " + t + "\n";
    if (k % 3 == 2) s += "  " + v + " = stablehlo.exponential " + prev + " : " + t + "\n";
    prev = v;
  }
  return s + "  return " + prev + " : " + t + "\n}\n";
}

std::string ReduceSum() {
  return "func.func @main(%a: " + T(1024, 1024) +
         ") -> tensor<1024xf32> {\n  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
         "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : (" +
         T(1024, 1024) + ", tensor<f32>) -> tensor<1024xf32>\n  return %0 : tensor<1024xf32>\n}\n";
}

// The programs issue 28 added (compiled/gen_programs.py writes them into programs/, which run_peer.sh lowers for the
// compiled side): read from the source tree, so both sides run the same text.
std::string ProgramFile(const std::string& name) {
  std::ifstream f(std::string(NEURONMEM_PEER_PROGRAMS) + "/" + name + ".mlir");
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

struct Program {
  std::string name;
  std::string text;
  std::vector<std::vector<int64_t>> args;
  std::vector<float> scale = {};  // per argument (default 1): inputs are uniform in [-scale, scale)
};

const std::vector<std::vector<int64_t>> kMlpArgs = {{64, 1024}, {1024, 4096}, {4096}, {4096, 1024}, {1024}};
const std::vector<float> kMlpScale = {1.0f, 0.03125f, 1.0f, 0.015625f, 1.0f};

const std::vector<Program>& Programs() {
  static const std::vector<Program> p = {
      {"mm_256x256x256", MatMul(256, 256, 256), {{256, 256}, {256, 256}}},
      {"mm_64x1024x1024", MatMul(64, 1024, 1024), {{64, 1024}, {1024, 1024}}},
      {"ew_chain64_1024x1024", Chain64(), {{1024, 1024}, {1024, 1024}}},
      {"reduce_sum_1024x1024", ReduceSum(), {{1024, 1024}}},
      // Weights scaled by 1/sqrt(fan-in), as run_peer.sh's inputs (the activation sees values around +-1).
      {"mlp_gelu_64x1024x4096", ProgramFile("mlp_gelu_64x1024x4096"), kMlpArgs, kMlpScale},
      {"mlp_silu_64x1024x4096", ProgramFile("mlp_silu_64x1024x4096"), kMlpArgs, kMlpScale},
      {"softmax_1024x1024", ProgramFile("softmax_1024x1024"), {{1024, 1024}}},
      {"softmax_64x4x256", ProgramFile("softmax_64x4x256"), {{64, 4, 256}}},
  };
  return p;
}

// The compiled peer's median ms per program (absent or null: not measured).
const std::map<std::string, double>& CompiledFigures() {
  static const std::map<std::string, double> figures = [] {
    std::map<std::string, double> m;
    std::ifstream f(NEURONMEM_PEER_FIGURES);
    const nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("programs")) return m;
    for (const auto& [name, v] : j["programs"].items())
      if (v.contains("ms") && v["ms"].is_number()) m[name] = v["ms"].get<double>();
    return m;
  }();
  return figures;
}

// This thread's CPU time (a run is single-threaded): on a loaded machine, closer to the time the run needs than
// the wall time is.
double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

class Fixed : public interp::ResultAllocator {
 public:
  void* Allocate(size_t index, size_t bytes) override {
    if (bufs_.size() <= index) bufs_.resize(index + 1);
    if (bufs_[index].size() < bytes / 4 + 16) bufs_[index].resize(bytes / 4 + 16);
    return bufs_[index].data();
  }

 private:
  std::vector<std::vector<float>> bufs_;
};

// Benchmarks that could not run (a missing program, a parse, compile or run failure): the run then exits 1, so the
// smoke test fails with it.
std::atomic<int> g_failures{0};

void Fail(benchmark::State& state, const char* why) {
  g_failures.fetch_add(1);
  state.SkipWithError(why);
}

void BM_Peer(benchmark::State& state, size_t index) {
  const Program& prog = Programs()[index];
  std::vector<stablehlo::Module> mods;
  if (prog.text.empty()) {
    Fail(state, "program file missing (bench/peer/programs)");
    return;
  }
  if (stablehlo::ParseModules(prog.text, prog.name + ".mlir", &mods)) {
    Fail(state, "parse failed");
    return;
  }
  interp::CompileOptions o;
  o.fuse_elementwise = state.range(0) != 0;
  std::unique_ptr<interp::Program> p;
  if (interp::Compile(mods[0], o, &p)) {
    Fail(state, "compile failed");
    return;
  }
  // Inputs as the compiled peer's: the chain's a in [0, 1) and b = -0.5 (values stay in (0, 2)); others in [-1, 1).
  std::vector<std::vector<float>> data;
  std::vector<interp::TensorView> args;
  for (size_t i = 0; i < prog.args.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : prog.args[i]) n *= d;
    std::vector<float> v = bench::RandomFloats(static_cast<size_t>(n), 17 + static_cast<unsigned>(i));
    if (prog.name == "ew_chain64_1024x1024") {
      for (float& x : v) x = i == 0 ? 0.5f * (x + 1.0f) : -0.5f;
    }
    if (i < prog.scale.size())
      for (float& x : v) x *= prog.scale[i];
    data.push_back(std::move(v));
  }
  for (size_t i = 0; i < prog.args.size(); ++i)
    args.push_back(interp::TensorView{data[i].data(), ElementType::kF32, prog.args[i].data(), prog.args[i].size()});
  interp::Workspace ws;
  Fixed alloc;
  std::vector<interp::TensorView> results;
  double seconds = 0, cpu_seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuSeconds();
    Status s = p->Run(args.data(), args.size(), &alloc, &results, &ws);
    cpu_seconds += ThreadCpuSeconds() - c0;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s) {
      Fail(state, "run failed");
      return;
    }
    benchmark::ClobberMemory();
  }
  const double ms = 1e3 * seconds / static_cast<double>(state.iterations());
  const double cpu_ms = 1e3 * cpu_seconds / static_cast<double>(state.iterations());
  state.counters["ms"] = ms;
  state.counters["cpu_ms"] = cpu_ms;
  state.counters["fused_regions"] = static_cast<double>(p->fused_regions().size());
  const auto it = CompiledFigures().find(prog.name);
  if (it != CompiledFigures().end()) {
    state.counters["compiled_ms"] = it->second;
    state.counters["ratio"] = ms / it->second;
    state.counters["cpu_ratio"] = cpu_ms / it->second;
  }
}

const bool kRegistered = [] {
  for (size_t i = 0; i < Programs().size(); ++i)
    benchmark::RegisterBenchmark(("BM_Peer/" + Programs()[i].name).c_str(), BM_Peer, i)
        ->ArgName("fusion")
        ->Arg(1)
        ->Arg(0)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (const int n = g_failures.load()) {
    std::fprintf(stderr, "bench_peer: %d benchmarks could not run (see their error above)\n", n);
    return 1;
  }
  return 0;
}
