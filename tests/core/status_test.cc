// Status objects when memory runs out: a failure must never turn into NULL (= OK).
#include <gtest/gtest.h>

#include <atomic>
#include <new>

#include "base/status.h"

namespace {
std::atomic<bool> fail_nothrow_new{false};
}  // namespace

// The library allocates status objects with new (std::nothrow); this test makes that allocation fail.
// Otherwise it is the ordinary operator new, so delete (and the sanitizers' pairing checks) still match.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (fail_nothrow_new.load()) return nullptr;
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }

namespace {

struct FailAllocations {
  FailAllocations() { fail_nothrow_new = true; }
  ~FailAllocations() { fail_nothrow_new = false; }
};

TEST(Status, OutOfMemoryIsStillAFailure) {
  neuronmem::Status s;
  {
    FailAllocations guard;
    s = neuronmem::InvalidArgument("cannot be allocated: %d", 1);
  }
  ASSERT_TRUE(s) << "a status that cannot be allocated must not become OK";
  EXPECT_EQ(s.get(), neuronmem::OutOfMemoryStatus());
  EXPECT_EQ(neuronmem_status_code(s.get()), NEURONMEM_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_STREQ(neuronmem_status_message(s.get()).data, "out of memory");
  // Annotating or copying it leaves the shared static status unchanged.
  s = neuronmem::Annotate(std::move(s), "context");
  EXPECT_STREQ(neuronmem_status_message(s.get()).data, "out of memory");
  {
    FailAllocations guard;
    neuronmem::Status copy = neuronmem::CopyStatus(s.get());
    EXPECT_EQ(copy.get(), neuronmem::OutOfMemoryStatus());
  }
  // Freeing it through the C API (as a caller would) is safe, as often as it is handed out.
  neuronmem_status_free(s.release());
  neuronmem_status_free(neuronmem::OutOfMemoryStatus());
  EXPECT_EQ(neuronmem_status_code(neuronmem::OutOfMemoryStatus()), NEURONMEM_STATUS_RESOURCE_EXHAUSTED);
}

TEST(Status, OrdinaryStatusCarriesCodeAndMessage) {
  neuronmem::Status s = neuronmem::NotFound("no %s", "thing");
  ASSERT_TRUE(s);
  EXPECT_NE(s.get(), neuronmem::OutOfMemoryStatus());
  EXPECT_EQ(neuronmem_status_code(s.get()), NEURONMEM_STATUS_NOT_FOUND);
  EXPECT_STREQ(neuronmem_status_message(s.get()).data, "no thing");
}

}  // namespace
