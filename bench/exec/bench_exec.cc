// The executor's launch and peer-transfer costs through the public C API, beside their floors in the same run.
//
// Peer transfers: one launch (neuronmem_executable_execute_devices) on 2 cores of a program that moves a
// decode-sized f32 tensor (256 B .. 16 MiB) core to core, submit to both done events ready:
//   Peer_SendRecv             stablehlo.send + recv, source_target_pairs [[0, 1], [1, 0]]: each core gets the
//                             other's tensor;
//   Peer_SendRecvComputed     the same, sending x + x (a computed value the program keeps until its run ends:
//                             lent, the receive copies it once);
//   Peer_CollectivePermute    collective_permute with the same pairs;
//   Peer_CollectivePermuteComputed  collective_permute of x + x (Peer_SendRecvComputed's baseline);
//   Peer_AllReduce            all_reduce (sum) over both cores;
// against
//   Floor_Memcpy              memcpy of the same bytes (one message) into a pre-faulted buffer;
//   Baseline_HandRolled       what a user would write for the same exchange: the caller plays core 0, one
//                             persistent worker thread core 1; the caller hands its buffer over through a mutex
//                             and a condition variable, each side copies (or, for the all_reduce, adds) the
//                             other's buffer into its result, the worker signals it is done.
// Counters: p50_ns, p99_ns per launch (clock overhead subtracted), bytes (one message), vs_memcpy and
// vs_handrolled (this p50 / the floor's p50, same size, measured earlier in the run).
//
// Launch overhead, a program with no collective (a + 1 on f32[4]) or one that uses the process grid:
//   Execute_Plain             neuronmem_executable_execute on core 0 (runs inline on the caller when idle);
//   Execute_GridProgram       neuronmem_executable_execute of a program that reads replica_id (a launch of its
//                             one device: a process of a grid);
//   Launch_OneDevice          execute_devices on core 0 alone, the plain program;
//   Launch_TwoDevices         execute_devices on cores 0 and 1, the plain program (no collective);
// Counters: p50_ns, p99_ns, vs_execute (this p50 / Execute_Plain's).
//
// Execute hot path, arguments: Execute_Args/K runs a program of K f32[4] parameters (none donated, each
// already defined) summing them into one result: what recording each argument's usage costs per execute.
#include <neuronmem/neuronmem.h>

#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "latency.h"
#include "peer_programs.h"

namespace {

using neuronmem::bench::AllReduceText;
using neuronmem::bench::Check;
using neuronmem::bench::Clock;
using neuronmem::bench::Ns;
using neuronmem::bench::PermuteComputedText;
using neuronmem::bench::PermuteText;
using neuronmem::bench::SendRecvComputedText;
using neuronmem::bench::SendRecvText;
using neuronmem::bench::Summarize;

constexpr uint32_t kCores = 2;

neuronmem_client_t* Client() {
  static neuronmem_client_t* c = neuronmem::bench::CreateClient(kCores, 320ull << 20, 64ull << 20);
  return c;
}

neuronmem_device_t* Device(uint32_t d) {
  neuronmem_device_t* dev = nullptr;
  Check(neuronmem_client_lookup_device(Client(), d, &dev));
  return dev;
}

neuronmem_memory_t* DeviceMemory(uint32_t d) {
  neuronmem_memory_t* m = nullptr;
  Check(neuronmem_device_memory_of_kind(Device(d), NEURONMEM_MEMORY_KIND_DEVICE, &m));
  return m;
}

neuronmem_executable_t* Compile(const std::string& text, uint32_t replicas) {
  neuronmem_compile_options_t o{};
  o.struct_size = sizeof o;
  o.filename = "bench.mlir";
  o.num_replicas = replicas;
  neuronmem_executable_t* e = nullptr;
  Check(neuronmem_executable_compile_text(Client(), text.data(), text.size(), &o, &e));
  return e;
}

neuronmem_buffer_t* Upload(const std::vector<float>& v, uint32_t device) {
  const int64_t dims[1] = {static_cast<int64_t>(v.size())};
  neuronmem_buffer_from_host_args_t a{};
  a.struct_size = sizeof a;
  a.data = v.data();
  a.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  a.dims = dims;
  a.num_dims = 1;
  a.memory = DeviceMemory(device);
  neuronmem_buffer_t* b = nullptr;
  Check(neuronmem_buffer_from_host(Client(), &a, &b, nullptr, nullptr));
  return b;
}

const char kPlain[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %0 = stablehlo.add %a, %one : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

const char kGridProgram[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %id = stablehlo.replica_id : tensor<ui32>
  %f = stablehlo.convert %id : (tensor<ui32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

// p50 per size of the floors, filled by the floor benchmarks (registered first, so they run first).
std::map<size_t, double>& MemcpyFloor() {
  static std::map<size_t, double> m;
  return m;
}
std::map<size_t, double>& HandRolledFloor() {
  static std::map<size_t, double> m;
  return m;
}
std::map<size_t, double>& HandRolledReduceFloor() {
  static std::map<size_t, double> m;
  return m;
}
double& ExecuteP50() {
  static double v = 0;
  return v;
}

neuronmem::bench::Percentiles Report(benchmark::State& state, std::vector<double>& samples) {
  const neuronmem::bench::Percentiles p = Summarize(samples);
  state.counters["p50_ns"] = p.p50;
  state.counters["p99_ns"] = p.p99;
  return p;
}

void Ratio(benchmark::State& state, const char* name, double p50, const std::map<size_t, double>& floors,
           size_t bytes) {
  auto it = floors.find(bytes);
  if (it != floors.end() && it->second > 0) state.counters[name] = p50 / it->second;
}

// ---- Floors -------------------------------------------------------------------------------------------

void BM_Floor_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
  std::vector<double> samples;
  for (auto _ : state) {
    src[0] = static_cast<uint8_t>(samples.size());
    const auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
    const auto t1 = Clock::now();
    samples.push_back(Ns(t0, t1));
  }
  // The clock ticks in 10 ns steps: small copies are timed as the mean of a batch.
  constexpr int kBatch = 200;
  const auto t0 = Clock::now();
  for (int i = 0; i < kBatch; ++i) {
    src[0] = static_cast<uint8_t>(i);
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  const double mean = Ns(t0, Clock::now()) / kBatch;
  const neuronmem::bench::Percentiles p = Report(state, samples);
  MemcpyFloor()[bytes] = std::max(p.p50 < 200 ? mean : p.p50, 1.0);
  state.counters["batch_mean_ns"] = mean;
  state.counters["bytes"] = static_cast<double>(bytes);
}

// Two threads exchanging a buffer each through a mutex and condition variables: the caller is side 0, the
// worker side 1. Each step: the caller wakes the worker, both copy (or add) the other's input into their
// own output, the worker reports it is done.
class HandRolledExchange {
 public:
  HandRolledExchange(size_t floats, bool reduce) : reduce_(reduce) {
    for (int s = 0; s < 2; ++s) {
      in_[s].assign(floats, static_cast<float>(s + 1));
      out_[s].assign(floats, 0.0f);
    }
    worker_ = std::thread([this] { Run(); });
  }
  ~HandRolledExchange() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    go_.notify_one();
    worker_.join();
  }
  HandRolledExchange(const HandRolledExchange&) = delete;
  HandRolledExchange& operator=(const HandRolledExchange&) = delete;

  void Step() {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++step_;
    }
    go_.notify_one();
    Side(0);
    std::unique_lock<std::mutex> l(mu_);
    done_cv_.wait(l, [this] { return done_ == step_; });
  }
  float Check() const { return out_[0][0] + out_[1][0]; }

 private:
  void Side(int s) {
    const float* peer = in_[1 - s].data();
    float* out = out_[s].data();
    const size_t n = out_[s].size();
    if (reduce_) {
      const float* mine = in_[s].data();
      for (size_t i = 0; i < n; ++i) out[i] = mine[i] + peer[i];
    } else {
      std::memcpy(out, peer, n * sizeof(float));
    }
  }
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      go_.wait(l, [this] { return stop_ || seen_ != step_; });
      if (stop_) return;
      seen_ = step_;
      l.unlock();
      Side(1);
      l.lock();
      done_ = seen_;
      done_cv_.notify_one();
    }
  }

  const bool reduce_;
  std::vector<float> in_[2], out_[2];
  std::mutex mu_;
  std::condition_variable go_, done_cv_;
  uint64_t step_ = 0, seen_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

void HandRolled(benchmark::State& state, bool reduce, std::map<size_t, double>* floor) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  HandRolledExchange x(bytes / sizeof(float), reduce);
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    x.Step();
    samples.push_back(Ns(t0, Clock::now()));
  }
  benchmark::DoNotOptimize(x.Check());
  const neuronmem::bench::Percentiles p = Report(state, samples);
  (*floor)[bytes] = p.p50;
  Ratio(state, "vs_memcpy", p.p50, MemcpyFloor(), bytes);
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_Baseline_HandRolled(benchmark::State& state) { HandRolled(state, /*reduce=*/false, &HandRolledFloor()); }
void BM_Baseline_HandRolledReduce(benchmark::State& state) {
  HandRolled(state, /*reduce=*/true, &HandRolledReduceFloor());
}

// ---- Launches -----------------------------------------------------------------------------------------

// One timed launch of `exe` on `devices` with one argument each; the results and events are released
// outside the timed region.
double TimedLaunch(neuronmem_executable_t* exe, const std::vector<neuronmem_device_t*>& devices,
                   const std::vector<neuronmem_buffer_t*>& args) {
  const size_t n = devices.size();
  std::vector<neuronmem_buffer_t*> results(n);
  std::vector<neuronmem_event_t*> done(n);
  neuronmem_execute_devices_args_t a{};
  a.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
  a.executable = exe;
  a.devices = devices.data();
  a.num_devices = n;
  a.arguments = args.data();
  a.num_arguments = 1;
  const auto t0 = Clock::now();
  Check(neuronmem_executable_execute_devices(&a, results.data(), done.data(), nullptr));
  for (neuronmem_event_t* e : done) Check(neuronmem_event_wait(e, -1));
  const double ns = Ns(t0, Clock::now());
  for (size_t d = 0; d < n; ++d) {
    neuronmem_event_destroy(done[d]);
    neuronmem_buffer_destroy(results[d]);
  }
  return ns;
}

void PeerLaunch(benchmark::State& state, const std::string& text, const std::map<size_t, double>& handrolled) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t floats = bytes / sizeof(float);
  neuronmem_executable_t* exe = Compile(text, kCores);
  std::vector<neuronmem_device_t*> devices = {Device(0), Device(1)};
  std::vector<neuronmem_buffer_t*> args = {Upload(std::vector<float>(floats, 1.0f), 0),
                                           Upload(std::vector<float>(floats, 2.0f), 1)};
  std::vector<double> samples;
  for (auto _ : state) samples.push_back(TimedLaunch(exe, devices, args));
  const neuronmem::bench::Percentiles p = Report(state, samples);
  Ratio(state, "vs_memcpy", p.p50, MemcpyFloor(), bytes);
  Ratio(state, "vs_handrolled", p.p50, handrolled, bytes);
  state.counters["bytes"] = static_cast<double>(bytes);
  for (neuronmem_buffer_t* b : args) neuronmem_buffer_destroy(b);
  neuronmem_executable_destroy(exe);
}

void BM_Peer_SendRecv(benchmark::State& state) {
  PeerLaunch(state, SendRecvText(static_cast<size_t>(state.range(0)) / 4), HandRolledFloor());
}
void BM_Peer_SendRecvComputed(benchmark::State& state) {
  PeerLaunch(state, SendRecvComputedText(static_cast<size_t>(state.range(0)) / 4), HandRolledFloor());
}
void BM_Peer_CollectivePermute(benchmark::State& state) {
  PeerLaunch(state, PermuteText(static_cast<size_t>(state.range(0)) / 4), HandRolledFloor());
}
void BM_Peer_CollectivePermuteComputed(benchmark::State& state) {
  PeerLaunch(state, PermuteComputedText(static_cast<size_t>(state.range(0)) / 4), HandRolledFloor());
}
void BM_Peer_AllReduce(benchmark::State& state) {
  PeerLaunch(state, AllReduceText(static_cast<size_t>(state.range(0)) / 4), HandRolledReduceFloor());
}

// ---- Launch overhead ----------------------------------------------------------------------------------

double TimedExecute(neuronmem_executable_t* exe, neuronmem_buffer_t* const* args, size_t num_args,
                    neuronmem_event_t* const* waits = nullptr, size_t num_waits = 0) {
  neuronmem_execute_args_t a{};
  a.struct_size = sizeof a;
  a.executable = exe;
  a.device = Device(0);
  a.arguments = args;
  a.num_arguments = num_args;
  a.wait.events = waits;
  a.wait.num_events = num_waits;
  neuronmem_buffer_t* result = nullptr;
  neuronmem_event_t* done = nullptr;
  const auto t0 = Clock::now();
  Check(neuronmem_executable_execute(&a, &result, &done, nullptr));
  Check(neuronmem_event_wait(done, -1));
  const double ns = Ns(t0, Clock::now());
  neuronmem_event_destroy(done);
  neuronmem_buffer_destroy(result);
  return ns;
}

void ExecuteOne(benchmark::State& state, const char* text, bool record) {
  neuronmem_executable_t* exe = Compile(text, 0);
  neuronmem_buffer_t* arg = Upload({1, 2, 3, 4}, 0);
  std::vector<double> samples;
  for (auto _ : state) samples.push_back(TimedExecute(exe, &arg, 1));
  const neuronmem::bench::Percentiles p = Report(state, samples);
  if (record) ExecuteP50() = p.p50;
  if (ExecuteP50() > 0) state.counters["vs_execute"] = p.p50 / ExecuteP50();
  neuronmem_buffer_destroy(arg);
  neuronmem_executable_destroy(exe);
}

void BM_Execute_Plain(benchmark::State& state) { ExecuteOne(state, kPlain, /*record=*/true); }
void BM_Execute_GridProgram(benchmark::State& state) { ExecuteOne(state, kGridProgram, /*record=*/false); }

void LaunchPlain(benchmark::State& state, uint32_t devices_n) {
  neuronmem_executable_t* exe = Compile(kPlain, 0);
  std::vector<neuronmem_device_t*> devices;
  std::vector<neuronmem_buffer_t*> args;
  for (uint32_t d = 0; d < devices_n; ++d) {
    devices.push_back(Device(d));
    args.push_back(Upload({1, 2, 3, 4}, d));
  }
  std::vector<double> samples;
  for (auto _ : state) samples.push_back(TimedLaunch(exe, devices, args));
  const neuronmem::bench::Percentiles p = Report(state, samples);
  if (ExecuteP50() > 0) state.counters["vs_execute"] = p.p50 / ExecuteP50();
  for (neuronmem_buffer_t* b : args) neuronmem_buffer_destroy(b);
  neuronmem_executable_destroy(exe);
}

void BM_Launch_OneDevice(benchmark::State& state) { LaunchPlain(state, 1); }
void BM_Launch_TwoDevices(benchmark::State& state) { LaunchPlain(state, 2); }

// ---- Execute hot path: K arguments ----------------------------------------------------------------------

void BM_Execute_Args(benchmark::State& state) {
  const size_t k = static_cast<size_t>(state.range(0));
  std::string sig, body = "  %s0 = stablehlo.add %p0, %p0 : tensor<4xf32>\n";
  for (size_t i = 0; i < k; ++i) sig += (i ? ", %p" : "%p") + std::to_string(i) + ": tensor<4xf32>";
  for (size_t i = 1; i < k; ++i)
    body += "  %s" + std::to_string(i) + " = stablehlo.add %s" + std::to_string(i - 1) + ", %p" + std::to_string(i) +
            " : tensor<4xf32>\n";
  const std::string text = "func.func @main(" + sig + ") -> tensor<4xf32> {\n" + body + "  return %s" +
                           std::to_string(k - 1) + " : tensor<4xf32>\n}\n";
  neuronmem_executable_t* exe = Compile(text, 0);
  std::vector<neuronmem_buffer_t*> args;
  for (size_t i = 0; i < k; ++i) args.push_back(Upload({1, 2, 3, 4}, 0));
  std::vector<double> samples;
  for (auto _ : state) samples.push_back(TimedExecute(exe, args.data(), args.size()));
  const neuronmem::bench::Percentiles p = Report(state, samples);
  state.counters["per_arg_ns"] = p.p50 / static_cast<double>(k);
  for (neuronmem_buffer_t* b : args) neuronmem_buffer_destroy(b);
  neuronmem_executable_destroy(exe);
}

// The same with K wait events, ready (the previous step's done events, as a chained decode loop passes them).
void BM_Execute_Waits(benchmark::State& state) {
  const size_t k = static_cast<size_t>(state.range(0));
  neuronmem_executable_t* exe = Compile(kPlain, 0);
  neuronmem_buffer_t* arg = Upload({1, 2, 3, 4}, 0);
  std::vector<neuronmem_event_t*> waits(k);
  for (neuronmem_event_t*& w : waits) {
    Check(neuronmem_event_create(Client(), &w));
    Check(neuronmem_event_complete(w, nullptr));
  }
  std::vector<double> samples;
  for (auto _ : state) samples.push_back(TimedExecute(exe, &arg, 1, waits.data(), k));
  const neuronmem::bench::Percentiles p = Report(state, samples);
  if (ExecuteP50() > 0) state.counters["vs_execute"] = p.p50 / ExecuteP50();
  for (neuronmem_event_t* w : waits) neuronmem_event_destroy(w);
  neuronmem_buffer_destroy(arg);
  neuronmem_executable_destroy(exe);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {256, 4096, 65536, 1 << 20, 16 << 20}) b->Arg(bytes);
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Floor_Memcpy)->Apply(Sizes);
BENCHMARK(BM_Baseline_HandRolled)->Apply(Sizes);
BENCHMARK(BM_Baseline_HandRolledReduce)->Apply(Sizes);
BENCHMARK(BM_Peer_SendRecv)->Apply(Sizes);
BENCHMARK(BM_Peer_SendRecvComputed)->Apply(Sizes);
BENCHMARK(BM_Peer_CollectivePermute)->Apply(Sizes);
BENCHMARK(BM_Peer_CollectivePermuteComputed)->Apply(Sizes);
BENCHMARK(BM_Peer_AllReduce)->Apply(Sizes);
BENCHMARK(BM_Execute_Plain)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Execute_GridProgram)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Launch_OneDevice)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Launch_TwoDevices)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Execute_Args)->Arg(1)->Arg(16)->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Execute_Waits)->Arg(1)->Arg(16)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
