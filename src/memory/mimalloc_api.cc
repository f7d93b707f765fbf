#include "memory/mimalloc_api.h"

#include <dlfcn.h>

namespace neuronmem::memory {

const MimallocApi* Mimalloc(std::string* error) {
  static std::string load_error;
  static const MimallocApi* api = []() -> const MimallocApi* {
    void* lib = nullptr;
    for (const char* name : {"libmimalloc.so.2", "libmimalloc.so"}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
    }
    if (!lib) {
      const char* e = dlerror();
      load_error = std::string("cannot load libmimalloc.so.2 (install libmimalloc2.0): ") + (e ? e : "unknown");
      return nullptr;
    }
    auto* a = new MimallocApi();  // immortal, like the library handle
    a->manage_os_memory_ex = reinterpret_cast<decltype(a->manage_os_memory_ex)>(dlsym(lib, "mi_manage_os_memory_ex"));
    a->heap_new_in_arena = reinterpret_cast<decltype(a->heap_new_in_arena)>(dlsym(lib, "mi_heap_new_in_arena"));
    a->heap_malloc_aligned_at =
        reinterpret_cast<decltype(a->heap_malloc_aligned_at)>(dlsym(lib, "mi_heap_malloc_aligned_at"));
    a->free = reinterpret_cast<decltype(a->free)>(dlsym(lib, "mi_free"));
    a->heap_visit_blocks = reinterpret_cast<decltype(a->heap_visit_blocks)>(dlsym(lib, "mi_heap_visit_blocks"));
    if (!a->manage_os_memory_ex || !a->heap_new_in_arena || !a->heap_malloc_aligned_at || !a->free) {
      load_error = "libmimalloc.so.2 lacks the arena API (mimalloc >= 2.0.6 is needed)";
      delete a;
      return nullptr;
    }
    return a;
  }();
  if (!api && error) *error = load_error;
  return api;
}

}  // namespace neuronmem::memory
