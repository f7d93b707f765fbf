// Allocation + free pairs in the pinned-host arena (through the public API and the arena itself) and in a
// device arena, against glibc malloc in the same run. Each benchmark iteration times a batch of pairs
// (the TSC ticks in 10 ns steps here), reported as ns per pair; the ratio to glibc malloc
// at the same size is computed from the rows of the same run (docs/performance.md).
#include <neuronmem/neuronmem.h>

#include <benchmark/benchmark.h>

#include <cstdlib>

#include "latency.h"
#include "memory/device_arena.h"
#include "memory/pinned_arena.h"

namespace {

constexpr int kBatch = 256;

void BM_GlibcMalloc(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  void* ptrs[kBatch];
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      ptrs[i] = std::malloc(size);
      benchmark::DoNotOptimize(ptrs[i]);
      std::free(ptrs[i]);
    }
  }
  state.counters["ns_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations() * kBatch),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

neuronmem_client_t* Client() {
  static neuronmem_client_t* c = neuronmem::bench::CreateClient(1, 256ull << 20, 256ull << 20);
  return c;
}

void BM_PinnedHost_PublicApi(benchmark::State& state) {
  const uint64_t size = static_cast<uint64_t>(state.range(0));
  neuronmem_client_t* c = Client();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      void* p = nullptr;
      neuronmem_status_t* s = neuronmem_client_host_allocate(c, size, 0, &p);
      benchmark::DoNotOptimize(p);
      if (s) {
        state.SkipWithError("allocation failed");
        neuronmem_status_free(s);
        return;
      }
      neuronmem_status_free(neuronmem_client_host_free(c, p));
    }
  }
  state.counters["ns_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations() * kBatch),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_DeviceArena(benchmark::State& state) {
  static std::unique_ptr<neuronmem::memory::DeviceArena> arena = [] {
    std::unique_ptr<neuronmem::memory::DeviceArena> a;
    if (neuronmem::memory::DeviceArena::Create("bench device", 256ull << 20, &a)) std::abort();
    return a;
  }();
  const uint64_t size = static_cast<uint64_t>(state.range(0));
  // A few live neighbours so the free lists are not trivially empty.
  uint64_t keep[8];
  for (auto& k : keep)
    if (arena->Allocate(4096, 0, &k)) std::abort();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      uint64_t off = 0;
      if (arena->Allocate(size, 0, &off)) std::abort();  // the figures would time failures
      benchmark::DoNotOptimize(off);
      if (arena->Free(off)) std::abort();
    }
  }
  for (auto k : keep)
    if (arena->Free(k)) std::abort();
  state.counters["ns_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations() * kBatch),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

#define SIZES ->RangeMultiplier(4)->Range(64, 1 << 20)->Repetitions(3)->ReportAggregatesOnly(true)
BENCHMARK(BM_GlibcMalloc) SIZES;
BENCHMARK(BM_PinnedHost_PublicApi) SIZES;
BENCHMARK(BM_DeviceArena) SIZES;

}  // namespace

BENCHMARK_MAIN();
