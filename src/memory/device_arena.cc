// A core's HBM arena: a populated anonymous mapping plus a Tlsf over its offsets.
#include "memory/device_arena.h"

#include "base/fault.h"

#include <sys/mman.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

namespace neuronmem::memory {
namespace {

constexpr uint64_t kHugePage = 2ull << 20;
constexpr uint64_t kMaxAlignment = 1ull << 30;

// Maps `bytes` of anonymous memory, advises huge pages and faults every page in now, so that transfers
// never pay first-touch faults (~2 GB/s here) and memory is not handed back to the hypervisor.
uint8_t* MapPopulated(uint64_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, bytes, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return static_cast<uint8_t*>(p);
#endif
  volatile uint8_t* b = static_cast<uint8_t*>(p);
  for (uint64_t off = 0; off < bytes; off += 4096) b[off] = 0;
  return static_cast<uint8_t*>(p);
}

}  // namespace

Status DeviceArena::Create(std::string name, uint64_t capacity, std::unique_ptr<DeviceArena>* out) {
  if (capacity == 0 || capacity > (1ull << 40)) {
    return InvalidArgument("%s: capacity %" PRIu64 " bytes is outside (0, 1 TiB]", name.c_str(), capacity);
  }
  const uint64_t mapped = (capacity + kHugePage - 1) / kHugePage * kHugePage;
  uint8_t* base = MapPopulated(mapped);
  if (!base) {
    return ResourceExhausted("%s: cannot map %" PRIu64 " bytes for the device arena: %s", name.c_str(), mapped,
                             std::strerror(errno));
  }
  out->reset(new DeviceArena(std::move(name), base, capacity, mapped));
  return Ok();
}

DeviceArena::DeviceArena(std::string name, uint8_t* base, uint64_t capacity, uint64_t mapped)
    : name_(std::move(name)), base_(base), capacity_(capacity), mapped_(mapped), tlsf_(capacity, 64) {}

DeviceArena::~DeviceArena() { munmap(base_, mapped_); }

Status DeviceArena::Allocate(uint64_t size, uint64_t alignment, uint64_t* offset) {
  if (size == 0) return InvalidArgument("%s: cannot allocate 0 bytes", name_.c_str());
  if (alignment == 0) alignment = 64;
  if ((alignment & (alignment - 1)) || alignment > kMaxAlignment) {
    return InvalidArgument("%s: alignment %" PRIu64 " is not a power of two up to 1 GiB", name_.c_str(), alignment);
  }
  if (fault::Hit(fault::Site::kAllocation))
    return ResourceExhausted("%s: injected fault (test hook): cannot allocate %" PRIu64 " bytes", name_.c_str(), size);
  std::lock_guard<SpinLock> lock(mu_);
  if (tlsf_.Allocate(size, alignment, offset)) return Ok();
  const ArenaStats st = tlsf_.Stats();
  return ResourceExhausted("%s: cannot allocate %" PRIu64 " bytes (alignment %" PRIu64 "): %" PRIu64 " of %" PRIu64
                           " bytes in use in %" PRIu64 " allocations, largest free block %" PRIu64 " bytes",
                           name_.c_str(), size, alignment, st.bytes_in_use, st.capacity, st.live_allocations,
                           st.largest_free_block);
}

Status DeviceArena::Free(uint64_t offset) {
  std::lock_guard<SpinLock> lock(mu_);
  if (tlsf_.Free(offset)) return Ok();
  if (offset >= tlsf_.capacity()) {
    return InvalidArgument("%s: offset %" PRIu64 " is outside the arena (capacity %" PRIu64 " bytes)", name_.c_str(),
                           offset, tlsf_.capacity());
  }
  return InvalidArgument("%s: offset %" PRIu64
                         " is not the start of a live allocation (already freed, or inside another block)",
                         name_.c_str(), offset);
}

ArenaStats DeviceArena::Stats() const {
  std::lock_guard<SpinLock> lock(mu_);
  ArenaStats st = tlsf_.Stats();
  st.capacity = capacity_;
  st.locked = false;
  return st;
}

Status DeviceArena::Allocate(uint64_t size, uint64_t alignment, void** out) {
  *out = nullptr;
  uint64_t offset = 0;
  NEURONMEM_RETURN_IF_ERROR(Allocate(size, alignment, &offset));
  *out = base_ + offset;
  return Ok();
}

Status DeviceArena::Free(void* ptr, uint64_t /*size*/) {
  const uint8_t* p = static_cast<const uint8_t*>(ptr);
  if (p < base_ || p >= base_ + capacity_) {
    return InvalidArgument("%s: %p is not an allocation of this arena", name_.c_str(), ptr);
  }
  return Free(static_cast<uint64_t>(p - base_));
}

bool DeviceArena::Contains(const void* p, uint64_t size) const {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  return b >= base_ && b <= base_ + capacity_ && size <= static_cast<uint64_t>(base_ + capacity_ - b);
}

}  // namespace neuronmem::memory
