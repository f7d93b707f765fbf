/* Shared by the command-line tools (C and C++): report a failed call the same way everywhere. */
#ifndef NEURONMEM_TOOL_STATUS_H
#define NEURONMEM_TOOL_STATUS_H

#include <neuronmem/status.h>
#include <stdio.h>

/* If `s` is a failure, prints "<tool>: <what>: <CODE>: <message>" on stderr, frees it and returns 1;
 * returns 0 for NULL (success). */
static inline int neuronmem_tool_report(const char* tool, neuronmem_status_t* s, const char* what) {
  if (!s) return 0;
  neuronmem_string_t m = neuronmem_status_message(s);
  fprintf(stderr, "%s: %s: %s: %.*s\n", tool, what, neuronmem_status_code_name(neuronmem_status_code(s)), (int)m.size,
          m.data);
  neuronmem_status_free(s);
  return 1;
}

#endif /* NEURONMEM_TOOL_STATUS_H */
