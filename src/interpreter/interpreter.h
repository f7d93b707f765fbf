// The StableHLO interpreter of the software NeuronCore.
//
// Compile: a parsed module + the entry function's name -> a Program. Every op of every function reachable
// from the entry is resolved here to a registered op implementation, which decodes and checks its
// attributes into a typed kernel; anything the interpreter cannot run (an unknown op, an element type or
// attribute it does not support, a dynamic shape) fails at compile time with
// "file:line:col: 'op.name': reason", never at run time. The result is a flat list of kernels per
// function body with numbered value slots; intermediates are planned at compile time into one workspace
// per run (liveness-based reuse), so a run allocates nothing per op.
//
// Run: arguments are views of existing memory (pointer, element type, dims); results are written to
// memory obtained from a ResultAllocator (the executor hands out device-arena memory); a failure is a
// Status naming the op and its location (for example a failed check.* custom call).
//
// Custom calls resolve through a CustomCallRegistry: the check.* targets of StableHLO's test suites are
// built in; user targets register the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/element_type.h"
#include "base/status.h"
#include "stablehlo/ir.h"

namespace neuronmem::interp {

// A tensor in memory: dense, row-major, one ElementByteSize(type) per element (sub-byte types one byte).
struct TensorView {
  void* data = nullptr;
  ElementType type = ElementType::kInvalid;
  const int64_t* dims = nullptr;
  size_t rank = 0;

  int64_t NumElements() const {
    int64_t n = 1;
    for (size_t i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  size_t Bytes() const { return static_cast<size_t>(NumElements()) * ElementByteSize(type); }
};

// Where results go. Allocate returns memory of `bytes` (aligned to 64) for result `index`, or nullptr
// when there is none (the run then fails with RESOURCE_EXHAUSTED naming the result).
class ResultAllocator {
 public:
  virtual ~ResultAllocator() = default;
  virtual void* Allocate(size_t index, size_t bytes) = 0;
};

// A ResultAllocator on the host heap (tools and tests): the memory lives as long as the allocator.
class HostResultAllocator : public ResultAllocator {
 public:
  void* Allocate(size_t index, size_t bytes) override;
  void Clear() { blocks_.clear(); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::vector<std::unique_ptr<void, Free>> blocks_;
};

// A custom call target: called at run time with views of the operands and of the (already allocated)
// results. Returns a failed status to fail the run; the interpreter prefixes it with the op's location.
struct CustomCallContext {
  std::string_view target;
  void* run_context = nullptr;               // RunOptions::context of the run (the executor's per-run state)
  const stablehlo::Operation* op = nullptr;  // the custom call (its attributes and location)
  const TensorView* operands = nullptr;
  size_t num_operands = 0;
  const TensorView* results = nullptr;
  size_t num_results = 0;
};
using CustomCallFn = std::function<Status(const CustomCallContext&)>;

class CustomCallRegistry {
 public:
  // The registry with the built-in check.* targets (expect_eq, expect_close, expect_almost_eq, eq).
  static const CustomCallRegistry& BuiltIn();

  CustomCallRegistry() = default;
  // Adds or replaces a target.
  void Register(std::string name, CustomCallFn fn);
  // nullptr if the target is unknown.
  const CustomCallFn* Find(std::string_view name) const;

 private:
  std::vector<std::pair<std::string, CustomCallFn>> targets_;
};

struct CompileOptions {
  std::string entry = "main";                        // the function to run
  std::string filename;                              // prefixes error locations ("file:line:col")
  const CustomCallRegistry* custom_calls = nullptr;  // nullptr = CustomCallRegistry::BuiltIn()
  // Memory spaces (the executor's memory kinds): the space of the values an op defines, below kMaxSpaces
  // (0 = the default space). Each space's intermediates are planned apart, in memory of their own per
  // run (RunOptions::spaces). nullptr: everything in space 0. Inside host compute (below), only the ops
  // HostCompute::place calls kMove are asked; the others define their values in HostCompute::space.
  std::function<uint8_t(const stablehlo::Operation&)> result_space;
  // Donation (the executor's donated arguments): donations[i] is the result whose memory entry parameter i
  // (flattened) becomes when a run donates it, or -1; param_spaces[i] is the memory space parameter i lives in
  // (empty: 0). Ops that can work in place (scatter, dynamic_update_slice, reshape) write into a donatable
  // parameter of their own space at its last use; a run that does not donate it (RunOptions::donated) first
  // copies the argument into that result's memory and works there. Intermediates are updated in place at
  // their last use whatever these say.
  std::vector<int32_t> donations;
  std::vector<uint8_t> param_spaces;
  // Accept the StableHLO reference interpreter's own test ops (interpreter.run_parallel, interpreter.probe,
  // check.expect_serialized_eq), as the conformance runner does; otherwise they fail to compile.
  bool reference_test_ops = false;
  // The copies control flow makes of a value that an op inside it put in a space other than 0 (a move) into
  // the op's own result in another space: a func.call's callee result, an if/case branch result, a while's
  // initial or carried value. Called instead of a plain copy, with the run's context
  // (RunOptions::context): the executor copies and counts them as transfers. nullptr: plain copies.
  using SpaceCopyFn = void (*)(void* run_context, void* dst, const void* src, size_t bytes);
  SpaceCopyFn space_copy = nullptr;
  // Shape refinement (a shape-polymorphic entry, as jax.export writes them: parameters of types such as
  // tensor<?x4xf32>; StableHLO's refine-shapes pass): param_dims[i] gives entry parameter i (flattened) its
  // dims in place of the `?` ones its type declares (an empty vector, or a parameter without `?` dims: the
  // declared type). The refined shapes propagate: element-wise ops and the dynamic-shape ops infer their `?`
  // result dims, get_dimension_size is a constant, and a call (or composite) of a function whose parameters
  // have `?` dims or `jax.global_constant` compiles a specialization of it for its arguments' dims and the
  // values of its global-constant arguments (known at compile time), whose result dims are the call's.
  // Specialize (specialize.h) compiles one program per argument-shape tuple.
  std::vector<std::vector<int64_t>> param_dims;

  // Host compute (the executor's `_xla_compute_type = "host"`; docs/executor.md, "Host compute"). Off while
  // `place` is null. An op `place` calls kHost runs on the host with everything inside it (its regions, the
  // functions it calls, compiled apart from their device-side instances): the values they define live in
  // `space`. Before the outermost such op, each value it reads (operands, and values its regions read from
  // outside) that lies in neither a host space nor the program's constants is copied into `space` by a move
  // kernel; device code that reads a value host code defined reads a copy back in space 0 the same way. Each
  // value is copied once per side and enclosing block. kMove ops (the intra-graph placement moves) move their
  // operand themselves: nothing is copied for them. A function's return is a read by the code of its side;
  // the entry's return is not (its caller places the results; see result_spaces). Where the entry's
  // parameters lie: param_spaces.
  struct HostCompute {
    enum class Place : uint8_t { kAround, kHost, kMove };
    std::function<Place(const stablehlo::Operation&)> place;
    bool entry_on_host = false;          // the entry function itself runs on the host
    uint8_t space = 0;                   // where host code defines its values (nonzero)
    uint32_t host_spaces = 0;            // bit k: space k is host memory, which host code reads in place
    std::vector<uint8_t> result_spaces;  // the space each entry result is wanted in: one already copied
                                         // there is returned from its copy
    CustomCallFn move;                   // makes one copy (operand 0 into result 0); null: a plain memcpy
  };
  HostCompute host_compute;
  // Fused element-wise regions (docs/executor.md): runs of f32 element-wise ops computed tile by tile in one
  // kernel, the values used only inside a region never written. Off here or with NEURONMEM_INTERP_FUSION=0 in
  // the environment: every op runs its own kernel (the results agree within the spec's tolerance: the fused
  // exponential is a polynomial within 2 ulp).
  bool fuse_elementwise = true;
};

constexpr size_t kMaxSpaces = 4;

struct ValueSpec {
  ElementType type = ElementType::kInvalid;
  std::vector<int64_t> dims;
  size_t bytes = 0;
  // Results: the space the returned value lives in, or the entry parameter it is (-1: none).
  uint8_t space = 0;
  int32_t param = -1;

  size_t NumBytes() const;
};

class Program;
struct ProcessContext;  // process.h

// Per-run scratch memory (the intermediates' workspace). Reuse one per thread to run a program
// repeatedly without allocating; a Workspace must not be used by two runs at once.
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace();
  // Returns at least `bytes` of 64-byte aligned memory (grows, never shrinks). nullptr if out of memory.
  char* Reserve(size_t bytes);

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

class Program {
 public:
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // The entry function's flattened parameters and results (tuples are flattened, tokens are empty pred[0]).
  const std::vector<ValueSpec>& parameters() const;
  const std::vector<ValueSpec>& results() const;
  // Peak bytes of intermediates during one run (the workspace a run needs), constants excluded.
  size_t workspace_bytes() const;
  // The same for memory space `space` (space 0 includes the slot tables: workspace_bytes()).
  size_t workspace_bytes(size_t space) const;
  // Bytes of constants the program holds.
  size_t constant_bytes() const;
  // Number of kernels (ops) over all compiled functions and regions.
  size_t num_kernels() const;
  // Ops that write their result into an operand's memory (in-place updates granted at compile time).
  size_t num_in_place() const;
  // Whether the program writes into entry parameter i's memory when a run donates it.
  bool overwrites_parameter(size_t i) const;
  // Number of copies compiled in at host-compute boundaries (CompileOptions::HostCompute): places in the
  // program, each run once per execution of the code around it.
  size_t num_host_compute_moves() const;
  // The most devices one sdy.manual_computation of the program runs at once (a body that communicates: each on a
  // core of RunOptions::parallel, or a thread of its own; docs/executor.md, "Shardy"); 0 when every one runs on
  // the calling thread alone.
  size_t num_manual_devices() const;
  // The fused element-wise regions of every compiled function (CompileOptions::fuse_elementwise), in compile
  // order: the ops each one runs (in program order), how many of their values it writes and how many it keeps
  // in its tiles only (those take no workspace).
  struct FusedRegion {
    std::vector<std::string> ops;
    size_t written = 0, in_tile = 0;
  };
  const std::vector<FusedRegion>& fused_regions() const;

  // Runs the entry function. `args` must match parameters() in type and dims. Results are allocated
  // from `allocator` and described in `results` (their dims point into this Program).
  Status Run(const TensorView* args, size_t num_args, ResultAllocator* allocator, std::vector<TensorView>* results,
             Workspace* workspace = nullptr) const;

  struct RunOptions {
    Workspace* workspace = nullptr;  // space 0 when `spaces` is null (nullptr: a temporary one)
    // When set: spaces[k] is workspace_bytes(k) bytes of 64-byte aligned memory for space k (kMaxSpaces
    // entries; null for spaces of 0 bytes), used instead of `workspace`.
    char* const* spaces = nullptr;
    void* context = nullptr;  // handed to custom calls (CustomCallContext::run_context)
    // Per argument: the caller gives up its memory for this run (only parameters with a donation, see
    // CompileOptions::donations, are ever written). nullptr: no argument is donated, none is written.
    const bool* donated = nullptr;
    // The process this run is in a ProcessGrid (process.h); nullptr: process (0, 0) of a grid of one.
    const ProcessContext* process = nullptr;
    // Set to a nonzero neuronmem_status_code_t by another thread (CANCELLED, DEADLINE_EXCEEDED): the run stops
    // before its next op (every loop iteration runs ops, so an endless loop stops too) and fails with that
    // code, naming the op it did not run. nullptr: the run cannot be stopped. A process blocked in a
    // collective or a recv stops once its peers end.
    const std::atomic<int>* interrupt = nullptr;
    // Where the devices of an sdy.manual_computation whose body communicates run (docs/executor.md, "Shardy"):
    // nullptr, a std::thread per device per run (the calling thread runs the last); set (the executor of a
    // client of more than one core), run(context, n, bytes, task, arg) calls task(arg, k, scratch_k, Status())
    // for every device k < n at once (the devices wait for one another in their collectives: never one after
    // another on one thread), the calling thread taking one of them, and returns once every call returned.
    // scratch_k is `bytes` of 64-byte aligned memory for device k, valid during the call. A device the hook
    // cannot start (no thread, no memory) gets task(arg, k, nullptr, why) instead: it then fails with `why`.
    struct Parallel {
      using Task = void (*)(void* arg, size_t k, char* scratch, Status start);
      void (*run)(void* context, size_t n, size_t bytes, Task task, void* arg) = nullptr;
      void* context = nullptr;
    };
    const Parallel* parallel = nullptr;
    // Memory of spaces 1.. (CompileOptions::result_space) for the frames of a body run apart from the run's
    // `spaces`: each device of an sdy.manual_computation runs its body in frames of its own. allocate(context,
    // space, bytes) returns `bytes` of 64-byte aligned memory of that space, or nullptr when there is none (the
    // device then fails RESOURCE_EXHAUSTED naming the body); release(context, space, p, bytes) gives it back once
    // the body has run. Called from the device's thread, several devices at once: both must be thread-safe.
    // nullptr: ordinary host memory (the executor's memories then do not hold the values the body moves).
    struct SpaceMemory {
      void* (*allocate)(void* context, size_t space, size_t bytes) = nullptr;
      void (*release)(void* context, size_t space, void* p, size_t bytes) = nullptr;
      void* context = nullptr;
    };
    const SpaceMemory* space_memory = nullptr;
  };
  Status Run(const TensorView* args, size_t num_args, ResultAllocator* allocator, std::vector<TensorView>* results,
             const RunOptions& options) const;

  struct Impl;

 private:
  friend Status Compile(const stablehlo::Module&, const CompileOptions&, std::unique_ptr<Program>*);
  explicit Program(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Compiles `module` for the interpreter (see the file comment). INVALID_ARGUMENT for a malformed module,
// UNIMPLEMENTED "file:line:col: 'op': reason" for what the interpreter does not support.
Status Compile(const stablehlo::Module& module, const CompileOptions& options, std::unique_ptr<Program>* out);

}  // namespace neuronmem::interp
