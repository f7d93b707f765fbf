#include "copy/parallel_copy.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "copy/fast_copy.h"

namespace neuronmem::copy {
namespace {

// The shared state of one large copy. Chunks are claimed from an atomic counter, so the running thread
// keeps copying when no worker is awake yet (a wake-up costs 27-80 us here) and a late helper finds
// nothing left; the running thread waits only for chunks already claimed. All hand-offs are our own
// atomics (no TBB fork/join state on anyone's stack), so ThreadSanitizer sees every ordering; helpers
// hold a reference to the state and may outlive the call.
struct SharedCopy final : HelpWork {
  static constexpr uint64_t kChunk = 2u << 20;
  uint8_t* dst;
  const uint8_t* src;
  uint64_t n;
  uint64_t chunks;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::atomic<int> refs;

  SharedCopy(uint8_t* d, const uint8_t* s, uint64_t size, int references)
      : dst(d), src(s), n(size), chunks((size + kChunk - 1) / kChunk), refs(references) {}

  void Help() override { Run(); }
  void Ref() override { refs.fetch_add(1, std::memory_order_relaxed); }
  void Unref() override {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  void Run() {
    for (;;) {
      const uint64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return;
      const uint64_t off = c * kChunk;
      StreamingCopy(dst + off, src + off, std::min(kChunk, n - off));
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

}  // namespace

void ParallelCopy(WorkerPool& pool, uint8_t* dst, const uint8_t* src, uint64_t n, Event* done) {
  if (n < 4 * SharedCopy::kChunk) {
    FastCopy(dst, src, n);
    return;
  }
  // The pool's worker slots (one is reserved for a master thread), minus this thread if it is one of
  // them: on a 2-CPU machine a copy run by the queue's worker enqueues no helper (it could only start
  // after this copy) and shares the work with a waiting thread instead.
  const int helpers = std::max(0, pool.max_concurrency() - 1 - (WorkerPool::InTask() ? 1 : 0));
  auto* shared = new SharedCopy(dst, src, n, /*refs=*/helpers + 1);
  for (int i = 0; i < helpers; ++i) {
    pool.Enqueue(
        [](void* p) {
          static_cast<SharedCopy*>(p)->Run();
          static_cast<SharedCopy*>(p)->Unref();
        },
        shared);
  }
  if (done) OfferHelp(done, shared);  // a thread waiting for this transfer copies chunks too
  shared->Run();
  // Every chunk is claimed; wait for the ones helpers are still copying (at most one each, ~2 MiB).
  for (unsigned spins = 0; shared->done.load(std::memory_order_acquire) != shared->chunks; ++spins) {
    if (spins < 64) {
      __builtin_ia32_pause();
    } else {
      std::this_thread::yield();
    }
  }
  if (done) WithdrawHelp(done, shared);
  shared->Unref();
}

}  // namespace neuronmem::copy
