#include "base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

namespace neuronmem {

Status OpenRegularFile(const char* path, int* out_fd, uint64_t* out_size) {
  *out_fd = -1;
  *out_size = 0;
  // O_NONBLOCK: open(2) of a FIFO with no writer returns at once instead of blocking; the mode is cleared
  // again below once fstat has shown a regular file (where it changes nothing anyway).
  const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return NotFound("cannot open '%s': %s", path, std::strerror(err));
    if (err == EACCES || err == EPERM) {
      return StatusF(NEURONMEM_STATUS_PERMISSION_DENIED, "cannot open '%s': %s", path, std::strerror(err));
    }
    if (err == EMFILE || err == ENFILE || err == ENOMEM) {
      return ResourceExhausted("cannot open '%s': %s", path, std::strerror(err));
    }
    return InvalidArgument("cannot open '%s': %s", path, std::strerror(err));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return InvalidArgument("cannot stat '%s': %s", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return InvalidArgument("'%s' is %s; only regular files can be read", path, what);
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    close(fd);
    return Internal("cannot set '%s' to blocking reads: %s", path, std::strerror(err));
  }
  *out_fd = fd;
  *out_size = static_cast<uint64_t>(st.st_size);
  return Ok();
}

Status ReadRegularFile(const char* path, uint64_t max_bytes, std::string* out) {
  int fd = -1;
  uint64_t size = 0;
  NEURONMEM_RETURN_IF_ERROR(OpenRegularFile(path, &fd, &size));
  if (size > max_bytes) {
    close(fd);
    return InvalidArgument("'%s' has %" PRIu64 " bytes, more than the %" PRIu64 " this reader accepts", path, size,
                           max_bytes);
  }
  out->assign(static_cast<size_t>(size), '\0');
  uint64_t done = 0;
  while (done < size) {
    const ssize_t r = read(fd, &(*out)[done], static_cast<size_t>(size - done));
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return Internal("reading '%s' failed: %s", path, std::strerror(err));
    }
    if (r == 0) break;  // the file shrank while it was read: take what it has now
    done += static_cast<uint64_t>(r);
  }
  close(fd);
  out->resize(static_cast<size_t>(done));
  return Ok();
}

}  // namespace neuronmem
