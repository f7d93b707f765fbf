// The executor of one client: a serial compute queue per NeuronCore and the execution of executables on it.
//
// Execute checks everything it can at submission (argument count, shapes, element types, memory kinds,
// deleted buffers, failed events) and fails then with the argument buffers intact; it then copies
// misplaced arguments (auto_copy, through the copy engine), allocates the results (or takes over donated
// arguments' memory), and appends the execution to its core's queue. A queue runs its executions in
// submission order: on the submitting thread when the queue is idle and nothing is pending (waking a parked
// worker costs 50-70 us here, docs/performance.md), else on the executor's workers, re-armed from the
// callback of the event the head waits for (no thread waits or spins). An execution allocates its workspace
// (one block per memory space) from the core's memories, runs the program, and completes its event.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "base/event.h"
#include "base/span.h"
#include "base/status.h"
#include "copy/buffer.h"
#include "copy/worker_pool.h"
#include "core/client.h"
#include "exec/executable.h"
#include "exec/stats.h"

namespace neuronmem::exec {

struct Execution;
class Runtime;

struct CoreQueue {
  Runtime* runtime = nullptr;
  uint32_t core = 0;
  std::mutex mu;
  std::deque<std::unique_ptr<Execution>> queue;
  bool active = false;  // a drain runs, is scheduled, or is armed on an event
};

struct ExecuteRequest {
  std::shared_ptr<const Executable> executable;
  uint32_t core = 0;
  Span<copy::Buffer* const> arguments;
  Span<Event* const> waits;
  Span<const size_t> non_donatable;
};

class Runtime {
 public:
  explicit Runtime(core::Client& client);
  // Waits until no execution is queued or running (the caller checks pending() == 0 first).
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Submits an execution (see the file comment). results: num_outputs empty Buffers the caller owns, filled
  // on success. done: a new event for the caller. stats (nullable): receives the execution's statistics,
  // complete once `done` is ready. On failure the arguments are intact (unless another thread deleted a
  // donated one meanwhile) and the caller destroys `results`, some of which may have been filled.
  Status Execute(const ExecuteRequest& request, copy::Buffer* const* results, Event** done,
                 std::shared_ptr<const ExecutionStats>* stats);

  // Executions submitted and not yet finished.
  int64_t pending() const { return pending_.load(std::memory_order_acquire); }

 private:
  friend struct DrainAccess;
  void Submit(std::unique_ptr<Execution> e);
  void Drain(CoreQueue* q, bool on_caller);
  static void DrainTask(void* q);
  void Run(Execution& e);

  core::Client& client_;
  std::vector<std::unique_ptr<CoreQueue>> queues_;
  std::atomic<int64_t> pending_{0};
  copy::WorkerPool pool_;  // declared last: destroyed first
};

}  // namespace neuronmem::exec
