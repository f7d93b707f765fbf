// Operations: what a transfer does once it reaches the head of its core's queue (byte moves or a file
// read), what it waits for, and the storages it holds until it completes.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "base/event.h"
#include "copy/storage.h"

namespace neuronmem::copy {

class CopyEngine;
struct Queue;

// One byte move: destination and source are each either a storage (offset) or a host pointer.
struct Move {
  Storage* dst = nullptr;  // owned use in Op::uses
  uint64_t dst_offset = 0;
  uint8_t* dst_host = nullptr;
  Storage* src = nullptr;
  uint64_t src_offset = 0;
  const uint8_t* src_host = nullptr;
  uint64_t size = 0;
  bool staged = false;  // src_host points into Op::staging

  // Host bytes into a storage, and a storage's bytes out to host memory.
  static Move ToStorage(Storage* dst, uint64_t offset, const void* src, uint64_t size) {
    Move m;
    m.dst = dst;
    m.dst_offset = offset;
    m.src_host = static_cast<const uint8_t*>(src);
    m.size = size;
    return m;
  }
  static Move ToHost(void* dst, Storage* src, uint64_t offset, uint64_t size) {
    Move m;
    m.src = src;
    m.src_offset = offset;
    m.dst_host = static_cast<uint8_t*>(dst);
    m.size = size;
    return m;
  }

  uint8_t* dst_address() const { return dst ? dst->at(dst_offset) : dst_host; }
  const uint8_t* src_address() const { return src ? src->at(src_offset) : src_host; }
};

struct Op {
  Queue* queue = nullptr;
  std::vector<EventRef> waits;
  std::vector<StorageUse> uses;
  std::vector<Move> moves;
  std::vector<std::unique_ptr<uint8_t[]>> staging;  // host data copied during the call
  // File load: the open file and where the moves[0] bytes start in it.
  int fd = -1;
  uint64_t file_offset = 0;
  EventRef done;
  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (fd >= 0) close(fd);
  }
  // Adds a move of `size` bytes unless it is empty.
  void AddMove(const Move& m) {
    if (m.size) moves.push_back(m);
  }
  // Waits for each event of `events` (new references).
  template <typename Events>
  void WaitFor(const Events& events) {
    for (Event* e : events) waits.emplace_back(Share(e));
  }
};

// One core's DMA queue: operations complete in submission order.
struct Queue {
  CopyEngine* engine = nullptr;  // whose Drain runs it
  int core = 0;
  std::mutex mu;
  std::deque<std::unique_ptr<Op>> ops;
  std::atomic<int64_t> pending{0};  // submitted, not yet completed
  bool draining = false;            // a drain task is scheduled, running, or armed on an event
  bool idle() const { return pending.load(std::memory_order_acquire) == 0; }
};

// The first wait event that failed, or the first that is not ready (nullptr if all succeeded).
inline Event* FirstBlocking(const std::vector<EventRef>& waits, bool* failed) {
  *failed = false;
  for (const EventRef& w : waits) {
    if (!IsReady(w.get())) return w.get();
    if (w.get()->error()) {
      *failed = true;
      return w.get();
    }
  }
  return nullptr;
}

}  // namespace neuronmem::copy
