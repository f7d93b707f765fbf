// The client: creates the arenas, the memories with their stable ids, the devices and the copy engine;
// tears them down in the reverse order and reports what was still live.
#include "core/client.h"

#include <neuronmem/version.h>

#include <cinttypes>

namespace neuronmem::core {
namespace {

Status CheckConfig(const ClientConfig& c) {
  if (c.num_cores == 0 || c.num_cores > kMaxCores) {
    return InvalidArgument("num_cores %u is outside [1, %u] NeuronCores", c.num_cores, kMaxCores);
  }
  if (c.device_bytes_per_core < kMinDeviceBytes || c.device_bytes_per_core > kMaxArenaBytes) {
    return InvalidArgument("device_bytes_per_core %" PRIu64 " is outside [%" PRIu64 ", %" PRIu64 "]",
                           c.device_bytes_per_core, kMinDeviceBytes, kMaxArenaBytes);
  }
  if (c.pinned_host_bytes < kMinPinnedBytes || c.pinned_host_bytes > kMaxArenaBytes) {
    return InvalidArgument("pinned_host_bytes %" PRIu64 " is outside [%" PRIu64 ", %" PRIu64 "]", c.pinned_host_bytes,
                           kMinPinnedBytes, kMaxArenaBytes);
  }
  return Ok();
}

}  // namespace

Status Client::Create(const ClientConfig& config, std::unique_ptr<Client>* out) {
  NEURONMEM_RETURN_IF_ERROR(CheckConfig(config));
  std::unique_ptr<Client> client(new Client());
  client->config_ = config;
  client->platform_version_ = std::string("libneuronmem ") + std::to_string(NEURONMEM_VERSION_MAJOR) + "." +
                              std::to_string(NEURONMEM_VERSION_MINOR) + "." + std::to_string(NEURONMEM_VERSION_PATCH);

  const uint32_t n = config.num_cores;
  // Memories first (ids: device 2k, pinned_host 2k+1, unpinned_host 2n+k), so names are known to the
  // arenas for their messages.
  client->memory_storage_.resize(3 * static_cast<size_t>(n));
  client->memories_.resize(3 * static_cast<size_t>(n));
  for (uint32_t k = 0; k < n; ++k) {
    for (int kind = 0; kind < kNumMemoryKinds; ++kind) {
      auto m = std::make_unique<Memory>();
      m->kind_ = static_cast<MemoryKind>(kind);
      m->view_.core = k;
      m->view_.id = m->kind_ == MemoryKind::kDevice       ? static_cast<int32_t>(2 * k)
                    : m->kind_ == MemoryKind::kPinnedHost ? static_cast<int32_t>(2 * k + 1)
                                                          : static_cast<int32_t>(2 * n + k);
      m->shared_ = m->kind_ != MemoryKind::kDevice && n > 1;
      m->debug_string_ =
          "NeuronMemory(id=" + std::to_string(m->id()) + ", kind=" + std::string(MemoryKindName(m->kind_)) + ")";
      client->memories_[static_cast<size_t>(m->id())] = m.get();
      client->memory_storage_[static_cast<size_t>(m->id())] = std::move(m);
    }
  }

  // Arenas. The one pinned-host arena serves every core's pinned_host memory; one UnpinnedHostMemory
  // serves every core's unpinned_host memory; each core has its own device arena.
  NEURONMEM_RETURN_IF_ERROR(
      memory::PinnedHostArena::Create("pinned_host (shared by memories " + std::string(n > 1 ? "1, 3, ...)" : "1)"),
                                      config.pinned_host_bytes, config.mlock_mode, &client->pinned_arena_));
  client->unpinned_ = std::make_unique<memory::UnpinnedHostMemory>("unpinned_host");
  for (uint32_t k = 0; k < n; ++k) {
    std::unique_ptr<memory::DeviceArena> arena;
    NEURONMEM_RETURN_IF_ERROR(
        memory::DeviceArena::Create(client->memories_[2 * k]->debug_string(), config.device_bytes_per_core, &arena));
    client->device_arenas_.push_back(std::move(arena));
  }

  // Devices and addressability: core k addresses its own device memory, its pinned_host memory and its
  // unpinned_host memory; each memory is addressed by its core.
  for (uint32_t k = 0; k < n; ++k) {
    auto d = std::make_unique<Device>();
    d->id_ = static_cast<int32_t>(k);
    d->debug_string_ = "NeuronCore(id=" + std::to_string(k) + ", process_index=0, local_id=" + std::to_string(k) + ")";
    d->to_string_ = d->kind_ + " (" + d->debug_string_ + ")";
    Memory* dev = client->memories_[2 * k];
    Memory* pin = client->memories_[2 * k + 1];
    Memory* unp = client->memories_[2 * n + k];
    dev->view_.memory = client->device_arenas_[k].get();
    pin->view_.memory = client->pinned_arena_.get();
    unp->view_.memory = client->unpinned_.get();
    d->by_kind_ = {dev, pin, unp};
    d->memories_ = {dev, pin, unp};
    for (Memory* m : d->memories_) m->devices_.push_back(d.get());
    client->devices_.push_back(d.get());
    client->device_storage_.push_back(std::move(d));
  }

  client->copy_engine_ = std::make_unique<copy::CopyEngine>(n);
  *out = std::move(client);
  return Ok();
}

Status Client::CheckNoLiveBuffers() const {
  const int64_t n = copy_engine_ ? copy_engine_->LiveBuffers() : 0;
  if (n == 0) return Ok();
  return FailedPrecondition(
      "the client still has %lld buffer(s) (deleted or not): destroy them first "
      "(neuronmem_buffer_destroy); the client was not destroyed and stays usable",
      static_cast<long long>(n));
}

Status Client::Destroy(std::unique_ptr<Client> client) {
  if (!client) return Ok();
  // Stop the copy engine first: it drains pending transfers that still reference the arenas.
  client->copy_engine_.reset();
  std::string leaks;
  auto note = [&leaks](const std::string& name, const memory::ArenaStats& s) {
    if (s.live_allocations == 0) return;
    if (!leaks.empty()) leaks += "; ";
    leaks += name + ": " + std::to_string(s.live_allocations) + " live allocation(s), " +
             std::to_string(s.bytes_in_use) + " bytes";
  };
  // Say what happens to live blocks as it is: the device arenas are unmapped, while the pinned-host region
  // cannot be (mimalloc keeps it registered): its blocks are freed and the region goes back to the pool.
  note("pinned_host", client->pinned_arena_->Stats());
  if (!leaks.empty()) leaks += " (freed: the region stays mapped in the pool and serves the next client)";
  note("unpinned_host", client->unpinned_->Stats());
  for (const auto& arena : client->device_arenas_) note(arena->name(), arena->Stats());
  client.reset();
  if (!leaks.empty()) {
    return FailedPrecondition(
        "client destroyed with live allocations (device memory is unmapped; the pointers are invalid): %s",
        leaks.c_str());
  }
  return Ok();
}

Client::~Client() = default;

Device* Client::device(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= devices_.size()) return nullptr;
  return devices_[static_cast<size_t>(id)];
}

Memory* Client::memory(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= memories_.size()) return nullptr;
  return memories_[static_cast<size_t>(id)];
}

std::vector<std::pair<void*, uint64_t>> Client::arena_regions() const {
  std::vector<std::pair<void*, uint64_t>> r;
  r.emplace_back(pinned_arena_->base(), pinned_arena_->region_bytes());
  for (const auto& a : device_arenas_) r.emplace_back(a->base(), a->capacity());
  return r;
}

}  // namespace neuronmem::core
