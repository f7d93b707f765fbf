// Buffers from host data: the single small upload that runs inline, zero-copy aliases, strided gathers,
// staging for ONLY_DURING_CALL, and batches with one event for all.
#include <cinttypes>
#include <cstring>
#include <string>

#include "copy/copy_engine.h"

namespace neuronmem::copy {
namespace {

// Gathers strided host data into a dense staging copy.
void GatherStrided(uint8_t* dst, const uint8_t* src, const int64_t* dims, const int64_t* strides, size_t rank,
                   uint64_t elem, size_t dim = 0) {
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  uint64_t inner = elem;
  for (size_t i = dim + 1; i < rank; ++i) inner *= static_cast<uint64_t>(dims[i]);
  for (int64_t i = 0; i < dims[dim]; ++i) {
    const uint8_t* s = src + i * strides[dim];
    uint8_t* d = dst + static_cast<uint64_t>(i) * inner;
    if (dim + 1 == rank) {
      std::memcpy(d, s, elem);
    } else {
      GatherStrided(d, s, dims, strides, rank, elem, dim + 1);
    }
  }
}

bool IsDense(Span<const int64_t> dims, const int64_t* strides, uint64_t elem) {
  if (!strides) return true;
  // An empty array is dense whatever its strides; excluding it also bounds the running product below by
  // the buffer's byte size (DenseBytes), so it cannot overflow when other dims are huge.
  for (int64_t d : dims) {
    if (d == 0) return true;
  }
  uint64_t expect = elem;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] > 1 && static_cast<uint64_t>(strides[i]) != expect) return false;
    expect *= static_cast<uint64_t>(dims[i]);
  }
  return true;
}

// The bytes strided host data spans from `data` (elem + sum of (dims[d] - 1) * strides[d]): INVALID_ARGUMENT when
// that overflows or runs past the end of the address space, before the gather forms any such pointer. Called
// for non-empty data only (every dim >= 1).
Status CheckStridedExtent(const void* data, Span<const int64_t> dims, const int64_t* strides, uint64_t elem,
                          const std::string& where) {
  uint64_t extent = elem;
  for (size_t d = 0; d < dims.size(); ++d) {
    const auto n = static_cast<uint64_t>(dims[d] - 1), stride = static_cast<uint64_t>(strides[d]);
    uint64_t span = 0;
    if ((n && stride > UINT64_MAX / n) || __builtin_add_overflow(extent, n * stride, &span) ||
        span > static_cast<uint64_t>(INT64_MAX)) {
      return InvalidArgument("%sbyte_strides: dim %zu (%lld elements, %lld bytes apart) takes the data past 2^63 bytes",
                             where.c_str(), d, static_cast<long long>(dims[d]), static_cast<long long>(strides[d]));
    }
    extent = span;
  }
  if (extent > UINTPTR_MAX - reinterpret_cast<uintptr_t>(data))
    return InvalidArgument("%sbyte_strides: the data's %llu bytes run past the end of the address space", where.c_str(),
                           static_cast<unsigned long long>(extent));
  return Ok();
}

bool WantsAlias(HostBufferSemantics s) {
  return s == HostBufferSemantics::kImmutableZeroCopy || s == HostBufferSemantics::kMutableZeroCopy;
}

// A dense copy of n host bytes made during the call. RESOURCE_EXHAUSTED if it cannot be allocated.
Status Stage(uint64_t n, std::unique_ptr<uint8_t[]>* out) {
  out->reset(new (std::nothrow) uint8_t[n]);
  if (!*out) return ResourceExhausted("cannot stage %" PRIu64 " bytes of host data", n);
  return Ok();
}

}  // namespace

Status CopyEngine::FromHost(Span<const FromHostArgs> args, Buffer* const* out, Event** ready, Event** done_with_host) {
  const size_t count = args.size();
  // The decode-metadata fast path: one small dense upload that copies, nothing to wait for, an idle queue.
  // It runs inline and allocates nothing beyond the buffer itself.
  if (count == 1 && args[0].waits.empty() && !args[0].byte_strides && !WantsAlias(args[0].semantics) &&
      !fault::Armed(fault::Site::kTransfer)) {
    const FromHostArgs& a = args[0];
    uint64_t bytes = 0;
    if (!DenseBytes(a.type, a.dims, &bytes) && bytes <= kInlineThreshold && (a.data || !bytes) &&
        queues_[a.memory->core]->idle()) {
      Storage* storage = nullptr;
      NEURONMEM_RETURN_IF_ERROR(NewStorage(registry_, a.memory->memory, bytes, &storage));
      if (bytes) std::memcpy(storage->data, a.data, bytes);
      out[0]->Init(a.memory, a.type, a.dims, bytes, storage);
      out[0]->SetDefinition(ReadyEvent());
      if (ready) *ready = ReadyEvent();
      if (done_with_host) *done_with_host = ReadyEvent();
      return Ok();
    }
  }
  size_t made = 0;
  auto fail = [&](Status s) {
    for (size_t i = 0; i < made; ++i) out[i]->Clear();
    return s;
  };
  auto op = std::make_unique<Op>();
  bool only_during_call = false;
  EventRef done_host;
  for (size_t i = 0; i < count; ++i) {
    const FromHostArgs& a = args[i];
    const std::string where = count > 1 ? "args[" + std::to_string(i) + "]: " : std::string();
    uint64_t bytes = 0;
    if (Status s = DenseBytes(a.type, a.dims, &bytes)) return fail(Annotate(std::move(s), where + "shape"));
    if (bytes && !a.data) {
      return fail(InvalidArgument("%sdata is NULL for a %" PRIu64 "-byte buffer", where.c_str(), bytes));
    }
    if (Status s = CheckWaits(a.waits, where.c_str())) return fail(std::move(s));
    op->WaitFor(a.waits);
    const uint64_t elem = ElementByteSize(a.type);
    const bool dense = IsDense(a.dims, a.byte_strides, elem);
    if (!dense) {
      if (Status s = CheckStridedExtent(a.data, a.dims, a.byte_strides, elem, where)) return fail(std::move(s));
    }
    Storage* storage = nullptr;
    // Zero-copy where the target memory contains the caller's bytes (pinned_host: inside the arena;
    // unpinned_host: any host memory; device: never).
    if (WantsAlias(a.semantics) && dense && a.memory->memory->Contains(a.data, bytes)) {
      if (count == 1) done_host = EventRef(NewEvent(user_events_.get()));
      storage = NewAliasStorage(registry_, a.memory->memory, const_cast<void*>(a.data), done_host);
      out[made++]->Init(a.memory, a.type, a.dims, bytes, storage);
      out[made - 1]->zero_copy_ = bytes != 0;
      out[made - 1]->read_only_ = bytes != 0 && a.semantics == HostBufferSemantics::kImmutableZeroCopy;
      continue;
    }
    if (Status s = NewStorage(registry_, a.memory->memory, bytes, &storage)) return fail(std::move(s));
    out[made++]->Init(a.memory, a.type, a.dims, bytes, storage);
    if (a.semantics == HostBufferSemantics::kImmutableOnlyDuringCall) only_during_call = true;
    if (!bytes) continue;
    Move m;
    m.dst = storage;
    m.size = bytes;
    if (dense) {
      m.src_host = static_cast<const uint8_t*>(a.data);
    } else {
      // Strided host data is gathered into a dense copy during the call.
      std::unique_ptr<uint8_t[]> staged;
      if (Status s = Stage(bytes, &staged)) return fail(std::move(s));
      GatherStrided(staged.get(), static_cast<const uint8_t*>(a.data), a.dims.data(), a.byte_strides, a.dims.size(),
                    elem);
      m.src_host = staged.get();
      m.staged = true;
      op->staging.push_back(std::move(staged));
    }
    op->moves.push_back(m);
    op->uses.push_back(StorageUse::Of(storage));
  }
  if (op->moves.empty()) {
    // Nothing to move (zero-copy or empty): the buffers are defined once the wait events are.
    bool failed = false;
    if (!FirstBlocking(op->waits, &failed) && !failed) {
      for (size_t i = 0; i < count; ++i) out[i]->SetDefinition(ReadyEvent());
      if (ready) *ready = ReadyEvent();
      if (done_with_host) *done_with_host = done_host.get() ? Share(done_host.get()) : ReadyEvent();
      return Ok();
    }
  }
  op->queue = &QueueOf(*out[0]);
  // ONLY_DURING_CALL: the bytes must be read before we return. If the transfer cannot run now (it
  // waits for events, or its queue is busy), stage the host data; a large transfer on an idle queue runs
  // synchronously (in parallel on the pool) instead of paying a staging copy.
  bool sync = false;
  if (only_during_call) {
    bool failed = false;
    if (FirstBlocking(op->waits, &failed) || !op->queue->idle()) {
      for (Move& m : op->moves) {
        if (m.staged) continue;
        std::unique_ptr<uint8_t[]> staged;
        if (Status s = Stage(m.size, &staged)) return fail(std::move(s));
        std::memcpy(staged.get(), m.src_host, m.size);
        m.src_host = staged.get();
        m.staged = true;
        op->staging.push_back(std::move(staged));
      }
    } else {
      sync = true;
    }
  }
  if (sync) {
    Status s = Execute(*op);
    op.reset();
    Event* ev = s ? FailedEvent(std::move(s)) : ReadyEvent();
    for (size_t i = 0; i < count; ++i) out[i]->SetDefinition(ev);
    if (done_with_host) *done_with_host = Share(ev);
    if (ready) *ready = Share(ev);
    Release(ev);
    return Ok();
  }
  Event* ev = nullptr;
  if (Status s = Submit(std::move(op), &ev, /*may_inline=*/true)) return fail(std::move(s));
  for (size_t i = 0; i < count; ++i) out[i]->SetDefinition(ev);
  if (done_with_host) *done_with_host = done_host.get() ? Share(done_host.get()) : Share(ev);
  if (ready) {
    *ready = ev;
  } else {
    Release(ev);
  }
  return Ok();
}

}  // namespace neuronmem::copy
