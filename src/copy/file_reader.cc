#include "copy/file_reader.h"

#include "base/fault.h"

#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "base/file.h"

namespace neuronmem::copy {

Status OpenFileRange(const char* path, uint64_t file_offset, uint64_t size, int* out_fd) {
  *out_fd = -1;
  int fd = -1;
  uint64_t file_size = 0;
  NEURONMEM_RETURN_IF_ERROR(OpenRegularFile(path, &fd, &file_size));
  uint64_t end;
  if (__builtin_add_overflow(file_offset, size, &end) || end > file_size) {
    close(fd);
    return OutOfRange("'%s' has %" PRIu64 " bytes; the range [%" PRIu64 ", %" PRIu64 ") is past its end", path,
                      file_size, file_offset, file_offset + size);
  }
  *out_fd = fd;
  return Ok();
}

FileReader::FileReader() {
  auto* ring = new io_uring{};
  if (!fault::Hit(fault::Site::kUringSetup) && io_uring_queue_init(64, ring, 0) == 0) {
    ring_ = ring;
  } else {
    delete ring;
  }
}

FileReader::~FileReader() {
  if (ring_) {
    io_uring_queue_exit(ring_);
    delete ring_;
  }
}

Status FileReader::Read(int fd, uint64_t file_offset, uint8_t* dst, uint64_t size) {
  constexpr uint64_t kPiece = 8u << 20;
  uint64_t done = 0;
  if (uses_io_uring()) {
    std::lock_guard<std::mutex> lock(mu_);
    while (done < size && !broken_.load(std::memory_order_relaxed)) {
      // One batch: up to 32 reads of 8 MiB submitted together, then reaped together.
      unsigned queued = 0;
      uint64_t batch_off = done;
      while (queued < 32 && batch_off < size) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring_);
        if (!sqe) break;
        const uint64_t len = std::min(kPiece, size - batch_off);
        io_uring_prep_read(sqe, fd, dst + batch_off, static_cast<unsigned>(len), file_offset + batch_off);
        io_uring_sqe_set_data64(sqe, batch_off);
        batch_off += len;
        ++queued;
      }
      int r = fault::Hit(fault::Site::kUringSubmit) ? -EBUSY : io_uring_submit_and_wait(ring_, queued);
      while (r == -EINTR) r = io_uring_submit_and_wait(ring_, queued);
      if (r < 0 || static_cast<unsigned>(r) < queued) {
        // The kernel took r of the batch (none on an error): reap those, then never enter the ring again (the
        // rest stay published in it) and read the whole batch with pread below. Nothing is left in flight.
        for (int i = 0; i < r; ++i) {
          io_uring_cqe* cqe = nullptr;
          int w = io_uring_wait_cqe(ring_, &cqe);
          while (w == -EINTR) w = io_uring_wait_cqe(ring_, &cqe);
          if (w < 0) return Internal("io_uring completion failed: %s", std::strerror(-w));
          io_uring_cqe_seen(ring_, cqe);
        }
        broken_.store(true, std::memory_order_release);
        break;
      }
      Status first_error;
      uint64_t short_at = UINT64_MAX;
      for (unsigned i = 0; i < queued; ++i) {
        io_uring_cqe* cqe = nullptr;
        int w = io_uring_wait_cqe(ring_, &cqe);
        while (w == -EINTR) w = io_uring_wait_cqe(ring_, &cqe);
        if (w < 0) return Internal("io_uring completion failed: %s", std::strerror(-w));
        const uint64_t off = io_uring_cqe_get_data64(cqe);
        const uint64_t want = std::min(kPiece, size - off);
        int res = cqe->res;
        if (res >= 0 && fault::Hit(fault::Site::kUringComplete)) res = -EIO;
        if (res > 1 && fault::Hit(fault::Site::kShortRead)) res /= 2;
        // Every completion of the batch is reaped before an error returns: no read stays in flight into dst.
        if (res < 0 && !first_error) {
          first_error = Internal("reading the file failed: %s", std::strerror(-res));
        } else if (res >= 0 && static_cast<uint64_t>(res) < want) {
          short_at = std::min(short_at, off + static_cast<uint64_t>(res));
        }
        io_uring_cqe_seen(ring_, cqe);
      }
      if (first_error) return first_error;
      if (short_at != UINT64_MAX) {
        // A short read (the file shrank, or a partial read): finish the rest with plain reads below.
        done = short_at;
        break;
      }
      done = batch_off;
    }
  }
  while (done < size) {
    const ssize_t r = pread(fd, dst + done, std::min<uint64_t>(kPiece, size - done), file_offset + done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Internal("reading the file failed: %s", std::strerror(errno));
    }
    if (r == 0) {
      return OutOfRange("the file ended after %" PRIu64 " of %" PRIu64 " requested bytes (it was truncated)", done,
                        size);
    }
    done += static_cast<uint64_t>(r);
  }
  return Ok();
}

}  // namespace neuronmem::copy
