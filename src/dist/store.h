// The key-value store a multi-process job bootstraps through (docs/distributed.md, "The store").
//
// The store is the job's trust root: every process publishes its endpoint there and reads its peers'. The
// caller provides it (the shape of PJRT_Client_Create's kv_get / kv_put: a blocking get with a timeout and a
// put); the library also has a store on a shared directory, one file per key, for tools and tests.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"

namespace neuronmem::dist {

class KvStore {
 public:
  virtual ~KvStore() = default;
  // Waits up to `timeout` for `key` to be present and sets *value to it. DEADLINE_EXCEEDED naming the key
  // when it is still absent then; other failures as the store reports them. Thread-safe.
  virtual Status Get(const std::string& key, std::chrono::milliseconds timeout, std::string* value) = 0;
  // Sets `key` to `value` (a later put replaces it). Readers see either the old or the new value whole.
  virtual Status Put(const std::string& key, const std::string& value) = 0;
};

// The largest value a store may return (an endpoint record is well under 1 KiB): a bigger one is refused.
constexpr size_t kMaxStoreValueBytes = 64 * 1024;

// A store on the directory `dir` (which must exist): one file per key, named by the key with every byte
// outside [A-Za-z0-9._-] escaped as %XX, written to a temporary file and renamed into place (atomic on one
// file system). Get polls the file (every 5..50 ms). Any number of processes may share the directory.
// INVALID_ARGUMENT if `dir` is empty or not a directory.
Status NewDirectoryStore(const std::string& dir, std::unique_ptr<KvStore>* out);

// The file name the directory store uses for `key` (exposed for tests).
std::string DirectoryStoreFileName(const std::string& key);

}  // namespace neuronmem::dist
