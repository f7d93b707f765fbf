/* The public header used from plain C17: creates a client, walks the listing, allocates pinned host
 * memory, moves bytes through the args-struct calls (sizes from the NEURONMEM_*_STRUCT_SIZE macros, waits
 * as event lists), checks a few error paths. Exit code 0 = pass; each failed check prints and counts. */
#include "c_test.h"

int main(void) {
  neuronmem_device_t* const* devices = NULL;
  size_t n_dev = 0;
  neuronmem_client_t* client = new_client(3, 2u << 20, 32u << 20, &devices, &n_dev);
  if (!client) return 1;
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
  CHECK(code_of(neuronmem_client_host_allocate(client, 4096, 0, &p)) == NEURONMEM_STATUS_OK);
  CHECK(p != NULL);
  if (p) {
    memset(p, 7, 4096);
    bool pinned = false;
    CHECK(code_of(neuronmem_client_host_is_pinned(client, p, 4096, &pinned)) == NEURONMEM_STATUS_OK && pinned);
    CHECK(code_of(neuronmem_client_host_free(client, p)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_client_host_free(client, p)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  }
  CHECK(code_of(neuronmem_client_host_allocate(client, 0, 0, &p)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  CHECK(p == NULL);
  CHECK(code_of(neuronmem_client_lookup_memory(client, 9, &(neuronmem_memory_t*){NULL})) == NEURONMEM_STATUS_NOT_FOUND);
  {
    /* A caller-completed event, from C: pending until completed, completed once. */
    neuronmem_event_t* ev = NULL;
    bool ready = true;
    CHECK(code_of(neuronmem_event_create(client, &ev)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_event_is_ready(ev, &ready)) == NEURONMEM_STATUS_OK && !ready);
    CHECK(code_of(neuronmem_event_complete(ev, NULL)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_event_wait(ev, -1)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_event_complete(ev, NULL)) == NEURONMEM_STATUS_FAILED_PRECONDITION);
    neuronmem_event_destroy(ev);
  }
  {
    /* Upload, copy to another core's device memory after the upload's event, read back: every transfer
     * takes one args struct. */
    neuronmem_memory_t* dev0 = NULL;
    neuronmem_memory_t* dev1 = NULL;
    CHECK(code_of(neuronmem_device_default_memory(devices[0], &dev0)) == NEURONMEM_STATUS_OK);
    CHECK(code_of(neuronmem_device_default_memory(devices[1], &dev1)) == NEURONMEM_STATUS_OK);
    const int32_t values[6] = {1, -2, 3, -4, 5, -6};
    const int64_t dims[2] = {2, 3};
    neuronmem_buffer_from_host_args_t up;
    memset(&up, 0, sizeof up);
    up.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
    up.data = values;
    up.element_type = NEURONMEM_ELEMENT_TYPE_S32;
    up.host_buffer_semantics = NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL;
    up.dims = dims;
    up.num_dims = 2;
    up.memory = dev0;
    neuronmem_buffer_t* buf = NULL;
    neuronmem_event_t* uploaded = NULL;
    CHECK(code_of(neuronmem_buffer_from_host(client, &up, &buf, &uploaded, NULL)) == NEURONMEM_STATUS_OK);
    neuronmem_buffer_copy_args_t cp = {
        .struct_size = NEURONMEM_BUFFER_COPY_ARGS_STRUCT_SIZE, .src = buf, .memory = dev1, .wait = {&uploaded, 1}};
    neuronmem_buffer_t* moved = NULL;
    neuronmem_event_t* copied = NULL;
    CHECK(code_of(neuronmem_buffer_copy_to_memory(&cp, &moved, &copied)) == NEURONMEM_STATUS_OK);
    int32_t back[6] = {0};
    neuronmem_buffer_read_args_t rd = {.struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE,
                                       .buffer = moved,
                                       .offset = 0,
                                       .size = sizeof back,
                                       .dst = back,
                                       .wait = {&copied, 1}};
    CHECK(code_of(neuronmem_buffer_read(&rd, NULL)) == NEURONMEM_STATUS_OK);
    CHECK(memcmp(back, values, sizeof back) == 0);
    /* A struct_size below the first published size, and an extension chain of an unknown type. */
    rd.struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE - 1;
    CHECK(code_of(neuronmem_buffer_read(&rd, NULL)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
    rd.struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE;
    neuronmem_extension_base_t ext = {
        .struct_size = NEURONMEM_EXTENSION_BASE_STRUCT_SIZE, .type = (neuronmem_extension_type_t)7, .next = NULL};
    rd.extension = &ext;
    CHECK(code_of(neuronmem_buffer_read(&rd, NULL)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
    neuronmem_event_destroy(uploaded);
    neuronmem_event_destroy(copied);
    neuronmem_buffer_destroy(moved);
    neuronmem_buffer_destroy(buf);
  }
  CHECK(neuronmem_version() == NEURONMEM_VERSION_NUMBER);
  return finish(client, "c api");
}
