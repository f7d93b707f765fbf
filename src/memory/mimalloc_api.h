// mimalloc, loaded privately. Debian's libmimalloc.so also exports malloc/free/new: linking it (DT_NEEDED)
// would silently replace the allocator of every process that loads libneuronmem. So the library dlopen()s
// it with RTLD_LOCAL, which keeps those symbols out of the global scope, and calls the mi_ functions the
// pinned-host arena needs through pointers resolved once.
#pragma once

#include <mimalloc.h>

#include <string>

namespace neuronmem::memory {

struct MimallocApi {
  bool (*manage_os_memory_ex)(void*, size_t, bool, bool, bool, int, bool, mi_arena_id_t*) = nullptr;
  mi_heap_t* (*heap_new_in_arena)(mi_arena_id_t) = nullptr;
  void* (*heap_malloc_aligned_at)(mi_heap_t*, size_t, size_t, size_t) = nullptr;
  void (*free)(void*) = nullptr;
  // Visits the live blocks of a heap (reclaiming a destroyed client's leaked blocks); may be null.
  bool (*heap_visit_blocks)(const mi_heap_t*, bool, mi_block_visit_fun*, void*) = nullptr;
};

// The resolved API, or nullptr with *error set if libmimalloc.so.2 cannot be loaded.
const MimallocApi* Mimalloc(std::string* error);

}  // namespace neuronmem::memory
