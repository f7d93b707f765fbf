// Loading libneuronmem_pjrt.so the way a frontend does (dlopen + GetPjrtApi) and calling its table: the
// plugin's tests and benchmark use nothing else of it.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "xla/pjrt/c/pjrt_c_api.h"

namespace neuronmem_pjrt_test {

// The plugin's table: dlopen()s `path` (argv or NEURONMEM_PJRT_PLUGIN), NULL with a message if it fails.
inline const PJRT_Api* LoadPlugin(const char* path) {
  if (!path) path = std::getenv("NEURONMEM_PJRT_PLUGIN");
  if (!path) {
    std::fprintf(stderr, "no plugin path: pass it as the first argument or in NEURONMEM_PJRT_PLUGIN\n");
    return nullptr;
  }
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen(%s): %s\n", path, dlerror());
    return nullptr;
  }
  using GetApi = const PJRT_Api* (*)();
  auto get = reinterpret_cast<GetApi>(dlsym(h, "GetPjrtApi"));
  if (!get) {
    std::fprintf(stderr, "%s exports no GetPjrtApi\n", path);
    return nullptr;
  }
  return get();
}

// An error's code and message; destroys the error. {OK, ""} for NULL.
struct Outcome {
  PJRT_Error_Code code = PJRT_Error_Code_OK;
  std::string message;
};
inline Outcome Take(const PJRT_Api* api, PJRT_Error* e) {
  Outcome o;
  if (!e) return o;
  PJRT_Error_GetCode_Args c{};
  c.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE;
  c.error = e;
  if (PJRT_Error* bad = api->PJRT_Error_GetCode(&c)) {
    o.code = PJRT_Error_Code_UNKNOWN;
    (void)bad;
  } else {
    o.code = c.code;
  }
  PJRT_Error_Message_Args m{};
  m.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  m.error = e;
  api->PJRT_Error_Message(&m);
  o.message.assign(m.message, m.message_size);
  PJRT_Error_Destroy_Args d{};
  d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  d.error = e;
  api->PJRT_Error_Destroy(&d);
  return o;
}

// A zeroed args struct with its struct_size set.
template <typename T>
T Args(size_t size) {
  T a{};
  a.struct_size = size;
  return a;
}
#define NM_ARGS(T) ::neuronmem_pjrt_test::Args<T>(T##_STRUCT_SIZE)

// An int64 create option (`name` must outlive its use).
inline PJRT_NamedValue IntOption(const char* name, int64_t value) {
  PJRT_NamedValue v{};
  v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  v.name = name;
  v.name_size = std::strlen(name);
  v.type = PJRT_NamedValue_kInt64;
  v.int64_value = value;
  v.value_size = 1;
  return v;
}

// Awaits an event, destroys it, and returns how it ended.
inline Outcome AwaitAndDestroy(const PJRT_Api* api, PJRT_Event* e) {
  auto w = NM_ARGS(PJRT_Event_Await_Args);
  w.event = e;
  Outcome o = Take(api, api->PJRT_Event_Await(&w));
  auto d = NM_ARGS(PJRT_Event_Destroy_Args);
  d.event = e;
  Take(api, api->PJRT_Event_Destroy(&d));
  return o;
}

inline void DestroyBuffer(const PJRT_Api* api, PJRT_Buffer* b) {
  auto d = NM_ARGS(PJRT_Buffer_Destroy_Args);
  d.buffer = b;
  Take(api, api->PJRT_Buffer_Destroy(&d));
}

}  // namespace neuronmem_pjrt_test
