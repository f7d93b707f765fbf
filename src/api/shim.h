// Helpers shared by the C shims in src/api: argument checks that produce the documented statuses.
#pragma once

#include <neuronmem/status.h>

#include <cstddef>

#include "base/status.h"

namespace neuronmem::api {

// INVALID_ARGUMENT "<function>: argument '<arg>' must not be NULL".
inline neuronmem_status_t* NullArg(const char* function, const char* arg) {
  return InvalidArgument("%s: argument '%s' must not be NULL", function, arg).release();
}

// INVALID_ARGUMENT when a caller's growable struct is smaller than the first published version.
inline neuronmem_status_t* CheckStructSize(size_t struct_size, size_t min_size, const char* type) {
  if (struct_size >= min_size) return nullptr;
  return InvalidArgument("%s.struct_size is %zu, smaller than the minimum %zu; set it to sizeof(%s)", type, struct_size,
                         min_size, type)
      .release();
}

}  // namespace neuronmem::api

// Returns INVALID_ARGUMENT from the enclosing C entry point when `arg` is NULL.
#define NEURONMEM_REQUIRE(arg) \
  if (!(arg)) return ::neuronmem::api::NullArg(__func__, #arg)

// The first published size of a growable struct: every field up to and including `last`.
#define NEURONMEM_MIN_SIZE(type, last) (offsetof(type, last) + sizeof(((type*)nullptr)->last))
