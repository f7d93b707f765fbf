// Transfers on existing buffers: allocate, copy to another memory, read, write, chunked upload, file load.
// Each builds one operation on its buffer's queue (BufferOp) and submits it.
#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "copy/copy_engine.h"
#include "copy/parallel_copy.h"

namespace neuronmem::copy {

Status CopyEngine::Allocate(const MemoryView& memory, ElementType type, Span<const int64_t> dims, Buffer* out) {
  uint64_t bytes = 0;
  NEURONMEM_RETURN_IF_ERROR(DenseBytes(type, dims, &bytes));
  Storage* storage = nullptr;
  NEURONMEM_RETURN_IF_ERROR(NewStorage(registry_, memory.memory, bytes, &storage));
  out->Init(&memory, type, dims, bytes, storage);
  out->SetDefinition(ReadyEvent());
  return Ok();
}

void CopyEngine::PeerCopy(void* dst, const void* src, uint64_t n) {
  ParallelCopy(pool_, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, nullptr);
}

void CopyEngine::RecordUse(Buffer& buffer, Event* e) {
  if (buffer.deleted() || buffer.read_only() || !buffer.storage_) return;
  AddUsage(buffer.storage_, e);
}

Status CopyEngine::UseBuffer(Buffer& buffer, StorageUse* use, EventRef* definition) {
  NEURONMEM_RETURN_IF_ERROR(buffer.Use(use));
  *definition = EventRef(buffer.ReadyEvent());
  return Ok();
}

Status CopyEngine::AllocateDefinedBy(const MemoryView& memory, ElementType type, Span<const int64_t> dims,
                                     Event* definition, Buffer* out, StorageUse* use) {
  uint64_t bytes = 0;
  NEURONMEM_RETURN_IF_ERROR(DenseBytes(type, dims, &bytes));
  Storage* storage = nullptr;
  NEURONMEM_RETURN_IF_ERROR(NewStorage(registry_, memory.memory, bytes, &storage));
  out->Init(&memory, type, dims, bytes, storage);
  out->SetDefinition(definition);
  *use = StorageUse::Of(storage);
  return Ok();
}

Status CopyEngine::Donate(Buffer& donor, Event* definition, Buffer* out, StorageUse* use) {
  if (donor.read_only()) {
    return FailedPrecondition(
        "it aliases caller memory given as IMMUTABLE_ZERO_COPY, which the library may not write: upload it with "
        "another semantics to donate it");
  }
  StorageUse taken;
  NEURONMEM_RETURN_IF_ERROR(donor.Use(&taken));
  Storage* s = taken.s;
  if (!donor.GiveUpStorage()) {
    return FailedPrecondition("the buffer was deleted (neuronmem_buffer_delete); its memory is gone");
  }
  // `taken` becomes out's own reference (object and memory); `use` is the writer's.
  out->Init(&donor.memory(), donor.element_type(), donor.dims(), donor.bytes(), s);
  taken.s = nullptr;
  out->SetDefinition(definition);
  *use = StorageUse::Of(s);
  return Ok();
}

Status CopyEngine::Bitcast(Buffer& src, ElementType type, Span<const int64_t> dims, Buffer* out) {
  uint64_t bytes = 0;
  NEURONMEM_RETURN_IF_ERROR(DenseBytes(type, dims, &bytes));
  if (bytes != src.bytes()) {
    return InvalidArgument("the new shape takes %" PRIu64 " bytes, the buffer holds %" PRIu64, bytes, src.bytes());
  }
  StorageUse taken;
  NEURONMEM_RETURN_IF_ERROR(src.Use(&taken));
  if (!src.GiveUpStorage()) {
    return FailedPrecondition("the buffer was deleted (neuronmem_buffer_delete); its memory is gone");
  }
  out->Init(&src.memory(), type, dims, bytes, taken.s);  // `taken` becomes out's own reference
  taken.s = nullptr;
  out->zero_copy_ = src.zero_copy_;
  out->read_only_ = src.read_only_;
  out->SetDefinition(src.definition());
  return Ok();
}

Status CopyEngine::CopyToMemory(Buffer& src, const MemoryView& memory, EventList waits, Buffer* out, Event** ready) {
  // Runs on src's queue after src's content (even a failed one: the failure propagates).
  std::unique_ptr<Op> op;
  NEURONMEM_RETURN_IF_ERROR(BufferOp(src, waits, /*after_definition=*/false, &op));
  op->waits.emplace_back(Share(src.definition()));
  Storage* dst = nullptr;
  NEURONMEM_RETURN_IF_ERROR(NewStorage(registry_, memory.memory, src.bytes(), &dst));
  out->Init(&memory, src.element_type(), src.dims(), src.bytes(), dst);
  if (src.bytes()) {
    Move m;
    m.dst = dst;
    m.src = op->uses[0].s;
    m.size = src.bytes();
    op->moves.push_back(m);
    op->uses.push_back(StorageUse::Of(dst));
  }
  Event* ev = nullptr;
  if (Status s = Submit(std::move(op), &ev, /*may_inline=*/true)) {
    out->Clear();
    return s;
  }
  out->SetDefinition(ev);
  if (ready) {
    *ready = ev;
  } else {
    Release(ev);
  }
  return Ok();
}

Status CopyEngine::Read(Buffer& buffer, uint64_t offset, void* dst, uint64_t size, EventList waits, Event** ready,
                        bool caller_waits) {
  NEURONMEM_RETURN_IF_ERROR(buffer.CheckRange(offset, size, "read"));
  if (size && !dst) return InvalidArgument("dst is NULL");
  std::unique_ptr<Op> op;
  NEURONMEM_RETURN_IF_ERROR(BufferOp(buffer, waits, /*after_definition=*/true, &op));
  op->AddMove(Move::ToHost(dst, op->uses[0].s, offset, size));
  return Submit(std::move(op), ready, /*may_inline=*/true, caller_waits);
}

Status CopyEngine::Write(Buffer& buffer, uint64_t offset, const void* src, uint64_t size, EventList waits,
                         Event** ready, bool caller_waits) {
  NEURONMEM_RETURN_IF_ERROR(buffer.CheckWritable(offset, size, "write"));
  if (size && !src) return InvalidArgument("src is NULL");
  Event* def = buffer.definition();
  // The decode hot path: a small write into a defined buffer on an idle queue, nothing to wait for. No
  // operation record, no event: 20-30 ns for a block-table row.
  if (waits.empty() && size <= kInlineThreshold && IsReady(def) && !def->error() && QueueOf(buffer).idle()) {
    StorageUse use;
    NEURONMEM_RETURN_IF_ERROR(buffer.Use(&use));
    if (TakeFault()) {
      *ready = FailedEvent(Internal("injected fault (test hook): the transfer did not run"));
      return Ok();
    }
    if (size) std::memcpy(use.s->at(offset), src, size);  // src may be NULL for 0 bytes
    *ready = ReadyEvent();
    return Ok();
  }
  std::unique_ptr<Op> op;
  NEURONMEM_RETURN_IF_ERROR(BufferOp(buffer, waits, /*after_definition=*/true, &op));
  op->AddMove(Move::ToStorage(op->uses[0].s, offset, src, size));
  return Submit(std::move(op), ready, /*may_inline=*/true, caller_waits);
}

Status CopyEngine::UploadChunk(Buffer& buffer, uint64_t offset, const void* data, uint64_t size, bool is_last,
                               EventList waits, Event** done) {
  NEURONMEM_RETURN_IF_ERROR(buffer.CheckWritable(offset, size, "chunk"));
  if (size && !data) return InvalidArgument("data is NULL");
  if (is_last ? buffer.chunks_closed_.exchange(true) : buffer.chunks_closed_.load()) {
    return FailedPrecondition("the buffer's chunked upload already received its last chunk");
  }
  // Chunks define the content: they wait only for the caller's events, and the last one also for the
  // earlier chunks not known to have succeeded. They run in order on the buffer's queue, so those are
  // complete by then: the last chunk's event means "every chunk landed", and it carries the root cause
  // (DependencyFailed) if one did not.
  std::vector<EventRef> earlier;
  if (is_last) {
    std::lock_guard<std::mutex> lock(buffer.chunk_mu_);
    earlier.swap(buffer.chunk_events_);
  }
  std::unique_ptr<Op> op;
  NEURONMEM_RETURN_IF_ERROR(BufferOp(buffer, waits, /*after_definition=*/false, &op));
  for (EventRef& e : earlier) op->waits.push_back(std::move(e));
  op->AddMove(Move::ToStorage(op->uses[0].s, offset, data, size));
  Event* ev = nullptr;
  NEURONMEM_RETURN_IF_ERROR(Submit(std::move(op), &ev, /*may_inline=*/true));
  if (is_last) {
    buffer.SetDefinition(ev);
  } else if (!IsReady(ev) || ev->error()) {
    std::lock_guard<std::mutex> lock(buffer.chunk_mu_);
    auto& list = buffer.chunk_events_;
    // Drops the chunks that have succeeded since, so a long stream keeps only what may still fail.
    list.erase(std::remove_if(list.begin(), list.end(),
                              [](const EventRef& e) { return IsReady(e.get()) && !e.get()->error(); }),
               list.end());
    list.emplace_back(Share(ev));
  }
  *done = ev;
  return Ok();
}

Status CopyEngine::LoadFile(Buffer& buffer, const char* path, uint64_t file_offset, uint64_t size,
                            uint64_t buffer_offset, EventList waits, Event** ready) {
  NEURONMEM_RETURN_IF_ERROR(buffer.CheckWritable(buffer_offset, size, "file load"));
  int fd = -1;
  NEURONMEM_RETURN_IF_ERROR(OpenFileRange(path, file_offset, size, &fd));
  std::unique_ptr<Op> op;
  if (Status s = BufferOp(buffer, waits, /*after_definition=*/true, &op)) {
    close(fd);
    return s;
  }
  op->fd = fd;
  op->file_offset = file_offset;
  op->moves.push_back(Move::ToStorage(op->uses[0].s, buffer_offset, nullptr, size));  // even for 0 bytes
  return Submit(std::move(op), ready, /*may_inline=*/false);
}

}  // namespace neuronmem::copy
