// The HBM arena of one software NeuronCore: a mapped, pre-populated region that stands for the core's
// device memory, carved up by a Tlsf whose bookkeeping lives outside the region. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "memory/arena_stats.h"
#include "memory/memory.h"
#include "memory/spin_lock.h"
#include "memory/tlsf.h"

namespace neuronmem::memory {

class DeviceArena final : public Memory {
 public:
  // Maps and populates `capacity` bytes (rounded up to 2 MiB, MADV_HUGEPAGE). `name` names the memory
  // in messages, e.g. "NeuronMemory(id=0, kind=device)". RESOURCE_EXHAUSTED if mmap fails.
  static Status Create(std::string name, uint64_t capacity, std::unique_ptr<DeviceArena>* out);
  ~DeviceArena() override;  // unmaps

  // Allocates; alignment 0 means 64. INVALID_ARGUMENT for size 0 or a bad alignment; RESOURCE_EXHAUSTED
  // naming the memory, the requested size, bytes in use, capacity and the largest free block.
  Status Allocate(uint64_t size, uint64_t alignment, uint64_t* offset);
  // INVALID_ARGUMENT if offset is not a live allocation (double free, interior, out of range).
  Status Free(uint64_t offset);

  // Memory: the same allocations as addresses inside the mapping.
  Status Allocate(uint64_t size, uint64_t alignment, void** out) override;
  Status Free(void* ptr, uint64_t size) override;
  bool Contains(const void* p, uint64_t size) const override;

  uint8_t* base() const { return base_; }
  uint64_t capacity() const { return capacity_; }
  const std::string& name() const override { return name_; }
  ArenaStats Stats() const override;

 private:
  DeviceArena(std::string name, uint8_t* base, uint64_t capacity, uint64_t mapped);
  std::string name_;
  uint8_t* base_;
  uint64_t capacity_;
  uint64_t mapped_;
  mutable SpinLock mu_;  // held for the TLSF call only: tens of nanoseconds
  Tlsf tlsf_;
};

}  // namespace neuronmem::memory
