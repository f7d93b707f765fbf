#include "copy/storage.h"

#include <algorithm>

namespace neuronmem::copy {
namespace {

void Register(Registry& reg, Storage* s) {
  std::lock_guard<std::mutex> lock(reg.mu);
  s->next = reg.head;
  if (s->next) s->next->prev = s;
  reg.head = s;
  ++reg.count;
}

void ReleaseMemory(Storage* s) {
  Registry& reg = *s->registry;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    if (s->prev) {
      s->prev->next = s->next;
    } else if (reg.head == s) {
      reg.head = s->next;
    }
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = nullptr;
    --reg.count;
    // A pointer this storage got from Allocate cannot be refused: the status carries nothing to act on.
    if (!reg.closed && s->owned) s->memory->Free(s->data, s->bytes).IgnoreError();
    s->data = nullptr;
  }
  if (s->done_with_host.get()) Complete(s->done_with_host.get(), Ok());
}

}  // namespace

Status NewStorage(const std::shared_ptr<Registry>& registry, memory::Memory* memory, uint64_t bytes, Storage** out) {
  auto s = std::make_unique<Storage>();
  s->memory = memory;
  s->bytes = bytes;
  s->registry = registry;
  if (bytes) {
    void* p = nullptr;
    NEURONMEM_RETURN_IF_ERROR(memory->Allocate(bytes, 64, &p));
    s->data = static_cast<uint8_t*>(p);
    s->owned = true;
  }
  Register(*registry, s.get());
  *out = s.release();
  return Ok();
}

Storage* NewAliasStorage(const std::shared_ptr<Registry>& registry, memory::Memory* memory, void* data,
                         EventRef done_with_host) {
  auto* s = new Storage();
  s->memory = memory;
  s->data = static_cast<uint8_t*>(data);
  s->registry = registry;
  s->done_with_host = std::move(done_with_host);
  Register(*registry, s);
  return s;
}

void RetainObject(Storage* s) { s->refs.fetch_add(1, std::memory_order_relaxed); }

void ReleaseObject(Storage* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
}

bool AcquireUser(Storage* s) {
  int32_t u = s->users.load(std::memory_order_relaxed);
  do {
    if (u == 0) return false;
  } while (!s->users.compare_exchange_weak(u, u + 1, std::memory_order_acquire, std::memory_order_relaxed));
  return true;
}

void ReleaseUser(Storage* s) {
  if (s->users.fetch_sub(1, std::memory_order_acq_rel) == 1) ReleaseMemory(s);
}

void AddUsage(Storage* s, Event* e) {
  std::lock_guard<std::mutex> lock(s->usage_mu);
  auto& u = s->usages;
  if (u.size() >= s->usages_prune_at) {
    u.erase(std::remove_if(u.begin(), u.end(), [](const EventRef& r) { return IsReady(r.get()); }), u.end());
    s->usages_prune_at = std::max<size_t>(16, 2 * u.size());
  }
  u.emplace_back(Share(e));
}

void PendingUsages(Storage* s, std::vector<EventRef>* out) {
  std::lock_guard<std::mutex> lock(s->usage_mu);
  for (const EventRef& r : s->usages)
    if (!IsReady(r.get())) out->push_back(r);
}

}  // namespace neuronmem::copy
