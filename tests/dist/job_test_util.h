// Helpers of the multi-process tests that use the public C API.
#pragma once

#include <neuronmem/neuronmem.h>
#include <stdio.h>
#include <unistd.h>

#include <string>

namespace neuronmem::dist::testing {

// The status's code (and frees it, printing it with the process id); NEURONMEM_STATUS_OK for NULL. The message
// goes to *message if asked.
inline neuronmem_status_code_t Code(neuronmem_status_t* s, std::string* message = nullptr) {
  if (s == nullptr) return NEURONMEM_STATUS_OK;
  neuronmem_status_code_t c = neuronmem_status_code(s);
  neuronmem_string_t m = neuronmem_status_message(s);
  if (message != nullptr) *message = std::string(m.data, m.size);
  fprintf(stderr, "[pid %d] status %s: %.*s\n", getpid(), neuronmem_status_code_name(c), static_cast<int>(m.size),
          m.data);
  neuronmem_status_free(s);
  return c;
}

}  // namespace neuronmem::dist::testing
