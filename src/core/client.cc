// The client: resolves options, creates the arenas, the devices and memories with their stable ids, and
// the copy engine; tears them down in the reverse order and reports what was still live.
#include "core/client.h"

#include <neuronmem/version.h>

#include <cinttypes>
#include <cstring>

#include "copy/copy_engine.h"

namespace neuronmem {
namespace {

constexpr uint32_t kMaxCores = 64;
constexpr uint64_t kMinDeviceBytes = 1ull << 20;
constexpr uint64_t kMinPinnedBytes = 32ull << 20;
constexpr uint64_t kMaxArenaBytes = 1ull << 40;  // 1 TiB: a sanity bound, far above this machine

const char* const kKindNames[3] = {"device", "pinned_host", "unpinned_host"};

}  // namespace

const char* KindName(neuronmem_memory_kind_t kind) {
  auto k = static_cast<uint32_t>(kind);
  return k < 3 ? kKindNames[k] : "unknown";
}

bool KindFromName(const std::string& name, neuronmem_memory_kind_t* out) {
  for (uint32_t k = 0; k < 3; ++k) {
    if (name == kKindNames[k]) {
      *out = static_cast<neuronmem_memory_kind_t>(k);
      return true;
    }
  }
  return false;
}

Status ResolveClientOptions(const neuronmem_client_options_t* options, ClientConfig* out) {
  ClientConfig c;
  if (options) {
    const size_t min_size = offsetof(neuronmem_client_options_t, pinned_host_bytes) + sizeof(uint64_t);
    if (options->struct_size < min_size) {
      return InvalidArgument(
          "neuronmem_client_options_t.struct_size is %zu, smaller than the minimum %zu; set it to "
          "sizeof(neuronmem_client_options_t)",
          options->struct_size, min_size);
    }
    if (options->extension) {
      return InvalidArgument("neuronmem_client_options_t.extension must be NULL (no extensions are defined)");
    }
    if (options->num_cores) c.num_cores = options->num_cores;
    if (options->mlock_mode > NEURONMEM_MLOCK_DISABLED) {
      return InvalidArgument("neuronmem_client_options_t.mlock_mode %u is not a neuronmem_mlock_mode_t",
                             options->mlock_mode);
    }
    c.mlock_mode = static_cast<neuronmem_mlock_mode_t>(options->mlock_mode);
    if (options->device_bytes_per_core) c.device_bytes_per_core = options->device_bytes_per_core;
    if (options->pinned_host_bytes) c.pinned_host_bytes = options->pinned_host_bytes;
  }
  if (c.num_cores > kMaxCores) {
    return InvalidArgument("num_cores %u exceeds the maximum of %u NeuronCores", c.num_cores, kMaxCores);
  }
  if (c.device_bytes_per_core < kMinDeviceBytes || c.device_bytes_per_core > kMaxArenaBytes) {
    return InvalidArgument("device_bytes_per_core %" PRIu64 " is outside [%" PRIu64 ", %" PRIu64 "]",
                           c.device_bytes_per_core, kMinDeviceBytes, kMaxArenaBytes);
  }
  if (c.pinned_host_bytes < kMinPinnedBytes || c.pinned_host_bytes > kMaxArenaBytes) {
    return InvalidArgument("pinned_host_bytes %" PRIu64 " is outside [%" PRIu64 ", %" PRIu64 "]", c.pinned_host_bytes,
                           kMinPinnedBytes, kMaxArenaBytes);
  }
  *out = c;
  return Ok();
}

Status CreateClient(const ClientConfig& config, std::unique_ptr<neuronmem_client_t>* out) {
  auto client = std::make_unique<neuronmem_client_t>();
  client->config = config;
  client->platform_version = std::string("libneuronmem ") + std::to_string(NEURONMEM_VERSION_MAJOR) + "." +
                             std::to_string(NEURONMEM_VERSION_MINOR) + "." + std::to_string(NEURONMEM_VERSION_PATCH);
  client->extension_storage = {"memory_descriptions", "memory_stats", "host_allocator", "copy_engine",
                               "placement_manifest"};
  for (const auto& e : client->extension_storage) client->extensions.push_back({e.c_str(), e.size()});

  const uint32_t n = config.num_cores;
  // Memories first (ids: device 2k, pinned_host 2k+1, unpinned_host 2n+k), so names are known to the
  // arenas for their messages.
  client->memory_storage.resize(3 * static_cast<size_t>(n));
  client->memories.resize(3 * static_cast<size_t>(n));
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t kind = 0; kind < 3; ++kind) {
      auto m = std::make_unique<neuronmem_memory_t>();
      m->client = client.get();
      m->kind = static_cast<neuronmem_memory_kind_t>(kind);
      m->core = static_cast<int32_t>(k);
      m->id = kind == NEURONMEM_MEMORY_KIND_DEVICE        ? static_cast<int32_t>(2 * k)
              : kind == NEURONMEM_MEMORY_KIND_PINNED_HOST ? static_cast<int32_t>(2 * k + 1)
                                                          : static_cast<int32_t>(2 * n + k);
      m->kind_name = kKindNames[kind];
      m->debug_string = "NeuronMemory(id=" + std::to_string(m->id) + ", kind=" + m->kind_name + ")";
      client->memories[static_cast<size_t>(m->id)] = m.get();
      client->memory_storage[static_cast<size_t>(m->id)] = std::move(m);
    }
  }

  // Arenas. The one pinned-host arena serves every core's pinned_host memory; one UnpinnedHostMemory
  // serves every core's unpinned_host memory; each core has its own device arena.
  NEURONMEM_RETURN_IF_ERROR(
      memory::PinnedHostArena::Create("pinned_host (shared by memories " + std::string(n > 1 ? "1, 3, ...)" : "1)"),
                                      config.pinned_host_bytes, config.mlock_mode, &client->pinned_arena));
  client->unpinned = std::make_unique<memory::UnpinnedHostMemory>("unpinned_host");
  for (uint32_t k = 0; k < n; ++k) {
    std::unique_ptr<memory::DeviceArena> arena;
    NEURONMEM_RETURN_IF_ERROR(
        memory::DeviceArena::Create(client->memories[2 * k]->debug_string, config.device_bytes_per_core, &arena));
    client->device_arenas.push_back(std::move(arena));
  }

  // Devices and addressability: core k addresses its own device memory, its pinned_host memory and its
  // unpinned_host memory; each memory is addressed by its core.
  for (uint32_t k = 0; k < n; ++k) {
    auto d = std::make_unique<neuronmem_device_t>();
    d->client = client.get();
    d->id = static_cast<int32_t>(k);
    d->debug_string = "NeuronCore(id=" + std::to_string(k) + ", process_index=0, local_id=" + std::to_string(k) + ")";
    d->to_string = d->kind + " (" + d->debug_string + ")";
    neuronmem_memory_t* dev = client->memories[2 * k];
    neuronmem_memory_t* pin = client->memories[2 * k + 1];
    neuronmem_memory_t* unp = client->memories[2 * n + k];
    dev->device_arena = client->device_arenas[k].get();
    pin->pinned_arena = client->pinned_arena.get();
    unp->unpinned = client->unpinned.get();
    d->by_kind = {dev, pin, unp};
    d->memories = {dev, pin, unp};
    for (neuronmem_memory_t* m : d->memories) m->devices.push_back(d.get());
    client->devices.push_back(d.get());
    client->device_storage.push_back(std::move(d));
  }

  NEURONMEM_RETURN_IF_ERROR(copy::CreateCopyEngine(client.get(), &client->copy_engine));
  *out = std::move(client);
  return Ok();
}

Status DestroyClient(std::unique_ptr<neuronmem_client_t> client) {
  if (!client) return Ok();
  // Stop the copy engine first: it drains pending transfers that still reference the arenas.
  client->copy_engine.reset();
  std::string leaks;
  auto note = [&leaks](const std::string& name, const memory::ArenaStats& s) {
    if (s.live_allocations == 0) return;
    if (!leaks.empty()) leaks += "; ";
    leaks += name + ": " + std::to_string(s.live_allocations) + " live allocation(s), " +
             std::to_string(s.bytes_in_use) + " bytes";
  };
  note("pinned_host", client->pinned_arena->Stats());
  note("unpinned_host", client->unpinned->Stats());
  for (size_t k = 0; k < client->device_arenas.size(); ++k) {
    note(client->device_arenas[k]->name(), client->device_arenas[k]->Stats());
  }
  client.reset();
  if (!leaks.empty()) {
    return FailedPrecondition("client destroyed with live allocations (their memory is now released): %s",
                              leaks.c_str());
  }
  return Ok();
}

}  // namespace neuronmem

neuronmem_client::~neuronmem_client() = default;

neuronmem_memory_t* neuronmem_client::MemoryById(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= memories.size()) return nullptr;
  return memories[static_cast<size_t>(id)];
}

neuronmem_device_t* neuronmem_client::DeviceById(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= devices.size()) return nullptr;
  return devices[static_cast<size_t>(id)];
}

neuronmem::memory::ArenaStats neuronmem_memory::Stats() const {
  if (device_arena) return device_arena->Stats();
  if (pinned_arena) return pinned_arena->Stats();
  return unpinned->Stats();
}
