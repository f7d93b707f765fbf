// Transfer latency and bandwidth, side by side with the floors measured in the same run.
//
// Small transfers: submit-to-ready latency per operation (p50, p99 in ns; clock overhead subtracted),
// against (a) memcpy into a pre-faulted buffer (the floor) and (b) a hand-rolled copy queue (one worker
// thread, mutex + condition variable), and the ratio of each case's p50 to the floor's.
// Large transfers: GB/s against the best of single-thread memcpy, single-thread streaming copy and
// two-thread streaming copy, measured in the same run.
#include <neuronmem/neuronmem.h>

#include "common/transfer_helpers.h"

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "condvar_queue.h"
#include "copy/fast_copy.h"
#include "latency.h"

namespace {

using neuronmem::bench::Check;
using neuronmem::bench::Clock;
using neuronmem::bench::Summarize;

neuronmem_client_t* Client() {
  static neuronmem_client_t* c = neuronmem::bench::CreateClient(2, 640ull << 20, 128ull << 20);
  return c;
}

neuronmem_memory_t* Mem(int id) {
  neuronmem_memory_t* m = nullptr;
  Check(neuronmem_client_lookup_memory(Client(), id, &m));
  return m;
}

// Floors by size, filled by the floor benchmarks (registered first, so they run first).
std::map<size_t, double>& SmallFloor() {
  static std::map<size_t, double> m;
  return m;
}
std::map<size_t, double>& LargeFloorGBs() {
  static std::map<size_t, double> m;
  return m;
}

void Report(benchmark::State& state, std::vector<double>& samples, size_t size) {
  neuronmem::bench::Percentiles p = Summarize(samples);
  state.counters["p50_ns"] = p.p50;
  state.counters["p99_ns"] = p.p99;
  auto it = SmallFloor().find(size);
  if (it != SmallFloor().end() && it->second > 0) state.counters["p50_vs_floor"] = p.p50 / it->second;
}

constexpr int kSamples = 20000;

// ---- Small: floors and baselines --------------------------------------------------------------------

void BM_Floor_Memcpy(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(size, 1), dst(size, 0);
  std::vector<double> samples;
  samples.reserve(kSamples);
  for (auto _ : state) {
    for (int i = 0; i < kSamples; ++i) {
      src[0] = static_cast<uint8_t>(i);
      auto t0 = Clock::now();
      std::memcpy(dst.data(), src.data(), size);
      benchmark::ClobberMemory();
      auto t1 = Clock::now();
      samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
  }
  // The clock ticks in 10 ns steps: take the floor as the mean of a batch of back-to-back copies.
  constexpr int kBatch = 1000;
  auto t0 = Clock::now();
  for (int i = 0; i < kBatch; ++i) {
    src[0] = static_cast<uint8_t>(i);
    std::memcpy(dst.data(), src.data(), size);
    benchmark::ClobberMemory();
  }
  auto t1 = Clock::now();
  const double batch_mean = std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch;
  SmallFloor()[size] = std::max(batch_mean, 0.1);
  state.counters["batch_mean_ns"] = batch_mean;
  Report(state, samples, size);
}

void BM_Baseline_NaiveQueue(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(size, 1), dst(size, 0);
  neuronmem::bench::CondvarCopyQueue q;  // what a user would hand-roll
  std::vector<double> samples;
  for (auto _ : state) {
    for (int i = 0; i < kSamples / 10; ++i) {
      auto t0 = Clock::now();
      const neuronmem::bench::CondvarCopyQueue::Copy copy = {dst.data(), src.data(), size};
      q.CopyAndWait(&copy, 1);
      auto t1 = Clock::now();
      samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
  }
  Report(state, samples, size);
}

// ---- Small: libneuronmem ----------------------------------------------------------------------------

// Upload = neuronmem_buffer_from_host + wait for ready; the buffer is destroyed outside the timed region.
void SmallUpload(benchmark::State& state, int memory_id, neuronmem_host_buffer_semantics_t semantics,
                 bool pinned_source) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> heap_src(size, 7);
  void* src = heap_src.data();
  void* pinned = nullptr;
  if (pinned_source) {
    Check(neuronmem_client_host_allocate(Client(), size, 0, &pinned));
    std::memset(pinned, 7, size);
    src = pinned;
  }
  int64_t dims[1] = {static_cast<int64_t>(size)};
  neuronmem_buffer_from_host_args_t a{};
  a.struct_size = sizeof a;
  a.data = src;
  a.element_type = NEURONMEM_ELEMENT_TYPE_U8;
  a.host_buffer_semantics = semantics;
  a.dims = dims;
  a.num_dims = 1;
  a.memory = Mem(memory_id);
  std::vector<double> samples;
  samples.reserve(kSamples);
  bool zero_copy = false;
  for (auto _ : state) {
    for (int i = 0; i < kSamples; ++i) {
      neuronmem_buffer_t* b = nullptr;
      neuronmem_event_t* e = nullptr;
      auto t0 = Clock::now();
      Check(neuronmem_buffer_from_host(Client(), &a, &b, &e, nullptr));
      bool ready = false;
      Check(neuronmem_event_is_ready(e, &ready));
      if (!ready) Check(neuronmem_event_wait(e, -1));
      auto t1 = Clock::now();
      samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
      Check(neuronmem_buffer_is_zero_copy(b, &zero_copy));
      neuronmem_event_destroy(e);
      neuronmem_buffer_destroy(b);
    }
  }
  state.counters["zero_copy"] = zero_copy;
  Report(state, samples, size);
  if (pinned) Check(neuronmem_client_host_free(Client(), pinned));
}

void BM_Upload_Device(benchmark::State& s) {
  SmallUpload(s, 0, NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES, false);
}
void BM_Upload_PinnedHost_Copy(benchmark::State& s) {
  SmallUpload(s, 1, NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES, false);
}
void BM_Upload_PinnedHost_ZeroCopy(benchmark::State& s) {
  SmallUpload(s, 1, NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY, true);
}

// The decode step's update: write one block-table row in place into a device-resident table.
void BM_Write_BlockTableRow_Device(benchmark::State& state) {
  const size_t row_bytes = static_cast<size_t>(state.range(0));
  const int64_t rows = 256;
  int64_t dims[2] = {rows, static_cast<int64_t>(row_bytes / 4)};
  neuronmem_buffer_t* table = nullptr;
  Check(neuronmem_test::Allocate(Client(), Mem(0), NEURONMEM_ELEMENT_TYPE_S32, dims, 2, &table));
  std::vector<int32_t> row(row_bytes / 4, 3);
  std::vector<double> samples;
  samples.reserve(kSamples);
  for (auto _ : state) {
    for (int i = 0; i < kSamples; ++i) {
      row[0] = i;
      neuronmem_event_t* e = nullptr;
      auto t0 = Clock::now();
      Check(neuronmem_test::Write(table, static_cast<uint64_t>(i % rows) * row_bytes, row.data(), row_bytes, nullptr, 0,
                                  &e));
      bool ready = false;
      Check(neuronmem_event_is_ready(e, &ready));
      if (!ready) Check(neuronmem_event_wait(e, -1));
      auto t1 = Clock::now();
      samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
      neuronmem_event_destroy(e);
    }
  }
  Report(state, samples, row_bytes);
  neuronmem_buffer_destroy(table);
}

// ---- Large: floors ------------------------------------------------------------------------------------

struct Pair {
  std::vector<uint8_t> src, dst;
  explicit Pair(size_t n) : src(n, 1), dst(n, 2) {}
};

template <typename Fn>
double BestGBs(size_t bytes, int reps, Fn fn) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    fn();
    auto t1 = Clock::now();
    best = std::max(best, bytes / std::chrono::duration<double>(t1 - t0).count() / 1e9);
  }
  return best;
}

void BM_Floor_LargeCopy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) << 20;
  Pair p(n);
  const int reps = n >= (256u << 20) ? 3 : 6;
  double memcpy1 = 0, stream1 = 0, stream2 = 0;
  for (auto _ : state) {
    memcpy1 = BestGBs(n, reps, [&] { std::memcpy(p.dst.data(), p.src.data(), n); });
    stream1 = BestGBs(n, reps, [&] { neuronmem::copy::StreamingCopy(p.dst.data(), p.src.data(), n); });
    stream2 = BestGBs(n, reps, [&] {
      std::thread t([&] { neuronmem::copy::StreamingCopy(p.dst.data() + n / 2, p.src.data() + n / 2, n - n / 2); });
      neuronmem::copy::StreamingCopy(p.dst.data(), p.src.data(), n / 2);
      t.join();
    });
  }
  const double best = std::max({memcpy1, stream1, stream2});
  LargeFloorGBs()[n] = best;
  state.counters["memcpy_1t_GBs"] = memcpy1;
  state.counters["stream_1t_GBs"] = stream1;
  state.counters["stream_2t_GBs"] = stream2;
  state.counters["floor_GBs"] = best;
}

void ReportLarge(benchmark::State& state, size_t n, double gbs) {
  state.counters["GBs"] = gbs;
  auto it = LargeFloorGBs().find(n);
  if (it != LargeFloorGBs().end()) state.counters["vs_floor"] = gbs / it->second;
}

// ---- Large: libneuronmem ----------------------------------------------------------------------------

void BM_Large_HostToDevice(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) << 20;
  std::vector<uint8_t> src(n, 5);
  int64_t dims[1] = {static_cast<int64_t>(n)};
  neuronmem_buffer_t* b = nullptr;
  Check(neuronmem_test::Allocate(Client(), Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  double gbs = 0;
  for (auto _ : state) {
    gbs = BestGBs(n, n >= (256u << 20) ? 3 : 6,
                  [&] { Check(neuronmem_test::Write(b, 0, src.data(), n, nullptr, 0, nullptr)); });
  }
  ReportLarge(state, n, gbs);
  neuronmem_buffer_destroy(b);
}

void BM_Large_DeviceToHost(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) << 20;
  std::vector<uint8_t> dst(n, 5);
  int64_t dims[1] = {static_cast<int64_t>(n)};
  neuronmem_buffer_t* b = nullptr;
  Check(neuronmem_test::Allocate(Client(), Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  double gbs = 0;
  for (auto _ : state) {
    gbs = BestGBs(n, n >= (256u << 20) ? 3 : 6,
                  [&] { Check(neuronmem_test::Read(b, 0, dst.data(), n, nullptr, 0, nullptr)); });
  }
  ReportLarge(state, n, gbs);
  neuronmem_buffer_destroy(b);
}

void BM_Large_CoreToCore(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) << 20;
  int64_t dims[1] = {static_cast<int64_t>(n)};
  neuronmem_buffer_t* b = nullptr;
  Check(neuronmem_test::Allocate(Client(), Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  double gbs = 0;
  for (auto _ : state) {
    gbs = BestGBs(n, n >= (256u << 20) ? 3 : 6, [&] {
      neuronmem_buffer_t* c = nullptr;
      neuronmem_event_t* e = nullptr;
      Check(neuronmem_test::CopyToMemory(b, Mem(2), nullptr, 0, &c, &e));
      Check(neuronmem_event_wait(e, -1));
      neuronmem_event_destroy(e);
      neuronmem_buffer_destroy(c);
    });
  }
  ReportLarge(state, n, gbs);
  neuronmem_buffer_destroy(b);
}

// ---- File loads -------------------------------------------------------------------------------------

void BM_FileLoad_PageCache(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) << 20;
  char path[] = "/tmp/neuronmem-bench-XXXXXX";
  int fd = mkstemp(path);
  std::vector<uint8_t> data(n, 9);
  if (fd < 0 || write(fd, data.data(), n) != static_cast<ssize_t>(n)) {
    state.SkipWithError("cannot write the benchmark file");
    return;
  }
  int64_t dims[1] = {static_cast<int64_t>(n)};
  neuronmem_buffer_t* b = nullptr;
  Check(neuronmem_test::Allocate(Client(), Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  double gbs = 0, pread_gbs = 0;
  for (auto _ : state) {
    pread_gbs = BestGBs(n, 5, [&] {
      size_t done = 0;
      while (done < n) {
        ssize_t r = pread(fd, data.data() + done, std::min<size_t>(8u << 20, n - done), static_cast<off_t>(done));
        if (r <= 0) break;
        done += static_cast<size_t>(r);
      }
    });
    gbs = BestGBs(n, 5, [&] { Check(neuronmem_test::LoadFile(b, path, 0, n, 0, nullptr, 0, nullptr)); });
  }
  state.counters["GBs"] = gbs;
  state.counters["pread_1t_GBs"] = pread_gbs;
  state.counters["vs_pread"] = gbs / pread_gbs;
  neuronmem_buffer_destroy(b);
  close(fd);
  unlink(path);
}

#define SMALL_SIZES ->Arg(64)->Arg(256)->Arg(1024)->Arg(4096)->Arg(65536)->Iterations(1)->Unit(benchmark::kNanosecond)
BENCHMARK(BM_Floor_Memcpy) SMALL_SIZES;
BENCHMARK(BM_Baseline_NaiveQueue) SMALL_SIZES;
BENCHMARK(BM_Upload_Device) SMALL_SIZES;
BENCHMARK(BM_Upload_PinnedHost_Copy) SMALL_SIZES;
BENCHMARK(BM_Upload_PinnedHost_ZeroCopy) SMALL_SIZES;
BENCHMARK(BM_Write_BlockTableRow_Device)->Arg(64)->Arg(256)->Arg(1024)->Iterations(1);
#define LARGE_SIZES ->Arg(1)->Arg(16)->Arg(64)->Arg(256)->Iterations(1)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_Floor_LargeCopy) LARGE_SIZES;
BENCHMARK(BM_Large_HostToDevice) LARGE_SIZES;
BENCHMARK(BM_Large_DeviceToHost) LARGE_SIZES;
BENCHMARK(BM_Large_CoreToCore) LARGE_SIZES;
BENCHMARK(BM_FileLoad_PageCache)->Arg(64)->Arg(256)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
