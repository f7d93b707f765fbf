/* neuronmem-info --pjrt: the listing through a PJRT plugin (pjrt_listing.c). */
#ifndef NEURONMEM_INFO_PJRT_LISTING_H
#define NEURONMEM_INFO_PJRT_LISTING_H

#include <stdint.h>

/* Loads the plugin at `path`, creates a client (0: the plugin's default for each size) and prints the listing;
 * returns the exit status (0 on success). */
int neuronmem_info_pjrt(const char* path, uint32_t cores, uint64_t device_bytes, uint64_t pinned_bytes, int stats);

#endif
