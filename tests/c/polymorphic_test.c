/* executable.h from C17 with a shape-polymorphic entry (issue 26 item 1), as jax.export writes one: @main over
 * tensor<?x2xf32>, its shape_assertion, the body in a private function taking the dimension variable as a
 * jax.global_constant argument. The executable's parameter has a -1 dim; each execution runs the specialization
 * for its argument's shape (num_specializations counts them); a failing shape_assertion fails the execution with
 * jax's message; a shape that does not fit the entry is INVALID_ARGUMENT. Exit code 0 = pass. */
#include "c_test.h"

static const char kText[] =
    "module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32} {\n"
    "  func.func public @main(%arg0: tensor<?x2xf32>) -> (tensor<?x2xf32> {jax.result_info = \"result\"}) {\n"
    "    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x2xf32>) -> tensor<i32>\n"
    "    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>\n"
    "    %c = stablehlo.constant dense<2> : tensor<i64>\n"
    "    %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
    "    stablehlo.custom_call @shape_assertion(%2, %1) {api_version = 2 : i32, error_message = \"Expected value "
    ">= 2 for dimension variable 'b'. Obtained dimension variables: 'b' = {0}.\", has_side_effect = true} : "
    "(tensor<i1>, tensor<i64>) -> ()\n"
    "    %3 = call @_wrapped_jax_export_main(%1, %arg0) : (tensor<i64>, tensor<?x2xf32>) -> tensor<?x2xf32>\n"
    "    return %3 : tensor<?x2xf32>\n"
    "  }\n"
    "  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = \"b\"}, %arg1: "
    "tensor<?x2xf32>) -> tensor<?x2xf32> {\n"
    "    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>\n"
    "    %0 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32>\n"
    "    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>\n"
    "    %c = stablehlo.constant dense<2> : tensor<1xi32>\n"
    "    %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>\n"
    "    %3 = stablehlo.dynamic_broadcast_in_dim %cst, %2, dims = [] : (tensor<f32>, tensor<2xi32>) -> "
    "tensor<?x2xf32>\n"
    "    %4 = stablehlo.multiply %arg1, %3 : tensor<?x2xf32>\n"
    "    return %4 : tensor<?x2xf32>\n"
    "  }\n"
    "}\n";

static uint64_t specializations(neuronmem_executable_t* exe) {
  neuronmem_executable_properties_t p;
  memset(&p, 0, sizeof p);
  p.struct_size = NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE;
  CHECK(code_of(neuronmem_executable_properties(exe, &p)) == NEURONMEM_STATUS_OK);
  CHECK(p.num_parameters == 1 && p.num_outputs == 1);
  return p.num_specializations;
}

/* Runs the executable on `rows` rows of 0, 1, 2, ...; returns the execution's code (the event's when it runs);
 * on success checks the result's shape and values (3x the input). */
static neuronmem_status_code_t run(neuronmem_client_t* client, neuronmem_device_t* device, neuronmem_memory_t* mem,
                                   neuronmem_executable_t* exe, int64_t rows, neuronmem_string_t* message) {
  float x[16], y[16];
  for (int i = 0; i < 16; ++i) x[i] = (float)i;
  const int64_t dims[2] = {rows, 2};
  neuronmem_buffer_t* arg = upload_f32(client, mem, x, dims, 2);
  neuronmem_execute_args_t ea;
  memset(&ea, 0, sizeof ea);
  ea.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
  ea.executable = exe;
  ea.device = device;
  ea.arguments = &arg;
  ea.num_arguments = 1;
  neuronmem_buffer_t* result = NULL;
  neuronmem_event_t* done = NULL;
  neuronmem_status_t* s = neuronmem_executable_execute(&ea, &result, &done, NULL);
  if (!s) s = neuronmem_event_wait(done, -1);
  neuronmem_status_code_t code = neuronmem_status_code(s);
  if (s && message) {
    neuronmem_string_t m = neuronmem_status_message(s);
    static char keep[1024];
    const size_t n = m.size < sizeof keep ? m.size : sizeof keep - 1;
    memcpy(keep, m.data, n);
    message->data = keep;
    message->size = n;
  }
  neuronmem_status_free(s);
  if (code == NEURONMEM_STATUS_OK) {
    const int64_t* got = NULL;
    size_t num_dims = 0;
    CHECK(code_of(neuronmem_buffer_dims(result, &got, &num_dims)) == NEURONMEM_STATUS_OK);
    CHECK(num_dims == 2 && got[0] == rows && got[1] == 2);
    neuronmem_buffer_read_args_t r;
    memset(&r, 0, sizeof r);
    r.struct_size = NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE;
    r.buffer = result;
    r.size = (size_t)rows * 2 * sizeof(float);
    r.dst = y;
    CHECK(code_of(neuronmem_buffer_read(&r, NULL)) == NEURONMEM_STATUS_OK);
    for (int64_t i = 0; i < rows * 2; ++i) CHECK(y[i] == 3.0f * x[i]);
  }
  neuronmem_buffer_destroy(result);
  neuronmem_event_destroy(done);
  neuronmem_buffer_destroy(arg);
  return code;
}

static int contains(neuronmem_string_t s, const char* text) {
  const size_t n = strlen(text);
  for (size_t i = 0; i + n <= s.size; ++i)
    if (memcmp(s.data + i, text, n) == 0) return 1;
  return 0;
}

int main(void) {
  neuronmem_device_t* const* devices = NULL;
  neuronmem_client_t* client = new_client(1, 4u << 20, 32u << 20, &devices, NULL);
  if (!client) return 1;
  neuronmem_compile_options_t co;
  memset(&co, 0, sizeof co);
  co.struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE;
  co.filename = "poly.mlir";
  neuronmem_executable_t* exe = NULL;
  CHECK(code_of(neuronmem_executable_compile_text(client, kText, sizeof kText - 1, &co, &exe)) == NEURONMEM_STATUS_OK);
  if (!exe) return 1;
  neuronmem_executable_value_t v;
  memset(&v, 0, sizeof v);
  v.struct_size = NEURONMEM_EXECUTABLE_VALUE_STRUCT_SIZE;
  CHECK(code_of(neuronmem_executable_parameter(exe, 0, &v)) == NEURONMEM_STATUS_OK);
  CHECK(v.num_dims == 2 && v.dims[0] == -1 && v.dims[1] == 2);
  CHECK(specializations(exe) == 0);
  neuronmem_memory_t* mem = NULL;
  CHECK(code_of(neuronmem_executable_parameter_memory(exe, devices[0], 0, &mem)) == NEURONMEM_STATUS_OK);

  CHECK(run(client, devices[0], mem, exe, 3, NULL) == NEURONMEM_STATUS_OK);
  CHECK(run(client, devices[0], mem, exe, 5, NULL) == NEURONMEM_STATUS_OK);
  CHECK(run(client, devices[0], mem, exe, 3, NULL) == NEURONMEM_STATUS_OK); /* the cached one */
  CHECK(specializations(exe) == 2);

  /* b = 1 fails the module's own check, at execute; the message is jax's with the value. */
  neuronmem_string_t m = {NULL, 0};
  CHECK(run(client, devices[0], mem, exe, 1, &m) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  CHECK(contains(m,
                 "@shape_assertion: Expected value >= 2 for dimension variable 'b'. Obtained dimension "
                 "variables: 'b' = 1."));
  CHECK(specializations(exe) == 3);

  /* A buffer of another static dim does not fit tensor<?x2xf32>. */
  float z[6] = {0};
  const int64_t dims3[2] = {2, 3};
  neuronmem_buffer_t* bad = upload_f32(client, mem, z, dims3, 2);
  neuronmem_execute_args_t ea;
  memset(&ea, 0, sizeof ea);
  ea.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
  ea.executable = exe;
  ea.device = devices[0];
  ea.arguments = &bad;
  ea.num_arguments = 1;
  neuronmem_buffer_t* result = NULL;
  neuronmem_event_t* done = NULL;
  CHECK(code_of(neuronmem_executable_execute(&ea, &result, &done, NULL)) == NEURONMEM_STATUS_INVALID_ARGUMENT);
  CHECK(result == NULL && done == NULL);
  CHECK(specializations(exe) == 3);
  neuronmem_buffer_destroy(bad);

  neuronmem_executable_destroy(exe);
  return finish(client, "c polymorphic");
}
