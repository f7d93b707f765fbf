// A job of two processes through the PJRT plugin, as JAX's distributed client drives it: each forked process
// creates a client with node_id / num_nodes and the frontend's kv_get / kv_put callbacks (implemented here on a
// shared directory), then sees its process index, the job's four NeuronCores (its own two addressable, the other
// process's two described with their process_index), and works on its own devices; then a job launches a program
// across both processes with PJRT_ExecuteOptions.launch_id. FI_PROVIDER=tcp (meson).
//
//   pjrt_job_test PLUGIN
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dist/dist_test_util.h"
#include "pjrt/pjrt_helpers.h"

namespace {

using neuronmem::dist::testing::RunProcesses;
using neuronmem::dist::testing::TempDir;
using neuronmem_pjrt_test::IntOption;
using neuronmem_pjrt_test::Outcome;
using neuronmem_pjrt_test::Take;

const PJRT_Api* g_api = nullptr;

std::string Str(const char* p, size_t n) { return std::string(p, n); }

// The frontend's store: one file per key in a directory (the key hex-encoded), written whole then renamed.
std::string FileOf(const std::string& dir, const char* key, size_t n) {
  std::string f = dir + "/k";
  for (size_t i = 0; i < n; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(key[i]));
    f += hex;
  }
  return f;
}

int g_gets = 0, g_puts = 0;  // per process: the callbacks were used

PJRT_Error* KvPut(PJRT_KeyValuePutCallback_Args* a) {
  ++g_puts;
  const std::string dir = static_cast<const char*>(a->user_arg);
  const std::string f = FileOf(dir, a->key, a->key_size);
  const std::string tmp = f + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(a->value, static_cast<std::streamsize>(a->value_size));
    if (!out) {
      const char* m = "kv_put: cannot write";
      return (*a->callback_error)(PJRT_Error_Code_INTERNAL, m, std::strlen(m));
    }
  }
  std::rename(tmp.c_str(), f.c_str());
  return nullptr;
}

void DeleteValue(char* v) { delete[] v; }

PJRT_Error* KvGet(PJRT_KeyValueGetCallback_Args* a) {
  ++g_gets;
  const std::string dir = static_cast<const char*>(a->user_arg);
  const std::string f = FileOf(dir, a->key, a->key_size);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(a->timeout_in_ms);
  for (;;) {
    std::ifstream in(f, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string v = ss.str();
      a->value = new char[v.size() + 1];
      std::memcpy(a->value, v.data(), v.size());
      a->value_size = v.size();
      a->value_deleter_callback = DeleteValue;
      return nullptr;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      const std::string m = "kv_get: no key " + std::string(a->key, a->key_size);
      return (*a->callback_error)(PJRT_Error_Code_NOT_FOUND, m.data(), m.size());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// In a forked process: returns `rc` when `expr` (a PJRT call) fails, saying why.
#define CHECK_OK(expr, rc)                                                            \
  do {                                                                                \
    Outcome _o = Take(g_api, (expr));                                                 \
    if (_o.code != PJRT_Error_Code_OK) {                                              \
      std::fprintf(stderr, "line %d: %s: %s\n", __LINE__, #expr, _o.message.c_str()); \
      return rc;                                                                      \
    }                                                                                 \
  } while (0)

std::string ToString(PJRT_Device* d) {
  auto g = NM_ARGS(PJRT_Device_GetDescription_Args);
  g.device = d;
  if (g_api->PJRT_Device_GetDescription(&g)) return "?";
  auto s = NM_ARGS(PJRT_DeviceDescription_ToString_Args);
  s.device_description = g.device_description;
  if (g_api->PJRT_DeviceDescription_ToString(&s)) return "?";
  return Str(s.to_string, s.to_string_size);
}

// The args of an upload of two floats to `device`.
PJRT_Client_BufferFromHostBuffer_Args UploadArgs(PJRT_Client* client, PJRT_Device* device, const float* v) {
  static const int64_t dims[1] = {2};
  auto up = NM_ARGS(PJRT_Client_BufferFromHostBuffer_Args);
  up.client = client;
  up.data = v;
  up.type = PJRT_Buffer_Type_F32;
  up.dims = dims;
  up.num_dims = 1;
  up.device = device;
  return up;
}

// Creates process i's client of a job of 2 processes with two cores each, through the store in `store`.
PJRT_Error* CreateJobClient(int i, const std::string& store, PJRT_Client** out) {
  const PJRT_NamedValue opts[3] = {IntOption("num_cores", 2), IntOption("node_id", i), IntOption("num_nodes", 2)};
  auto c = NM_ARGS(PJRT_Client_Create_Args);
  c.create_options = opts;
  c.num_options = 3;
  c.kv_get_callback = KvGet;
  c.kv_get_user_arg = const_cast<char*>(store.c_str());
  c.kv_put_callback = KvPut;
  c.kv_put_user_arg = const_cast<char*>(store.c_str());
  PJRT_Error* e = g_api->PJRT_Client_Create(&c);
  *out = c.client;
  return e;
}

// One process of the job: index i of 2, two cores each.
int Process(int i, const std::string& store) {
  PJRT_Client* client = nullptr;
  CHECK_OK(CreateJobClient(i, store, &client), 10);
  CHILD_CHECK(g_gets > 0 && g_puts > 0, 11);  // the bootstrap went through the frontend's store

  auto pi = NM_ARGS(PJRT_Client_ProcessIndex_Args);
  pi.client = client;
  CHECK_OK(g_api->PJRT_Client_ProcessIndex(&pi), 12);
  CHILD_CHECK(pi.process_index == i, 13);

  auto all = NM_ARGS(PJRT_Client_Devices_Args);
  all.client = client;
  CHECK_OK(g_api->PJRT_Client_Devices(&all), 14);
  CHILD_CHECK(all.num_devices == 4, 15);
  auto mine = NM_ARGS(PJRT_Client_AddressableDevices_Args);
  mine.client = client;
  CHECK_OK(g_api->PJRT_Client_AddressableDevices(&mine), 16);
  CHILD_CHECK(mine.num_addressable_devices == 2, 17);
  for (int id = 0; id < 4; ++id) {
    PJRT_Device* d = all.devices[id];
    const int owner = id / 2;
    auto desc = NM_ARGS(PJRT_Device_GetDescription_Args);
    desc.device = d;
    CHECK_OK(g_api->PJRT_Device_GetDescription(&desc), 18);
    auto did = NM_ARGS(PJRT_DeviceDescription_Id_Args);
    did.device_description = desc.device_description;
    CHECK_OK(g_api->PJRT_DeviceDescription_Id(&did), 19);
    CHILD_CHECK(did.id == id, 20);
    auto dpi = NM_ARGS(PJRT_DeviceDescription_ProcessIndex_Args);
    dpi.device_description = desc.device_description;
    CHECK_OK(g_api->PJRT_DeviceDescription_ProcessIndex(&dpi), 21);
    CHILD_CHECK(dpi.process_index == owner, 22);
    const std::string want = "NeuronCore(id=" + std::to_string(id) + ", process_index=" + std::to_string(owner) +
                             ", local_id=" + std::to_string(id % 2) + ")";
    CHILD_CHECK(ToString(d) == want, 23);
    auto ia = NM_ARGS(PJRT_Device_IsAddressable_Args);
    ia.device = d;
    CHECK_OK(g_api->PJRT_Device_IsAddressable(&ia), 24);
    CHILD_CHECK(ia.is_addressable == (owner == i), 25);
    auto look = NM_ARGS(PJRT_Client_LookupDevice_Args);
    look.client = client;
    look.id = id;
    CHECK_OK(g_api->PJRT_Client_LookupDevice(&look), 26);
    CHILD_CHECK(look.device == d, 27);
    if (owner == i) {
      CHILD_CHECK(mine.addressable_devices[id % 2] == d, 28);
      continue;
    }
    // Another process's device: described, not usable here.
    auto dm = NM_ARGS(PJRT_Device_DefaultMemory_Args);
    dm.device = d;
    Outcome o = Take(g_api, g_api->PJRT_Device_DefaultMemory(&dm));
    CHILD_CHECK(o.code == PJRT_Error_Code_INVALID_ARGUMENT, 29);
    CHILD_CHECK(o.message.find("not addressable") != std::string::npos, 30);
    const float v[2] = {1, 2};
    auto up = UploadArgs(client, d, v);
    o = Take(g_api, g_api->PJRT_Client_BufferFromHostBuffer(&up));
    CHILD_CHECK(o.code == PJRT_Error_Code_INVALID_ARGUMENT && up.buffer == nullptr, 31);
  }
  // Its own devices work: an upload and a read back on the second one, by local hardware id.
  auto la = NM_ARGS(PJRT_Client_LookupAddressableDevice_Args);
  la.client = client;
  la.local_hardware_id = 1;
  CHECK_OK(g_api->PJRT_Client_LookupAddressableDevice(&la), 32);
  CHILD_CHECK(la.addressable_device == all.devices[2 * i + 1], 33);
  const float v[2] = {1.5f, static_cast<float>(i)};
  auto up = UploadArgs(client, la.addressable_device, v);
  CHECK_OK(g_api->PJRT_Client_BufferFromHostBuffer(&up), 34);
  if (up.done_with_host_buffer)
    CHILD_CHECK(neuronmem_pjrt_test::AwaitAndDestroy(g_api, up.done_with_host_buffer).code == 0, 35);
  float back[2] = {0, 0};
  auto th = NM_ARGS(PJRT_Buffer_ToHostBuffer_Args);
  th.src = up.buffer;
  th.dst = back;
  th.dst_size = sizeof back;
  CHECK_OK(g_api->PJRT_Buffer_ToHostBuffer(&th), 36);
  if (th.event) CHILD_CHECK(neuronmem_pjrt_test::AwaitAndDestroy(g_api, th.event).code == 0, 37);
  CHILD_CHECK(back[0] == 1.5f && back[1] == static_cast<float>(i), 38);
  neuronmem_pjrt_test::DestroyBuffer(g_api, up.buffer);
  // Device assignments name this process's devices by global id.
  int assignment[2] = {-1, -1};
  auto da = NM_ARGS(PJRT_Client_DefaultDeviceAssignment_Args);
  da.client = client;
  da.num_replicas = 2;
  da.num_partitions = 1;
  da.default_assignment_size = 2;
  da.default_assignment = assignment;
  CHECK_OK(g_api->PJRT_Client_DefaultDeviceAssignment(&da), 43);
  CHILD_CHECK(assignment[0] == 2 * i && assignment[1] == 2 * i + 1, 44);
  // The client's topology lists the job.
  auto tp = NM_ARGS(PJRT_Client_TopologyDescription_Args);
  tp.client = client;
  CHECK_OK(g_api->PJRT_Client_TopologyDescription(&tp), 39);
  auto dd = NM_ARGS(PJRT_TopologyDescription_GetDeviceDescriptions_Args);
  dd.topology = tp.topology;
  CHECK_OK(g_api->PJRT_TopologyDescription_GetDeviceDescriptions(&dd), 40);
  CHILD_CHECK(dd.num_descriptions == 4, 41);
  auto destroy = NM_ARGS(PJRT_Client_Destroy_Args);
  destroy.client = client;
  CHECK_OK(g_api->PJRT_Client_Destroy(&destroy), 42);
  return 0;
}

// A sum over the job's four devices (two per process), num_replicas 4.
const char kSum[] = R"(module @sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
})";

// Executes `le` on this process's two devices with `launch_id`, arguments {d + 1, 10 * (d + 1)} for global device
// d; on success, the two results read back into `out` (4 floats). Returns the first failure.
Outcome LaunchSum(PJRT_Client* client, PJRT_LoadedExecutable* le, int process, int launch_id, float* out) {
  auto mine = NM_ARGS(PJRT_Client_AddressableDevices_Args);
  mine.client = client;
  Outcome o = Take(g_api, g_api->PJRT_Client_AddressableDevices(&mine));
  if (o.code != PJRT_Error_Code_OK) return o;
  float v[2][2];
  PJRT_Buffer* in[2] = {nullptr, nullptr};
  for (int d = 0; d < 2; ++d) {
    const int global = 2 * process + d;
    v[d][0] = static_cast<float>(global + 1);
    v[d][1] = static_cast<float>(10 * (global + 1));
    auto up = UploadArgs(client, mine.addressable_devices[d], v[d]);
    o = Take(g_api, g_api->PJRT_Client_BufferFromHostBuffer(&up));
    if (o.code != PJRT_Error_Code_OK) return o;
    if (up.done_with_host_buffer) neuronmem_pjrt_test::AwaitAndDestroy(g_api, up.done_with_host_buffer);
    in[d] = up.buffer;
  }
  PJRT_Buffer* const list0[1] = {in[0]};
  PJRT_Buffer* const list1[1] = {in[1]};
  PJRT_Buffer* const* lists[2] = {list0, list1};
  PJRT_Buffer* results[2][1] = {{nullptr}, {nullptr}};
  PJRT_Buffer** outs[2] = {results[0], results[1]};
  PJRT_Event* done[2] = {nullptr, nullptr};
  auto opts = NM_ARGS(PJRT_ExecuteOptions);
  opts.launch_id = launch_id;
  auto x = NM_ARGS(PJRT_LoadedExecutable_Execute_Args);
  x.executable = le;
  x.options = &opts;
  x.argument_lists = lists;
  x.num_devices = 2;
  x.num_args = 1;
  x.output_lists = outs;
  x.device_complete_events = done;
  o = Take(g_api, g_api->PJRT_LoadedExecutable_Execute(&x));
  for (int d = 0; d < 2 && o.code == PJRT_Error_Code_OK; ++d) {
    Outcome w = neuronmem_pjrt_test::AwaitAndDestroy(g_api, done[d]);
    done[d] = nullptr;
    if (w.code != PJRT_Error_Code_OK) o = w;
  }
  for (int d = 0; d < 2; ++d) {
    if (done[d]) neuronmem_pjrt_test::AwaitAndDestroy(g_api, done[d]);
    if (o.code == PJRT_Error_Code_OK) {
      auto th = NM_ARGS(PJRT_Buffer_ToHostBuffer_Args);
      th.src = results[d][0];
      th.dst = out + 2 * d;
      th.dst_size = 2 * sizeof(float);
      o = Take(g_api, g_api->PJRT_Buffer_ToHostBuffer(&th));
      if (o.code == PJRT_Error_Code_OK && th.event) o = neuronmem_pjrt_test::AwaitAndDestroy(g_api, th.event);
    }
    if (results[d][0]) neuronmem_pjrt_test::DestroyBuffer(g_api, results[d][0]);
    neuronmem_pjrt_test::DestroyBuffer(g_api, in[d]);
  }
  return o;
}

// One process of a job that launches a program across both: the launch id of PJRT_ExecuteOptions reaches the
// launch, so processes that give the same id sum over the job, and processes that give different ids fail
// naming the other id; the job stays in step after that.
int Launches(int i, const std::string& store) {
  PJRT_Client* client = nullptr;
  CHECK_OK(CreateJobClient(i, store, &client), 50);
  auto p = NM_ARGS(PJRT_Program);
  std::string text = kSum;
  p.code = text.data();
  p.code_size = text.size();
  p.format = "mlir";
  p.format_size = 4;
  // CompileOptionsProto { executable_build_options { num_replicas: 4, num_partitions: 1 } }
  const std::string options{0x1a, 4, 0x20, 4, 0x28, 1};
  auto cc = NM_ARGS(PJRT_Client_Compile_Args);
  cc.client = client;
  cc.program = &p;
  cc.compile_options = options.data();
  cc.compile_options_size = options.size();
  CHECK_OK(g_api->PJRT_Client_Compile(&cc), 51);
  // The default assignment of 4 replicas is the job's devices; the executable's addressable devices are this
  // process's two of them.
  int assignment[4] = {-1, -1, -1, -1};
  auto da = NM_ARGS(PJRT_Client_DefaultDeviceAssignment_Args);
  da.client = client;
  da.num_replicas = 4;
  da.num_partitions = 1;
  da.default_assignment_size = 4;
  da.default_assignment = assignment;
  CHECK_OK(g_api->PJRT_Client_DefaultDeviceAssignment(&da), 59);
  CHILD_CHECK(assignment[0] == 0 && assignment[1] == 1 && assignment[2] == 2 && assignment[3] == 3, 60);
  auto ids = NM_ARGS(PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args);
  ids.executable = cc.executable;
  CHECK_OK(g_api->PJRT_LoadedExecutable_AddressableDeviceLogicalIds(&ids), 61);
  CHILD_CHECK(ids.num_addressable_device_logical_ids == 2, 62);
  CHILD_CHECK(ids.addressable_device_logical_ids[0].replica == 2 * i, 63);
  CHILD_CHECK(ids.addressable_device_logical_ids[1].replica == 2 * i + 1, 64);
  auto ga = NM_ARGS(PJRT_LoadedExecutable_GetDeviceAssignment_Args);
  ga.executable = cc.executable;
  CHECK_OK(g_api->PJRT_LoadedExecutable_GetDeviceAssignment(&ga), 65);
  // { replica_count: 4, computation_count: 1, computation_devices { replica_device_ids: [0, 1, 2, 3] } }
  CHILD_CHECK(std::string(ga.serialized_bytes, ga.serialized_bytes_size) ==
                  (std::string{0x08, 4, 0x10, 1, 0x1a, 6, 0x0a, 4, 0, 1, 2, 3}),
              66);
  ga.serialized_device_assignment_deleter(ga.serialized_device_assignment);
  float out[4] = {0, 0, 0, 0};
  Outcome o = LaunchSum(client, cc.executable, i, 7, out);
  if (o.code != PJRT_Error_Code_OK) std::fprintf(stderr, "launch 7: %s\n", o.message.c_str());
  CHILD_CHECK(o.code == PJRT_Error_Code_OK, 52);
  for (int k = 0; k < 4; k += 2) CHILD_CHECK(out[k] == 10 && out[k + 1] == 100, 53);
  // Another launch id in each process: both fail, naming the other's.
  o = LaunchSum(client, cc.executable, i, 20 + i, out);
  std::printf("process %d, launch ids 20 / 21: code %d: %s\n", i, static_cast<int>(o.code), o.message.c_str());
  CHILD_CHECK(o.code == PJRT_Error_Code_FAILED_PRECONDITION, 54);
  CHILD_CHECK(o.message.find("launch id " + std::to_string(21 - i)) != std::string::npos, 55);
  // The same id again: in step.
  o = LaunchSum(client, cc.executable, i, 8, out);
  CHILD_CHECK(o.code == PJRT_Error_Code_OK && out[0] == 10 && out[3] == 100, 56);
  auto de = NM_ARGS(PJRT_LoadedExecutable_Destroy_Args);
  de.executable = cc.executable;
  CHECK_OK(g_api->PJRT_LoadedExecutable_Destroy(&de), 57);
  auto destroy = NM_ARGS(PJRT_Client_Destroy_Args);
  destroy.client = client;
  CHECK_OK(g_api->PJRT_Client_Destroy(&destroy), 58);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_api = neuronmem_pjrt_test::LoadPlugin(argc > 1 ? argv[1] : nullptr);
  if (!g_api) return 1;
  int failures = 0;
  {
    TempDir dir;
    if (dir.path().empty()) return 1;
    const std::string store = dir.path();
    const std::vector<int> rc = RunProcesses(2, [&](int i) { return Process(i, store); });
    for (size_t i = 0; i < rc.size(); ++i) {
      std::printf("process %zu of the job: exit %d\n", i, rc[i]);
      failures += rc[i] != 0;
    }
  }
  {
    TempDir dir;
    if (dir.path().empty()) return 1;
    const std::string store = dir.path();
    const std::vector<int> rc = RunProcesses(2, [&](int i) { return Launches(i, store); });
    for (size_t i = 0; i < rc.size(); ++i) {
      std::printf("process %zu of the launching job: exit %d\n", i, rc[i]);
      failures += rc[i] != 0;
    }
  }
  // Bad input, in this process (one process, no threads started before the forks above): a node_id outside the
  // job, and a job of two without callbacks, are INVALID_ARGUMENT; nothing waits.
  const PJRT_NamedValue out_of_range[2] = {IntOption("node_id", 2), IntOption("num_nodes", 2)};
  const PJRT_NamedValue no_store[2] = {IntOption("node_id", 0), IntOption("num_nodes", 2)};
  for (const PJRT_NamedValue* opts : {out_of_range, no_store}) {
    auto c = NM_ARGS(PJRT_Client_Create_Args);
    c.create_options = opts;
    c.num_options = 2;
    Outcome o = Take(g_api, g_api->PJRT_Client_Create(&c));
    std::printf("bad job options: code %d: %s\n", static_cast<int>(o.code), o.message.c_str());
    failures += o.code != PJRT_Error_Code_INVALID_ARGUMENT || c.client != nullptr;
  }
  // Nothing left in /dev/shm by the job's processes (their endpoints closed as they ended).
  for (const std::string& f : neuronmem::dist::testing::ShmLeftovers()) {
    std::printf("left in /dev/shm by a process of the job: %s\n", f.c_str());
    ++failures;
  }
  std::printf(failures ? "FAIL\n" : "OK\n");
  return failures ? 1 : 0;
}
