// Launches across the processes of a job, through the public C API: forked processes (FI_PROVIDER=tcp, or shm
// where the test says so) each launch their own devices of a program whose process grid spans the job, and every
// collective and send/recv pattern gives each device what the same launch gives it on one client that has all
// of the job's devices. Then the failures: processes that launch another program or another launch id, a peer
// killed before it reaches the collective (the survivor fails in bounded time naming it and stays usable).
#include <gtest/gtest.h>
#include <neuronmem/neuronmem.h>

#include <cstring>
#include <string>
#include <vector>

#include "dist_test_util.h"
#include "job_test_util.h"
#include "provider_offered.h"
#include "shm_check.h"

namespace {

const auto* const kProviderOffered = ::testing::AddGlobalTestEnvironment(new neuronmem::dist::testing::ProviderOffered);

using neuronmem::dist::testing::Code;
using neuronmem::dist::testing::RunProcesses;
using neuronmem::dist::testing::TempDir;

// A client: of a job (dir non-empty: process `index` of `n`, through the directory store in dir) or alone.
neuronmem_client_t* NewClient(uint32_t cores, const std::string& dir, uint32_t index, uint32_t n,
                              uint64_t peer_timeout_ms = 20000) {
  neuronmem_client_options_t o = {};
  o.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  o.num_cores = cores;
  o.device_bytes_per_core = 4 << 20;
  o.pinned_host_bytes = 32 << 20;
  o.mlock_mode = NEURONMEM_MLOCK_DISABLED;
  if (!dir.empty()) {
    o.process_index = index;
    o.num_processes = n;
    o.kv_get = neuronmem_directory_store_get;
    o.kv_put = neuronmem_directory_store_put;
    o.kv_user_data = const_cast<char*>(dir.c_str());
    o.bootstrap_timeout_ns =
        (getenv("FI_PROVIDER") && std::string(getenv("FI_PROVIDER")) == "shm" ? 5ull : 60ull) * 1000 * 1000 * 1000;
    o.peer_timeout_ns = peer_timeout_ms * 1000 * 1000;
  }
  neuronmem_client_t* c = nullptr;
  return Code(neuronmem_client_create(&o, &c)) == NEURONMEM_STATUS_OK ? c : nullptr;
}

neuronmem_executable_t* CompileFor(neuronmem_client_t* c, const std::string& text, uint32_t replicas) {
  neuronmem_compile_options_t o = {};
  o.struct_size = sizeof o;
  o.filename = "job.mlir";
  o.num_replicas = replicas;
  neuronmem_executable_t* e = nullptr;
  return Code(neuronmem_executable_compile_text(c, text.data(), text.size(), &o, &e)) == NEURONMEM_STATUS_OK ? e
                                                                                                             : nullptr;
}

std::vector<neuronmem_device_t*> Devices(neuronmem_client_t* c) {
  neuronmem_device_t* const* d = nullptr;
  size_t n = 0;
  if (Code(neuronmem_client_devices(c, &d, &n)) != NEURONMEM_STATUS_OK) return {};
  return std::vector<neuronmem_device_t*>(d, d + n);
}

int32_t GlobalId(neuronmem_device_t* d) {
  neuronmem_device_description_t desc = {};
  desc.struct_size = NEURONMEM_DEVICE_DESCRIPTION_STRUCT_SIZE;
  return Code(neuronmem_device_describe(d, &desc)) == NEURONMEM_STATUS_OK ? desc.id : -1;
}

// Device g's input: elems floats g * 1000 + k + 1.
std::vector<float> Input(int32_t g, size_t elems) {
  std::vector<float> v(elems);
  for (size_t k = 0; k < elems; ++k) v[k] = static_cast<float>(g * 1000 + static_cast<int32_t>(k) + 1);
  return v;
}

// One launch of `e` on every device of `c` (device g gets Input(g)); each device's output (out_elems floats) in
// device order, or the first failure's code and message.
struct LaunchResult {
  neuronmem_status_code_t code = NEURONMEM_STATUS_OK;
  std::string message;
  std::vector<std::vector<float>> out;
};
LaunchResult LaunchAll(neuronmem_client_t* c, neuronmem_executable_t* e, size_t elems, size_t out_elems,
                       uint64_t launch_id = 0, neuronmem_memory_kind_t kind = NEURONMEM_MEMORY_KIND_DEVICE,
                       uint64_t timeout_ns = 0) {
  LaunchResult r;
  std::vector<neuronmem_device_t*> devices = Devices(c);
  std::vector<neuronmem_buffer_t*> args;
  for (neuronmem_device_t* d : devices) {
    std::vector<float> in = Input(GlobalId(d), elems);
    neuronmem_memory_t* m = nullptr;
    Code(neuronmem_device_memory_of_kind(d, kind, &m));
    const int64_t dims[1] = {static_cast<int64_t>(elems)};
    neuronmem_buffer_from_host_args_t a = {};
    a.struct_size = sizeof a;
    a.data = in.data();
    a.element_type = NEURONMEM_ELEMENT_TYPE_F32;
    a.dims = dims;
    a.num_dims = 1;
    a.memory = m;
    neuronmem_buffer_t* b = nullptr;
    neuronmem_event_t* ready = nullptr;
    if (Code(neuronmem_buffer_from_host(c, &a, &b, &ready, nullptr)) != NEURONMEM_STATUS_OK) {
      r.code = NEURONMEM_STATUS_INTERNAL;
      return r;
    }
    if (ready) {
      Code(neuronmem_event_wait(ready, -1));
      neuronmem_event_destroy(ready);
    }
    args.push_back(b);
  }
  const size_t n = devices.size();
  std::vector<neuronmem_buffer_t*> results(n, nullptr);
  std::vector<neuronmem_event_t*> done(n, nullptr);
  neuronmem_execute_devices_args_t a = {};
  a.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
  a.executable = e;
  a.devices = devices.data();
  a.num_devices = n;
  a.arguments = args.data();
  a.num_arguments = 1;
  a.launch_id = launch_id;
  a.timeout_ns = timeout_ns;
  r.code = Code(neuronmem_executable_execute_devices(&a, results.data(), done.data(), nullptr), &r.message);
  if (r.code == NEURONMEM_STATUS_OK) {
    for (size_t d = 0; d < n; ++d) {
      std::string message;
      neuronmem_status_code_t code = Code(neuronmem_event_wait(done[d], -1), &message);
      if (code != NEURONMEM_STATUS_OK && r.code == NEURONMEM_STATUS_OK) {
        r.code = code;
        r.message = message;
      }
      if (code == NEURONMEM_STATUS_OK) {
        std::vector<float> out(out_elems);
        neuronmem_buffer_read_args_t ra = {};
        ra.struct_size = sizeof ra;
        ra.buffer = results[d];
        ra.size = out_elems * sizeof(float);
        ra.dst = out.data();
        Code(neuronmem_buffer_read(&ra, nullptr));
        neuronmem_memory_t* m = nullptr;
        neuronmem_memory_kind_t k = NEURONMEM_MEMORY_KIND_FORCE_32;
        Code(neuronmem_buffer_memory(results[d], &m));
        Code(neuronmem_memory_kind(m, &k));
        if (k != kind) out.push_back(-1.0f);  // the placement changed: never equal to the reference
        r.out.push_back(std::move(out));
      }
      neuronmem_event_destroy(done[d]);
      neuronmem_buffer_destroy(results[d]);
    }
  }
  for (neuronmem_buffer_t* b : args) neuronmem_buffer_destroy(b);
  return r;
}

const char kAdd[] = R"(({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) )";

std::string F32(size_t n) { return "tensor<" + std::to_string(n) + "xf32>"; }

// One op on a f32[elems] operand per device.
std::string Op(const std::string& op, const std::string& attrs, size_t elems, size_t out, const std::string& body = "",
               const std::string& kind_attr = "") {
  return "func.func @main(%x: " + F32(elems) + kind_attr + ") -> (" + F32(out) + kind_attr +
         ") {\n  %r = \"stablehlo." + op + "\"(%x) " + body + "{" + attrs + "} : (" + F32(elems) + ") -> " + F32(out) +
         "\n  return %r : " + F32(out) + "\n}\n";
}

std::string Groups(const std::vector<std::vector<int>>& groups) {
  std::string s = "dense<[";
  for (size_t g = 0; g < groups.size(); ++g) {
    s += g ? ", [" : "[";
    for (size_t k = 0; k < groups[g].size(); ++k) s += (k ? ", " : "") + std::to_string(groups[g][k]);
    s += "]";
  }
  return s + "]> : tensor<" + std::to_string(groups.size()) + "x" + std::to_string(groups[0].size()) + "xi64>";
}

struct Case {
  std::string name, text;
  size_t elems, out;
  neuronmem_memory_kind_t kind = NEURONMEM_MEMORY_KIND_DEVICE;
};

// Every collective and send/recv pattern over a job of D devices.
std::vector<Case> Cases(int D) {
  std::vector<int> all_ids;
  std::vector<std::vector<int>> ring, mirror;
  for (int g = 0; g < D; ++g) {
    all_ids.push_back(g);
    ring.push_back({g, (g + 1) % D});
  }
  for (int g = 0; g < D / 2; ++g) mirror.push_back({g, D - 1 - g});
  const std::string all = "replica_groups = " + Groups({all_ids});
  const std::string pairs = "source_target_pairs = " + Groups(ring);
  const size_t E = 8;
  std::vector<Case> c;
  c.push_back({"all_reduce", Op("all_reduce", all, E, E, kAdd), E, E});
  c.push_back({"all_reduce mirrored pairs", Op("all_reduce", "replica_groups = " + Groups(mirror), E, E, kAdd), E, E});
  c.push_back({"all_reduce 64 KiB", Op("all_reduce", all, 16384, 16384, kAdd), 16384, 16384});
  // The group's order alternates between processes where a process has several cores ([0, 2, 1, 3] of 2 x 2):
  // the accumulator crosses processes at every member, and the sum is still folded in group order.
  std::vector<int> interleaved;
  for (int g = 0; g < D; g += 2) interleaved.push_back(g);
  for (int g = 1; g < D; g += 2) interleaved.push_back(g);
  c.push_back({"all_reduce interleaved group",
               Op("all_reduce", "replica_groups = " + Groups({interleaved}), 4099, 4099, kAdd), 4099, 4099});
  c.push_back({"all_gather", Op("all_gather", "all_gather_dim = 0 : i64, " + all, E, E * D), E, E * D});
  c.push_back(
      {"reduce_scatter", Op("reduce_scatter", "scatter_dimension = 0 : i64, " + all, E, E / D, kAdd), E, E / D});
  c.push_back({"all_to_all",
               Op("all_to_all",
                  "split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = " + std::to_string(D) +
                      " : i64, " + all,
                  E, E),
               E, E});
  c.push_back({"collective_permute ring", Op("collective_permute", pairs, E, E), E, E});
  c.push_back({"collective_permute one pair (non-targets get zeros)",
               Op("collective_permute", "source_target_pairs = " + Groups({{D - 1, 0}}), E, E), E, E});
  c.push_back({"collective_broadcast", Op("collective_broadcast", all, E, E), E, E});
  // The moving collectives over groups whose members alternate between processes, or pair the first and last
  // processes, and with their root in the last process: the blocks passed around the ring of processes, and the
  // broadcast's chain, start elsewhere.
  std::vector<int> reversed(all_ids.rbegin(), all_ids.rend());
  c.push_back({"all_gather interleaved group",
               Op("all_gather", "all_gather_dim = 0 : i64, replica_groups = " + Groups({interleaved}), 1100, 1100 * D),
               1100, 1100 * static_cast<size_t>(D)});
  c.push_back({"all_gather mirrored pairs",
               Op("all_gather", "all_gather_dim = 0 : i64, replica_groups = " + Groups(mirror), E, E * 2), E, E * 2});
  c.push_back({"collective_broadcast from the last device",
               Op("collective_broadcast", "replica_groups = " + Groups({reversed}), 1100, 1100), 1100, 1100});
  // collective_reduce meets its group through Exchange: across processes every value goes around the ring.
  c.push_back({"collective_reduce reversed group",
               Op("collective_reduce", "replica_groups = " + Groups({reversed}), 1100, 1100, kAdd), 1100, 1100});
  c.push_back({"collective_broadcast interleaved group",
               Op("collective_broadcast", "replica_groups = " + Groups({interleaved}), E, E), E, E});
  c.push_back({"collective_broadcast mirrored pairs",
               Op("collective_broadcast", "replica_groups = " + Groups(mirror), E, E), E, E});
  c.push_back({"all_to_all interleaved group",
               Op("all_to_all",
                  "split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = " + std::to_string(D) +
                      " : i64, replica_groups = " + Groups({interleaved}),
                  4 * 1100, 4 * 1100),
               4 * 1100, 4 * 1100});
  // all_to_all splitting one dimension and concatenating another: [2, 4] -> [2D, 4/D].
  const std::string split2 = "tensor<2x4xf32>",
                    cat2 = "tensor<" + std::to_string(2 * D) + "x" + std::to_string(4 / D) + "xf32>";
  c.push_back({"all_to_all split 1 concat 0",
               "func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
               "  %a = stablehlo.reshape %x : (tensor<8xf32>) -> " +
                   split2 +
                   "\n"
                   "  %b = \"stablehlo.all_to_all\"(%a) {split_dimension = 1 : i64, concat_dimension = 0 : i64, "
                   "split_count = " +
                   std::to_string(D) + " : i64, " + all + "} : (" + split2 + ") -> " + cat2 +
                   "\n"
                   "  %r = stablehlo.reshape %b : (" +
                   cat2 +
                   ") -> tensor<8xf32>\n"
                   "  return %r : tensor<8xf32>\n}\n",
               E, E});
  c.push_back({"collective_permute mirrored (each pair swaps)",
               Op("collective_permute", "source_target_pairs = " + Groups([&] {
                                          std::vector<std::vector<int>> swaps;
                                          for (const auto& p : mirror) {
                                            swaps.push_back({p[0], p[1]});
                                            swaps.push_back({p[1], p[0]});
                                          }
                                          return swaps;
                                        }()),
                  1100, 1100),
               1100, 1100});
  // Every device sends before it receives: completes only because sends are buffered.
  c.push_back({"send/recv ring",
               R"(
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      source_target_pairs = )" +
                   Groups(ring) + R"(} : (tensor<8xf32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      source_target_pairs = )" +
                   Groups(ring) + R"(} : (!stablehlo.token) -> (tensor<8xf32>, !stablehlo.token)
  return %r#0 : tensor<8xf32>
}
)",
               E, E});
  // Two collectives in a row, the second on the first's result.
  c.push_back({"all_reduce then all_gather",
               R"(
func.func @main(%x: tensor<8xf32>) -> tensor<)" +
                   std::to_string(E * D) + R"(xf32> {
  %a = "stablehlo.all_reduce"(%x) )" +
                   kAdd + "{" + all + R"(} : (tensor<8xf32>) -> tensor<8xf32>
  %b = stablehlo.multiply %a, %x : tensor<8xf32>
  %r = "stablehlo.all_gather"(%b) {all_gather_dim = 0 : i64, )" +
                   all + R"(} : (tensor<8xf32>) -> tensor<)" + std::to_string(E * D) + R"(xf32>
  return %r : tensor<)" +
                   std::to_string(E * D) + R"(xf32>
}
)",
               E, E * D});
  // Integers (exact by nature) and floats whose sum depends on its order (x * 0.1 is inexact): the fold across
  // processes keeps the group order, so both match the one-client launch bit for bit.
  c.push_back({"all_reduce s32",
               R"(
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %i = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xi32>
  %m = stablehlo.multiply %i, %i : tensor<8xi32>
  %a = "stablehlo.all_reduce"(%m) ({
    ^bb0(%p: tensor<i32>, %q: tensor<i32>):
      %s = stablehlo.add %p, %q : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) {)" + all + R"(} : (tensor<8xi32>) -> tensor<8xi32>
  %d = stablehlo.remainder %a, %i : tensor<8xi32>
  %r = stablehlo.convert %d : (tensor<8xi32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
)",
               E, E});
  c.push_back({"all_reduce inexact f32",
               std::string(R"(
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = stablehlo.constant dense<0.1> : tensor<8xf32>
  %y = stablehlo.multiply %x, %c : tensor<8xf32>
  %a = "stablehlo.all_reduce"(%y) )") +
                   kAdd + "{" + all + R"(} : (tensor<8xf32>) -> tensor<8xf32>
  return %a : tensor<8xf32>
}
)",
               E, E});
  // Placement kept across processes: operand and result in pinned_host.
  Case pinned{"all_reduce in pinned_host", Op("all_reduce", all, E, E, kAdd, " {mhlo.memory_kind = \"pinned_host\"}"),
              E, E, NEURONMEM_MEMORY_KIND_PINNED_HOST};
  c.push_back(pinned);
  return c;
}

// Process `index` of a job of n processes with `cores` cores each: every case against one client with all the
// job's devices. Returns 0 or the number of the first failing check.
int CompareWithOneClient(const std::string& dir, int index, int n, uint32_t cores) {
  const int D = n * static_cast<int>(cores);
  neuronmem_client_t* job = NewClient(cores, dir, index, n);
  CHILD_CHECK(job != nullptr, 1);
  neuronmem_client_t* one = NewClient(static_cast<uint32_t>(D), "", 0, 1);
  CHILD_CHECK(one != nullptr, 2);
  const uint32_t first = static_cast<uint32_t>(index) * cores;
  int failures = 0;
  for (const Case& c : Cases(D)) {
    neuronmem_executable_t* e = CompileFor(job, c.text, static_cast<uint32_t>(D));
    neuronmem_executable_t* r = CompileFor(one, c.text, static_cast<uint32_t>(D));
    CHILD_CHECK(e != nullptr && r != nullptr, 3);
    // Each local device is the replica of its global id.
    for (uint32_t l = 0; l < cores; ++l) {
      uint32_t replica = 99, partition = 99;
      CHILD_CHECK(
          Code(neuronmem_executable_logical_ids(e, Devices(job)[l], &replica, &partition)) == NEURONMEM_STATUS_OK, 7);
      CHILD_CHECK(replica == first + l && partition == 0, 8);
    }
    LaunchResult got = LaunchAll(job, e, c.elems, c.out, 0, c.kind);
    LaunchResult want = LaunchAll(one, r, c.elems, c.out, 0, c.kind);
    if (got.code != NEURONMEM_STATUS_OK || want.code != NEURONMEM_STATUS_OK ||
        want.out.size() != static_cast<size_t>(D) || got.out.size() != cores) {
      fprintf(stderr, "process %d: case '%s' failed: %s / %s\n", index, c.name.c_str(), got.message.c_str(),
              want.message.c_str());
      ++failures;
    } else {
      for (uint32_t l = 0; l < cores; ++l) {
        if (got.out[l] != want.out[first + l]) {
          fprintf(stderr, "process %d: case '%s': device %u differs from the one-client launch\n", index,
                  c.name.c_str(), first + l);
          ++failures;
        }
      }
    }
    neuronmem_executable_destroy(e);
    neuronmem_executable_destroy(r);
  }
  CHILD_CHECK(failures == 0, 4);
  CHILD_CHECK(Code(neuronmem_client_destroy(one)) == NEURONMEM_STATUS_OK, 5);
  CHILD_CHECK(Code(neuronmem_client_destroy(job)) == NEURONMEM_STATUS_OK, 6);
  return 0;
}

TEST(LaunchJob, TwoProcessesOfOneCoreMatchOneClient) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) { return CompareWithOneClient(dir.path(), i, 2, 1); });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(LaunchJob, TwoProcessesOfTwoCoresMatchOneClient) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) { return CompareWithOneClient(dir.path(), i, 2, 2); });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(LaunchJob, FourProcessesMatchOneClient) {
  TempDir dir;
  auto codes = RunProcesses(4, [&](int i) { return CompareWithOneClient(dir.path(), i, 4, 1); });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0, 0}));
}

TEST(LaunchJob, SharedMemoryProviderWhereOffered) {
  // The shm provider is libfabric's for one host; the environment of this test names tcp, so ask for shm here.
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    setenv("FI_PROVIDER", "shm", 1);
    return CompareWithOneClient(dir.path(), i, 2, 1);
  });
  if (codes != std::vector<int>{0, 0}) {
    // Exit code 1 on both: neither client could be created, i.e. libfabric offers no usable shm provider here.
    if (codes == std::vector<int>{1, 1})
      GTEST_SKIP() << "libfabric's shm provider cannot open an endpoint here (its status is in the log above)";
  }
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// The traffic of one all_reduce (then one reduce_scatter) of B bytes over every device of a job of n processes with
// `cores` cores each, from the transport's statistics: each process sends and receives at most 2B (plus the messages'
// headers) whatever n is, where sending every operand to every remote member would send (n - 1) B. The sum is exact.
int AllReduceTraffic(const std::string& dir, int index, int n, uint32_t cores) {
  const int D = n * static_cast<int>(cores);
  const size_t elems = 65536, B = elems * sizeof(float);
  neuronmem_client_t* c = NewClient(cores, dir, index, n);
  CHILD_CHECK(c != nullptr, 1);
  std::vector<int> all;
  for (int g = 0; g < D; ++g) all.push_back(g);
  neuronmem_executable_t* e = CompileFor(c, Op("all_reduce", "replica_groups = " + Groups({all}), elems, elems, kAdd),
                                         static_cast<uint32_t>(D));
  CHILD_CHECK(e != nullptr, 2);
  neuronmem_job_traffic_t before = {}, after = {};
  before.struct_size = after.struct_size = NEURONMEM_JOB_TRAFFIC_STRUCT_SIZE;
  CHILD_CHECK(Code(neuronmem_client_job_traffic(c, &before)) == NEURONMEM_STATUS_OK, 3);
  LaunchResult r = LaunchAll(c, e, elems, elems);
  CHILD_CHECK(r.code == NEURONMEM_STATUS_OK && r.out.size() == cores, 4);
  CHILD_CHECK(Code(neuronmem_client_job_traffic(c, &after)) == NEURONMEM_STATUS_OK, 5);
  for (uint32_t l = 0; l < cores; ++l)
    for (size_t k = 0; k < elems; ++k)
      CHILD_CHECK(r.out[l][k] == static_cast<float>(1000 * D * (D - 1) / 2 + D * static_cast<int>(k + 1)), 6);
  const uint64_t sent = after.bytes_sent - before.bytes_sent, received = after.bytes_received - before.bytes_received;
  fprintf(stderr, "process %d of %d (%u cores): all_reduce of %zu bytes sent %llu, received %llu bytes\n", index, n,
          cores, B, static_cast<unsigned long long>(sent), static_cast<unsigned long long>(received));
  const uint64_t headers = 4 * 8192;  // each message's descriptor and inline part: at most 4 messages each way
  CHILD_CHECK(sent >= B && sent <= 2 * B + headers, 7);
  CHILD_CHECK(received >= B && received <= 2 * B + headers, 8);
  neuronmem_executable_destroy(e);
  // reduce_scatter folds the same way (then each member keeps its part): the same bound.
  const size_t part = elems / static_cast<size_t>(D);
  neuronmem_executable_t* rs = CompileFor(
      c, Op("reduce_scatter", "scatter_dimension = 0 : i64, replica_groups = " + Groups({all}), elems, part, kAdd),
      static_cast<uint32_t>(D));
  CHILD_CHECK(rs != nullptr, 12);
  before = after;
  r = LaunchAll(c, rs, elems, part);
  CHILD_CHECK(r.code == NEURONMEM_STATUS_OK && r.out.size() == cores, 13);
  CHILD_CHECK(Code(neuronmem_client_job_traffic(c, &after)) == NEURONMEM_STATUS_OK, 14);
  for (uint32_t l = 0; l < cores; ++l) {
    const size_t first = (static_cast<size_t>(index) * cores + l) * part;
    for (size_t k = 0; k < part; ++k)
      CHILD_CHECK(r.out[l][k] == static_cast<float>(1000 * D * (D - 1) / 2 + D * static_cast<int>(first + k + 1)), 15);
  }
  const uint64_t rs_sent = after.bytes_sent - before.bytes_sent;
  fprintf(stderr, "process %d of %d (%u cores): reduce_scatter of %zu bytes sent %llu bytes\n", index, n, cores, B,
          static_cast<unsigned long long>(rs_sent));
  CHILD_CHECK(rs_sent >= B && rs_sent <= 2 * B + headers, 16);
  neuronmem_executable_destroy(rs);
  CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 9);
  return 0;
}

// Runs body(dir, index, n, cores) in every process of a job of 2 processes of 2 cores, then of 4 processes of 1.
void InJobsOf2x2And4x1(int (*body)(const std::string&, int, int, uint32_t)) {
  for (const auto& [n, cores] : {std::pair<int, uint32_t>{2, 2}, {4, 1}}) {
    TempDir dir;
    auto codes = RunProcesses(n, [&, n = n, cores = cores](int i) { return body(dir.path(), i, n, cores); });
    EXPECT_EQ(codes, std::vector<int>(n, 0)) << n << " processes of " << cores << " cores";
  }
}

TEST(LaunchJob, ReducingTrafficPerProcessDoesNotGrowWithProcesses) { InJobsOf2x2And4x1(AllReduceTraffic); }

// The traffic of the moving collectives of B bytes per device over every device of a job of n processes with `cores`
// cores each (D devices), from the transport's statistics (plus each message's descriptor and inline part): all_gather
// sends and receives the other processes' operands once, (D - cores) B, where sending every operand to every remote
// member sent cores (D - cores) B; all_to_all only the parts remote members take, cores (D - cores) B / D;
// collective_broadcast at most B (the root's operand, down a chain), where every member sent to every remote member.
int MovingTraffic(const std::string& dir, int index, int n, uint32_t cores) {
  const int D = n * static_cast<int>(cores);
  const size_t elems = 16384, B = elems * sizeof(float);
  const uint64_t C = cores, headers = 8 * 8192;
  neuronmem_client_t* c = NewClient(cores, dir, index, n);
  CHILD_CHECK(c != nullptr, 1);
  std::vector<int> all;
  for (int g = 0; g < D; ++g) all.push_back(g);
  const std::string groups = "replica_groups = " + Groups({all});
  struct Moving {
    std::string name, text;
    size_t out;
    uint64_t most_sent, most_received;
  };
  const std::vector<Moving> cases = {
      {"all_gather", Op("all_gather", "all_gather_dim = 0 : i64, " + groups, elems, elems * D), elems * D, (D - C) * B,
       (D - C) * B},
      {"all_to_all",
       Op("all_to_all",
          "split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = " + std::to_string(D) + " : i64, " +
              groups,
          elems, elems),
       elems, C * (D - C) * B / D, C * (D - C) * B / D},
      {"collective_broadcast", Op("collective_broadcast", groups, elems, elems), elems, B, B},
  };
  for (const Moving& m : cases) {
    neuronmem_executable_t* e = CompileFor(c, m.text, static_cast<uint32_t>(D));
    CHILD_CHECK(e != nullptr, 2);
    neuronmem_job_traffic_t before = {}, after = {};
    before.struct_size = after.struct_size = NEURONMEM_JOB_TRAFFIC_STRUCT_SIZE;
    CHILD_CHECK(Code(neuronmem_client_job_traffic(c, &before)) == NEURONMEM_STATUS_OK, 3);
    LaunchResult r = LaunchAll(c, e, elems, m.out);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_OK && r.out.size() == cores, 4);
    CHILD_CHECK(Code(neuronmem_client_job_traffic(c, &after)) == NEURONMEM_STATUS_OK, 5);
    // Spot checks of the values (the exact comparison with one client is CompareWithOneClient's).
    const int32_t g = index * static_cast<int32_t>(cores);
    if (m.name == "all_gather") CHILD_CHECK(r.out[0][elems * (D - 1)] == Input(D - 1, 1)[0], 6);
    if (m.name == "all_to_all") CHILD_CHECK(r.out[0][elems - 1] == Input(D - 1, elems)[(g + 1) * elems / D - 1], 7);
    if (m.name == "collective_broadcast") CHILD_CHECK(r.out[0] == Input(0, elems), 8);
    const uint64_t sent = after.bytes_sent - before.bytes_sent, received = after.bytes_received - before.bytes_received;
    fprintf(stderr,
            "process %d of %d (%u cores): %s of %zu bytes sent %llu, received %llu bytes (at most %llu, %llu)\n", index,
            n, cores, m.name.c_str(), B, static_cast<unsigned long long>(sent),
            static_cast<unsigned long long>(received), static_cast<unsigned long long>(m.most_sent),
            static_cast<unsigned long long>(m.most_received));
    CHILD_CHECK(sent <= m.most_sent + headers, 9);
    CHILD_CHECK(received <= m.most_received + headers, 10);
    if (m.name != "collective_broadcast") CHILD_CHECK(sent >= m.most_sent && received >= m.most_received, 11);
    neuronmem_executable_destroy(e);
  }
  CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 12);
  return 0;
}

TEST(LaunchJob, MovingTrafficPerProcessIsItsShare) { InJobsOf2x2And4x1(MovingTraffic); }

// In a forked process too: a client's cores and copy engine are threads (oneTBB's workers outlive the client), and
// the later tests fork only from a single-threaded process (RunProcesses).
TEST(LaunchJob, JobTrafficOfAClientOfOneProcessIsZero) {
  auto codes = RunProcesses(1, [&](int) {
    neuronmem_client_t* c = NewClient(1, "", 0, 1);
    CHILD_CHECK(c != nullptr, 1);
    neuronmem_job_traffic_t t = {};
    t.struct_size = NEURONMEM_JOB_TRAFFIC_STRUCT_SIZE;
    t.bytes_sent = 7;
    CHILD_CHECK(Code(neuronmem_client_job_traffic(c, &t)) == NEURONMEM_STATUS_OK, 2);
    CHILD_CHECK(t.bytes_sent == 0u && t.messages_received == 0u, 3);
    t.struct_size = 8;
    CHILD_CHECK(Code(neuronmem_client_job_traffic(c, &t)) == NEURONMEM_STATUS_INVALID_ARGUMENT, 4);
    CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 5);
    return 0;
  });
  EXPECT_EQ(codes, std::vector<int>({0}));
}

const std::string kAllReduce2 = Op("all_reduce", "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>", 8, 8, kAdd);

TEST(LaunchJob, ProcessesThatLaunchAnotherProgramOrLaunchIdFail) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    neuronmem_client_t* c = NewClient(1, dir.path(), i, 2);
    CHILD_CHECK(c != nullptr, 1);
    // Another launch id on each side.
    neuronmem_executable_t* e = CompileFor(c, kAllReduce2, 2);
    CHILD_CHECK(e != nullptr, 2);
    LaunchResult r = LaunchAll(c, e, 8, 8, /*launch_id=*/10 + i);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_FAILED_PRECONDITION, 3);
    CHILD_CHECK(r.message.find("launch id " + std::to_string(11 - i)) != std::string::npos, 4);
    CHILD_CHECK(r.message.find("all_reduce") != std::string::npos, 5);
    // Another program: process 1 multiplies where process 0 adds.
    std::string other = kAllReduce2;
    if (i == 1) other.replace(other.find("stablehlo.add"), strlen("stablehlo.add"), "stablehlo.multiply");
    neuronmem_executable_t* f = CompileFor(c, other, 2);
    CHILD_CHECK(f != nullptr, 6);
    r = LaunchAll(c, f, 8, 8, 7);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_FAILED_PRECONDITION, 7);
    CHILD_CHECK(r.message.find("another program") != std::string::npos, 8);
    // Other shapes (above one message's inline bytes): process 1 sends 4096 floats where process 0 has 2048.
    const size_t elems = i == 0 ? 2048 : 4096;
    neuronmem_executable_t* g =
        CompileFor(c, Op("all_reduce", "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>", elems, elems, kAdd), 2);
    CHILD_CHECK(g != nullptr, 12);
    r = LaunchAll(c, g, elems, elems, 9);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_FAILED_PRECONDITION, 13);
    CHILD_CHECK(r.message.find(i == 0 ? "16384 bytes" : "8192 bytes") != std::string::npos, 14);
    neuronmem_executable_destroy(g);
    // Then the same program and id again: the job still works.
    r = LaunchAll(c, e, 8, 8, 8);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_OK && r.out.size() == 1, 9);
    CHILD_CHECK(r.out[0][0] == 1 + 1001, 10);
    neuronmem_executable_destroy(e);
    neuronmem_executable_destroy(f);
    CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 11);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(LaunchJob, ALaunchRefusedAtSubmissionInOneProcessLeavesTheJobInStep) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    neuronmem_client_t* c = NewClient(1, dir.path(), i, 2);
    CHILD_CHECK(c != nullptr, 1);
    neuronmem_executable_t* e = CompileFor(c, kAllReduce2, 2);
    CHILD_CHECK(e != nullptr, 2);
    // Process 0's first launch is refused at submission (its argument is in pinned_host, the program wants it in
    // device memory): it never ran, so it takes no place in the order of the job's launches.
    if (i == 0) {
      LaunchResult refused = LaunchAll(c, e, 8, 8, 0, NEURONMEM_MEMORY_KIND_PINNED_HOST);
      CHILD_CHECK(refused.code != NEURONMEM_STATUS_OK && refused.out.empty(), 3);
    }
    LaunchResult r = LaunchAll(c, e, 8, 8);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_OK && r.out.size() == 1 && r.out[0][0] == 1 + 1001, 4);
    neuronmem_executable_destroy(e);
    CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 5);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// A large message (128 KiB: sent from the launch's own copy of the value, which the fabric holds until delivered) is
// buffered: process 0's launch ends before process 1 even launches its receive, and process 1 still gets the bytes.
TEST(LaunchJob, ALargeSendEndsItsLaunchBeforeTheReceiverLaunches) {
  TempDir dir;
  constexpr size_t kElems = 32768;
  const std::string program =
      Op("collective_permute", "source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>", kElems, kElems);
  auto codes = RunProcesses(2, [&](int i) {
    neuronmem_client_t* c = NewClient(1, dir.path(), i, 2);
    CHILD_CHECK(c != nullptr, 1);
    neuronmem_executable_t* e = CompileFor(c, program, 2);
    CHILD_CHECK(e != nullptr, 2);
    void* store = const_cast<char*>(dir.path().c_str());
    if (i == 1) {
      char* value = nullptr;
      size_t size = 0;
      CHILD_CHECK(
          Code(neuronmem_directory_store_get(store, "sent", 4, 60000000000ull, &value, &size)) == NEURONMEM_STATUS_OK,
          3);
      free(value);
    }
    LaunchResult r = LaunchAll(c, e, kElems, kElems);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_OK && r.out.size() == 1, 4);
    // Device 0 is no pair's target (zeros); device 1 gets device 0's input.
    CHILD_CHECK(r.out[0] == (i == 0 ? std::vector<float>(kElems, 0.0f) : Input(0, kElems)), 5);
    if (i == 0) CHILD_CHECK(Code(neuronmem_directory_store_put(store, "sent", 4, "1", 1)) == NEURONMEM_STATUS_OK, 6);
    neuronmem_executable_destroy(e);
    CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 7);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(LaunchJob, ADeadlineStopsAWaitForAPeerThatNeverLaunches) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    // The peer timeout bounds the destroy below (its send to process 1, never accepted, is given up then).
    neuronmem_client_t* c = NewClient(1, dir.path(), i, 2, /*peer_timeout_ms=*/5000);
    CHILD_CHECK(c != nullptr, 1);
    void* store = const_cast<char*>(dir.path().c_str());
    if (i == 1) {
      // Alive, but never launches: it waits until process 0 is done.
      char* value = nullptr;
      size_t size = 0;
      Code(neuronmem_directory_store_get(store, "done", 4, 120000000000ull, &value, &size));
      free(value);
      CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 2);
      return 0;
    }
    neuronmem_executable_t* e = CompileFor(c, kAllReduce2, 2);
    CHILD_CHECK(e != nullptr, 3);
    const auto t0 = std::chrono::steady_clock::now();
    LaunchResult r = LaunchAll(c, e, 8, 8, 0, NEURONMEM_MEMORY_KIND_DEVICE, /*timeout_ns=*/500000000ull);
    const auto waited = std::chrono::steady_clock::now() - t0;
    // The execution's deadline (0.5 s) ends its wait for process 1 long before the 5 s peer timeout; the send to
    // process 1 before it did not block either (buffered, though process 1 makes no progress to accept it).
    CHILD_CHECK(r.code == NEURONMEM_STATUS_DEADLINE_EXCEEDED, 4);
    CHILD_CHECK(r.message.find("process 1") != std::string::npos, 5);
    CHILD_CHECK(waited < std::chrono::seconds(3), 6);
    neuronmem_executable_destroy(e);
    CHILD_CHECK(Code(neuronmem_directory_store_put(store, "done", 4, "1", 1)) == NEURONMEM_STATUS_OK, 7);
    CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 8);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// Process 1 of 2 (each with `cores` cores) is killed after a first all_reduce over every device: process 0's
// next one fails on every device in about the peer timeout, naming process 1 and the op; its local work goes on.
std::vector<int> KillPeer(uint32_t cores) {
  TempDir dir;
  std::vector<int> ids;
  for (uint32_t g = 0; g < 2 * cores; ++g) ids.push_back(static_cast<int>(g));
  const std::string all_reduce = Op("all_reduce", "replica_groups = " + Groups({ids}), 8, 8, kAdd);
  return RunProcesses(2, [&](int i) {
    neuronmem_client_t* c = NewClient(cores, dir.path(), i, 2, /*peer_timeout_ms=*/1500);
    CHILD_CHECK(c != nullptr, 1);
    neuronmem_executable_t* e = CompileFor(c, all_reduce, 2 * cores);
    CHILD_CHECK(e != nullptr, 2);
    LaunchResult r = LaunchAll(c, e, 8, 8);  // one launch together first
    CHILD_CHECK(r.code == NEURONMEM_STATUS_OK, 3);
    // Process 1 dies once process 0 has its message (so the first launch cannot lose it).
    void* store = const_cast<char*>(dir.path().c_str());
    if (i == 0)
      CHILD_CHECK(Code(neuronmem_directory_store_put(store, "first", 5, "done", 4)) == NEURONMEM_STATUS_OK, 11);
    if (i == 1) {
      char* value = nullptr;
      size_t size = 0;
      Code(neuronmem_directory_store_get(store, "first", 5, 60000000000ull, &value, &size));
      free(value);
      raise(SIGKILL);
    }
    const auto t0 = std::chrono::steady_clock::now();
    r = LaunchAll(c, e, 8, 8);
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHILD_CHECK(r.code == NEURONMEM_STATUS_UNAVAILABLE, 4);
    CHILD_CHECK(r.message.find("process 1") != std::string::npos, 5);
    CHILD_CHECK(r.message.find("all_reduce") != std::string::npos, 6);
    CHILD_CHECK(waited < std::chrono::seconds(10), 7);
    // The survivor's local work goes on.
    const std::string local = R"(
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = stablehlo.add %x, %x : tensor<8xf32>
  return %r : tensor<8xf32>
}
)";
    neuronmem_executable_t* l = CompileFor(c, local, 2 * cores);
    CHILD_CHECK(l != nullptr, 8);
    r = LaunchAll(c, l, 8, 8);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_OK && r.out.size() == cores && r.out[0][0] == 2, 9);
    neuronmem_executable_destroy(e);
    neuronmem_executable_destroy(l);
    CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 10);
    return 0;
  });
}

// Four processes of one core, process 1 killed before a collective over all of them. all_reduce: the accumulator's
// chain (0 -> 1 -> 2 -> 3, then 3 -> 0 -> 1 -> 2) breaks at process 2, which waits for 1 and finds it lost; it passes
// that failure on, so every survivor fails in bounded time with UNAVAILABLE naming process 1. `program` (f32[8] ->
// f32[out]) over four processes of one core, process 1 killed before its second launch.
std::vector<int> KillOneOfFour(const std::string& program, size_t out) {
  TempDir dir;
  return RunProcesses(4, [&](int i) {
    neuronmem_client_t* c = NewClient(1, dir.path(), i, 4, /*peer_timeout_ms=*/1500);
    CHILD_CHECK(c != nullptr, 1);
    neuronmem_executable_t* e = CompileFor(c, program, 4);
    CHILD_CHECK(e != nullptr, 2);
    LaunchResult r = LaunchAll(c, e, 8, out);
    CHILD_CHECK(r.code == NEURONMEM_STATUS_OK, 3);
    void* store = const_cast<char*>(dir.path().c_str());
    const std::string key = "first" + std::to_string(i);
    CHILD_CHECK(Code(neuronmem_directory_store_put(store, key.data(), key.size(), "done", 4)) == NEURONMEM_STATUS_OK,
                11);
    if (i == 1) {
      for (int p = 0; p < 4; ++p) {  // every process has its result of the first launch
        const std::string k = "first" + std::to_string(p);
        char* value = nullptr;
        size_t size = 0;
        Code(neuronmem_directory_store_get(store, k.data(), k.size(), 60000000000ull, &value, &size));
        free(value);
      }
      raise(SIGKILL);
    }
    const auto t0 = std::chrono::steady_clock::now();
    r = LaunchAll(c, e, 8, out);
    const auto waited = std::chrono::steady_clock::now() - t0;
    fprintf(stderr, "process %d: %s\n", i, r.message.c_str());
    CHILD_CHECK(r.code == NEURONMEM_STATUS_UNAVAILABLE, 4);
    CHILD_CHECK(r.message.find("process 1") != std::string::npos, 5);
    CHILD_CHECK(waited < std::chrono::seconds(10), 7);
    neuronmem_executable_destroy(e);
    CHILD_CHECK(Code(neuronmem_client_destroy(c)) == NEURONMEM_STATUS_OK, 10);
    return 0;
  });
}

TEST(LaunchJob, APeerKilledMidChainFailsEverySurvivorOfFour) {
  EXPECT_EQ(KillOneOfFour(Op("all_reduce", "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>", 8, 8, kAdd), 8),
            (std::vector<int>{0, 128 + SIGKILL, 0, 0}));
}

// The same for all_gather's ring of processes (0 -> 1 -> 2 -> 3 -> 0, passing blocks): process 2 waits for 1 and finds
// it lost, and its failure goes on in place of its blocks to 3, then from 3 to 0, who wait for the blocks behind it.
TEST(LaunchJob, APeerKilledMidRingFailsEverySurvivorOfFour) {
  EXPECT_EQ(KillOneOfFour(Op("all_gather",
                             "all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : "
                             "tensor<1x4xi64>",
                             8, 32),
                          32),
            (std::vector<int>{0, 128 + SIGKILL, 0, 0}));
}

TEST(LaunchJob, APeerKilledBeforeTheCollectiveFailsTheSurvivorInBoundedTime) {
  EXPECT_EQ(KillPeer(1), (std::vector<int>{0, 128 + SIGKILL}));
}

TEST(LaunchJob, APeerKilledFailsEveryDeviceOfTheSurvivor) {
  EXPECT_EQ(KillPeer(2), (std::vector<int>{0, 128 + SIGKILL}));
}

}  // namespace
