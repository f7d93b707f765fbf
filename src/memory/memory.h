// The one interface every memory a buffer can live in implements (in the spirit of IREE's
// iree_hal_allocator): allocate, free, contains, stats. The pinned-host arena, the device arenas and
// unpinned host memory implement it, so code above (the copy engine, the client) never switches on the
// memory kind.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "memory/arena_stats.h"

namespace neuronmem::memory {

// What to do when a page-locked arena cannot be locked with mlock(2) (neuronmem_mlock_mode_t's values).
enum class MlockMode : uint8_t { kBestEffort = 0, kRequired = 1, kDisabled = 2 };

class Memory {
 public:
  virtual ~Memory() = default;

  // `size` > 0 bytes aligned to `alignment` (a power of two; 0 = 64). INVALID_ARGUMENT for a bad size or
  // alignment; RESOURCE_EXHAUSTED naming the memory and the sizes when it is full. Thread-safe.
  virtual Status Allocate(uint64_t size, uint64_t alignment, void** out) = 0;
  // Frees what Allocate returned; `size` is the size asked for. INVALID_ARGUMENT for a pointer that is no
  // live allocation of this memory (where the memory can tell). Thread-safe.
  virtual Status Free(void* ptr, uint64_t size) = 0;
  // Whether [p, p+size) is memory of this kind, so that a buffer in it may alias those bytes.
  virtual bool Contains(const void* p, uint64_t size) const = 0;
  virtual ArenaStats Stats() const = 0;
  // Names the memory in messages, e.g. "NeuronMemory(id=0, kind=device)".
  virtual const std::string& name() const = 0;
};

}  // namespace neuronmem::memory
