// Offset-only TLSF (two-level segregated fit) allocator over [0, capacity). It never touches the memory
// it manages: all bookkeeping lives in its own tables, so it can manage device (HBM) ranges. Allocate
// and Free are O(1); Free coalesces with both neighbours. Not thread-safe: the owner locks.
#pragma once

#include <cstdint>
#include <memory>

#include "memory/arena_stats.h"

namespace neuronmem::memory {

class Tlsf {
 public:
  // capacity: bytes managed; min_alignment: power of two >= 64, the granule of every block.
  Tlsf(uint64_t capacity, uint64_t min_alignment = 64);
  ~Tlsf();
  Tlsf(const Tlsf&) = delete;
  Tlsf& operator=(const Tlsf&) = delete;

  // Allocates size bytes (size > 0) aligned to `alignment` (power of two; values below min_alignment
  // are raised to it). Returns false when no free block fits (offset untouched).
  bool Allocate(uint64_t size, uint64_t alignment, uint64_t* offset);

  // Frees the allocation starting at offset. Returns false (and changes nothing) if offset is not the
  // start of a live allocation (never allocated, interior, or already freed). On success writes the
  // requested size of the freed allocation to *size if size is not null.
  bool Free(uint64_t offset, uint64_t* size = nullptr);

  // Requested size of the live allocation at offset, or 0 if there is none.
  uint64_t AllocationSize(uint64_t offset) const;

  // Largest size that Allocate(size, min_alignment) would currently satisfy.
  uint64_t LargestFreeBlock() const;

  uint64_t capacity() const;
  // Statistics (locked is left false; capacity/in-use/peak/live/total/largest filled).
  ArenaStats Stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neuronmem::memory
