// A test-and-test-and-set spinlock for critical sections of a few nanoseconds that never block (arena
// bookkeeping). Uncontended it costs one atomic exchange and one store, against two read-modify-writes
// for std::mutex; contended it spins with `pause`, which is right only because holders never sleep.
#pragma once

#include <atomic>

namespace neuronmem::memory {

class SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      while (flag_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace neuronmem::memory
