// An sdy.manual_computation whose body communicates (psum over the manual axis, as jax.lax.psum in a shard_map),
// one neuronmem_executable_execute on core 0, submit to done, through the public C API:
//   Manual_Threads/N   a client of one core: each of the N devices on a std::thread started for the run (the
//                      interpreter's own path, what every client did before issue 26);
//   Manual_Cores/N     a client of two cores: device 0 on the executing thread, device 1 on core 1's worker
//                      (exec/core_workers.h), devices beyond the cores on threads of their own.
// The operand is f32[N * 64, 64] split along dim 0 (a 64x64 block per device), all_reduce over every device.
// Counters: p50_ns, p99_ns per execution (clock overhead subtracted), vs_threads (this p50 / Manual_Threads/N's,
// measured earlier in the run).
#include <neuronmem/neuronmem.h>

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "latency.h"

namespace {

using neuronmem::bench::Check;
using neuronmem::bench::Clock;
using neuronmem::bench::Ns;

std::string ManualPsum(int n) {
  const std::string g = "tensor<" + std::to_string(64 * n) + "x64xf32>", l = "tensor<64x64xf32>";
  std::string groups = "[[";
  for (int d = 0; d < n; ++d) groups += (d ? ", " : "") + std::to_string(d);
  return "module @m {\n  sdy.mesh @mesh = <[\"x\"=" + std::to_string(n) + "]>\n  func.func @main(%arg0: " + g +
         ") -> " + g + " {\n    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"x\"}, {}]>]\n" +
         "        out_shardings=[<@mesh, [{\"x\"}, {}]>] manual_axes={\"x\"} (%a: " + l + ") {\n" +
         "      %s = \"stablehlo.all_reduce\"(%a) ({\n        ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n" +
         "          %t = stablehlo.add %x, %y : tensor<f32>\n          stablehlo.return %t : tensor<f32>\n" +
         "      }) {replica_groups = dense<" + groups + "]> : tensor<1x" + std::to_string(n) +
         "xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids} : (" + l +
         ") -> " + l + "\n      sdy.return %s : " + l + "\n    } : (" + g + ") -> " + g + "\n    return %1 : " + g +
         "\n  }\n}\n";
}

neuronmem_client_t* Client(uint32_t cores) {
  static std::map<uint32_t, neuronmem_client_t*> clients;
  neuronmem_client_t*& c = clients[cores];
  if (!c) c = neuronmem::bench::CreateClient(cores, 64ull << 20, 32ull << 20);
  return c;
}

std::map<int, double>& ThreadsP50() {
  static std::map<int, double> p50;
  return p50;
}

void Run(benchmark::State& state, uint32_t cores) {
  const int n = static_cast<int>(state.range(0));
  neuronmem_client_t* client = Client(cores);
  neuronmem_device_t* const* devices = nullptr;
  size_t num_devices = 0;
  Check(neuronmem_client_devices(client, &devices, &num_devices));
  const std::string text = ManualPsum(n);
  neuronmem_compile_options_t o{};
  o.struct_size = sizeof o;
  neuronmem_executable_t* exe = nullptr;
  Check(neuronmem_executable_compile_text(client, text.data(), text.size(), &o, &exe));
  neuronmem_memory_t* mem = nullptr;
  Check(neuronmem_device_memory_of_kind(devices[0], NEURONMEM_MEMORY_KIND_DEVICE, &mem));
  const std::vector<float> data(static_cast<size_t>(64 * 64 * n), 1.0f);
  neuronmem_buffer_t* arg = neuronmem::bench::UploadF32(client, mem, data.data(), {64 * n, 64});
  neuronmem_execute_args_t a{};
  a.struct_size = sizeof a;
  a.executable = exe;
  a.device = devices[0];
  a.arguments = &arg;
  a.num_arguments = 1;
  std::vector<double> samples;
  for (auto _ : state) {
    neuronmem_buffer_t* result = nullptr;
    neuronmem_event_t* done = nullptr;
    const auto t0 = Clock::now();
    Check(neuronmem_executable_execute(&a, &result, &done, nullptr));
    Check(neuronmem_event_wait(done, -1));
    samples.push_back(Ns(t0, Clock::now()));
    neuronmem_event_destroy(done);
    neuronmem_buffer_destroy(result);
  }
  const neuronmem::bench::Percentiles p = neuronmem::bench::Summarize(samples);
  state.counters["p50_ns"] = p.p50;
  state.counters["p99_ns"] = p.p99;
  if (cores == 1) ThreadsP50()[n] = p.p50;
  if (cores > 1 && ThreadsP50()[n] > 0) state.counters["vs_threads"] = p.p50 / ThreadsP50()[n];
  neuronmem_buffer_destroy(arg);
  neuronmem_executable_destroy(exe);
}

void BM_Manual_Threads(benchmark::State& state) { Run(state, 1); }
void BM_Manual_Cores(benchmark::State& state) { Run(state, 2); }

BENCHMARK(BM_Manual_Threads)->Arg(2)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Manual_Cores)->Arg(2)->Arg(4)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
