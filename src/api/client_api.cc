// C shim for clients, devices, memories and the pinned-host allocator: argument and struct checks,
// conversion of the options to core::ClientConfig, then the C++ call. No exception crosses this boundary
// (NEURONMEM_API_BEGIN/END).
#include <neuronmem/client.h>

#include <cstddef>

#include "api/handles.h"
#include "api/shim.h"
#include "base/status.h"
#include "core/client.h"

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

}  // namespace

extern "C" {

neuronmem_status_t* neuronmem_client_create(const neuronmem_client_options_t* options,
                                            neuronmem_client_t** out_client) {
  NEURONMEM_REQUIRE(out_client);
  *out_client = nullptr;
  NEURONMEM_API_BEGIN
  core::ClientConfig config;
  if (auto s = ResolveClientOptions(options, &config)) return s.release();
  std::unique_ptr<neuronmem::exec::Session> session;
  if (auto s = neuronmem::exec::Session::Create(config, &session)) return s.release();
  *out_client = new neuronmem_client_t(std::move(session));
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
  if (!client->client->device(id)) {
    return NotFound("no NeuronCore with id %d: this client has %zu (ids 0..%zu)", id, client->devices.size(),
                    client->devices.size() - 1)
        .release();
  }
  *out_device = client->devices[static_cast<size_t>(id)];
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
  out->id = d.id();
  out->process_index = 0;
  out->local_id = d.id();
  out->reserved = 0;
  out->kind = {d.kind().c_str(), d.kind().size()};
  out->debug_string = {d.debug_string().c_str(), d.debug_string().size()};
  out->to_string = {d.to_string().c_str(), d.to_string().size()};
  return nullptr;
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
