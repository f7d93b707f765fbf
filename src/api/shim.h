// Helpers shared by the C shims in src/api: the only place that checks C structs and turns C values into
// C++ ones. Argument checks produce the documented statuses.
#pragma once

#include <neuronmem/buffer.h>
#include <neuronmem/status.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/element_type.h"
#include "base/event.h"
#include "base/span.h"
#include "base/status.h"

namespace neuronmem::api {

// INVALID_ARGUMENT "<function>: argument '<arg>' must not be NULL".
inline neuronmem_status_t* NullArg(const char* function, const char* arg) {
  return InvalidArgument("%s: argument '%s' must not be NULL", function, arg).release();
}

// INVALID_ARGUMENT when a caller's growable struct is smaller than its first published size
// (`where` prefixes the message, e.g. "args[3]: ").
Status CheckStructSize(size_t struct_size, size_t min_size, const char* type, const char* where = "");

// INVALID_ARGUMENT for an extension chain with an entry this library does not know (it knows none yet) or a
// malformed entry. `type` names the struct the chain hangs from.
Status CheckExtensions(const neuronmem_extension_base_t* chain, const char* type, const char* where = "");

// Both checks every growable argument struct gets: its size, then its extension chain.
template <typename T>
Status CheckArgs(const T& args, size_t min_size, const char* type, const char* where = "") {
  NEURONMEM_RETURN_IF_ERROR(CheckStructSize(args.struct_size, min_size, type, where));
  return CheckExtensions(args.extension, type, where);
}

// The element type of a C value; INVALID_ARGUMENT for a value that is no neuronmem_element_type_t.
Status ElementTypeOf(int64_t c_value, const char* where, ElementType* out);

// The value of a C enum argument read as an integer, never as the enum: a C caller may pass any 32-bit value,
// and a C++ load of one outside the enum's range is undefined (UBSan aborts). Validate this value instead.
template <typename E>
int64_t EnumValue(const E& e) {
  static_assert(sizeof(E) == sizeof(int32_t), "C enums of the API are 32-bit");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// The wait list of a C call: INVALID_ARGUMENT if the array is NULL with a count, or an entry is NULL.
Status WaitList(const neuronmem_event_list_t& list, const char* where, Span<Event* const>* out);

// FAILED_PRECONDITION when this thread is inside a caller's function the library calls (an event callback,
// a kernel, a host-transfer callback: CallerCallbackScope): `call` (a C function name, and how it would
// block) is refused there, since it could wait for the thread running the callback (docs/async.md,
// "Callbacks"). OK elsewhere.
Status RefuseBlockingInCallback(const char* call);

// What a caller's callback returned (the library owns the status). With the test-only fault site
// fault::Site::kCallback armed, a callback that succeeded fails instead: ABORTED "injected fault: <what>
// failed" (base/fault.h), so tests can show every callback's failure gives its documented status.
Status CallbackResult(neuronmem_status_t* returned, const char* what);

}  // namespace neuronmem::api

// Returns INVALID_ARGUMENT from the enclosing C entry point when `arg` is NULL.
#define NEURONMEM_REQUIRE(arg) \
  if (!(arg)) return ::neuronmem::api::NullArg(__func__, #arg)

// The first published size of a growable struct: every field up to and including `last`.
#define NEURONMEM_MIN_SIZE(type, last) (offsetof(type, last) + sizeof(((type*)nullptr)->last))

// Whether a caller's growable struct (of size ptr->struct_size) holds `field`: fields appended after its
// first published size are read, or written, only then.
#define NEURONMEM_HAS_FIELD(ptr, type, field) ((ptr)->struct_size >= NEURONMEM_MIN_SIZE(type, field))

// Checks that the published NEURONMEM_<STRUCT>_STRUCT_SIZE of a growable struct ends at its last field
// (only padding may follow it), so the macro and the struct cannot drift apart (shim.cc lists them all).
#define NEURONMEM_ASSERT_STRUCT_SIZE(type, size_macro)                                       \
  static_assert((size_macro) <= sizeof(type) && sizeof(type) - (size_macro) < alignof(type), \
                #size_macro " must cover every field of " #type)

// Returns INVALID_ARGUMENT from the enclosing C entry point when *ptr's struct_size is below the first
// published size of `type` (whose last field then was `last`).
#define NEURONMEM_CHECK_STRUCT_SIZE(ptr, type, last)                                                    \
  if (::neuronmem::Status _size_status =                                                                \
          ::neuronmem::api::CheckStructSize((ptr)->struct_size, NEURONMEM_MIN_SIZE(type, last), #type)) \
  return _size_status.release()
