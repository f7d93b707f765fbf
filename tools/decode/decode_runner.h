// The decode loop's device side through the public C API only (neuronmem-decode and bench/decode): compiles the
// step, uploads weights, zero KV caches and the first tokens into device memory, allocates the metadata in the
// pinned-host arena and wraps it zero-copy once, and executes steps (the KV caches are donated: each step's
// results replace them; the next tokens stay on the device as the next step's input).
#pragma once

#include <neuronmem/neuronmem.h>

#include <cstdint>
#include <string>
#include <vector>

#include "decode_model.h"

namespace neuronmem_decode {

// What one execution moved, per (from, to) memory kind, and the time it took (submit to results ready).
struct StepStats {
  uint64_t bytes[3][3] = {};  // explicit + implicit bytes
  uint64_t implicit_copies = 0;
  uint64_t implicit_bytes = 0;
  uint64_t peer_bytes = 0;  // received from the other processes (tensor parallelism: the all_reduces)
};

class Runner {
 public:
  Runner() = default;
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  ~Runner();

  // Compiles `text` (the step for `c`; STRICT argument placement: a copy the runtime would add is an error) for
  // the first device of `client` (c.tp replicas: in a job of c.tp processes, rank c.rank's) (borrowed; outlives the
  // runner) and uploads everything. The weights come from `seed`, or, with a weights_file (decode_model.h's format),
  // are loaded from it straight into device memory with neuronmem_buffer_load_file (io_uring), one range per tensor;
  // weights() then holds the file's contents, read separately for the reference. Returns "" or the error.
  std::string Init(neuronmem_client_t* client, const Config& c, const std::string& text, const std::string& filename,
                   uint64_t seed, const std::string& weights_file = "");

  // The four metadata arrays (block table, seq lens, positions, slot mapping) in the pinned-host arena; the
  // host updates them in place between steps. Wrapped zero-copy as the step's arguments when the module reads
  // them in pinned_host.
  int32_t* metadata(int i) const { return meta_[i]; }
  const std::vector<std::vector<float>>& weights() const { return weights_; }
  double compile_ms() const { return compile_ms_; }
  // Bytes the weights file put into device memory through neuronmem_buffer_load_file, and the time it took.
  uint64_t file_bytes_loaded() const { return file_bytes_loaded_; }
  double load_ms() const { return load_ms_; }

  // Runs one step and waits for it. `metadata_buffers`: the four metadata arguments to pass instead of the
  // runner's zero-copy ones (the device-kind baseline), or nullptr. next_tokens (nullable): read back.
  // stats (nullable): added to. Returns "" or the error ("step N: CODE: message").
  std::string Step(neuronmem_buffer_t* const* metadata_buffers, std::vector<int32_t>* next_tokens, StepStats* stats);

 private:
  Config c_;
  neuronmem_client_t* client_ = nullptr;
  neuronmem_device_t* device_ = nullptr;
  neuronmem_executable_t* exe_ = nullptr;
  std::vector<neuronmem_buffer_t*> args_;
  int32_t* meta_[4] = {};
  std::vector<std::vector<float>> weights_;
  double compile_ms_ = 0;
  uint64_t file_bytes_loaded_ = 0;
  double load_ms_ = 0;
  int step_ = 0;
};

// "CODE: message" of a failed status, which it frees; "" for NULL.
std::string StatusText(neuronmem_status_t* s);

const char* KindName(int kind);

}  // namespace neuronmem_decode
