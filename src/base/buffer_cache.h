// Large byte buffers kept for reuse. Memory fresh from the kernel costs a page fault per 4 KiB the first time it is
// written (about 2 GB/s on this machine kind, docs/performance.md), so a path that needs a large scratch buffer per
// call (a message between processes, the staging of a received value) takes it from a cache instead.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace neuronmem {

class BufferCache;

// Hands a buffer back to its cache (or frees it, where it has none or the cache is full).
struct BufferReturn {
  mutable std::shared_ptr<BufferCache> cache;  // null: freed; let go once the buffer is back
  size_t capacity = 0;
  void operator()(char* p) const;
};

// A buffer of at least the bytes asked for (uninitialised); null where there was no memory.
using BufferLease = std::unique_ptr<char[], BufferReturn>;

// A fresh buffer of `bytes` bytes that no cache keeps (null where there is no memory).
BufferLease FreshBuffer(size_t bytes);

// Thread-safe. Leases go back to the cache when destroyed, on any thread, and keep it alive until then.
class BufferCache : public std::enable_shared_from_this<BufferCache> {
 public:
  // Keeps at most `max_bytes` of returned buffers; a buffer larger than that is freed when returned.
  static std::shared_ptr<BufferCache> Create(size_t max_bytes);

  // The smallest kept buffer of at least `bytes` (at least 1), else a fresh one.
  BufferLease Take(size_t bytes);

  // Bytes of the buffers kept now (not leased).
  size_t kept_bytes() const;

 private:
  friend struct BufferReturn;
  explicit BufferCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  void Put(char* p, size_t capacity);

  const size_t max_bytes_;
  mutable std::mutex mu_;
  struct Kept {
    std::unique_ptr<char[]> data;
    size_t capacity;
  };
  std::vector<Kept> kept_;
  size_t kept_bytes_ = 0;
};

}  // namespace neuronmem
