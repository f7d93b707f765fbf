// Fault injection for tests: places in the library that fail on purpose when a test arms them,
// so that tests can show every failure leaves the library usable, the sources intact and the error on the
// right event. Internal only: nothing in the public API reaches it and its symbols are hidden in
// libneuronmem.so, so only tests linking the static layers (neuronmem_internal_dep) can arm a site.
// Disarmed, a site costs one relaxed atomic load. Sites are process-wide; arm them from one test thread.
#pragma once

#include <cstdint>

namespace neuronmem::fault {

enum class Site : uint8_t {
  kAllocation,        // memory::*::Allocate: RESOURCE_EXHAUSTED (device and pinned arenas, unpinned memory)
  kStatusAllocation,  // MakeStatus: the status object cannot be allocated (the static out-of-memory status)
  kUringSetup,        // copy::FileReader: io_uring_queue_init fails (file loads fall back to pread)
  kTransfer,          // copy::CopyEngine: a transfer fails before it touches memory
  kCopyMidway,        // copy::CopyEngine: a copy fails after writing the first half of its bytes
  kUringSubmit,       // copy::FileReader: a batch's io_uring submission fails with EBUSY after its SQEs were
                      // published (the ring is never entered again: this read and later ones use pread)
  kUringComplete,     // copy::FileReader: an io_uring read completes with an I/O error (EIO)
  kShortRead,         // copy::FileReader: an io_uring read completes with half its bytes (the rest: pread)
  kCallback,          // api: a caller's callback that returns a status (a kernel, a send or recv callback, kv_get,
                      // kv_put) fails after it ran: what it returned is released and ABORTED stands in for it
  kCount
};

// Arms `site`: its `nth` hit from now (1 = the next) fails, and the `count - 1` hits after it too.
void Arm(Site site, uint64_t nth, uint64_t count = 1);
// Disarms every site and clears the counts.
void DisarmAll();
// Whether the site is armed (a fault is still to come).
bool Armed(Site site);
// Counts a hit of `site`; true if this one must fail.
bool Hit(Site site);
// Hits of `site` since it was last armed or DisarmAll (counted only while armed).
uint64_t Hits(Site site);

}  // namespace neuronmem::fault
