// Helpers for tests that need a client of their own (not the fixture's): small, one core, quick to create.
#pragma once

#include <neuronmem/client.h>

namespace neuronmem_test {

// A one-core client with `device_bytes` of HBM and the smallest pinned arena (32 MiB). Returns the
// creation status (NULL on success); the caller destroys the client.
inline neuronmem_status_t* CreateSmallClient(uint64_t device_bytes, neuronmem_client_t** out) {
  neuronmem_client_options_t o{};
  o.struct_size = sizeof o;
  o.num_cores = 1;
  o.device_bytes_per_core = device_bytes;
  o.pinned_host_bytes = 32u << 20;
  return neuronmem_client_create(&o, out);
}

}  // namespace neuronmem_test
