// The client object behind neuronmem_client_t: its NeuronCores, its memories (kinds and stable ids)
// and the arenas that back them. Subsystems (copy engine, manifests) reach the arenas through here.
//
// Memory ids (docs/memory-kinds.md): for N cores, core k's `device` memory is 2k and its `pinned_host`
// memory is 2k+1 (the Neuron PJRT plugin's numbering), and its `unpinned_host` memory is 2N+k.
#pragma once

#include <neuronmem/client.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "memory/device_arena.h"
#include "memory/pinned_arena.h"

namespace neuronmem {
namespace copy {
class CopyEngine;  // src/copy: owns the DMA queues and workers of a client
}

// Resolved client options (defaults applied, validated).
struct ClientConfig {
  uint32_t num_cores = 2;
  neuronmem_mlock_mode_t mlock_mode = NEURONMEM_MLOCK_BEST_EFFORT;
  uint64_t device_bytes_per_core = 64ull << 20;
  uint64_t pinned_host_bytes = 64ull << 20;
};

// Validates C options and applies defaults. INVALID_ARGUMENT naming the offending field.
Status ResolveClientOptions(const neuronmem_client_options_t* options, ClientConfig* out);

}  // namespace neuronmem

struct neuronmem_memory {
  neuronmem_client_t* client = nullptr;
  int32_t id = -1;
  neuronmem_memory_kind_t kind = NEURONMEM_MEMORY_KIND_DEVICE;
  int32_t core = 0;  // the core this memory entry belongs to
  std::string kind_name;
  std::string debug_string;                  // "NeuronMemory(id=0, kind=device)"
  std::vector<neuronmem_device_t*> devices;  // addressable devices
  // Backing store: exactly one is set. pinned/unpinned are shared by every core's entry.
  neuronmem::memory::DeviceArena* device_arena = nullptr;
  neuronmem::memory::PinnedHostArena* pinned_arena = nullptr;
  neuronmem::memory::UnpinnedHostMemory* unpinned = nullptr;

  neuronmem::memory::ArenaStats Stats() const;
};

struct neuronmem_device {
  neuronmem_client_t* client = nullptr;
  int32_t id = 0;
  std::string kind = "NC_v2";
  std::string debug_string;                      // "NeuronCore(id=0, process_index=0, local_id=0)"
  std::string to_string;                         // "NC_v2 (NeuronCore(id=0, process_index=0, local_id=0))"
  std::vector<neuronmem_memory_t*> memories;     // addressable, in id order
  std::array<neuronmem_memory_t*, 3> by_kind{};  // indexed by neuronmem_memory_kind_t
  neuronmem_memory_t* default_memory() const { return by_kind[NEURONMEM_MEMORY_KIND_DEVICE]; }
};

struct neuronmem_client {
  neuronmem::ClientConfig config;
  std::string platform_name = "neuron";
  std::string platform_version;
  std::vector<std::string> extension_storage;
  std::vector<neuronmem_string_t> extensions;

  std::unique_ptr<neuronmem::memory::PinnedHostArena> pinned_arena;
  std::unique_ptr<neuronmem::memory::UnpinnedHostMemory> unpinned;
  std::vector<std::unique_ptr<neuronmem::memory::DeviceArena>> device_arenas;  // one per core

  std::vector<std::unique_ptr<neuronmem_device_t>> device_storage;
  std::vector<std::unique_ptr<neuronmem_memory_t>> memory_storage;
  std::vector<neuronmem_device_t*> devices;   // id order
  std::vector<neuronmem_memory_t*> memories;  // id order

  // The copy engine (src/copy), created with the client and shut down before the arenas go.
  std::unique_ptr<neuronmem::copy::CopyEngine> copy_engine;

  ~neuronmem_client();

  neuronmem_memory_t* MemoryById(int32_t id) const;
  neuronmem_device_t* DeviceById(int32_t id) const;
};

namespace neuronmem {

// Creates a client (arenas, devices, memories, copy engine).
Status CreateClient(const ClientConfig& config, std::unique_ptr<neuronmem_client_t>* out);

// Tears the client down; returns FAILED_PRECONDITION describing live allocations, if any (the client
// is destroyed either way).
Status DestroyClient(std::unique_ptr<neuronmem_client_t> client);

// Kind name <-> enum. KindFromName returns false for unknown strings.
const char* KindName(neuronmem_memory_kind_t kind);
bool KindFromName(const std::string& name, neuronmem_memory_kind_t* out);

}  // namespace neuronmem
