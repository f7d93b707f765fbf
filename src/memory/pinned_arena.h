// The client's pinned-host arena: one mmap'd region, populated at creation and mlock'ed when permitted,
// managed by mimalloc as an exclusive arena (mi_manage_os_memory_ex) through one heap per region under
// a spinlock; regions are pooled for reuse across clients (best fit, leaked blocks reclaimed). The why of
// both is at the top of pinned_arena.cc and in docs/arenas.md. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "memory/arena_stats.h"
#include "memory/memory.h"

namespace neuronmem::memory {

// The process-wide pool of pinned regions (mimalloc cannot release one: they stay mapped).
struct PinnedRegionPoolStats {
  uint64_t regions = 0;           // mapped and registered with mimalloc
  uint64_t in_use = 0;            // held by a live arena
  uint64_t retired = 0;           // never handed out again (their heap could not be made)
  uint64_t mapped_bytes = 0;      // of all regions
  uint64_t idle_bytes = 0;        // of regions ready for the next arena
  uint64_t reclaimed_blocks = 0;  // freed for arenas destroyed with live allocations
  uint64_t resident_bytes = 0;    // populated (the rest of idle regions was given back to the kernel)
  uint64_t released_bytes = 0;    // given back so far (idle regions' untouched tails)
};

class PinnedHostArena final : public Memory {
 public:
  // capacity: bytes (rounded up to mimalloc's arena unit, 32 MiB). Takes the smallest idle pooled region
  // that holds it, else maps a new one; the arena hands out at most `capacity` requested bytes either way.
  // UNAVAILABLE if locking is required and refused; RESOURCE_EXHAUSTED if the region cannot be mapped
  // or mimalloc refuses another arena.
  static Status Create(std::string name, uint64_t capacity, MlockMode mlock_mode,
                       std::unique_ptr<PinnedHostArena>* out);
  ~PinnedHostArena() override;

  // size > 0; alignment power of two, 0 = 64, at most 4096. INVALID_ARGUMENT / RESOURCE_EXHAUSTED
  // (message names the memory and sizes). The hot path: a spinlock around mimalloc, a few atomics.
  Status Allocate(uint64_t size, uint64_t alignment, void** out) override;
  // INVALID_ARGUMENT for a pointer outside the arena, not at an allocation start, or already freed.
  Status Free(void* ptr);
  Status Free(void* ptr, uint64_t /*size*/) override { return Free(ptr); }

  // Whether [p, p+size) lies inside the arena region.
  bool Contains(const void* p, uint64_t size) const override;
  // Whether p is the start of a live allocation; writes its requested size to *size if so.
  bool IsLiveAllocation(const void* p, uint64_t* size) const;

  uint8_t* base() const { return base_; }
  uint64_t capacity() const { return capacity_; }
  // The region's size (>= capacity when a larger pooled region was reused); pointers lie in
  // [base(), base() + region_bytes()).
  uint64_t region_bytes() const { return region_bytes_; }

  // The process-wide pool. Destroying an arena with live allocations frees them and the region is reused.
  static PinnedRegionPoolStats PoolStats();
  bool locked() const { return locked_; }
  const std::string& name() const override { return name_; }
  ArenaStats Stats() const override;

 private:
  PinnedHostArena() = default;
  struct Impl;
  std::string name_;
  uint8_t* base_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t region_bytes_ = 0;
  bool locked_ = false;
  std::unique_ptr<Impl> impl_;
};

// Ordinary pageable host memory with the same accounting (the unpinned_host kind). Thread-safe.
class UnpinnedHostMemory final : public Memory {
 public:
  explicit UnpinnedHostMemory(std::string name);
  // size > 0; alignment power of two, 0 = 64. RESOURCE_EXHAUSTED when the system allocator fails.
  Status Allocate(uint64_t size, uint64_t alignment, void** out) override;
  // ptr must come from Allocate; size is the requested size (the caller tracks it).
  Status Free(void* ptr, uint64_t size) override;
  // Every host address is ordinary pageable memory: always true.
  bool Contains(const void* p, uint64_t size) const override;
  ArenaStats Stats() const override;
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  std::atomic<uint64_t> in_use_{0}, peak_{0}, live_{0}, total_{0};
};

}  // namespace neuronmem::memory
