// Buffers, events and the copy engine through the public C API (plus the internal fault-injection hook).
#include <neuronmem/neuronmem.h>

#include <gtest/gtest.h>

#include <unistd.h>
#include "common/client_helpers.h"
#include "common/status_helpers.h"
#include "common/transfer_helpers.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "base/event.h"
#include "copy/copy_engine.h"

namespace {

using neuronmem_test::Result;
using neuronmem_test::Take;

// Pseudo-random bytes (splitmix64, 8 bytes per step: cheap enough for 64 MiB under the sanitizers).
std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(&v[i], &z, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
  return v;
}

class CopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    neuronmem_client_options_t o{};
    o.struct_size = sizeof o;
    o.num_cores = 2;
    o.device_bytes_per_core = 160ull << 20;
    o.pinned_host_bytes = 192ull << 20;
    ASSERT_OK(neuronmem_client_create(&o, &client_));
  }
  void TearDown() override { EXPECT_OK(neuronmem_client_destroy(client_)); }

  neuronmem_memory_t* Mem(int id) {
    neuronmem_memory_t* m = nullptr;
    EXPECT_OK(neuronmem_client_lookup_memory(client_, id, &m));
    return m;
  }
  neuronmem_memory_kind_t Kind(neuronmem_memory_t* m) {
    neuronmem_memory_kind_t k;
    EXPECT_OK(neuronmem_memory_kind(m, &k));
    return k;
  }

  neuronmem_buffer_from_host_args_t Args(
      const void* data, uint64_t bytes, neuronmem_memory_t* m,
      neuronmem_host_buffer_semantics_t semantics = NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES) {
    dims_[0] = static_cast<int64_t>(bytes);
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = sizeof a;
    a.data = data;
    a.element_type = NEURONMEM_ELEMENT_TYPE_U8;
    a.host_buffer_semantics = semantics;
    a.dims = dims_;
    a.num_dims = 1;
    a.memory = m;
    return a;
  }

  neuronmem_buffer_t* Upload(const std::vector<uint8_t>& data, neuronmem_memory_t* m) {
    auto a = Args(data.data(), data.size(), m);
    neuronmem_buffer_t* b = nullptr;
    neuronmem_event_t* ready = nullptr;
    neuronmem_status_t* s = neuronmem_buffer_from_host(client_, &a, &b, &ready, nullptr);
    EXPECT_EQ(s, nullptr) << Take(s).message;
    EXPECT_OK(neuronmem_event_wait(ready, -1));
    neuronmem_event_destroy(ready);
    return b;
  }

  std::vector<uint8_t> Download(neuronmem_buffer_t* b) {
    uint64_t n = 0;
    EXPECT_OK(neuronmem_buffer_on_device_size(b, &n));
    std::vector<uint8_t> out(n, 0xEE);
    EXPECT_OK(neuronmem_test::Read(b, 0, out.data(), n, nullptr, 0, nullptr));
    return out;
  }

  neuronmem_client_t* client_ = nullptr;
  int64_t dims_[1] = {0};
};

TEST_F(CopyTest, RoundTripsEveryKindPairAndCore) {
  // Memories 0..5: device/pinned of core 0 and 1, unpinned of core 0 and 1.
  const std::vector<size_t> sizes = {0, 1, 7, 63, 4095, 4096, 100003, 1u << 20};
  for (int src_id = 0; src_id < 6; ++src_id) {
    for (int dst_id = 0; dst_id < 6; ++dst_id) {
      for (size_t size : sizes) {
        SCOPED_TRACE("src " + std::to_string(src_id) + " dst " + std::to_string(dst_id) + " size " +
                     std::to_string(size));
        auto data = Pattern(size, static_cast<uint32_t>(src_id * 100 + dst_id + size));
        neuronmem_buffer_t* a = Upload(data, Mem(src_id));
        ASSERT_NE(a, nullptr);
        neuronmem_buffer_t* b = nullptr;
        neuronmem_event_t* ready = nullptr;
        ASSERT_OK(neuronmem_test::CopyToMemory(a, Mem(dst_id), nullptr, 0, &b, &ready));
        ASSERT_OK(neuronmem_event_wait(ready, -1));
        neuronmem_event_destroy(ready);
        neuronmem_memory_t* where = nullptr;
        ASSERT_OK(neuronmem_buffer_memory(b, &where));
        EXPECT_EQ(where, Mem(dst_id));
        EXPECT_EQ(Download(b), data);
        EXPECT_EQ(Download(a), data);  // the source is untouched
        neuronmem_buffer_destroy(a);
        neuronmem_buffer_destroy(b);
      }
    }
  }
}

TEST_F(CopyTest, LargeAndUnalignedRoundTrips) {
  for (int id : {0, 1, 2, 4}) {
    auto data = Pattern((64u << 20) + 3, static_cast<uint32_t>(id));
    // Unaligned source pointer and odd size.
    auto a = Args(data.data() + 3, data.size() - 3, Mem(id));
    neuronmem_buffer_t* b = nullptr;
    neuronmem_event_t* ready = nullptr;
    ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, &ready, nullptr));
    ASSERT_OK(neuronmem_event_wait(ready, -1));
    neuronmem_event_destroy(ready);
    std::vector<uint8_t> out(data.size() - 3);
    ASSERT_OK(neuronmem_test::Read(b, 0, out.data(), out.size(), nullptr, 0, nullptr));
    EXPECT_TRUE(std::equal(out.begin(), out.end(), data.begin() + 3));
    // A byte range at an odd offset.
    std::vector<uint8_t> part(12345);
    ASSERT_OK(neuronmem_test::Read(b, 777777, part.data(), part.size(), nullptr, 0, nullptr));
    EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + 3 + 777777));
    neuronmem_buffer_destroy(b);
  }
}

TEST_F(CopyTest, ZeroCopyPinnedUploadAliasesTheArena) {
  void* host = nullptr;
  ASSERT_OK(neuronmem_client_host_allocate(client_, 4096, 0, &host));
  std::memset(host, 0x11, 4096);
  auto a = Args(host, 4096, Mem(1), NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY);
  neuronmem_buffer_t* b = nullptr;
  neuronmem_event_t* ready = nullptr;
  neuronmem_event_t* done_host = nullptr;
  neuronmem_memory_stats_t before{}, after{};
  before.struct_size = after.struct_size = sizeof before;
  ASSERT_OK(neuronmem_memory_stats(Mem(1), &before));
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, &ready, &done_host));
  ASSERT_OK(neuronmem_memory_stats(Mem(1), &after));
  EXPECT_EQ(after.live_allocations, before.live_allocations) << "zero-copy must not allocate";
  bool zc = false, is_ready = false;
  ASSERT_OK(neuronmem_buffer_is_zero_copy(b, &zc));
  EXPECT_TRUE(zc);
  ASSERT_OK(neuronmem_event_is_ready(ready, &is_ready));
  EXPECT_TRUE(is_ready);
  ASSERT_OK(neuronmem_event_is_ready(done_host, &is_ready));
  EXPECT_FALSE(is_ready) << "the buffer still uses the host memory";
  // The caller writes the metadata in place; the buffer sees it (mutable zero-copy).
  static_cast<uint8_t*>(host)[5] = 0x77;
  uint8_t byte = 0;
  ASSERT_OK(neuronmem_test::Read(b, 5, &byte, 1, nullptr, 0, nullptr));
  EXPECT_EQ(byte, 0x77);
  neuronmem_buffer_destroy(b);
  ASSERT_OK(neuronmem_event_is_ready(done_host, &is_ready));
  EXPECT_TRUE(is_ready);
  neuronmem_event_destroy(ready);
  neuronmem_event_destroy(done_host);
  EXPECT_OK(neuronmem_client_host_free(client_, host));

  // Outside the pinned arena, zero-copy to pinned_host falls back to a copy.
  std::vector<uint8_t> heap(256, 3);
  auto c = Args(heap.data(), heap.size(), Mem(1), NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY);
  ASSERT_OK(neuronmem_buffer_from_host(client_, &c, &b, nullptr, nullptr));
  ASSERT_OK(neuronmem_buffer_is_zero_copy(b, &zc));
  EXPECT_FALSE(zc);
  heap[0] = 9;  // not aliased: the buffer keeps its copy
  EXPECT_EQ(Download(b)[0], 3);
  neuronmem_buffer_destroy(b);
}

TEST_F(CopyTest, OnlyDuringCallLetsTheCallerReuseTheDataAtOnce) {
  for (size_t size : {size_t{64}, size_t{8u << 20}}) {
    std::vector<uint8_t> data(size, 0x42);
    auto a = Args(data.data(), size, Mem(0), NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL);
    neuronmem_buffer_t* b = nullptr;
    neuronmem_event_t* ready = nullptr;
    ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, &ready, nullptr));
    std::fill(data.begin(), data.end(), 0);  // allowed right after the call
    ASSERT_OK(neuronmem_event_wait(ready, -1));
    neuronmem_event_destroy(ready);
    auto out = Download(b);
    EXPECT_EQ(out, std::vector<uint8_t>(size, 0x42));
    neuronmem_buffer_destroy(b);
  }
}

TEST_F(CopyTest, StridedHostDataIsGathered) {
  // A 3x4 int32 view with a row pitch of 8 elements (32 bytes).
  std::vector<int32_t> host(3 * 8);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 8; ++c) host[r * 8 + c] = r * 100 + c;
  int64_t dims[2] = {3, 4};
  int64_t strides[2] = {32, 4};
  neuronmem_buffer_from_host_args_t a{};
  a.struct_size = sizeof a;
  a.data = host.data();
  a.element_type = NEURONMEM_ELEMENT_TYPE_S32;
  a.dims = dims;
  a.num_dims = 2;
  a.byte_strides = strides;
  a.memory = Mem(2);
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  std::vector<int32_t> out(12);
  ASSERT_OK(neuronmem_test::Read(b, 0, out.data(), 48, nullptr, 0, nullptr));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(out[r * 4 + c], r * 100 + c);
  const int64_t* d = nullptr;
  size_t rank = 0;
  ASSERT_OK(neuronmem_buffer_dims(b, &d, &rank));
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(d[0], 3);
  EXPECT_EQ(d[1], 4);
  neuronmem_element_type_t t;
  ASSERT_OK(neuronmem_buffer_element_type(b, &t));
  EXPECT_EQ(t, NEURONMEM_ELEMENT_TYPE_S32);
  uint64_t bytes = 0;
  ASSERT_OK(neuronmem_buffer_on_device_size(b, &bytes));
  EXPECT_EQ(bytes, 48u);
  neuronmem_device_t* dev = nullptr;
  ASSERT_OK(neuronmem_buffer_device(b, &dev));
  neuronmem_device_description_t dd{};
  dd.struct_size = sizeof dd;
  ASSERT_OK(neuronmem_device_describe(dev, &dd));
  EXPECT_EQ(dd.id, 1);
  neuronmem_buffer_destroy(b);
}

TEST_F(CopyTest, InPlaceWritesAndOrderingWithinAQueue) {
  // A block table: 64 rows of 32 int32. Queue many writes behind a large upload on the same core; reads
  // queued after them see every write, in order.
  std::vector<uint8_t> big = Pattern(32u << 20, 1);
  auto a = Args(big.data(), big.size(), Mem(0));
  neuronmem_buffer_t* bigbuf = nullptr;
  neuronmem_event_t* big_ready = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &bigbuf, &big_ready, nullptr));

  std::vector<int32_t> table(64 * 32, 0);
  neuronmem_buffer_t* bt = nullptr;
  int64_t dims[2] = {64, 32};
  ASSERT_OK(neuronmem_test::Allocate(client_, Mem(0), NEURONMEM_ELEMENT_TYPE_S32, dims, 2, &bt));
  std::vector<std::vector<int32_t>> rows(200, std::vector<int32_t>(32));
  std::vector<neuronmem_event_t*> events;
  for (int i = 0; i < 200; ++i) {
    for (int c = 0; c < 32; ++c) rows[i][c] = i * 1000 + c;
    neuronmem_event_t* ev = nullptr;
    const uint64_t row = static_cast<uint64_t>(i % 64);
    ASSERT_OK(neuronmem_test::Write(bt, row * 128, rows[i].data(), 128, nullptr, 0, &ev));
    events.push_back(ev);
  }
  std::vector<int32_t> out(64 * 32);
  neuronmem_event_t* read_ev = nullptr;
  ASSERT_OK(neuronmem_test::Read(bt, 0, out.data(), out.size() * 4, nullptr, 0, &read_ev));
  ASSERT_OK(neuronmem_event_wait(read_ev, -1));
  // Every earlier event on the queue completed before the read's.
  for (auto* ev : events) {
    bool r = false;
    ASSERT_OK(neuronmem_event_is_ready(ev, &r));
    EXPECT_TRUE(r);
    neuronmem_event_destroy(ev);
  }
  bool r = false;
  ASSERT_OK(neuronmem_event_is_ready(big_ready, &r));
  EXPECT_TRUE(r);
  for (int row = 0; row < 64; ++row) {
    const int last = row + 64 * ((199 - row) / 64);  // the last write to this row
    for (int c = 0; c < 32; ++c) ASSERT_EQ(out[row * 32 + c], last * 1000 + c) << row;
  }
  neuronmem_event_destroy(read_ev);
  neuronmem_event_destroy(big_ready);
  neuronmem_buffer_destroy(bigbuf);
  neuronmem_buffer_destroy(bt);
}

struct CallbackCount {
  std::atomic<int> calls{0};
  std::atomic<int> errors{0};
};
void CountCallback(const neuronmem_status_t* error, void* user_data) {
  auto* c = static_cast<CallbackCount*>(user_data);
  c->calls.fetch_add(1);
  if (error) c->errors.fetch_add(1);
}

// A fake offered work item: Help() records who ran it and finishes the event, as a large copy would.
class RecordingWork final : public neuronmem::HelpWork {
 public:
  explicit RecordingWork(neuronmem_event_t* done) : done_(done) {}
  void Help() override {
    helper = std::this_thread::get_id();
    ++helps;
    neuronmem::Complete(done_, nullptr);
  }
  void Ref() override { ++refs; }
  void Unref() override { --refs; }
  std::thread::id helper;
  std::atomic<int> helps{0};
  std::atomic<int> refs{0};

 private:
  neuronmem_event_t* done_;
};

TEST(EventHelp, AWaitWithoutTimeoutRunsOfferedWorkOnTheWaitingThread) {
  neuronmem_event_t* e = neuronmem::NewEvent();
  RecordingWork work(e);
  neuronmem::OfferHelp(e, &work);
  EXPECT_EQ(work.refs, 1) << "the event holds the offered work";
  // A wait with a timeout never helps (it could overrun its deadline) and times out.
  EXPECT_FALSE(neuronmem::Wait(e, 1000000));
  EXPECT_EQ(work.helps, 0);
  // A wait without timeout runs the work on this thread, which completes the event.
  EXPECT_TRUE(neuronmem::Wait(e, -1));
  EXPECT_EQ(work.helps, 1);
  EXPECT_EQ(work.helper, std::this_thread::get_id());
  neuronmem::WithdrawHelp(e, &work);
  EXPECT_EQ(work.refs, 0) << "withdrawing drops the event's reference; the waiter dropped its own";
  neuronmem_event_destroy(e);
}

TEST_F(CopyTest, WaitingThreadHelpsWithALargeAsynchronousCopy) {
  // copy_to_memory runs on the queue's worker; the waiter claims chunks of the same copy. Every byte must
  // arrive exactly once whoever copied it (ThreadSanitizer checks the hand-offs in the 'concurrency' run).
  auto data = Pattern((48u << 20) + 5, 7);
  auto a = Args(data.data(), data.size(), Mem(0));
  neuronmem_buffer_t* src = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &src, nullptr, nullptr));
  for (int dst_id : {2, 3}) {
    neuronmem_buffer_t* dst = nullptr;
    neuronmem_event_t* ready = nullptr;
    ASSERT_OK(neuronmem_test::CopyToMemory(src, Mem(dst_id), nullptr, 0, &dst, &ready));
    ASSERT_OK(neuronmem_event_wait(ready, -1));
    neuronmem_event_destroy(ready);
    std::vector<uint8_t> out(data.size());
    ASSERT_OK(neuronmem_test::Read(dst, 0, out.data(), out.size(), nullptr, 0, nullptr));
    EXPECT_TRUE(out == data) << "memory " << dst_id;
    neuronmem_buffer_destroy(dst);
  }
  neuronmem_buffer_destroy(src);
}

TEST_F(CopyTest, UserEventsGateTransfersAndPassTheirErrorOn) {
  // upload -> (the frontend's own work, a user event) -> download: the download waits for the event.
  const std::vector<uint8_t> data = Pattern(4096, 11);
  auto a = Args(data.data(), data.size(), Mem(0));
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  neuronmem_event_t* executed = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &executed));
  std::vector<uint8_t> out(4096, 0);
  neuronmem_event_t* read = nullptr;
  ASSERT_OK(neuronmem_test::Read(b, 0, out.data(), out.size(), &executed, 1, &read));
  bool ready = true;
  ASSERT_OK(neuronmem_event_is_ready(read, &ready));
  EXPECT_FALSE(ready) << "the read must wait for the user event";
  EXPECT_EQ(Take(neuronmem_event_wait(read, 20 * 1000 * 1000)).code, NEURONMEM_STATUS_DEADLINE_EXCEEDED);
  ASSERT_OK(neuronmem_event_complete(executed, nullptr));
  ASSERT_OK(neuronmem_event_wait(read, -1));
  EXPECT_TRUE(out == data);
  // Completing twice, or completing an event the library owns, is refused.
  EXPECT_EQ(Take(neuronmem_event_complete(executed, nullptr)).code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  Result r = Take(neuronmem_event_complete(read, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("neuronmem_event_create"), std::string::npos) << r.message;
  EXPECT_EQ(Take(neuronmem_event_complete(nullptr, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_event_create(client_, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_event_t* none = nullptr;
  EXPECT_EQ(Take(neuronmem_event_create(nullptr, &none)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_event_destroy(read);
  neuronmem_event_destroy(executed);

  // A user event completed with an error fails the transfers waiting on it, with the error's code, and
  // leaves the destination untouched.
  neuronmem_event_t* failed = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &failed));
  std::vector<uint8_t> untouched(4096, 0xEE);
  ASSERT_OK(neuronmem_test::Read(b, 0, untouched.data(), untouched.size(), &failed, 1, &read));
  neuronmem_status_t* err = nullptr;
  {
    // Any status object will do as the error; take one from a call that fails.
    err = neuronmem_test::Read(b, 1u << 20, untouched.data(), 1, nullptr, 0, nullptr);
    ASSERT_NE(err, nullptr);
  }
  const neuronmem_status_code_t code = neuronmem_status_code(err);
  ASSERT_OK(neuronmem_event_complete(failed, err));
  neuronmem_status_free(err);  // borrowed by complete
  r = Take(neuronmem_event_wait(read, -1));
  EXPECT_EQ(r.code, code);
  EXPECT_NE(r.message.find("a dependency failed"), std::string::npos) << r.message;
  EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](uint8_t v) { return v == 0xEE; }));
  neuronmem_event_destroy(read);
  neuronmem_event_destroy(failed);
  neuronmem_buffer_destroy(b);
}

TEST_F(CopyTest, DroppedUserEventsCancelWhatWaitsOnThem) {
  int64_t dims[1] = {256};
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_test::Allocate(client_, Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  neuronmem_event_t* never = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &never));
  std::vector<uint8_t> out(256);
  neuronmem_event_t* read = nullptr;
  ASSERT_OK(neuronmem_test::Read(b, 0, out.data(), out.size(), &never, 1, &read));
  neuronmem_event_destroy(never);  // the only handle: nobody can complete it now
  Result r = Take(neuronmem_event_wait(read, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_CANCELLED) << r.message;
  EXPECT_NE(r.message.find("destroyed before it was completed"), std::string::npos) << r.message;
  neuronmem_event_destroy(read);
  neuronmem_buffer_destroy(b);
}

TEST(UserEvents, DestroyingTheClientCancelsPendingUserEventsInsteadOfHanging) {
  neuronmem_client_t* client = nullptr;
  ASSERT_OK(neuronmem_test::CreateSmallClient(8u << 20, &client));
  neuronmem_memory_t* hbm = nullptr;
  ASSERT_OK(neuronmem_client_lookup_memory(client, 0, &hbm));
  int64_t dims[1] = {64};
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_test::Allocate(client, hbm, NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  neuronmem_event_t* pending = nullptr;
  ASSERT_OK(neuronmem_event_create(client, &pending));
  std::vector<uint8_t> out(64);
  neuronmem_event_t* read = nullptr;
  ASSERT_OK(neuronmem_test::Read(b, 0, out.data(), out.size(), &pending, 1, &read));
  neuronmem_buffer_destroy(b);
  // Returns (the queue drains: the read fails) although the caller still holds the uncompleted event.
  EXPECT_OK(neuronmem_client_destroy(client));
  Result r = Take(neuronmem_event_wait(read, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_CANCELLED) << r.message;
  EXPECT_NE(r.message.find("client was destroyed"), std::string::npos) << r.message;
  // The events outlive the client; completing the cancelled one is refused, destroying it is fine.
  EXPECT_EQ(Take(neuronmem_event_complete(pending, nullptr)).code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  neuronmem_event_destroy(pending);
  neuronmem_event_destroy(read);
}

TEST_F(CopyTest, EventChainsAndCallbacksRunExactlyOnce) {
  // upload (core 0) -> copy to core 1 -> download, each waiting on the previous event, nothing blocking.
  auto data = Pattern(16u << 20, 5);
  auto a = Args(data.data(), data.size(), Mem(0));
  neuronmem_buffer_t* up = nullptr;
  neuronmem_event_t* e1 = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &up, &e1, nullptr));
  neuronmem_buffer_t* moved = nullptr;
  neuronmem_event_t* e2 = nullptr;
  ASSERT_OK(neuronmem_test::CopyToMemory(up, Mem(2), &e1, 1, &moved, &e2));
  std::vector<uint8_t> out(data.size());
  neuronmem_event_t* e3 = nullptr;
  ASSERT_OK(neuronmem_test::Read(moved, 0, out.data(), out.size(), &e2, 1, &e3));
  CallbackCount before_done, after_done;
  ASSERT_OK(neuronmem_event_on_ready(e3, CountCallback, &before_done));
  ASSERT_OK(neuronmem_event_wait(e3, -1));
  EXPECT_EQ(out, data);
  ASSERT_OK(neuronmem_event_on_ready(e3, CountCallback, &after_done));  // already ready: runs now
  EXPECT_EQ(after_done.calls.load(), 1);
  // The callback registered before completion may run on a worker just after wait returns.
  for (int i = 0; i < 1000 && before_done.calls.load() == 0; ++i) usleep(1000);
  EXPECT_EQ(before_done.calls.load(), 1);
  EXPECT_EQ(before_done.errors.load(), 0);
  usleep(10000);
  EXPECT_EQ(before_done.calls.load(), 1);
  EXPECT_EQ(after_done.calls.load(), 1);
  for (auto* e : {e1, e2, e3}) neuronmem_event_destroy(e);
  neuronmem_buffer_destroy(up);
  neuronmem_buffer_destroy(moved);
}

TEST_F(CopyTest, WaitWithTimeoutAndErrorQueries) {
  auto data = Pattern(64u << 20, 9);
  auto a = Args(data.data(), data.size(), Mem(0));
  neuronmem_buffer_t* b = nullptr;
  neuronmem_event_t* e = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, &e, nullptr));
  neuronmem_status_t* err = nullptr;
  bool ready = false;
  ASSERT_OK(neuronmem_event_is_ready(e, &ready));
  if (!ready) {
    Result r = Take(neuronmem_event_error(e, &err));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
    r = Take(neuronmem_event_wait(e, 1000));  // 1 us: a 64 MiB upload is not done yet
    EXPECT_TRUE(r.code == NEURONMEM_STATUS_DEADLINE_EXCEEDED || r.code == NEURONMEM_STATUS_OK) << r.message;
  }
  ASSERT_OK(neuronmem_event_wait(e, 10ll * 1000 * 1000 * 1000));
  ASSERT_OK(neuronmem_event_error(e, &err));
  EXPECT_EQ(err, nullptr);
  neuronmem_event_destroy(e);
  neuronmem_buffer_destroy(b);
}

TEST_F(CopyTest, DeletedBuffersAndOutOfRangeGiveStatuses) {
  auto data = Pattern(1000, 2);
  neuronmem_buffer_t* b = Upload(data, Mem(0));
  uint8_t tmp[16];
  Result r = Take(neuronmem_test::Read(b, 995, tmp, 10, nullptr, 0, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_OUT_OF_RANGE);
  EXPECT_NE(r.message.find("past the end"), std::string::npos) << r.message;
  EXPECT_EQ(Take(neuronmem_test::Write(b, UINT64_MAX, tmp, 2, nullptr, 0, nullptr)).code,
            NEURONMEM_STATUS_OUT_OF_RANGE);
  neuronmem_memory_stats_t st{};
  st.struct_size = sizeof st;
  ASSERT_OK(neuronmem_memory_stats(Mem(0), &st));
  const uint64_t live_before = st.live_allocations;
  ASSERT_OK(neuronmem_buffer_delete(b));
  ASSERT_OK(neuronmem_memory_stats(Mem(0), &st));
  EXPECT_EQ(st.live_allocations, live_before - 1) << "delete releases the memory when nothing is pending";
  bool deleted = false;
  ASSERT_OK(neuronmem_buffer_is_deleted(b, &deleted));
  EXPECT_TRUE(deleted);
  r = Take(neuronmem_test::Read(b, 0, tmp, 1, nullptr, 0, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("deleted"), std::string::npos);
  EXPECT_EQ(Take(neuronmem_test::Write(b, 0, tmp, 1, nullptr, 0, nullptr)).code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  neuronmem_buffer_t* c = nullptr;
  EXPECT_EQ(Take(neuronmem_test::CopyToMemory(b, Mem(1), nullptr, 0, &c, nullptr)).code,
            NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(c, nullptr);
  ASSERT_OK(neuronmem_buffer_delete(b));  // twice is a no-op
  neuronmem_buffer_destroy(b);
  neuronmem_buffer_destroy(nullptr);
}

TEST_F(CopyTest, DeleteWhileATransferIsPendingWaitsForIt) {
  // A read that waits on an event the test holds pending is queued; the buffer is deleted before the event
  // fires. The read then fails cleanly and never touches freed memory, and the memory goes back only
  // after it has run.
  neuronmem_event_t* gate = nullptr;  // a pending event the test completes
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  neuronmem_buffer_t* target = nullptr;
  int64_t dims[1] = {4096};
  ASSERT_OK(neuronmem_test::Allocate(client_, Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &target));
  std::vector<uint8_t> out(4096);
  neuronmem_event_t* re = nullptr;
  ASSERT_OK(neuronmem_test::Read(target, 0, out.data(), 4096, &gate, 1, &re));
  ASSERT_OK(neuronmem_buffer_delete(target));
  neuronmem_memory_stats_t st{};
  st.struct_size = sizeof st;
  ASSERT_OK(neuronmem_memory_stats(Mem(0), &st));
  EXPECT_EQ(st.live_allocations, 1u) << "the pending read still holds the memory";
  bool ready = true;
  ASSERT_OK(neuronmem_event_is_ready(re, &ready));
  EXPECT_FALSE(ready);
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  Result r = Take(neuronmem_event_wait(re, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.message;
  EXPECT_NE(r.message.find("deleted before the transfer ran"), std::string::npos) << r.message;
  ASSERT_OK(neuronmem_memory_stats(Mem(0), &st));
  EXPECT_EQ(st.live_allocations, 0u);
  neuronmem_event_destroy(re);
  neuronmem_event_destroy(gate);
  neuronmem_buffer_destroy(target);
}

TEST_F(CopyTest, InjectedFaultsFailTheEventKeepTheSourceAndLaterTransfersWork) {
  auto data = Pattern(8192, 4);
  neuronmem_buffer_t* src = Upload(data, Mem(0));
  neuronmem::fault::Arm(neuronmem::fault::Site::kTransfer, 1);
  neuronmem_buffer_t* dst = nullptr;
  neuronmem_event_t* e = nullptr;
  ASSERT_OK(neuronmem_test::CopyToMemory(src, Mem(2), nullptr, 0, &dst, &e));
  Result r = Take(neuronmem_event_wait(e, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INTERNAL);
  EXPECT_NE(r.message.find("injected fault"), std::string::npos);
  neuronmem_status_t* err = nullptr;
  ASSERT_OK(neuronmem_event_error(e, &err));
  EXPECT_EQ(neuronmem_status_code(err), NEURONMEM_STATUS_INTERNAL);
  neuronmem_status_free(err);
  // A read that depends on the failed copy fails too, with the cause in its message.
  uint8_t b;
  neuronmem_event_t* e2 = nullptr;
  ASSERT_OK(neuronmem_test::Read(dst, 0, &b, 1, nullptr, 0, &e2));
  r = Take(neuronmem_event_wait(e2, -1));
  EXPECT_NE(r.message.find("dependency failed"), std::string::npos) << r.message;
  EXPECT_EQ(Download(src), data) << "the source is never modified";
  // Later transfers on the queue still run.
  neuronmem_buffer_t* again = nullptr;
  neuronmem_event_t* e3 = nullptr;
  ASSERT_OK(neuronmem_test::CopyToMemory(src, Mem(2), nullptr, 0, &again, &e3));
  ASSERT_OK(neuronmem_event_wait(e3, -1));
  EXPECT_EQ(Download(again), data);
  for (auto* ev : {e, e2, e3}) neuronmem_event_destroy(ev);
  for (auto* bb : {src, dst, again}) neuronmem_buffer_destroy(bb);
}

TEST_F(CopyTest, QueuedFaultAlsoFailsOnlyItsOwnTransfer) {
  auto big = Pattern(32u << 20, 8);
  auto a = Args(big.data(), big.size(), Mem(0));
  neuronmem_buffer_t* b1 = nullptr;
  neuronmem_event_t* e1 = nullptr;
  neuronmem::fault::Arm(neuronmem::fault::Site::kTransfer, 1);  // hits the large (queued) upload
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b1, &e1, nullptr));
  auto small = Pattern(100, 1);
  auto a2 = Args(small.data(), small.size(), Mem(0));
  neuronmem_buffer_t* b2 = nullptr;
  neuronmem_event_t* e2 = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a2, &b2, &e2, nullptr));
  EXPECT_EQ(Take(neuronmem_event_wait(e1, -1)).code, NEURONMEM_STATUS_INTERNAL);
  EXPECT_OK(neuronmem_event_wait(e2, -1));
  EXPECT_EQ(Download(b2), small);
  neuronmem_event_destroy(e1);
  neuronmem_event_destroy(e2);
  neuronmem_buffer_destroy(b1);
  neuronmem_buffer_destroy(b2);
}

TEST_F(CopyTest, ChunkedUploadStreamsIntoAPreCreatedBuffer) {
  auto data = Pattern(10u << 20, 6);
  int64_t dims[1] = {static_cast<int64_t>(data.size())};
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_test::Allocate(client_, Mem(2), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  const uint64_t chunk = 3u << 20;
  std::vector<neuronmem_event_t*> evs;
  for (uint64_t off = 0; off < data.size(); off += chunk) {
    const uint64_t n = std::min<uint64_t>(chunk, data.size() - off);
    neuronmem_event_t* e = nullptr;
    ASSERT_OK(neuronmem_test::UploadChunk(b, off, data.data() + off, n, off + n == data.size(), nullptr, 0, &e));
    evs.push_back(e);
  }
  neuronmem_event_t* def = nullptr;
  ASSERT_OK(neuronmem_buffer_ready_event(b, &def));
  ASSERT_OK(neuronmem_event_wait(def, -1));
  // A chunk can wait for other work: this one rewrites the first bytes only after `gate` fires.
  neuronmem_buffer_t* b2 = nullptr;
  ASSERT_OK(neuronmem_test::Allocate(client_, Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b2));
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  neuronmem_event_t* gated = nullptr;
  ASSERT_OK(neuronmem_test::UploadChunk(b2, 0, data.data(), data.size(), 1, &gate, 1, &gated));
  bool gated_ready = true;
  ASSERT_OK(neuronmem_event_is_ready(gated, &gated_ready));
  EXPECT_FALSE(gated_ready);
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  ASSERT_OK(neuronmem_event_wait(gated, -1));
  EXPECT_EQ(Download(b2), data);
  neuronmem_event_destroy(gated);
  neuronmem_event_destroy(gate);
  neuronmem_buffer_destroy(b2);
  for (auto* e : evs) {
    bool r = false;
    ASSERT_OK(neuronmem_event_is_ready(e, &r));
    EXPECT_TRUE(r);
    neuronmem_event_destroy(e);
  }
  EXPECT_EQ(Download(b), data);
  Result r = Take(neuronmem_test::UploadChunk(b, 0, data.data(), 1, 0, nullptr, 0, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(Take(neuronmem_test::UploadChunk(b, data.size(), data.data(), 1, 1, nullptr, 0, nullptr)).code,
            NEURONMEM_STATUS_OUT_OF_RANGE);
  neuronmem_event_destroy(def);
  neuronmem_buffer_destroy(b);
}

TEST_F(CopyTest, FileLoadsIntoEveryKind) {
  char path[] = "/tmp/neuronmem-load-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  auto data = Pattern((20u << 20) + 13, 7);
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  close(fd);
  for (int id : {0, 1, 3, 5}) {
    int64_t dims[1] = {static_cast<int64_t>(data.size() - 1000)};
    neuronmem_buffer_t* b = nullptr;
    ASSERT_OK(neuronmem_test::Allocate(client_, Mem(id), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
    neuronmem_event_t* e = nullptr;
    ASSERT_OK(neuronmem_test::LoadFile(b, path, 1000, data.size() - 1000, 0, nullptr, 0, &e));
    ASSERT_OK(neuronmem_event_wait(e, -1));
    neuronmem_event_destroy(e);
    auto out = Download(b);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), data.begin() + 1000)) << id;
    // Statuses for bad ranges and files.
    Result r = Take(neuronmem_test::LoadFile(b, path, data.size() - 10, 20, 0, nullptr, 0, nullptr));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_OUT_OF_RANGE);
    EXPECT_NE(r.message.find("past its end"), std::string::npos) << r.message;
    r = Take(neuronmem_test::LoadFile(b, "/nonexistent/weights.bin", 0, 10, 0, nullptr, 0, nullptr));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_NOT_FOUND);
    EXPECT_NE(r.message.find("/nonexistent/weights.bin"), std::string::npos);
    r = Take(neuronmem_test::LoadFile(b, path, 0, 10, dims[0] - 5, nullptr, 0, nullptr));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_OUT_OF_RANGE);
    neuronmem_buffer_destroy(b);
  }
  // A short file: the requested range is past its end.
  char short_path[] = "/tmp/neuronmem-short-XXXXXX";
  fd = mkstemp(short_path);
  ASSERT_EQ(write(fd, "abc", 3), 3);
  close(fd);
  int64_t dims[1] = {16};
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_test::Allocate(client_, Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  EXPECT_EQ(Take(neuronmem_test::LoadFile(b, short_path, 0, 16, 0, nullptr, 0, nullptr)).code,
            NEURONMEM_STATUS_OUT_OF_RANGE);
  ASSERT_OK(neuronmem_test::LoadFile(b, short_path, 0, 3, 0, nullptr, 0, nullptr));
  uint8_t got[3];
  ASSERT_OK(neuronmem_test::Read(b, 0, got, 3, nullptr, 0, nullptr));
  EXPECT_EQ(std::memcmp(got, "abc", 3), 0);
  neuronmem_buffer_destroy(b);
  unlink(path);
  unlink(short_path);
}

TEST_F(CopyTest, BatchUploadCreatesEveryBufferWithOneEvent) {
  std::vector<std::vector<uint8_t>> datas;
  std::vector<neuronmem_buffer_from_host_args_t> args;
  std::vector<int64_t> dims(6);
  for (int i = 0; i < 6; ++i) datas.push_back(Pattern(1000 * (i + 1) + (i == 5 ? (8u << 20) : 0), 40 + i));
  for (int i = 0; i < 6; ++i) {
    dims[i] = static_cast<int64_t>(datas[i].size());
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = sizeof a;
    a.data = datas[i].data();
    a.element_type = NEURONMEM_ELEMENT_TYPE_U8;
    a.dims = &dims[i];
    a.num_dims = 1;
    a.memory = Mem(i);
    args.push_back(a);
  }
  std::vector<neuronmem_buffer_t*> bufs(6);
  neuronmem_event_t* e = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host_batch(client_, args.data(), args.size(), bufs.data(), &e));
  ASSERT_OK(neuronmem_event_wait(e, -1));
  for (int i = 0; i < 6; ++i) {
    neuronmem_memory_t* m = nullptr;
    ASSERT_OK(neuronmem_buffer_memory(bufs[i], &m));
    EXPECT_EQ(m, Mem(i));
    EXPECT_EQ(Download(bufs[i]), datas[i]);
    neuronmem_buffer_destroy(bufs[i]);
  }
  neuronmem_event_destroy(e);
  // A bad element anywhere fails the whole batch and creates nothing.
  args[3].element_type = static_cast<neuronmem_element_type_t>(99);
  Result r = Take(neuronmem_buffer_from_host_batch(client_, args.data(), args.size(), bufs.data(), &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("args[3]"), std::string::npos) << r.message;
  for (auto* b : bufs) EXPECT_EQ(b, nullptr);
  neuronmem_memory_stats_t st{};
  st.struct_size = sizeof st;
  ASSERT_OK(neuronmem_memory_stats(Mem(0), &st));
  EXPECT_EQ(st.live_allocations, 0u);
}

TEST_F(CopyTest, BadArgumentsAreInvalidArgument) {
  std::vector<uint8_t> d(8);
  auto a = Args(d.data(), 8, Mem(0));
  neuronmem_buffer_t* b = reinterpret_cast<neuronmem_buffer_t*>(1);
  EXPECT_EQ(Take(neuronmem_buffer_from_host(nullptr, &a, &b, nullptr, nullptr)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(b, nullptr);
  a.struct_size = 8;
  EXPECT_EQ(Take(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  a = Args(d.data(), 8, Mem(0));
  a.element_type = static_cast<neuronmem_element_type_t>(30);  // the first value not (yet) defined
  EXPECT_EQ(Take(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  a = Args(d.data(), 8, Mem(0));
  int64_t neg[1] = {-1};
  a.dims = neg;
  Result r = Take(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("dims[0]"), std::string::npos) << r.message;
  int64_t huge[3] = {1ll << 40, 1ll << 40, 1ll << 40};
  a.dims = huge;
  a.num_dims = 3;
  r = Take(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  EXPECT_NE(r.message.find("overflows"), std::string::npos) << r.message;
  a = Args(nullptr, 8, Mem(0));
  EXPECT_EQ(Take(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  a = Args(d.data(), 8, Mem(0));
  a.num_dims = NEURONMEM_MAX_RANK + 1;
  EXPECT_EQ(Take(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  // A memory of another client.
  neuronmem_client_t* other = nullptr;
  ASSERT_OK(neuronmem_test::CreateSmallClient(2u << 20, &other));
  neuronmem_memory_t* foreign = nullptr;
  ASSERT_OK(neuronmem_client_lookup_memory(other, 0, &foreign));
  a = Args(d.data(), 8, foreign);
  r = Take(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("another client"), std::string::npos) << r.message;
  EXPECT_OK(neuronmem_client_destroy(other));
  // Device memory exhaustion names the memory.
  std::vector<uint8_t> big(200u << 20);
  a = Args(big.data(), big.size(), Mem(2));
  r = Take(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_NE(r.message.find("NeuronMemory(id=2, kind=device)"), std::string::npos) << r.message;
  neuronmem_event_t* ev = nullptr;
  EXPECT_EQ(Take(neuronmem_event_wait(nullptr, 0)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_event_on_ready(ev, CountCallback, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_event_destroy(nullptr);
  EXPECT_EQ(neuronmem_element_type_size(NEURONMEM_ELEMENT_TYPE_BF16), 2u);
  EXPECT_EQ(neuronmem_element_type_size(static_cast<neuronmem_element_type_t>(77)), 0u);
}

TEST(CopyClient, DestroyWithLiveBuffersIsRefusedAndEverythingStaysUsable) {
  // Issue 13 item 7: the client used to be destroyed anyway, and calls on the orphaned buffer touched freed
  // memory (ASan). Now nothing is destroyed until the buffers are (docs/ownership.md).
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_test::CreateSmallClient(4u << 20, &c));
  neuronmem_memory_t* m = nullptr;
  ASSERT_OK(neuronmem_client_lookup_memory(c, 0, &m));
  int64_t dims[1] = {1000};
  neuronmem_buffer_t* b = nullptr;
  neuronmem_buffer_t* deleted = nullptr;
  ASSERT_OK(neuronmem_test::Allocate(c, m, NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  ASSERT_OK(neuronmem_test::Allocate(c, m, NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &deleted));
  ASSERT_OK(neuronmem_buffer_delete(deleted));  // deleted but not destroyed: the handle still counts
  Result r = Take(neuronmem_client_destroy(c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("still has 2 buffer(s)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("not destroyed"), std::string::npos) << r.message;
  // Every call on the buffers and the client works as before (ASan sees no freed memory touched).
  std::vector<uint8_t> data(1000, 0x3C), out(1000, 0);
  ASSERT_OK(neuronmem_test::Write(b, 0, data.data(), data.size(), nullptr, 0, nullptr));
  ASSERT_OK(neuronmem_test::Read(b, 0, out.data(), out.size(), nullptr, 0, nullptr));
  EXPECT_EQ(out, data);
  neuronmem_device_t* dev = nullptr;
  ASSERT_OK(neuronmem_buffer_device(b, &dev));
  EXPECT_NE(dev, nullptr);
  bool is_deleted = false;
  ASSERT_OK(neuronmem_buffer_is_deleted(deleted, &is_deleted));
  EXPECT_TRUE(is_deleted);
  ASSERT_OK(neuronmem_buffer_is_deleted(b, &is_deleted));
  EXPECT_FALSE(is_deleted);
  neuronmem_buffer_destroy(deleted);
  EXPECT_EQ(Take(neuronmem_client_destroy(c)).code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  neuronmem_buffer_destroy(b);
  EXPECT_OK(neuronmem_client_destroy(c));
}

TEST(CopyStress, ThreadsUploadAndDownloadConcurrently) {
  neuronmem_client_options_t o{};
  o.struct_size = sizeof o;
  o.num_cores = 2;
  o.device_bytes_per_core = 64u << 20;
  o.pinned_host_bytes = 64u << 20;
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_client_create(&o, &c));
  neuronmem_memory_t* mems[6];
  for (int i = 0; i < 6; ++i) ASSERT_OK(neuronmem_client_lookup_memory(c, i, &mems[i]));
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 150; ++i) {
        const size_t size = (rng() % 4 == 0) ? (1u << 20) + rng() % 1000 : 1 + rng() % 5000;
        auto data = Pattern(size, static_cast<uint32_t>(t * 1000 + i));
        int64_t dims[1] = {static_cast<int64_t>(size)};
        neuronmem_buffer_from_host_args_t a{};
        a.struct_size = sizeof a;
        a.data = data.data();
        a.element_type = NEURONMEM_ELEMENT_TYPE_U8;
        a.dims = dims;
        a.num_dims = 1;
        a.memory = mems[rng() % 6];
        neuronmem_buffer_t* b = nullptr;
        neuronmem_event_t* e = nullptr;
        if (neuronmem_status_t* s = neuronmem_buffer_from_host(c, &a, &b, &e, nullptr)) {
          neuronmem_status_free(s);
          failures++;
          continue;
        }
        neuronmem_buffer_t* b2 = nullptr;
        neuronmem_event_t* e2 = nullptr;
        if (neuronmem_status_t* s = neuronmem_test::CopyToMemory(b, mems[rng() % 6], &e, 1, &b2, &e2)) {
          neuronmem_status_free(s);
          failures++;
        } else {
          std::vector<uint8_t> out(size);
          neuronmem_status_t* s2 = neuronmem_test::Read(b2, 0, out.data(), size, &e2, 1, nullptr);
          if (s2) {
            neuronmem_status_free(s2);
            failures++;
          } else if (out != data) {
            mismatches++;
          }
          neuronmem_event_destroy(e2);
          neuronmem_buffer_destroy(b2);
        }
        neuronmem_event_destroy(e);
        neuronmem_buffer_destroy(b);
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_OK(neuronmem_client_destroy(c));
}

}  // namespace

namespace {

// What a callback saw when it tried the calls that may block (issue 13: a callback that blocked on the
// library deadlocked its queue with no diagnostic).
struct BlockingProbe {
  neuronmem_client_t* client = nullptr;
  neuronmem_buffer_t* buffer = nullptr;
  neuronmem_event_t* pending = nullptr;  // never ready while the callback runs
  neuronmem_event_t* ready = nullptr;
  std::vector<uint8_t> out = std::vector<uint8_t>(64, 0);
  neuronmem_event_t* async_read = nullptr;
  Result wait_pending, poll_pending, wait_ready, sync_read, sync_write, sync_chunk, sync_load, async, destroy;
  std::atomic<bool> ran{false};
};

void ProbeBlockingCalls(const neuronmem_status_t* /*error*/, void* user_data) {
  auto* p = static_cast<BlockingProbe*>(user_data);
  p->wait_pending = Take(neuronmem_event_wait(p->pending, -1));
  p->poll_pending = Take(neuronmem_event_wait(p->pending, 0));
  p->wait_ready = Take(neuronmem_event_wait(p->ready, -1));
  p->sync_read = Take(neuronmem_test::Read(p->buffer, 0, p->out.data(), p->out.size(), nullptr, 0, nullptr));
  const uint8_t byte = 7;
  p->sync_write = Take(neuronmem_test::Write(p->buffer, 0, &byte, 1, nullptr, 0, nullptr));
  p->sync_chunk = Take(neuronmem_test::UploadChunk(p->buffer, 0, &byte, 1, false, nullptr, 0, nullptr));
  p->sync_load = Take(neuronmem_test::LoadFile(p->buffer, "/proc/self/exe", 0, 1, 0, nullptr, 0, nullptr));
  p->async = Take(neuronmem_test::Read(p->buffer, 0, p->out.data(), p->out.size(), nullptr, 0, &p->async_read));
  p->destroy = Take(neuronmem_client_destroy(p->client));
  p->ran = true;
}

void ExpectRefusedInCallback(const Result& r, const char* call) {
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << call << ": " << r.message;
  EXPECT_NE(r.message.find("inside an event callback"), std::string::npos) << call << ": " << r.message;
}

void ExpectProbe(const BlockingProbe& p, const std::vector<uint8_t>& data) {
  ASSERT_TRUE(p.ran.load());
  ExpectRefusedInCallback(p.wait_pending, "wait on a pending event");
  EXPECT_EQ(p.poll_pending.code, NEURONMEM_STATUS_DEADLINE_EXCEEDED) << p.poll_pending.message;  // a poll is fine
  EXPECT_EQ(p.wait_ready.code, NEURONMEM_STATUS_OK) << p.wait_ready.message;                     // nothing to wait for
  ExpectRefusedInCallback(p.sync_read, "synchronous read");
  ExpectRefusedInCallback(p.sync_write, "synchronous write");
  ExpectRefusedInCallback(p.sync_chunk, "synchronous chunk");
  ExpectRefusedInCallback(p.sync_load, "synchronous file load");
  ExpectRefusedInCallback(p.destroy, "client destroy");
  ASSERT_EQ(p.async.code, NEURONMEM_STATUS_OK) << p.async.message;  // with an out event: allowed
  ASSERT_NE(p.async_read, nullptr);
  // Outside the callback the same thread may block again; the refused calls changed nothing.
  ASSERT_OK(neuronmem_event_wait(p.async_read, -1));
  EXPECT_TRUE(std::equal(p.out.begin(), p.out.end(), data.begin()));
}

}  // namespace

TEST_F(CopyTest, BlockingCallsInsideACallbackAreRefused) {
  auto data = Pattern(64, 5);
  auto a = Args(data.data(), data.size(), Mem(0));
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  neuronmem_event_t* gate = nullptr;
  neuronmem_event_t* pending = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  ASSERT_OK(neuronmem_event_create(client_, &pending));
  neuronmem_event_t* ready = nullptr;
  ASSERT_OK(neuronmem_buffer_ready_event(b, &ready));

  // 1. A callback run by the thread that completes a caller's event.
  BlockingProbe on_completer;
  on_completer.client = client_;
  on_completer.buffer = b;
  on_completer.pending = pending;
  on_completer.ready = ready;
  ASSERT_OK(neuronmem_event_on_ready(gate, ProbeBlockingCalls, &on_completer));
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  ExpectProbe(on_completer, data);
  // After the callback this thread blocks normally again.
  std::vector<uint8_t> back(64);
  ASSERT_OK(neuronmem_test::Read(b, 0, back.data(), back.size(), nullptr, 0, nullptr));
  EXPECT_EQ(back, data);

  // 2. A callback run by the copy engine's worker (a transfer queued behind a caller's event completes there
  // or on the completing thread): the deadlock case; the calls are refused wherever the callback runs.
  neuronmem_event_t* gate2 = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate2));
  std::vector<uint8_t> sink(64);
  neuronmem_event_t* queued = nullptr;
  ASSERT_OK(neuronmem_test::Read(b, 0, sink.data(), sink.size(), &gate2, 1, &queued));
  BlockingProbe on_worker;
  on_worker.client = client_;
  on_worker.buffer = b;
  on_worker.pending = pending;
  on_worker.ready = ready;
  ASSERT_OK(neuronmem_event_on_ready(queued, ProbeBlockingCalls, &on_worker));
  std::thread completer([gate2] { EXPECT_OK(neuronmem_event_complete(gate2, nullptr)); });
  completer.join();
  ASSERT_OK(neuronmem_event_wait(queued, -1));
  for (int i = 0; i < 2000 && !on_worker.ran.load(); ++i) usleep(1000);  // may run just after wait returns
  ExpectProbe(on_worker, data);

  ASSERT_OK(neuronmem_event_complete(pending, nullptr));
  for (auto* e : {gate, gate2, pending, ready, queued, on_completer.async_read, on_worker.async_read}) {
    neuronmem_event_destroy(e);
  }
  neuronmem_buffer_destroy(b);
}
