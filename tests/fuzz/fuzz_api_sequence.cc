// libFuzzer target for the C API as a hostile caller uses it: each input is a sequence of calls
// (allocate, upload, write, read, chunk, copy, delete, destroy, caller events, waits, host allocations, client
// destroy) across two clients with arguments taken from the input, some of them out of range or of the other
// client. A shadow model holds what every live buffer must contain; every call must return one of the codes
// the header allows for what was asked, every read must return the shadow's bytes, and every wait must end
// (a wait only ever waits for transfers whose caller events were completed first). Only the public header
// is used. Buffers and events of an input are released at its end; the clients live across inputs.
#include <neuronmem/neuronmem.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/transfer_helpers.h"

namespace {

[[noreturn]] void Fail(const char* what, const neuronmem_status_t* s) {
  const neuronmem_string_t m = neuronmem_status_message(s);
  std::fprintf(stderr, "api-sequence: %s: %s %.*s\n", what, neuronmem_status_code_name(neuronmem_status_code(s)),
               static_cast<int>(m.size), m.data);
  std::abort();
}

// The code of a status (freed); OK for NULL.
neuronmem_status_code_t Code(neuronmem_status_t* s) {
  const neuronmem_status_code_t c = neuronmem_status_code(s);
  neuronmem_status_free(s);
  return c;
}

void ExpectOk(neuronmem_status_t* s, const char* what) {
  if (s) Fail(what, s);
}

void ExpectCode(neuronmem_status_t* s, neuronmem_status_code_t want, const char* what) {
  if (neuronmem_status_code(s) != want) Fail(what, s);
  neuronmem_status_free(s);
}

// For a call that is wrong in two ways at once: either error is right.
void ExpectEither(neuronmem_status_t* s, neuronmem_status_code_t a, neuronmem_status_code_t b, const char* what) {
  if (neuronmem_status_code(s) != a && neuronmem_status_code(s) != b) Fail(what, s);
  neuronmem_status_free(s);
}

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t Below(uint32_t n) { return n ? static_cast<uint32_t>(Byte() | (Byte() << 8)) % n : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

struct Buf {
  neuronmem_buffer_t* handle = nullptr;
  int client = 0;
  std::vector<uint8_t> shadow;  // what the buffer holds once every transfer submitted so far has run
  bool exact = true;            // false once a transfer into it may have failed: reads are not compared
  bool deleted = false;
  uint64_t id = 0;
  uint64_t source = 0;                  // the buffer it was copied from, while that copy may not have run yet
  neuronmem_event_t* copied = nullptr;  // that copy's ready event (owned by events_)
};

struct PendingRead {
  neuronmem_event_t* done = nullptr;
  std::vector<uint8_t> dst, expected;
  bool compare = true;
  uint64_t buffer = 0;  // the id of the buffer read
};

constexpr int kClients = 2;
constexpr uint32_t kMaxBytes = 4096;

neuronmem_client_t* clients[kClients];
std::vector<neuronmem_memory_t*> memories[kClients];

void CreateClient(int c) {
  neuronmem_client_options_t o{};
  o.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  o.num_cores = 2;
  o.device_bytes_per_core = 4u << 20;
  o.pinned_host_bytes = 32u << 20;
  ExpectOk(neuronmem_client_create(&o, &clients[c]), "client_create");
  neuronmem_memory_t* const* mems = nullptr;
  size_t n = 0;
  ExpectOk(neuronmem_client_memories(clients[c], &mems, &n), "client_memories");
  memories[c].assign(mems, mems + n);
}

class Session {
 public:
  explicit Session(Input* in) : in_(in) {}

  ~Session() {
    // Complete what the caller still owes, then collect every read and release everything.
    for (neuronmem_event_t* e : user_events_) ExpectOk(neuronmem_event_complete(e, nullptr), "complete at end");
    for (PendingRead& r : reads_) Collect(&r);
    for (neuronmem_event_t* e : user_events_) neuronmem_event_destroy(e);
    for (neuronmem_event_t* e : events_) {
      neuronmem_status_code_t c = Code(neuronmem_event_wait(e, -1));
      (void)c;  // transfers made to fail on purpose end failed; the wait must end, whatever the status
      neuronmem_event_destroy(e);
    }
    for (Buf& b : bufs_) neuronmem_buffer_destroy(b.handle);
    for (int c = 0; c < kClients; ++c) {
      for (void* p : host_[c]) ExpectOk(neuronmem_client_host_free(clients[c], p), "host_free at end");
    }
  }

  void Step() {
    switch (in_->Below(13)) {
      case 0: Upload(); break;
      case 1: Allocate(); break;
      case 2: Write(); break;
      case 3: Read(); break;
      case 4: Copy(); break;
      case 5: Delete(); break;
      case 6: Destroy(); break;
      case 7: Chunks(); break;
      case 8: CallerEvent(); break;
      case 9: CompleteCallerEvents(); break;
      case 10: HostMemory(); break;
      case 11: DestroyClientWithBuffers(); break;
      default: FailedDependency(); break;
    }
  }

 private:
  int PickClient() { return static_cast<int>(in_->Below(kClients)); }
  neuronmem_memory_t* PickMemory(int c) { return memories[c][in_->Below(static_cast<uint32_t>(memories[c].size()))]; }
  Buf* PickBuf() { return bufs_.empty() ? nullptr : &bufs_[in_->Below(static_cast<uint32_t>(bufs_.size()))]; }

  std::vector<uint8_t> Bytes(uint32_t n) {
    std::vector<uint8_t> v(n);
    const uint8_t seed = in_->Byte();
    for (uint32_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31);
    return v;
  }

  // A pending caller event of client c, as a wait list for its next transfer (sometimes none). A transfer
  // may wait only on events of its own client (others are INVALID_ARGUMENT, tested in tests/copy).
  neuronmem_event_list_t Waits(int c) {
    if (in_->Byte() % 2) return {nullptr, 0};
    for (size_t i = user_events_.size(); i-- > 0;) {
      if (user_event_client_[i] == c) return {&user_events_[i], 1};
    }
    return {nullptr, 0};
  }

  void Upload() {
    const int c = PickClient();
    const uint32_t n = in_->Below(kMaxBytes) + 1;
    std::vector<uint8_t> data = Bytes(n);
    int64_t dims[1] = {n};
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
    a.element_type = NEURONMEM_ELEMENT_TYPE_U8;
    a.dims = dims;
    a.num_dims = 1;
    a.memory = PickMemory(c);
    a.wait = Waits(c);
    // Copying semantics only: the host data dies with this call's vector (ONLY_DURING_CALL), or is kept
    // alive until the done event (UNTIL_TRANSFER_COMPLETES: we wait for it below when it is pending).
    const bool during_call = in_->Byte() % 2;
    a.host_buffer_semantics = during_call ? NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL
                                          : NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES;
    a.data = data.data();
    Buf b;
    b.client = c;
    neuronmem_event_t* done = nullptr;
    ExpectOk(neuronmem_buffer_from_host(clients[c], &a, &b.handle, nullptr, during_call ? nullptr : &done), "upload");
    if (done) {
      // The host bytes must outlive the transfer; if it waits for a caller event, complete that first.
      BeforeBlocking();
      ExpectOk(neuronmem_event_wait(done, -1), "upload done");
      neuronmem_event_destroy(done);
    }
    b.shadow = std::move(data);
    b.id = ++next_id_;
    bufs_.push_back(std::move(b));
  }

  void Allocate() {
    const int c = PickClient();
    const uint32_t n = in_->Below(kMaxBytes) + 1;
    int64_t dims[1] = {n};
    if (in_->Byte() % 8 == 0) dims[0] = -static_cast<int64_t>(n);  // a negative dimension
    Buf b;
    b.client = c;
    neuronmem_status_t* s =
        neuronmem_test::Allocate(clients[c], PickMemory(c), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b.handle);
    if (dims[0] < 0) return ExpectCode(s, NEURONMEM_STATUS_INVALID_ARGUMENT, "allocate, negative dim");
    ExpectOk(s, "allocate");
    // Content is undefined until written: fill it so that reads can be compared.
    b.shadow.assign(n, 0);
    BeforeBlocking();
    ExpectOk(neuronmem_test::Write(b.handle, 0, b.shadow.data(), n, nullptr, 0, nullptr), "zero fill");
    b.id = ++next_id_;
    bufs_.push_back(std::move(b));
  }

  // A byte range that is out of range one time in eight.
  void Range(const Buf& b, uint64_t* off, uint64_t* n, bool* in_range) {
    const uint64_t size = b.shadow.size();
    *off = in_->Below(static_cast<uint32_t>(size));
    *n = in_->Below(static_cast<uint32_t>(size - *off)) + 1;
    *in_range = in_->Byte() % 8 != 0;
    if (!*in_range) *n = size - *off + 1 + in_->Below(64);
  }

  void Write() {
    Buf* b = PickBuf();
    if (!b) return;
    uint64_t off, n;
    bool in_range;
    Range(*b, &off, &n, &in_range);
    std::vector<uint8_t> data = Bytes(static_cast<uint32_t>(n));
    neuronmem_event_t* done = nullptr;
    const bool async = in_->Byte() % 2;
    BeforeBlocking();  // we wait for the write below either way
    neuronmem_status_t* s = neuronmem_test::Write(b->handle, off, data.data(), n, nullptr, 0, async ? &done : nullptr);
    if (b->deleted && !in_range) {
      return ExpectEither(s, NEURONMEM_STATUS_FAILED_PRECONDITION, NEURONMEM_STATUS_OUT_OF_RANGE, "bad write");
    }
    if (b->deleted) return ExpectCode(s, NEURONMEM_STATUS_FAILED_PRECONDITION, "write to a deleted buffer");
    if (!in_range) return ExpectCode(s, NEURONMEM_STATUS_OUT_OF_RANGE, "write past the end");
    if (!b->exact) {  // the buffer's content may be failed: so may the write be
      Code(s);
      if (done) Code(neuronmem_event_wait(done, -1));
      if (done) neuronmem_event_destroy(done);
      return;
    }
    ExpectOk(s, "write");
    if (done) {  // the source bytes are read by the transfer: keep them until it ran
      ExpectOk(neuronmem_event_wait(done, -1), "write done");
      neuronmem_event_destroy(done);
    }
    std::memcpy(b->shadow.data() + off, data.data(), n);
  }

  void Read() {
    Buf* b = PickBuf();
    if (!b) return;
    uint64_t off, n;
    bool in_range;
    Range(*b, &off, &n, &in_range);
    PendingRead r;
    r.dst.assign(n, 0xEE);
    const bool async = in_->Byte() % 2;
    if (!async) BeforeBlocking();
    neuronmem_status_t* s =
        neuronmem_test::Read(b->handle, off, r.dst.data(), n, nullptr, 0, async ? &r.done : nullptr);
    if (b->deleted && !in_range) {
      return ExpectEither(s, NEURONMEM_STATUS_FAILED_PRECONDITION, NEURONMEM_STATUS_OUT_OF_RANGE, "bad read");
    }
    if (b->deleted) return ExpectCode(s, NEURONMEM_STATUS_FAILED_PRECONDITION, "read of a deleted buffer");
    if (!in_range) return ExpectCode(s, NEURONMEM_STATUS_OUT_OF_RANGE, "read past the end");
    r.compare = b->exact;
    r.buffer = b->id;
    r.expected.assign(b->shadow.begin() + static_cast<int64_t>(off), b->shadow.begin() + static_cast<int64_t>(off + n));
    if (!async) {
      if (r.compare) ExpectOk(s, "read");
      if (!r.compare) Code(s);
      Check(r);
      return;
    }
    ExpectOk(s, "async read");
    reads_.push_back(std::move(r));
  }

  void Check(const PendingRead& r) {
    if (r.compare && r.dst != r.expected) {
      std::fprintf(stderr, "api-sequence: a read returned other bytes than were written\n");
      std::abort();
    }
  }

  void Collect(PendingRead* r) {
    neuronmem_status_t* s = neuronmem_event_wait(r->done, -1);
    if (r->compare && s) Fail("an async read failed", s);
    const neuronmem_status_code_t c = Code(s);
    if (c == NEURONMEM_STATUS_OK) Check(*r);
    neuronmem_event_destroy(r->done);
    r->done = nullptr;
  }

  void Copy() {
    Buf* b = PickBuf();
    if (!b) return;
    const int target_client = PickClient();
    neuronmem_buffer_copy_args_t a{};
    a.struct_size = NEURONMEM_BUFFER_COPY_ARGS_STRUCT_SIZE;
    a.src = b->handle;
    a.memory = PickMemory(target_client);
    a.wait = Waits(b->client);
    Buf out;
    out.client = b->client;
    neuronmem_event_t* ready = nullptr;
    neuronmem_status_t* s = neuronmem_buffer_copy_to_memory(&a, &out.handle, &ready);
    if (target_client != b->client && b->deleted) {
      return ExpectEither(s, NEURONMEM_STATUS_INVALID_ARGUMENT, NEURONMEM_STATUS_FAILED_PRECONDITION, "bad copy");
    }
    if (target_client != b->client) return ExpectCode(s, NEURONMEM_STATUS_INVALID_ARGUMENT, "copy across clients");
    if (b->deleted) return ExpectCode(s, NEURONMEM_STATUS_FAILED_PRECONDITION, "copy of a deleted buffer");
    ExpectOk(s, "copy");
    events_.push_back(ready);
    out.shadow = b->shadow;
    out.exact = b->exact;
    out.id = ++next_id_;
    out.source = b->id;
    out.copied = ready;
    if (in_->Byte() % 2) {  // half the time the copy is known to have run
      BeforeBlocking();
      if (Code(neuronmem_event_wait(ready, -1)) != NEURONMEM_STATUS_OK && out.exact) Fail("copy failed", nullptr);
      out.source = 0;
    }
    bufs_.push_back(std::move(out));
  }

  void Delete() {
    Buf* b = PickBuf();
    if (!b) return;
    neuronmem_status_t* s = neuronmem_buffer_delete(b->handle);
    ExpectOk(s, b->deleted ? "double delete (a no-op)" : "delete");
    b->deleted = true;
    // A copy from it that has not run yet fails ("deleted before the transfer ran"), and so does everything
    // behind the copy's output: those buffers' bytes are no longer known.
    MarkCopiesInexact(b->id);
    MarkReadsUnknown(b->id);
    bool deleted = false;
    ExpectOk(neuronmem_buffer_is_deleted(b->handle, &deleted), "is_deleted");
    if (!deleted) Fail("is_deleted is false after delete", nullptr);
  }

  // Whether the transfer of `e` has already run and succeeded (it may run, and fail, just after a delete).
  static bool RanOk(neuronmem_event_t* e) {
    bool ready = false;
    ExpectOk(neuronmem_event_is_ready(e, &ready), "is_ready");
    if (!ready) return false;
    neuronmem_status_t* err = nullptr;
    ExpectOk(neuronmem_event_error(e, &err), "event_error");
    return Code(err) == NEURONMEM_STATUS_OK;
  }

  // Reads of buffer `id` that have not run yet may fail now (their buffer was deleted, or its content failed).
  void MarkReadsUnknown(uint64_t id) {
    for (PendingRead& r : reads_) {
      if (r.buffer == id && !RanOk(r.done)) r.compare = false;
    }
  }

  void MarkCopiesInexact(uint64_t id) {
    for (Buf& x : bufs_) {
      if (x.source != id || !x.source) continue;
      x.source = 0;
      if (RanOk(x.copied)) continue;
      x.exact = false;
      MarkReadsUnknown(x.id);
      MarkCopiesInexact(x.id);
    }
  }

  void Destroy() {
    if (bufs_.empty()) return;
    const size_t i = in_->Below(static_cast<uint32_t>(bufs_.size()));
    // Destroy deletes first: like a delete, it fails what is queued on the buffer and has not run yet.
    neuronmem_buffer_destroy(bufs_[i].handle);
    const uint64_t id = bufs_[i].id;
    bufs_.erase(bufs_.begin() + static_cast<int64_t>(i));
    MarkCopiesInexact(id);
    MarkReadsUnknown(id);
  }

  void Chunks() {
    const int c = PickClient();
    const uint32_t n = in_->Below(kMaxBytes) + 2;
    int64_t dims[1] = {n};
    Buf b;
    b.client = c;
    ExpectOk(neuronmem_test::Allocate(clients[c], PickMemory(c), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b.handle),
             "allocate for chunks");
    b.shadow = Bytes(n);
    const uint32_t cut = in_->Below(n - 1) + 1;
    neuronmem_event_t* first = nullptr;
    neuronmem_event_list_t w = Waits(c);
    ExpectOk(neuronmem_test::UploadChunk(b.handle, 0, b.shadow.data(), cut, false, w.events, w.num_events, &first),
             "chunk 1");
    neuronmem_event_t* last = nullptr;  // async: chunk 1 may wait for a caller event on the same queue
    ExpectOk(neuronmem_test::UploadChunk(b.handle, cut, b.shadow.data() + cut, n - cut, true, nullptr, 0, &last),
             "last chunk");
    // A chunk after the last is refused.
    ExpectCode(neuronmem_test::UploadChunk(b.handle, 0, b.shadow.data(), 1, false, nullptr, 0, nullptr),
               NEURONMEM_STATUS_FAILED_PRECONDITION, "chunk after the last");
    BeforeBlocking();
    ExpectOk(neuronmem_event_wait(first, -1), "chunk 1 done");  // its source bytes live in b.shadow
    ExpectOk(neuronmem_event_wait(last, -1), "last chunk done");
    neuronmem_event_destroy(first);
    neuronmem_event_destroy(last);
    b.id = ++next_id_;
    bufs_.push_back(std::move(b));
  }

  void CallerEvent() {
    if (user_events_.size() >= 4) return;
    neuronmem_event_t* e = nullptr;
    const int c = PickClient();
    ExpectOk(neuronmem_event_create(clients[c], &e), "event_create");
    user_events_.push_back(e);
    user_event_client_.push_back(c);
  }

  // Before any call that blocks: a queue runs in order, so one transfer behind a pending caller event holds
  // back everything queued after it on that core; completing the caller's events first keeps waits finite.
  void BeforeBlocking() {
    if (!user_events_.empty() || !reads_.empty()) CompleteCallerEvents();
  }

  // Completes every caller event (successfully), then every read queued behind them can be collected.
  void CompleteCallerEvents() {
    for (neuronmem_event_t* e : user_events_) {
      ExpectOk(neuronmem_event_complete(e, nullptr), "event_complete");
      ExpectCode(neuronmem_event_complete(e, nullptr), NEURONMEM_STATUS_FAILED_PRECONDITION, "complete twice");
      neuronmem_event_destroy(e);
    }
    user_events_.clear();
    user_event_client_.clear();
    for (PendingRead& r : reads_) Collect(&r);
    reads_.clear();
  }

  void HostMemory() {
    const int c = PickClient();
    const uint64_t n = in_->Below(1u << 16) + 1;
    void* p = nullptr;
    ExpectOk(neuronmem_client_host_allocate(clients[c], n, 64, &p), "host_allocate");
    std::memset(p, 0x5A, n);
    const int other = (c + 1) % kClients;
    ExpectCode(neuronmem_client_host_free(clients[other], p), NEURONMEM_STATUS_INVALID_ARGUMENT,
               "free in another client");
    if (in_->Byte() % 2) {
      host_[c].push_back(p);  // freed at the end of the input
      return;
    }
    ExpectOk(neuronmem_client_host_free(clients[c], p), "host_free");
    ExpectCode(neuronmem_client_host_free(clients[c], p), NEURONMEM_STATUS_INVALID_ARGUMENT, "double free");
  }

  void DestroyClientWithBuffers() {
    const int c = PickClient();
    bool has = false;
    for (const Buf& b : bufs_) has |= b.client == c;
    if (!has) return;
    ExpectCode(neuronmem_client_destroy(clients[c]), NEURONMEM_STATUS_FAILED_PRECONDITION,
               "client destroy with live buffers");
  }

  // A write that waits for a caller event which then fails: the write fails, the buffer's bytes are no
  // longer known to the model, and the library stays usable.
  void FailedDependency() {
    Buf* b = PickBuf();
    if (!b || b->deleted) return;
    neuronmem_event_t* e = nullptr;
    ExpectOk(neuronmem_event_create(clients[b->client], &e), "event_create");
    std::vector<uint8_t> data = Bytes(static_cast<uint32_t>(b->shadow.size()));
    neuronmem_event_t* done = nullptr;
    ExpectOk(neuronmem_test::Write(b->handle, 0, data.data(), data.size(), &e, 1, &done), "write behind an event");
    // Any error will do as the cause: take one the library makes (a pointer it never handed out).
    static int not_ours;
    neuronmem_status_t* cause = neuronmem_client_host_free(clients[b->client], &not_ours);
    if (!cause) Fail("host_free accepted a foreign pointer", nullptr);
    ExpectOk(neuronmem_event_complete(e, cause), "complete with an error");
    neuronmem_status_free(cause);
    BeforeBlocking();
    if (Code(neuronmem_event_wait(done, -1)) == NEURONMEM_STATUS_OK) {
      Fail("a write behind a failed event succeeded", nullptr);
    }
    neuronmem_event_destroy(done);
    neuronmem_event_destroy(e);
    b->exact = false;
  }

  Input* in_;
  std::vector<Buf> bufs_;
  std::vector<PendingRead> reads_;
  std::vector<neuronmem_event_t*> events_;
  std::vector<neuronmem_event_t*> user_events_;
  std::vector<int> user_event_client_;  // the client of each caller event
  uint64_t next_id_ = 0;
  std::vector<void*> host_[kClients];
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!clients[0]) {
    for (int c = 0; c < kClients; ++c) CreateClient(c);
  }
  Input in(data, size);
  {
    Session s(&in);
    for (int steps = 0; steps < 64 && !in.empty(); ++steps) s.Step();
  }
  return 0;
}
