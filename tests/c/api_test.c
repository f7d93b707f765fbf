/* The public header used from plain C17: creates a client, walks the listing, allocates pinned host
 * memory, checks a few error paths. Exit code 0 = pass; each failed check prints and counts. */
#include <neuronmem/neuronmem.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Returns the status code and frees the status. */
static neuronmem_status_code_t code_of(neuronmem_status_t* s) {
  neuronmem_status_code_t c = neuronmem_status_code(s);
  if (s) {
    neuronmem_string_t m = neuronmem_status_message(s);
    CHECK(m.size > 0 && m.data[m.size] == '\0');
  }
  neuronmem_status_free(s);
  return c;
}

int main(void) {
  neuronmem_client_options_t opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.num_cores = 3;
  opts.device_bytes_per_core = 2u << 20;
  opts.pinned_host_bytes = 32u << 20;
  neuronmem_client_t* client = NULL;
  CHECK(code_of(neuronmem_client_create(&opts, &client)) == NEURONMEM_STATUS_OK);
  if (!client) return 1;

  neuronmem_device_t* const* devices = NULL;
  size_t n_dev = 0;
  CHECK(code_of(neuronmem_client_devices(client, &devices, &n_dev)) == NEURONMEM_STATUS_OK);
  CHECK(n_dev == 3);
  for (size_t d = 0; d < n_dev; ++d) {
    neuronmem_memory_t* mem = NULL;
    CHECK(code_of(neuronmem_device_default_memory(devices[d], &mem)) == NEURONMEM_STATUS_OK);
    neuronmem_memory_description_t md;
    memset(&md, 0, sizeof md);
    md.struct_size = sizeof md;
    CHECK(code_of(neuronmem_memory_describe(mem, &md)) == NEURONMEM_STATUS_OK);
    CHECK(md.id == (int32_t)(2 * d));
    CHECK(md.kind_id == NEURONMEM_MEMORY_KIND_DEVICE);
    CHECK(strcmp(md.kind.data, "device") == 0);
    CHECK(code_of(neuronmem_device_memory_of_kind(devices[d], NEURONMEM_MEMORY_KIND_UNPINNED_HOST, &mem)) ==
          NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_memory_describe(mem, &md)) == NEURONMEM_STATUS_OK);
    CHECK(md.id == (int32_t)(6 + d));
  }

  void* p = NULL;
  CHECK(code_of(neuronmem_host_allocate(client, 4096, 0, &p)) == NEURONMEM_STATUS_OK);
  CHECK(p != NULL);
  if (p) {
    memset(p, 7, 4096);
    int32_t pinned = 0;
    CHECK(code_of(neuronmem_host_is_pinned(client, p, 4096, &pinned)) == NEURONMEM_STATUS_OK && pinned == 1);
    CHECK(code_of(neuronmem_host_free(client, p)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_host_free(client, p)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  }
  CHECK(code_of(neuronmem_host_allocate(client, 0, 0, &p)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  CHECK(p == NULL);
  CHECK(code_of(neuronmem_client_lookup_memory(client, 9, &(neuronmem_memory_t*){NULL})) == NEURONMEM_STATUS_NOT_FOUND);
  {
    /* A caller-completed event, from C: pending until completed, completed once. */
    neuronmem_event_t* ev = NULL;
    int32_t ready = 1;
    CHECK(code_of(neuronmem_event_create(client, &ev)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_event_is_ready(ev, &ready)) == NEURONMEM_STATUS_OK && ready == 0);
    CHECK(code_of(neuronmem_event_complete(ev, NULL)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_event_wait(ev, -1)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_event_complete(ev, NULL)) == NEURONMEM_STATUS_FAILED_PRECONDITION);
    neuronmem_event_destroy(ev);
  }
  CHECK(code_of(neuronmem_client_destroy(client)) == NEURONMEM_STATUS_OK);
  CHECK(neuronmem_version() == NEURONMEM_VERSION_NUMBER);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c api: all checks passed\n");
  return 0;
}
