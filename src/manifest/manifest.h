// The placement manifest: what a compiled StableHLO graph says about where its tensors live. Derived from
// the IR of src/stablehlo, validated as XLA validates it, written to and read from JSON (schema in
// docs/contract.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "stablehlo/ir.h"

namespace neuronmem::manifest {

constexpr int kSchemaVersion = 1;

enum class Policy { kDevice = 0, kTorchNeuronx = 1 };

struct Options {
  std::string entry = "main";  // entry function name
  Policy policy = Policy::kDevice;
  uint32_t num_cores = 2;      // send/recv source_target_pairs must name cores below this
  std::string filename = "<input>";
};

struct Location {
  uint32_t line = 0;
  uint32_t column = 0;
};

struct TensorSpec {
  std::string element_type;  // "f32", "i1", ..., "tuple", "token", or the written type for others
  std::vector<int64_t> dims;
  bool is_tuple = false;
  bool is_token = false;
};

struct Value {  // an argument or a result of the entry function
  uint32_t index = 0;
  std::string name;  // arguments: the SSA name ("arg0"); results: jax.result_info if present
  TensorSpec type;
  std::string memory_kind;     // "device", "pinned_host", "unpinned_host"
  bool kind_explicit = false;  // from mhlo.memory_kind (else from the policy)
  int64_t aliasing_output = -1;  // tf.aliasing_output (arguments)
  bool buffer_donor = false;     // jax.buffer_donor (arguments)
  std::vector<std::pair<std::string, std::string>> attributes;  // every other attribute, as written
  Location loc;
};

struct Move {  // an intra-graph placement
  std::string function;
  std::string value;      // the SSA value moved, "%3"
  std::string result;     // the SSA value holding the moved tensor, "%4"
  TensorSpec type;
  std::string from_kind;  // kind of the operand's producer
  std::string to_kind;    // as written: device, pinned_host, unpinned_host, vmem, pinned_device
  std::string spelling;   // annotate_device_placement, MoveToHost, MoveToDevice, AwsNeuronMemoryPlacement
  Location loc;
};

struct HostCompute {  // an op or call marked _xla_compute_type = "host"
  std::string function;
  std::string op;
  std::string callee;
  Location loc;
};

struct Kernel {  // AwsNeuronCustomNativeKernel
  std::string function;
  std::string func_name;
  std::vector<int64_t> grid;
  std::vector<std::string> input_names, output_names;
  std::string binary;
  uint32_t num_operands = 0;
  uint32_t num_results = 0;
  Location loc;
};

struct CustomCallTarget {
  std::string target;
  uint64_t count = 0;
};

struct Channel {  // stablehlo.send / stablehlo.recv
  std::string function;
  std::string op;  // "send" or "recv"
  int64_t handle = 0;
  int64_t type = 0;  // 0 invalid, 1 device-to-device, 2 device-to-host, 3 host-to-device
  bool is_host_transfer = false;
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  std::vector<TensorSpec> payload;
  Location loc;
};

struct Manifest {
  int schema_version = kSchemaVersion;
  std::string module;
  std::string entry;
  std::string policy;  // "device" or "torch-neuronx"
  std::vector<Value> arguments;
  std::vector<Value> results;
  std::vector<Move> moves;
  std::vector<HostCompute> host_compute;
  std::vector<Kernel> kernels;
  std::vector<CustomCallTarget> custom_call_targets;
  std::vector<Channel> channels;
};

// Derives and validates the manifest of options.entry in `module`. INVALID_ARGUMENT / UNIMPLEMENTED /
// NOT_FOUND with "file:line:col: message".
Status Derive(const stablehlo::Module& module, const Options& options, Manifest* out);

// Parses StableHLO text (the first module that defines the entry function) and derives its manifest.
Status LoadFromText(std::string_view text, const Options& options, Manifest* out);

// JSON form (docs/contract.md). FromJson checks schema_version and every field's type.
std::string ToJson(const Manifest& m, int indent = 2);
Status FromJson(std::string_view json, Manifest* out);

// Policy names.
const char* PolicyName(Policy p);

}  // namespace neuronmem::manifest
