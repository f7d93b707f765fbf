// Tlsf against a reference model under random alloc/free traces, plus exhaustion and bad frees.
#include "memory/tlsf.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <random>

namespace neuronmem::memory {
namespace {

// The reference model: live intervals by offset, with the invariants every allocator must keep.
struct Model {
  uint64_t capacity;
  std::map<uint64_t, uint64_t> live;  // offset -> requested size
  uint64_t in_use = 0;
  uint64_t peak = 0;
  uint64_t total = 0;

  ::testing::AssertionResult Add(uint64_t off, uint64_t size, uint64_t alignment) {
    if (off % std::max<uint64_t>(alignment, 64)) return ::testing::AssertionFailure() << "misaligned " << off;
    if (off + size > capacity) return ::testing::AssertionFailure() << "past capacity " << off << "+" << size;
    auto next = live.lower_bound(off);
    if (next != live.end() && next->first < off + size) return ::testing::AssertionFailure() << "overlaps next";
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second > off) return ::testing::AssertionFailure() << "overlaps previous";
    }
    live[off] = size;
    in_use += size;
    peak = std::max(peak, in_use);
    ++total;
    return ::testing::AssertionSuccess();
  }
};

void ExpectStatsMatch(const Tlsf& t, const Model& m) {
  const ArenaStats st = t.Stats();
  EXPECT_EQ(st.bytes_in_use, m.in_use);
  EXPECT_EQ(st.live_allocations, m.live.size());
  EXPECT_EQ(st.peak_bytes_in_use, m.peak);
  EXPECT_EQ(st.total_allocations, m.total);
  EXPECT_LE(st.largest_free_block, m.capacity - m.in_use);
}

// largest_free_block is the largest request that succeeds now (issue 23, class 10): a request of it succeeds and
// one granule more fails. (It reported the largest free block, which a request rounds past when the block is not
// its size class's smallest: 112,128 reported, 110,592 allocatable.)
void ExpectLargestIsExact(Tlsf& t, Model* m) {
  const uint64_t largest = t.LargestFreeBlock();
  uint64_t off = 0;
  if (largest) {
    ASSERT_TRUE(t.Allocate(largest, 64, &off)) << "largest_free_block " << largest << " is refused";
    ASSERT_TRUE(t.Free(off));
    // The probe counts in the statistics like any allocation.
    m->peak = std::max(m->peak, m->in_use + largest);
    ++m->total;
  }
  ASSERT_FALSE(t.Allocate(largest + 64, 64, &off)) << "largest_free_block " << largest << " + 64 succeeds";
}

class TlsfTrace : public ::testing::TestWithParam<int> {};

TEST_P(TlsfTrace, RandomTraceAgreesWithModel) {
  std::mt19937_64 rng(GetParam());
  const uint64_t cap = 8ull << 20;
  Tlsf t(cap, 64);
  Model m;
  m.capacity = cap;
  int failures = 0;
  for (int i = 0; i < 30000; ++i) {
    if (m.live.empty() || rng() % 3 != 0) {
      const uint64_t size = 1 + rng() % (rng() % 8 == 0 ? 300000 : 3000);
      const uint64_t alignment = 1ull << (rng() % 14);
      uint64_t off = ~0ull;
      if (t.Allocate(size, alignment, &off)) {
        ASSERT_TRUE(m.Add(off, size, alignment));
        ASSERT_EQ(t.AllocationSize(off), size);
      } else {
        ++failures;
        ASSERT_EQ(off, ~0ull) << "a failed Allocate must not write the offset";
      }
    } else {
      auto it = m.live.begin();
      std::advance(it, static_cast<long>(rng() % m.live.size()));
      uint64_t size = 0;
      ASSERT_TRUE(t.Free(it->first, &size));
      ASSERT_EQ(size, it->second);
      ASSERT_FALSE(t.Free(it->first)) << "double free accepted";
      m.in_use -= it->second;
      m.live.erase(it);
    }
    if (i % 1000 == 0) ExpectStatsMatch(t, m);
    if (i % 97 == 0) ASSERT_NO_FATAL_FAILURE(ExpectLargestIsExact(t, &m));
  }
  ExpectStatsMatch(t, m);
  EXPECT_GT(failures, 0) << "the trace should have filled the arena at least once";
  for (auto& [off, size] : m.live) ASSERT_TRUE(t.Free(off));
  // Everything freed: the blocks coalesced back into one block of the whole capacity.
  EXPECT_EQ(t.LargestFreeBlock(), cap);
  uint64_t off = 1;
  ASSERT_TRUE(t.Allocate(cap, 64, &off));
  EXPECT_EQ(off, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, TlsfTrace, ::testing::Range(1, 9));

TEST(Tlsf, ExhaustionAndReuse) {
  Tlsf t(1 << 20, 64);
  std::vector<uint64_t> offs;
  uint64_t off;
  while (t.Allocate(4096, 64, &off)) offs.push_back(off);
  EXPECT_EQ(offs.size(), 256u);  // exactly capacity / 4096: no per-block overhead inside the range
  EXPECT_EQ(t.LargestFreeBlock(), 0u);
  EXPECT_FALSE(t.Allocate(1, 64, &off));
  // Free two neighbours: they coalesce into one 8 KiB block.
  ASSERT_TRUE(t.Free(offs[10]));
  ASSERT_TRUE(t.Free(offs[11]));
  EXPECT_EQ(t.LargestFreeBlock(), 8192u);
  ASSERT_TRUE(t.Allocate(8192, 64, &off));
  EXPECT_EQ(off, offs[10]);
}

TEST(Tlsf, RejectsBadFreesAndRequests) {
  Tlsf t(1 << 20, 64);
  uint64_t off;
  ASSERT_TRUE(t.Allocate(1000, 64, &off));
  EXPECT_FALSE(t.Free(off + 64));    // interior
  EXPECT_FALSE(t.Free(1ull << 40));  // out of range
  EXPECT_FALSE(t.Allocate(0, 64, &off));
  EXPECT_FALSE(t.Allocate(UINT64_MAX, 64, &off));
  EXPECT_FALSE(t.Allocate(64, 3, &off));  // not a power of two
  EXPECT_TRUE(t.Free(off));
  EXPECT_FALSE(t.Free(off));
  EXPECT_EQ(t.AllocationSize(off), 0u);
}

TEST(Tlsf, LargeAlignmentsAreHonoured) {
  Tlsf t(16 << 20, 64);
  uint64_t off;
  ASSERT_TRUE(t.Allocate(100, 64, &off));  // shift the free block off zero
  for (uint64_t a : {128ull, 4096ull, 65536ull, 1ull << 20, 4ull << 20}) {
    uint64_t o;
    ASSERT_TRUE(t.Allocate(1000, a, &o)) << a;
    EXPECT_EQ(o % a, 0u) << a;
  }
}

}  // namespace
}  // namespace neuronmem::memory
