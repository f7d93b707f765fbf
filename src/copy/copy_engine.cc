// The copy engine: storages (the bytes behind buffers), operations, per-core queues, the task_arena that
// drains them, and io_uring for file loads. See copy_engine.h for the paths and docs/async.md for why.
#include "copy/copy_engine.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <oneapi/tbb/task_arena.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <string>
#include <thread>

#include "copy/fast_copy.h"

namespace neuronmem::copy {

// ---- Registry and storage ---------------------------------------------------------------------------

// Every storage whose memory is still held, so the engine can orphan them when the client goes away.
struct Registry {
  std::mutex mu;
  Storage* head = nullptr;
  size_t count = 0;
  bool closed = false;  // the client is gone: releasing memory must not touch its arenas
};

// The bytes of a buffer. Two counts: `refs` keeps the object alive (buffer handle, pending operations);
// `users` keeps the memory alive (the buffer's content reference plus pending operations). Memory is
// released when users reaches zero and is never re-acquired after that.
struct Storage {
  enum class Kind { kDevice, kPinned, kUnpinned, kAlias };
  std::atomic<int32_t> refs{1};
  std::atomic<int32_t> users{1};
  std::atomic<bool> deleted{false};
  Kind kind = Kind::kDevice;
  neuronmem_memory_t* memory = nullptr;
  uint8_t* data = nullptr;
  uint64_t bytes = 0;
  uint64_t device_offset = 0;
  EventRef done_with_host;  // zero-copy: completed when the memory is released
  std::shared_ptr<Registry> registry;
  Storage* prev = nullptr;
  Storage* next = nullptr;
};

namespace {

void ReleaseMemory(Storage* s) {
  Registry& reg = *s->registry;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    if (s->prev)
      s->prev->next = s->next;
    else if (reg.head == s)
      reg.head = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = nullptr;
    --reg.count;
    if (!reg.closed && s->bytes) {
      switch (s->kind) {
        case Storage::Kind::kDevice: s->memory->device_arena->Free(s->device_offset); break;
        case Storage::Kind::kPinned: s->memory->pinned_arena->Free(s->data); break;
        case Storage::Kind::kUnpinned: s->memory->unpinned->Free(s->data, s->bytes); break;
        case Storage::Kind::kAlias: break;
      }
    }
    s->data = nullptr;
  }
  if (s->done_with_host.get()) Complete(s->done_with_host.get(), Ok());
}

void RetainObject(Storage* s) { s->refs.fetch_add(1, std::memory_order_relaxed); }
void ReleaseObject(Storage* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
}

// Adds a user of the memory unless it is already released.
bool AcquireUser(Storage* s) {
  int32_t u = s->users.load(std::memory_order_relaxed);
  do {
    if (u == 0) return false;
  } while (!s->users.compare_exchange_weak(u, u + 1, std::memory_order_acquire, std::memory_order_relaxed));
  return true;
}
void ReleaseUser(Storage* s) {
  if (s->users.fetch_sub(1, std::memory_order_acq_rel) == 1) ReleaseMemory(s);
}

// A storage pinned for the duration of an operation: object and memory.
struct StorageUse {
  Storage* s = nullptr;
  StorageUse() = default;
  StorageUse(const StorageUse&) = delete;
  StorageUse& operator=(const StorageUse&) = delete;
  StorageUse(StorageUse&& o) noexcept : s(o.s) { o.s = nullptr; }
  ~StorageUse() {
    if (s) {
      ReleaseUser(s);
      ReleaseObject(s);
    }
  }
};

// Takes a use of the buffer's storage; FAILED_PRECONDITION if the buffer was deleted.
Status Use(neuronmem_buffer_t* b, StorageUse* out) {
  Storage* s = b->storage;
  if (b->deleted.load(std::memory_order_acquire) || !AcquireUser(s)) {
    return FailedPrecondition("the buffer was deleted (neuronmem_buffer_delete); its memory is gone");
  }
  RetainObject(s);
  out->s = s;
  return Ok();
}

Event* DefinitionOf(const neuronmem_buffer_t* b) { return b->definition.load(std::memory_order_acquire); }

void SetDefinition(neuronmem_buffer_t* b, Event* e) {
  if (e->immortal) {  // the ready event needs no reference: skip the lock and the list
    b->definition.store(e, std::memory_order_release);
    return;
  }
  std::lock_guard<std::mutex> lock(b->definition_mu);
  Retain(e);
  b->definitions.emplace_back(e);
  b->definition.store(e, std::memory_order_release);
}

}  // namespace

// ---- Operations and queues --------------------------------------------------------------------------

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
};

struct Op {
  Queue* queue = nullptr;
  std::vector<EventRef> waits;
  std::vector<StorageUse> uses;
  std::vector<Move> moves;
  std::vector<std::unique_ptr<uint8_t[]>> staging;  // host data copied during the call
  // File load.
  int fd = -1;
  uint64_t file_offset = 0;
  EventRef done;
  ~Op() {
    if (fd >= 0) close(fd);
  }
};

struct Queue {
  int core = 0;
  std::mutex mu;
  std::deque<std::unique_ptr<Op>> ops;
  std::atomic<int64_t> pending{0};  // submitted, not yet completed
  bool draining = false;            // a drain task is scheduled, running, or armed on an event
};

struct CopyEngine::Impl {
  tbb::task_arena arena;
  std::mutex ring_mu;
  io_uring ring{};
  bool have_ring = false;
};

namespace {

uint8_t* Address(Storage* s, uint64_t offset) { return s->data + offset; }

// The first wait event that failed, or the first that is not ready (nullptr if all succeeded).
Event* FirstBlocking(const std::vector<EventRef>& waits, bool* failed) {
  *failed = false;
  for (const EventRef& w : waits) {
    if (!IsReady(w.get())) return w.get();
    if (w.get()->error) {
      *failed = true;
      return w.get();
    }
  }
  return nullptr;
}

// A large copy shared between the thread running the transfer, the arena's workers and threads waiting on
// the transfer's event (HelpWork). Chunks are claimed from an atomic counter, so the running thread keeps
// copying when no worker is awake yet (a wake-up costs 27-80 us here) and a late helper finds nothing
// left; the running thread waits only for chunks already claimed.
// All hand-offs are our own atomics (no TBB fork/join state on anyone's stack), so ThreadSanitizer sees
// every ordering; helpers hold a reference to the state and may outlive the call.
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

// ---- Element types ----------------------------------------------------------------------------------

uint64_t ElementSize(neuronmem_element_type_t type) {
  switch (type) {
    case NEURONMEM_ELEMENT_TYPE_PRED:
    case NEURONMEM_ELEMENT_TYPE_S8:
    case NEURONMEM_ELEMENT_TYPE_U8: return 1;
    case NEURONMEM_ELEMENT_TYPE_S16:
    case NEURONMEM_ELEMENT_TYPE_U16:
    case NEURONMEM_ELEMENT_TYPE_F16:
    case NEURONMEM_ELEMENT_TYPE_BF16: return 2;
    case NEURONMEM_ELEMENT_TYPE_S32:
    case NEURONMEM_ELEMENT_TYPE_U32:
    case NEURONMEM_ELEMENT_TYPE_F32: return 4;
    case NEURONMEM_ELEMENT_TYPE_S64:
    case NEURONMEM_ELEMENT_TYPE_U64:
    case NEURONMEM_ELEMENT_TYPE_F64: return 8;
    default: return 0;
  }
}

Status DenseBytes(neuronmem_element_type_t type, const int64_t* dims, size_t rank, uint64_t* bytes) {
  uint64_t total = ElementSize(type);
  if (!total) return InvalidArgument("%d is not a neuronmem_element_type_t", static_cast<int>(type));
  if (rank > NEURONMEM_MAX_RANK) {
    return InvalidArgument("rank %zu exceeds NEURONMEM_MAX_RANK (%d)", rank, NEURONMEM_MAX_RANK);
  }
  if (rank && !dims) return InvalidArgument("dims is NULL but num_dims is %zu", rank);
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return InvalidArgument("dims[%zu] is %" PRId64 ": dimensions must be >= 0", i, dims[i]);
    if (__builtin_mul_overflow(total, static_cast<uint64_t>(dims[i]), &total) || total > (1ull << 48)) {
      return InvalidArgument("the buffer's byte size overflows (dims[%zu] = %" PRId64 ")", i, dims[i]);
    }
  }
  *bytes = total;
  return Ok();
}

// ---- Engine -----------------------------------------------------------------------------------------

CopyEngine::CopyEngine(neuronmem_client_t* client)
    : client_(client), registry_(std::make_shared<Registry>()), impl_(new Impl) {}

Status CreateCopyEngine(neuronmem_client_t* client, std::unique_ptr<CopyEngine>* out) {
  auto engine = std::make_unique<CopyEngine>(client);
  NEURONMEM_RETURN_IF_ERROR(engine->Init());
  *out = std::move(engine);
  return Ok();
}

Status CopyEngine::Init() {
  for (size_t k = 0; k < client_->devices.size(); ++k) {
    queues_.push_back(std::make_unique<Queue>());
    queues_.back()->core = static_cast<int>(k);
  }
  impl_->arena.initialize(static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
  impl_->have_ring = io_uring_queue_init(64, &impl_->ring, 0) == 0;
  return Ok();
}

CopyEngine::~CopyEngine() {
  // Transfers waiting on events the caller never completed would never drain: fail them first.
  CancelUserEvents(user_events_.get());
  {
    std::unique_lock<std::mutex> lock(idle_mu_);
    idle_cv_.wait(lock, [this] {
      if (active_tasks_.load(std::memory_order_acquire) != 0) return false;
      for (auto& q : queues_) {
        if (q->pending.load(std::memory_order_acquire) != 0) return false;
      }
      return true;
    });
  }
  impl_->arena.terminate();
  if (impl_->have_ring) io_uring_queue_exit(&impl_->ring);
  std::lock_guard<std::mutex> lock(registry_->mu);
  registry_->closed = true;  // arenas go next: storages still alive must not free into them
}

Status CopyEngine::CreateUserEvent(Event** out) { return NewUserEvent(user_events_, out); }

size_t CopyEngine::LiveStorages() const {
  std::lock_guard<std::mutex> lock(registry_->mu);
  return registry_->count;
}

Status CopyEngine::CheckMemory(neuronmem_memory_t* memory) const {
  if (!memory) return InvalidArgument("the target memory is NULL");
  if (memory->client != client_) {
    return InvalidArgument("%s belongs to another client", memory->debug_string.c_str());
  }
  return Ok();
}

Status CopyEngine::NewStorage(neuronmem_memory_t* memory, uint64_t bytes, Storage** out) {
  auto s = std::make_unique<Storage>();
  s->memory = memory;
  s->bytes = bytes;
  s->registry = registry_;
  if (bytes) {
    switch (memory->kind) {
      case NEURONMEM_MEMORY_KIND_DEVICE:
        s->kind = Storage::Kind::kDevice;
        NEURONMEM_RETURN_IF_ERROR(memory->device_arena->Allocate(bytes, 64, &s->device_offset));
        s->data = memory->device_arena->base() + s->device_offset;
        break;
      case NEURONMEM_MEMORY_KIND_PINNED_HOST: {
        s->kind = Storage::Kind::kPinned;
        void* p = nullptr;
        NEURONMEM_RETURN_IF_ERROR(memory->pinned_arena->Allocate(bytes, 64, &p));
        s->data = static_cast<uint8_t*>(p);
        break;
      }
      default: {
        s->kind = Storage::Kind::kUnpinned;
        void* p = nullptr;
        NEURONMEM_RETURN_IF_ERROR(memory->unpinned->Allocate(bytes, 64, &p));
        s->data = static_cast<uint8_t*>(p);
        break;
      }
    }
  } else {
    s->kind = Storage::Kind::kAlias;
  }
  std::lock_guard<std::mutex> lock(registry_->mu);
  s->next = registry_->head;
  if (s->next) s->next->prev = s.get();
  registry_->head = s.get();
  ++registry_->count;
  *out = s.release();
  return Ok();
}

namespace {

neuronmem_buffer_t* NewBuffer(neuronmem_client_t* client, neuronmem_memory_t* memory, neuronmem_element_type_t type,
                              const int64_t* dims, size_t rank, uint64_t bytes, Storage* storage) {
  auto* b = new neuronmem_buffer_t();
  b->client = client;
  b->memory = memory;
  b->type = type;
  b->rank = rank;
  for (size_t i = 0; i < rank; ++i) b->dims[i] = dims[i];
  b->bytes = bytes;
  b->storage = storage;
  return b;
}

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
    if (dim + 1 == rank)
      std::memcpy(d, s, elem);
    else
      GatherStrided(d, s, dims, strides, rank, elem, dim + 1);
  }
}

bool IsDense(const int64_t* dims, const int64_t* strides, size_t rank, uint64_t elem) {
  if (!strides) return true;
  int64_t expect = static_cast<int64_t>(elem);
  for (size_t i = rank; i-- > 0;) {
    if (dims[i] > 1 && strides[i] != expect) return false;
    expect *= dims[i];
  }
  return true;
}

void DestroyBuffers(neuronmem_buffer_t** bufs, size_t n);

}  // namespace

Status CopyEngine::FromHost(const neuronmem_buffer_from_host_args_t* args, size_t count,
                            neuronmem_buffer_t** out_buffers, Event** ready, Event** done_with_host) {
  const size_t min_size = offsetof(neuronmem_buffer_from_host_args_t, num_wait_events) + sizeof(size_t);
  std::vector<neuronmem_buffer_t*> made;
  made.reserve(count);
  auto fail = [&](Status s) {
    DestroyBuffers(made.data(), made.size());
    return s;
  };
  // The decode-metadata fast path: one small dense upload that copies, nothing to wait for, an idle queue.
  // It runs inline and allocates nothing beyond the buffer itself.
  if (count == 1 && args[0].struct_size >= min_size && !args[0].extension && !args[0].num_wait_events &&
      !args[0].byte_strides && args[0].memory && args[0].memory->client == client_ &&
      args[0].host_buffer_semantics <= NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES &&
      inject_faults_.load(std::memory_order_relaxed) == 0) {
    const neuronmem_buffer_from_host_args_t& a = args[0];
    const auto type = static_cast<neuronmem_element_type_t>(a.element_type);
    uint64_t bytes = 0;
    if (!DenseBytes(type, a.dims, a.num_dims, &bytes) && bytes <= kInlineThreshold && (a.data || !bytes) &&
        queues_[static_cast<size_t>(a.memory->core)]->pending.load(std::memory_order_acquire) == 0) {
      Storage* storage = nullptr;
      NEURONMEM_RETURN_IF_ERROR(NewStorage(a.memory, bytes, &storage));
      if (bytes) std::memcpy(storage->data, a.data, bytes);
      neuronmem_buffer_t* b = NewBuffer(client_, a.memory, type, a.dims, a.num_dims, bytes, storage);
      SetDefinition(b, ReadyEvent());
      if (ready) *ready = ReadyEvent();
      if (done_with_host) *done_with_host = ReadyEvent();
      out_buffers[0] = b;
      return Ok();
    }
  }
#define FAIL_IF(expr)                   \
  do {                                  \
    Status _s = (expr);                 \
    if (_s) return fail(std::move(_s)); \
  } while (0)
  auto op = std::make_unique<Op>();
  bool only_during_call = false;
  EventRef done_host;
  for (size_t i = 0; i < count; ++i) {
    const neuronmem_buffer_from_host_args_t& a = args[i];
    const std::string where = count > 1 ? "args[" + std::to_string(i) + "]: " : std::string();
    if (a.struct_size < min_size) {
      return fail(
          InvalidArgument("%sneuronmem_buffer_from_host_args_t.struct_size is %zu, smaller than the "
                          "minimum %zu",
                          where.c_str(), a.struct_size, min_size));
    }
    if (a.extension) return fail(InvalidArgument("%sextension must be NULL", where.c_str()));
    FAIL_IF(Annotate(CheckMemory(a.memory), where + "memory"));
    if (a.host_buffer_semantics > NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY) {
      return fail(InvalidArgument("%shost_buffer_semantics %u is not a neuronmem_host_buffer_semantics_t",
                                  where.c_str(), a.host_buffer_semantics));
    }
    const auto type = static_cast<neuronmem_element_type_t>(a.element_type);
    uint64_t bytes = 0;
    FAIL_IF(Annotate(DenseBytes(type, a.dims, a.num_dims, &bytes), where + "shape"));
    if (bytes && !a.data)
      return fail(InvalidArgument("%sdata is NULL for a %" PRIu64 "-byte buffer", where.c_str(), bytes));
    if (a.num_wait_events && !a.wait_events) return fail(InvalidArgument("%swait_events is NULL", where.c_str()));
    for (size_t w = 0; w < a.num_wait_events; ++w) {
      if (!a.wait_events[w]) return fail(InvalidArgument("%swait_events[%zu] is NULL", where.c_str(), w));
      op->waits.emplace_back(Share(a.wait_events[w]));
    }
    if (a.byte_strides) {
      for (size_t d = 0; d < a.num_dims; ++d) {
        if (a.byte_strides[d] < 0) return fail(InvalidArgument("%sbyte_strides[%zu] is negative", where.c_str(), d));
      }
    }
    const uint64_t elem = ElementSize(type);
    const bool dense = IsDense(a.dims, a.byte_strides, a.num_dims, elem);
    const bool wants_alias = a.host_buffer_semantics == NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY ||
                             a.host_buffer_semantics == NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY;
    const bool can_alias =
        dense &&
        (a.memory->kind == NEURONMEM_MEMORY_KIND_UNPINNED_HOST ||
         (a.memory->kind == NEURONMEM_MEMORY_KIND_PINNED_HOST && a.memory->pinned_arena->Contains(a.data, bytes)));
    Storage* storage = nullptr;
    if (wants_alias && can_alias) {
      storage = new Storage();
      storage->kind = Storage::Kind::kAlias;
      storage->memory = a.memory;
      storage->data = static_cast<uint8_t*>(const_cast<void*>(a.data));
      storage->bytes = 0;  // nothing to free
      storage->registry = registry_;
      if (count == 1) {
        done_host = EventRef(NewEvent());
        storage->done_with_host = done_host;
      }
      {
        std::lock_guard<std::mutex> lock(registry_->mu);
        storage->next = registry_->head;
        if (storage->next) storage->next->prev = storage;
        registry_->head = storage;
        ++registry_->count;
      }
      made.push_back(NewBuffer(client_, a.memory, type, a.dims, a.num_dims, bytes, storage));
    } else {
      FAIL_IF(NewStorage(a.memory, bytes, &storage));
      made.push_back(NewBuffer(client_, a.memory, type, a.dims, a.num_dims, bytes, storage));
      if (a.host_buffer_semantics == NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL) only_during_call = true;
      if (bytes) {
        Move m;
        m.dst = storage;
        m.size = bytes;
        if (dense) {
          m.src_host = static_cast<const uint8_t*>(a.data);
        } else {
          // Strided host data is gathered into a dense copy during the call.
          std::unique_ptr<uint8_t[]> staged(new (std::nothrow) uint8_t[bytes]);
          if (!staged) return fail(ResourceExhausted("cannot stage %" PRIu64 " bytes of strided host data", bytes));
          GatherStrided(staged.get(), static_cast<const uint8_t*>(a.data), a.dims, a.byte_strides, a.num_dims, elem);
          m.src_host = staged.get();
          m.staged = true;
          op->staging.push_back(std::move(staged));
        }
        op->moves.push_back(m);
        RetainObject(storage);
        AcquireUser(storage);
        StorageUse use;
        use.s = storage;
        op->uses.push_back(std::move(use));
      }
    }
    made.back()->zero_copy = storage->kind == Storage::Kind::kAlias && bytes;
  }
#undef FAIL_IF
  if (op->moves.empty()) {
    // Nothing to move (zero-copy or empty): the buffers are defined once the wait events are.
    bool failed = false;
    if (!FirstBlocking(op->waits, &failed) && !failed) {
      for (auto* b : made) SetDefinition(b, ReadyEvent());
      if (ready) *ready = ReadyEvent();
      if (done_with_host) *done_with_host = done_host.get() ? Share(done_host.get()) : ReadyEvent();
      for (size_t i = 0; i < made.size(); ++i) out_buffers[i] = made[i];
      return Ok();
    }
  }
  op->queue = queues_[static_cast<size_t>(made[0]->memory->core)].get();
  // ONLY_DURING_CALL: the bytes must be read before we return. If the transfer cannot run now (it
  // waits for events, or its queue is busy), stage the host data; a large transfer on an idle queue runs
  // synchronously (in parallel on the arena) instead of paying a staging copy.
  bool sync = false;
  if (only_during_call) {
    bool failed = false;
    if (FirstBlocking(op->waits, &failed) || op->queue->pending.load(std::memory_order_acquire) != 0) {
      for (Move& m : op->moves) {
        if (m.staged) continue;
        std::unique_ptr<uint8_t[]> staged(new (std::nothrow) uint8_t[m.size]);
        if (!staged) return fail(ResourceExhausted("cannot stage %" PRIu64 " bytes of host data", m.size));
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
    for (auto* b : made) SetDefinition(b, ev);
    if (done_with_host) *done_with_host = Share(ev);
    if (ready) *ready = Share(ev);
    Release(ev);
    for (size_t i = 0; i < made.size(); ++i) out_buffers[i] = made[i];
    return Ok();
  }
  Event* ev = nullptr;
  Status s = Submit(std::move(op), &ev, /*may_inline=*/true);
  if (s) return fail(std::move(s));
  for (auto* b : made) SetDefinition(b, ev);
  if (done_with_host) *done_with_host = done_host.get() ? Share(done_host.get()) : Share(ev);
  if (ready)
    *ready = ev;
  else
    Release(ev);
  for (size_t i = 0; i < made.size(); ++i) out_buffers[i] = made[i];
  return Ok();
}

Status CopyEngine::Allocate(neuronmem_memory_t* memory, neuronmem_element_type_t type, const int64_t* dims, size_t rank,
                            neuronmem_buffer_t** out) {
  NEURONMEM_RETURN_IF_ERROR(CheckMemory(memory));
  uint64_t bytes = 0;
  NEURONMEM_RETURN_IF_ERROR(DenseBytes(type, dims, rank, &bytes));
  Storage* storage = nullptr;
  NEURONMEM_RETURN_IF_ERROR(NewStorage(memory, bytes, &storage));
  neuronmem_buffer_t* b = NewBuffer(client_, memory, type, dims, rank, bytes, storage);
  SetDefinition(b, ReadyEvent());
  *out = b;
  return Ok();
}

Status CopyEngine::CopyToMemory(neuronmem_buffer_t* src, neuronmem_memory_t* memory, Event* const* waits,
                                size_t num_waits, neuronmem_buffer_t** out, Event** ready) {
  NEURONMEM_RETURN_IF_ERROR(CheckMemory(memory));
  if (src->client != client_) return InvalidArgument("the source buffer belongs to another client");
  auto op = std::make_unique<Op>();
  StorageUse src_use;
  NEURONMEM_RETURN_IF_ERROR(Use(src, &src_use));
  Storage* dst = nullptr;
  NEURONMEM_RETURN_IF_ERROR(NewStorage(memory, src->bytes, &dst));
  neuronmem_buffer_t* b = NewBuffer(client_, memory, src->type, src->dims, src->rank, src->bytes, dst);
  for (size_t i = 0; i < num_waits; ++i) op->waits.emplace_back(Share(waits[i]));
  op->waits.emplace_back(Share(DefinitionOf(src)));
  if (src->bytes) {
    Move m;
    m.dst = dst;
    m.src = src_use.s;
    m.size = src->bytes;
    op->moves.push_back(m);
    RetainObject(dst);
    AcquireUser(dst);
    StorageUse du;
    du.s = dst;
    op->uses.push_back(std::move(du));
  }
  op->uses.push_back(std::move(src_use));
  op->queue = queues_[static_cast<size_t>(src->memory->core)].get();
  Event* ev = nullptr;
  Status s = Submit(std::move(op), &ev, true);
  if (s) {
    neuronmem_buffer_t* bb = b;
    DestroyBuffers(&bb, 1);
    return s;
  }
  SetDefinition(b, ev);
  *out = b;
  if (ready)
    *ready = ev;
  else
    Release(ev);
  return Ok();
}

namespace {

Status CheckRange(const neuronmem_buffer_t* b, uint64_t offset, uint64_t size, const char* what) {
  uint64_t end;
  if (__builtin_add_overflow(offset, size, &end) || end > b->bytes) {
    return OutOfRange("%s of %" PRIu64 " bytes at offset %" PRIu64 " is past the end of the %" PRIu64 "-byte buffer",
                      what, size, offset, b->bytes);
  }
  return Ok();
}

}  // namespace

Status CopyEngine::Read(neuronmem_buffer_t* buffer, uint64_t offset, void* dst, uint64_t size, Event* const* waits,
                        size_t num_waits, Event** ready, bool caller_waits) {
  NEURONMEM_RETURN_IF_ERROR(CheckRange(buffer, offset, size, "read"));
  if (size && !dst) return InvalidArgument("dst is NULL");
  auto op = std::make_unique<Op>();
  StorageUse use;
  NEURONMEM_RETURN_IF_ERROR(Use(buffer, &use));
  for (size_t i = 0; i < num_waits; ++i) op->waits.emplace_back(Share(waits[i]));
  Event* def = DefinitionOf(buffer);
  if (!IsReady(def) || def->error) op->waits.emplace_back(Share(def));
  Move m;
  m.src = use.s;
  m.src_offset = offset;
  m.dst_host = static_cast<uint8_t*>(dst);
  m.size = size;
  if (size) op->moves.push_back(m);
  op->uses.push_back(std::move(use));
  op->queue = queues_[static_cast<size_t>(buffer->memory->core)].get();
  return Submit(std::move(op), ready, true, caller_waits);
}

Status CopyEngine::Write(neuronmem_buffer_t* buffer, uint64_t offset, const void* src, uint64_t size,
                         Event* const* waits, size_t num_waits, Event** ready, bool caller_waits) {
  NEURONMEM_RETURN_IF_ERROR(CheckRange(buffer, offset, size, "write"));
  if (size && !src) return InvalidArgument("src is NULL");
  Queue* q = queues_[static_cast<size_t>(buffer->memory->core)].get();
  Event* def = DefinitionOf(buffer);
  // The decode hot path: a small write into a defined buffer on an idle queue, nothing to wait for.
  if (num_waits == 0 && size <= kInlineThreshold && IsReady(def) && !def->error &&
      q->pending.load(std::memory_order_acquire) == 0) {
    StorageUse use;
    NEURONMEM_RETURN_IF_ERROR(Use(buffer, &use));
    if (inject_faults_.load(std::memory_order_relaxed) > 0 &&
        inject_faults_.fetch_sub(1, std::memory_order_relaxed) > 0) {
      *ready = FailedEvent(Internal("injected fault (test hook): the transfer did not run"));
      return Ok();
    }
    std::memcpy(Address(use.s, offset), src, size);
    *ready = ReadyEvent();
    return Ok();
  }
  auto op = std::make_unique<Op>();
  StorageUse use;
  NEURONMEM_RETURN_IF_ERROR(Use(buffer, &use));
  for (size_t i = 0; i < num_waits; ++i) op->waits.emplace_back(Share(waits[i]));
  if (!IsReady(def) || def->error) op->waits.emplace_back(Share(def));
  Move m;
  m.dst = use.s;
  m.dst_offset = offset;
  m.src_host = static_cast<const uint8_t*>(src);
  m.size = size;
  if (size) op->moves.push_back(m);
  op->uses.push_back(std::move(use));
  op->queue = q;
  return Submit(std::move(op), ready, true, caller_waits);
}

Status CopyEngine::UploadChunk(neuronmem_buffer_t* buffer, uint64_t offset, const void* data, uint64_t size,
                               bool is_last, Event* const* waits, size_t num_waits, Event** done) {
  NEURONMEM_RETURN_IF_ERROR(CheckRange(buffer, offset, size, "chunk"));
  if (size && !data) return InvalidArgument("data is NULL");
  if (is_last ? buffer->chunks_closed.exchange(true) : buffer->chunks_closed.load()) {
    return FailedPrecondition("the buffer's chunked upload already received its last chunk");
  }
  auto op = std::make_unique<Op>();
  StorageUse use;
  NEURONMEM_RETURN_IF_ERROR(Use(buffer, &use));
  for (size_t i = 0; i < num_waits; ++i) op->waits.emplace_back(Share(waits[i]));
  Move m;
  m.dst = use.s;
  m.dst_offset = offset;
  m.src_host = static_cast<const uint8_t*>(data);
  m.size = size;
  if (size) op->moves.push_back(m);
  op->uses.push_back(std::move(use));
  op->queue = queues_[static_cast<size_t>(buffer->memory->core)].get();
  // Chunks run in order on the buffer's queue, so the last chunk's event means "every chunk landed".
  Event* ev = nullptr;
  NEURONMEM_RETURN_IF_ERROR(Submit(std::move(op), &ev, true));
  if (is_last) SetDefinition(buffer, ev);
  *done = ev;
  return Ok();
}

Status CopyEngine::LoadFile(neuronmem_buffer_t* buffer, const char* path, uint64_t file_offset, uint64_t size,
                            uint64_t buffer_offset, Event* const* waits, size_t num_waits, Event** ready) {
  NEURONMEM_RETURN_IF_ERROR(CheckRange(buffer, buffer_offset, size, "file load"));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return NotFound("cannot open '%s': %s", path, std::strerror(err));
    if (err == EACCES || err == EPERM) {
      return StatusF(NEURONMEM_STATUS_PERMISSION_DENIED, "cannot open '%s': %s", path, std::strerror(err));
    }
    return InvalidArgument("cannot open '%s': %s", path, std::strerror(err));
  }
  auto op = std::make_unique<Op>();
  op->fd = fd;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return InvalidArgument("'%s' is not a regular file", path);
  }
  uint64_t end;
  if (__builtin_add_overflow(file_offset, size, &end) || end > static_cast<uint64_t>(st.st_size)) {
    return OutOfRange("'%s' has %" PRIu64 " bytes; the range [%" PRIu64 ", %" PRIu64 ") is past its end", path,
                      static_cast<uint64_t>(st.st_size), file_offset, file_offset + size);
  }
  StorageUse use;
  NEURONMEM_RETURN_IF_ERROR(Use(buffer, &use));
  for (size_t i = 0; i < num_waits; ++i) op->waits.emplace_back(Share(waits[i]));
  Event* def = DefinitionOf(buffer);
  if (!IsReady(def) || def->error) op->waits.emplace_back(Share(def));
  op->file_offset = file_offset;
  Move m;
  m.dst = use.s;
  m.dst_offset = buffer_offset;
  m.size = size;
  op->moves.push_back(m);
  op->uses.push_back(std::move(use));
  op->queue = queues_[static_cast<size_t>(buffer->memory->core)].get();
  return Submit(std::move(op), ready, /*may_inline=*/false);
}

// ---- Submission, draining, execution ----------------------------------------------------------------

Status CopyEngine::Submit(std::unique_ptr<Op> op, Event** ready, bool may_inline, bool caller_waits) {
  Queue* q = op->queue;
  uint64_t bytes = 0;
  for (const Move& m : op->moves) bytes += m.size;
  bool failed = false;
  if (may_inline && (bytes <= kInlineThreshold || caller_waits) && q->pending.load(std::memory_order_acquire) == 0 &&
      !FirstBlocking(op->waits, &failed)) {
    // A large synchronous transfer holds its queue (later submissions queue behind it) while the caller
    // shares the copy with the arena's workers (ParallelCopy).
    const bool large = bytes > kInlineThreshold;
    if (large) q->pending.fetch_add(1, std::memory_order_acq_rel);
    Status s = Execute(*op);
    op.reset();
    if (large && q->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(idle_mu_);
      idle_cv_.notify_all();
    }
    *ready = s ? FailedEvent(std::move(s)) : ReadyEvent();
    return Ok();
  }
  Event* ev = NewEvent();
  op->done = EventRef(Share(ev));
  bool schedule = false;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    q->ops.push_back(std::move(op));
    q->pending.fetch_add(1, std::memory_order_acq_rel);
    if (!q->draining) {
      q->draining = true;
      schedule = true;
    }
  }
  if (schedule) ScheduleDrain(q);
  *ready = ev;
  return Ok();
}

namespace {

// The body of every task the engine enqueues in its arena. oneTBB moves the body into a task object and
// hands that object to a worker inside the uninstrumented libtbb, so ThreadSanitizer cannot see that the
// worker's reads of the body follow the submitter's writes. Here every field is an atomic written with
// release and read with acquire: the hand-off is visible through the fields themselves, with no
// suppression for our code (tests/tsan.supp only hides oneTBB's own accesses). Cost: three plain loads.
// Whether this thread is running one of the engine's tasks (its arena's workers are the only threads that
// do): a large copy started there need not enqueue a helper for that same worker.
thread_local bool t_in_engine_task = false;

class ArenaTask {
 public:
  using Fn = void (*)(CopyEngine*, void*);
  ArenaTask(Fn fn, CopyEngine* engine, void* arg) { Set(fn, engine, arg); }
  ArenaTask(const ArenaTask& o) { Set(o.fn_.load(kAcq), o.engine_.load(kAcq), o.arg_.load(kAcq)); }
  ArenaTask& operator=(const ArenaTask&) = delete;
  void operator()() const {
    t_in_engine_task = true;
    fn_.load(kAcq)(engine_.load(kAcq), arg_.load(kAcq));
    t_in_engine_task = false;
  }

 private:
  static constexpr std::memory_order kAcq = std::memory_order_acquire;
  void Set(Fn fn, CopyEngine* engine, void* arg) {
    arg_.store(arg, std::memory_order_release);
    engine_.store(engine, std::memory_order_release);
    fn_.store(fn, std::memory_order_release);
  }
  std::atomic<Fn> fn_;
  std::atomic<CopyEngine*> engine_;
  std::atomic<void*> arg_;
};

}  // namespace

void CopyEngine::Enqueue(void (*fn)(CopyEngine*, void*), void* arg) {
  active_tasks_.fetch_add(1, std::memory_order_acq_rel);
  impl_->arena.enqueue(ArenaTask(fn, this, arg));
}

void CopyEngine::TaskDone() {
  if (active_tasks_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard<std::mutex> lock(idle_mu_);
    idle_cv_.notify_all();
  }
}

void CopyEngine::ScheduleDrain(Queue* q) {
  Enqueue(
      [](CopyEngine* engine, void* queue) {
        engine->Drain(static_cast<Queue*>(queue));
        engine->TaskDone();
      },
      q);
}

void CopyEngine::ParallelCopy(uint8_t* dst, const uint8_t* src, uint64_t n, Event* done) {
  if (n < 4 * SharedCopy::kChunk) {
    FastCopy(dst, src, n);
    return;
  }
  // The arena's worker slots (one is reserved for a master thread), minus this thread if it is one of
  // them: on a 2-CPU machine a copy run by the queue's worker enqueues no helper (it could only start
  // after this copy) and shares the work with a waiting thread instead.
  const int helpers = std::max(0, impl_->arena.max_concurrency() - 1 - (t_in_engine_task ? 1 : 0));
  auto* shared = new SharedCopy(dst, src, n, /*refs=*/helpers + 1);
  for (int i = 0; i < helpers; ++i) {
    Enqueue(
        [](CopyEngine* engine, void* p) {
          static_cast<SharedCopy*>(p)->Run();
          static_cast<SharedCopy*>(p)->Unref();
          engine->TaskDone();
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

void CopyEngine::Drain(Queue* q) {
  for (;;) {
    Op* op;
    {
      std::lock_guard<std::mutex> lock(q->mu);
      if (q->ops.empty()) {
        q->draining = false;
        return;
      }
      op = q->ops.front().get();
    }
    bool failed = false;
    if (Event* blocking = FirstBlocking(op->waits, &failed); blocking && !failed) {
      // In order: the whole queue waits for this event; its completion re-arms the drain.
      Retain(blocking);
      OnReady(blocking, [this, q, blocking](const neuronmem_status_t*) {
        ScheduleDrain(q);
        Release(blocking);
      });
      return;
    }
    Status s = Execute(*op);
    std::unique_ptr<Op> finished;
    {
      std::lock_guard<std::mutex> lock(q->mu);
      finished = std::move(q->ops.front());
      q->ops.pop_front();
    }
    EventRef done = std::move(finished->done);
    finished.reset();  // releases storages before the event fires: memory can be reused at once
    q->pending.fetch_sub(1, std::memory_order_acq_rel);
    Complete(done.get(), std::move(s));
    {
      std::lock_guard<std::mutex> lock(idle_mu_);
      idle_cv_.notify_all();
    }
  }
}

Status CopyEngine::Execute(Op& op) {
  bool failed = false;
  if (Event* e = FirstBlocking(op.waits, &failed); e && failed) {
    return StatusF(e->error->code, "a dependency failed: %s", e->error->message.c_str());
  }
  for (const StorageUse& u : op.uses) {
    if (u.s->deleted.load(std::memory_order_acquire)) {
      return FailedPrecondition("a buffer of this transfer was deleted before the transfer ran");
    }
  }
  if (inject_faults_.load(std::memory_order_relaxed) > 0 &&
      inject_faults_.fetch_sub(1, std::memory_order_relaxed) > 0) {
    return Internal("injected fault (test hook): the transfer did not run");
  }
  if (op.fd >= 0) return ExecuteFileLoad(op);
  for (const Move& m : op.moves) {
    uint8_t* dst = m.dst ? Address(m.dst, m.dst_offset) : m.dst_host;
    const uint8_t* src = m.src ? Address(m.src, m.src_offset) : m.src_host;
    if (dst == src) continue;  // zero-copy alias onto itself
    ParallelCopy(dst, src, m.size, op.done.get());
  }
  return Ok();
}

Status CopyEngine::ExecuteFileLoad(Op& op) {
  const Move& m = op.moves[0];
  uint8_t* dst = Address(m.dst, m.dst_offset);
  constexpr uint64_t kPiece = 8u << 20;
  uint64_t done = 0;
  if (impl_->have_ring) {
    std::lock_guard<std::mutex> lock(impl_->ring_mu);
    io_uring* ring = &impl_->ring;
    while (done < m.size) {
      // One batch: up to 32 reads of 8 MiB submitted together, then reaped together.
      unsigned queued = 0;
      uint64_t batch_off = done;
      while (queued < 32 && batch_off < m.size) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
        if (!sqe) break;
        const uint64_t len = std::min(kPiece, m.size - batch_off);
        io_uring_prep_read(sqe, op.fd, dst + batch_off, static_cast<unsigned>(len), op.file_offset + batch_off);
        io_uring_sqe_set_data64(sqe, batch_off);
        batch_off += len;
        ++queued;
      }
      int r = io_uring_submit_and_wait(ring, queued);
      if (r < 0) return Internal("io_uring submission failed: %s", std::strerror(-r));
      Status first_error;
      uint64_t short_at = UINT64_MAX;
      for (unsigned i = 0; i < queued; ++i) {
        io_uring_cqe* cqe = nullptr;
        int w = io_uring_wait_cqe(ring, &cqe);
        if (w < 0) return Internal("io_uring completion failed: %s", std::strerror(-w));
        const uint64_t off = io_uring_cqe_get_data64(cqe);
        const uint64_t want = std::min(kPiece, m.size - off);
        if (cqe->res < 0 && !first_error) {
          first_error = Internal("reading the file failed: %s", std::strerror(-cqe->res));
        } else if (cqe->res >= 0 && static_cast<uint64_t>(cqe->res) < want) {
          short_at = std::min(short_at, off + static_cast<uint64_t>(cqe->res));
        }
        io_uring_cqe_seen(ring, cqe);
      }
      if (first_error) return first_error;
      if (short_at != UINT64_MAX) {
        // A short read (the file shrank, or a partial read): finish the rest with plain reads below.
        done = short_at;
        break;
      }
      done = batch_off;
    }
  }
  while (done < m.size) {
    const ssize_t r = pread(op.fd, dst + done, std::min<uint64_t>(kPiece, m.size - done), op.file_offset + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Internal("reading the file failed: %s", std::strerror(errno));
    }
    if (r == 0) {
      return OutOfRange("the file ended after %" PRIu64 " of %" PRIu64 " requested bytes (it was truncated)", done,
                        m.size);
    }
    done += static_cast<uint64_t>(r);
  }
  return Ok();
}

namespace {

void DestroyBuffers(neuronmem_buffer_t** bufs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    neuronmem_buffer_t* b = bufs[i];
    if (!b) continue;
    if (!b->deleted.exchange(true)) {
      b->storage->deleted.store(true, std::memory_order_release);
      ReleaseUser(b->storage);
    }
    ReleaseObject(b->storage);
    delete b;
  }
}

}  // namespace

// Public helpers used by the C shim.
Status DeleteBuffer(neuronmem_buffer_t* b) {
  if (!b->deleted.exchange(true)) {
    // Transfers already queued that touch it fail (their own use keeps the memory until they finish).
    b->storage->deleted.store(true, std::memory_order_release);
    ReleaseUser(b->storage);
  }
  return Ok();
}

void DestroyBuffer(neuronmem_buffer_t* b) { DestroyBuffers(&b, 1); }

}  // namespace neuronmem::copy
