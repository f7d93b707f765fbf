// Large copies shared between the thread running the transfer, the pool's workers and threads waiting on
// the transfer's event (docs/async.md, "Waiting threads help").
#pragma once

#include <cstdint>

#include "base/event.h"
#include "copy/worker_pool.h"

namespace neuronmem::copy {

// Copies n bytes. Below four chunks (8 MiB) it is one FastCopy on this thread; above, the copy is split
// into 2 MiB chunks claimed from one counter by this thread, the pool's workers, and threads waiting on
// `done` (nullable) without a timeout. Returns when every byte is copied.
void ParallelCopy(WorkerPool& pool, uint8_t* dst, const uint8_t* src, uint64_t n, Event* done);

}  // namespace neuronmem::copy
