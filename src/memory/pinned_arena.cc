// The pinned-host arena and unpinned host memory.
//
// Regions and mimalloc. A pinned arena is a region registered with mimalloc as an exclusive arena
// (mi_manage_os_memory_ex). mimalloc 2.0.9 can never unregister an arena, allows at most ~61 of them per
// process, and keeps segment metadata (and abandoned segments of exited threads) inside the region, so a
// registered region must stay mapped for the life of the process. Regions therefore live in a
// process-wide pool: destroying a client returns its region to the pool (still mapped, populated and,
// if it was, locked), and the next client takes over the smallest idle region at least as large as it
// asks for (its capacity stays what it asked for: a byte budget, not the region's size). A client destroyed
// with allocations still live gives them up: the region's heap frees every block it still holds
// (mi_heap_visit_blocks) and the region gets a new salt, so the leaked pointers no longer validate and the
// region is reused like any other. The pool therefore never holds more regions than the process had
// clients alive at once (plus idle regions smaller than every later request), however many clients come
// and go or leak.
//
// Heap. A mimalloc heap may only be used by one thread at a time, is deleted by mimalloc when the thread
// that created it exits, and every heap claims whole 32 MiB arena blocks for its segments (so per-thread
// heaps would let only capacity/32 MiB threads allocate at all). Each region therefore has ONE heap,
// created by a small owner thread that stays parked (blocked, all signals masked) for the life of the
// process so the heap is never deleted under us, and every mimalloc call on the region (allocation and
// free, since a free by the segment's owner thread takes mimalloc's unsynchronised local path) runs under
// a per-region spinlock. The critical section is a few nanoseconds and never blocks; measured, the lock
// adds ~1 ns to a 64 B alloc+free pair (docs/performance.md). The region is registered with is_large=true
// ("pinned" to mimalloc), so mimalloc never decommits or resets its pages: they stay populated and locked.
//
// Validation. Each allocation carries a 16-byte header right before the returned pointer: a tag derived
// from the pointer, the requested size and a per-region salt, and the requested size. Free checks the
// range, the alignment and the tag, and clears the tag atomically, so foreign pointers, interior
// pointers and double frees (until mimalloc hands the block out again) are rejected with a status.
#include "memory/pinned_arena.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#include "base/fault.h"
#include "memory/mimalloc_api.h"
#include "memory/spin_lock.h"

#include <cerrno>
#include <cinttypes>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace neuronmem::memory {
namespace {

constexpr uint64_t kArenaUnit = 32ull << 20;  // mimalloc 2.0.9's arena block (segment) size
constexpr uint64_t kHeaderBytes = 16;
constexpr uint64_t kMaxAlignment = 4096;
constexpr uint64_t kTagMix = 0x9E3779B97F4A7C15ull;

struct Region {
  uint8_t* base = nullptr;
  uint64_t size = 0;
  mi_arena_id_t arena_id = 0;
  uint64_t salt = 0;
  mi_heap_t* heap = nullptr;
  SpinLock heap_lock;
  bool locked = false;
  bool in_use = false;
  bool retired = false;  // its heap could not be made: registered with mimalloc, never handed out
  uint64_t clients = 0;  // clients that have used it, for the salt
  // Bytes from base that mimalloc may have touched: the end of the highest block ever handed out, rounded up
  // to its arena unit (mimalloc keeps a segment's metadata inside the segment, and claims segments for our
  // heap only). Above it the region holds nothing of mimalloc's. Written under heap_lock.
  uint64_t high_water = 0;
  uint64_t resident = 0;  // bytes from base that are populated (and locked, when locked); the rest released
};

struct RegionPool {
  std::mutex mu;
  std::vector<Region*> regions;   // never freed: see the comment at the top
  uint64_t reclaimed_blocks = 0;  // blocks freed for clients destroyed with live allocations
  uint64_t released_bytes = 0;    // given back to the kernel from idle regions' untouched tails
};

RegionPool& Pool() {
  static RegionPool* pool = new RegionPool();  // intentionally immortal
  return *pool;
}

struct Header {
  uint64_t tag;
  uint64_t size;
};

inline uint64_t TagFor(const Region* r, const void* user, uint64_t size) {
  return (reinterpret_cast<uintptr_t>(user) * kTagMix) ^ (size * 0xC2B2AE3D27D4EB4Full) ^ r->salt;
}

// Creates the region's heap on a parked owner thread (see the comment at the top).
mi_heap_t* CreateOwnedHeap(mi_arena_id_t arena_id) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  mi_heap_t* heap = nullptr;
  try {
    std::thread owner([&] {
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, nullptr);
      mi_heap_t* h = Mimalloc(nullptr)->heap_new_in_arena(arena_id);
      {
        // Notify under the lock: the creator may return (destroying mu and cv) as soon as it sees done.
        std::lock_guard<std::mutex> lock(mu);
        heap = h;
        done = true;
        cv.notify_one();
      }
      for (;;) pause();  // parked: keeps the heap alive; never runs again
    });
    owner.detach();
  } catch (const std::system_error&) {
    return nullptr;
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return heap;
}

// Faults in [p, p + bytes) (writing zeros where a page is not there yet).
void Populate(uint8_t* p, uint64_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return;
#endif
  volatile uint8_t* b = p;
  for (uint64_t off = 0; off < bytes; off += 4096) b[off] = b[off];
}

// Maps `bytes` aligned to kArenaUnit (mimalloc's arena alignment), populated.
uint8_t* MapAligned(uint64_t bytes) {
  const uint64_t span = bytes + kArenaUnit;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = (reinterpret_cast<uintptr_t>(raw) + kArenaUnit - 1) & ~(kArenaUnit - 1);
  const uintptr_t head = start - reinterpret_cast<uintptr_t>(raw);
  if (head) munmap(raw, head);
  const uint64_t tail = span - head - bytes;
  if (tail) munmap(reinterpret_cast<void*>(start + bytes), tail);
  void* p = reinterpret_cast<void*>(start);
  madvise(p, bytes, MADV_HUGEPAGE);
  Populate(static_cast<uint8_t*>(p), bytes);
  return static_cast<uint8_t*>(p);
}

// Brings a region's lock state in line with the mode. Returns false if locking is required and refused.
bool ApplyLock(Region* r, MlockMode mode, int* err) {
  if (mode == MlockMode::kDisabled) {
    if (r->locked && munlock(r->base, r->size) == 0) r->locked = false;
    return true;
  }
  if (!r->locked) {
    if (mlock(r->base, r->size) == 0) {
      r->locked = true;
    } else {
      *err = errno;
    }
  }
  return r->locked || mode != MlockMode::kRequired;
}

// Gives the pages above the region's high-water mark back to the kernel (an idle region then holds only
// what mimalloc has touched resident). Called with the pool lock held and the region no longer used.
void ReleaseUntouchedTail(Region* r) {
  uint64_t keep;
  {
    std::lock_guard<SpinLock> guard(r->heap_lock);
    keep = (r->high_water + kArenaUnit - 1) / kArenaUnit * kArenaUnit;
  }
  if (keep >= r->resident) return;
  uint8_t* from = r->base + keep;
  const uint64_t bytes = r->resident - keep;
  if (r->locked) munlock(from, bytes);
  if (madvise(from, bytes, MADV_DONTNEED) != 0) return;  // still resident: nothing changes
  r->resident = keep;
  r->locked = false;  // part of it is unlocked now; a reuse locks it whole again
  Pool().released_bytes += bytes;
}

// Frees every block the region's heap still holds (a client destroyed with live allocations) and salts
// the region anew, so the leaked pointers no longer validate. False if mimalloc cannot list the blocks
// (then the region must be retired). Called with the pool lock held and the region no longer used.
bool ReclaimLeaks(Region* r) {
  const MimallocApi* mi = Mimalloc(nullptr);
  if (!mi->heap_visit_blocks) return false;
  std::vector<void*> blocks;
  std::lock_guard<SpinLock> guard(r->heap_lock);
  const bool listed = mi->heap_visit_blocks(
      r->heap, /*visit_blocks=*/true,
      [](const mi_heap_t*, const mi_heap_area_t*, void* block, size_t, void* arg) {
        if (block) static_cast<std::vector<void*>*>(arg)->push_back(block);
        return true;
      },
      &blocks);
  if (!listed && blocks.empty()) return false;
  for (void* b : blocks) mi->free(b);
  Pool().reclaimed_blocks += blocks.size();
  r->salt = r->salt * kTagMix + r->clients + 1;
  return true;
}

}  // namespace

struct PinnedHostArena::Impl {
  Region* region = nullptr;
  // Written only under region->heap_lock, with plain (non-locked) loads and stores: the lock already
  // orders them, and locked read-modify-writes cost ~10 ns each here, a third of an alloc+free pair.
  // Atomics so that Stats() may read them without the lock (a consistent-enough snapshot).
  std::atomic<uint64_t> in_use{0}, peak{0}, live{0}, total{0};

  void CountAllocation(uint64_t size) {
    const uint64_t now = in_use.load(std::memory_order_relaxed) + size;
    in_use.store(now, std::memory_order_relaxed);
    if (now > peak.load(std::memory_order_relaxed)) peak.store(now, std::memory_order_relaxed);
    live.store(live.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    total.store(total.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void CountFree(uint64_t size) {
    in_use.store(in_use.load(std::memory_order_relaxed) - size, std::memory_order_relaxed);
    live.store(live.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
};

Status PinnedHostArena::Create(std::string name, uint64_t capacity, MlockMode mlock_mode,
                               std::unique_ptr<PinnedHostArena>* out) {
  if (capacity == 0 || capacity > (1ull << 40)) {
    return InvalidArgument("%s: capacity %" PRIu64 " bytes is outside (0, 1 TiB]", name.c_str(), capacity);
  }
  const uint64_t size = (capacity + kArenaUnit - 1) / kArenaUnit * kArenaUnit;
  std::string load_error;
  const MimallocApi* mi = Mimalloc(&load_error);
  if (!mi) return Unavailable("%s: %s", name.c_str(), load_error.c_str());
  RegionPool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  Region* region = nullptr;  // best fit: the smallest idle region that holds `size`
  for (Region* r : pool.regions) {
    if (!r->in_use && !r->retired && r->size >= size && (!region || r->size < region->size)) region = r;
  }
  int err = 0;
  if (region) {
    if (region->resident < region->size) {
      // Its untouched tail was given back to the kernel when it went idle: fault it in again (zeros, as
      // mimalloc was told the memory is) and lock the whole region below.
      Populate(region->base + region->resident, region->size - region->resident);
      region->resident = region->size;
      region->locked = false;  // ApplyLock locks it whole again
    }
    if (!ApplyLock(region, mlock_mode, &err)) {
      return Unavailable("%s: mlock of %" PRIu64
                         " bytes was refused (%s) and locking is required "
                         "(NEURONMEM_MLOCK_REQUIRED); raise RLIMIT_MEMLOCK or use NEURONMEM_MLOCK_BEST_EFFORT",
                         name.c_str(), size, std::strerror(err));
    }
  } else {
    uint8_t* base = MapAligned(size);
    if (!base) {
      return ResourceExhausted("%s: cannot map %" PRIu64 " bytes for the pinned-host arena: %s", name.c_str(), size,
                               std::strerror(errno));
    }
    auto r = std::make_unique<Region>();
    r->base = base;
    r->size = size;
    r->resident = size;
    if (!ApplyLock(r.get(), mlock_mode, &err)) {
      munmap(base, size);
      return Unavailable("%s: mlock of %" PRIu64
                         " bytes was refused (%s) and locking is required "
                         "(NEURONMEM_MLOCK_REQUIRED); raise RLIMIT_MEMLOCK or use NEURONMEM_MLOCK_BEST_EFFORT",
                         name.c_str(), size, std::strerror(err));
    }
    if (!mi->manage_os_memory_ex(base, size, /*is_committed=*/true, /*is_large=*/true, /*is_zero=*/true,
                                 /*numa_node=*/-1, /*exclusive=*/true, &r->arena_id)) {
      if (r->locked) munlock(base, size);
      munmap(base, size);
      return ResourceExhausted(
          "%s: mimalloc refused another arena (%zu pinned regions are registered in this "
          "process; mimalloc allows about 61 and cannot release them)",
          name.c_str(), pool.regions.size());
    }
    r->heap = CreateOwnedHeap(r->arena_id);
    if (!r->heap) {
      // The arena stays registered (mimalloc cannot forget it) but is never used: retire the region.
      r->retired = true;
      pool.regions.push_back(r.release());
      return ResourceExhausted("%s: cannot create the mimalloc heap of the pinned-host arena", name.c_str());
    }
    r->salt = reinterpret_cast<uintptr_t>(base) * kTagMix + pool.regions.size() + 1;
    region = r.release();
    pool.regions.push_back(region);
  }
  region->in_use = true;
  ++region->clients;
  std::unique_ptr<PinnedHostArena> arena(new PinnedHostArena());
  arena->name_ = std::move(name);
  arena->base_ = region->base;
  arena->region_bytes_ = region->size;
  arena->capacity_ = size;
  arena->locked_ = region->locked;
  arena->impl_ = std::make_unique<Impl>();
  arena->impl_->region = region;
  *out = std::move(arena);
  return Ok();
}

PinnedHostArena::~PinnedHostArena() {
  if (!impl_) return;
  RegionPool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  Region* r = impl_->region;
  if (impl_->live.load(std::memory_order_relaxed) != 0 && !ReclaimLeaks(r)) r->retired = true;
  ReleaseUntouchedTail(r);
  r->in_use = false;
}

PinnedRegionPoolStats PinnedHostArena::PoolStats() {
  RegionPool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  PinnedRegionPoolStats st;
  for (const Region* r : pool.regions) {
    ++st.regions;
    st.mapped_bytes += r->size;
    st.resident_bytes += r->resident;
    if (r->in_use) {
      ++st.in_use;
    } else if (r->retired) {
      ++st.retired;
    } else {
      st.idle_bytes += r->size;
    }
  }
  st.reclaimed_blocks = pool.reclaimed_blocks;
  st.released_bytes = pool.released_bytes;
  return st;
}

Status PinnedHostArena::Allocate(uint64_t size, uint64_t alignment, void** out) {
  *out = nullptr;
  if (size == 0) return InvalidArgument("%s: cannot allocate 0 bytes", name_.c_str());
  if (alignment == 0) alignment = 64;
  if ((alignment & (alignment - 1)) || alignment > kMaxAlignment) {
    return InvalidArgument("%s: alignment %" PRIu64 " is not a power of two up to %" PRIu64, name_.c_str(), alignment,
                           kMaxAlignment);
  }
  uint64_t padded;  // the size with the header and the worst-case alignment padding
  if (__builtin_add_overflow(size, kHeaderBytes + alignment, &padded)) {
    return InvalidArgument("%s: a size of %" PRIu64 " bytes overflows with its header and alignment", name_.c_str(),
                           size);
  }
  if (size > capacity_ - kHeaderBytes) {
    return ResourceExhausted("%s: cannot allocate %" PRIu64 " bytes: larger than the arena's capacity of %" PRIu64
                             " bytes",
                             name_.c_str(), size, capacity_);
  }
  if (fault::Hit(fault::Site::kAllocation))
    return ResourceExhausted("%s: injected fault (test hook): cannot allocate %" PRIu64 " bytes", name_.c_str(), size);
  Region* r = impl_->region;
  uint8_t* raw;
  {
    std::lock_guard<SpinLock> guard(r->heap_lock);
    // The budget: a client may hold at most `capacity_` requested bytes, even in a larger pooled region.
    const bool within = impl_->in_use.load(std::memory_order_relaxed) + size <= capacity_;
    raw = within ? static_cast<uint8_t*>(
                       Mimalloc(nullptr)->heap_malloc_aligned_at(r->heap, size + kHeaderBytes, alignment, kHeaderBytes))
                 : nullptr;
    if (raw && (raw < base_ || raw + kHeaderBytes + size > base_ + region_bytes_)) {
      // mimalloc fell back to OS memory (it may when the arena is full): that is not pinned memory.
      Mimalloc(nullptr)->free(raw);
      raw = nullptr;
    }
    if (raw) {
      impl_->CountAllocation(size);
      const uint64_t end = static_cast<uint64_t>(raw - base_) + kHeaderBytes + size;
      if (end > r->high_water) r->high_water = end;
    }
  }
  if (!raw) {
    const ArenaStats st = Stats();
    return ResourceExhausted("%s: cannot allocate %" PRIu64 " bytes (alignment %" PRIu64 "): %" PRIu64 " of %" PRIu64
                             " bytes in use in %" PRIu64 " allocations",
                             name_.c_str(), size, alignment, st.bytes_in_use, st.capacity, st.live_allocations);
  }
  uint8_t* user = raw + kHeaderBytes;
  Header* h = reinterpret_cast<Header*>(raw);
  __atomic_store_n(&h->size, size, __ATOMIC_RELAXED);
  __atomic_store_n(&h->tag, TagFor(r, user, size), __ATOMIC_RELEASE);
  *out = user;
  return Ok();
}

bool PinnedHostArena::IsLiveAllocation(const void* p, uint64_t* size) const {
  const uint8_t* user = static_cast<const uint8_t*>(p);
  if (user < base_ + kHeaderBytes || user >= base_ + region_bytes_) return false;
  if (reinterpret_cast<uintptr_t>(user) % kHeaderBytes) return false;
  const Header* h = reinterpret_cast<const Header*>(user - kHeaderBytes);
  const uint64_t sz = __atomic_load_n(&h->size, __ATOMIC_RELAXED);
  if (sz == 0 || sz > capacity_) return false;
  if (__atomic_load_n(&h->tag, __ATOMIC_ACQUIRE) != TagFor(impl_->region, user, sz)) return false;
  if (size) *size = sz;
  return true;
}

Status PinnedHostArena::Free(void* ptr) {
  uint8_t* user = static_cast<uint8_t*>(ptr);
  if (user < base_ || user >= base_ + region_bytes_) {
    return InvalidArgument(
        "%s: pointer %p is not inside the pinned-host arena [%p, %p): free only what "
        "neuronmem_client_host_allocate returned",
        name_.c_str(), ptr, static_cast<void*>(base_), static_cast<void*>(base_ + region_bytes_));
  }
  uint64_t size = 0;
  if (!IsLiveAllocation(user, &size)) {
    return InvalidArgument(
        "%s: pointer %p is not the start of a live allocation (already freed, or inside "
        "an allocation)",
        name_.c_str(), ptr);
  }
  Header* h = reinterpret_cast<Header*>(user - kHeaderBytes);
  // Exactly one of several racing frees of the same pointer wins the tag.
  const uint64_t expected = TagFor(impl_->region, user, size);
  if (__atomic_exchange_n(&h->tag, 0, __ATOMIC_ACQ_REL) != expected) {
    return InvalidArgument("%s: pointer %p was freed concurrently by another thread (double free)", name_.c_str(), ptr);
  }
  {
    std::lock_guard<SpinLock> guard(impl_->region->heap_lock);
    Mimalloc(nullptr)->free(h);
    impl_->CountFree(size);
  }
  return Ok();
}

bool PinnedHostArena::Contains(const void* p, uint64_t size) const {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  return b >= base_ && b <= base_ + region_bytes_ && size <= static_cast<uint64_t>(base_ + region_bytes_ - b);
}

ArenaStats PinnedHostArena::Stats() const {
  ArenaStats st;
  st.capacity = capacity_;
  st.bytes_in_use = impl_->in_use.load(std::memory_order_relaxed);
  st.peak_bytes_in_use = impl_->peak.load(std::memory_order_relaxed);
  st.live_allocations = impl_->live.load(std::memory_order_relaxed);
  st.total_allocations = impl_->total.load(std::memory_order_relaxed);
  // mimalloc exposes no free-span query for an arena: report the upper bound capacity - in use - one
  // header per live allocation. Fragmentation and mimalloc's size classes can make a smaller request
  // fail (docs/arenas.md).
  const uint64_t used = st.bytes_in_use + st.live_allocations * kHeaderBytes;
  st.largest_free_block = used < st.capacity ? st.capacity - used : 0;
  st.locked = locked_;
  return st;
}

UnpinnedHostMemory::UnpinnedHostMemory(std::string name) : name_(std::move(name)) {}

Status UnpinnedHostMemory::Allocate(uint64_t size, uint64_t alignment, void** out) {
  *out = nullptr;
  if (size == 0) return InvalidArgument("%s: cannot allocate 0 bytes", name_.c_str());
  if (alignment == 0) alignment = 64;
  if ((alignment & (alignment - 1)) || alignment > (1ull << 30)) {
    return InvalidArgument("%s: alignment %" PRIu64 " is not a power of two up to 1 GiB", name_.c_str(), alignment);
  }
  if (size > (1ull << 46)) {
    return ResourceExhausted("%s: cannot allocate %" PRIu64 " bytes: larger than any host memory", name_.c_str(), size);
  }
  if (fault::Hit(fault::Site::kAllocation))
    return ResourceExhausted("%s: injected fault (test hook): cannot allocate %" PRIu64 " bytes", name_.c_str(), size);
  void* p = nullptr;
  if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, size) != 0 || !p) {
    return ResourceExhausted("%s: the system allocator refused %" PRIu64 " bytes", name_.c_str(), size);
  }
  const uint64_t now = in_use_.fetch_add(size, std::memory_order_relaxed) + size;
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  live_.fetch_add(1, std::memory_order_relaxed);
  total_.fetch_add(1, std::memory_order_relaxed);
  *out = p;
  return Ok();
}

Status UnpinnedHostMemory::Free(void* ptr, uint64_t size) {
  if (!ptr) return Ok();
  std::free(ptr);
  in_use_.fetch_sub(size, std::memory_order_relaxed);
  live_.fetch_sub(1, std::memory_order_relaxed);
  return Ok();
}

bool UnpinnedHostMemory::Contains(const void* /*p*/, uint64_t /*size*/) const { return true; }

ArenaStats UnpinnedHostMemory::Stats() const {
  ArenaStats st;
  st.capacity = 0;
  st.bytes_in_use = in_use_.load(std::memory_order_relaxed);
  st.peak_bytes_in_use = peak_.load(std::memory_order_relaxed);
  st.live_allocations = live_.load(std::memory_order_relaxed);
  st.total_allocations = total_.load(std::memory_order_relaxed);
  st.largest_free_block = 0;
  st.locked = false;
  return st;
}

}  // namespace neuronmem::memory
