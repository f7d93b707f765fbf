/* Out-of-range enum values from C: C lets a caller pass any int value of an enum parameter; the library must
 * validate it as an integer (under UBSan a C++ load of such a value aborts). Exit code 0 = pass; each failed
 * check prints and counts. */
#include "c_test.h"

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
  }
  return finish(client, "enum values");
}
