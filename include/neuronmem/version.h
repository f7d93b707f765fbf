/* libneuronmem: version of the public API.
 *
 * Meson reads these macros to set the project's soversion (the major) and checks that the project
 * version agrees, so this header is the one place the version lives. Compatibility rules: see
 * docs/stability.md (a minor version only appends functions, enum values and struct fields). */
#ifndef NEURONMEM_VERSION_H
#define NEURONMEM_VERSION_H

#define NEURONMEM_VERSION_MAJOR 0
#define NEURONMEM_VERSION_MINOR 2
#define NEURONMEM_VERSION_PATCH 0

/* The version as one integer: (major << 16) | (minor << 8) | patch. Compare with neuronmem_version(). */
#define NEURONMEM_VERSION_NUMBER \
  ((NEURONMEM_VERSION_MAJOR << 16) | (NEURONMEM_VERSION_MINOR << 8) | NEURONMEM_VERSION_PATCH)

#endif /* NEURONMEM_VERSION_H */
