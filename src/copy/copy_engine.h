// The copy engine: per-core DMA queues and the workers that drain them. Its one public entry point for the
// layers above (the client, the C shim, later the executor). It sees memories only through MemoryView and
// knows nothing of the client.
//
// Paths (docs/async.md has the measurements behind them):
// - inline: a transfer of at most kInlineThreshold bytes whose queue is idle and whose wait-events are
//   ready runs on the submitting thread and returns the immortal ready event (no allocation, no wake-up:
//   waking a parked worker costs 27-80 us here);
// - queued: anything else is appended to its core's queue (in-order completion) and drained by tasks in
//   a oneTBB task_arena the engine owns (WorkerPool); a queue blocked on an unready event re-arms itself
//   from that event's callback, so no thread waits or spins;
// - large copies are split into chunks run in parallel with non-temporal stores (ParallelCopy);
// - file loads go through io_uring (FileReader: batched reads straight into the target memory).
//
// Files: copy_engine.cc (queues, submission, draining, execution), from_host.cc (uploads), transfers.cc
// (allocate, copy, read, write, chunks, file loads), buffer.cc, storage.cc, worker_pool.cc,
// parallel_copy.cc, file_reader.cc, fast_copy.cc.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/element_type.h"
#include "base/event.h"
#include "base/fault.h"
#include "base/span.h"
#include "base/status.h"
#include "copy/buffer.h"
#include "copy/file_reader.h"
#include "copy/memory_view.h"
#include "copy/op.h"
#include "copy/storage.h"
#include "copy/worker_pool.h"

namespace neuronmem::copy {

// Transfers up to this size run inline when their queue is idle (docs/async.md: measured crossover).
constexpr uint64_t kInlineThreshold = 1u << 20;

// Events a transfer waits for before it starts.
using EventList = Span<Event* const>;

// How the engine may use the caller's host memory (PJRT's semantics; neuronmem_host_buffer_semantics_t).
enum class HostBufferSemantics : uint8_t {
  kImmutableOnlyDuringCall = 0,          // copied or staged during the call
  kImmutableUntilTransferCompletes = 1,  // read until the done-with-host event
  kImmutableZeroCopy = 2,                // aliased where the target memory contains it, else as 1
  kMutableZeroCopy = 3,                  // as 2; the caller may write between transfers
};

// One buffer to create from host data.
struct FromHostArgs {
  const void* data = nullptr;  // may be NULL only for 0 bytes
  ElementType type = ElementType::kInvalid;
  HostBufferSemantics semantics = HostBufferSemantics::kImmutableOnlyDuringCall;
  Span<const int64_t> dims;
  const int64_t* byte_strides = nullptr;  // NULL = dense row-major; else dims.size() strides, each >= 0
  const MemoryView* memory = nullptr;
  EventList waits;
};

class CopyEngine {
 public:
  explicit CopyEngine(uint32_t num_cores);
  // Cancels pending caller-completed events, drains every queue (pending transfers complete), then orphans
  // storages still alive so that their later release touches no memory (it may be gone).
  ~CopyEngine();
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  // A pending event the caller completes (neuronmem_event_create); cancelled when the engine goes.
  Status CreateUserEvent(Event** out);

  // Fills out[0..args.size()) (empty Buffers the caller owns) in one submission. ready: one event for all
  // (nullable); done_with_host: only for one buffer (nullable). On failure every out[i] is left empty.
  Status FromHost(Span<const FromHostArgs> args, Buffer* const* out, Event** ready, Event** done_with_host);
  // An uninitialised buffer (its content is defined at once).
  Status Allocate(const MemoryView& memory, ElementType type, Span<const int64_t> dims, Buffer* out);
  // Copies src into `out`, a new buffer in `memory`, after src's content and `waits`.
  Status CopyToMemory(Buffer& src, const MemoryView& memory, EventList waits, Buffer* out, Event** ready);
  // caller_waits: the caller blocks on the event right away (the C call got no out-event). Then a large
  // transfer whose queue is idle runs on the caller, which shares the copy with the workers: with 2 CPUs
  // oneTBB has a single worker, so this is the only way both CPUs copy.
  Status Read(Buffer& buffer, uint64_t offset, void* dst, uint64_t size, EventList waits, Event** ready,
              bool caller_waits = false);
  Status Write(Buffer& buffer, uint64_t offset, const void* src, uint64_t size, EventList waits, Event** ready,
               bool caller_waits = false);
  // A chunk of an upload into an allocated buffer; the last one defines the buffer's content.
  Status UploadChunk(Buffer& buffer, uint64_t offset, const void* data, uint64_t size, bool is_last, EventList waits,
                     Event** done);
  Status LoadFile(Buffer& buffer, const char* path, uint64_t file_offset, uint64_t size, uint64_t buffer_offset,
                  EventList waits, Event** ready);

  // ---- For the executor (src/exec): computations that read and write buffers' bytes in place.
  // The tag events of this engine's client carry (Event::owner()): another client's events have another.
  const void* event_owner() const { return user_events_.get(); }

  // Copies n bytes between two cores' memories on the calling thread, at once: the peer transfers of a
  // multi-core launch, whose receiving execution waits for them. Large copies are shared with the engine's
  // workers (ParallelCopy).
  void PeerCopy(void* dst, const void* src, uint64_t n);
  // INVALID_ARGUMENT ("<where>wait_events[i] ...") if a wait event belongs to another client.
  Status CheckForeignWaits(EventList waits, const char* where) const { return CheckWaits(waits, where); }
  // A use of the buffer's bytes (they stay while `use` lives) and a new reference to the event that
  // defines them. FAILED_PRECONDITION if the buffer was deleted.
  Status UseBuffer(Buffer& buffer, StorageUse* use, EventRef* definition);
  // A new buffer in `memory` whose content the pending event `definition` defines (the writer completes
  // it); `use` receives a use of its bytes for the writer. RESOURCE_EXHAUSTED when the memory is full.
  Status AllocateDefinedBy(const MemoryView& memory, ElementType type, Span<const int64_t> dims, Event* definition,
                           Buffer* out, StorageUse* use);
  // Records `e` as a usage of the buffer's bytes, so that a later donation of them waits for it (an execution
  // still queued that reads them); nothing when they can no longer be donated: the buffer was deleted (or
  // donated) or aliases IMMUTABLE_ZERO_COPY caller memory.
  void RecordUse(Buffer& buffer, Event* e);
  // Donation: `out` takes over donor's bytes (same memory, type and dims), defined by `definition`; donor is
  // deleted (later calls on it are FAILED_PRECONDITION) but its memory stays with `out`. `use`: as above.
  // FAILED_PRECONDITION if donor was deleted or aliases IMMUTABLE_ZERO_COPY caller memory.
  Status Donate(Buffer& donor, Event* definition, Buffer* out, StorageUse* use);
  // Bitcast (PJRT_Buffer_Bitcast): `out` takes over src's bytes as `type` and `dims`, whose dense size must be
  // src's (INVALID_ARGUMENT otherwise), with src's content event; src is deleted as by a donation (its memory
  // stays with `out`). FAILED_PRECONDITION if src was deleted. Nothing is copied or waited for.
  Status Bitcast(Buffer& src, ElementType type, Span<const int64_t> dims, Buffer* out);

  // Whether file loads go through io_uring (else pread: the kernel refused a ring).
  bool file_reads_use_io_uring() const { return files_.uses_io_uring(); }
  // Storages whose memory is still held (tests).
  size_t LiveStorages() const;
  // Buffers this engine filled that still exist (not yet destroyed; deleted ones count).
  int64_t LiveBuffers() const { return registry_->buffers.load(std::memory_order_relaxed); }

 private:
  Queue& QueueOf(const Buffer& b) { return *queues_[b.memory().core]; }
  // INVALID_ARGUMENT ("<where>wait_events[i] ...") if a wait event belongs to another client (Event::owner()).
  Status CheckWaits(EventList waits, const char* where = "") const;
  // Whether an injected fault (base/fault.h, Site::kTransfer) claims this transfer.
  static bool TakeFault() { return fault::Hit(fault::Site::kTransfer); }
  // An operation on `buffer`'s queue holding a use of its storage, waiting for `waits` and, when
  // after_definition, for the buffer's content. FAILED_PRECONDITION if the buffer was deleted.
  Status BufferOp(Buffer& buffer, EventList waits, bool after_definition, std::unique_ptr<Op>* out);
  Status Submit(std::unique_ptr<Op> op, Event** ready, bool may_inline, bool caller_waits = false);
  void ScheduleDrain(Queue* q);
  void Drain(Queue* q);
  Status Execute(Op& op);

  std::vector<std::unique_ptr<Queue>> queues_;  // one per core
  std::shared_ptr<Registry> registry_ = std::make_shared<Registry>();
  std::shared_ptr<UserEvents> user_events_ = std::make_shared<UserEvents>();
  FileReader files_;
  WorkerPool pool_;  // declared last: destroyed first, after ~CopyEngine has drained the queues
};

}  // namespace neuronmem::copy
