// Regressions of hostile use: each test failed, hung or tripped a sanitizer before its fix.
#include <neuronmem/neuronmem.h>

#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/client_helpers.h"
#include "common/status_helpers.h"
#include "common/transfer_helpers.h"

namespace {

using neuronmem_test::Result;
using neuronmem_test::Take;

class ReliabilityTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(neuronmem_test::CreateSmallClient(8u << 20, &client_)); }
  void TearDown() override { EXPECT_OK(neuronmem_client_destroy(client_)); }

  neuronmem_memory_t* Mem(int id) {
    neuronmem_memory_t* m = nullptr;
    EXPECT_OK(neuronmem_client_lookup_memory(client_, id, &m));
    return m;
  }
  neuronmem_buffer_t* Allocate(int memory_id, int64_t bytes) {
    int64_t dims[1] = {bytes};
    neuronmem_buffer_t* b = nullptr;
    EXPECT_OK(neuronmem_test::Allocate(client_, Mem(memory_id), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
    return b;
  }

  neuronmem_client_t* client_ = nullptr;
};

// Arguments of a one-dimensional u8 upload of `dims[0]` bytes (dims must outlive the call).
neuronmem_buffer_from_host_args_t U8Args(const void* data, const int64_t* dims, size_t num_dims,
                                         neuronmem_memory_t* memory, neuronmem_host_buffer_semantics_t semantics) {
  neuronmem_buffer_from_host_args_t a{};
  a.struct_size = sizeof a;
  a.data = data;
  a.element_type = NEURONMEM_ELEMENT_TYPE_U8;
  a.host_buffer_semantics = semantics;
  a.dims = dims;
  a.num_dims = num_dims;
  a.memory = memory;
  return a;
}

// A temporary directory holding a FIFO (no writer) and a small regular file; removed at the end.
class TempFiles {
 public:
  TempFiles() {
    char tmpl[] = "/tmp/neuronmem-reliab-XXXXXX";
    const char* d = mkdtemp(tmpl);
    EXPECT_NE(d, nullptr);
    dir_ = d ? d : "/tmp";
    fifo_ = dir_ + "/fifo";
    EXPECT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
  }
  ~TempFiles() {
    unlink(fifo_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }
  const std::string& fifo() const { return fifo_; }

 private:
  std::string dir_, fifo_;
};

TEST_F(ReliabilityTest, EventWaitWithInt64MaxWaitsForever) {
  // Item 8: INT64_MAX is "forever"; the deadline used to overflow and the wait ended at once.
  neuronmem_event_t* e = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &e));
  const auto start = std::chrono::steady_clock::now();
  std::thread completer([e] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_OK(neuronmem_event_complete(e, nullptr));
  });
  EXPECT_OK(neuronmem_event_wait(e, INT64_MAX));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(90));
  completer.join();
  neuronmem_event_destroy(e);
  // A large but representable timeout still times out normally on a pending event.
  ASSERT_OK(neuronmem_event_create(client_, &e));
  EXPECT_EQ(Take(neuronmem_event_wait(e, 5 * 1000 * 1000)).code, NEURONMEM_STATUS_DEADLINE_EXCEEDED);
  EXPECT_OK(neuronmem_event_complete(e, nullptr));
  EXPECT_OK(neuronmem_event_wait(e, INT64_MAX - 1));
  neuronmem_event_destroy(e);
}

TEST_F(ReliabilityTest, LoadFileOnAFifoOrDeviceIsInvalidArgumentWithoutBlocking) {
  // Item 2: the FIFO has no writer; open(2) without O_NONBLOCK blocked forever.
  TempFiles files;
  neuronmem_buffer_t* b = Allocate(0, 64);
  for (const std::string& path : {files.fifo(), std::string("/dev/zero"), files.dir()}) {
    Result r = Take(neuronmem_test::LoadFile(b, path.c_str(), 0, 16, 0, nullptr, 0, nullptr));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << path << ": " << r.message;
    EXPECT_NE(r.message.find("only regular files"), std::string::npos) << r.message;
  }
  neuronmem_buffer_destroy(b);
}

TEST(ManifestFile, NonRegularFilesAreARequestErrorNotAHangOrAnUnboundedRead) {
  // Items 2 and 3: a FIFO blocked, /dev/zero and /dev/urandom read until memory ran out, and a directory
  // was read as empty text ("no function @main").
  TempFiles files;
  for (const std::string& path : {files.fifo(), std::string("/dev/zero"), std::string("/dev/urandom"), files.dir()}) {
    neuronmem_manifest_t* m = nullptr;
    Result r = Take(neuronmem_manifest_load_file(path.c_str(), nullptr, &m));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << path << ": " << r.message;
    EXPECT_NE(r.message.find(path), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("only regular files"), std::string::npos) << r.message;
    EXPECT_EQ(m, nullptr);
  }
  neuronmem_manifest_t* m = nullptr;
  EXPECT_EQ(Take(neuronmem_manifest_load_file("/nonexistent/x.mlir", nullptr, &m)).code, NEURONMEM_STATUS_NOT_FOUND);
}

TEST_F(ReliabilityTest, ImmutableZeroCopyBuffersRefuseEveryWrite) {
  // Item 4: write / upload_chunk / load_file wrote into caller memory promised immutable.
  void* host = nullptr;
  ASSERT_OK(neuronmem_client_host_allocate(client_, 4096, 0, &host));
  std::memset(host, 0x11, 4096);
  int64_t dims[1] = {4096};
  // pinned_host (memory 1): the data lies in the arena, so the buffer aliases it.
  auto a = U8Args(host, dims, 1, Mem(1), NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY);
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  bool zc = false;
  ASSERT_OK(neuronmem_buffer_is_zero_copy(b, &zc));
  ASSERT_TRUE(zc);
  char path[] = "/tmp/neuronmem-reliab-file-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> bytes(4096, 0x22);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  Result r = Take(neuronmem_test::Write(b, 0, bytes.data(), 16, nullptr, 0, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.message;
  EXPECT_NE(r.message.find("IMMUTABLE_ZERO_COPY"), std::string::npos) << r.message;
  EXPECT_EQ(Take(neuronmem_test::UploadChunk(b, 0, bytes.data(), 4096, 1, nullptr, 0, nullptr)).code,
            NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(Take(neuronmem_test::LoadFile(b, path, 0, 4096, 0, nullptr, 0, nullptr)).code,
            NEURONMEM_STATUS_FAILED_PRECONDITION);
  const uint8_t* p = static_cast<const uint8_t*>(host);
  EXPECT_TRUE(std::all_of(p, p + 4096, [](uint8_t v) { return v == 0x11; })) << "the caller's memory changed";
  neuronmem_buffer_destroy(b);
  // The same memory given as MUTABLE_ZERO_COPY may be written.
  a.host_buffer_semantics = NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  EXPECT_OK(neuronmem_test::Write(b, 0, bytes.data(), 16, nullptr, 0, nullptr));
  EXPECT_EQ(p[0], 0x22);
  neuronmem_buffer_destroy(b);
  unlink(path);
  EXPECT_OK(neuronmem_client_host_free(client_, host));
}

TEST_F(ReliabilityTest, ZeroByteTransfersAcceptNullPointers) {
  // UB list: memcpy(dst, NULL, 0) on the inline write path (UBSan: null pointer passed as argument).
  neuronmem_buffer_t* b = Allocate(0, 64);
  EXPECT_OK(neuronmem_test::Write(b, 0, nullptr, 0, nullptr, 0, nullptr));
  EXPECT_OK(neuronmem_test::Write(b, 64, nullptr, 0, nullptr, 0, nullptr));
  EXPECT_OK(neuronmem_test::Read(b, 0, nullptr, 0, nullptr, 0, nullptr));
  neuronmem_buffer_destroy(b);
}

TEST_F(ReliabilityTest, StridedEmptyArrayWithHugeDimsIsDenseAndEmpty) {
  // UB list: the dense-stride check multiplied huge dims in int64_t (signed overflow) when another dim was 0.
  const int64_t big = int64_t{1} << 40;
  int64_t dims[3] = {0, big, big};
  int64_t strides[3] = {0, big, 1};
  auto a = U8Args(nullptr, dims, 3, Mem(0), NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL);
  a.byte_strides = strides;
  neuronmem_buffer_t* b = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
  uint64_t size = 1;
  EXPECT_OK(neuronmem_buffer_on_device_size(b, &size));
  EXPECT_EQ(size, 0u);
  neuronmem_buffer_destroy(b);
}

TEST_F(ReliabilityTest, HostAllocateOfAnOverflowingSizeIsInvalidArgument) {
  // UB list: the header promises INVALID_ARGUMENT for sizes that overflow; it was RESOURCE_EXHAUSTED.
  void* p = nullptr;
  for (uint64_t size : {UINT64_MAX, UINT64_MAX - 8}) {
    Result r = Take(neuronmem_client_host_allocate(client_, size, 0, &p));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << size << ": " << r.message;
    EXPECT_EQ(p, nullptr);
  }
  // Merely too large for the arena stays RESOURCE_EXHAUSTED.
  EXPECT_EQ(Take(neuronmem_client_host_allocate(client_, uint64_t{1} << 40, 0, &p)).code,
            NEURONMEM_STATUS_RESOURCE_EXHAUSTED);
}

// Any status object will do as a caller's error: take one from a call that fails (OUT_OF_RANGE).
neuronmem_status_t* SomeError(neuronmem_buffer_t* b) {
  uint8_t byte = 0;
  return neuronmem_test::Read(b, UINT64_MAX, &byte, 1, nullptr, 0, nullptr);
}

TEST_F(ReliabilityTest, ChunkedUploadWithAFailedEarlierChunkFailsTheReadyEvent) {
  // Item 5: an earlier chunk failed (its wait event failed), the last succeeded, and the buffer's ready event
  // said OK although the first bytes were never written.
  std::vector<uint8_t> data(256, 0x5A);
  for (bool fail_before_last : {false, true}) {
    neuronmem_buffer_t* b = Allocate(0, 256);
    neuronmem_event_t* gate = nullptr;
    ASSERT_OK(neuronmem_event_create(client_, &gate));
    neuronmem_event_t* first = nullptr;
    ASSERT_OK(neuronmem_test::UploadChunk(b, 0, data.data(), 128, 0, &gate, 1, &first));
    neuronmem_status_t* err = SomeError(b);
    ASSERT_NE(err, nullptr);
    const std::string root(neuronmem_status_message(err).data, neuronmem_status_message(err).size);
    if (fail_before_last) ASSERT_OK(neuronmem_event_complete(gate, err));
    neuronmem_event_t* last = nullptr;
    ASSERT_OK(neuronmem_test::UploadChunk(b, 128, data.data() + 128, 128, 1, nullptr, 0, &last));
    if (!fail_before_last) ASSERT_OK(neuronmem_event_complete(gate, err));
    neuronmem_status_free(err);
    EXPECT_EQ(Take(neuronmem_event_wait(first, -1)).code, NEURONMEM_STATUS_OUT_OF_RANGE);
    neuronmem_event_t* def = nullptr;
    ASSERT_OK(neuronmem_buffer_ready_event(b, &def));
    Result r = Take(neuronmem_event_wait(def, -1));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_OUT_OF_RANGE) << r.message;
    EXPECT_NE(r.message.find(root), std::string::npos) << r.message;
    EXPECT_EQ(Take(neuronmem_event_wait(last, -1)).code, NEURONMEM_STATUS_OUT_OF_RANGE);
    neuronmem_event_destroy(def);
    neuronmem_event_destroy(last);
    neuronmem_event_destroy(first);
    neuronmem_event_destroy(gate);
    neuronmem_buffer_destroy(b);
  }
  // Chunks that all succeed still define the buffer.
  neuronmem_buffer_t* b = Allocate(0, 256);
  for (uint64_t off = 0; off < 256; off += 64) {
    ASSERT_OK(neuronmem_test::UploadChunk(b, off, data.data() + off, 64, off + 64 == 256, nullptr, 0, nullptr));
  }
  neuronmem_event_t* def = nullptr;
  ASSERT_OK(neuronmem_buffer_ready_event(b, &def));
  EXPECT_OK(neuronmem_event_wait(def, -1));
  neuronmem_event_destroy(def);
  neuronmem_buffer_destroy(b);
}

TEST_F(ReliabilityTest, AChainOfFailedDependenciesKeepsTheRootCauseOnceWithACount) {
  // Item 9: each level wrapped the previous message (quadratic time and memory in the chain's length).
  constexpr int kChain = 3000;
  neuronmem_buffer_t* b = Allocate(0, 64);
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<uint8_t> out(kChain);
  std::vector<neuronmem_event_t*> events;
  neuronmem_event_t* prev = gate;
  for (int i = 0; i < kChain; ++i) {
    neuronmem_event_t* e = nullptr;
    ASSERT_OK(neuronmem_test::Read(b, 0, &out[i], 1, &prev, 1, &e));
    events.push_back(e);
    prev = e;
  }
  neuronmem_status_t* err = SomeError(b);
  const std::string root(neuronmem_status_message(err).data, neuronmem_status_message(err).size);
  ASSERT_OK(neuronmem_event_complete(gate, err));
  neuronmem_status_free(err);
  Result first = Take(neuronmem_event_wait(events.front(), -1));
  EXPECT_EQ(first.message, "a dependency failed: " + root);
  Result r = Take(neuronmem_event_wait(events.back(), -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_OUT_OF_RANGE);
  EXPECT_LT(r.message.size(), root.size() + 200) << "the message grows with the chain";
  EXPECT_NE(r.message.find(root), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find(root), r.message.rfind(root)) << "the root cause appears once: " << r.message;
  EXPECT_NE(r.message.find(std::to_string(kChain) + " transfers up the chain"), std::string::npos) << r.message;
  for (auto* e : events) neuronmem_event_destroy(e);
  neuronmem_event_destroy(gate);
  neuronmem_buffer_destroy(b);
}

TEST_F(ReliabilityTest, ATransferMayNotWaitOnAnotherClientsEvent) {
  // Item 6: a transfer on this client waiting on another client's pending event hung this client's destroy.
  neuronmem_client_t* other = nullptr;
  ASSERT_OK(neuronmem_test::CreateSmallClient(4u << 20, &other));
  neuronmem_event_t* foreign = nullptr;
  ASSERT_OK(neuronmem_event_create(other, &foreign));
  neuronmem_buffer_t* b = Allocate(0, 64);
  std::vector<uint8_t> bytes(64, 1);
  neuronmem_event_t* own = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &own));
  neuronmem_event_t* waits[2] = {own, foreign};
  neuronmem_event_t* e = nullptr;
  Result r = Take(neuronmem_test::Read(b, 0, bytes.data(), 64, waits, 2, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << r.message;
  EXPECT_NE(r.message.find("wait_events[1] belongs to another client"), std::string::npos) << r.message;
  EXPECT_EQ(e, nullptr);
  EXPECT_EQ(Take(neuronmem_test::Write(b, 0, bytes.data(), 64, &foreign, 1, &e)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_test::UploadChunk(b, 0, bytes.data(), 64, 1, &foreign, 1, &e)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_buffer_t* copy = nullptr;
  EXPECT_EQ(Take(neuronmem_test::CopyToMemory(b, Mem(1), &foreign, 1, &copy, &e)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  int64_t dims[1] = {64};
  auto a = U8Args(bytes.data(), dims, 1, Mem(0), NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL);
  a.wait = {&foreign, 1};
  neuronmem_buffer_t* up = nullptr;
  EXPECT_EQ(Take(neuronmem_buffer_from_host(client_, &a, &up, &e, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(up, nullptr);
  // A completed event of the other client's transfer is refused too: the rule does not depend on timing.
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(neuronmem_event_complete(foreign, nullptr));
  EXPECT_EQ(Take(neuronmem_test::Read(b, 0, bytes.data(), 64, &foreign, 1, &done)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  // Own events still gate transfers.
  ASSERT_OK(neuronmem_test::Read(b, 0, bytes.data(), 64, &own, 1, &done));
  ASSERT_OK(neuronmem_event_complete(own, nullptr));
  EXPECT_OK(neuronmem_event_wait(done, -1));
  neuronmem_event_destroy(done);
  neuronmem_event_destroy(own);
  neuronmem_event_destroy(foreign);
  neuronmem_buffer_destroy(b);
  EXPECT_OK(neuronmem_client_destroy(other));
}

}  // namespace
