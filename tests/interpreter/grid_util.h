// Helpers for the process-grid tests: run programs as the processes of a ProcessGrid, one thread each.
#pragma once

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "interp_test_util.h"
#include "interpreter/process.h"

namespace neuronmem::interp::testing {

// A tensor argument: element type, dims and the bytes of the values.
struct Arg {
  ElementType type = ElementType::kInvalid;
  std::vector<int64_t> dims;
  std::vector<char> bytes;
  template <typename T>
  static Arg Of(ElementType t, std::vector<int64_t> d, const std::vector<T>& v) {
    Arg a;
    a.type = t;
    a.dims = std::move(d);
    a.bytes.resize(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
    return a;
  }
  TensorView View() {
    TensorView v;
    v.data = bytes.data();
    v.type = type;
    v.dims = dims.data();
    v.rank = dims.size();
    return v;
  }
};

struct GridResult {
  std::vector<Status> status;                           // per process (its final status)
  std::vector<std::vector<std::vector<char>>> outputs;  // per process, per result: the bytes
  template <typename T>
  std::vector<T> Get(size_t process, size_t result) const {
    if (process >= outputs.size() || result >= outputs[process].size()) return {};
    const auto& b = outputs[process][result];
    std::vector<T> v(b.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
    return v;
  }
  // The message of a process's failure ("" if it passed).
  std::string Message(size_t process) const { return status[process] ? status[process]->message : ""; }
};

// Compiles the functions `entries[k]` of `text` and runs entry k as process k of a replicas x partitions
// grid (args[k] its arguments), on one thread per process.
GridResult RunGrid(const std::string& text, uint32_t replicas, uint32_t partitions,
                   const std::vector<std::string>& entries, std::vector<std::vector<Arg>> args = {},
                   PeerTransfers* transport = nullptr, HostTransfers* host = nullptr);

// A PeerTransfers that counts the bytes it moves per (from, to) pair, then copies with memcpy.
class CountingTransport : public PeerTransfers {
 public:
  Status Copy(const Transfer& t) override;
  std::map<std::pair<uint32_t, uint32_t>, size_t> bytes;  // read after the run
  std::atomic<size_t> copies{0};
  const char* last_src = nullptr;

 private:
  std::mutex mu_;
};

}  // namespace neuronmem::interp::testing
