// File loads: opening a file for a range read (with the documented error codes) and reading the range
// straight into memory through io_uring (batches of 8 MiB reads), finishing with pread where needed.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "base/status.h"

struct io_uring;

namespace neuronmem::copy {

// Opens the regular file `path` read-only (never blocking on a FIFO: base/file.h) and checks that
// [file_offset, file_offset+size) lies in it. NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED (out of file
// descriptors), INVALID_ARGUMENT (not a regular file, other open errors), OUT_OF_RANGE.
Status OpenFileRange(const char* path, uint64_t file_offset, uint64_t size, int* out_fd);

class FileReader {
 public:
  FileReader();  // sets up a ring if the kernel allows; otherwise reads with pread
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads `size` bytes at `file_offset` of fd into dst. INTERNAL for I/O errors, OUT_OF_RANGE if the file
  // ended early (it was truncated after it was opened).
  Status Read(int fd, uint64_t file_offset, uint8_t* dst, uint64_t size);
  // Whether reads go through io_uring (false: the kernel refused a ring, or a submission failed, and every
  // read is a pread).
  bool uses_io_uring() const { return ring_ != nullptr && !broken_.load(std::memory_order_acquire); }

 private:
  std::mutex mu_;  // one ring, used by one read at a time
  io_uring* ring_ = nullptr;
  // A submission failed: SQEs it did not take stay in the ring (liburing already published them), so the ring
  // is never entered again (they would read into memory the caller may have freed); reads use pread.
  std::atomic<bool> broken_{false};
};

}  // namespace neuronmem::copy
