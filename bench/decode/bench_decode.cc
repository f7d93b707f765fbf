// Decode metadata: what handing the per-step block table, sequence lengths, positions and slot mapping to the
// device costs, side by side in one run, for batch 1, 8, 64, 256 and max_blocks 16, 256.
//
// Metadata handling per step = the host's in-place update of the rows that change (tools/decode's Scheduler,
// the same in every case) + what the strategy does to make the device see the new values:
//   Meta_PinnedHost_InPlace   nothing: the four tensors live in the pinned-host arena (neuronmem_client_host_
//                             allocate), wrapped once as MUTABLE_ZERO_COPY pinned_host buffers; the step reads them
//                             where they lie (zero-copy);
//   Meta_Upload_Batched       one neuronmem_buffer_from_host_batch of the four tensors into device memory, wait;
//   Meta_Floor_Memcpy         memcpy of the same bytes into a pre-faulted destination (the floor);
//   Meta_Baseline_CondvarQueue the same copies handed to a worker thread through a mutex + condition variable
//                             (what users write), wait for it.
// Those four run step after step with nothing in between: the best case for the queue, whose worker never gets
// to sleep deeply, and for the caches. In a decode loop a step (milliseconds) runs between two metadata
// handlings; the *_AfterStep variants put a stand-in for it before every timed sample (1 ms of work on the
// caller streaming over 4 MiB, untimed: the worker sleeps meanwhile, the metadata leaves L1/L2):
//   Meta_PinnedHost_InPlace_AfterStep, Meta_Floor_Memcpy_AfterStep, Meta_Baseline_CondvarQueue_AfterStep.
// Counters: p50_ns, p99_ns per step; meta_bytes (the four tensors); batch_mean_ns (floor and in place: the mean
// over 200 consecutive steps timed together, since the clock ticks in 10 ns); vs_memcpy = this / the memcpy floor,
// each as its p50, or its batch mean when the p50 is under 200 ns; same configuration, measured earlier in the run.
//
// End to end (the step executed on the software NeuronCore through the executable API, tools/decode's Runner: the
// model of tools/decode at hidden 64, 2 layers, block size 16, vocab 256; KV caches donated each step):
//   Step_NoMetadataUpdate     the step alone, metadata unchanged (the compute floor);
//   Step_PinnedHost_InPlace   host update in place + the step reading it in pinned_host;
//   Step_SyncCopy             the module declares the metadata in device: host update + each tensor forced
//                             through a synchronous copy into device memory (neuronmem_buffer_from_host, waited
//                             one by one) before the step, as a runtime without memory kinds does;
//   Step_Kernel_NoMetadataUpdate, Step_Kernel_PinnedHost_InPlace
//                             the same two with paged attention as the registered NKI kernel (tools/decode/
//                             paged_attention.h) that reads the block table, lengths and positions in pinned_host,
//                             instead of the plain StableHLO gather of the caches (all the others).
// Counters: p50_ns, p99_ns per step, meta_p50_ns (the metadata part of the step), meta_share = meta_p50 / step p50.
//
//   bench_decode [--samples=N] [google benchmark flags]   (--samples=3: the test command's smoke run)
#include <neuronmem/neuronmem.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "condvar_queue.h"
#include "decode_model.h"
#include "decode_runner.h"
#include "latency.h"
#include "paged_attention.h"

namespace {

using neuronmem::bench::Check;
using neuronmem::bench::Clock;
using neuronmem::bench::Ns;
using neuronmem_decode::Config;
using neuronmem_decode::Scheduler;

int g_samples = 2000;  // metadata steps per benchmark; end to end uses g_samples / 100 (at least 3)

neuronmem_client_t* Client() {
  static neuronmem_client_t* c = [] {
    neuronmem_client_t* client = neuronmem::bench::CreateClient(1, 512ull << 20, 64ull << 20);
    static neuronmem_decode::PagedAttentionStats kernel_stats;  // lives as long as the client (the process)
    Check(neuronmem_decode::RegisterPagedAttention(client, &kernel_stats));
    return client;
  }();
  return c;
}

neuronmem_memory_t* Memory(neuronmem_memory_kind_t kind) {
  neuronmem_device_t* d = nullptr;
  Check(neuronmem_client_lookup_device(Client(), 0, &d));
  neuronmem_memory_t* m = nullptr;
  Check(neuronmem_device_memory_of_kind(d, kind, &m));
  return m;
}

// Arguments of an s32 upload of `data` (dims borrowed) into the core's memory of `kind`.
neuronmem_buffer_from_host_args_t S32Upload(const int32_t* data, const std::vector<int64_t>& dims,
                                            neuronmem_host_buffer_semantics_t semantics, neuronmem_memory_kind_t kind) {
  neuronmem_buffer_from_host_args_t a{};
  a.struct_size = sizeof a;
  a.data = data;
  a.element_type = NEURONMEM_ELEMENT_TYPE_S32;
  a.host_buffer_semantics = semantics;
  a.dims = dims.data();
  a.num_dims = dims.size();
  a.memory = Memory(kind);
  return a;
}

std::pair<double, double> P50P99(std::vector<double> ns) {
  const neuronmem::bench::Percentiles p = neuronmem::bench::Summarize(ns);
  return {p.p50, p.p99};
}

// The memcpy floor's p50 per (batch, max_blocks), filled by Meta_Floor_Memcpy (registered first).
std::map<std::pair<int, int>, double>& Floor() {
  static std::map<std::pair<int, int>, double> m;
  return m;
}

Config MetaConfig(const benchmark::State& state) {
  Config c;
  c.batch = static_cast<int>(state.range(0));
  c.max_blocks = static_cast<int>(state.range(1));
  c.num_blocks = c.batch * c.max_blocks;
  return c;
}

// The four metadata tensors in caller memory (heap or the pinned-host arena), with the scheduler that
// updates them in place; restarts the sequences (untimed) when they reach max_blocks * block_size tokens.
class MetaTensors {
 public:
  MetaTensors(const Config& c, bool pinned) : c_(c), pinned_(pinned) {
    const size_t sizes[4] = {static_cast<size_t>(c.batch) * c.max_blocks, static_cast<size_t>(c.batch),
                             static_cast<size_t>(c.batch), static_cast<size_t>(c.batch)};
    for (int i = 0; i < 4; ++i) {
      count_[i] = sizes[i];
      void* p = nullptr;
      if (pinned) {
        Check(neuronmem_client_host_allocate(Client(), sizes[i] * 4, 64, &p));
      } else {
        p = std::aligned_alloc(64, (sizes[i] * 4 + 63) / 64 * 64);
      }
      std::memset(p, 0, sizes[i] * 4);
      data_[i] = static_cast<int32_t*>(p);
    }
    sched_ = std::make_unique<Scheduler>(c);
  }
  ~MetaTensors() {
    for (int32_t* p : data_) {
      if (pinned_) {
        Check(neuronmem_client_host_free(Client(), p));
      } else {
        std::free(p);
      }
    }
  }
  // Restarts the sequences if the next step would be too long (call untimed, before each timed Update).
  void PrepareStep() {
    if (step_ < c_.max_tokens()) return;
    Restart();
  }
  void Restart() {
    step_ = 0;
    sched_ = std::make_unique<Scheduler>(c_);
  }
  // The host's per-step update: only the entries that change, in place.
  void Update() {
    std::string error;
    if (sched_->Advance(step_++, data_[0], data_[1], data_[2], data_[3], &error) < 0) {
      std::fprintf(stderr, "scheduler: %s\n", error.c_str());
      std::abort();
    }
  }
  int32_t* data(int i) const { return data_[i]; }
  size_t bytes(int i) const { return count_[i] * 4; }
  size_t total_bytes() const { return (count_[0] + count_[1] + count_[2] + count_[3]) * 4; }
  // dims of tensor i
  std::vector<int64_t> dims(int i) const {
    if (i == 0) return {c_.batch, c_.max_blocks};
    return {c_.batch};
  }

 private:
  Config c_;
  bool pinned_;
  int32_t* data_[4] = {};
  size_t count_[4] = {};
  std::unique_ptr<Scheduler> sched_;
  int step_ = 0;
};

// The clock ticks in 10 ns steps: steps that take tens of ns are also timed as one batch of consecutive
// steps (from a fresh start of the sequences, so no restart falls inside), reported as batch_mean_ns.
template <typename Step>
double BatchMeanNs(MetaTensors* meta, int max_tokens, Step step) {
  const int n = std::min(200, max_tokens);
  meta->Restart();
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) step();
  return Ns(t0, Clock::now()) / n;
}

// The figure ratios use: the p50, unless it is within a few clock ticks (under 200 ns), then the batch mean.
double Typical(double p50, double batch_mean_ns) { return p50 < 200 && batch_mean_ns >= 0 ? batch_mean_ns : p50; }

// p50/p99 of the samples; vs_memcpy = `typical` (batch mean or p50) / the memcpy floor's batch mean.
void ReportMeta(benchmark::State& state, const Config& c, const std::vector<double>& samples, size_t bytes,
                double batch_mean_ns = -1) {
  auto [p50, p99] = P50P99(samples);
  state.counters["p50_ns"] = p50;
  state.counters["p99_ns"] = p99;
  state.counters["meta_bytes"] = static_cast<double>(bytes);
  if (batch_mean_ns >= 0) state.counters["batch_mean_ns"] = batch_mean_ns;
  const double typical = Typical(p50, batch_mean_ns);
  auto it = Floor().find({c.batch, c.max_blocks});
  if (it != Floor().end() && it->second > 0) state.counters["vs_memcpy"] = typical / it->second;
}

// ---- Metadata handling ------------------------------------------------------------------------------

void BM_Meta_Floor_Memcpy(benchmark::State& state) {
  const Config c = MetaConfig(state);
  MetaTensors host(c, false);
  std::vector<std::vector<int32_t>> dst(4);
  for (int i = 0; i < 4; ++i) dst[static_cast<size_t>(i)].assign(host.bytes(i) / 4, 1);  // pre-faulted
  std::vector<double> samples;
  for (auto _ : state) {
    for (int s = 0; s < g_samples; ++s) {
      host.PrepareStep();
      auto t0 = Clock::now();
      host.Update();
      for (int i = 0; i < 4; ++i) std::memcpy(dst[static_cast<size_t>(i)].data(), host.data(i), host.bytes(i));
      benchmark::ClobberMemory();
      samples.push_back(Ns(t0, Clock::now()));
    }
  }
  const double mean = BatchMeanNs(&host, c.max_tokens(), [&] {
    host.Update();
    for (int i = 0; i < 4; ++i) std::memcpy(dst[static_cast<size_t>(i)].data(), host.data(i), host.bytes(i));
    benchmark::ClobberMemory();
  });
  Floor()[{c.batch, c.max_blocks}] = std::max(Typical(P50P99(samples).first, mean), 0.1);
  ReportMeta(state, c, samples, host.total_bytes(), mean);
}

void BM_Meta_PinnedHost_InPlace(benchmark::State& state) {
  const Config c = MetaConfig(state);
  MetaTensors pinned(c, true);
  // Wrapped once: the device reads these buffers where they lie.
  std::vector<neuronmem_buffer_t*> buffers(4);
  for (int i = 0; i < 4; ++i) {
    const std::vector<int64_t> dims = pinned.dims(i);
    const neuronmem_buffer_from_host_args_t a =
        S32Upload(pinned.data(i), dims, NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY, NEURONMEM_MEMORY_KIND_PINNED_HOST);
    Check(neuronmem_buffer_from_host(Client(), &a, &buffers[static_cast<size_t>(i)], nullptr, nullptr));
    bool zero_copy = false;
    Check(neuronmem_buffer_is_zero_copy(buffers[static_cast<size_t>(i)], &zero_copy));
    if (!zero_copy) {
      std::fprintf(stderr, "pinned_host metadata buffer %d is not zero-copy\n", i);
      std::abort();
    }
  }
  std::vector<double> samples;
  for (auto _ : state) {
    for (int s = 0; s < g_samples; ++s) {
      pinned.PrepareStep();
      auto t0 = Clock::now();
      pinned.Update();
      benchmark::ClobberMemory();
      samples.push_back(Ns(t0, Clock::now()));
    }
  }
  const double mean = BatchMeanNs(&pinned, c.max_tokens(), [&] {
    pinned.Update();
    benchmark::ClobberMemory();
  });
  ReportMeta(state, c, samples, pinned.total_bytes(), mean);
  for (neuronmem_buffer_t* b : buffers) neuronmem_buffer_destroy(b);
}

void BM_Meta_Upload_Batched(benchmark::State& state) {
  const Config c = MetaConfig(state);
  MetaTensors host(c, false);
  std::vector<std::vector<int64_t>> dims(4);
  std::vector<neuronmem_buffer_from_host_args_t> args(4);
  for (int i = 0; i < 4; ++i) {
    dims[static_cast<size_t>(i)] = host.dims(i);
    args[static_cast<size_t>(i)] =
        S32Upload(host.data(i), dims[static_cast<size_t>(i)], NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES,
                  NEURONMEM_MEMORY_KIND_DEVICE);
  }
  std::vector<double> samples;
  neuronmem_buffer_t* previous[4] = {};
  for (auto _ : state) {
    for (int s = 0; s < g_samples; ++s) {
      host.PrepareStep();
      neuronmem_buffer_t* out[4] = {};
      neuronmem_event_t* ready = nullptr;
      auto t0 = Clock::now();
      host.Update();
      Check(neuronmem_buffer_from_host_batch(Client(), args.data(), 4, out, &ready));
      bool done = false;
      Check(neuronmem_event_is_ready(ready, &done));
      if (!done) Check(neuronmem_event_wait(ready, -1));
      samples.push_back(Ns(t0, Clock::now()));
      neuronmem_event_destroy(ready);
      for (int i = 0; i < 4; ++i) {
        neuronmem_buffer_destroy(previous[i]);  // the last step's tensors, no longer read
        previous[i] = out[i];
      }
    }
  }
  for (neuronmem_buffer_t* b : previous) neuronmem_buffer_destroy(b);
  ReportMeta(state, c, samples, host.total_bytes());
}

void BM_Meta_Baseline_CondvarQueue(benchmark::State& state) {
  const Config c = MetaConfig(state);
  MetaTensors host(c, false);
  std::vector<std::vector<int32_t>> dst(4);
  for (int i = 0; i < 4; ++i) dst[static_cast<size_t>(i)].assign(host.bytes(i) / 4, 1);
  neuronmem::bench::CondvarCopyQueue q;  // what users hand-roll; one handoff per step for all four copies
  std::vector<double> samples;
  const int n = std::max(3, g_samples / 10);  // each handoff wakes a sleeping thread: ~100 us
  for (auto _ : state) {
    for (int s = 0; s < n; ++s) {
      host.PrepareStep();
      neuronmem::bench::CondvarCopyQueue::Copy copies[4];
      for (int i = 0; i < 4; ++i) copies[i] = {dst[static_cast<size_t>(i)].data(), host.data(i), host.bytes(i)};
      auto t0 = Clock::now();
      host.Update();
      q.CopyAndWait(copies, 4);
      samples.push_back(Ns(t0, Clock::now()));
    }
  }
  ReportMeta(state, c, samples, host.total_bytes());
}

// ---- Metadata handling in a decode loop: after a step -----------------------------------------------

// What the caller does between two steps' metadata handling: ~1 ms of work streaming over 4 MiB (a step
// reads weights and KV caches), during which a copy worker sleeps and the metadata leaves the L1/L2 caches.
void StepStandIn() {
  static std::vector<uint64_t> memory(512 * 1024, 1);
  const auto t0 = Clock::now();
  uint64_t sum = 0;
  while (Ns(t0, Clock::now()) < 1e6)
    for (size_t i = 0; i < memory.size(); i += 8) sum += memory[i]++;
  benchmark::DoNotOptimize(sum);
}

enum class MetaMode { kInPlace, kMemcpy, kQueue };

void MetaAfterStep(benchmark::State& state, MetaMode mode) {
  const Config c = MetaConfig(state);
  MetaTensors meta(c, mode == MetaMode::kInPlace);  // in place: the pinned-host arena, as the loop has it
  std::vector<std::vector<int32_t>> dst(4);
  neuronmem::bench::CondvarCopyQueue::Copy copies[4];
  for (int i = 0; i < 4; ++i) {
    dst[static_cast<size_t>(i)].assign(meta.bytes(i) / 4, 1);
    copies[i] = {dst[static_cast<size_t>(i)].data(), meta.data(i), meta.bytes(i)};
  }
  std::unique_ptr<neuronmem::bench::CondvarCopyQueue> q;
  if (mode == MetaMode::kQueue) q = std::make_unique<neuronmem::bench::CondvarCopyQueue>();
  std::vector<double> samples;
  const int n = std::max(3, g_samples / 10);  // each sample follows 1 ms of stand-in work
  for (auto _ : state) {
    for (int s = 0; s < n; ++s) {
      meta.PrepareStep();
      StepStandIn();
      auto t0 = Clock::now();
      meta.Update();
      if (mode == MetaMode::kMemcpy) {
        for (const auto& cp : copies) std::memcpy(cp.dst, cp.src, cp.n);
      } else if (mode == MetaMode::kQueue) {
        q->CopyAndWait(copies, 4);
      }
      benchmark::ClobberMemory();
      samples.push_back(Ns(t0, Clock::now()));
    }
  }
  auto [p50, p99] = P50P99(samples);
  state.counters["p50_ns"] = p50;
  state.counters["p99_ns"] = p99;
  state.counters["meta_bytes"] = static_cast<double>(meta.total_bytes());
}

void BM_Meta_PinnedHost_InPlace_AfterStep(benchmark::State& s) { MetaAfterStep(s, MetaMode::kInPlace); }
void BM_Meta_Floor_Memcpy_AfterStep(benchmark::State& s) { MetaAfterStep(s, MetaMode::kMemcpy); }
void BM_Meta_Baseline_CondvarQueue_AfterStep(benchmark::State& s) { MetaAfterStep(s, MetaMode::kQueue); }

// ---- End to end -------------------------------------------------------------------------------------

enum class StepMode { kNoMetadataUpdate, kPinnedInPlace, kSyncCopy };

void StepBenchmark(benchmark::State& state, StepMode mode,
                   neuronmem_decode::Attention attention = neuronmem_decode::Attention::kGather) {
  Config c = MetaConfig(state);
  c.metadata_in_device = mode == StepMode::kSyncCopy;
  c.attention = attention;
  neuronmem_decode::Runner runner;
  const std::string error =
      runner.Init(Client(), c, neuronmem_decode::GenerateModule(c), "decode_step.mlir", /*seed=*/42);
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  int32_t* meta[4] = {runner.metadata(0), runner.metadata(1), runner.metadata(2), runner.metadata(3)};
  const std::vector<int64_t> dims[4] = {{c.batch, c.max_blocks}, {c.batch}, {c.batch}, {c.batch}};
  auto sched = std::make_unique<Scheduler>(c);
  int step = 0;
  std::string sched_error;
  auto update = [&] {
    if (step == c.max_tokens()) {  // restart the sequences (the cache's old contents are masked out)
      sched = std::make_unique<Scheduler>(c);
      step = 0;
    }
    if (sched->Advance(step++, meta[0], meta[1], meta[2], meta[3], &sched_error) < 0) {
      std::fprintf(stderr, "scheduler: %s\n", sched_error.c_str());
      std::abort();
    }
  };
  update();  // step 0's metadata, so the no-update mode has valid rows
  std::vector<double> step_ns, meta_ns;
  const int n = std::max(3, g_samples / 100);
  for (auto _ : state) {
    for (int s = 0; s < n; ++s) {
      neuronmem_buffer_t* copies[4] = {};
      auto t0 = Clock::now();
      if (mode != StepMode::kNoMetadataUpdate) update();
      if (mode == StepMode::kSyncCopy) {
        for (int i = 0; i < 4; ++i) {
          const neuronmem_buffer_from_host_args_t a = S32Upload(
              meta[i], dims[i], NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL, NEURONMEM_MEMORY_KIND_DEVICE);
          neuronmem_event_t* ready = nullptr;
          Check(neuronmem_buffer_from_host(Client(), &a, &copies[i], &ready, nullptr));
          Check(neuronmem_event_wait(ready, -1));
          neuronmem_event_destroy(ready);
        }
      }
      auto t1 = Clock::now();
      const std::string e = runner.Step(mode == StepMode::kSyncCopy ? copies : nullptr, nullptr, nullptr);
      auto t2 = Clock::now();
      for (neuronmem_buffer_t* b : copies) neuronmem_buffer_destroy(b);
      if (!e.empty()) {
        state.SkipWithError(e.c_str());
        return;
      }
      step_ns.push_back(Ns(t0, t2));
      meta_ns.push_back(Ns(t0, t1));
    }
  }
  auto [p50, p99] = P50P99(step_ns);
  state.counters["p50_ns"] = p50;
  state.counters["p99_ns"] = p99;
  const double meta_p50 = P50P99(meta_ns).first;
  state.counters["meta_p50_ns"] = meta_p50;
  state.counters["meta_share"] = p50 > 0 ? meta_p50 / p50 : 0;
}

void BM_Step_NoMetadataUpdate(benchmark::State& s) { StepBenchmark(s, StepMode::kNoMetadataUpdate); }
void BM_Step_PinnedHost_InPlace(benchmark::State& s) { StepBenchmark(s, StepMode::kPinnedInPlace); }
void BM_Step_SyncCopy(benchmark::State& s) { StepBenchmark(s, StepMode::kSyncCopy); }
void BM_Step_Kernel_NoMetadataUpdate(benchmark::State& s) {
  StepBenchmark(s, StepMode::kNoMetadataUpdate, neuronmem_decode::Attention::kKernel);
}
void BM_Step_Kernel_PinnedHost_InPlace(benchmark::State& s) {
  StepBenchmark(s, StepMode::kPinnedInPlace, neuronmem_decode::Attention::kKernel);
}

#define META_SIZES                                \
  ->ArgNames({"batch", "max_blocks"})             \
      ->ArgsProduct({{1, 8, 64, 256}, {16, 256}}) \
      ->Iterations(1)                             \
      ->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_Meta_Floor_Memcpy) META_SIZES;
BENCHMARK(BM_Meta_PinnedHost_InPlace) META_SIZES;
BENCHMARK(BM_Meta_Upload_Batched) META_SIZES;
BENCHMARK(BM_Meta_Baseline_CondvarQueue) META_SIZES;
BENCHMARK(BM_Meta_PinnedHost_InPlace_AfterStep) META_SIZES;
BENCHMARK(BM_Meta_Floor_Memcpy_AfterStep) META_SIZES;
BENCHMARK(BM_Meta_Baseline_CondvarQueue_AfterStep) META_SIZES;
// End to end at max_blocks 16 (attention over 256 token slots), and at batch 64 with max_blocks 256 (the goal's
// batch; the gather variant then gathers 16x more, the kernel reads only the live blocks).
#define STEP_SIZES                           \
  ->ArgNames({"batch", "max_blocks"})        \
      ->ArgsProduct({{1, 8, 64, 256}, {16}}) \
      ->Args({64, 256})                      \
      ->Iterations(1)                        \
      ->Unit(benchmark::kMillisecond)
BENCHMARK(BM_Step_NoMetadataUpdate) STEP_SIZES;
BENCHMARK(BM_Step_PinnedHost_InPlace) STEP_SIZES;
BENCHMARK(BM_Step_SyncCopy) STEP_SIZES;
BENCHMARK(BM_Step_Kernel_NoMetadataUpdate) STEP_SIZES;
BENCHMARK(BM_Step_Kernel_PinnedHost_InPlace) STEP_SIZES;

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--samples=", 10) == 0) {
      g_samples = std::max(1, std::atoi(argv[i] + 10));
    } else {
      rest.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
