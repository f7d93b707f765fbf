// base/buffer_cache.h: buffers kept for reuse (the staging of messages between processes).
#include "base/buffer_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace neuronmem {
namespace {

TEST(BufferCache, AReturnedBufferIsTakenAgain) {
  auto cache = BufferCache::Create(1 << 20);
  char* first = nullptr;
  {
    BufferLease a = cache->Take(4096);
    ASSERT_NE(a, nullptr);
    first = a.get();
    a[4095] = 7;  // at least the bytes asked for
    EXPECT_EQ(cache->kept_bytes(), 0u);
  }
  EXPECT_EQ(cache->kept_bytes(), 4096u);
  BufferLease b = cache->Take(1000);  // smaller than the kept one: it is reused
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(cache->kept_bytes(), 0u);
  BufferLease c = cache->Take(8192);  // larger than any kept: fresh
  EXPECT_NE(c.get(), first);
}

TEST(BufferCache, TheSmallestBufferThatFitsIsTaken) {
  auto cache = BufferCache::Create(1 << 20);
  char *small = nullptr, *large = nullptr;
  {
    BufferLease a = cache->Take(1000), b = cache->Take(100000);
    small = a.get();
    large = b.get();
  }
  EXPECT_EQ(cache->kept_bytes(), 101000u);
  BufferLease x = cache->Take(500);
  EXPECT_EQ(x.get(), small);
  BufferLease y = cache->Take(500);
  EXPECT_EQ(y.get(), large);
}

TEST(BufferCache, KeepsAtMostItsLimit) {
  auto cache = BufferCache::Create(10000);
  { BufferLease big = cache->Take(20000); }  // larger than the limit: freed
  EXPECT_EQ(cache->kept_bytes(), 0u);
  {
    BufferLease a = cache->Take(3000), b = cache->Take(3000), c = cache->Take(6000);
    a.reset();
    b.reset();
    EXPECT_EQ(cache->kept_bytes(), 6000u);
    c.reset();  // room is made by freeing a smaller one: 3000 + 6000 fit
    EXPECT_EQ(cache->kept_bytes(), 9000u);
  }
  BufferLease d = cache->Take(5000);
  EXPECT_EQ(cache->kept_bytes(), 3000u);  // the 6000-byte one was kept, and taken
}

TEST(BufferCache, ALeaseOutlivesItsCachesOwner) {
  BufferLease lease;
  std::weak_ptr<BufferCache> weak;
  {
    auto cache = BufferCache::Create(1 << 20);
    weak = cache;
    lease = cache->Take(64);
  }
  EXPECT_FALSE(weak.expired());  // the lease keeps it
  lease.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(BufferCache, FreshBuffersAreNotKept) {
  BufferLease a = FreshBuffer(0);  // at least one byte
  ASSERT_NE(a, nullptr);
  a[0] = 1;
  BufferLease b = FreshBuffer(1 << 20);
  ASSERT_NE(b, nullptr);
  b[(1 << 20) - 1] = 1;
}

// Threads take and return at once (run under ThreadSanitizer in the 'concurrency' suite); every buffer is
// written whole by its one holder.
TEST(BufferCache, ThreadsTakeAndReturnAtOnce) {
  auto cache = BufferCache::Create(1 << 20);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 2000; ++i) {
        const size_t n = 64 + static_cast<size_t>((i * 7 + t) % 16) * 1024;
        BufferLease a = cache->Take(n);
        ASSERT_NE(a, nullptr);
        for (size_t k = 0; k < n; k += 512) a[k] = static_cast<char>(t);
        for (size_t k = 0; k < n; k += 512) ASSERT_EQ(a[k], static_cast<char>(t));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache->kept_bytes(), size_t{1} << 20);
}

}  // namespace
}  // namespace neuronmem
