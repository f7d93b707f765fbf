#include "dist/store.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include "dist_test_util.h"

namespace neuronmem::dist {
namespace {

using std::chrono::milliseconds;
using testing::RunProcesses;
using testing::TempDir;

std::string Message(const Status& s) { return s ? s->message : "OK"; }

TEST(DirectoryStore, PutThenGet) {
  TempDir dir;
  std::unique_ptr<KvStore> store;
  ASSERT_FALSE(NewDirectoryStore(dir.path(), &store));
  ASSERT_FALSE(store->Put("job/ep/0", "hello"));
  std::string v;
  ASSERT_FALSE(store->Get("job/ep/0", milliseconds(0), &v));
  EXPECT_EQ(v, "hello");
  ASSERT_FALSE(store->Put("job/ep/0", "replaced"));
  ASSERT_FALSE(store->Get("job/ep/0", milliseconds(0), &v));
  EXPECT_EQ(v, "replaced");
  // One file per key, its name escaped (no '/' from the key), and no temporary file left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename().string(), DirectoryStoreFileName("job/ep/0"));
  }
  EXPECT_EQ(files, 1);
  EXPECT_EQ(DirectoryStoreFileName("job/ep/0"), "job%2Fep%2F0");
  EXPECT_EQ(DirectoryStoreFileName("../x"), "%2E.%2Fx");
}

TEST(DirectoryStore, GetOfAnAbsentKeyTimesOutNamingIt) {
  TempDir dir;
  std::unique_ptr<KvStore> store;
  ASSERT_FALSE(NewDirectoryStore(dir.path(), &store));
  std::string v = "untouched";
  Status s = store->Get("never/put", milliseconds(50), &v);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_DEADLINE_EXCEEDED);
  EXPECT_NE(s->message.find("never/put"), std::string::npos) << s->message;
}

TEST(DirectoryStore, BadInput) {
  std::unique_ptr<KvStore> store;
  Status s = NewDirectoryStore("/nonexistent/folder/of/nm-dist", &store);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(store, nullptr);
  TempDir dir;
  ASSERT_FALSE(NewDirectoryStore(dir.path(), &store));
  EXPECT_EQ(store->Put("", "x")->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(store->Put("k", std::string(kMaxStoreValueBytes + 1, 'x'))->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  // A value bigger than the store's bound (written behind its back) is refused, not read.
  { std::ofstream(dir.path() + "/big") << std::string(kMaxStoreValueBytes + 1, 'x'); }
  std::string v;
  Status big = store->Get("big", milliseconds(0), &v);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->code, NEURONMEM_STATUS_INVALID_ARGUMENT) << Message(big);
}

// Two processes: each publishes a key and waits for the other's; every value read is whole (a reader never
// sees a half-written file) even while the writer replaces it again and again.
TEST(DirectoryStore, SharedBetweenProcesses) {
  TempDir dir;
  const std::string big(32 * 1024, 'a'), other(32 * 1024, 'b');
  auto codes = RunProcesses(2, [&](int i) {
    std::unique_ptr<KvStore> store;
    if (NewDirectoryStore(dir.path(), &store)) return 1;
    if (i == 0) {
      for (int k = 0; k < 200; ++k) {
        if (store->Put("shared", k % 2 ? big : other)) return 2;
      }
      if (store->Put("from0", "zero")) return 3;
      std::string v;
      if (store->Get("from1", milliseconds(60000), &v) || v != "one") return 4;
      return 0;
    }
    std::string v;
    for (int k = 0; k < 200; ++k) {
      Status s = store->Get("shared", milliseconds(60000), &v);
      if (s) return 5;
      if (v != big && v != other) return 6;  // torn
    }
    if (store->Put("from1", "one")) return 7;
    if (store->Get("from0", milliseconds(60000), &v) || v != "zero") return 8;
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// The helper itself: a process with a second thread forks nothing. Tried inside a forked process, so that this test
// process stays single-threaded for the others (whose forks show the single-threaded case); there, under
// ThreadSanitizer, TSan's own background thread is a second one already.
TEST(RunProcesses, ForksOnlyFromASingleThreadedProcess) {
  auto codes = RunProcesses(1, [](int) {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::thread t([&] {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return done; });
    });
    const size_t threads = testing::ThreadsOfThisProcess();
    const std::vector<int> refused = RunProcesses(2, [](int) { return 0; });  // 0 if it forked
    {
      std::lock_guard<std::mutex> lock(m);
      done = true;
    }
    cv.notify_one();
    t.join();
    if (threads < 2) return 1;
    return refused == std::vector<int>(2, testing::kForkedWithThreads) ? 0 : 2;
  });
  EXPECT_EQ(codes, std::vector<int>{0});
}

}  // namespace
}  // namespace neuronmem::dist
