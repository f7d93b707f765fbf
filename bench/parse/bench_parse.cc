// Parse + manifest throughput: a generated decode-step-like module with 10k ops (~1 MB) and the
// conformance files, reported as MB/s of StableHLO text (goal: at least 100 MB/s).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <neuronmem/neuronmem.h>

#include "manifest/manifest.h"
#include "stablehlo/parser.h"

namespace {

std::string GenerateModule(int ops) {
  std::ostringstream s;
  s << "#loc1 = loc(\"gen.py\":1:0)\n";
  s << "module @jit_generated attributes {mhlo.num_partitions = 1 : i32} {\n";
  s << "  func.func public @main(%arg0: tensor<8x16xi32> {mhlo.memory_kind = \"pinned_host\"}, "
       "%arg1: tensor<8x128xf32> {mhlo.sharding = \"{replicated}\"}) -> (tensor<8x128xf32> "
       "{jax.result_info = \"out\", mhlo.memory_kind = \"device\"}) {\n";
  s << "    %v0 = stablehlo.add %arg1, %arg1 : tensor<8x128xf32> loc(#loc1)\n";
  for (int i = 1; i < ops; ++i) {
    switch (i % 5) {
      case 0:
        s << "    %v" << i << " = stablehlo.multiply %v" << i - 1 << ", %arg1 : tensor<8x128xf32> loc(\"gen.py\":" << i
          << ":4)\n";
        break;
      case 1:
        s << "    %v" << i << " = stablehlo.custom_call @annotate_device_placement(%v" << i - 1
          << ") {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = \"pinned_host\"}} : "
             "(tensor<8x128xf32>) -> tensor<8x128xf32>\n";
        break;
      case 2:
        s << "    %c" << i << " = stablehlo.constant dense<[1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]> : tensor<8xf32>\n";
        s << "    %v" << i << " = stablehlo.custom_call @MoveToDevice(%v" << i - 1
          << ") {backend_config = \"\"} : (tensor<8x128xf32>) -> tensor<8x128xf32>\n";
        break;
      case 3:
        s << "    %v" << i << " = \"stablehlo.add\"(%v" << i - 1 << ", %v" << i - 2
          << ") : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>\n";
        break;
      default:
        s << "    %v" << i << " = stablehlo.compare  GT, %v" << i - 1 << ", %arg1,  FLOAT : (tensor<8x128xf32>, "
             "tensor<8x128xf32>) -> tensor<8x128xi1>\n";
        s << "    %s" << i << " = stablehlo.select %v" << i << ", %v" << i - 1 << ", %arg1 : tensor<8x128xi1>, "
             "tensor<8x128xf32>\n";
        s << "    %w" << i << " = stablehlo.negate %s" << i << " : tensor<8x128xf32>\n";
        s << "    %v" << i << "_ = stablehlo.abs %w" << i << " : tensor<8x128xf32>\n";
        break;
    }
  }
  s << "    return %arg1 : tensor<8x128xf32>\n  }\n}\n";
  return s.str();
}

void BM_ParseAndManifest_Generated10kOps(benchmark::State& state) {
  const std::string text = GenerateModule(10000);
  size_t ops = 0;
  for (auto _ : state) {
    std::vector<neuronmem::stablehlo::Module> mods;
    if (neuronmem::stablehlo::ParseModules(text, "gen.mlir", &mods)) {
      state.SkipWithError("parse failed");
      return;
    }
    neuronmem::manifest::Manifest m;
    if (neuronmem::manifest::Derive(mods[0], neuronmem::manifest::Options(), &m)) {
      state.SkipWithError("manifest failed");
      return;
    }
    ops = mods[0].functions[0].body.blocks[0].ops.size();
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes"] = static_cast<double>(text.size());
  state.counters["ops"] = static_cast<double>(ops);
}
BENCHMARK(BM_ParseAndManifest_Generated10kOps)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_ParseOnly_Generated10kOps(benchmark::State& state) {
  const std::string text = GenerateModule(10000);
  size_t arena_bytes = 0;
  for (auto _ : state) {
    std::vector<neuronmem::stablehlo::Module> mods;
    benchmark::DoNotOptimize(neuronmem::stablehlo::ParseModules(text, "gen.mlir", &mods));
    if (!mods.empty()) arena_bytes = mods[0].arena->bytes_reserved();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  // The IR's memory (source copy included) relative to the text.
  state.counters["ir_bytes_per_text_byte"] = static_cast<double>(arena_bytes) / static_cast<double>(text.size());
}
BENCHMARK(BM_ParseOnly_Generated10kOps)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

// What a frontend calls: the C API's load from text (parse, derive, keep the manifest), then destroy.
void BM_ManifestLoadText_CApi_Generated10kOps(benchmark::State& state) {
  const std::string text = GenerateModule(10000);
  for (auto _ : state) {
    neuronmem_manifest_t* m = nullptr;
    if (neuronmem_status_t* s = neuronmem_manifest_load_text(text.data(), text.size(), nullptr, &m)) {
      state.SkipWithError(neuronmem_status_message(s).data);
      neuronmem_status_free(s);
      return;
    }
    neuronmem_manifest_destroy(m);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ManifestLoadText_CApi_Generated10kOps)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

// Writing the JSON form of the same manifest (what neuronmem_manifest_to_json builds on its first call).
void BM_ManifestToJson_Generated10kOps(benchmark::State& state) {
  const std::string text = GenerateModule(10000);
  std::vector<neuronmem::stablehlo::Module> mods;
  neuronmem::manifest::Manifest m;
  if (neuronmem::stablehlo::ParseModules(text, "gen.mlir", &mods) ||
      neuronmem::manifest::Derive(mods[0], neuronmem::manifest::Options(), &m)) {
    state.SkipWithError("parse or manifest failed");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(neuronmem::manifest::ToJson(m));
}
BENCHMARK(BM_ManifestToJson_Generated10kOps)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_ParseAndManifest_ConformanceFiles(benchmark::State& state) {
  std::vector<std::string> texts;
  size_t total = 0;
  const char* dir = std::getenv("NEURONMEM_CONFORMANCE_DIR");
  if (!dir) dir = "../shared/conformance/stablehlo-testdata";
  if (!std::filesystem::exists(dir)) {
    state.SkipWithError("set NEURONMEM_CONFORMANCE_DIR");
    return;
  }
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".mlir") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    texts.push_back(ss.str());
    total += texts.back().size();
  }
  for (auto _ : state) {
    for (const std::string& t : texts) {
      std::vector<neuronmem::stablehlo::Module> mods;
      if (neuronmem::stablehlo::ParseModules(t, "c.mlir", &mods)) continue;
      for (const auto& m : mods) {
        if (!m.FindFunction("main")) continue;
        neuronmem::manifest::Manifest man;
        benchmark::DoNotOptimize(neuronmem::manifest::Derive(m, neuronmem::manifest::Options(), &man));
      }
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * total));
  state.counters["files"] = static_cast<double>(texts.size());
  state.counters["bytes"] = static_cast<double>(total);
}
BENCHMARK(BM_ParseAndManifest_ConformanceFiles)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
