// Copy routines for the transfer path. glibc's memcpy switches to non-temporal stores only above ~240 MiB
// on this machine kind (it misreads the L3 size), leaving half the bandwidth unused for 4-240 MiB copies;
// StreamingCopy uses AVX-512 non-temporal stores when the CPU has them (checked at run time).
#pragma once

#include <cstddef>
#include <cstdint>

namespace neuronmem::copy {

// Copies with the best routine for the size: memcpy below kStreamingThreshold, else streaming stores.
void FastCopy(void* dst, const void* src, size_t n);

// Non-temporal (cache-bypassing) copy; falls back to memcpy without AVX-512.
void StreamingCopy(void* dst, const void* src, size_t n);

// Whether StreamingCopy uses AVX-512 on this CPU.
bool HasStreamingCopy();

// Copies at or above this size bypass the cache (measured: bench/transfer, docs/performance.md).
constexpr size_t kStreamingThreshold = 1u << 20;

}  // namespace neuronmem::copy
