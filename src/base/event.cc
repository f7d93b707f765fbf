#include "base/event.h"

#include <chrono>

namespace neuronmem {

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

bool Complete(Event* e, Status error) {
  std::vector<std::function<void(const neuronmem_status_t*)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->ready.load(std::memory_order_relaxed)) return false;  // completes once
    e->error = std::move(error);
    e->ready.store(true, std::memory_order_release);
    callbacks.swap(e->callbacks);
  }
  e->cv.notify_all();
  // A callback may release the last other reference; keep the event alive while we run them.
  Retain(e);
  for (auto& cb : callbacks) cb(e->error.get());
  Release(e);
  return true;
}

Status NewUserEvent(const std::shared_ptr<UserEvents>& owner, Event** out) {
  *out = nullptr;
  Event* e = NewEvent();
  e->user_owner = owner;
  {
    std::lock_guard<std::mutex> lock(owner->mu);
    if (owner->closed) {
      Release(e);
      return FailedPrecondition("the client is being destroyed: no new events");
    }
    owner->pending.insert(e);
  }
  *out = e;
  return Ok();
}

bool CompleteUserEvent(Event* e, Status error) {
  {
    std::lock_guard<std::mutex> lock(e->user_owner->mu);
    e->user_owner->pending.erase(e);
  }
  return Complete(e, std::move(error));
}

void CancelUserEvents(UserEvents* owner) {
  std::vector<Event*> events;
  {
    std::lock_guard<std::mutex> lock(owner->mu);
    owner->closed = true;
    for (Event* e : owner->pending) {
      Retain(e);  // alive: a pending event still holds its caller's reference
      events.push_back(e);
    }
    owner->pending.clear();
  }
  for (Event* e : events) {
    Complete(e, Cancelled("the client was destroyed before this event (neuronmem_event_create) was completed"));
    Release(e);
  }
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
  if (timeout_ns < 0) {
    HelpWork* last = nullptr;
    while (!e->ready.load(std::memory_order_acquire)) {
      if (e->help && e->help != last) {
        HelpWork* w = last = e->help;
        w->Ref();
        lock.unlock();
        w->Help();
        w->Unref();
        lock.lock();
        continue;
      }
      e->cv.wait(lock);  // woken by Complete or by a new offer
    }
    return true;
  }
  auto ready = [e] { return e->ready.load(std::memory_order_acquire); };
  return e->cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns), ready);
}

void OfferHelp(Event* e, HelpWork* work) {
  work->Ref();
  HelpWork* old = nullptr;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    old = e->help;
    e->help = work;
  }
  if (old) old->Unref();
  e->cv.notify_all();
}

void WithdrawHelp(Event* e, HelpWork* work) {
  {
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->help != work) return;
    e->help = nullptr;
  }
  work->Unref();
}

}  // namespace neuronmem
