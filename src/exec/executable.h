// An executable: a manifest's graph compiled by the interpreter for the software NeuronCore, with what the
// executor needs to run it on a core: each parameter's and output's type, dims and memory kind (from the
// manifest), donation pairs, and the memory space of every value (intra-graph moves put their results in
// the destination kind's memory; everything else an op defines lives in the core's device arena).
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/element_type.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "exec/custom_kernels.h"
#include "interpreter/interpreter.h"
#include "manifest/manifest.h"

namespace neuronmem::exec {

// What execute does with an argument outside the memory its parameter names (neuronmem_argument_placement_t).
enum class ArgumentPlacement : uint8_t { kStrict = 0, kAutoCopy = 1 };

struct ExecutableOptions {
  ArgumentPlacement placement = ArgumentPlacement::kStrict;
  uint32_t num_replicas = 0;    // 0 = as many as the cores hold (cores / num_partitions)
  uint32_t num_partitions = 0;  // 0 = the module's mhlo.num_partitions, else 1
  std::string filename = "<input>";
  // A shape-polymorphic entry's parameter dims for one specialization (Executable::Specialize sets them); empty:
  // the declared types.
  std::vector<std::vector<int64_t>> param_dims;
};

struct ValueInfo {
  ElementType type = ElementType::kInvalid;
  std::vector<int64_t> dims;
  MemoryKind kind = MemoryKind::kDevice;
  uint64_t bytes = 0;
  int64_t donation = -1;  // parameters: the output it is donated into; outputs: the donated parameter
  std::string name;       // "argument 0 (%arg0)", "output 1 (result)"
};

// A send or recv with is_host_transfer: the launch serves it with the frontend's callback for its channel.
struct HostChannel {
  int64_t handle = 0;
  bool send = false;  // send (device to host); else recv (host to device)
  std::string where;  // "file:line:col: 'stablehlo.send'"
};

class Executable {
 public:
  // Compiles manifest.ir (its entry) for a client of `num_cores` cores. UNIMPLEMENTED "file:line:col: ..." for
  // anything the executor cannot run, FAILED_PRECONDITION for a manifest without a graph (read from JSON),
  // INVALID_ARGUMENT for bad options (more replicas times partitions than cores) or a donation that does not fit
  // its output. Infeed and outfeed (the entry or a function it calls) are UNIMPLEMENTED: the executor has no feed
  // queues. `kernels` (nullable): the client's custom kernels (exec/custom_kernels.h); the executable keeps those
  // it calls.
  static Status Compile(const manifest::Manifest& manifest, const ExecutableOptions& options, uint32_t num_cores,
                        const CustomKernelRegistry* kernels, std::shared_ptr<const Executable>* out);

  const std::vector<ValueInfo>& parameters() const { return params_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  const interp::Program& program() const { return *program_; }
  // A shape-polymorphic entry (parameters with `?` dims, jax.export's symbolic dimensions): the executable has
  // no program of its own (its parameters and outputs have -1 dims); each execution runs the specialization for
  // its arguments' dims. Specialize returns it, compiled on first use with the shapes refined from the arguments
  // (interp::CompileOptions::param_dims) and kept in a cache of kMaxSpecializations, least recently used out
  // first. INVALID_ARGUMENT when the dims do not fit the entry.
  static constexpr size_t kMaxSpecializations = 16;
  bool polymorphic() const { return poly_ != nullptr; }
  Status Specialize(const std::vector<std::vector<int64_t>>& dims, std::shared_ptr<const Executable>* out) const;
  // Specializations compiled so far (dropped ones included); 0 when not polymorphic.
  uint64_t num_specializations() const;
  uint64_t num_ops() const { return program_ ? program_->num_kernels() : 0; }
  // The most devices one sdy.manual_computation runs at once (interp::Program::num_manual_devices; 0 for a
  // polymorphic executable: its specializations').
  uint64_t num_manual_devices() const { return program_ ? program_->num_manual_devices() : 0; }
  ArgumentPlacement placement() const { return placement_; }
  uint32_t num_replicas() const { return num_replicas_; }
  uint32_t num_partitions() const { return num_partitions_; }
  // It runs on devices (cores) 0..num_devices()-1; device d is replica d / P, partition d % P.
  uint32_t num_devices() const { return num_replicas_ * num_partitions_; }
  uint32_t replica_of(uint32_t device) const { return device / num_partitions_; }
  uint32_t partition_of(uint32_t device) const { return device % num_partitions_; }
  uint64_t peak_device_bytes() const { return program_ ? program_->workspace_bytes(0) : 0; }
  uint64_t peak_host_bytes() const;
  size_t num_moves() const { return num_moves_; }
  // Whether the program sees the process grid (replica_id, partition_id, collectives, send/recv): each
  // execution then runs as a process of its launch's grid.
  bool uses_grid() const { return uses_grid_; }
  // Whether its work has no bound the executor knows (a stablehlo.while, in the entry or a function it calls):
  // an execution of it never runs on the submitting thread.
  bool unbounded() const { return unbounded_; }
  // Identifies the program across processes (a hash of the launch shape and every op's name and location):
  // the processes of a launch that spans a job check that they run the same one.
  uint64_t fingerprint() const { return fingerprint_; }
  // The host transfers of the entry and the functions it calls, in source order.
  const std::vector<HostChannel>& host_channels() const { return host_channels_; }
  // The kind of the memory output i's value lives in when the graph returns it (before it is copied into
  // the output's buffer): a parameter's kind, a move's destination, or device.
  MemoryKind returned_kind(size_t i) const { return returned_kinds_[i]; }
  // How long its last execution on any core took, submission's queueing excluded (0: none ran yet). The
  // runtime runs every part of a launch on the caller when this says they are cheaper than waking a thread.
  uint64_t last_run_ns() const { return last_run_ns_.load(std::memory_order_relaxed); }
  void NoteRun(uint64_t ns) const { last_run_ns_.store(ns ? ns : 1, std::memory_order_relaxed); }

 private:
  // The program's parameters and results, checked against the manifest's values (Compile's last step).
  Status TakeValues(const manifest::Manifest& m, const std::string& filename);

  // Compile, with the custom calls of `calls` (a polymorphic executable's, for its specializations) instead of
  // those built from `kernels` when not null.
  static Status Build(const manifest::Manifest& m, const ExecutableOptions& options, uint32_t num_cores,
                      const CustomKernelRegistry* kernels, const interp::CustomCallRegistry* calls,
                      std::shared_ptr<const Executable>* out);
  struct Polymorphic {
    manifest::Manifest manifest;
    ExecutableOptions options;
    uint32_t num_cores = 0;
    std::mutex mu;
    std::list<std::pair<std::vector<std::vector<int64_t>>, std::shared_ptr<const Executable>>> cache;  // MRU first
    uint64_t compiled = 0;
  };

  Executable() = default;
  std::unique_ptr<Polymorphic> poly_;
  std::shared_ptr<const stablehlo::Module> ir_;  // the program points into it
  interp::CustomCallRegistry custom_calls_;      // the program points into it
  std::unique_ptr<interp::Program> program_;
  std::vector<ValueInfo> params_, outputs_;
  std::vector<MemoryKind> returned_kinds_;
  ArgumentPlacement placement_ = ArgumentPlacement::kStrict;
  uint32_t num_replicas_ = 1;
  uint32_t num_partitions_ = 1;
  size_t num_moves_ = 0;
  bool uses_grid_ = false;
  bool unbounded_ = false;
  uint64_t fingerprint_ = 0;
  std::vector<HostChannel> host_channels_;
  mutable std::atomic<uint64_t> last_run_ns_{0};
};

}  // namespace neuronmem::exec
