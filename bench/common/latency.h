// Shared by the benchmarks that time single operations through the public API: abort on a failed call, a
// client with given arena sizes, and p50/p99 of per-operation samples with the clock's own cost subtracted.
#pragma once

#include <neuronmem/neuronmem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace neuronmem::bench {

using Clock = std::chrono::steady_clock;

inline double Ns(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

// A benchmark cannot go on after a failed call: print it and abort.
inline void Check(neuronmem_status_t* s) {
  if (s) {
    std::fprintf(stderr, "neuronmem error: %s\n", neuronmem_status_message(s).data);
    std::abort();
  }
}

inline neuronmem_client_t* CreateClient(uint32_t cores, uint64_t device_bytes_per_core, uint64_t pinned_host_bytes) {
  neuronmem_client_options_t o{};
  o.struct_size = sizeof o;
  o.num_cores = cores;
  o.device_bytes_per_core = device_bytes_per_core;
  o.pinned_host_bytes = pinned_host_bytes;
  neuronmem_client_t* client = nullptr;
  Check(neuronmem_client_create(&o, &client));
  return client;
}

// An f32 buffer of `dims` holding `data` in `memory`, defined once it returns.
inline neuronmem_buffer_t* UploadF32(neuronmem_client_t* client, neuronmem_memory_t* memory, const float* data,
                                     const std::vector<int64_t>& dims) {
  neuronmem_buffer_from_host_args_t a{};
  a.struct_size = sizeof a;
  a.data = data;
  a.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  a.dims = dims.data();
  a.num_dims = dims.size();
  a.memory = memory;
  neuronmem_buffer_t* b = nullptr;
  neuronmem_event_t* ready = nullptr;
  Check(neuronmem_buffer_from_host(client, &a, &b, &ready, nullptr));
  if (ready) {
    Check(neuronmem_event_wait(ready, -1));
    neuronmem_event_destroy(ready);
  }
  return b;
}

// The median cost of reading the clock twice (measured once per process).
inline double ClockOverheadNs() {
  static double overhead = [] {
    std::vector<double> v(20000);
    for (auto& x : v) {
      auto t0 = Clock::now();
      auto t1 = Clock::now();
      x = Ns(t0, t1);
    }
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }();
  return overhead;
}

struct Percentiles {
  double p50, p99;
};
// p50 and p99 of `ns` (sorted in place), each less the clock overhead.
inline Percentiles Summarize(std::vector<double>& ns) {
  if (ns.empty()) return {0, 0};
  std::sort(ns.begin(), ns.end());
  const double o = ClockOverheadNs();
  auto at = [&](double q) { return std::max(0.0, ns[static_cast<size_t>(q * (ns.size() - 1))] - o); };
  return {at(0.50), at(0.99)};
}

}  // namespace neuronmem::bench
