#include "copy/worker_pool.h"

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <thread>

namespace neuronmem::copy {
namespace {
// Whether this thread is running one of a pool's tasks (their arena's workers are the only threads that
// do): a large copy started there need not enqueue a helper for that same worker.
thread_local bool t_in_task = false;
}  // namespace

// The body of every task the pool enqueues. oneTBB moves the body into a task object and hands that object
// to a worker inside the uninstrumented libtbb, so ThreadSanitizer cannot see that the worker's reads of
// the body follow the submitter's writes. Here every field is an atomic written with release and read with
// acquire: the hand-off is visible through the fields themselves, with no suppression for our code
// (tests/tsan.supp only hides oneTBB's own accesses). Cost: three plain loads.
class WorkerPool::Task {
 public:
  Task(WorkerPool::Fn fn, WorkerPool* pool, void* arg) { Set(fn, pool, arg); }
  Task(const Task& o) { Set(o.fn_.load(kAcq), o.pool_.load(kAcq), o.arg_.load(kAcq)); }
  Task& operator=(const Task&) = delete;
  void operator()() const {
    t_in_task = true;
    WorkerPool* pool = pool_.load(kAcq);
    fn_.load(kAcq)(arg_.load(kAcq));
    t_in_task = false;
    pool->TaskDone();
  }

 private:
  static constexpr std::memory_order kAcq = std::memory_order_acquire;
  void Set(WorkerPool::Fn fn, WorkerPool* pool, void* arg) {
    arg_.store(arg, std::memory_order_release);
    pool_.store(pool, std::memory_order_release);
    fn_.store(fn, std::memory_order_release);
  }
  std::atomic<WorkerPool::Fn> fn_;
  std::atomic<WorkerPool*> pool_;
  std::atomic<void*> arg_;
};

struct WorkerPool::Impl {
  tbb::task_arena arena;
};

WorkerPool::WorkerPool() : impl_(new Impl) {
  impl_->arena.initialize(static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
}

WorkerPool::~WorkerPool() {
  WaitIdle([] { return true; });
  impl_->arena.terminate();
  delete impl_;
}

void WorkerPool::Enqueue(Fn fn, void* arg) {
  active_.fetch_add(1, std::memory_order_acq_rel);
  impl_->arena.enqueue(Task(fn, this, arg));
}

void WorkerPool::Execute(Fn fn, void* arg) {
  // oneTBB hands the functor to another thread when the caller cannot join the arena: as for Task, every
  // field is an atomic, so ThreadSanitizer sees the hand-off and the return (`done`) through them.
  struct Call {
    std::atomic<Fn> fn;
    std::atomic<void*> arg;
    mutable std::atomic<bool> done{false};
    void operator()() const {
      fn.load(std::memory_order_acquire)(arg.load(std::memory_order_acquire));
      done.store(true, std::memory_order_release);
    }
  } call;
  call.arg.store(arg, std::memory_order_release);
  call.fn.store(fn, std::memory_order_release);
  impl_->arena.execute(call);
  (void)call.done.load(std::memory_order_acquire);
}

int WorkerPool::max_concurrency() const { return impl_->arena.max_concurrency(); }

bool WorkerPool::InTask() { return t_in_task; }

void WorkerPool::Notify() {
  std::lock_guard<std::mutex> lock(idle_mu_);
  idle_cv_.notify_all();
}

void WorkerPool::TaskDone() {
  if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) Notify();
}

}  // namespace neuronmem::copy
