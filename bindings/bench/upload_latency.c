/* The C baseline of the bindings' latency figures (scripts/bench-bindings.sh): the same two small operations
 * every binding's benchmark times, through the C API directly:
 *   upload: a 256-byte f32[64] neuronmem_buffer_from_host into core 0's device memory (copied during the
 *           call), then neuronmem_buffer_destroy;
 *   write:  a 256-byte in-place neuronmem_buffer_write into an existing buffer (the per-step decode-metadata
 *           update), waiting for it (NULL out-event).
 * Prints "c upload <ns/op>" and "c write <ns/op>": the best of 5 repetitions of the mean over N operations. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <neuronmem/neuronmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void ok(neuronmem_status_t* s) {
  if (s) {
    fprintf(stderr, "%s\n", neuronmem_status_message(s).data);
    exit(1);
  }
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 200000;
  neuronmem_client_options_t opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  opts.num_cores = 2;
  neuronmem_client_t* client = NULL;
  ok(neuronmem_client_create(&opts, &client));
  neuronmem_memory_t* mem = NULL;
  ok(neuronmem_client_lookup_memory(client, 0, &mem));
  float data[64];
  for (int i = 0; i < 64; ++i) data[i] = (float)i;
  const int64_t dims[1] = {64};
  neuronmem_buffer_from_host_args_t up;
  memset(&up, 0, sizeof up);
  up.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
  up.data = data;
  up.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  up.dims = dims;
  up.num_dims = 1;
  up.memory = mem;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now_ns();
    for (long i = 0; i < n; ++i) {
      neuronmem_buffer_t* b = NULL;
      ok(neuronmem_buffer_from_host(client, &up, &b, NULL, NULL));
      neuronmem_buffer_destroy(b);
    }
    double per = (now_ns() - t0) / (double)n;
    if (per < best) best = per;
  }
  printf("c upload %.1f\n", best);

  neuronmem_buffer_t* b = NULL;
  ok(neuronmem_buffer_from_host(client, &up, &b, NULL, NULL));
  neuronmem_buffer_write_args_t wr;
  memset(&wr, 0, sizeof wr);
  wr.struct_size = NEURONMEM_BUFFER_WRITE_ARGS_STRUCT_SIZE;
  wr.buffer = b;
  wr.size = sizeof data;
  wr.src = data;
  best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now_ns();
    for (long i = 0; i < n; ++i) ok(neuronmem_buffer_write(&wr, NULL));
    double per = (now_ns() - t0) / (double)n;
    if (per < best) best = per;
  }
  printf("c write %.1f\n", best);
  neuronmem_buffer_destroy(b);
  ok(neuronmem_client_destroy(client));
  return 0;
}
