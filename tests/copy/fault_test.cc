// Fault injection: failures made on purpose through the test-only switch (base/fault.h) at every
// place a scenario can fail. Each must leave the library usable, the sources intact, nothing leaked, and the
// error on the right event.
#include <neuronmem/neuronmem.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>
#include "common/client_helpers.h"
#include "common/status_helpers.h"
#include "common/transfer_helpers.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/handles.h"
#include "base/fault.h"
#include "copy/copy_engine.h"

namespace {

using neuronmem::fault::Site;
using neuronmem_test::Result;
using neuronmem_test::Take;

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 12));
  return v;
}

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(neuronmem_test::CreateSmallClient(64u << 20, &client_)); }
  void TearDown() override {
    neuronmem::fault::DisarmAll();
    EXPECT_OK(neuronmem_client_destroy(client_));
  }

  // One core: device 0, pinned_host 1, unpinned_host 2.
  neuronmem_memory_t* Mem(int id) {
    neuronmem_memory_t* m = nullptr;
    EXPECT_OK(neuronmem_client_lookup_memory(client_, id, &m));
    return m;
  }
  uint64_t InUse(int id) {
    neuronmem_memory_stats_t st{};
    st.struct_size = sizeof st;
    EXPECT_OK(neuronmem_memory_stats(Mem(id), &st));
    return st.bytes_in_use;
  }
  neuronmem_status_t* Upload(const std::vector<uint8_t>& data, neuronmem_memory_t* m, neuronmem_buffer_t** out) {
    int64_t dims[1] = {static_cast<int64_t>(data.size())};
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = sizeof a;
    a.data = data.data();
    a.element_type = NEURONMEM_ELEMENT_TYPE_U8;
    a.host_buffer_semantics = NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL;
    a.dims = dims;
    a.num_dims = 1;
    a.memory = m;
    neuronmem_event_t* ready = nullptr;
    neuronmem_status_t* s = neuronmem_buffer_from_host(client_, &a, out, &ready, nullptr);
    if (s) return s;
    s = neuronmem_event_wait(ready, -1);
    neuronmem_event_destroy(ready);
    return s;
  }
  // The buffer's bytes, or an empty vector if its content failed.
  static std::vector<uint8_t> Download(neuronmem_buffer_t* b, size_t n) {
    std::vector<uint8_t> out(n);
    neuronmem_status_t* s = neuronmem_test::Read(b, 0, out.data(), n, nullptr, 0, nullptr);
    if (s) {
      neuronmem_status_free(s);
      return {};
    }
    return out;
  }

  neuronmem_client_t* client_ = nullptr;
};

// The scenario a frontend runs for decode metadata: a pinned host allocation, an upload to the device, a
// copy to pinned_host and on to unpinned_host, a read back. Returns the first failure (owned), every
// buffer made (defined or not) in `made`.
struct Made {
  void* host = nullptr;
  neuronmem_buffer_t* device = nullptr;
  neuronmem_buffer_t* pinned = nullptr;
  neuronmem_buffer_t* unpinned = nullptr;
};

neuronmem_status_t* CopyAndWait(neuronmem_buffer_t* src, neuronmem_memory_t* m, neuronmem_buffer_t** out) {
  neuronmem_event_t* e = nullptr;
  neuronmem_status_t* s = neuronmem_test::CopyToMemory(src, m, nullptr, 0, out, &e);
  if (s) return s;
  s = neuronmem_event_wait(e, -1);
  neuronmem_event_destroy(e);
  return s;
}

TEST_F(FaultTest, AnAllocationFailingAnywhereInAScenarioLeavesEverythingElseIntact) {
  const auto data = Pattern(64u << 10, 7);
  const uint64_t base[3] = {InUse(0), InUse(1), InUse(2)};
  int injected = 0;
  for (uint64_t n = 1; n < 64; ++n) {
    neuronmem::fault::Arm(Site::kAllocation, n);
    Made m;
    neuronmem_status_t* s = neuronmem_client_host_allocate(client_, 4096, 0, &m.host);
    if (!s) s = Upload(data, Mem(0), &m.device);
    if (!s) s = CopyAndWait(m.device, Mem(1), &m.pinned);
    if (!s) s = CopyAndWait(m.pinned, Mem(2), &m.unpinned);
    const bool fired = !neuronmem::fault::Armed(Site::kAllocation);
    neuronmem::fault::DisarmAll();
    if (!fired) {
      ASSERT_OK(s);
      EXPECT_EQ(Download(m.unpinned, data.size()), data);
    } else {
      ++injected;
      const Result r = Take(s);
      EXPECT_EQ(r.code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED) << "allocation " << n << ": " << r.message;
      EXPECT_NE(r.message.find("injected fault"), std::string::npos) << r.message;
      // Whatever was made before the failure holds what it should.
      if (m.device) {
        EXPECT_EQ(Download(m.device, data.size()), data) << n;
      }
      if (m.pinned) {
        EXPECT_EQ(Download(m.pinned, data.size()), data) << n;
      }
    }
    if (m.host) EXPECT_OK(neuronmem_client_host_free(client_, m.host));
    for (neuronmem_buffer_t* b : {m.device, m.pinned, m.unpinned}) neuronmem_buffer_destroy(b);
    // Nothing leaked in any memory.
    EXPECT_EQ(InUse(0), base[0]) << n;
    EXPECT_EQ(InUse(1), base[1]) << n;
    EXPECT_EQ(InUse(2), base[2]) << n;
    if (!fired) break;
  }
  EXPECT_EQ(injected, 4) << "the scenario allocates in four places (host, device, pinned, unpinned)";
}

TEST_F(FaultTest, AStatusThatCannotBeAllocatedIsStillAnError) {
  neuronmem::fault::Arm(Site::kStatusAllocation, 1);
  Result r = Take(neuronmem_buffer_delete(nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(r.message, "out of memory");
  // The next error is the real one again.
  r = Take(neuronmem_buffer_delete(nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  // A transfer whose error cannot be allocated still fails its event.
  neuronmem_buffer_t* src = nullptr;
  const auto data = Pattern(4096, 3);
  ASSERT_OK(Upload(data, Mem(0), &src));
  neuronmem::fault::Arm(Site::kTransfer, 1);
  neuronmem::fault::Arm(Site::kStatusAllocation, 1);
  neuronmem_buffer_t* dst = nullptr;
  r = Take(CopyAndWait(src, Mem(1), &dst));
  EXPECT_NE(r.code, NEURONMEM_STATUS_OK);
  neuronmem::fault::DisarmAll();
  EXPECT_EQ(Download(src, data.size()), data);
  neuronmem_buffer_destroy(dst);
  neuronmem_buffer_destroy(src);
}

std::string TempFile(const std::vector<uint8_t>& bytes) {
  char path[] = "/tmp/neuronmem-fault-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return path;
}

neuronmem_status_t* LoadAndWait(neuronmem_buffer_t* b, const std::string& path, uint64_t size) {
  neuronmem_event_t* e = nullptr;
  neuronmem_status_t* s = neuronmem_test::LoadFile(b, path.c_str(), 0, size, 0, nullptr, 0, &e);
  if (s) return s;
  s = neuronmem_event_wait(e, -1);
  neuronmem_event_destroy(e);
  return s;
}

TEST_F(FaultTest, WithoutIoUringFileLoadsFallBackToPlainReads) {
  neuronmem::fault::Arm(Site::kUringSetup, 1);
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_test::CreateSmallClient(32u << 20, &c));
  EXPECT_FALSE(neuronmem::fault::Armed(Site::kUringSetup)) << "the client did not set up a file reader";
  EXPECT_FALSE(c->engine().file_reads_use_io_uring());
  const auto data = Pattern(3u << 20, 9);
  const std::string path = TempFile(data);
  neuronmem_memory_t* dev = nullptr;
  ASSERT_OK(neuronmem_client_lookup_memory(c, 0, &dev));
  neuronmem_buffer_t* b = nullptr;
  int64_t dims[1] = {static_cast<int64_t>(data.size())};
  ASSERT_OK(neuronmem_test::Allocate(c, dev, NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  ASSERT_OK(LoadAndWait(b, path, data.size()));
  EXPECT_EQ(Download(b, data.size()), data);
  neuronmem_buffer_destroy(b);
  EXPECT_OK(neuronmem_client_destroy(c));
  unlink(path.c_str());
}

TEST_F(FaultTest, ACopyFailingMidwayFailsItsEventAndKeepsTheSource) {
  const auto data = Pattern(1u << 20, 5);
  neuronmem_buffer_t* src = nullptr;
  ASSERT_OK(Upload(data, Mem(0), &src));
  neuronmem::fault::Arm(Site::kCopyMidway, 1);
  neuronmem_buffer_t* dst = nullptr;
  const Result r = Take(CopyAndWait(src, Mem(1), &dst));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INTERNAL);
  EXPECT_NE(r.message.find("after 524288 of 1048576 bytes"), std::string::npos) << r.message;
  EXPECT_TRUE(Download(dst, data.size()).empty()) << "a read of the half-written copy must fail";
  EXPECT_EQ(Download(src, data.size()), data);
  neuronmem_buffer_t* again = nullptr;
  ASSERT_OK(CopyAndWait(src, Mem(1), &again));
  EXPECT_EQ(Download(again, data.size()), data);
  for (neuronmem_buffer_t* b : {src, dst, again}) neuronmem_buffer_destroy(b);
}

TEST_F(FaultTest, AFileThatShrinksDuringALoadFailsTheLoad) {
  const auto data = Pattern(4u << 20, 11);
  const std::string path = TempFile(data);
  neuronmem_buffer_t* b = nullptr;
  int64_t dims[1] = {static_cast<int64_t>(data.size())};
  ASSERT_OK(neuronmem_test::Allocate(client_, Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &b));
  // The load is queued behind a gate; the file shrinks before it runs.
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  neuronmem_event_t* e = nullptr;
  ASSERT_OK(neuronmem_test::LoadFile(b, path.c_str(), 0, data.size(), 0, &gate, 1, &e));
  ASSERT_EQ(truncate(path.c_str(), 1u << 20), 0);
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  const Result r = Take(neuronmem_event_wait(e, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_OUT_OF_RANGE) << r.message;
  EXPECT_NE(r.message.find("the file ended after"), std::string::npos) << r.message;
  // Like a failed neuronmem_buffer_write, a failed load into an existing buffer fails its own event; the
  // buffer stays usable (its content event is not the load's) and can be loaded again.
  EXPECT_EQ(Download(b, data.size()).size(), data.size());
  neuronmem_event_destroy(e);
  neuronmem_event_destroy(gate);
  // The client still loads the file into the same buffer once it is whole again.
  unlink(path.c_str());
  const std::string whole = TempFile(data);
  ASSERT_OK(LoadAndWait(b, whole, data.size()));
  EXPECT_EQ(Download(b, data.size()), data);
  neuronmem_buffer_destroy(b);
  unlink(whole.c_str());
}

// Issue 23, class 12: faults of the io_uring path of file loads. Each leaves a clear status (or the same result
// through pread) and nothing lost: every completion is reaped, the buffer stays usable, the next load succeeds.
class UringFaultTest : public FaultTest {
 protected:
  void SetUp() override {
    FaultTest::SetUp();
    if (!client_->engine().file_reads_use_io_uring()) GTEST_SKIP() << "io_uring is not available here";
  }
  // Loads `data` from a file into a new device buffer with `site` armed at its nth hit; returns the load's
  // status and checks the site was hit.
  Result LoadWith(Site site, uint64_t nth, const std::vector<uint8_t>& data, neuronmem_buffer_t** out) {
    const std::string path = TempFile(data);
    int64_t dims[1] = {static_cast<int64_t>(data.size())};
    EXPECT_OK(neuronmem_test::Allocate(client_, Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, out));
    neuronmem::fault::Arm(site, nth);
    Result r = Take(LoadAndWait(*out, path, data.size()));
    EXPECT_FALSE(neuronmem::fault::Armed(site)) << "the load never reached the fault";
    neuronmem::fault::DisarmAll();
    unlink(path.c_str());
    return r;
  }
};

TEST_F(UringFaultTest, ASubmissionThatFailsFinishesWithPlainReads) {
  const auto data = Pattern(20u << 20, 21);  // three 8 MiB pieces: the fault hits the first batch
  neuronmem_buffer_t* b = nullptr;
  const Result r = LoadWith(Site::kUringSubmit, 1, data, &b);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_OK) << r.message;
  EXPECT_EQ(Download(b, data.size()), data);
  // The batch's reads stay unsubmitted in the ring: it is never entered again, later loads use pread.
  EXPECT_FALSE(client_->engine().file_reads_use_io_uring());
  const auto other = Pattern(9u << 20, 24);
  const std::string path = TempFile(other);
  neuronmem_buffer_t* again = nullptr;
  int64_t dims[1] = {static_cast<int64_t>(other.size())};
  ASSERT_OK(neuronmem_test::Allocate(client_, Mem(0), NEURONMEM_ELEMENT_TYPE_U8, dims, 1, &again));
  ASSERT_OK(LoadAndWait(again, path, other.size()));
  EXPECT_EQ(Download(again, other.size()), other);
  unlink(path.c_str());
  neuronmem_buffer_destroy(again);
  neuronmem_buffer_destroy(b);
}

TEST_F(UringFaultTest, ACompletionWithAnErrorFailsTheLoadAndTheNextLoadSucceeds) {
  const auto data = Pattern(20u << 20, 22);
  for (uint64_t nth : {1, 2, 3}) {  // the first, a middle and the last piece of the batch
    neuronmem_buffer_t* b = nullptr;
    const Result r = LoadWith(Site::kUringComplete, nth, data, &b);
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INTERNAL) << r.message;
    EXPECT_NE(r.message.find("reading the file failed: Input/output error"), std::string::npos) << r.message;
    // Nothing is left in flight: the same client loads the file whole at once.
    const std::string path = TempFile(data);
    ASSERT_OK(LoadAndWait(b, path, data.size()));
    EXPECT_EQ(Download(b, data.size()), data);
    unlink(path.c_str());
    neuronmem_buffer_destroy(b);
  }
}

TEST_F(UringFaultTest, AShortReadIsFinishedWithPlainReads) {
  const auto data = Pattern(20u << 20, 23);
  for (uint64_t nth : {1, 2, 3}) {
    neuronmem_buffer_t* b = nullptr;
    const Result r = LoadWith(Site::kShortRead, nth, data, &b);
    EXPECT_EQ(r.code, NEURONMEM_STATUS_OK) << r.message;
    EXPECT_EQ(Download(b, data.size()), data) << "short read at piece " << nth;
    neuronmem_buffer_destroy(b);
  }
}

}  // namespace
