// Client creation and destruction with the default options (2 cores, 2 x 64 MiB HBM arenas, 64 MiB
// pinned arena), against the floor: mmap + populate of the same 192 MiB in the same run.
#include <neuronmem/neuronmem.h>

#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstdlib>

namespace {

void BM_ClientCreateDestroyDefaults(benchmark::State& state) {
  for (auto _ : state) {
    neuronmem_client_t* c = nullptr;
    neuronmem_status_t* s = neuronmem_client_create(nullptr, &c);
    if (s) {
      state.SkipWithError(neuronmem_status_message(s).data);
      neuronmem_status_free(s);
      return;
    }
    neuronmem_status_free(neuronmem_client_destroy(c));
  }
}
BENCHMARK(BM_ClientCreateDestroyDefaults)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

// Floor: map and populate the same 192 MiB (huge pages advised), then unmap.
void BM_Floor_MmapPopulate192MiB(benchmark::State& state) {
  const size_t bytes = 192ull << 20;
  for (auto _ : state) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      state.SkipWithError("mmap failed");
      return;
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    madvise(p, bytes, MADV_POPULATE_WRITE);
    benchmark::DoNotOptimize(p);
    munmap(p, bytes);
  }
}
BENCHMARK(BM_Floor_MmapPopulate192MiB)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
