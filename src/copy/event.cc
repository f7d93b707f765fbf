#include "copy/event.h"

#include <chrono>

namespace neuronmem::copy {

Event* NewEvent() { return new Event(); }

Event* ReadyEvent() {
  static Event* ready = [] {
    Event* e = new Event();  // immortal
    e->immortal = true;
    e->ready.store(true, std::memory_order_release);
    return e;
  }();
  return ready;
}

Event* FailedEvent(Status error) {
  Event* e = NewEvent();
  Complete(e, std::move(error));
  return e;
}

void Retain(Event* e) {
  if (!e->immortal) e->refs.fetch_add(1, std::memory_order_relaxed);
}

void Release(Event* e) {
  if (e->immortal) return;
  if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete e;
}

void Complete(Event* e, Status error) {
  std::vector<std::function<void(const neuronmem_status_t*)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->ready.load(std::memory_order_relaxed)) return;  // completes once
    e->error = std::move(error);
    e->ready.store(true, std::memory_order_release);
    callbacks.swap(e->callbacks);
  }
  e->cv.notify_all();
  // A callback may release the last other reference; keep the event alive while we run them.
  Retain(e);
  for (auto& cb : callbacks) cb(e->error.get());
  Release(e);
}

void OnReady(Event* e, std::function<void(const neuronmem_status_t*)> fn) {
  if (!IsReady(e)) {
    std::unique_lock<std::mutex> lock(e->mu);
    if (!e->ready.load(std::memory_order_relaxed)) {
      e->callbacks.push_back(std::move(fn));
      return;
    }
  }
  fn(e->error.get());
}

bool Wait(Event* e, int64_t timeout_ns) {
  if (IsReady(e)) return true;
  std::unique_lock<std::mutex> lock(e->mu);
  auto ready = [e] { return e->ready.load(std::memory_order_acquire); };
  if (timeout_ns < 0) {
    e->cv.wait(lock, ready);
    return true;
  }
  return e->cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns), ready);
}

}  // namespace neuronmem::copy
