// C shim for clients, devices, memories and the pinned-host allocator: argument and struct checks,
// conversion of the options to core::ClientConfig, then the C++ call. No exception crosses this boundary
// (NEURONMEM_API_BEGIN/END).
#include <neuronmem/client.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "api/handles.h"
#include "api/shim.h"
#include "base/status.h"
#include "core/client.h"
#include "dist/fabric.h"
#include "dist/store.h"

using neuronmem::InvalidArgument;
using neuronmem::NotFound;
namespace core = neuronmem::core;

neuronmem_client::neuronmem_client(std::unique_ptr<neuronmem::exec::Session> s)
    : session(std::move(s)), client(&session->client()) {
  device_shells.resize(client->devices().size());
  memory_shells.resize(client->memories().size());
  for (core::Memory* m : client->memories()) {
    neuronmem_memory_t& shell = memory_shells[static_cast<size_t>(m->id())];
    shell.memory = m;
    shell.client = this;
    shell.kind_name = std::string(neuronmem::MemoryKindName(m->kind()));
    memories.push_back(&shell);
  }
  for (core::Device* d : client->devices()) {
    neuronmem_device_t& shell = device_shells[static_cast<size_t>(d->id())];
    shell.device = d;
    shell.client = this;
    for (core::Memory* m : d->memories()) {
      neuronmem_memory_t* ms = memories[static_cast<size_t>(m->id())];
      shell.memories.push_back(ms);
      shell.by_kind[static_cast<size_t>(m->kind())] = ms;
    }
    devices.push_back(&shell);
  }
  for (core::Memory* m : client->memories()) {
    for (core::Device* d : m->devices()) memories[static_cast<size_t>(m->id())]->devices.push_back(devices[d->id()]);
  }
}

namespace {

// neuronmem_client_options_t -> core::ClientConfig (zero fields mean their defaults).
neuronmem::Status ResolveClientOptions(const neuronmem_client_options_t* options, core::ClientConfig* out) {
  core::ClientConfig c;
  if (options) {
    NEURONMEM_RETURN_IF_ERROR(neuronmem::api::CheckArgs(
        *options, NEURONMEM_MIN_SIZE(neuronmem_client_options_t, pinned_host_bytes), "neuronmem_client_options_t"));
    if (options->num_cores) c.num_cores = options->num_cores;
    const int64_t mlock_mode = neuronmem::api::EnumValue(options->mlock_mode);  // never loaded as the enum
    if (mlock_mode < 0 || mlock_mode > NEURONMEM_MLOCK_DISABLED) {
      return InvalidArgument("neuronmem_client_options_t.mlock_mode %lld is not a neuronmem_mlock_mode_t",
                             static_cast<long long>(mlock_mode));
    }
    c.mlock_mode = static_cast<neuronmem::memory::MlockMode>(mlock_mode);
    if (options->device_bytes_per_core) c.device_bytes_per_core = options->device_bytes_per_core;
    if (options->pinned_host_bytes) c.pinned_host_bytes = options->pinned_host_bytes;
  }
  *out = c;
  return neuronmem::Ok();
}

// The caller's kv_get / kv_put as the store the job bootstraps through.
class CallbackStore final : public neuronmem::dist::KvStore {
 public:
  CallbackStore(neuronmem_kv_get_fn get, neuronmem_kv_put_fn put, void* user) : get_(get), put_(put), user_(user) {}

  neuronmem::Status Get(const std::string& key, std::chrono::milliseconds timeout, std::string* value) override {
    char* v = nullptr;
    size_t n = 0;
    const uint64_t ns = static_cast<uint64_t>(timeout.count()) * 1000000u;
    neuronmem_status_t* returned = get_(user_, key.data(), key.size(), ns, &v, &n);
    std::unique_ptr<char, decltype(&free)> owned(v, &free);  // whatever it returned: the value is ours
    neuronmem::Status s = neuronmem::api::CallbackResult(returned, "kv_get");
    if (s) {
      if (s->code == NEURONMEM_STATUS_NOT_FOUND) s->code = NEURONMEM_STATUS_DEADLINE_EXCEEDED;  // absent: waited
      return neuronmem::Annotate(std::move(s), "kv_get('" + key + "')");
    }
    if (v == nullptr && n > 0) return InvalidArgument("kv_get('%s') succeeded without a value", key.c_str());
    if (n > neuronmem::dist::kMaxStoreValueBytes) {
      return InvalidArgument("kv_get('%s') returned %zu bytes (at most %zu)", key.c_str(), n,
                             neuronmem::dist::kMaxStoreValueBytes);
    }
    value->assign(v != nullptr ? v : "", n);
    return neuronmem::Ok();
  }

  neuronmem::Status Put(const std::string& key, const std::string& value) override {
    return neuronmem::Annotate(
        neuronmem::api::CallbackResult(put_(user_, key.data(), key.size(), value.data(), value.size()), "kv_put"),
        "kv_put('" + key + "')");
  }

 private:
  neuronmem_kv_get_fn get_;
  neuronmem_kv_put_fn put_;
  void* user_;
};

// Joins the job the options describe (nothing for a client of one process).
neuronmem::Status JoinJob(const neuronmem_client_options_t* options, uint32_t num_cores,
                          std::unique_ptr<neuronmem::dist::Fabric>* out) {
  if (!options || !NEURONMEM_HAS_FIELD(options, neuronmem_client_options_t, num_processes) ||
      options->num_processes <= 1) {
    if (options && NEURONMEM_HAS_FIELD(options, neuronmem_client_options_t, process_index) &&
        options->process_index != 0) {
      return InvalidArgument("neuronmem_client_options_t.process_index %u is out of range (a job of one process)",
                             options->process_index);
    }
    return neuronmem::Ok();
  }
  if (!NEURONMEM_HAS_FIELD(options, neuronmem_client_options_t, fabric_interface)) {
    return InvalidArgument(
        "neuronmem_client_options_t: num_processes %u needs struct_size to cover the kv_get, "
        "kv_put and timeout fields",
        options->num_processes);
  }
  if (!options->kv_get || !options->kv_put) {
    return InvalidArgument("neuronmem_client_options_t: a job of %u processes needs kv_get and kv_put",
                           options->num_processes);
  }
  if (options->process_index >= options->num_processes) {
    return InvalidArgument("neuronmem_client_options_t.process_index %u is out of range (num_processes %u)",
                           options->process_index, options->num_processes);
  }
  CallbackStore store(options->kv_get, options->kv_put, options->kv_user_data);
  neuronmem::dist::FabricOptions f;
  f.process_index = options->process_index;
  f.num_processes = options->num_processes;
  f.store = &store;
  f.local_cores = num_cores;
  auto ms = [](uint64_t ns) { return std::chrono::milliseconds(ns == 0 ? 30000 : (ns + 999999) / 1000000); };
  f.bootstrap_timeout = ms(options->bootstrap_timeout_ns);
  f.peer_timeout = ms(options->peer_timeout_ns);
  if (options->fabric_interface) f.node = options->fabric_interface;
  return neuronmem::dist::Fabric::Create(f, out);
}

// The job-wide description strings of global device `id` (owned by process id / num_cores).
const std::array<std::string, 2>& Described(neuronmem_client_t* client, int32_t id) {
  std::lock_guard<std::mutex> lock(client->described_mu);
  auto it = client->described.find(id);
  if (it != client->described.end()) return it->second;
  const int32_t cores = static_cast<int32_t>(client->devices.size());
  std::string debug = "NeuronCore(id=" + std::to_string(id) + ", process_index=" + std::to_string(id / cores) +
                      ", local_id=" + std::to_string(id % cores) + ")";
  std::string to_string = client->devices[0]->device->kind() + " (" + debug + ")";
  return client->described.emplace(id, std::array<std::string, 2>{debug, to_string}).first->second;
}

}  // namespace

extern "C" {

neuronmem_status_t* neuronmem_client_create(const neuronmem_client_options_t* options,
                                            neuronmem_client_t** out_client) {
  NEURONMEM_REQUIRE(out_client);
  *out_client = nullptr;
  NEURONMEM_API_BEGIN
  core::ClientConfig config;
  if (auto s = ResolveClientOptions(options, &config)) return s.release();
  std::unique_ptr<neuronmem::dist::Fabric> fabric;
  if (auto s = JoinJob(options, config.num_cores, &fabric)) return s.release();
  std::unique_ptr<neuronmem::exec::Session> session;
  if (auto s = neuronmem::exec::Session::Create(config, &session)) return s.release();
  if (fabric) {
    // Programs that use the process grid run across the job (before any compile makes the executor).
    const uint32_t cores = session->num_cores();
    if (auto s = session->JoinJob(std::make_unique<neuronmem::exec::Job>(fabric.get(), cores))) return s.release();
  }
  *out_client = new neuronmem_client_t(std::move(session));
  if (fabric) {
    // Where the provider needs registered memory (efa), the arenas are registered once, here.
    for (const auto& [base, bytes] : (*out_client)->client->arena_regions()) {
      if (auto s = fabric->RegisterMemory(base, bytes)) {
        std::unique_ptr<neuronmem_client_t> shell(*out_client);
        *out_client = nullptr;
        neuronmem::Status ignored = neuronmem::exec::Session::Destroy(shell->session);
        return neuronmem::Annotate(std::move(s), "registering the client's arenas with the job's fabric").release();
      }
    }
    (*out_client)->process_index = fabric->process_index();
    (*out_client)->num_processes = fabric->num_processes();
    (*out_client)->fabric = std::move(fabric);
  }
  if (options && NEURONMEM_HAS_FIELD(options, neuronmem_client_options_t, execution_timeout_ns))
    (*out_client)->execution_timeout_ns = options->execution_timeout_ns;
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_client_destroy(neuronmem_client_t* client) {
  NEURONMEM_API_BEGIN
  if (!client) return nullptr;
  if (neuronmem::Status s = neuronmem::api::RefuseBlockingInCallback("neuronmem_client_destroy (it drains the "
                                                                     "client's queues) is refused")) {
    return s.release();
  }
  if (neuronmem::Status s = client->session->CheckDestroy()) return s.release();  // nothing destroyed
  std::unique_ptr<neuronmem_client_t> shell(client);
  if (shell->fabric) {
    // The arenas' registrations go before the arenas (nothing of the client is in flight now).
    for (const auto& region : shell->client->arena_regions()) {
      neuronmem::Status ignored = shell->fabric->UnregisterMemory(region.first);
    }
  }
  return neuronmem::exec::Session::Destroy(shell->session).release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_client_platform_name(const neuronmem_client_t* client, neuronmem_string_t* out) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out);
  *out = {client->client->platform_name().c_str(), client->client->platform_name().size()};
  return nullptr;
}

neuronmem_status_t* neuronmem_client_platform_version(const neuronmem_client_t* client, neuronmem_string_t* out) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out);
  *out = {client->client->platform_version().c_str(), client->client->platform_version().size()};
  return nullptr;
}

neuronmem_status_t* neuronmem_client_extensions(const neuronmem_client_t* client, const neuronmem_string_t** out_names,
                                                size_t* out_count) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out_names);
  NEURONMEM_REQUIRE(out_count);
  *out_names = client->extensions.data();
  *out_count = client->extensions.size();
  return nullptr;
}

neuronmem_status_t* neuronmem_client_devices(const neuronmem_client_t* client, neuronmem_device_t* const** out_devices,
                                             size_t* out_count) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out_devices);
  NEURONMEM_REQUIRE(out_count);
  *out_devices = client->devices.data();
  *out_count = client->devices.size();
  return nullptr;
}

neuronmem_status_t* neuronmem_client_memories(const neuronmem_client_t* client,
                                              neuronmem_memory_t* const** out_memories, size_t* out_count) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out_memories);
  NEURONMEM_REQUIRE(out_count);
  *out_memories = client->memories.data();
  *out_count = client->memories.size();
  return nullptr;
}

neuronmem_status_t* neuronmem_client_lookup_device(const neuronmem_client_t* client, int32_t id,
                                                   neuronmem_device_t** out_device) {
  NEURONMEM_REQUIRE(out_device);
  *out_device = nullptr;
  NEURONMEM_REQUIRE(client);
  const int64_t cores = static_cast<int64_t>(client->devices.size());
  const int64_t first = static_cast<int64_t>(client->process_index) * cores;
  if (id >= 0 && id < cores * client->num_processes && (id < first || id >= first + cores)) {
    return NotFound(
               "NeuronCore %d belongs to process %lld of the job, not to this client (process %u, devices "
               "%lld..%lld): another process's devices are not addressable",
               id, static_cast<long long>(id / cores), client->process_index, static_cast<long long>(first),
               static_cast<long long>(first + cores - 1))
        .release();
  }
  if (!client->client->device(static_cast<int32_t>(id - first))) {
    return NotFound("no NeuronCore with id %d: this client has %lld (ids %lld..%lld)", id,
                    static_cast<long long>(cores), static_cast<long long>(first),
                    static_cast<long long>(first + cores - 1))
        .release();
  }
  *out_device = client->devices[static_cast<size_t>(id - first)];
  return nullptr;
}

neuronmem_status_t* neuronmem_client_lookup_memory(const neuronmem_client_t* client, int32_t id,
                                                   neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(client);
  if (!client->client->memory(id)) {
    return NotFound("no memory with id %d: this client has %zu memories (ids 0..%zu)", id, client->memories.size(),
                    client->memories.size() - 1)
        .release();
  }
  *out_memory = client->memories[static_cast<size_t>(id)];
  return nullptr;
}

neuronmem_status_t* neuronmem_device_memory_of_kind(const neuronmem_device_t* device, neuronmem_memory_kind_t kind,
                                                    neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(device);
  neuronmem::MemoryKind k;
  if (!neuronmem::MemoryKindFromC(neuronmem::api::EnumValue(kind), &k)) {
    return InvalidArgument("%lld is not a neuronmem_memory_kind_t (device=0, pinned_host=1, unpinned_host=2)",
                           static_cast<long long>(neuronmem::api::EnumValue(kind)))
        .release();
  }
  *out_memory = device->by_kind[static_cast<size_t>(k)];
  return nullptr;
}

neuronmem_status_t* neuronmem_device_describe(const neuronmem_device_t* device, neuronmem_device_description_t* out) {
  NEURONMEM_REQUIRE(device);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_device_description_t, to_string);
  const core::Device& d = *device->device;
  neuronmem_client_t* client = device->client;
  out->id = static_cast<int32_t>(client->process_index * client->devices.size()) + d.id();
  out->process_index = static_cast<int32_t>(client->process_index);
  out->local_id = d.id();
  out->reserved = 0;
  out->kind = {d.kind().c_str(), d.kind().size()};
  if (client->num_processes > 1) {
    const auto& strings = Described(client, out->id);
    out->debug_string = {strings[0].c_str(), strings[0].size()};
    out->to_string = {strings[1].c_str(), strings[1].size()};
  } else {
    out->debug_string = {d.debug_string().c_str(), d.debug_string().size()};
    out->to_string = {d.to_string().c_str(), d.to_string().size()};
  }
  return nullptr;
}

neuronmem_status_t* neuronmem_client_process(const neuronmem_client_t* client, uint32_t* out_process_index,
                                             uint32_t* out_num_processes) {
  NEURONMEM_REQUIRE(out_process_index);
  NEURONMEM_REQUIRE(out_num_processes);
  *out_process_index = 0;
  *out_num_processes = 0;
  NEURONMEM_REQUIRE(client);
  *out_process_index = client->process_index;
  *out_num_processes = client->num_processes;
  return nullptr;
}

neuronmem_status_t* neuronmem_client_job_traffic(const neuronmem_client_t* client, neuronmem_job_traffic_t* out) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out);
  if (out->struct_size < NEURONMEM_JOB_TRAFFIC_STRUCT_SIZE)
    return neuronmem::InvalidArgument("neuronmem_job_traffic_t.struct_size %zu is below the first version's %zu",
                                      out->struct_size, static_cast<size_t>(NEURONMEM_JOB_TRAFFIC_STRUCT_SIZE))
        .release();
  const neuronmem::dist::FabricStats s = client->fabric ? client->fabric->stats() : neuronmem::dist::FabricStats{};
  out->messages_sent = s.messages_sent;
  out->bytes_sent = s.bytes_sent;
  out->messages_received = s.messages_received;
  out->bytes_received = s.bytes_received;
  out->messages_dropped = s.messages_dropped;
  return nullptr;
}

neuronmem_status_t* neuronmem_client_describe_device_id(const neuronmem_client_t* client, int32_t id,
                                                        neuronmem_device_description_t* out) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_device_description_t, to_string);
  NEURONMEM_API_BEGIN
  const int64_t cores = static_cast<int64_t>(client->devices.size());
  const int64_t first = static_cast<int64_t>(client->process_index) * cores;
  if (id >= first && id < first + cores) {
    return neuronmem_device_describe(client->devices[static_cast<size_t>(id - first)], out);
  }
  if (id < 0 || id >= cores * client->num_processes) {
    return NotFound("no NeuronCore with id %d in the job: %u process(es) of %lld cores (ids 0..%lld)", id,
                    client->num_processes, static_cast<long long>(cores),
                    static_cast<long long>(cores * client->num_processes - 1))
        .release();
  }
  const core::Device& d = *client->devices[0]->device;
  const auto& strings = Described(const_cast<neuronmem_client_t*>(client), id);
  out->id = id;
  out->process_index = static_cast<int32_t>(id / cores);
  out->local_id = static_cast<int32_t>(id % cores);
  out->reserved = 0;
  out->kind = {d.kind().c_str(), d.kind().size()};
  out->debug_string = {strings[0].c_str(), strings[0].size()};
  out->to_string = {strings[1].c_str(), strings[1].size()};
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_directory_store_get(void* directory, const char* key, size_t key_size,
                                                  uint64_t timeout_ns, char** out_value, size_t* out_value_size) {
  NEURONMEM_REQUIRE(out_value);
  NEURONMEM_REQUIRE(out_value_size);
  *out_value = nullptr;
  *out_value_size = 0;
  NEURONMEM_REQUIRE(directory);
  NEURONMEM_REQUIRE(key);
  NEURONMEM_API_BEGIN
  std::unique_ptr<neuronmem::dist::KvStore> store;
  if (auto s = neuronmem::dist::NewDirectoryStore(static_cast<const char*>(directory), &store)) return s.release();
  std::string value;
  const auto timeout = std::chrono::milliseconds(timeout_ns / 1000000 + (timeout_ns % 1000000 != 0));
  if (auto s = store->Get(std::string(key, key_size), timeout, &value)) return s.release();
  char* copy = static_cast<char*>(malloc(value.size() + 1));
  if (copy == nullptr) return neuronmem::ResourceExhausted("directory store: out of memory").release();
  memcpy(copy, value.data(), value.size());
  copy[value.size()] = '\0';
  *out_value = copy;
  *out_value_size = value.size();
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_directory_store_put(void* directory, const char* key, size_t key_size, const char* value,
                                                  size_t value_size) {
  NEURONMEM_REQUIRE(directory);
  NEURONMEM_REQUIRE(key);
  if (value_size > 0) NEURONMEM_REQUIRE(value);
  NEURONMEM_API_BEGIN
  std::unique_ptr<neuronmem::dist::KvStore> store;
  if (auto s = neuronmem::dist::NewDirectoryStore(static_cast<const char*>(directory), &store)) return s.release();
  return store->Put(std::string(key, key_size), std::string(value != nullptr ? value : "", value_size)).release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_device_addressable_memories(const neuronmem_device_t* device,
                                                          neuronmem_memory_t* const** out_memories, size_t* out_count) {
  NEURONMEM_REQUIRE(device);
  NEURONMEM_REQUIRE(out_memories);
  NEURONMEM_REQUIRE(out_count);
  *out_memories = device->memories.data();
  *out_count = device->memories.size();
  return nullptr;
}

neuronmem_status_t* neuronmem_device_default_memory(const neuronmem_device_t* device, neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(device);
  *out_memory = device->by_kind[static_cast<size_t>(neuronmem::MemoryKind::kDevice)];
  return nullptr;
}

neuronmem_status_t* neuronmem_memory_describe(const neuronmem_memory_t* memory, neuronmem_memory_description_t* out) {
  NEURONMEM_REQUIRE(memory);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_memory_description_t, to_string);
  const core::Memory& m = *memory->memory;
  out->id = m.id();
  out->kind_id = static_cast<neuronmem_memory_kind_t>(m.kind());
  out->kind = {memory->kind_name.c_str(), memory->kind_name.size()};
  out->debug_string = {m.debug_string().c_str(), m.debug_string().size()};
  out->to_string = out->debug_string;
  return nullptr;
}

neuronmem_status_t* neuronmem_memory_addressable_devices(const neuronmem_memory_t* memory,
                                                         neuronmem_device_t* const** out_devices, size_t* out_count) {
  NEURONMEM_REQUIRE(memory);
  NEURONMEM_REQUIRE(out_devices);
  NEURONMEM_REQUIRE(out_count);
  *out_devices = memory->devices.data();
  *out_count = memory->devices.size();
  return nullptr;
}

neuronmem_status_t* neuronmem_memory_kind(const neuronmem_memory_t* memory, neuronmem_memory_kind_t* out_kind) {
  NEURONMEM_REQUIRE(memory);
  NEURONMEM_REQUIRE(out_kind);
  *out_kind = static_cast<neuronmem_memory_kind_t>(memory->memory->kind());
  return nullptr;
}

neuronmem_status_t* neuronmem_memory_client(const neuronmem_memory_t* memory, neuronmem_client_t** out_client) {
  NEURONMEM_REQUIRE(out_client);
  *out_client = nullptr;
  NEURONMEM_REQUIRE(memory);
  *out_client = memory->client;
  return nullptr;
}

neuronmem_status_t* neuronmem_memory_stats(const neuronmem_memory_t* memory, neuronmem_memory_stats_t* out) {
  NEURONMEM_REQUIRE(memory);
  NEURONMEM_REQUIRE(out);
  NEURONMEM_CHECK_STRUCT_SIZE(out, neuronmem_memory_stats_t, is_shared);
  const neuronmem::memory::ArenaStats st = memory->memory->Stats();
  out->capacity = st.capacity;
  out->bytes_in_use = st.bytes_in_use;
  out->peak_bytes_in_use = st.peak_bytes_in_use;
  out->live_allocations = st.live_allocations;
  out->largest_free_block = st.largest_free_block;
  out->total_allocations = st.total_allocations;
  out->is_locked = st.locked;
  out->is_shared = memory->memory->shared();
  return nullptr;
}

neuronmem_status_t* neuronmem_client_host_allocate(neuronmem_client_t* client, uint64_t size, uint64_t alignment,
                                                   void** out_ptr) {
  NEURONMEM_REQUIRE(out_ptr);
  *out_ptr = nullptr;
  NEURONMEM_REQUIRE(client);
  return client->client->pinned_arena().Allocate(size, alignment, out_ptr).release();
}

neuronmem_status_t* neuronmem_client_host_free(neuronmem_client_t* client, void* ptr) {
  NEURONMEM_REQUIRE(client);
  if (!ptr) return nullptr;
  return client->client->pinned_arena().Free(ptr).release();
}

neuronmem_status_t* neuronmem_client_host_is_pinned(const neuronmem_client_t* client, const void* ptr, uint64_t size,
                                                    bool* out) {
  NEURONMEM_REQUIRE(out);
  *out = false;
  NEURONMEM_REQUIRE(client);
  *out = ptr && client->client->pinned_arena().Contains(ptr, size);
  return nullptr;
}

}  // extern "C"
