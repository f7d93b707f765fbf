// Statistics every arena reports (mirrors neuronmem_memory_stats_t).
#pragma once

#include <cstdint>

namespace neuronmem::memory {

struct ArenaStats {
  uint64_t capacity = 0;  // 0 = no fixed capacity
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes_in_use = 0;
  uint64_t live_allocations = 0;
  uint64_t largest_free_block = 0;
  uint64_t total_allocations = 0;
  bool locked = false;
};

}  // namespace neuronmem::memory
