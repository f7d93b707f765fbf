/* The element types from 13 on (issue 25): complex, the 8-bit and 6-bit floats, from C17. Their sizes; a
 * program returning complex<f32> compiles (it failed: "cannot be held in a buffer"), executes and reads back;
 * complex<f64> and f8/f6 buffers go in as arguments; f32 -> f8E4M3FN results come back bit-exact; the manifest
 * reports the buffer type. Exit code 0 = pass. */
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

/* OK, or prints the message and counts a failure. */
static int ok(neuronmem_status_t* s, int line) {
  if (!s) return 1;
  neuronmem_string_t m = neuronmem_status_message(s);
  fprintf(stderr, "line %d: %.*s\n", line, (int)m.size, m.data);
  neuronmem_status_free(s);
  ++failures;
  return 0;
}
#define OK(call) ok((call), __LINE__)

static neuronmem_client_t* client;
static neuronmem_device_t* const* devices;

static neuronmem_executable_t* compile(const char* text) {
  neuronmem_compile_options_t co;
  memset(&co, 0, sizeof co);
  co.struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE;
  neuronmem_executable_t* exe = NULL;
  OK(neuronmem_executable_compile_text(client, text, strlen(text), &co, &exe));
  return exe;
}

static neuronmem_buffer_t* upload(neuronmem_executable_t* exe, size_t index, neuronmem_element_type_t type,
                                  const void* data, int64_t n) {
  const int64_t dims[1] = {n};
  neuronmem_buffer_from_host_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
  a.data = data;
  a.element_type = type;
  a.dims = dims;
  a.num_dims = 1;
  neuronmem_buffer_t* b = NULL;
  OK(neuronmem_executable_parameter_memory(exe, devices[0], index, &a.memory));
  OK(neuronmem_buffer_from_host(client, &a, &b, NULL, NULL));
  return b;
}

/* Executes with `n` arguments, reads the one result's `size` bytes into out and returns its element type. */
static neuronmem_element_type_t run(neuronmem_executable_t* exe, neuronmem_buffer_t** args, size_t n, void* out,
                                    uint64_t size) {
  neuronmem_execute_args_t ea;
  memset(&ea, 0, sizeof ea);
  ea.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
  ea.executable = exe;
  ea.device = devices[0];
  ea.arguments = args;
  ea.num_arguments = n;
  neuronmem_buffer_t* result = NULL;
  neuronmem_event_t* done = NULL;
  neuronmem_element_type_t type = NEURONMEM_ELEMENT_TYPE_FORCE_32;
  if (!OK(neuronmem_executable_execute(&ea, &result, &done, NULL))) return type;
  OK(neuronmem_event_wait(done, -1));
  uint64_t bytes = 0;
  OK(neuronmem_buffer_on_device_size(result, &bytes));
  CHECK(bytes == size);
  neuronmem_buffer_read_args_t r;
  memset(&r, 0, sizeof r);
  r.struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE;
  r.buffer = result;
  r.size = size;
  r.dst = out;
  OK(neuronmem_buffer_read(&r, NULL));
  OK(neuronmem_buffer_element_type(result, &type));
  neuronmem_event_destroy(done);
  neuronmem_buffer_destroy(result);
  for (size_t i = 0; i < n; ++i) neuronmem_buffer_destroy(args[i]);
  neuronmem_executable_destroy(exe);
  return type;
}

int main(void) {
  const struct {
    neuronmem_element_type_t type;
    uint64_t bytes;
  } sizes[] = {{NEURONMEM_ELEMENT_TYPE_C64, 8},
               {NEURONMEM_ELEMENT_TYPE_C128, 16},
               {NEURONMEM_ELEMENT_TYPE_F8E5M2, 1},
               {NEURONMEM_ELEMENT_TYPE_F8E4M3FN, 1},
               {NEURONMEM_ELEMENT_TYPE_F8E4M3B11FNUZ, 1},
               {NEURONMEM_ELEMENT_TYPE_F8E5M2FNUZ, 1},
               {NEURONMEM_ELEMENT_TYPE_F8E4M3FNUZ, 1},
               {NEURONMEM_ELEMENT_TYPE_F8E4M3, 1},
               {NEURONMEM_ELEMENT_TYPE_F8E3M4, 1},
               {NEURONMEM_ELEMENT_TYPE_F8E8M0FNU, 1},
               {NEURONMEM_ELEMENT_TYPE_F6E2M3FN, 1},
               {NEURONMEM_ELEMENT_TYPE_F6E3M2FN, 1},
               {NEURONMEM_ELEMENT_TYPE_S4, 1},
               {NEURONMEM_ELEMENT_TYPE_U4, 1},
               {NEURONMEM_ELEMENT_TYPE_S2, 1},
               {NEURONMEM_ELEMENT_TYPE_U2, 1},
               {NEURONMEM_ELEMENT_TYPE_F4E2M1FN, 1}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    CHECK(neuronmem_element_type_size(sizes[i].type) == sizes[i].bytes);
  }
  CHECK(neuronmem_element_type_size((neuronmem_element_type_t)30) == 0); /* the first value not (yet) defined */

  neuronmem_client_options_t opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  opts.num_cores = 1;
  if (!OK(neuronmem_client_create(&opts, &client))) return 1;
  size_t num_devices = 0;
  OK(neuronmem_client_devices(client, &devices, &num_devices));

  /* complex<f32> out of two f32 arguments. */
  {
    neuronmem_executable_t* exe = compile(
        "func.func @main(%re: tensor<2xf32>, %im: tensor<2xf32>) -> tensor<2xcomplex<f32>> {\n"
        "  %0 = stablehlo.complex %re, %im : tensor<2xcomplex<f32>>\n"
        "  return %0 : tensor<2xcomplex<f32>>\n"
        "}\n");
    if (exe) {
      neuronmem_executable_value_t v;
      memset(&v, 0, sizeof v);
      v.struct_size = NEURONMEM_EXECUTABLE_VALUE_STRUCT_SIZE;
      OK(neuronmem_executable_output(exe, 0, &v));
      CHECK(v.element_type == NEURONMEM_ELEMENT_TYPE_C64 && v.bytes == 16);
      const float re[2] = {1.5f, -2.0f}, im[2] = {0.25f, 8.0f};
      neuronmem_buffer_t* args[2] = {upload(exe, 0, NEURONMEM_ELEMENT_TYPE_F32, re, 2),
                                     upload(exe, 1, NEURONMEM_ELEMENT_TYPE_F32, im, 2)};
      float out[4] = {0, 0, 0, 0};
      CHECK(run(exe, args, 2, out, sizeof out) == NEURONMEM_ELEMENT_TYPE_C64);
      CHECK(out[0] == 1.5f && out[1] == 0.25f && out[2] == -2.0f && out[3] == 8.0f);
    }
  }
  /* complex<f64> in, its imaginary part out. */
  {
    neuronmem_executable_t* exe = compile(
        "func.func @main(%z: tensor<2xcomplex<f64>>) -> tensor<2xf64> {\n"
        "  %0 = stablehlo.imag %z : (tensor<2xcomplex<f64>>) -> tensor<2xf64>\n"
        "  return %0 : tensor<2xf64>\n"
        "}\n");
    if (exe) {
      const double z[4] = {1.0, 3.0, -4.0, 0.5};
      neuronmem_buffer_t* args[1] = {upload(exe, 0, NEURONMEM_ELEMENT_TYPE_C128, z, 2)};
      double out[2] = {0, 0};
      CHECK(run(exe, args, 1, out, sizeof out) == NEURONMEM_ELEMENT_TYPE_F64);
      CHECK(out[0] == 3.0 && out[1] == 0.5);
    }
  }
  /* f32 -> f8E4M3FN: 1, 0.5, -2 and the largest finite value 448, bit-exact. */
  {
    neuronmem_executable_t* exe = compile(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf8E4M3FN> {\n"
        "  %0 = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf8E4M3FN>\n"
        "  return %0 : tensor<4xf8E4M3FN>\n"
        "}\n");
    if (exe) {
      const float x[4] = {1.0f, 0.5f, -2.0f, 448.0f};
      neuronmem_buffer_t* args[1] = {upload(exe, 0, NEURONMEM_ELEMENT_TYPE_F32, x, 4)};
      unsigned char out[4] = {0, 0, 0, 0};
      CHECK(run(exe, args, 1, out, sizeof out) == NEURONMEM_ELEMENT_TYPE_F8E4M3FN);
      CHECK(out[0] == 0x38 && out[1] == 0x30 && out[2] == 0xC0 && out[3] == 0x7E);
    }
  }
  /* f8E5M2 and f6E2M3FN buffers in: 0x3C is 1.0 in f8E5M2, 0x08 is 1.0 and 0x2A -1.25 in f6E2M3FN. */
  {
    neuronmem_executable_t* exe = compile(
        "func.func @main(%a: tensor<2xf8E5M2>, %b: tensor<2xf6E2M3FN>) -> tensor<2xf32> {\n"
        "  %0 = stablehlo.convert %a : (tensor<2xf8E5M2>) -> tensor<2xf32>\n"
        "  %1 = stablehlo.convert %b : (tensor<2xf6E2M3FN>) -> tensor<2xf32>\n"
        "  %2 = stablehlo.add %0, %1 : tensor<2xf32>\n"
        "  return %2 : tensor<2xf32>\n"
        "}\n");
    if (exe) {
      const unsigned char a[2] = {0x3C, 0x3C}, b[2] = {0x08, 0x2A};
      neuronmem_buffer_t* args[2] = {upload(exe, 0, NEURONMEM_ELEMENT_TYPE_F8E5M2, a, 2),
                                     upload(exe, 1, NEURONMEM_ELEMENT_TYPE_F6E2M3FN, b, 2)};
      float out[2] = {0, 0};
      CHECK(run(exe, args, 2, out, sizeof out) == NEURONMEM_ELEMENT_TYPE_F32);
      CHECK(out[0] == 2.0f && out[1] == -0.25f);
    }
  }
  /* The manifest gives the buffer type of a complex argument. */
  {
    const char text[] =
        "func.func @main(%z: tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>> {\n"
        "  return %z : tensor<3xcomplex<f32>>\n"
        "}\n";
    neuronmem_manifest_t* m = NULL;
    if (OK(neuronmem_manifest_load_text(text, sizeof text - 1, NULL, &m))) {
      neuronmem_manifest_value_t v;
      memset(&v, 0, sizeof v);
      v.struct_size = NEURONMEM_MANIFEST_VALUE_STRUCT_SIZE;
      OK(neuronmem_manifest_argument(m, 0, &v));
      CHECK(v.buffer_element_type == NEURONMEM_ELEMENT_TYPE_C64);
      neuronmem_manifest_destroy(m);
    }
  }
  OK(neuronmem_client_destroy(client));
  if (failures) return 1;
  printf("element types: all checks passed\n");
  return 0;
}
