// Parse + manifest throughput: a generated decode-step-like module with 10k ops (~1 MB) and the
// conformance files, reported as MB/s of StableHLO text (goal: at least 100 MB/s); the StableHLO portable
// artifacts of the conformance files against their text (issue 22).
#include <benchmark/benchmark.h>

#include <algorithm>
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

// The 794 StableHLO portable artifacts of ../shared/conformance/stablehlo-bytecode and, for comparison, the
// text each was made from (issue 22): parse (or read) + manifest of @main per file, in one binary. MB/s
// are of each input's own bytes; the counters give the time per file and the IR's memory (arena bytes).
struct ArtifactPairs {
  std::vector<std::string> bytecode, text;
  size_t bytecode_bytes = 0, text_bytes = 0;
};

const ArtifactPairs& LoadArtifactPairs() {
  static const ArtifactPairs pairs = [] {
    ArtifactPairs p;
    const char* tdir = std::getenv("NEURONMEM_CONFORMANCE_DIR");
    const std::string text_dir = tdir ? tdir : "../shared/conformance/stablehlo-testdata";
    const std::string bc_dir = text_dir + "/../stablehlo-bytecode";
    if (!std::filesystem::is_directory(bc_dir)) return p;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(bc_dir)) {
      const std::string n = e.path().filename().string();
      if (n.size() > 8 && n.compare(n.size() - 8, 8, ".mlir.bc") == 0) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    const auto read = [](const std::filesystem::path& f) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    };
    for (const auto& f : files) {
      // "abs_int8_20_20.1.0.0.mlir.bc": the text is "abs_int8_20_20.mlir".
      const std::string stem = f.filename().string().substr(0, f.filename().string().find('.'));
      p.bytecode.push_back(read(f));
      p.text.push_back(read(text_dir + "/" + stem + ".mlir"));
      p.bytecode_bytes += p.bytecode.back().size();
      p.text_bytes += p.text.back().size();
    }
    return p;
  }();
  return pairs;
}

void ParseAndManifestEach(benchmark::State& state, const std::vector<std::string>& inputs, size_t total,
                          bool manifest) {
  if (inputs.empty()) {
    state.SkipWithError("../shared/conformance/stablehlo-bytecode is absent (set NEURONMEM_CONFORMANCE_DIR)");
    return;
  }
  size_t ir_bytes = 0;
  for (auto _ : state) {
    ir_bytes = 0;
    for (const std::string& in : inputs) {
      std::vector<neuronmem::stablehlo::Module> mods;
      if (neuronmem::stablehlo::ParseModules(in, "a.mlir", &mods)) {
        state.SkipWithError("an input failed to parse");
        return;
      }
      ir_bytes += mods[0].arena->bytes_reserved();
      if (!manifest) continue;
      neuronmem::manifest::Manifest man;
      benchmark::DoNotOptimize(neuronmem::manifest::Derive(mods[0], neuronmem::manifest::Options(), &man));
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * total));
  state.counters["files"] = static_cast<double>(inputs.size());
  state.counters["s_per_file"] = benchmark::Counter(
      static_cast<double>(inputs.size()), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["ir_bytes"] = static_cast<double>(ir_bytes);
}

// bytecode: the artifacts, else their text; manifest: also derive each manifest.
void BM_Artifacts(benchmark::State& state, bool bytecode, bool manifest) {
  const ArtifactPairs& p = LoadArtifactPairs();
  ParseAndManifestEach(state, bytecode ? p.bytecode : p.text, bytecode ? p.bytecode_bytes : p.text_bytes, manifest);
}
BENCHMARK_CAPTURE(BM_Artifacts, ParseAndManifest_Bytecode, true, true)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_Artifacts, ParseAndManifest_Text, false, true)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_Artifacts, ParseOnly_Bytecode, true, false)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_Artifacts, ParseOnly_Text, false, false)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
