// The engine's queues: submission (inline or queued), draining in order on the worker pool, execution.
#include "copy/copy_engine.h"

#include <cinttypes>

#include "copy/parallel_copy.h"

namespace neuronmem::copy {

CopyEngine::CopyEngine(uint32_t num_cores) {
  for (uint32_t k = 0; k < num_cores; ++k) {
    queues_.push_back(std::make_unique<Queue>());
    queues_.back()->core = static_cast<int>(k);
    queues_.back()->engine = this;
  }
}

CopyEngine::~CopyEngine() {
  // Transfers waiting on events the caller never completed would never drain: fail them first.
  CancelUserEvents(user_events_.get());
  pool_.WaitIdle([this] {
    for (auto& q : queues_) {
      if (!q->idle()) return false;
    }
    return true;
  });
  std::lock_guard<std::mutex> lock(registry_->mu);
  registry_->closed = true;  // the memories go next: storages still alive must not free into them
}

Status CopyEngine::CreateUserEvent(Event** out) { return NewUserEvent(user_events_, out); }

size_t CopyEngine::LiveStorages() const {
  std::lock_guard<std::mutex> lock(registry_->mu);
  return registry_->count;
}

Status CopyEngine::CheckWaits(EventList waits, const char* where) const {
  for (size_t i = 0; i < waits.size(); ++i) {
    const void* owner = waits[i]->owner();
    if (owner && owner != user_events_.get()) {
      return InvalidArgument(
          "%swait_events[%zu] belongs to another client: a transfer may wait only on events of "
          "its own client (a wait across clients could outlive either)",
          where, i);
    }
  }
  return Ok();
}

Status CopyEngine::BufferOp(Buffer& buffer, EventList waits, bool after_definition, std::unique_ptr<Op>* out) {
  NEURONMEM_RETURN_IF_ERROR(CheckWaits(waits));
  auto op = std::make_unique<Op>();
  StorageUse use;
  NEURONMEM_RETURN_IF_ERROR(buffer.Use(&use));
  op->uses.push_back(std::move(use));
  op->WaitFor(waits);
  Event* def = buffer.definition();
  if (after_definition && (!IsReady(def) || def->error())) op->waits.emplace_back(Share(def));
  op->queue = &QueueOf(buffer);
  *out = std::move(op);
  return Ok();
}

Status CopyEngine::Submit(std::unique_ptr<Op> op, Event** ready, bool may_inline, bool caller_waits) {
  Queue* q = op->queue;
  uint64_t bytes = 0;
  for (const Move& m : op->moves) bytes += m.size;
  bool failed = false;
  if (may_inline && (bytes <= kInlineThreshold || caller_waits) && q->idle() && !FirstBlocking(op->waits, &failed)) {
    // A large synchronous transfer holds its queue (later submissions queue behind it) while the caller
    // shares the copy with the pool's workers (ParallelCopy).
    const bool large = bytes > kInlineThreshold;
    if (large) q->pending.fetch_add(1, std::memory_order_acq_rel);
    Status s = Execute(*op);
    op.reset();
    if (large && q->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) pool_.Notify();
    *ready = s ? FailedEvent(std::move(s)) : ReadyEvent();
    return Ok();
  }
  Event* ev = NewEvent(user_events_.get());
  op->done = EventRef(Share(ev));
  for (const StorageUse& u : op->uses) AddUsage(u.s, ev);  // a later donation of these bytes waits for it
  bool schedule = false;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    q->ops.push_back(std::move(op));
    q->pending.fetch_add(1, std::memory_order_acq_rel);
    if (!q->draining) {
      q->draining = true;
      schedule = true;
    }
  }
  if (schedule) ScheduleDrain(q);
  *ready = ev;
  return Ok();
}

void CopyEngine::ScheduleDrain(Queue* q) {
  pool_.Enqueue([](void* queue) { static_cast<Queue*>(queue)->engine->Drain(static_cast<Queue*>(queue)); }, q);
}

void CopyEngine::Drain(Queue* q) {
  for (;;) {
    Op* op;
    {
      std::lock_guard<std::mutex> lock(q->mu);
      if (q->ops.empty()) {
        q->draining = false;
        return;
      }
      op = q->ops.front().get();
    }
    bool failed = false;
    if (Event* blocking = FirstBlocking(op->waits, &failed); blocking && !failed) {
      // In order: the whole queue waits for this event; its completion re-arms the drain.
      Retain(blocking);
      OnReady(blocking, [this, q, blocking](const neuronmem_status_t*) {
        ScheduleDrain(q);
        Release(blocking);
      });
      return;
    }
    Status s = Execute(*op);
    std::unique_ptr<Op> finished;
    {
      std::lock_guard<std::mutex> lock(q->mu);
      finished = std::move(q->ops.front());
      q->ops.pop_front();
    }
    EventRef done = std::move(finished->done);
    finished.reset();  // releases storages before the event fires: memory can be reused at once
    q->pending.fetch_sub(1, std::memory_order_acq_rel);
    Complete(done.get(), std::move(s));
    pool_.Notify();
  }
}

Status CopyEngine::Execute(Op& op) {
  bool failed = false;
  if (Event* e = FirstBlocking(op.waits, &failed); e && failed) {
    return DependencyFailed(e->error());
  }
  for (const StorageUse& u : op.uses) {
    if (u.s->deleted.load(std::memory_order_acquire)) {
      return FailedPrecondition("a buffer of this transfer was deleted before the transfer ran");
    }
  }
  if (TakeFault()) return Internal("injected fault (test hook): the transfer did not run");
  if (op.fd >= 0) {
    const Move& m = op.moves[0];
    return files_.Read(op.fd, op.file_offset, m.dst_address(), m.size);
  }
  for (const Move& m : op.moves) {
    uint8_t* dst = m.dst_address();
    const uint8_t* src = m.src_address();
    if (dst == src) continue;  // zero-copy alias onto itself
    if (fault::Hit(fault::Site::kCopyMidway)) {
      ParallelCopy(pool_, dst, src, m.size / 2, op.done.get());
      return Internal("injected fault (test hook): the copy failed after %" PRIu64 " of %" PRIu64 " bytes", m.size / 2,
                      m.size);
    }
    ParallelCopy(pool_, dst, src, m.size, op.done.get());
  }
  return Ok();
}

}  // namespace neuronmem::copy
