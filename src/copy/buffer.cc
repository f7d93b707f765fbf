#include "copy/buffer.h"

#include <cinttypes>

namespace neuronmem::copy {

Status DenseBytes(ElementType type, Span<const int64_t> dims, uint64_t* bytes) {
  uint64_t total = ElementTypeToC(type) >= 0 ? ElementByteSize(type) : 0;
  if (!total) return InvalidArgument("%d is not a neuronmem_element_type_t", ElementTypeToC(type));
  if (dims.size() > NEURONMEM_MAX_RANK) {
    return InvalidArgument("rank %zu exceeds NEURONMEM_MAX_RANK (%d)", dims.size(), NEURONMEM_MAX_RANK);
  }
  if (!dims.empty() && !dims.data()) return InvalidArgument("dims is NULL but num_dims is %zu", dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) return InvalidArgument("dims[%zu] is %" PRId64 ": dimensions must be >= 0", i, dims[i]);
    if (__builtin_mul_overflow(total, static_cast<uint64_t>(dims[i]), &total) || total > (1ull << 48)) {
      return InvalidArgument("the buffer's byte size overflows (dims[%zu] = %" PRId64 ")", i, dims[i]);
    }
  }
  *bytes = total;
  return Ok();
}

void Buffer::Init(const MemoryView* memory, ElementType type, Span<const int64_t> dims, uint64_t bytes,
                  Storage* storage) {
  memory_ = memory;
  type_ = type;
  rank_ = dims.size();
  for (size_t i = 0; i < rank_; ++i) dims_[i] = dims[i];
  bytes_ = bytes;
  storage_ = storage;
  storage->registry->buffers.fetch_add(1, std::memory_order_relaxed);
}

void Buffer::Clear() {
  {
    std::lock_guard<std::mutex> lock(chunk_mu_);
    chunk_events_.clear();
  }
  if (!storage_) return;
  Delete();
  storage_->registry->buffers.fetch_sub(1, std::memory_order_relaxed);
  ReleaseObject(storage_);
  storage_ = nullptr;
}

void Buffer::Delete() {
  if (!deleted_.exchange(true)) {
    // Transfers already queued that touch it fail (their own use keeps the memory until they finish).
    storage_->deleted.store(true, std::memory_order_release);
    ReleaseUser(storage_);
  }
}

bool Buffer::GiveUpStorage() {
  if (deleted_.exchange(true)) return false;
  ReleaseUser(storage_);
  return true;
}

Event* Buffer::ReadyEvent() {
  // The immortal ready event (an inline upload's) is never replaced by a chunk and needs no reference.
  if (Event* d = definition(); d && d->immortal()) return d;
  std::lock_guard<std::mutex> lock(definition_mu_);
  return Share(definition());
}

void Buffer::SetDefinition(Event* e) {
  if (e->immortal()) {  // the ready event needs no reference: skip the lock and the list
    definition_.store(e, std::memory_order_release);
    return;
  }
  std::lock_guard<std::mutex> lock(definition_mu_);
  Retain(e);
  definitions_.emplace_back(e);
  definition_.store(e, std::memory_order_release);
}

Status Buffer::Use(StorageUse* out) {
  Storage* s = storage_;
  if (deleted_.load(std::memory_order_acquire) || !AcquireUser(s)) {
    return FailedPrecondition("the buffer was deleted (neuronmem_buffer_delete); its memory is gone");
  }
  RetainObject(s);
  out->s = s;
  return Ok();
}

Status Buffer::CheckRange(uint64_t offset, uint64_t size, const char* what) const {
  uint64_t end;
  if (__builtin_add_overflow(offset, size, &end) || end > bytes_) {
    return OutOfRange("%s of %" PRIu64 " bytes at offset %" PRIu64 " is past the end of the %" PRIu64 "-byte buffer",
                      what, size, offset, bytes_);
  }
  return Ok();
}

Status Buffer::CheckWritable(uint64_t offset, uint64_t size, const char* what) const {
  if (read_only_) {
    return FailedPrecondition(
        "%s into a buffer that aliases caller memory given as IMMUTABLE_ZERO_COPY: only "
        "MUTABLE_ZERO_COPY memory may be written",
        what);
  }
  return CheckRange(offset, size, what);
}

}  // namespace neuronmem::copy
