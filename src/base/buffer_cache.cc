#include "base/buffer_cache.h"

#include <algorithm>
#include <new>

namespace neuronmem {

void BufferReturn::operator()(char* p) const {
  if (p == nullptr) return;
  if (cache) {
    cache->Put(p, capacity);
    cache.reset();  // the lease no longer holds the cache
  } else {
    delete[] p;
  }
}

BufferLease FreshBuffer(size_t bytes) {
  const size_t capacity = std::max<size_t>(bytes, 1);
  return BufferLease(new (std::nothrow) char[capacity], BufferReturn{nullptr, capacity});
}

std::shared_ptr<BufferCache> BufferCache::Create(size_t max_bytes) {
  return std::shared_ptr<BufferCache>(new BufferCache(max_bytes));
}

BufferLease BufferCache::Take(size_t bytes) {
  const size_t want = std::max<size_t>(bytes, 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->capacity >= want && (best == kept_.end() || it->capacity < best->capacity)) best = it;
    }
    if (best != kept_.end()) {
      const size_t capacity = best->capacity;
      char* p = best->data.release();
      kept_bytes_ -= capacity;
      kept_.erase(best);
      return BufferLease(p, BufferReturn{shared_from_this(), capacity});
    }
  }
  return BufferLease(new (std::nothrow) char[want], BufferReturn{shared_from_this(), want});
}

size_t BufferCache::kept_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_bytes_;
}

void BufferCache::Put(char* p, size_t capacity) {
  std::unique_ptr<char[]> owned(p);
  std::lock_guard<std::mutex> lock(mu_);
  // Full: make room by freeing smaller buffers first (a large one is the costlier to fault in again).
  while (kept_bytes_ + capacity > max_bytes_ && !kept_.empty()) {
    auto smallest = std::min_element(kept_.begin(), kept_.end(),
                                     [](const Kept& a, const Kept& b) { return a.capacity < b.capacity; });
    if (smallest->capacity >= capacity) break;
    kept_bytes_ -= smallest->capacity;
    kept_.erase(smallest);
  }
  if (kept_bytes_ + capacity > max_bytes_) return;  // freed
  kept_.push_back({std::move(owned), capacity});
  kept_bytes_ += capacity;
}

}  // namespace neuronmem
