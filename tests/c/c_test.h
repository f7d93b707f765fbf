/* What the C17 tests share: a check that counts failures, the code of a status (freed), a client, and the
 * exit code. Header-only (static inline), included by each test's one translation unit. */
#ifndef NEURONMEM_TESTS_C_C_TEST_H_
#define NEURONMEM_TESTS_C_C_TEST_H_

#include <neuronmem/neuronmem.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

/* Prints the failed condition with its place and counts it; the test goes on. */
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Returns the status code and frees the status; a failure must carry a NUL-terminated message. */
static inline neuronmem_status_code_t code_of(neuronmem_status_t* s) {
  neuronmem_status_code_t c = neuronmem_status_code(s);
  if (s) {
    neuronmem_string_t m = neuronmem_status_message(s);
    CHECK(m.size > 0 && m.data[m.size] == '\0');
  }
  neuronmem_status_free(s);
  return c;
}

/* A client of `num_cores` cores with `device_bytes` of device memory each and `pinned_bytes` of pinned host
 * memory, and its devices (`*devices`, `*num_devices`; either may be NULL). NULL (the failure checked) if
 * it cannot be made. */
static inline neuronmem_client_t* new_client(uint32_t num_cores, uint64_t device_bytes, uint64_t pinned_bytes,
                                             neuronmem_device_t* const** devices, size_t* num_devices) {
  neuronmem_client_options_t opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  opts.num_cores = num_cores;
  opts.device_bytes_per_core = device_bytes;
  opts.pinned_host_bytes = pinned_bytes;
  neuronmem_client_t* client = NULL;
  CHECK(code_of(neuronmem_client_create(&opts, &client)) == NEURONMEM_STATUS_OK);
  if (client && (devices || num_devices)) {
    neuronmem_device_t* const* d = NULL;
    size_t n = 0;
    CHECK(code_of(neuronmem_client_devices(client, &d, &n)) == NEURONMEM_STATUS_OK);
    if (devices) *devices = d;
    if (num_devices) *num_devices = n;
  }
  return client;
}

/* Destroys the client (checked) and returns the exit code: 0 when every check passed, after saying so
 * under `name`. */
/* An f32 buffer of shape dims[0..num_dims) in `memory`, uploaded from `data` (NULL, the failure checked, if it
 * cannot be made). */
static inline neuronmem_buffer_t* upload_f32(neuronmem_client_t* client, neuronmem_memory_t* memory, const float* data,
                                             const int64_t* dims, size_t num_dims) {
  neuronmem_buffer_from_host_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
  a.data = data;
  a.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  a.dims = dims;
  a.num_dims = num_dims;
  a.memory = memory;
  neuronmem_buffer_t* b = NULL;
  CHECK(code_of(neuronmem_buffer_from_host(client, &a, &b, NULL, NULL)) == NEURONMEM_STATUS_OK);
  return b;
}

static inline int finish(neuronmem_client_t* client, const char* name) {
  CHECK(code_of(neuronmem_client_destroy(client)) == NEURONMEM_STATUS_OK);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

#endif /* NEURONMEM_TESTS_C_C_TEST_H_ */
