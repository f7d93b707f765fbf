/* libneuronmem: export macro, strings and the status (error) object shared by every public header.
 *
 * Errors are returned objects: a function that can fail returns neuronmem_status_t*; NULL means
 * success. A non-NULL status is owned by the caller and must be released with
 * neuronmem_status_free(). See docs/errors.md. */
#ifndef NEURONMEM_STATUS_H
#define NEURONMEM_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(NEURONMEM_BUILDING_LIBRARY) && defined(__GNUC__)
#define NEURONMEM_API __attribute__((visibility("default")))
#else
#define NEURONMEM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A borrowed, not NUL-terminated-by-contract string: (data, size). Where the library returns one it
 * also writes a terminating NUL after data[size] so C callers may print it; the pointer lives as long
 * as the object it was read from (the function's contract says which). */
typedef struct neuronmem_string {
  const char* data;
  size_t size;
} neuronmem_string_t;

/* The published size of a growable struct: every field up to and including `last` (PJRT's
 * PJRT_STRUCT_SIZE). Each growable struct has a NEURONMEM_<STRUCT>_STRUCT_SIZE macro built with it; the
 * library checks with a static_assert that the macro covers the whole struct. */
#define NEURONMEM_STRUCT_SIZE(type, last) (offsetof(type, last) + sizeof(((type*)0)->last))

/* Extension types: what an extension struct chained into a growable struct is. Append-only. This release
 * defines none: a chain with any entry is rejected with INVALID_ARGUMENT naming its type. */
typedef enum neuronmem_extension_type {
  NEURONMEM_EXTENSION_TYPE_NONE = 0,
  NEURONMEM_EXTENSION_TYPE_FORCE_32 = 0x7fffffff
} neuronmem_extension_type_t;

/* The head of every extension struct: growable structs point at a chain of these (`extension`, NULL for
 * none). An extension struct starts with this header and adds its own fields after it. */
typedef struct neuronmem_extension_base {
  size_t struct_size;                          /* sizeof the whole extension struct */
  neuronmem_extension_type_t type;             /* which extension struct this is */
  const struct neuronmem_extension_base* next; /* the next in the chain, or NULL */
} neuronmem_extension_base_t;
#define NEURONMEM_EXTENSION_BASE_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_extension_base_t, next)

/* Status codes. Append-only: values never change meaning or number. Modelled on the PJRT/absl codes. */
typedef enum neuronmem_status_code {
  NEURONMEM_STATUS_OK = 0, /* never carried by a status object; NULL means OK */
  NEURONMEM_STATUS_CANCELLED = 1,
  NEURONMEM_STATUS_UNKNOWN = 2,
  NEURONMEM_STATUS_INVALID_ARGUMENT = 3,
  NEURONMEM_STATUS_DEADLINE_EXCEEDED = 4,
  NEURONMEM_STATUS_NOT_FOUND = 5,
  NEURONMEM_STATUS_ALREADY_EXISTS = 6,
  NEURONMEM_STATUS_PERMISSION_DENIED = 7,
  NEURONMEM_STATUS_RESOURCE_EXHAUSTED = 8, /* out of memory: an arena or a table is full */
  NEURONMEM_STATUS_FAILED_PRECONDITION = 9,
  NEURONMEM_STATUS_ABORTED = 10,
  NEURONMEM_STATUS_OUT_OF_RANGE = 11,
  NEURONMEM_STATUS_UNIMPLEMENTED = 12,
  NEURONMEM_STATUS_INTERNAL = 13,
  NEURONMEM_STATUS_UNAVAILABLE = 14,
  NEURONMEM_STATUS_DATA_LOSS = 15,
  NEURONMEM_STATUS_CODE_FORCE_32 = 0x7fffffff
} neuronmem_status_code_t;

/* Opaque error object. Owned by whoever received it; free with neuronmem_status_free(). */
typedef struct neuronmem_status neuronmem_status_t;

/* A new status (owned by the caller, or by the library when a kernel returns it) with `code` and a copy of
 * `size` bytes of `message` (NULL only for 0 bytes). NEURONMEM_STATUS_OK yields NULL; a code that is no
 * neuronmem_status_code_t becomes NEURONMEM_STATUS_UNKNOWN. Thread-safe. */
NEURONMEM_API neuronmem_status_t* neuronmem_status_create(neuronmem_status_code_t code, const char* message,
                                                          size_t size);

/* The status' code. status: required (NULL yields NEURONMEM_STATUS_OK). Thread-safe. */
NEURONMEM_API neuronmem_status_code_t neuronmem_status_code(const neuronmem_status_t* status);

/* The status' message, NUL-terminated after size; borrowed, valid until neuronmem_status_free().
 * status: NULL yields an empty string. Thread-safe. */
NEURONMEM_API neuronmem_string_t neuronmem_status_message(const neuronmem_status_t* status);

/* Releases a status. NULL is a no-op. */
NEURONMEM_API void neuronmem_status_free(neuronmem_status_t* status);

/* The canonical name of a code, e.g. "INVALID_ARGUMENT"; static storage. Unknown codes yield "UNKNOWN". */
NEURONMEM_API const char* neuronmem_status_code_name(neuronmem_status_code_t code);

/* The library's version, NEURONMEM_VERSION_NUMBER of the build that is running. */
NEURONMEM_API uint32_t neuronmem_version(void);

/* The library's version as "MAJOR.MINOR.PATCH"; static storage. */
NEURONMEM_API const char* neuronmem_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* NEURONMEM_STATUS_H */
