/* The README's example: create a client, upload each argument into the memory kind the graph expects,
 * compile, execute, read back. Build: cc -std=c17 use_from_c.c $(pkg-config --cflags --libs neuronmem) */
#include <neuronmem/neuronmem.h>
#include <stdio.h>
#include <stdlib.h>

static void ok(neuronmem_status_t* s) { /* NULL is OK; otherwise print the error and stop */
  if (!s) return;
  neuronmem_string_t m = neuronmem_status_message(s);
  fprintf(stderr, "error: %.*s\n", (int)m.size, m.data);
  exit(1);
}

static const char kGraph[] = /* the weights live in pinned_host, read in place; x goes to the device */
    "func.func @main(%w: tensor<4xf32> {mhlo.memory_kind = \"pinned_host\"}, %x: tensor<4xf32>)\n"
    "    -> tensor<4xf32> {\n"
    "  %0 = stablehlo.multiply %w, %x : tensor<4xf32>\n"
    "  return %0 : tensor<4xf32>\n"
    "}\n";

int main(void) {
  neuronmem_client_options_t opts = {.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE, .num_cores = 1};
  neuronmem_client_t* client = NULL;
  ok(neuronmem_client_create(&opts, &client));
  neuronmem_device_t* const* devices = NULL;
  size_t num_devices = 0;
  ok(neuronmem_client_devices(client, &devices, &num_devices));

  neuronmem_compile_options_t co = {.struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE};
  neuronmem_executable_t* exe = NULL;
  ok(neuronmem_executable_compile_text(client, kGraph, sizeof kGraph - 1, &co, &exe));

  const float host[2][4] = {{1, 2, 3, 4}, {10, 10, 10, 10}};
  const int64_t dims[1] = {4};
  neuronmem_buffer_t* args[2];
  for (size_t i = 0; i < 2; ++i) { /* upload into the memory the compiled graph expects for parameter i */
    neuronmem_buffer_from_host_args_t a = {.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE,
                                           .data = host[i],
                                           .element_type = NEURONMEM_ELEMENT_TYPE_F32,
                                           .dims = dims,
                                           .num_dims = 1};
    ok(neuronmem_executable_parameter_memory(exe, devices[0], i, &a.memory));
    ok(neuronmem_buffer_from_host(client, &a, &args[i], NULL, NULL));
  }
  neuronmem_execute_args_t ea = {.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE,
                                 .executable = exe,
                                 .device = devices[0],
                                 .arguments = args,
                                 .num_arguments = 2};
  neuronmem_buffer_t* result = NULL;
  neuronmem_event_t* done = NULL;
  ok(neuronmem_executable_execute(&ea, &result, &done, NULL));
  ok(neuronmem_event_wait(done, -1));

  float out[4];
  neuronmem_buffer_read_args_t r = {
      .struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE, .buffer = result, .size = sizeof out, .dst = out};
  ok(neuronmem_buffer_read(&r, NULL));
  printf("w * x = %g %g %g %g\n", out[0], out[1], out[2], out[3]);

  neuronmem_event_destroy(done);
  neuronmem_buffer_destroy(result);
  for (size_t i = 0; i < 2; ++i) neuronmem_buffer_destroy(args[i]);
  neuronmem_executable_destroy(exe);
  ok(neuronmem_client_destroy(client));
  return out[3] == 40.0f ? 0 : 1;
}
