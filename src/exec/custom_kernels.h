// Custom kernels (the NKI path): functions a frontend registers per client by name, called by
// custom calls. A custom call whose target is a registered name runs it once; a call to
// AwsNeuronCustomNativeKernel runs the kernel its backend_config's `func_name` names, once per point of the
// config's `grid` (points in parallel on oneTBB; an empty grid runs once). Kernels see their operands and
// results as views of the executing core's memories (pointer, element type, dims, memory kind).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/element_type.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "interpreter/interpreter.h"
#include "manifest/manifest.h"

namespace neuronmem::exec {

// An operand or result as a custom kernel (or a host callback) sees it: the interpreter's view of it and the
// kind of the core's memory it lies in.
struct CustomKernelTensor : interp::TensorView {
  MemoryKind kind = MemoryKind::kDevice;

  CustomKernelTensor() = default;
  CustomKernelTensor(const interp::TensorView& v, MemoryKind k) : interp::TensorView(v), kind(k) {}
};

struct CustomKernelCall {
  std::string_view target;          // the custom-call target
  std::string_view name;            // the registered name (func_name for AwsNeuronCustomNativeKernel)
  std::string_view backend_config;  // as written in the graph
  const CustomKernelTensor* inputs = nullptr;
  size_t num_inputs = 0;
  const CustomKernelTensor* outputs = nullptr;
  size_t num_outputs = 0;
  const int64_t* grid = nullptr;  // the launch grid; rank 0 = one call
  size_t grid_rank = 0;
  const int64_t* grid_index = nullptr;  // this call's point (grid_rank entries)
  uint32_t core = 0;
};

// May run on several threads at once (grid points, executions on several cores).
using CustomKernelFn = std::function<Status(const CustomKernelCall&)>;

// The kernels of one client. Thread-safe; an executable takes the kernels it calls when it is compiled.
class CustomKernelRegistry {
 public:
  // Adds `name`, or replaces it for executables compiled from now on. INVALID_ARGUMENT for a built-in
  // target's name (IsBuiltInTarget): the registry keeps what it had.
  Status Register(std::string name, CustomKernelFn fn);
  // nullptr if none.
  std::shared_ptr<const CustomKernelFn> Find(std::string_view name) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CustomKernelFn>, std::less<>> kernels_;
};

// Whether `name` is a custom-call target the executor runs itself: the placement targets
// (annotate_device_placement, MoveToHost, MoveToDevice, AwsNeuronMemoryPlacement), which move and count
// bytes; the check dialect's targets (every `check.` name); AwsNeuronCustomNativeKernel, which dispatches
// to the kernel its backend_config's func_name names. A kernel may not be registered under these names.
bool IsBuiltInTarget(std::string_view name);

// The custom-call registry of an executable: the built-in and placement targets, every target of the
// manifest registered in `kernels` (nullable), and AwsNeuronCustomNativeKernel dispatching each call site to
// the kernel its func_name names. UNIMPLEMENTED "file:line:col: ..." for an NKI call whose func_name is not
// registered, INVALID_ARGUMENT for a grid dimension below 1.
Status BuildCustomCalls(const manifest::Manifest& m, const CustomKernelRegistry* kernels, const std::string& filename,
                        interp::CustomCallRegistry* out);

}  // namespace neuronmem::exec
