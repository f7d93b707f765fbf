#include "exec/core_workers.h"

#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "base/poll.h"

namespace neuronmem::exec {

// One computation's devices that run elsewhere than on the calling thread; the caller waits until `left` is 0.
struct CoreWorkers::Job {
  interp::Program::RunOptions::Parallel::Task task = nullptr;
  void* arg = nullptr;
  std::vector<char*> scratch;  // per device
  std::mutex mu;
  std::condition_variable cv;
  size_t left = 0;

  void Device(size_t k) { task(arg, k, scratch[k], Status()); }
  void Done() {
    std::lock_guard<std::mutex> lock(mu);
    if (--left == 0) cv.notify_all();
  }
};

struct CoreWorkers::Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::thread thread;
  Job* job = nullptr;  // the device it runs (set by Claim, cleared by the worker once it returned)
  size_t device = 0;
  std::atomic<bool> wake{false};
  bool stop = false;
};

CoreWorkers::CoreWorkers(core::Client& client) : client_(client) {
  for (size_t c = 0; c < client.devices().size(); ++c) workers_.push_back(std::make_unique<Worker>());
}

CoreWorkers::~CoreWorkers() {
  for (auto& w : workers_) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->stop = true;
    }
    w->cv.notify_one();
    if (w->thread.joinable()) w->thread.join();
  }
}

bool CoreWorkers::Claim(uint32_t c, Job* job, size_t k) {
  Worker& w = *workers_[c];
  {
    std::lock_guard<std::mutex> lock(w.mu);
    if (w.job || w.stop) return false;
    if (!w.thread.joinable()) {
      try {
        w.thread = std::thread([this, &w] { Loop(&w); });
      } catch (const std::exception&) {
        return false;  // the caller starts a thread of its own for the device (or fails it)
      }
    }
    w.job = job;
    w.device = k;
    w.wake.store(true, std::memory_order_release);
  }
  w.cv.notify_one();
  return true;
}

void CoreWorkers::Loop(Worker* w) {
  // After a device, the worker polls for the next one for a moment before it sleeps: a sleeping thread takes
  // 10-80 us to wake on this machine (docs/performance.md, "Multi-core launches").
  constexpr std::chrono::microseconds kPoll(50);
  std::unique_lock<std::mutex> lock(w->mu);
  for (;;) {
    if (!w->wake.load(std::memory_order_relaxed) && !w->stop) {
      lock.unlock();
      PollFor(kPoll, [w] { return w->wake.load(std::memory_order_acquire); });
      lock.lock();
    }
    w->cv.wait(lock, [w] { return w->wake.load(std::memory_order_relaxed) || w->stop; });
    if (w->stop) return;
    w->wake.store(false, std::memory_order_relaxed);
    Job* job = w->job;
    const size_t k = w->device;
    lock.unlock();
    job->Device(k);
    lock.lock();
    w->job = nullptr;  // free again before the caller learns the device ended
    lock.unlock();
    job->Done();
    lock.lock();
  }
}

namespace {

void Max(std::atomic<uint64_t>& at, uint64_t v) {
  uint64_t old = at.load(std::memory_order_relaxed);
  while (old < v && !at.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

void CoreWorkers::Run(void* arg, size_t n, size_t bytes, interp::Program::RunOptions::Parallel::Task task,
                      void* task_arg) {
  const Call& call = *static_cast<const Call*>(arg);
  CoreWorkers& self = *call.workers;
  const size_t cores = self.workers_.size();
  Job job;
  job.task = task;
  job.arg = task_arg;
  job.scratch.assign(n, nullptr);
  // Each device's scratch from its core's device memory; a device without it fails, the others run (and fail
  // in their first collective with it, naming it).
  std::vector<Status> refused(n);
  auto core_of = [&](size_t k) { return static_cast<uint32_t>((call.core + k) % cores); };
  auto memory = [&](size_t k) { return self.client_.devices()[core_of(k)]->default_memory()->view().memory; };
  for (size_t k = 0; k < n; ++k) {
    void* p = nullptr;
    if (Status s = memory(k)->Allocate(bytes, 64, &p)) {
      refused[k] = ResourceExhausted("device %zu (core %u): no memory for its %zu bytes of slices and frames: %s", k,
                                     core_of(k), bytes, s->message.c_str());
      continue;
    }
    job.scratch[k] = static_cast<char*>(p);
  }
  // Devices 1.. on their cores' workers or, beyond the cores or when a core's worker is busy, on threads of their
  // own; device 0 on the calling thread.
  std::vector<std::thread> threads;
  threads.reserve(n > cores ? n - cores : 0);
  uint64_t on_cores = n ? 1 : 0, on_threads = 0;
  for (size_t k = 1; k < n; ++k) {
    if (refused[k]) {
      task(task_arg, k, nullptr, std::move(refused[k]));
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(job.mu);
      ++job.left;
    }
    if (k < cores && self.Claim(core_of(k), &job, k)) {
      ++on_cores;
      continue;
    }
    try {
      threads.emplace_back([&job, k] {
        job.Device(k);
        job.Done();
      });
      ++on_threads;
    } catch (const std::exception& e) {
      task(task_arg, k, nullptr,
           ResourceExhausted("device %zu: cannot start a thread for it (the client's %zu cores are taken): %s", k,
                             cores, e.what()));
      job.Done();
    }
  }
  if (n) {
    if (refused[0])
      task(task_arg, 0, nullptr, std::move(refused[0]));
    else
      job.Device(0);
  }
  {
    std::unique_lock<std::mutex> lock(job.mu);
    job.cv.wait(lock, [&] { return job.left == 0; });
  }
  for (std::thread& t : threads) t.join();
  for (size_t k = 0; k < n; ++k)
    if (job.scratch[k]) memory(k)->Free(job.scratch[k], bytes).IgnoreError();  // Allocate's own: cannot fail
  if (call.stats) {
    Max(call.stats->manual_cores, on_cores);
    Max(call.stats->manual_threads, on_threads);
  }
}

}  // namespace neuronmem::exec
