// Parse + manifest throughput: a generated decode-step-like module with 10k ops (~1 MB) and the
// conformance files, reported as MB/s of StableHLO text (goal: at least 100 MB/s).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <neuronmem/neuronmem.h>

#include "generated_module.h"
#include "manifest/manifest.h"
#include "stablehlo/parser.h"

namespace {

void BM_ParseAndManifest_Generated10kOps(benchmark::State& state) {
  const std::string text = neuronmem::bench::GenerateDecodeModule(10000);
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
BENCHMARK(BM_ParseAndManifest_Generated10kOps)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

void BM_ParseOnly_Generated10kOps(benchmark::State& state) {
  const std::string text = neuronmem::bench::GenerateDecodeModule(10000);
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
  const std::string text = neuronmem::bench::GenerateDecodeModule(10000);
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
BENCHMARK(BM_ManifestLoadText_CApi_Generated10kOps)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

// Writing the JSON form of the same manifest (what neuronmem_manifest_to_json builds on its first call).
void BM_ManifestToJson_Generated10kOps(benchmark::State& state) {
  const std::string text = neuronmem::bench::GenerateDecodeModule(10000);
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
    state.SkipWithError(
        "the conformance folder (../shared/conformance/stablehlo-testdata) is absent; "
        "set NEURONMEM_CONFORMANCE_DIR");
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
BENCHMARK(BM_ParseAndManifest_ConformanceFiles)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
