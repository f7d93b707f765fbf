// C shim for clients, devices, memories and the pinned-host allocator: argument checks, then the
// subsystem call. No exception crosses this boundary (NEURONMEM_API_BEGIN/END).
#include <neuronmem/client.h>

#include <cstddef>

#include "api/shim.h"
#include "base/status.h"
#include "core/client.h"

using neuronmem::InvalidArgument;
using neuronmem::NotFound;

extern "C" {

neuronmem_status_t* neuronmem_client_create(const neuronmem_client_options_t* options,
                                            neuronmem_client_t** out_client) {
  NEURONMEM_REQUIRE(out_client);
  *out_client = nullptr;
  NEURONMEM_API_BEGIN
  neuronmem::ClientConfig config;
  if (auto s = neuronmem::ResolveClientOptions(options, &config)) return s.release();
  std::unique_ptr<neuronmem_client_t> client;
  if (auto s = neuronmem::CreateClient(config, &client)) return s.release();
  *out_client = client.release();
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_client_destroy(neuronmem_client_t* client) {
  NEURONMEM_API_BEGIN
  return neuronmem::DestroyClient(std::unique_ptr<neuronmem_client_t>(client)).release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_client_platform_name(const neuronmem_client_t* client, neuronmem_string_t* out) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out);
  *out = {client->platform_name.c_str(), client->platform_name.size()};
  return nullptr;
}

neuronmem_status_t* neuronmem_client_platform_version(const neuronmem_client_t* client, neuronmem_string_t* out) {
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out);
  *out = {client->platform_version.c_str(), client->platform_version.size()};
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
  neuronmem_device_t* d = client->DeviceById(id);
  if (!d) {
    return NotFound("no NeuronCore with id %d: this client has %zu (ids 0..%zu)", id, client->devices.size(),
                    client->devices.size() - 1)
        .release();
  }
  *out_device = d;
  return nullptr;
}

neuronmem_status_t* neuronmem_client_lookup_memory(const neuronmem_client_t* client, int32_t id,
                                                   neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(client);
  neuronmem_memory_t* m = client->MemoryById(id);
  if (!m) {
    return NotFound("no memory with id %d: this client has %zu memories (ids 0..%zu)", id, client->memories.size(),
                    client->memories.size() - 1)
        .release();
  }
  *out_memory = m;
  return nullptr;
}

neuronmem_status_t* neuronmem_device_memory_of_kind(const neuronmem_device_t* device, neuronmem_memory_kind_t kind,
                                                    neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(device);
  if (static_cast<uint32_t>(kind) > NEURONMEM_MEMORY_KIND_UNPINNED_HOST) {
    return InvalidArgument("%d is not a neuronmem_memory_kind_t (device=0, pinned_host=1, unpinned_host=2)",
                           static_cast<int>(kind))
        .release();
  }
  *out_memory = device->by_kind[static_cast<size_t>(kind)];
  return nullptr;
}

neuronmem_status_t* neuronmem_device_describe(const neuronmem_device_t* device, neuronmem_device_description_t* out) {
  NEURONMEM_REQUIRE(device);
  NEURONMEM_REQUIRE(out);
  if (auto* s = neuronmem::api::CheckStructSize(out->struct_size,
                                                NEURONMEM_MIN_SIZE(neuronmem_device_description_t, to_string),
                                                "neuronmem_device_description_t")) {
    return s;
  }
  out->id = device->id;
  out->process_index = 0;
  out->local_id = device->id;
  out->reserved = 0;
  out->kind = {device->kind.c_str(), device->kind.size()};
  out->debug_string = {device->debug_string.c_str(), device->debug_string.size()};
  out->to_string = {device->to_string.c_str(), device->to_string.size()};
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
  *out_memory = device->default_memory();
  return nullptr;
}

neuronmem_status_t* neuronmem_memory_describe(const neuronmem_memory_t* memory, neuronmem_memory_description_t* out) {
  NEURONMEM_REQUIRE(memory);
  NEURONMEM_REQUIRE(out);
  if (auto* s = neuronmem::api::CheckStructSize(out->struct_size,
                                                NEURONMEM_MIN_SIZE(neuronmem_memory_description_t, to_string),
                                                "neuronmem_memory_description_t")) {
    return s;
  }
  out->id = memory->id;
  out->kind_id = static_cast<int32_t>(memory->kind);
  out->kind = {memory->kind_name.c_str(), memory->kind_name.size()};
  out->debug_string = {memory->debug_string.c_str(), memory->debug_string.size()};
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
  *out_kind = memory->kind;
  return nullptr;
}

neuronmem_status_t* neuronmem_memory_client(const neuronmem_memory_t* memory, neuronmem_client_t** out_client) {
  NEURONMEM_REQUIRE(out_client);
  *out_client = nullptr;
  NEURONMEM_REQUIRE(memory);
  *out_client = memory->client;
  return nullptr;
}

neuronmem_status_t* neuronmem_memory_get_stats(const neuronmem_memory_t* memory, neuronmem_memory_stats_t* out) {
  NEURONMEM_REQUIRE(memory);
  NEURONMEM_REQUIRE(out);
  if (auto* s = neuronmem::api::CheckStructSize(
          out->struct_size, NEURONMEM_MIN_SIZE(neuronmem_memory_stats_t, is_shared), "neuronmem_memory_stats_t")) {
    return s;
  }
  const neuronmem::memory::ArenaStats st = memory->Stats();
  out->capacity = st.capacity;
  out->bytes_in_use = st.bytes_in_use;
  out->peak_bytes_in_use = st.peak_bytes_in_use;
  out->live_allocations = st.live_allocations;
  out->largest_free_block = st.largest_free_block;
  out->total_allocations = st.total_allocations;
  out->is_locked = st.locked ? 1 : 0;
  out->is_shared = (memory->kind != NEURONMEM_MEMORY_KIND_DEVICE && memory->client->devices.size() > 1) ? 1 : 0;
  return nullptr;
}

neuronmem_status_t* neuronmem_host_allocate(neuronmem_client_t* client, uint64_t size, uint64_t alignment,
                                            void** out_ptr) {
  NEURONMEM_REQUIRE(out_ptr);
  *out_ptr = nullptr;
  NEURONMEM_REQUIRE(client);
  return client->pinned_arena->Allocate(size, alignment, out_ptr).release();
}

neuronmem_status_t* neuronmem_host_free(neuronmem_client_t* client, void* ptr) {
  NEURONMEM_REQUIRE(client);
  if (!ptr) return nullptr;
  return client->pinned_arena->Free(ptr).release();
}

neuronmem_status_t* neuronmem_host_is_pinned(const neuronmem_client_t* client, const void* ptr, uint64_t size,
                                             int32_t* out) {
  NEURONMEM_REQUIRE(out);
  *out = 0;
  NEURONMEM_REQUIRE(client);
  *out = (ptr && client->pinned_arena->Contains(ptr, size)) ? 1 : 0;
  return nullptr;
}

}  // extern "C"
