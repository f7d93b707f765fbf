// Opening and reading files the caller names: only regular files, opened without ever blocking (a FIFO
// with no writer would block open(2) forever), and read with a bound (a device such as /dev/zero never ends).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace neuronmem {

// The largest text file (StableHLO module, manifest) the library reads whole: 4 GiB.
constexpr uint64_t kMaxTextFileBytes = 4ull << 30;

// Opens `path` read-only (close-on-exec) and checks with fstat that it is a regular file; *out_fd is the
// open descriptor (blocking mode) and *out_size its size. NOT_FOUND (no such file), PERMISSION_DENIED,
// RESOURCE_EXHAUSTED (out of file descriptors), INVALID_ARGUMENT (a FIFO, device, directory or socket; other
// open errors). Never blocks on a FIFO.
Status OpenRegularFile(const char* path, int* out_fd, uint64_t* out_size);

// Reads the whole regular file `path` into *out; INVALID_ARGUMENT if it holds more than max_bytes, the
// errors of OpenRegularFile, and INTERNAL if reading fails.
Status ReadRegularFile(const char* path, uint64_t max_bytes, std::string* out);

}  // namespace neuronmem
