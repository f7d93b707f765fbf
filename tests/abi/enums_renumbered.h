/* A header that renumbers a released constant: tests/abi/check_enums.py must reject it (test
 * enums-check-rejects-renumbered). Not a public header. */
typedef enum neuronmem_memory_kind {
  NEURONMEM_MEMORY_KIND_DEVICE = 1,
  NEURONMEM_MEMORY_KIND_PINNED_HOST = 0,
  NEURONMEM_MEMORY_KIND_UNPINNED_HOST = 2,
  NEURONMEM_MEMORY_KIND_FORCE_32 = 0x7fffffff
} neuronmem_memory_kind_t;
