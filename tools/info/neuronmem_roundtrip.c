/* neuronmem-roundtrip: the second half of the main job. Uploads a small decode-metadata tensor (a block
 * table) into every memory of a client, copies it across kinds and cores, writes one row in place, reads
 * everything back, checks every byte, and prints what it did. Built on the public C API only. */
#include <neuronmem/neuronmem.h>

#include "tool_status.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int failed(neuronmem_status_t* s, const char* what) {
  return neuronmem_tool_report("neuronmem-roundtrip", s, what);
}

static const char* describe(neuronmem_memory_t* m, char* buf, size_t n) {
  neuronmem_memory_description_t d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  if (failed(neuronmem_memory_describe(m, &d), "describe")) return "?";
  snprintf(buf, n, "%.*s", (int)d.debug_string.size, d.debug_string.data);
  return buf;
}

enum { kRows = 16, kCols = 8 };

int main(void) {
  neuronmem_client_t* client = NULL;
  if (failed(neuronmem_client_create(NULL, &client), "create client")) return 1;
  int32_t table[kRows][kCols];
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) table[r][c] = r * 100 + c;
  const int64_t dims[2] = {kRows, kCols};
  neuronmem_memory_t* const* mems = NULL;
  size_t n_mem = 0;
  int rc = failed(neuronmem_client_memories(client, &mems, &n_mem), "memories");
  char a[64], b[64];

  /* The zero-copy path: metadata written straight into the pinned-host arena. */
  void* pinned = NULL;
  rc = rc || failed(neuronmem_client_host_allocate(client, sizeof table, 0, &pinned), "host allocate");
  if (!rc) memcpy(pinned, table, sizeof table);

  for (size_t i = 0; i < n_mem && !rc; ++i) {
    neuronmem_memory_kind_t kind;
    rc = failed(neuronmem_memory_kind(mems[i], &kind), "kind");
    if (rc) break;
    const int zero_copy = kind == NEURONMEM_MEMORY_KIND_PINNED_HOST;
    neuronmem_buffer_from_host_args_t args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.data = zero_copy ? pinned : (const void*)table;
    args.element_type = NEURONMEM_ELEMENT_TYPE_S32;
    args.host_buffer_semantics =
        zero_copy ? NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY : NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL;
    args.dims = dims;
    args.num_dims = 2;
    args.memory = mems[i];
    neuronmem_buffer_t* buf = NULL;
    neuronmem_event_t* ready = NULL;
    rc = failed(neuronmem_buffer_from_host(client, &args, &buf, &ready, NULL), "upload") ||
         failed(neuronmem_event_wait(ready, -1), "upload wait");
    neuronmem_event_destroy(ready);
    if (rc) break;
    bool is_zc = false;
    rc = failed(neuronmem_buffer_is_zero_copy(buf, &is_zc), "zero copy query");
    printf("upload   %zu-byte block table -> %-40s %s\n", sizeof table, describe(mems[i], a, sizeof a),
           is_zc ? "(zero-copy: aliases the pinned arena, no bytes moved)" : "(copied)");

    /* Copy to the next memory in the listing (another kind or core), write a row in place, read back. */
    neuronmem_memory_t* next = mems[(i + 1) % n_mem];
    neuronmem_buffer_t* moved = NULL;
    neuronmem_event_t* copied = NULL;
    neuronmem_buffer_copy_args_t copy_args = {
        .struct_size = NEURONMEM_BUFFER_COPY_ARGS_STRUCT_SIZE, .src = buf, .memory = next};
    rc = rc || failed(neuronmem_buffer_copy_to_memory(&copy_args, &moved, &copied), "copy");
    int32_t row[kCols];
    for (int c = 0; c < kCols; ++c) row[c] = -1 - c;
    neuronmem_event_t* written = NULL;
    neuronmem_buffer_write_args_t write_args = {.struct_size = NEURONMEM_BUFFER_WRITE_ARGS_STRUCT_SIZE,
                                                .buffer = moved,
                                                .offset = 3 * sizeof row,
                                                .size = sizeof row,
                                                .src = row,
                                                .wait = {&copied, 1}};
    rc = rc || failed(neuronmem_buffer_write(&write_args, &written), "write");
    int32_t back[kRows][kCols];
    memset(back, 0, sizeof back);
    neuronmem_buffer_read_args_t read_args = {.struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE,
                                              .buffer = moved,
                                              .size = sizeof back,
                                              .dst = back,
                                              .wait = {&written, 1}};
    rc = rc || failed(neuronmem_buffer_read(&read_args, NULL), "read");
    neuronmem_event_destroy(copied);
    neuronmem_event_destroy(written);
    int bad = 0;
    for (int r = 0; r < kRows && !rc; ++r)
      for (int c = 0; c < kCols; ++c) bad += back[r][c] != (r == 3 ? row[c] : table[r][c]);
    if (!rc) {
      printf("copy     %-40s -> %-40s wrote row 3 in place, read back: %s\n", describe(mems[i], a, sizeof a),
             describe(next, b, sizeof b), bad ? "MISMATCH" : "all bytes match");
    }
    if (bad) rc = 1;
    neuronmem_buffer_destroy(moved);
    neuronmem_buffer_destroy(buf);
  }
  if (pinned) rc |= failed(neuronmem_client_host_free(client, pinned), "host free");
  rc |= failed(neuronmem_client_destroy(client), "destroy client");
  printf("%s\n", rc ? "round trip FAILED" : "round trip through every memory kind: OK");
  return rc;
}
