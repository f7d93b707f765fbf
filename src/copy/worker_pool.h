// The copy engine's workers: a oneTBB task_arena of its own, the count of tasks not yet finished (so the
// engine can wait for quiet before it goes), and whether the calling thread is one of the workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace neuronmem::copy {

class WorkerPool {
 public:
  using Fn = void (*)(void* arg);
  WorkerPool();
  ~WorkerPool();  // waits for every task, then terminates the arena

  // Runs fn(arg) on a worker. Counted until it returns.
  void Enqueue(Fn fn, void* arg);
  // Runs fn(arg) inside the pool's arena and returns when it has returned: on the calling thread when it can
  // join the arena (oneTBB algorithms fn starts then share the arena's workers), else on a thread of the
  // arena while the caller waits. fn must not block on work that needs the caller. Not counted (the caller
  // is waiting for it).
  void Execute(Fn fn, void* arg);
  // The arena's worker slots (one is reserved for a master thread).
  int max_concurrency() const;
  // Whether this thread is running one of the pool's tasks.
  static bool InTask();
  // Blocks until no task runs and `quiet()` holds; `quiet` is re-checked after each task and each Notify.
  template <typename Quiet>
  void WaitIdle(Quiet quiet) {
    std::unique_lock<std::mutex> lock(idle_mu_);
    idle_cv_.wait(lock, [&] { return active_.load(std::memory_order_acquire) == 0 && quiet(); });
  }
  // Wakes WaitIdle to re-check its condition.
  void Notify();

 private:
  struct Impl;
  class Task;  // worker_pool.cc: the body oneTBB runs; calls TaskDone when fn returns
  void TaskDone();
  Impl* impl_;
  std::atomic<int64_t> active_{0};
  std::mutex idle_mu_;
  std::condition_variable idle_cv_;
};

}  // namespace neuronmem::copy
