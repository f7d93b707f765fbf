// Events: completion of asynchronous work. An Event is reference counted (the caller's handle, the
// operation that completes it, operations that wait on it). One immortal event stands for "already
// ready, succeeded": the small-transfer fast path returns it, so completing inline allocates nothing.
#pragma once

#include <neuronmem/buffer.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "base/status.h"

namespace neuronmem {
struct UserEvents;
struct EventAccess;  // event.cc: the functions below reach the event's private state through it

// Work that a thread blocked on an event can share: a large copy in progress offers its remaining chunks,
// so that on a machine with one oneTBB worker an asynchronous copy followed by a wait uses both CPUs.
class HelpWork {
 public:
  virtual void Help() = 0;  // runs part of the work; returns when nothing is left to claim
  virtual void Ref() = 0;
  virtual void Unref() = 0;

 protected:
  ~HelpWork() = default;
};
}  // namespace neuronmem

// The event object is the C handle itself (no wrapper): the immortal ready event can then be handed to a
// caller without an allocation, which keeps the small-transfer path at tens of nanoseconds. Its state is
// private; the functions below are the only way to change it.
struct neuronmem_event final {
 public:
  neuronmem_event(const neuronmem_event&) = delete;
  neuronmem_event& operator=(const neuronmem_event&) = delete;

  bool ready() const { return ready_.load(std::memory_order_acquire); }
  // The failure, or NULL on success; meaningful once ready().
  const neuronmem_status_t* error() const { return error_.get(); }
  // Whether the event stands for "ready and succeeded" for good (Retain/Release do nothing on it).
  bool immortal() const { return immortal_; }
  // Whether the caller completes it (neuronmem_event_create) rather than the library.
  bool user_completed() const { return user_owner_ != nullptr; }
  // The client whose transfers or caller complete it (an opaque tag: the client's UserEvents), or NULL for
  // events that belong to no client (the immortal ready event, events created already complete).
  const void* owner() const { return owner_; }

 private:
  friend struct neuronmem::EventAccess;
  neuronmem_event() = default;
  ~neuronmem_event() = default;

  std::atomic<int32_t> refs_{1};
  std::atomic<bool> ready_{false};
  bool immortal_ = false;
  neuronmem::Status error_;  // written once before ready_ is set (release)
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void(const neuronmem_status_t*)>> callbacks_;  // guarded by mu_
  neuronmem::HelpWork* help_ = nullptr;                                    // guarded by mu_; holds a ref
  std::shared_ptr<neuronmem::UserEvents> user_owner_;                      // set for caller-completed events
  const void* owner_ = nullptr;                                            // set once, at creation
};

namespace neuronmem {

using Event = neuronmem_event_t;

// A new pending event with one reference, completed by work of the client tagged `owner` (see owner()).
Event* NewEvent(const void* owner = nullptr);
// The immortal ready-and-succeeded event (Retain/Release are no-ops on it).
Event* ReadyEvent();
// A new event already completed with `error`.
Event* FailedEvent(Status error);

void Retain(Event* e);
void Release(Event* e);

inline bool IsReady(const Event* e) { return e->ready(); }

// Completes the event (exactly once) and runs its callbacks on this thread. Returns false (and changes
// nothing) if it was already complete.
bool Complete(Event* e, Status error);

// The pending caller-completed events of one client. Client destruction cancels them (CancelUserEvents), so
// transfers waiting on an event the caller never completes fail instead of hanging the drain.
struct UserEvents {
  std::mutex mu;
  std::unordered_set<Event*> pending;  // each still holds its caller's reference (see CompleteUserEvent)
  bool closed = false;                 // the client is gone: new user events cannot be created
};

// A new pending user event registered in `owner`; FAILED_PRECONDITION if the owner is closed.
Status NewUserEvent(const std::shared_ptr<UserEvents>& owner, Event** out);
// Completes a user event and unregisters it. Returns false if it was already complete.
bool CompleteUserEvent(Event* e, Status error);
// Completes every pending user event of `owner` with CANCELLED and closes it.
void CancelUserEvents(UserEvents* owner);

// Runs fn(error) once the event is ready: now, on this thread, if it already is.
void OnReady(Event* e, std::function<void(const neuronmem_status_t*)> fn);

// Marks this thread as running a caller's function while in scope: an event callback
// (neuronmem_event_on_ready), a kernel, a host-transfer callback. Such a function runs on a library thread
// (the one completing the event, a core's thread, a oneTBB worker): a call that blocks there (a synchronous
// transfer, a wait, a client destroy) can wait for the very thread it blocks, so the C API refuses such
// calls inside one (InCallerCallback) with FAILED_PRECONDITION. Scopes nest.
class CallerCallbackScope {
 public:
  // `what` names the code the caller's function runs in, for the refusal's message (static storage).
  explicit CallerCallbackScope(const char* what = "an event callback (neuronmem_event_on_ready)");
  ~CallerCallbackScope();
  CallerCallbackScope(const CallerCallbackScope&) = delete;
  CallerCallbackScope& operator=(const CallerCallbackScope&) = delete;

 private:
  const char* outer_;
};
// Whether this thread is inside a caller's event callback.
bool InCallerCallback();
// What the innermost CallerCallbackScope of this thread named; nullptr outside any.
const char* CallerCallbackName();

// Waits; timeout_ns < 0, or a timeout past the clock's range (INT64_MAX), means forever. Returns false on
// timeout. A wait without timeout helps with work the event's producer offers (OfferHelp) before it blocks;
// a wait with a timeout never does (no overrun).
bool Wait(Event* e, int64_t timeout_ns);

// Offers `work` (referenced until withdrawn) to threads waiting on e; WithdrawHelp takes it back.
void OfferHelp(Event* e, HelpWork* work);
void WithdrawHelp(Event* e, HelpWork* work);

// A handle to give the caller: retains e.
inline Event* Share(Event* e) {
  Retain(e);
  return e;
}

// Owning smart pointer for internal use.
struct EventRef {
  Event* e = nullptr;
  EventRef() = default;
  explicit EventRef(Event* adopt) : e(adopt) {}
  EventRef(const EventRef& o) : e(o.e) {
    if (e) Retain(e);
  }
  EventRef(EventRef&& o) noexcept : e(o.e) { o.e = nullptr; }
  EventRef& operator=(EventRef o) noexcept {
    std::swap(e, o.e);
    return *this;
  }
  ~EventRef() {
    if (e) Release(e);
  }
  Event* get() const { return e; }
  Event* release() {
    Event* r = e;
    e = nullptr;
    return r;
  }
};

}  // namespace neuronmem
