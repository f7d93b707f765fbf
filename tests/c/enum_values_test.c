/* Out-of-range enum values from C: C lets a caller pass any int value of an enum parameter; the library must
 * validate it as an integer (under UBSan a C++ load of such a value aborts). Exit code 0 = pass; each failed
 * check prints and counts. */
#include "c_test.h"

/* Enum fields of option and args structs (issue 23, class 9): each read as an integer before it is checked.
 * A site that loads one as its enum type aborts here under UBSan (-fsanitize=enum) for -1 and INT32_MIN. */
static void check_fields(neuronmem_client_t* client, neuronmem_device_t* device, neuronmem_memory_t* hbm, int v) {
  static const char kText[] = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n";
  const float data[4] = {1, 2, 3, 4};
  const void* host_data[1] = {data};
  int64_t dims[1] = {4};
  neuronmem_client_options_t co;
  neuronmem_client_t* other = NULL;
  neuronmem_buffer_from_host_args_t fh;
  neuronmem_buffer_t* b = NULL;
  neuronmem_event_t* ready = NULL;
  neuronmem_manifest_options_t mo;
  neuronmem_manifest_t* m = NULL;
  neuronmem_compile_options_t cmp;
  neuronmem_executable_t* e = NULL;
  neuronmem_manifest_upload_args_t up;
  neuronmem_buffer_t* uploaded[1] = {NULL};
  neuronmem_extension_base_t ext;

  memset(&co, 0, sizeof co);
  co.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  co.num_cores = 1;
  co.mlock_mode = (neuronmem_mlock_mode_t)v;
  CHECK(code_of(neuronmem_client_create(&co, &other)) == NEURONMEM_STATUS_INVALID_ARGUMENT && other == NULL);

  memset(&fh, 0, sizeof fh);
  fh.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
  fh.data = data;
  fh.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  fh.host_buffer_semantics = (neuronmem_host_buffer_semantics_t)v;
  fh.dims = dims;
  fh.num_dims = 1;
  fh.memory = hbm;
  CHECK(code_of(neuronmem_buffer_from_host(client, &fh, &b, &ready, NULL)) == NEURONMEM_STATUS_INVALID_ARGUMENT &&
        b == NULL);

  memset(&mo, 0, sizeof mo);
  mo.struct_size = NEURONMEM_MANIFEST_OPTIONS_STRUCT_SIZE;
  mo.policy = (neuronmem_placement_policy_t)v;
  CHECK(code_of(neuronmem_manifest_load_text(kText, sizeof kText - 1, &mo, &m)) == NEURONMEM_STATUS_INVALID_ARGUMENT &&
        m == NULL);

  memset(&cmp, 0, sizeof cmp);
  cmp.struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE;
  cmp.policy = (neuronmem_placement_policy_t)v;
  CHECK(code_of(neuronmem_executable_compile_text(client, kText, sizeof kText - 1, &cmp, &e)) ==
            NEURONMEM_STATUS_INVALID_ARGUMENT &&
        e == NULL);
  cmp.policy = NEURONMEM_PLACEMENT_POLICY_DEVICE;
  cmp.argument_placement = (neuronmem_argument_placement_t)v;
  CHECK(code_of(neuronmem_executable_compile_text(client, kText, sizeof kText - 1, &cmp, &e)) ==
            NEURONMEM_STATUS_INVALID_ARGUMENT &&
        e == NULL);

  memset(&ext, 0, sizeof ext);
  ext.struct_size = sizeof ext;
  ext.type = (neuronmem_extension_type_t)v;
  cmp.argument_placement = NEURONMEM_ARGUMENT_PLACEMENT_STRICT;
  cmp.extension = &ext;
  CHECK(code_of(neuronmem_executable_compile_text(client, kText, sizeof kText - 1, &cmp, &e)) ==
            NEURONMEM_STATUS_INVALID_ARGUMENT &&
        e == NULL);

  CHECK(code_of(neuronmem_manifest_load_text(kText, sizeof kText - 1, NULL, &m)) == NEURONMEM_STATUS_OK);
  memset(&up, 0, sizeof up);
  up.struct_size = NEURONMEM_MANIFEST_UPLOAD_ARGS_STRUCT_SIZE;
  up.manifest = m;
  up.device = device;
  up.host_data = host_data;
  up.num_arguments = 1;
  up.host_buffer_semantics = (neuronmem_host_buffer_semantics_t)v;
  CHECK(code_of(neuronmem_manifest_upload_arguments(&up, uploaded, NULL)) == NEURONMEM_STATUS_INVALID_ARGUMENT &&
        uploaded[0] == NULL);
  neuronmem_manifest_destroy(m);
}

int main(void) {
  const int values[] = {-1, -2147483647 - 1, 77, 1000, 2147483647};
  neuronmem_device_t* const* devices = NULL;
  neuronmem_memory_t* hbm = NULL;
  size_t n = 0, i;
  neuronmem_client_t* client = new_client(1, 4u << 20, 32u << 20, &devices, &n);
  if (!client) return 1;
  CHECK(n == 1);
  CHECK(code_of(neuronmem_client_lookup_memory(client, 0, &hbm)) == NEURONMEM_STATUS_OK);
  for (i = 0; i < sizeof values / sizeof values[0]; ++i) {
    const int v = values[i];
    int64_t dims[1] = {4};
    neuronmem_buffer_t* b = NULL;
    neuronmem_memory_t* m = NULL;
    CHECK(neuronmem_element_type_size((neuronmem_element_type_t)v) == 0);
    CHECK(strcmp(neuronmem_status_code_name((neuronmem_status_code_t)v), "UNKNOWN") == 0);
    neuronmem_buffer_allocate_args_t args;
    memset(&args, 0, sizeof args);
    args.struct_size = NEURONMEM_BUFFER_ALLOCATE_ARGS_STRUCT_SIZE;
    args.client = client;
    args.memory = hbm;
    args.element_type = (neuronmem_element_type_t)v;
    args.dims = dims;
    args.num_dims = 1;
    CHECK(code_of(neuronmem_buffer_allocate(&args, &b)) == NEURONMEM_STATUS_INVALID_ARGUMENT && b == NULL);
    CHECK(code_of(neuronmem_device_memory_of_kind(devices[0], (neuronmem_memory_kind_t)v, &m)) ==
              NEURONMEM_STATUS_INVALID_ARGUMENT &&
          m == NULL);
    check_fields(client, devices[0], hbm, v);
  }
  return finish(client, "enum values");
}
