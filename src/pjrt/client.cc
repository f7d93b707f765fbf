// PJRT clients, devices, device descriptions and memories over an exec::Session: one shell per core device
// and memory, linked as the C++ objects are (the C API's client handle does the same).
#include <neuronmem/version.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "exec/cross_process.h"
#include "pjrt/plugin.h"

namespace neuronmem::pjrt {
namespace {

// ---- client

std::string_view NameOf(const PJRT_NamedValue& v) { return {v.name ? v.name : "", v.name ? v.name_size : 0}; }

// create_options -> core::ClientConfig and the argument placement. INVALID_ARGUMENT for an unknown name, a
// value of the wrong type, a bad placement.
PJRT_Error* ResolveCreateOptions(const PJRT_Client_Create_Args* args, core::ClientConfig* config,
                                 exec::ArgumentPlacement* placement, JobOptions* job) {
  if (args->num_options && !args->create_options) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Client_Create: create_options is NULL but num_options is %zu",
                  args->num_options);
  }
  for (size_t i = 0; i < args->num_options; ++i) {
    const PJRT_NamedValue& v = args->create_options[i];
    if (v.struct_size < PJRT_NamedValue_STRUCT_SIZE) {
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                    "PJRT_Client_Create: create_options[%zu].struct_size is %zu, below %zu", i, v.struct_size,
                    static_cast<size_t>(PJRT_NamedValue_STRUCT_SIZE));
    }
    const std::string name(NameOf(v));
    const auto want_int = [&](uint64_t* out) -> PJRT_Error* {
      if (EnumValue(v.type) != PJRT_NamedValue_kInt64 || v.int64_value < 0) {
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                      "PJRT_Client_Create: create option '%s' must be a non-negative int64", name.c_str());
      }
      if (v.int64_value) *out = static_cast<uint64_t>(v.int64_value);
      return nullptr;
    };
    if (name == "num_cores") {
      uint64_t n = config->num_cores;
      if (PJRT_Error* e = want_int(&n)) return e;
      if (n > UINT32_MAX)
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Client_Create: num_cores %llu is too large",
                      static_cast<unsigned long long>(n));
      config->num_cores = static_cast<uint32_t>(n);
    } else if (name == "device_bytes_per_core") {
      if (PJRT_Error* e = want_int(&config->device_bytes_per_core)) return e;
    } else if (name == "pinned_host_bytes") {
      if (PJRT_Error* e = want_int(&config->pinned_host_bytes)) return e;
    } else if (name == "process_index" || name == "node_id" || name == "num_processes" || name == "num_nodes") {
      uint64_t n = 0;
      if (PJRT_Error* e = want_int(&n)) return e;
      if (n > 65535)
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Client_Create: create option '%s' %llu is above 65535",
                      name.c_str(), static_cast<unsigned long long>(n));
      (name == "process_index" || name == "node_id" ? job->process_index : job->num_processes) =
          static_cast<uint32_t>(n);
    } else if (name == "fabric_interface") {
      if (EnumValue(v.type) != PJRT_NamedValue_kString || !v.string_value)
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                      "PJRT_Client_Create: create option 'fabric_interface' must be a string");
      job->fabric_interface.assign(v.string_value, v.value_size);
    } else if (name == "argument_placement") {
      const std::string_view value = EnumValue(v.type) == PJRT_NamedValue_kString && v.string_value
                                         ? std::string_view(v.string_value, v.value_size)
                                         : "";
      if (value == "strict") {
        *placement = exec::ArgumentPlacement::kStrict;
      } else if (value == "auto_copy") {
        *placement = exec::ArgumentPlacement::kAutoCopy;
      } else {
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                      "PJRT_Client_Create: create option 'argument_placement' must be the string \"strict\" or "
                      "\"auto_copy\"");
      }
    } else {
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                    "PJRT_Client_Create: unknown create option '%s' (known: num_cores, device_bytes_per_core, "
                    "pinned_host_bytes, argument_placement, process_index or node_id, num_processes or num_nodes, "
                    "fabric_interface)",
                    name.c_str());
    }
  }
  return nullptr;
}

}  // namespace

void InitDescription(int32_t id, int32_t process_index, int64_t local_id, PJRT_DeviceDescription* d) {
  d->id = id;
  d->process_index = process_index;
  d->local_id = local_id;
  d->to_string = "NeuronCore(id=" + std::to_string(id) + ", process_index=" + std::to_string(process_index) +
                 ", local_id=" + std::to_string(local_id) + ")";
  d->debug_string = d->kind + " (" + d->to_string + ")";
  d->attributes = {IntValue("local_id", local_id)};
  // The memory-descriptions extension lists the kinds a program may name: device (the default) and
  // pinned_host.
  d->memory_descriptions.clear();
  d->memory_description_ptrs.clear();
  for (MemoryKind k : {MemoryKind::kDevice, MemoryKind::kPinnedHost})
    d->memory_descriptions.push_back({k, std::string(MemoryKindName(k))});
  for (const PJRT_MemoryDescription& md : d->memory_descriptions) d->memory_description_ptrs.push_back(&md);
}

PJRT_Error* CheckAddressable(const PJRT_Device* d, const char* fn, const char* what) {
  if (d->device) return nullptr;
  return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %s %s belongs to process %d: not addressable by this client", fn,
                what, d->description.to_string.c_str(), d->description.process_index);
}

void InitTopology(uint32_t num_cores, uint32_t num_processes, PJRT_TopologyDescription* t) {
  t->num_cores = num_cores;
  t->num_processes = num_processes;
  t->attributes = {IntValue("num_cores", num_cores), IntValue("num_processes", num_processes)};
  if (t->client) return;  // a client's describes its devices
  for (uint32_t p = 0; p < num_processes; ++p) {
    for (uint32_t l = 0; l < num_cores; ++l) {
      auto d = std::make_unique<PJRT_DeviceDescription>();
      InitDescription(static_cast<int32_t>(p * num_cores + l), static_cast<int32_t>(p), l, d.get());
      t->descriptions.push_back(d.get());
      t->owned.push_back(std::move(d));
    }
  }
}

namespace {

void BuildShells(PJRT_Client* c) {
  for (core::Memory* m : c->core->memories()) {
    auto shell = std::make_unique<PJRT_Memory>();
    shell->memory = m;
    shell->client = c;
    shell->kind = std::string(MemoryKindName(m->kind()));
    c->memories.push_back(shell.get());
    c->memory_storage.push_back(std::move(shell));
  }
  for (core::Device* d : c->core->devices()) {
    auto shell = std::make_unique<PJRT_Device>();
    shell->device = d;
    shell->client = c;
    for (core::Memory* m : d->memories()) {
      PJRT_Memory* ms = c->memories[static_cast<size_t>(m->id())];
      shell->memories.push_back(ms);
      shell->by_kind[static_cast<size_t>(m->kind())] = ms;
    }
    const int32_t cores = static_cast<int32_t>(c->core->devices().size());
    InitDescription(static_cast<int32_t>(c->process_index) * cores + d->id(), static_cast<int32_t>(c->process_index),
                    d->id(), &shell->description);
    c->devices.push_back(shell.get());
    c->device_storage.push_back(std::move(shell));
  }
  // The job's devices in global id order: the other processes' are described only (not addressable).
  const uint32_t cores = static_cast<uint32_t>(c->devices.size());
  for (uint32_t p = 0; p < c->num_processes; ++p) {
    if (p == c->process_index) {
      c->all_devices.insert(c->all_devices.end(), c->devices.begin(), c->devices.end());
      continue;
    }
    for (uint32_t l = 0; l < cores; ++l) {
      auto shell = std::make_unique<PJRT_Device>();
      shell->client = c;
      InitDescription(static_cast<int32_t>(p * cores + l), static_cast<int32_t>(p), l, &shell->description);
      c->all_devices.push_back(shell.get());
      c->device_storage.push_back(std::move(shell));
    }
  }
  for (PJRT_Device* d : c->all_devices) c->topology.descriptions.push_back(&d->description);
  c->topology.client = c;
  InitTopology(cores, c->num_processes, &c->topology);
  for (core::Memory* m : c->core->memories())
    for (core::Device* d : m->devices())
      c->memories[static_cast<size_t>(m->id())]->devices.push_back(c->devices[d->id()]);
}

PJRT_Error* PJRT_Client_Create(PJRT_Client_Create_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_Create_Args, client);
  args->client = nullptr;
  NM_PJRT_BEGIN
  core::ClientConfig config;
  auto client = std::make_unique<PJRT_Client>();
  JobOptions job;
  if (PJRT_Error* e = ResolveCreateOptions(args, &config, &client->placement, &job)) return e;
  if (PJRT_Error* e = JoinJob(args, job, config.num_cores, &client->fabric)) return e;
  if (client->fabric) {
    client->process_index = client->fabric->process_index();
    client->num_processes = client->fabric->num_processes();
  }
  if (Status s = exec::Session::Create(config, &client->session)) return FromStatus(std::move(s), __func__);
  client->core = &client->session->client();
  if (client->fabric) {
    // Programs that use the process grid run across the job (before any compile makes the executor); where the
    // provider needs registered memory (efa), the arenas are registered once, here.
    Status s =
        client->session->JoinJob(std::make_unique<exec::Job>(client->fabric.get(), client->session->num_cores()));
    for (const auto& [base, bytes] : client->core->arena_regions()) {
      if (s) break;
      s = Annotate(client->fabric->RegisterMemory(base, bytes),
                   "registering the client's arenas with the job's fabric");
    }
    if (s) {
      Status ignored = exec::Session::Destroy(client->session);
      return FromStatus(std::move(s), __func__);
    }
  }
  BuildShells(client.get());
  args->client = client.release();
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_Client_Destroy(PJRT_Client_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_Destroy_Args, client);
  if (!args->client) return nullptr;
  NM_PJRT_BEGIN
  if (InCallerCallback()) {
    return ErrorF(PJRT_Error_Code_FAILED_PRECONDITION,
                  "PJRT_Client_Destroy inside %s is refused: it drains the client's queues", CallerCallbackName());
  }
  // Buffers and executables may not outlive their client (their memories and queues go with it): the client
  // is kept, usable, while any exists.
  if (Status s = args->client->session->CheckDestroy()) return FromStatus(std::move(s), __func__);
  std::unique_ptr<PJRT_Client> client(args->client);
  return FromStatus(exec::Session::Destroy(client->session), __func__);
  NM_PJRT_END
}

PJRT_Error* PJRT_Client_PlatformName(PJRT_Client_PlatformName_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_PlatformName_Args, platform_name_size);
  NM_PJRT_REQUIRE(args->client);
  const std::string& n = args->client->core->platform_name();
  args->platform_name = n.c_str();
  args->platform_name_size = n.size();
  return nullptr;
}

PJRT_Error* PJRT_Client_ProcessIndex(PJRT_Client_ProcessIndex_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_ProcessIndex_Args, process_index);
  NM_PJRT_REQUIRE(args->client);
  args->process_index = static_cast<int>(args->client->process_index);
  return nullptr;
}

PJRT_Error* PJRT_Client_PlatformVersion(PJRT_Client_PlatformVersion_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_PlatformVersion_Args, platform_version_size);
  NM_PJRT_REQUIRE(args->client);
  const std::string& v = args->client->core->platform_version();
  args->platform_version = v.c_str();
  args->platform_version_size = v.size();
  return nullptr;
}

PJRT_Error* PJRT_Client_Devices(PJRT_Client_Devices_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_Devices_Args, num_devices);
  NM_PJRT_REQUIRE(args->client);
  args->devices = args->client->all_devices.data();
  args->num_devices = args->client->all_devices.size();
  return nullptr;
}

PJRT_Error* PJRT_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_AddressableDevices_Args, num_addressable_devices);
  NM_PJRT_REQUIRE(args->client);
  args->addressable_devices = args->client->devices.data();
  args->num_addressable_devices = args->client->devices.size();
  return nullptr;
}

// `id` in `devices` (the job's by global id, or this process's by local id).
PJRT_Error* LookupDevice(const std::vector<PJRT_Device*>& devices, int id, const char* fn, const char* which,
                         PJRT_Device** out) {
  *out = nullptr;
  if (id < 0 || static_cast<size_t>(id) >= devices.size()) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: no NeuronCore with %s %d: there are %zu (0..%zu)", fn, which,
                  id, devices.size(), devices.size() - 1);
  }
  *out = devices[static_cast<size_t>(id)];
  return nullptr;
}

PJRT_Error* PJRT_Client_LookupDevice(PJRT_Client_LookupDevice_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_LookupDevice_Args, device);
  NM_PJRT_REQUIRE(args->client);
  return LookupDevice(args->client->all_devices, args->id, __func__, "id", &args->device);
}

PJRT_Error* PJRT_Client_LookupAddressableDevice(PJRT_Client_LookupAddressableDevice_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_LookupAddressableDevice_Args, addressable_device);
  NM_PJRT_REQUIRE(args->client);
  return LookupDevice(args->client->devices, args->local_hardware_id, __func__, "local_hardware_id",
                      &args->addressable_device);
}

PJRT_Error* PJRT_Client_AddressableMemories(PJRT_Client_AddressableMemories_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_AddressableMemories_Args, num_addressable_memories);
  NM_PJRT_REQUIRE(args->client);
  args->addressable_memories = args->client->memories.data();
  args->num_addressable_memories = args->client->memories.size();
  return nullptr;
}

// Device d runs replica d / P, partition d % P (the executor's grid): assignment[r * P + p] = r * P + p.
PJRT_Error* PJRT_Client_DefaultDeviceAssignment(PJRT_Client_DefaultDeviceAssignment_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_DefaultDeviceAssignment_Args, default_assignment);
  NM_PJRT_REQUIRE(args->client);
  const int64_t r = args->num_replicas, p = args->num_partitions;
  const size_t cores = args->client->devices.size(), job_devices = args->client->all_devices.size();
  if (r < 1 || p < 1 || static_cast<uint64_t>(r) * static_cast<uint64_t>(p) > job_devices) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "PJRT_Client_DefaultDeviceAssignment: %lld replicas x %lld partitions do not fit the %s's %zu "
                  "NeuronCores",
                  static_cast<long long>(r), static_cast<long long>(p),
                  args->client->num_processes > 1 ? "job" : "client", job_devices);
  }
  const size_t n = static_cast<size_t>(r * p);
  if (args->default_assignment_size < n || !args->default_assignment) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "PJRT_Client_DefaultDeviceAssignment: default_assignment holds %zu ints, the assignment needs %zu",
                  args->default_assignment ? args->default_assignment_size : 0, n);
  }
  // Global ids: this process's devices when they are enough, else the job's from device 0 (replica r, partition
  // c on device r * num_partitions + c: a launch across the processes).
  const size_t first = n <= cores ? static_cast<size_t>(args->client->process_index) * cores : 0;
  for (size_t i = 0; i < n; ++i) args->default_assignment[i] = static_cast<int>(first + i);
  return nullptr;
}

// ---- the client's topology (owned by the client: PJRT_TopologyDescription_Destroy leaves it)

PJRT_Error* PJRT_Client_TopologyDescription(PJRT_Client_TopologyDescription_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Client_TopologyDescription_Args, topology);
  NM_PJRT_REQUIRE(args->client);
  args->topology = &args->client->topology;
  return nullptr;
}

// ---- topologies without a client: "neuron" (or no name), options num_cores (default 2) and num_processes
// (default 1). Serialized as the text "neuron-topology num_cores=N num_processes=P".

constexpr char kPlatformName[] = "neuron";
const std::string& PlatformVersion() {
  static const std::string v = std::string("libneuronmem ") + std::to_string(NEURONMEM_VERSION_MAJOR) + "." +
                               std::to_string(NEURONMEM_VERSION_MINOR) + "." + std::to_string(NEURONMEM_VERSION_PATCH);
  return v;
}

// A new topology without a client; INVALID_ARGUMENT for counts out of range (the client's limits).
PJRT_Error* NewTopology(uint64_t num_cores, uint64_t num_processes, const char* fn, PJRT_TopologyDescription** out) {
  if (num_cores < 1 || num_cores > core::kMaxCores)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: num_cores %llu is not in 1..%u", fn,
                  static_cast<unsigned long long>(num_cores), core::kMaxCores);
  if (num_processes < 1 || num_processes > 65535)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: num_processes %llu is not in 1..65535", fn,
                  static_cast<unsigned long long>(num_processes));
  auto t = std::make_unique<PJRT_TopologyDescription>();
  InitTopology(static_cast<uint32_t>(num_cores), static_cast<uint32_t>(num_processes), t.get());
  *out = t.release();
  return nullptr;
}

PJRT_Error* PJRT_TopologyDescription_Create(PJRT_TopologyDescription_Create_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_Create_Args, topology);
  args->topology = nullptr;
  NM_PJRT_BEGIN
  const std::string_view name(args->topology_name ? args->topology_name : "",
                              args->topology_name ? args->topology_name_size : 0);
  if (!name.empty() && name != kPlatformName)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: topology_name '%.*s' is not \"neuron\" (or empty)", __func__,
                  static_cast<int>(name.size()), name.data());
  if (args->num_options && !args->create_options)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: create_options is NULL but num_options is %zu", __func__,
                  args->num_options);
  uint64_t num_cores = 2, num_processes = 1;
  for (size_t i = 0; i < args->num_options; ++i) {
    const PJRT_NamedValue& v = args->create_options[i];
    if (v.struct_size < PJRT_NamedValue_STRUCT_SIZE)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: create_options[%zu].struct_size is %zu, below %zu", __func__,
                    i, v.struct_size, static_cast<size_t>(PJRT_NamedValue_STRUCT_SIZE));
    const std::string n(NameOf(v));
    uint64_t* target = n == "num_cores"                           ? &num_cores
                       : n == "num_processes" || n == "num_nodes" ? &num_processes
                                                                  : nullptr;
    if (!target)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                    "%s: unknown create option '%s' (known: num_cores, num_processes or num_nodes)", __func__,
                    n.c_str());
    if (EnumValue(v.type) != PJRT_NamedValue_kInt64 || v.int64_value < 0)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: create option '%s' must be a non-negative int64", __func__,
                    n.c_str());
    *target = static_cast<uint64_t>(v.int64_value);
  }
  return NewTopology(num_cores, num_processes, __func__, &args->topology);
  NM_PJRT_END
}

PJRT_Error* PJRT_TopologyDescription_Destroy(PJRT_TopologyDescription_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_Destroy_Args, topology);
  if (args->topology && !args->topology->client) delete args->topology;  // a client's stays with the client
  return nullptr;
}

std::string SerializeTopology(const PJRT_TopologyDescription& t) {
  return "neuron-topology num_cores=" + std::to_string(t.num_cores) +
         " num_processes=" + std::to_string(t.num_processes);
}

PJRT_Error* PJRT_TopologyDescription_Serialize(PJRT_TopologyDescription_Serialize_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_Serialize_Args, serialized_topology_deleter);
  args->serialized_bytes = nullptr;
  args->serialized_bytes_size = 0;
  args->serialized_topology = nullptr;
  args->serialized_topology_deleter = nullptr;
  NM_PJRT_REQUIRE(args->topology);
  NM_PJRT_BEGIN
  HandOutBytes(SerializeTopology(*args->topology), &args->serialized_bytes, &args->serialized_bytes_size,
               &args->serialized_topology, &args->serialized_topology_deleter);
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_TopologyDescription_Deserialize(PJRT_TopologyDescription_Deserialize_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_Deserialize_Args, topology);
  args->topology = nullptr;
  NM_PJRT_BEGIN
  if (args->serialized_topology_size && !args->serialized_topology)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: serialized_topology is NULL but its size is %zu", __func__,
                  args->serialized_topology_size);
  const std::string text(args->serialized_topology ? args->serialized_topology : "",
                         args->serialized_topology ? args->serialized_topology_size : 0);
  unsigned long long cores = 0, processes = 0;
  int end = 0;
  if (text.find('\0') != std::string::npos ||
      std::sscanf(text.c_str(), "neuron-topology num_cores=%llu num_processes=%llu%n", &cores, &processes, &end) != 2 ||
      static_cast<size_t>(end) != text.size())
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "%s: the %zu bytes are not a serialized neuron topology (\"neuron-topology num_cores=N "
                  "num_processes=P\", from PJRT_TopologyDescription_Serialize)",
                  __func__, text.size());
  return NewTopology(cores, processes, __func__, &args->topology);
  NM_PJRT_END
}

PJRT_Error* PJRT_TopologyDescription_Fingerprint(PJRT_TopologyDescription_Fingerprint_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_Fingerprint_Args, fingerprint);
  NM_PJRT_REQUIRE(args->topology);
  NM_PJRT_BEGIN
  uint64_t h = 14695981039346656037ull;  // FNV-1a of the serialized form
  for (unsigned char c : SerializeTopology(*args->topology)) h = (h ^ c) * 1099511628211ull;
  args->fingerprint = h;
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_TopologyDescription_PlatformName(PJRT_TopologyDescription_PlatformName_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_PlatformName_Args, platform_name_size);
  NM_PJRT_REQUIRE(args->topology);
  args->platform_name = kPlatformName;
  args->platform_name_size = std::strlen(kPlatformName);
  return nullptr;
}

PJRT_Error* PJRT_TopologyDescription_PlatformVersion(PJRT_TopologyDescription_PlatformVersion_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_PlatformVersion_Args, platform_version_size);
  NM_PJRT_REQUIRE(args->topology);
  const std::string& v = PlatformVersion();
  args->platform_version = v.c_str();
  args->platform_version_size = v.size();
  return nullptr;
}

PJRT_Error* PJRT_TopologyDescription_GetDeviceDescriptions(PJRT_TopologyDescription_GetDeviceDescriptions_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_GetDeviceDescriptions_Args, num_descriptions);
  NM_PJRT_REQUIRE(args->topology);
  args->descriptions = args->topology->descriptions.data();
  args->num_descriptions = args->topology->descriptions.size();
  return nullptr;
}

PJRT_Error* PJRT_TopologyDescription_Attributes(PJRT_TopologyDescription_Attributes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_TopologyDescription_Attributes_Args, num_attributes);
  NM_PJRT_REQUIRE(args->topology);
  args->attributes = args->topology->attributes.data();
  args->num_attributes = args->topology->attributes.size();
  return nullptr;
}

// ---- device descriptions

PJRT_Error* PJRT_DeviceDescription_Id(PJRT_DeviceDescription_Id_Args* args) {
  NM_PJRT_ARGS(args, PJRT_DeviceDescription_Id_Args, id);
  NM_PJRT_REQUIRE(args->device_description);
  args->id = args->device_description->id;
  return nullptr;
}

PJRT_Error* PJRT_DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args* args) {
  NM_PJRT_ARGS(args, PJRT_DeviceDescription_ProcessIndex_Args, process_index);
  NM_PJRT_REQUIRE(args->device_description);
  args->process_index = args->device_description->process_index;
  return nullptr;
}

PJRT_Error* PJRT_DeviceDescription_Attributes(PJRT_DeviceDescription_Attributes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_DeviceDescription_Attributes_Args, attributes);
  NM_PJRT_REQUIRE(args->device_description);
  args->attributes = args->device_description->attributes.data();
  args->num_attributes = args->device_description->attributes.size();
  return nullptr;
}

PJRT_Error* PJRT_DeviceDescription_Kind(PJRT_DeviceDescription_Kind_Args* args) {
  NM_PJRT_ARGS(args, PJRT_DeviceDescription_Kind_Args, device_kind_size);
  NM_PJRT_REQUIRE(args->device_description);
  const std::string& k = args->device_description->kind;
  args->device_kind = k.c_str();
  args->device_kind_size = k.size();
  return nullptr;
}

// DebugString: "NC_v2 (NeuronCore(id=0, process_index=0, local_id=0))"; ToString: "NeuronCore(id=0, ...)", as
// the Neuron plugin prints them.
PJRT_Error* PJRT_DeviceDescription_DebugString(PJRT_DeviceDescription_DebugString_Args* args) {
  NM_PJRT_ARGS(args, PJRT_DeviceDescription_DebugString_Args, debug_string_size);
  NM_PJRT_REQUIRE(args->device_description);
  const std::string& s = args->device_description->debug_string;
  args->debug_string = s.c_str();
  args->debug_string_size = s.size();
  return nullptr;
}

PJRT_Error* PJRT_DeviceDescription_ToString(PJRT_DeviceDescription_ToString_Args* args) {
  NM_PJRT_ARGS(args, PJRT_DeviceDescription_ToString_Args, to_string_size);
  NM_PJRT_REQUIRE(args->device_description);
  const std::string& s = args->device_description->to_string;
  args->to_string = s.c_str();
  args->to_string_size = s.size();
  return nullptr;
}

// ---- devices

PJRT_Error* PJRT_Device_GetDescription(PJRT_Device_GetDescription_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Device_GetDescription_Args, device_description);
  NM_PJRT_REQUIRE(args->device);
  args->device_description = &args->device->description;
  return nullptr;
}

void NoDeviceAttributesToDelete(PJRT_Device_Attributes*) {}

// The description's attributes (local_id), owned by the device: the deleter frees nothing.
PJRT_Error* PJRT_Device_GetAttributes(PJRT_Device_GetAttributes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Device_GetAttributes_Args, attributes_deleter);
  NM_PJRT_REQUIRE(args->device);
  args->attributes = args->device->description.attributes.data();
  args->num_attributes = args->device->description.attributes.size();
  args->device_attributes = nullptr;
  args->attributes_deleter = NoDeviceAttributesToDelete;
  return nullptr;
}

PJRT_Error* PJRT_Device_IsAddressable(PJRT_Device_IsAddressable_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Device_IsAddressable_Args, is_addressable);
  NM_PJRT_REQUIRE(args->device);
  args->is_addressable = args->device->device != nullptr;
  return nullptr;
}

PJRT_Error* PJRT_Device_LocalHardwareId(PJRT_Device_LocalHardwareId_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Device_LocalHardwareId_Args, local_hardware_id);
  NM_PJRT_REQUIRE(args->device);
  args->local_hardware_id = static_cast<int>(args->device->description.local_id);
  return nullptr;
}

PJRT_Error* PJRT_Device_AddressableMemories(PJRT_Device_AddressableMemories_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Device_AddressableMemories_Args, num_memories);
  NM_PJRT_REQUIRE(args->device);
  args->memories = args->device->memories.data();
  args->num_memories = args->device->memories.size();
  return nullptr;
}

PJRT_Error* PJRT_Device_DefaultMemory(PJRT_Device_DefaultMemory_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Device_DefaultMemory_Args, memory);
  NM_PJRT_REQUIRE(args->device);
  if (PJRT_Error* e = CheckAddressable(args->device, __func__, "device")) return e;
  args->memory = args->device->by_kind[static_cast<size_t>(MemoryKind::kDevice)];
  return nullptr;
}

// The statistics of the device's default (device) memory: its arena.
PJRT_Error* PJRT_Device_MemoryStats(PJRT_Device_MemoryStats_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set);
  NM_PJRT_REQUIRE(args->device);
  if (PJRT_Error* e = CheckAddressable(args->device, __func__, "device")) return e;
  const memory::ArenaStats st = args->device->device->default_memory()->Stats();
  args->bytes_in_use = static_cast<int64_t>(st.bytes_in_use);
  args->peak_bytes_in_use = static_cast<int64_t>(st.peak_bytes_in_use);
  args->peak_bytes_in_use_is_set = true;
  args->num_allocs = static_cast<int64_t>(st.total_allocations);
  args->num_allocs_is_set = true;
  args->largest_alloc_size_is_set = false;
  args->bytes_limit = static_cast<int64_t>(st.capacity);
  args->bytes_limit_is_set = true;
  args->bytes_reserved_is_set = false;
  args->peak_bytes_reserved_is_set = false;
  args->bytes_reservable_limit_is_set = false;
  args->largest_free_block_bytes = static_cast<int64_t>(st.largest_free_block);
  args->largest_free_block_bytes_is_set = true;
  args->pool_bytes = static_cast<int64_t>(st.capacity);
  args->pool_bytes_is_set = true;
  args->peak_pool_bytes_is_set = false;
  return nullptr;
}

// ---- memories

PJRT_Error* PJRT_Memory_Id(PJRT_Memory_Id_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Memory_Id_Args, id);
  NM_PJRT_REQUIRE(args->memory);
  args->id = args->memory->memory->id();
  return nullptr;
}

PJRT_Error* PJRT_Memory_Kind(PJRT_Memory_Kind_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Memory_Kind_Args, kind_size);
  NM_PJRT_REQUIRE(args->memory);
  args->kind = args->memory->kind.c_str();
  args->kind_size = args->memory->kind.size();
  return nullptr;
}

PJRT_Error* PJRT_Memory_Kind_Id(PJRT_Memory_Kind_Id_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Memory_Kind_Id_Args, kind_id);
  NM_PJRT_REQUIRE(args->memory);
  args->kind_id = static_cast<int>(args->memory->memory->kind());
  return nullptr;
}

PJRT_Error* PJRT_Memory_DebugString(PJRT_Memory_DebugString_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Memory_DebugString_Args, debug_string_size);
  NM_PJRT_REQUIRE(args->memory);
  const std::string& s = args->memory->memory->debug_string();
  args->debug_string = s.c_str();
  args->debug_string_size = s.size();
  return nullptr;
}

PJRT_Error* PJRT_Memory_ToString(PJRT_Memory_ToString_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Memory_ToString_Args, to_string_size);
  NM_PJRT_REQUIRE(args->memory);
  const std::string& s = args->memory->memory->debug_string();  // "NeuronMemory(id=0, kind=device)"
  args->to_string = s.c_str();
  args->to_string_size = s.size();
  return nullptr;
}

PJRT_Error* PJRT_Memory_AddressableByDevices(PJRT_Memory_AddressableByDevices_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Memory_AddressableByDevices_Args, num_devices);
  NM_PJRT_REQUIRE(args->memory);
  args->devices = args->memory->devices.data();
  args->num_devices = args->memory->devices.size();
  return nullptr;
}

// ---- the memory-descriptions extension

PJRT_Error* PJRT_DeviceDescription_MemoryDescriptions(PJRT_DeviceDescription_MemoryDescriptions_Args* args) {
  NM_PJRT_ARGS(args, PJRT_DeviceDescription_MemoryDescriptions_Args, default_memory_index);
  NM_PJRT_REQUIRE(args->device_description);
  const PJRT_DeviceDescription& d = *args->device_description;
  args->memory_descriptions = d.memory_description_ptrs.data();
  args->num_memory_descriptions = d.memory_description_ptrs.size();
  args->default_memory_index = 0;  // device
  return nullptr;
}

PJRT_Error* PJRT_MemoryDescription_Kind(PJRT_MemoryDescription_Kind_Args* args) {
  NM_PJRT_ARGS(args, PJRT_MemoryDescription_Kind_Args, kind_id);
  NM_PJRT_REQUIRE(args->memory_description);
  args->kind = args->memory_description->kind_name.c_str();
  args->kind_size = args->memory_description->kind_name.size();
  args->kind_id = static_cast<int>(args->memory_description->kind);
  return nullptr;
}

}  // namespace

PJRT_MemoryDescriptions_Extension* MemoryDescriptionsExtension() {
  static PJRT_MemoryDescriptions_Extension ext = [] {
    PJRT_MemoryDescriptions_Extension e{};
    e.base.struct_size = PJRT_MemoryDescriptions_Extension_STRUCT_SIZE;
    e.base.type = PJRT_Extension_Type_MemoryDescriptions;
    e.base.next = nullptr;
    e.PJRT_DeviceDescription_MemoryDescriptions = PJRT_DeviceDescription_MemoryDescriptions;
    e.PJRT_MemoryDescription_Kind = PJRT_MemoryDescription_Kind;
    return e;
  }();
  return &ext;
}

void FillClient(PJRT_Api* api) {
  api->PJRT_Client_Create = PJRT_Client_Create;
  api->PJRT_Client_Destroy = PJRT_Client_Destroy;
  api->PJRT_Client_PlatformName = PJRT_Client_PlatformName;
  api->PJRT_Client_ProcessIndex = PJRT_Client_ProcessIndex;
  api->PJRT_Client_PlatformVersion = PJRT_Client_PlatformVersion;
  api->PJRT_Client_Devices = PJRT_Client_Devices;
  api->PJRT_Client_AddressableDevices = PJRT_Client_AddressableDevices;
  api->PJRT_Client_LookupDevice = PJRT_Client_LookupDevice;
  api->PJRT_Client_LookupAddressableDevice = PJRT_Client_LookupAddressableDevice;
  api->PJRT_Client_AddressableMemories = PJRT_Client_AddressableMemories;
  api->PJRT_Client_DefaultDeviceAssignment = PJRT_Client_DefaultDeviceAssignment;
  api->PJRT_Client_TopologyDescription = PJRT_Client_TopologyDescription;
  api->PJRT_TopologyDescription_Create = PJRT_TopologyDescription_Create;
  api->PJRT_TopologyDescription_Destroy = PJRT_TopologyDescription_Destroy;
  api->PJRT_TopologyDescription_Serialize = PJRT_TopologyDescription_Serialize;
  api->PJRT_TopologyDescription_Deserialize = PJRT_TopologyDescription_Deserialize;
  api->PJRT_TopologyDescription_Fingerprint = PJRT_TopologyDescription_Fingerprint;
  api->PJRT_TopologyDescription_PlatformName = PJRT_TopologyDescription_PlatformName;
  api->PJRT_TopologyDescription_PlatformVersion = PJRT_TopologyDescription_PlatformVersion;
  api->PJRT_TopologyDescription_GetDeviceDescriptions = PJRT_TopologyDescription_GetDeviceDescriptions;
  api->PJRT_TopologyDescription_Attributes = PJRT_TopologyDescription_Attributes;
  api->PJRT_DeviceDescription_Id = PJRT_DeviceDescription_Id;
  api->PJRT_DeviceDescription_ProcessIndex = PJRT_DeviceDescription_ProcessIndex;
  api->PJRT_DeviceDescription_Attributes = PJRT_DeviceDescription_Attributes;
  api->PJRT_DeviceDescription_Kind = PJRT_DeviceDescription_Kind;
  api->PJRT_DeviceDescription_DebugString = PJRT_DeviceDescription_DebugString;
  api->PJRT_DeviceDescription_ToString = PJRT_DeviceDescription_ToString;
  api->PJRT_Device_GetDescription = PJRT_Device_GetDescription;
  api->PJRT_Device_IsAddressable = PJRT_Device_IsAddressable;
  api->PJRT_Device_GetAttributes = PJRT_Device_GetAttributes;
  api->PJRT_Device_LocalHardwareId = PJRT_Device_LocalHardwareId;
  api->PJRT_Device_AddressableMemories = PJRT_Device_AddressableMemories;
  api->PJRT_Device_DefaultMemory = PJRT_Device_DefaultMemory;
  api->PJRT_Device_MemoryStats = PJRT_Device_MemoryStats;
  api->PJRT_Memory_Id = PJRT_Memory_Id;
  api->PJRT_Memory_Kind = PJRT_Memory_Kind;
  api->PJRT_Memory_Kind_Id = PJRT_Memory_Kind_Id;
  api->PJRT_Memory_DebugString = PJRT_Memory_DebugString;
  api->PJRT_Memory_ToString = PJRT_Memory_ToString;
  api->PJRT_Memory_AddressableByDevices = PJRT_Memory_AddressableByDevices;
}

}  // namespace neuronmem::pjrt
