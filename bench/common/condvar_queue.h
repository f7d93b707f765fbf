// The baseline users hand-roll to move bytes on another thread: one worker, a mutex and a condition
// variable; the caller hands over a list of copies and waits until the worker has done them all.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace neuronmem::bench {

class CondvarCopyQueue {
 public:
  struct Copy {
    void* dst;
    const void* src;
    size_t n;
  };
  CondvarCopyQueue() : worker_([this] { Run(); }) {}
  ~CondvarCopyQueue() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  CondvarCopyQueue(const CondvarCopyQueue&) = delete;
  CondvarCopyQueue& operator=(const CondvarCopyQueue&) = delete;

  // Hands `copies` (borrowed until the call returns) to the worker and waits until they are done.
  void CopyAndWait(const Copy* copies, size_t count) {
    std::unique_lock<std::mutex> l(mu_);
    copies_ = copies;
    count_ = count;
    has_work_ = true;
    done_ = false;
    cv_.notify_all();
    done_cv_.wait(l, [this] { return done_; });
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return has_work_ || stop_; });
      if (stop_) return;
      for (size_t i = 0; i < count_; ++i) std::memcpy(copies_[i].dst, copies_[i].src, copies_[i].n);
      has_work_ = false;
      done_ = true;
      done_cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const Copy* copies_ = nullptr;
  size_t count_ = 0;
  bool has_work_ = false, done_ = false, stop_ = false;
  std::thread worker_;
};

}  // namespace neuronmem::bench
