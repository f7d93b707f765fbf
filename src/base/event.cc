#include "base/event.h"

#include <chrono>

#include "base/poll.h"

namespace neuronmem {

// The functions of event.h, with access to the event's private state.
struct EventAccess {
  static Event* New() { return new Event(); }
  static void Delete(Event* e) { delete e; }
  static std::atomic<int32_t>& refs(Event* e) { return e->refs_; }
  static std::atomic<bool>& ready(Event* e) { return e->ready_; }
  static bool& immortal(Event* e) { return e->immortal_; }
  static Status& error(Event* e) { return e->error_; }
  static std::mutex& mu(Event* e) { return e->mu_; }
  static std::condition_variable& cv(Event* e) { return e->cv_; }
  static std::vector<std::function<void(const neuronmem_status_t*)>>& callbacks(Event* e) { return e->callbacks_; }
  static HelpWork*& help(Event* e) { return e->help_; }
  static std::shared_ptr<UserEvents>& user_owner(Event* e) { return e->user_owner_; }
  static const void*& owner(Event* e) { return e->owner_; }
};

namespace {
using A = EventAccess;
}  // namespace

Event* NewEvent(const void* owner) {
  Event* e = A::New();
  A::owner(e) = owner;
  return e;
}

Event* ReadyEvent() {
  static Event* ready = [] {
    Event* e = A::New();  // immortal
    A::immortal(e) = true;
    A::ready(e).store(true, std::memory_order_release);
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
  if (!A::immortal(e)) A::refs(e).fetch_add(1, std::memory_order_relaxed);
}

void Release(Event* e) {
  if (A::immortal(e)) return;
  if (A::refs(e).fetch_sub(1, std::memory_order_acq_rel) == 1) A::Delete(e);
}

bool Complete(Event* e, Status error) {
  std::vector<std::function<void(const neuronmem_status_t*)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(A::mu(e));
    if (A::ready(e).load(std::memory_order_relaxed)) return false;  // completes once
    A::error(e) = std::move(error);
    A::ready(e).store(true, std::memory_order_release);
    callbacks.swap(A::callbacks(e));
  }
  A::cv(e).notify_all();
  // A callback may release the last other reference; keep the event alive while we run them.
  Retain(e);
  for (auto& cb : callbacks) cb(A::error(e).get());
  Release(e);
  return true;
}

Status NewUserEvent(const std::shared_ptr<UserEvents>& owner, Event** out) {
  *out = nullptr;
  Event* e = NewEvent(owner.get());
  A::user_owner(e) = owner;
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
    std::lock_guard<std::mutex> lock(A::user_owner(e)->mu);
    A::user_owner(e)->pending.erase(e);
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

namespace {
thread_local const char* caller_callback = nullptr;
}  // namespace

CallerCallbackScope::CallerCallbackScope(const char* what) : outer_(caller_callback) { caller_callback = what; }
CallerCallbackScope::~CallerCallbackScope() { caller_callback = outer_; }
bool InCallerCallback() { return caller_callback != nullptr; }
const char* CallerCallbackName() { return caller_callback; }

void OnReady(Event* e, std::function<void(const neuronmem_status_t*)> fn) {
  if (!IsReady(e)) {
    std::unique_lock<std::mutex> lock(A::mu(e));
    if (!A::ready(e).load(std::memory_order_relaxed)) {
      A::callbacks(e).push_back(std::move(fn));
      return;
    }
  }
  fn(A::error(e).get());
}

bool Wait(Event* e, int64_t timeout_ns) {
  if (IsReady(e)) return true;
  // The deadline, unless now + timeout is past what the clock can represent (INT64_MAX, the usual
  // "forever"): then the wait has no deadline (adding would overflow and the wait would end at once).
  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::time_point::max() - now);
  if (timeout_ns >= left.count()) timeout_ns = -1;
  // A short poll first: an event that completes within it (a core's part of a launch, run on that core's thread
  // while the caller ran its own) is seen without sleeping and being woken, which costs 10-80 us on a busy host.
  constexpr std::chrono::microseconds kPoll(20);
  if (timeout_ns < 0 || timeout_ns > std::chrono::duration_cast<std::chrono::nanoseconds>(kPoll).count()) {
    if (PollFor(kPoll, [e] { return IsReady(e); })) return true;
  }
  std::unique_lock<std::mutex> lock(A::mu(e));
  if (timeout_ns < 0) {
    HelpWork* last = nullptr;
    while (!A::ready(e).load(std::memory_order_acquire)) {
      if (A::help(e) && A::help(e) != last) {
        HelpWork* w = last = A::help(e);
        w->Ref();
        lock.unlock();
        w->Help();
        w->Unref();
        lock.lock();
        continue;
      }
      A::cv(e).wait(lock);  // woken by Complete or by a new offer
    }
    return true;
  }
  auto ready = [e] { return A::ready(e).load(std::memory_order_acquire); };
  return A::cv(e).wait_until(lock, now + std::chrono::nanoseconds(timeout_ns), ready);
}

void OfferHelp(Event* e, HelpWork* work) {
  work->Ref();
  HelpWork* old = nullptr;
  {
    std::lock_guard<std::mutex> lock(A::mu(e));
    old = A::help(e);
    A::help(e) = work;
  }
  if (old) old->Unref();
  A::cv(e).notify_all();
}

void WithdrawHelp(Event* e, HelpWork* work) {
  {
    std::lock_guard<std::mutex> lock(A::mu(e));
    if (A::help(e) != work) return;
    A::help(e) = nullptr;
  }
  work->Unref();
}

}  // namespace neuronmem
