// A buffer: a dense array of one element type in one memory, and the event that defines its content.
// The copy engine fills a Buffer the caller provides (so the C handle can embed one); everything else
// reads it through the accessors. Thread-safe.
#pragma once

#include <neuronmem/buffer.h>  // NEURONMEM_MAX_RANK

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "base/element_type.h"
#include "base/event.h"
#include "base/span.h"
#include "base/status.h"
#include "copy/memory_view.h"
#include "copy/storage.h"

namespace neuronmem::copy {

class CopyEngine;

// Validates dims (rank, each >= 0) and computes the dense byte size of `type` with overflow checks.
// INVALID_ARGUMENT for an element type buffers cannot hold, a bad rank or dim, or a size that overflows.
Status DenseBytes(ElementType type, Span<const int64_t> dims, uint64_t* bytes);

class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  // Deletes (if not yet) and drops the storage.
  ~Buffer() { Clear(); }

  const MemoryView& memory() const { return *memory_; }
  ElementType element_type() const { return type_; }
  Span<const int64_t> dims() const { return {dims_, rank_}; }
  uint64_t bytes() const { return bytes_; }
  bool zero_copy() const { return zero_copy_; }
  // Whether the buffer aliases caller memory given as IMMUTABLE_ZERO_COPY: no transfer may write into it.
  bool read_only() const { return read_only_; }
  bool deleted() const { return deleted_.load(std::memory_order_acquire); }
  // A new reference to the event that defines the content (upload, copy, last chunk).
  Event* ReadyEvent();
  // Marks the buffer deleted; its memory goes once pending transfers that touch it finish. Idempotent.
  void Delete();

 private:
  friend class CopyEngine;
  void Init(const MemoryView* memory, ElementType type, Span<const int64_t> dims, uint64_t bytes, Storage* storage);
  void Clear();
  Event* definition() const { return definition_.load(std::memory_order_acquire); }
  // Installs the event that defines the content; every one ever installed is kept until the buffer goes.
  void SetDefinition(Event* e);
  // Marks the buffer deleted without marking its storage deleted: its bytes went to another buffer
  // (donation), so transfers already queued on them still run. False if it was already deleted.
  bool GiveUpStorage();
  // Takes a use of the storage; FAILED_PRECONDITION if the buffer was deleted.
  Status Use(StorageUse* out);
  // OUT_OF_RANGE unless [offset, offset+size) lies in the buffer.
  Status CheckRange(uint64_t offset, uint64_t size, const char* what) const;
  // CheckRange, and FAILED_PRECONDITION if the buffer is read_only().
  Status CheckWritable(uint64_t offset, uint64_t size, const char* what) const;

  const MemoryView* memory_ = nullptr;
  ElementType type_ = ElementType::kInvalid;
  int64_t dims_[NEURONMEM_MAX_RANK] = {};
  size_t rank_ = 0;
  uint64_t bytes_ = 0;
  bool zero_copy_ = false;
  bool read_only_ = false;
  Storage* storage_ = nullptr;  // object reference held until Clear
  std::atomic<bool> deleted_{false};
  // The event that defines the content; replaced once by the last chunk of a chunked upload. Every event
  // ever installed is kept in definitions_ until Clear, so a racing reader never sees a freed one.
  std::atomic<Event*> definition_{nullptr};
  std::mutex definition_mu_;
  std::vector<EventRef> definitions_;
  std::atomic<bool> chunks_closed_{false};
  // The chunks of a chunked upload not known to have succeeded (pending or failed): the last chunk waits
  // for them, so that its event (the buffer's content) fails with the root cause if an earlier one did.
  std::mutex chunk_mu_;
  std::vector<EventRef> chunk_events_;
};

}  // namespace neuronmem::copy
