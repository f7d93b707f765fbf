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
  }
  check(take(neuronmem_client_destroy(client)) == NEURONMEM_STATUS_OK, "destroy");
  if (failures) return 1;
  printf("enum values: all checks passed\n");
  return 0;
}
