// The client: the composition root. It owns the memories (their arenas), the NeuronCore devices and the
// copy engine, wires them together and tears them down in order. Its one public entry point for the layers
// above is Client::Create.
//
// Memory ids (docs/memory-kinds.md): for N cores, core k's `device` memory is 2k and its `pinned_host`
// memory is 2k+1 (the Neuron PJRT plugin's numbering), and its `unpinned_host` memory is 2N+k.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/memory_kind.h"
#include "base/status.h"
#include "copy/copy_engine.h"
#include "copy/memory_view.h"
#include "memory/device_arena.h"
#include "memory/memory.h"
#include "memory/pinned_arena.h"

namespace neuronmem::core {

// Client options, validated and with defaults applied (the C layer converts neuronmem_client_options_t).
struct ClientConfig {
  uint32_t num_cores = 2;
  memory::MlockMode mlock_mode = memory::MlockMode::kBestEffort;
  uint64_t device_bytes_per_core = 64ull << 20;
  uint64_t pinned_host_bytes = 64ull << 20;
};

// Limits Create enforces (INVALID_ARGUMENT naming the field otherwise).
constexpr uint32_t kMaxCores = 64;
constexpr uint64_t kMinDeviceBytes = 1ull << 20;
constexpr uint64_t kMinPinnedBytes = 32ull << 20;
constexpr uint64_t kMaxArenaBytes = 1ull << 40;  // 1 TiB: a sanity bound, far above this machine

class Device;

// One memory of the client: a kind on a core, with its stable id, backed by an arena (shared between cores
// for the host kinds).
class Memory {
 public:
  int32_t id() const { return view_.id; }
  MemoryKind kind() const { return kind_; }
  uint32_t core() const { return view_.core; }
  const std::string& debug_string() const { return debug_string_; }  // "NeuronMemory(id=0, kind=device)"
  // The copy engine's view of it.
  const copy::MemoryView& view() const { return view_; }
  memory::ArenaStats Stats() const { return view_.memory->Stats(); }
  // Whether the same arena also backs other memory ids (the host kinds with more than one core).
  bool shared() const { return shared_; }
  const std::vector<Device*>& devices() const { return devices_; }  // addressable by

 private:
  friend class Client;
  copy::MemoryView view_;
  MemoryKind kind_ = MemoryKind::kDevice;
  bool shared_ = false;
  std::string debug_string_;
  std::vector<Device*> devices_;
};

// One NeuronCore.
class Device {
 public:
  int32_t id() const { return id_; }
  const std::string& kind() const { return kind_; }                  // "NC_v2"
  const std::string& debug_string() const { return debug_string_; }  // "NeuronCore(id=0, ...)"
  const std::string& to_string() const { return to_string_; }        // "NC_v2 (NeuronCore(id=0, ...))"
  // Its device, pinned_host and unpinned_host memories, in id order.
  const std::vector<Memory*>& memories() const { return memories_; }
  Memory* memory_of_kind(MemoryKind kind) const { return by_kind_[static_cast<size_t>(kind)]; }
  Memory* default_memory() const { return memory_of_kind(MemoryKind::kDevice); }

 private:
  friend class Client;
  int32_t id_ = 0;
  std::string kind_ = "NC_v2";
  std::string debug_string_;
  std::string to_string_;
  std::vector<Memory*> memories_;
  std::array<Memory*, kNumMemoryKinds> by_kind_{};
};

class Client {
 public:
  // Validates the config, maps the arenas, builds devices and memories, starts the copy engine.
  // INVALID_ARGUMENT (bad counts or sizes), RESOURCE_EXHAUSTED, UNAVAILABLE (mlock required and refused).
  static Status Create(const ClientConfig& config, std::unique_ptr<Client>* out);
  // FAILED_PRECONDITION while buffers of the client still exist: a buffer may not outlive its client (its
  // memory, device and queue go with it), so the client must not be destroyed then (docs/ownership.md).
  Status CheckNoLiveBuffers() const;
  // Tears the client down (call CheckNoLiveBuffers first); returns FAILED_PRECONDITION describing live host
  // allocations, if any (the client is destroyed either way).
  static Status Destroy(std::unique_ptr<Client> client);
  ~Client();

  const ClientConfig& config() const { return config_; }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }

  const std::vector<Device*>& devices() const { return devices_; }    // id order
  const std::vector<Memory*>& memories() const { return memories_; }  // id order
  Device* device(int32_t id) const;                                   // nullptr for an unknown id
  Memory* memory(int32_t id) const;                                   // nullptr for an unknown id
  // The pinned-host arena behind every pinned_host memory (neuronmem_client_host_allocate).
  memory::PinnedHostArena& pinned_arena() const { return *pinned_arena_; }
  // The address ranges of the pinned-host arena and of every core's device arena ({base, bytes}), for
  // registration with a network provider once (dist::Fabric::RegisterMemory).
  std::vector<std::pair<void*, uint64_t>> arena_regions() const;
  copy::CopyEngine& copy_engine() const { return *copy_engine_; }

 private:
  Client() = default;
  ClientConfig config_;
  std::string platform_name_ = "neuron";
  std::string platform_version_;
  // Declared before the engine: the engine goes first (it drains transfers that still use the memories).
  std::unique_ptr<memory::PinnedHostArena> pinned_arena_;
  std::unique_ptr<memory::UnpinnedHostMemory> unpinned_;
  std::vector<std::unique_ptr<memory::DeviceArena>> device_arenas_;  // one per core
  std::vector<std::unique_ptr<Memory>> memory_storage_;
  std::vector<std::unique_ptr<Device>> device_storage_;
  std::vector<Device*> devices_;
  std::vector<Memory*> memories_;
  std::unique_ptr<copy::CopyEngine> copy_engine_;
};

}  // namespace neuronmem::core
