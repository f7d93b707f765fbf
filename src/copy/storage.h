// Storages: the bytes behind buffers, with two counts. `refs` keeps the object alive (the buffer, pending
// operations); `users` keeps the memory alive (the buffer's content reference plus pending operations).
// Memory is released when users reaches zero and is never re-acquired after that. The registry lists every
// storage still holding memory, so the engine can orphan them when the client goes away.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/event.h"
#include "base/status.h"
#include "memory/memory.h"

namespace neuronmem::copy {

struct Storage;

struct Registry {
  std::mutex mu;
  Storage* head = nullptr;
  size_t count = 0;
  bool closed = false;  // the client is gone: releasing memory must not touch its arenas
  // Buffers filled by the engine and not yet cleared (the C handles that still exist, deleted or not).
  std::atomic<int64_t> buffers{0};
};

struct Storage {
  std::atomic<int32_t> refs{1};
  std::atomic<int32_t> users{1};
  std::atomic<bool> deleted{false};
  memory::Memory* memory = nullptr;
  bool owned = false;  // the bytes came from memory->Allocate (false: zero-copy alias, or no bytes)
  uint8_t* data = nullptr;
  uint64_t bytes = 0;
  EventRef done_with_host;  // zero-copy: completed when the memory is released
  std::shared_ptr<Registry> registry;
  Storage* prev = nullptr;
  Storage* next = nullptr;
  // Usage events (PJRT's usage events): the completion events of operations queued on these bytes (transfers
  // that read or write them, executions that read them). A donation waits for the pending ones before the
  // new owner writes the bytes. Guarded by usage_mu; ready ones are dropped as new ones come.
  std::mutex usage_mu;
  std::vector<EventRef> usages;
  size_t usages_prune_at = 16;  // AddUsage drops the ready ones when the list reaches this size

  uint8_t* at(uint64_t offset) const { return data + offset; }
};

// Records `e` (not adopted: a new reference is taken) as a usage of s's bytes; drops usages already ready
// whenever the list has doubled since (amortized O(1): a chain of n pending transfers costs O(n), not O(n^2)).
void AddUsage(Storage* s, Event* e);
// Appends new references to s's usage events that are not ready yet.
void PendingUsages(Storage* s, std::vector<EventRef>* out);

// A storage of `bytes` allocated from `memory` (none for 0 bytes), registered. RESOURCE_EXHAUSTED when full.
Status NewStorage(const std::shared_ptr<Registry>& registry, memory::Memory* memory, uint64_t bytes, Storage** out);
// A storage aliasing the caller's `data` (zero-copy): nothing to free; done_with_host, if set, completes
// when the memory is released.
Storage* NewAliasStorage(const std::shared_ptr<Registry>& registry, memory::Memory* memory, void* data,
                         EventRef done_with_host);

void RetainObject(Storage* s);
void ReleaseObject(Storage* s);
// Adds a user of the memory unless it is already released.
bool AcquireUser(Storage* s);
void ReleaseUser(Storage* s);

// A storage held for the duration of an operation: object and memory.
struct StorageUse {
  Storage* s = nullptr;
  StorageUse() = default;
  // Takes a new use of a storage the caller already holds memory of (a freshly made one).
  static StorageUse Of(Storage* held) {
    RetainObject(held);
    AcquireUser(held);
    StorageUse u;
    u.s = held;
    return u;
  }
  StorageUse(const StorageUse&) = delete;
  StorageUse& operator=(const StorageUse&) = delete;
  StorageUse(StorageUse&& o) noexcept : s(o.s) { o.s = nullptr; }
  StorageUse& operator=(StorageUse&& o) noexcept {
    if (this != &o) {
      Reset();
      s = o.s;
      o.s = nullptr;
    }
    return *this;
  }
  ~StorageUse() { Reset(); }
  void Reset() {
    if (s) {
      ReleaseUser(s);
      ReleaseObject(s);
      s = nullptr;
    }
  }
};

}  // namespace neuronmem::copy
