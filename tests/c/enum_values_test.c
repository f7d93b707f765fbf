/* Out-of-range enum values from C (issue 13): C lets a caller pass any int value of an enum parameter; the
 * library must validate it as an integer (under UBSan a C++ load of such a value aborts). Exits non-zero on
 * the first failed check. */
#include <neuronmem/neuronmem.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

/* The code of a status, freed. */
static neuronmem_status_code_t take(neuronmem_status_t* s) {
  neuronmem_status_code_t c = neuronmem_status_code(s);
  neuronmem_status_free(s);
  return c;
}

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
  check(take(neuronmem_client_create(&co, &other)) == NEURONMEM_STATUS_INVALID_ARGUMENT && other == NULL,
        "client_create with a bad mlock_mode");

  memset(&fh, 0, sizeof fh);
  fh.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
  fh.data = data;
  fh.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  fh.host_buffer_semantics = (neuronmem_host_buffer_semantics_t)v;
  fh.dims = dims;
  fh.num_dims = 1;
  fh.memory = hbm;
  check(
      take(neuronmem_buffer_from_host(client, &fh, &b, &ready, NULL)) == NEURONMEM_STATUS_INVALID_ARGUMENT && b == NULL,
      "from_host with bad host_buffer_semantics");

  memset(&mo, 0, sizeof mo);
  mo.struct_size = NEURONMEM_MANIFEST_OPTIONS_STRUCT_SIZE;
  mo.policy = (neuronmem_placement_policy_t)v;
  check(take(neuronmem_manifest_load_text(kText, sizeof kText - 1, &mo, &m)) == NEURONMEM_STATUS_INVALID_ARGUMENT &&
            m == NULL,
        "manifest_load_text with a bad policy");

  memset(&cmp, 0, sizeof cmp);
  cmp.struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE;
  cmp.policy = (neuronmem_placement_policy_t)v;
  check(take(neuronmem_executable_compile_text(client, kText, sizeof kText - 1, &cmp, &e)) ==
                NEURONMEM_STATUS_INVALID_ARGUMENT &&
            e == NULL,
        "compile_text with a bad policy");
  cmp.policy = NEURONMEM_PLACEMENT_POLICY_DEVICE;
  cmp.argument_placement = (neuronmem_argument_placement_t)v;
  check(take(neuronmem_executable_compile_text(client, kText, sizeof kText - 1, &cmp, &e)) ==
                NEURONMEM_STATUS_INVALID_ARGUMENT &&
            e == NULL,
        "compile_text with a bad argument_placement");

  memset(&ext, 0, sizeof ext);
  ext.struct_size = sizeof ext;
  ext.type = (neuronmem_extension_type_t)v;
  cmp.argument_placement = NEURONMEM_ARGUMENT_PLACEMENT_STRICT;
  cmp.extension = &ext;
  check(take(neuronmem_executable_compile_text(client, kText, sizeof kText - 1, &cmp, &e)) ==
                NEURONMEM_STATUS_INVALID_ARGUMENT &&
            e == NULL,
        "an extension of a bad type");

  check(take(neuronmem_manifest_load_text(kText, sizeof kText - 1, NULL, &m)) == NEURONMEM_STATUS_OK, "manifest");
  memset(&up, 0, sizeof up);
  up.struct_size = NEURONMEM_MANIFEST_UPLOAD_ARGS_STRUCT_SIZE;
  up.manifest = m;
  up.device = device;
  up.host_data = host_data;
  up.num_arguments = 1;
  up.host_buffer_semantics = (neuronmem_host_buffer_semantics_t)v;
  check(take(neuronmem_manifest_upload_arguments(&up, uploaded, NULL)) == NEURONMEM_STATUS_INVALID_ARGUMENT &&
            uploaded[0] == NULL,
        "manifest_upload_arguments with bad host_buffer_semantics");
  neuronmem_manifest_destroy(m);
}

int main(void) {
  const int values[] = {-1, -2147483647 - 1, 77, 1000, 2147483647};
  neuronmem_client_options_t o;
  neuronmem_client_t* client = NULL;
  neuronmem_device_t* const* devices = NULL;
  neuronmem_memory_t* hbm = NULL;
  size_t n = 0, i;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.num_cores = 1;
  o.device_bytes_per_core = 4u << 20;
  o.pinned_host_bytes = 32u << 20;
  if (take(neuronmem_client_create(&o, &client)) != NEURONMEM_STATUS_OK) return 1;
  check(take(neuronmem_client_devices(client, &devices, &n)) == NEURONMEM_STATUS_OK && n == 1, "devices");
  check(take(neuronmem_client_lookup_memory(client, 0, &hbm)) == NEURONMEM_STATUS_OK, "memory 0");
  for (i = 0; i < sizeof values / sizeof values[0]; ++i) {
    const int v = values[i];
    int64_t dims[1] = {4};
    neuronmem_buffer_t* b = NULL;
    neuronmem_memory_t* m = NULL;
    check(neuronmem_element_type_size((neuronmem_element_type_t)v) == 0, "element_type_size of a bad value is 0");
    check(strcmp(neuronmem_status_code_name((neuronmem_status_code_t)v), "UNKNOWN") == 0, "code name UNKNOWN");
    neuronmem_buffer_allocate_args_t args;
    memset(&args, 0, sizeof args);
    args.struct_size = NEURONMEM_BUFFER_ALLOCATE_ARGS_STRUCT_SIZE;
    args.client = client;
    args.memory = hbm;
    args.element_type = (neuronmem_element_type_t)v;
    args.dims = dims;
    args.num_dims = 1;
    check(take(neuronmem_buffer_allocate(&args, &b)) == NEURONMEM_STATUS_INVALID_ARGUMENT && b == NULL,
          "buffer_allocate with a bad element type");
    check(take(neuronmem_device_memory_of_kind(devices[0], (neuronmem_memory_kind_t)v, &m)) ==
                  NEURONMEM_STATUS_INVALID_ARGUMENT &&
              m == NULL,
          "memory_of_kind with a bad kind");
    check_fields(client, devices[0], hbm, v);
  }
  check(take(neuronmem_client_destroy(client)) == NEURONMEM_STATUS_OK, "destroy");
  if (failures) return 1;
  printf("enum values: all checks passed\n");
  return 0;
}
