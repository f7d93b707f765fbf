// The copy engine of a client: buffers, per-core DMA queues and the workers that drain them.
//
// Paths (docs/async.md has the measurements behind them):
// - inline: a transfer of at most kInlineThreshold bytes whose queue is idle and whose wait-events are
//   ready runs on the submitting thread and returns the immortal ready event (no allocation, no wake-up:
//   waking a parked worker costs 27-80 us here);
// - queued: anything else is appended to its core's queue (in-order completion) and drained by tasks in
//   a oneTBB task_arena the engine owns; a queue blocked on an unready event re-arms itself from that
//   event's callback, so no thread waits or spins;
// - large copies are split into chunks run in parallel on the arena with non-temporal stores;
// - file loads go through io_uring (batched reads straight into the target memory).
#pragma once

#include <neuronmem/buffer.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/event.h"
#include "base/status.h"
#include "core/client.h"

namespace neuronmem::copy {

struct Storage;
struct Registry;
struct Op;
struct Queue;

// Transfers up to this size run inline when their queue is idle (docs/async.md: measured crossover).
constexpr uint64_t kInlineThreshold = 1u << 20;

class CopyEngine {
 public:
  explicit CopyEngine(neuronmem_client_t* client);
  // Drains every queue (pending transfers complete), then orphans buffers still alive so that their
  // later destruction touches no arena.
  ~CopyEngine();

  Status Init();
  // A pending event the caller completes (neuronmem_event_create); cancelled when the engine goes.
  Status CreateUserEvent(Event** out);

  // args: `count` validated-by-the-engine argument structs. out_buffers: count slots. ready: one event for
  // all (nullable); done_with_host: only for count == 1 (nullable).
  Status FromHost(const neuronmem_buffer_from_host_args_t* args, size_t count, neuronmem_buffer_t** out_buffers,
                  Event** ready, Event** done_with_host);
  Status Allocate(neuronmem_memory_t* memory, neuronmem_element_type_t type, const int64_t* dims, size_t rank,
                  neuronmem_buffer_t** out);
  Status CopyToMemory(neuronmem_buffer_t* src, neuronmem_memory_t* memory, Event* const* waits, size_t num_waits,
                      neuronmem_buffer_t** out, Event** ready);
  // caller_waits: the caller blocks on the event right away (the C call got no out-event). Then a large
  // transfer whose queue is idle runs on the caller, which joins the task_arena: with 2 CPUs oneTBB has a
  // single worker, so this is the only way both CPUs copy.
  Status Read(neuronmem_buffer_t* buffer, uint64_t offset, void* dst, uint64_t size, Event* const* waits,
              size_t num_waits, Event** ready, bool caller_waits = false);
  Status Write(neuronmem_buffer_t* buffer, uint64_t offset, const void* src, uint64_t size, Event* const* waits,
               size_t num_waits, Event** ready, bool caller_waits = false);
  Status UploadChunk(neuronmem_buffer_t* buffer, uint64_t offset, const void* data, uint64_t size, bool is_last,
                     Event* const* waits, size_t num_waits, Event** done);
  Status LoadFile(neuronmem_buffer_t* buffer, const char* path, uint64_t file_offset, uint64_t size,
                  uint64_t buffer_offset, Event* const* waits, size_t num_waits, Event** ready);

  // Makes the next n transfers fail with INTERNAL "injected fault" before they touch memory (tests).
  void InjectFaults(int n) { inject_faults_.store(n, std::memory_order_relaxed); }
  // Buffers whose memory is still held (for tests and the client's report).
  size_t LiveStorages() const;

  neuronmem_client_t* client() const { return client_; }

 private:
  friend struct Queue;
  Status Submit(std::unique_ptr<Op> op, Event** ready, bool may_inline, bool caller_waits = false);
  // Runs fn(this, arg) on an arena worker, counted in active_tasks_ (the task must call TaskDone).
  void Enqueue(void (*fn)(CopyEngine*, void*), void* arg);
  void TaskDone();
  void ScheduleDrain(Queue* q);
  void Drain(Queue* q);
  Status Execute(Op& op);
  Status ExecuteFileLoad(Op& op);
  // Copies n bytes, sharing large copies with the arena's workers and with threads waiting on `done`
  // (nullable) without a timeout (see SharedCopy).
  void ParallelCopy(uint8_t* dst, const uint8_t* src, uint64_t n, Event* done);
  Status CheckMemory(neuronmem_memory_t* memory) const;
  Status NewStorage(neuronmem_memory_t* memory, uint64_t bytes, Storage** out);

  neuronmem_client_t* client_;
  std::vector<std::unique_ptr<Queue>> queues_;  // one per core
  std::shared_ptr<Registry> registry_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<int> inject_faults_{0};
  std::atomic<int64_t> active_tasks_{0};
  std::shared_ptr<UserEvents> user_events_ = std::make_shared<UserEvents>();
  std::mutex idle_mu_;
  std::condition_variable idle_cv_;
};

Status CreateCopyEngine(neuronmem_client_t* client, std::unique_ptr<CopyEngine>* out);

// Marks the buffer deleted; its memory goes once pending transfers that touch it finish. Idempotent.
Status DeleteBuffer(neuronmem_buffer_t* buffer);
// Deletes (if not yet) and frees the handle.
void DestroyBuffer(neuronmem_buffer_t* buffer);

// Element type helpers.
uint64_t ElementSize(neuronmem_element_type_t type);  // 0 = unknown
// Validates dims and computes the dense byte size with overflow checks.
Status DenseBytes(neuronmem_element_type_t type, const int64_t* dims, size_t rank, uint64_t* bytes);

}  // namespace neuronmem::copy

// The buffer handle.
struct neuronmem_buffer {
  neuronmem_client_t* client = nullptr;
  neuronmem_memory_t* memory = nullptr;
  neuronmem_element_type_t type = NEURONMEM_ELEMENT_TYPE_U8;
  int64_t dims[NEURONMEM_MAX_RANK] = {};
  size_t rank = 0;
  uint64_t bytes = 0;
  bool zero_copy = false;
  neuronmem::copy::Storage* storage = nullptr;  // object reference held until destroy
  std::atomic<bool> deleted{false};
  // The event that defines the content; replaced once by the last chunk of a chunked upload. Every event
  // ever installed is kept in `definitions` until destroy, so a racing reader never sees a freed one.
  std::atomic<neuronmem::Event*> definition{nullptr};
  std::mutex definition_mu;
  std::vector<neuronmem::EventRef> definitions;
  std::atomic<bool> chunks_closed{false};
};
