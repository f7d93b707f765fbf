// The executor of one client: a serial compute queue per NeuronCore and the execution of executables on it.
//
// Execute checks everything it can at submission (argument count, shapes, element types, memory kinds,
// deleted buffers, failed events) and fails then with the argument buffers intact; it then copies
// misplaced arguments (auto_copy, through the copy engine), allocates the results (or takes over donated
// arguments' memory), and appends the execution to its core's queue. A queue runs its executions in
// submission order: on the submitting thread when the queue is idle and nothing is pending (waking a parked
// worker costs 50-70 us here, docs/performance.md), else on the executor's workers, re-armed from the
// callback of the event the head waits for (no thread waits or spins). Work without a bound the executor knows
// (a while loop: Executable::unbounded) never runs on the submitting thread but on the core's launch thread. An
// execution stops early when its ExecutionControl says so (a cancel, a deadline): queued, it fails without waiting for
// its events; running, before its next op. An execution allocates its workspace (one block per memory space) from the
// core's memories, runs the program, and completes its event.
//
// A launch (Launch) submits one execution per core of a set at once: the executions of all launches reach
// every core they share in the same order (one lock around a launch's submission), and each runs on a thread
// of its own core, made the first time a launch uses the core. Never on a oneTBB worker: on this machine the
// library's arena holds one worker, and an execution that blocks (a recv waiting for its peer core) would hold
// it while the peer's execution waits for it. A launch of one device without host callbacks cannot block (the
// other processes of its grid are absent) and runs as a plain execution does.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/event.h"
#include "base/span.h"
#include "base/status.h"
#include "copy/buffer.h"
#include "copy/worker_pool.h"
#include "core/client.h"
#include "exec/core_workers.h"
#include "exec/cross_process.h"
#include "exec/custom_kernels.h"
#include "exec/executable.h"
#include "exec/stats.h"
#include "exec/transport.h"

namespace neuronmem::exec {

struct Execution;
struct LaunchState;
class Runtime;

// A host transfer of one execution of a launch (stablehlo.send / recv with is_host_transfer), handed to the
// frontend's callback for its channel: a send's payload to read, or a recv's results to fill, as views of
// the executing core's memories.
struct HostTransfer {
  int64_t channel = 0;
  uint32_t core = 0, replica = 0, partition = 0;
  const CustomKernelTensor* tensors = nullptr;
  size_t num_tensors = 0;
};
// Called on the executing core's thread; several cores may call at once.
using HostCallback = std::function<Status(const HostTransfer&)>;
// A launch's callbacks by channel id (PJRT's send_callbacks / recv_callbacks).
struct HostCallbacks {
  std::map<int64_t, HostCallback> send, recv;
};

// Stops one execution: neuronmem_execution_cancel, or its deadline. Made by the frontend (the execution's handle
// keeps it) or by the runtime for a deadline; shared with the execution until it finishes. Thread-safe.
class ExecutionControl {
 public:
  // Asks the execution to stop with `code` (CANCELLED or DEADLINE_EXCEEDED): queued, it fails at once without
  // waiting for its events; running, before its next op. The first stop wins; false when it had already
  // finished (or was stopped): nothing changes then.
  bool Stop(int code);
  // The code it was stopped with, 0 while not stopped.
  int code() const { return code_.load(std::memory_order_acquire); }
  // What the program polls (interp::Program::RunOptions::interrupt).
  const std::atomic<int>* interrupt() const { return &code_; }

 private:
  friend class Runtime;
  std::atomic<int> code_{0};
  std::mutex mu_;
  Runtime* runtime_ = nullptr;  // set at submission, cleared once it finished
  uint32_t core_ = 0;
  bool timed_ = false;  // in the runtime's deadline list (deadline_)
  std::multimap<uint64_t, std::weak_ptr<ExecutionControl>>::iterator deadline_;
};

struct CoreQueue {
  Runtime* runtime = nullptr;
  uint32_t core = 0;
  std::mutex mu;
  std::deque<std::unique_ptr<Execution>> queue;
  bool active = false;  // a drain runs, is scheduled, or is armed on an event
  // Armed: the drain waits for an event of the head's (its callback re-arms it). A stop of the head disarms it
  // and drains at once; the event's callback then finds its arm_gen outdated and does nothing.
  bool armed = false;
  uint64_t arm_gen = 0;
  // The core's launch thread (made by the first launch that uses the core): drains the queue when `wake`.
  // After a drain it polls `wake` for a moment (`spinning`) before it sleeps on `cv`, so launches that come
  // back to back are not each delayed by a thread's wake-up. `wake` is set and `spinning` read and written
  // under `mu`; `wake` is also polled without it.
  std::thread thread;
  std::condition_variable cv;
  std::atomic<bool> wake{false};
  bool spinning = false;
  bool stop = false;
};

struct ExecuteRequest {
  std::shared_ptr<const Executable> executable;
  uint32_t core = 0;
  Span<copy::Buffer* const> arguments;
  Span<Event* const> waits;
  Span<const size_t> non_donatable;
  std::shared_ptr<const HostCallbacks> host;  // nullable: none
  // Stops the execution (nullable: it cannot be cancelled, only time out); the frontend keeps it to cancel.
  std::shared_ptr<ExecutionControl> control;
  // Fails it with DEADLINE_EXCEEDED once this many nanoseconds passed since submission; 0: no deadline.
  uint64_t timeout_ns = 0;
};

// A launch: the executable on several cores at once. arguments: cores.size() * num_parameters, row-major;
// waits: one list per core, or empty for none.
struct LaunchRequest {
  std::shared_ptr<const Executable> executable;
  Span<const uint32_t> cores;
  Span<copy::Buffer* const> arguments;
  Span<const Span<Event* const>> waits;
  Span<const size_t> non_donatable;
  std::shared_ptr<const HostCallbacks> host;  // nullable: none
  // Per core (nullable; its entries nullable): what stops each core's execution (ExecuteRequest::control).
  const std::shared_ptr<ExecutionControl>* controls = nullptr;
  uint64_t timeout_ns = 0;  // every core's execution (ExecuteRequest::timeout_ns)
  // A launch across the processes of a job: the caller's id for it (PJRT's launch_id; 0: none), which every
  // process must give alike (checked with each message between processes).
  uint64_t launch_id = 0;
};

class Runtime {
 public:
  // transport: what moves the bytes between the cores of a launch (nullptr: NewInProcessTransport over the
  // client's copy engine); the executor uses it through exec::Transport only.
  // job (nullable, not owned, outlives the runtime): the client's place in a job of several processes; a
  // program that uses the process grid then runs on global device ids, its grid spanning the job
  // (cross_process.h).
  explicit Runtime(core::Client& client, std::unique_ptr<Transport> transport = nullptr, Job* job = nullptr);
  // Waits until no execution is queued or running (the caller checks pending() == 0 first).
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Submits an execution (see the file comment). An executable that uses the process grid runs as a launch
  // of this one device (the grid's other processes are absent; it runs as a plain execution). results: num_outputs
  // empty Buffers the caller owns, filled on success. done: a new event for the caller. stats (nullable): receives the
  // execution's statistics, complete once `done` is ready. On failure the arguments are intact (unless another thread
  // deleted a donated one meanwhile) and the caller destroys `results`, some of which may have been filled.
  Status Execute(const ExecuteRequest& request, copy::Buffer* const* results, Event** done,
                 std::shared_ptr<const ExecutionStats>* stats);

  // Submits a launch (see the file comment): what Execute does for each core, checked for every core before
  // any is submitted. results: cores.size() * num_outputs empty Buffers, row-major; done: cores.size() slots;
  // stats (nullable): cores.size() slots. A failure names the core ("device d: ...") and submits nothing.
  Status Launch(const LaunchRequest& request, copy::Buffer* const* results, Event** done,
                std::shared_ptr<const ExecutionStats>* stats);

  // An execution was stopped (ExecutionControl::Stop) on `core`: a drain waiting for its events goes on.
  void Kick(uint32_t core);

  // Executions submitted and not yet finished.
  int64_t pending() const { return pending_.load(std::memory_order_acquire); }

 private:
  friend struct DrainAccess;
  // Checks one core's request and makes its execution: copies, argument uses, results (all but donated).
  Status Prepare(const ExecuteRequest& r, copy::Buffer* const* results, std::unique_ptr<Execution>* out);
  // The steps of Prepare, in order. The core, the argument count and the waits:
  Status CheckRequest(const ExecuteRequest& r) const;
  // Each argument against its parameter: which are donated this time, which must first be copied to the
  // memory their parameter names (auto_copy).
  Status CheckArguments(const ExecuteRequest& r, std::vector<bool>* donate, std::vector<bool>* needs_copy) const;
  // The execution, waiting for r.waits; nothing made yet that a failure must undo.
  std::unique_ptr<Execution> NewExecution(const ExecuteRequest& r, std::vector<bool> donate) const;
  // auto_copy: each misplaced argument copied to its parameter's memory; the execution waits for the copies.
  Status CopyMisplacedArguments(const ExecuteRequest& r, const std::vector<bool>& needs_copy, Execution& e);
  // The arguments' bytes in use by e: it waits for their content and, when donated, for every operation
  // still queued on them.
  Status UseArguments(Execution& e);
  // The results that are not donated: new buffers in the memory each output's kind names, defined by e.
  Status AllocateResults(const ExecuteRequest& r, copy::Buffer* const* results, Execution& e);
  // Gives up the donated arguments to their results (the reads are recorded once the submission is sure to run:
  // Execute after submission, only for an execution that did not run at once; Launch by MarkReads).
  Status Commit(const ExecuteRequest& r, Execution& e, copy::Buffer* const* results);
  // Records e as a usage of the arguments it reads (a later donation waits for it); once every execution of a
  // launch committed.
  static void MarkReads(Execution& e);
  // Appends e to its core's queue; returns whether the caller must start the drain.
  bool Enqueue(std::unique_ptr<Execution> e);
  // How many of a launch's executions the caller runs itself: heads[0, k) (heads: the executions whose queue
  // was idle); marks them as such. n: the launch's executions.
  size_t CallerRuns(const Executable& exe, const LaunchRequest& r, bool alone, bool across,
                    const std::vector<Execution*>& heads, size_t n) const;
  void Submit(std::unique_ptr<Execution> e);
  void Drain(CoreQueue* q, bool on_caller);
  static void DrainTask(void* q);
  // Hands q's drain to its launch thread (made on first use). Called with q->mu held.
  void WakeLaunchThread(CoreQueue* q);
  void LaunchThread(CoreQueue* q);
  void Run(Execution& e);
  // Counts e's process as ended (it Finished in its launch's grid); the last process to end completes every
  // execution of the launch.
  void EndProcess(Execution& e);
  // Starts e's control (a deadline, a cancel) once e is submitted; ends it once e finished.
  void Arm(Execution& e, uint64_t timeout_ns);
  void Disarm(Execution& e);
  void DeadlineThread();

  core::Client& client_;
  std::vector<std::unique_ptr<CoreQueue>> queues_;
  std::atomic<int64_t> pending_{0};
  std::mutex launch_mu_;                  // one launch's executions enter their queues together
  std::unique_ptr<Transport> transport_;  // moves peer bytes between the cores of a launch
  Job* job_;                              // nullable: a client of one process
  // Deadlines of running and queued executions, soonest first, served by deadline_thread_ (made on first use).
  std::mutex deadline_mu_;
  std::condition_variable deadline_cv_;
  std::multimap<uint64_t, std::weak_ptr<ExecutionControl>> deadlines_;
  std::thread deadline_thread_;
  bool deadline_stop_ = false;
  CoreWorkers core_workers_;  // where manual computations' devices run (a client of more than one core)
  copy::WorkerPool pool_;     // declared last: destroyed first
};

}  // namespace neuronmem::exec
