// The PJRT plugin against the C API in one run: the plugin is meant as a thin layer (goal: at most 1.1x the
// C API's p50). Each pair times the same operation on the same kind of client:
//   Upload/<bytes>      C API neuronmem_buffer_from_host (+ its ready event waited, the buffer destroyed) vs
//                       PJRT_Client_BufferFromHostBuffer (+ done_with_host_buffer and the ready event awaited,
//                       the buffer destroyed); f32, 64 B .. 64 KiB, to device memory;
//   Execute/<ops>       submit and wait for completion of a program of 1 or 64 element-wise ops on f32[16]
//                       (C API neuronmem_executable_execute vs PJRT_LoadedExecutable_Execute), results destroyed;
//   ToHost/<bytes>      C API neuronmem_buffer_read (waited) vs PJRT_Buffer_ToHostBuffer (awaited).
// Counters: p50_ns, p99_ns; the PJRT rows add vs_capi (their p50 / the C API row's p50, same argument).
//
//   bench_pjrt PLUGIN [benchmark flags]   (or NEURONMEM_PJRT_PLUGIN)
#include <neuronmem/neuronmem.h>

#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "latency.h"
#include "pjrt/pjrt_helpers.h"

namespace {

using neuronmem::bench::Check;
using neuronmem::bench::Clock;
using neuronmem::bench::Ns;
using neuronmem::bench::Summarize;
using neuronmem_pjrt_test::Take;

const PJRT_Api* g_api = nullptr;
std::map<std::string, double> g_capi_p50;  // "Upload/64" -> p50 of the C API row

void Ok(PJRT_Error* e) {
  if (!e) return;
  std::fprintf(stderr, "PJRT error: %s\n", Take(g_api, e).message.c_str());
  std::abort();
}

void Report(benchmark::State& state, std::vector<double>& samples, const std::string& key, bool pjrt) {
  const auto p = Summarize(samples);
  state.counters["p50_ns"] = p.p50;
  state.counters["p99_ns"] = p.p99;
  if (!pjrt) {
    g_capi_p50[key] = p.p50;
  } else if (g_capi_p50.count(key) && g_capi_p50[key] > 0) {
    state.counters["vs_capi"] = p.p50 / g_capi_p50[key];
  }
}

std::string Program(int ops) {
  std::string s =
      "func.func @main(%a: tensor<16xf32>) -> tensor<16xf32> {\n  %v0 = stablehlo.add %a, %a : tensor<16xf32>\n";
  for (int i = 1; i < ops; ++i)
    s += "  %v" + std::to_string(i) + " = stablehlo.add %v" + std::to_string(i - 1) + ", %a : tensor<16xf32>\n";
  s += "  return %v" + std::to_string(ops - 1) + " : tensor<16xf32>\n}\n";
  return s;
}

// ---- C API

neuronmem_client_t* CClient() {
  static neuronmem_client_t* c = neuronmem::bench::CreateClient(1, 64ull << 20, 64ull << 20);
  return c;
}
neuronmem_device_t* CDevice() {
  neuronmem_device_t* d = nullptr;
  Check(neuronmem_client_lookup_device(CClient(), 0, &d));
  return d;
}
neuronmem_buffer_t* CUpload(const std::vector<float>& v) {
  neuronmem_memory_t* m = nullptr;
  Check(neuronmem_device_memory_of_kind(CDevice(), NEURONMEM_MEMORY_KIND_DEVICE, &m));
  const int64_t dims[1] = {static_cast<int64_t>(v.size())};
  neuronmem_buffer_from_host_args_t a{};
  a.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
  a.data = v.data();
  a.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  a.dims = dims;
  a.num_dims = 1;
  a.memory = m;
  neuronmem_buffer_t* b = nullptr;
  neuronmem_event_t* ready = nullptr;
  Check(neuronmem_buffer_from_host(CClient(), &a, &b, &ready, nullptr));
  Check(neuronmem_event_wait(ready, -1));
  neuronmem_event_destroy(ready);
  return b;
}

void BM_CApi_Upload(benchmark::State& state) {
  const std::vector<float> v(static_cast<size_t>(state.range(0)) / 4, 1.0f);
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    neuronmem_buffer_destroy(CUpload(v));
    samples.push_back(Ns(t0, Clock::now()));
  }
  Report(state, samples, "Upload/" + std::to_string(state.range(0)), false);
}

void BM_CApi_Execute(benchmark::State& state) {
  const std::string text = Program(static_cast<int>(state.range(0)));
  neuronmem_executable_t* e = nullptr;
  Check(neuronmem_executable_compile_text(CClient(), text.data(), text.size(), nullptr, &e));
  neuronmem_buffer_t* arg = CUpload(std::vector<float>(16, 1.0f));
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    neuronmem_execute_args_t a{};
    a.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
    a.executable = e;
    a.device = CDevice();
    a.arguments = &arg;
    a.num_arguments = 1;
    neuronmem_buffer_t* out = nullptr;
    neuronmem_event_t* done = nullptr;
    Check(neuronmem_executable_execute(&a, &out, &done, nullptr));
    Check(neuronmem_event_wait(done, -1));
    neuronmem_event_destroy(done);
    neuronmem_buffer_destroy(out);
    samples.push_back(Ns(t0, Clock::now()));
  }
  neuronmem_buffer_destroy(arg);
  neuronmem_executable_destroy(e);
  Report(state, samples, "Execute/" + std::to_string(state.range(0)), false);
}

void BM_CApi_ToHost(benchmark::State& state) {
  std::vector<float> v(static_cast<size_t>(state.range(0)) / 4, 1.0f);
  neuronmem_buffer_t* b = CUpload(v);
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    neuronmem_buffer_read_args_t r{};
    r.struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE;
    r.buffer = b;
    r.dst = v.data();
    r.size = v.size() * 4;
    Check(neuronmem_buffer_read(&r, nullptr));
    samples.push_back(Ns(t0, Clock::now()));
  }
  neuronmem_buffer_destroy(b);
  Report(state, samples, "ToHost/" + std::to_string(state.range(0)), false);
}

// ---- PJRT

PJRT_Client* PClient() {
  static PJRT_Client* c = [] {
    const PJRT_NamedValue o[3] = {neuronmem_pjrt_test::IntOption("num_cores", 1),
                                  neuronmem_pjrt_test::IntOption("device_bytes_per_core", 64 << 20),
                                  neuronmem_pjrt_test::IntOption("pinned_host_bytes", 64 << 20)};
    auto a = NM_ARGS(PJRT_Client_Create_Args);
    a.create_options = o;
    a.num_options = 3;
    Ok(g_api->PJRT_Client_Create(&a));
    return a.client;
  }();
  return c;
}
PJRT_Device* PDevice() {
  auto a = NM_ARGS(PJRT_Client_LookupDevice_Args);
  a.client = PClient();
  a.id = 0;
  Ok(g_api->PJRT_Client_LookupDevice(&a));
  return a.device;
}
void Await(PJRT_Event* e) {
  const neuronmem_pjrt_test::Outcome o = neuronmem_pjrt_test::AwaitAndDestroy(g_api, e);
  if (o.code != PJRT_Error_Code_OK) {
    std::fprintf(stderr, "PJRT event failed: %s\n", o.message.c_str());
    std::abort();
  }
}
void Destroy(PJRT_Buffer* b) { neuronmem_pjrt_test::DestroyBuffer(g_api, b); }
PJRT_Buffer* PUpload(const std::vector<float>& v, PJRT_Device* device) {
  const int64_t dims[1] = {static_cast<int64_t>(v.size())};
  auto a = NM_ARGS(PJRT_Client_BufferFromHostBuffer_Args);
  a.client = PClient();
  a.data = v.data();
  a.type = PJRT_Buffer_Type_F32;
  a.dims = dims;
  a.num_dims = 1;
  a.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  a.device = device;
  Ok(g_api->PJRT_Client_BufferFromHostBuffer(&a));
  Await(a.done_with_host_buffer);
  auto r = NM_ARGS(PJRT_Buffer_ReadyEvent_Args);
  r.buffer = a.buffer;
  Ok(g_api->PJRT_Buffer_ReadyEvent(&r));
  Await(r.event);
  return a.buffer;
}

void BM_Pjrt_Upload(benchmark::State& state) {
  const std::vector<float> v(static_cast<size_t>(state.range(0)) / 4, 1.0f);
  PJRT_Device* device = PDevice();
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    Destroy(PUpload(v, device));
    samples.push_back(Ns(t0, Clock::now()));
  }
  Report(state, samples, "Upload/" + std::to_string(state.range(0)), true);
}

void BM_Pjrt_Execute(benchmark::State& state) {
  std::string text = Program(static_cast<int>(state.range(0)));
  auto p = NM_ARGS(PJRT_Program);
  p.code = text.data();
  p.code_size = text.size();
  p.format = "mlir";
  p.format_size = 4;
  auto c = NM_ARGS(PJRT_Client_Compile_Args);
  c.client = PClient();
  c.program = &p;
  Ok(g_api->PJRT_Client_Compile(&c));
  PJRT_Buffer* arg = PUpload(std::vector<float>(16, 1.0f), PDevice());
  PJRT_Buffer* const args[1] = {arg};
  PJRT_Buffer* const* lists[1] = {args};
  std::vector<double> samples;
  auto o = NM_ARGS(PJRT_ExecuteOptions);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    PJRT_Buffer* out[1] = {nullptr};
    PJRT_Buffer** outs[1] = {out};
    PJRT_Event* done[1] = {nullptr};
    auto x = NM_ARGS(PJRT_LoadedExecutable_Execute_Args);
    x.executable = c.executable;
    x.options = &o;
    x.argument_lists = lists;
    x.num_devices = 1;
    x.num_args = 1;
    x.output_lists = outs;
    x.device_complete_events = done;
    Ok(g_api->PJRT_LoadedExecutable_Execute(&x));
    Await(done[0]);
    Destroy(out[0]);
    samples.push_back(Ns(t0, Clock::now()));
  }
  Destroy(arg);
  auto d = NM_ARGS(PJRT_LoadedExecutable_Destroy_Args);
  d.executable = c.executable;
  Ok(g_api->PJRT_LoadedExecutable_Destroy(&d));
  Report(state, samples, "Execute/" + std::to_string(state.range(0)), true);
}

void BM_Pjrt_ToHost(benchmark::State& state) {
  std::vector<float> v(static_cast<size_t>(state.range(0)) / 4, 1.0f);
  PJRT_Buffer* b = PUpload(v, PDevice());
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto a = NM_ARGS(PJRT_Buffer_ToHostBuffer_Args);
    a.src = b;
    a.dst = v.data();
    a.dst_size = v.size() * 4;
    Ok(g_api->PJRT_Buffer_ToHostBuffer(&a));
    Await(a.event);
    samples.push_back(Ns(t0, Clock::now()));
  }
  Destroy(b);
  Report(state, samples, "ToHost/" + std::to_string(state.range(0)), true);
}

}  // namespace

// C API rows first: the PJRT rows divide by them.
BENCHMARK(BM_CApi_Upload)->RangeMultiplier(8)->Range(64, 64 << 10);
BENCHMARK(BM_Pjrt_Upload)->RangeMultiplier(8)->Range(64, 64 << 10);
BENCHMARK(BM_CApi_Execute)->Arg(1)->Arg(64);
BENCHMARK(BM_Pjrt_Execute)->Arg(1)->Arg(64);
BENCHMARK(BM_CApi_ToHost)->RangeMultiplier(8)->Range(64, 64 << 10);
BENCHMARK(BM_Pjrt_ToHost)->RangeMultiplier(8)->Range(64, 64 << 10);

int main(int argc, char** argv) {
  const char* plugin = nullptr;
  if (argc > 1 && argv[1][0] != '-') {
    plugin = argv[1];
    for (int i = 1; i + 1 < argc; ++i) argv[i] = argv[i + 1];
    --argc;
  }
  g_api = neuronmem_pjrt_test::LoadPlugin(plugin);
  if (!g_api) return 1;
  // Both clients exist, and each path has uploaded once, before anything is timed.
  neuronmem_buffer_destroy(CUpload(std::vector<float>(16, 1.0f)));
  Destroy(PUpload(std::vector<float>(16, 1.0f), PDevice()));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
