// The placement manifest: what a compiled StableHLO graph says about where its tensors live. Derived from
// the IR of src/stablehlo, validated as XLA validates it, written to and read from JSON (schema in
// docs/contract.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/element_type.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "stablehlo/function_index.h"
#include "stablehlo/ir.h"

namespace neuronmem::manifest {

constexpr int kSchemaVersion = 1;
constexpr uint32_t kMaxCores = 64;  // as many as a client may have (include/neuronmem/client.h)

enum class Policy { kDevice = 0, kTorchNeuronx = 1 };

struct Options {
  std::string entry = "main";  // entry function name
  Policy policy = Policy::kDevice;
  uint32_t num_cores = 2;  // 1..kMaxCores; send/recv source_target_pairs must name cores below this
  std::string filename = "<input>";
};

struct Location {
  uint32_t line = 0;
  uint32_t column = 0;
};

struct TensorSpec {
  std::string element_type;  // "f32", "i1", ..., "tuple", "token", or the written type for others (JSON, C)
  ElementType element = ElementType::kInvalid;  // the type of `element_type`; kInvalid for tuples, tokens,
                                                // quantized and other types written out
  std::vector<int64_t> dims;
  bool is_tuple = false;
  bool is_token = false;
};

struct Value {  // an argument or a result of the entry function
  uint32_t index = 0;
  std::string name;  // arguments: the SSA name ("arg0"); results: jax.result_info if present
  TensorSpec type;
  MemoryKind memory_kind = MemoryKind::kDevice;
  bool kind_explicit = false;                                   // from mhlo.memory_kind (else from the policy)
  int64_t aliasing_output = -1;                                 // tf.aliasing_output (arguments)
  bool buffer_donor = false;                                    // jax.buffer_donor (arguments)
  std::vector<std::pair<std::string, std::string>> attributes;  // every other attribute, as written
  Location loc;
};

struct Move {  // an intra-graph placement
  std::string function;
  std::string value;   // the SSA value moved, "%3"
  std::string result;  // the SSA value holding the moved tensor, "%4"
  TensorSpec type;
  std::string from_kind;  // kind of the operand's producer
  std::string to_kind;    // as written: device, pinned_host, unpinned_host, vmem, pinned_device
  MemoryKind from_memory_kind = MemoryKind::kDevice;  // where libneuronmem places from_kind / to_kind
  MemoryKind to_memory_kind = MemoryKind::kDevice;    // (vmem and pinned_device are device-side: kDevice)
  std::string spelling;  // annotate_device_placement, MoveToHost, MoveToDevice, AwsNeuronMemoryPlacement
  Location loc;
  // The op in Manifest::ir this entry was derived from: the executor finds it by identity (null for a
  // manifest read from JSON).
  const stablehlo::Operation* ir_op = nullptr;
};

struct HostCompute {  // an op or call marked _xla_compute_type = "host", or a call of a marked function
  std::string function;
  std::string op;      // "func.func" for an entry function marked itself
  std::string callee;  // func.call's callee (the function itself for "func.func")
  Location loc;
  const stablehlo::Operation* ir_op = nullptr;  // the op in Manifest::ir (null for "func.func" and from JSON)
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
  const stablehlo::Operation* ir_op = nullptr;  // the custom_call in Manifest::ir (null from JSON)
};

struct Composite {  // stablehlo.composite
  std::string function;
  std::string name;                                             // "my_namespace.my_op"
  std::string decomposition;                                    // the function it stands for, without '@'
  int64_t version = 0;                                          // 0 when absent (the spec's default)
  std::vector<std::pair<std::string, std::string>> attributes;  // composite_attributes, each value as written
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
  const stablehlo::Operation* ir_op = nullptr;  // the send or recv in Manifest::ir (null from JSON)
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
  // Composites in walk order (the entry, then each function at its first call or composite); a client's kernel
  // of a composite's name takes it over at execute (docs/executor.md, "Custom kernels").
  std::vector<Composite> composites;
  // "file:line:col: message" for what the parser accepted but skipped (ops of unknown dialects in custom
  // form), in source order.
  std::vector<std::string> warnings;
  // The parsed module the manifest was derived from (the executor runs it); null for a manifest read from
  // JSON. Shared: copies of the manifest share one IR.
  std::shared_ptr<const stablehlo::Module> ir;
};

// Derives and validates the manifest of options.entry in `module` (out->ir keeps a copy of the module).
// INVALID_ARGUMENT / UNIMPLEMENTED / NOT_FOUND with "file:line:col: message".
Status Derive(const stablehlo::Module& module, const Options& options, Manifest* out);
Status Derive(std::shared_ptr<const stablehlo::Module> module, const Options& options, Manifest* out);

// Parses StableHLO text (the first module that defines the entry function) and derives its manifest.
// NOT_FOUND without that function: the message lists the public functions there are and how to choose one.
Status LoadFromText(std::string_view text, const Options& options, Manifest* out);

// The public functions of every module of `modules`, in source order, each name once (a name defined in
// several modules stands for the first: the one LoadFromText would use): the possible entries.
std::vector<std::string> PublicFunctions(const std::vector<stablehlo::Module>& modules);

// Parses StableHLO text and lists its public functions (PublicFunctions). `filename` prefixes parse errors.
Status ListPublicFunctions(std::string_view text, const std::string& filename, std::vector<std::string>* out);

// JSON form (docs/contract.md). FromJson checks schema_version and every field's type.
std::string ToJson(const Manifest& m, int indent = 2);
Status FromJson(std::string_view json, Manifest* out);

// Policy names.
const char* PolicyName(Policy p);

// Whether attributes hold mhlo.frontend_attributes = {_xla_compute_type = "host"} (JAX's compute_on('device_host')).
bool IsHostCompute(const stablehlo::NamedAttrs& attributes);
// Whether op runs on the host: it is marked, or it is a func.call of a function marked itself.
bool RunsOnHost(const stablehlo::Module& module, const stablehlo::Operation& op);
// The same through an index of the module's functions (a pass over every op: linear in the calls).
bool RunsOnHost(const stablehlo::FunctionIndex& functions, const stablehlo::Operation& op);

// Where libneuronmem places a placement kind as written in a move (device, pinned_host, unpinned_host, and
// the device-side vmem and pinned_device); false for other strings.
bool PlacementMemoryKind(std::string_view kind, MemoryKind* out);

}  // namespace neuronmem::manifest
