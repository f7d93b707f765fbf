#include "dist/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "base/file.h"

namespace neuronmem::dist {
namespace {

class DirectoryStore final : public KvStore {
 public:
  explicit DirectoryStore(std::string dir) : dir_(std::move(dir)) {}

  Status Get(const std::string& key, std::chrono::milliseconds timeout, std::string* value) override {
    if (key.empty()) return InvalidArgument("store: empty key");
    const std::string path = dir_ + "/" + DirectoryStoreFileName(key);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::milliseconds(5);
    for (;;) {
      Status s = ReadRegularFile(path.c_str(), kMaxStoreValueBytes, value);
      if (!s) return Ok();
      if (s->code != NEURONMEM_STATUS_NOT_FOUND) {
        return Annotate(std::move(s), "store " + dir_ + ": key '" + key + "'");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return DeadlineExceeded("store %s: key '%s' not present after %lld ms", dir_.c_str(), key.c_str(),
                                static_cast<long long>(timeout.count()));
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
  }

  Status Put(const std::string& key, const std::string& value) override {
    if (key.empty()) return InvalidArgument("store: empty key");
    if (value.size() > kMaxStoreValueBytes) {
      return InvalidArgument("store: value of key '%s' has %zu bytes (at most %zu)", key.c_str(), value.size(),
                             kMaxStoreValueBytes);
    }
    const std::string path = dir_ + "/" + DirectoryStoreFileName(key);
    thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(getpid()));
    const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(rng());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return Internal("store %s: cannot create %s: %s", dir_.c_str(), tmp.c_str(), strerror(errno));
    size_t done = 0;
    while (done < value.size()) {
      ssize_t n = write(fd, value.data() + done, value.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int e = errno;
        close(fd);
        unlink(tmp.c_str());
        return Internal("store %s: cannot write %s: %s", dir_.c_str(), tmp.c_str(), strerror(e));
      }
      done += static_cast<size_t>(n);
    }
    if (close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
      int e = errno;
      unlink(tmp.c_str());
      return Internal("store %s: cannot publish key '%s': %s", dir_.c_str(), key.c_str(), strerror(e));
    }
    return Ok();
  }

 private:
  std::string dir_;
};

}  // namespace

std::string DirectoryStoreFileName(const std::string& key) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string name;
  for (unsigned char c : key) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
        (c == '.' && !name.empty())) {
      name.push_back(static_cast<char>(c));
    } else {
      name.push_back('%');
      name.push_back(kHex[c >> 4]);
      name.push_back(kHex[c & 15]);
    }
  }
  return name;
}

Status NewDirectoryStore(const std::string& dir, std::unique_ptr<KvStore>* out) {
  out->reset();
  if (dir.empty()) return InvalidArgument("directory store: empty path");
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgument("directory store: '%s' is not a directory", dir.c_str());
  }
  *out = std::make_unique<DirectoryStore>(dir);
  return Ok();
}

}  // namespace neuronmem::dist
