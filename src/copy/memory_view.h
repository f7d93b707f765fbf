// The narrow view of a memory that the copy engine needs, and nothing of the client: the allocator behind
// the memory (memory::Memory), the core whose DMA queue moves its bytes, and its stable id (so the C layer
// can map a buffer back to its memory handle). The client (src/core) owns the views; they outlive the
// engine's use of them.
#pragma once

#include <cstdint>

#include "memory/memory.h"

namespace neuronmem::copy {

struct MemoryView {
  memory::Memory* memory = nullptr;
  uint32_t core = 0;  // 0..num_cores-1 of the engine
  int32_t id = -1;    // the client's memory id (docs/memory-kinds.md)
};

}  // namespace neuronmem::copy
