// Internals of the interpreter shared by the op families: kernels, frames, bodies, the compile context
// that op implementations use, and the op registry.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "interpreter/interpreter.h"
#include "interpreter/numeric.h"

namespace neuronmem::interp {

struct Function;
struct Frame;
struct RunState;

// One compiled op. Run reads its operand slots and writes its result slots (slot pointers of the frame).
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status Run(Frame& frame) const = 0;
  const stablehlo::Operation* op = nullptr;  // for error messages
};

// A straight-line list of kernels (a block); arg_slots are set by whoever runs it (function call, region
// owner); result_slots are the values its terminator returns.
struct Body {
  std::vector<const Kernel*> kernels;
  std::vector<uint32_t> arg_slots;
  std::vector<uint32_t> result_slots;
};

// The frame of one function invocation: slot pointers and the stack above it for callees.
struct Frame {
  char** slots;
  char* stack;  // free memory for callee frames
  const struct ProgramState* state;
  char* space_stack[kMaxSpaces];  // free memory of spaces 1.. for callee frames
  void* context;                  // RunOptions::context
  RunState* run;                  // the run's process and probes (run_state.h)
  // RunOptions::interrupt (nullptr: none): nonzero stops the run before its next op.
  const std::atomic<int>* interrupt = nullptr;
};

struct ProgramState {
  std::string filename;
  const CustomCallRegistry* custom_calls;
  bool reference_test_ops = false;  // CompileOptions::reference_test_ops
  CompileOptions::SpaceCopyFn space_copy = nullptr;
  CustomCallFn host_compute_move;  // CompileOptions::HostCompute::move
};

// The status of a run stopped by its interrupt (RunOptions::interrupt) before `next`.
Status Interrupted(const Frame& frame, const Kernel& next);

// Runs the kernels of `body` in order; before each, a run's interrupt (one relaxed load) stops it. Every loop
// (while, scan, a reduce's body per element) runs its body through here, so an endless loop stops too.
inline Status RunBody(const Body& body, Frame& frame) {
  for (const Kernel* k : body.kernels) {
    if (frame.interrupt && frame.interrupt->load(std::memory_order_relaxed)) return Interrupted(frame, *k);
    Status s = k->Run(frame);
    if (s) return s;
  }
  return Status();
}

// A statically shaped value slot.
struct Slot {
  // kAlias: the value of an op that worked in place (CompileCtx::InPlace): its memory is slot alias_of's.
  enum class Kind : uint8_t { kPlanned, kExternal, kConst, kAlias };
  Kind kind = Kind::kPlanned;
  ElementType type = ElementType::kInvalid;
  const stablehlo::QuantType* quant = nullptr;
  std::vector<int64_t> dims;
  int64_t count = 0;  // elements
  size_t bytes = 0;
  size_t offset = 0;  // kPlanned: offset in the frame's data of its space
  uint8_t space = 0;  // kPlanned: the memory space (CompileOptions::result_space); kExternal: where the
                      // value is known to lie (host compute's placement decisions; 0 also when unknown)
  const char* const_data = nullptr;
  uint32_t alias_of = 0;  // kAlias: the slot whose memory it takes (a planned slot or an entry parameter)
  // Liveness (kPlanned): first and last op index (in the function's pre-order numbering).
  uint32_t live_begin = 0, live_end = 0;
  // kPlanned: a value a fused element-wise region keeps in its tiles (fusion.cc): no memory, a null pointer.
  bool fused = false;
  // Compile time only: the op that defines the slot (an index into the compiler's list; none for arguments,
  // constants and scratch).
  uint32_t definer = UINT32_MAX;
};

// The slots of a function: chunks that never move, so references stay valid while ops add slots. Chunk k
// holds 4 << k slots (4, 8, 16, ...): a function of two values allocates 4, not 64 (a module of 40,000 small
// functions touched 250 MB with chunks of 64), and an index is a count of leading zeros and two shifts (a
// std::deque holds 4 slots per allocation and indexes through a division).
class SlotTable {
 public:
  Slot& operator[](size_t i) { return At(i); }
  const Slot& operator[](size_t i) const { return const_cast<SlotTable*>(this)->At(i); }
  size_t size() const { return size_; }
  void push_back(Slot&& s) {
    const size_t k = ChunkOf(size_);
    if (k == chunks_.size()) chunks_.emplace_back(new Slot[kFirst << k]);
    chunks_[k][size_ - Start(k)] = std::move(s);
    ++size_;
  }

 private:
  static constexpr size_t kFirst = 4;
  // Chunk k starts at slot 4 (2^k - 1); slot i is in chunk floor(log2(i / 4 + 1)).
  static size_t ChunkOf(size_t i) { return static_cast<size_t>(63 - __builtin_clzll((i >> 2) + 1)); }
  static size_t Start(size_t k) { return kFirst * ((size_t{1} << k) - 1); }
  Slot& At(size_t i) {
    const size_t k = ChunkOf(i);
    return chunks_[k][i - Start(k)];
  }
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  size_t size_ = 0;
};

std::string FormatLocation(const std::string& file, const stablehlo::Operation& op);

// Whether control flow copying slot `src` into slot `dst` takes a value out of the memory space a move put it
// in (CompileOptions::space_copy): src was planned in a space other than 0 and dst is not in that space.
// An alias (a value updated in place) is in its root's space.
inline bool CrossesSpaces(const Slot& src, const Slot& dst) {
  const auto planned = [](const Slot& s) { return s.kind == Slot::Kind::kPlanned || s.kind == Slot::Kind::kAlias; };
  return planned(src) && src.space != 0 && (!planned(dst) || dst.space != src.space);
}
// Copies a value (the regions may overlap); through the program's space_copy when `crosses`.
inline void CopyValue(const Frame& f, char* dst, const char* src, size_t bytes, bool crosses) {
  if (dst == src || !bytes) return;
  if (crosses && f.state->space_copy)
    f.state->space_copy(f.context, dst, src, bytes);
  else
    std::memmove(dst, src, bytes);
}

class ManualDevices;  // manual_devices.h

// Everything an op implementation may use while compiling one op.
class CompileCtx {
 public:
  virtual ~CompileCtx() = default;
  const stablehlo::Operation& op() const { return *op_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  uint32_t in(size_t i) const { return inputs_[i]; }
  uint32_t out(size_t i) const { return outputs_[i]; }
  const Slot& in_slot(size_t i) const { return slot(inputs_[i]); }
  const Slot& out_slot(size_t i) const { return slot(outputs_[i]); }
  const Slot& slot(uint32_t i) const { return (*slots_)[i]; }
  // The op's operand slots, in order (every leaf of every operand).
  const std::vector<uint32_t>& inputs() const { return inputs_; }

  // A failed status "file:line:col: 'op': message" (UNIMPLEMENTED or INVALID_ARGUMENT).
  Status Unsupported(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));
  Status Invalid(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));

  // Compiles region `index` of the op into a body whose block arguments are fresh external slots.
  virtual Status CompileRegion(size_t index, const Body** body) = 0;
  // The same with every value of the region (its 0-d arguments and results) widened to n elements, so that one
  // run of the body computes n independent instances (a reduction's body for all its results at once).
  // UNIMPLEMENTED unless the region is one block of 0-d, non-quantized values and element-wise ops only
  // (BatchableOp): those compute each element as the 0-d op would.
  virtual Status CompileRegionBatched(size_t index, int64_t n, const Body** body) = 0;
  // Compiles region `index` of the op (one block that reads only its arguments and constants, as an op
  // isolated from above has) into a function of its own (compiled once per op and code space): its frames are
  // its own, so that several instances of it may run at once, each on its own thread (RunStandalone). The
  // function's results are the values the region's terminator returns, typed as its operand types say.
  virtual Status CompileRegionFunction(size_t index, const Function** fn) = 0;
  // Records that the current op runs `devices` instances of a body at once, each on its own thread
  // (Program::num_manual_devices is the most of them).
  virtual void RecordConcurrentDevices(int64_t devices) = 0;
  // The devices of the sdy.manual_computation whose communicating body is being compiled (manual_devices.h): the
  // collectives' groups and pairs name them, partition_id reports them. nullptr outside such a body.
  virtual const ManualDevices* manual_devices() const = 0;
  // Makes `devices` (nullptr: none) manual_devices() for what compiles next; returns the one it replaces.
  // Functions compiled meanwhile are kept apart from those compiled under other devices or none.
  virtual const ManualDevices* SetManualDevices(const ManualDevices* devices) = 0;
  // The ops of the block the current op is in (it among them), for ops that compile together with their
  // neighbours (Shardy's exported manual computation: sharding_annotations.cc).
  virtual stablehlo::Span<stablehlo::Operation> BlockOps() const = 0;
  // The slot of the value `ref` names in the current op's scope (one leaf), or INVALID_ARGUMENT. The current op's
  // kernel may read it: it counts as a use (the value lives until the op has run).
  virtual Status LookupValue(const stablehlo::ValueRef& ref, uint32_t* slot) = 0;
  // A planned scratch slot owned by the current op (live while the op runs).
  virtual uint32_t AddScratch(ElementType type, const std::vector<int64_t>& dims) = 0;
  // Keeps the value in `slot` (an operand of the current op) unchanged until the program's run ends: its memory
  // is not reused by a later op and no op overwrites it in place. Only where the current op runs at most once
  // per run (the entry function's own block, not a region or a called function) and for a planned
  // intermediate; returns whether it is kept (a send then lends the bytes instead of copying them).
  virtual bool KeepUntilEnd(uint32_t slot) = 0;
  // Makes output `i` another slot (no kernel writes it).
  virtual void AliasOutput(size_t i, uint32_t slot) = 0;
  // Output `output` may take the memory of input `input` (same byte size): the compiler grants it after the
  // function is compiled when this op is that value's last use and the memory is the program's to overwrite
  // (docs/executor.md, "In-place updates"). The kernel must then work with the two slots' pointers equal
  // (and still copy when they differ).
  virtual void InPlace(size_t output, size_t input) = 0;
  // A constant slot shaped like `like` holding `data` (like.bytes bytes, copied).
  virtual uint32_t AddConstant(const Slot& like, const void* data) = 0;
  // Records that the current op calls `fn` (for the stack size).
  virtual void AddCallee(const Function* fn) = 0;
  // The compiled function called by name (func.call).
  virtual Status GetFunction(std::string_view name, const Function** fn) = 0;
  // The function `name` of the module as parsed (not compiled), or nullptr when there is none.
  virtual const stablehlo::Function* FindFunction(std::string_view name) const = 0;
  // The module being compiled (its top-level ops: Shardy's meshes).
  virtual const stablehlo::Module& module() const = 0;
  // The bytes of `slot` when they are known at compile time: a constant, or a value that side-effect-free ops
  // compute from constants only (evaluated here with their kernels, once). Otherwise UNIMPLEMENTED naming
  // `what` and the value it depends on (a function argument, or an op that is not evaluated at compile time).
  virtual Status ConstantData(uint32_t slot, const char* what, const char** data) = 0;
  virtual const ProgramState* state() const = 0;
  virtual const CustomCallRegistry* custom_calls() const = 0;

  // Attribute helpers.
  const stablehlo::Attribute* Attr(std::string_view name) const;
  // Integer list from array<i64: ...>, [..] or dense<...> integer tensor. False if absent or malformed.
  bool IntList(std::string_view name, std::vector<int64_t>* out) const;
  static bool IntListOf(const stablehlo::Attribute& a, std::vector<int64_t>* out);
  bool Int(std::string_view name, int64_t* out) const;
  bool Bool(std::string_view name, bool* out) const;
  // The word of an enum attribute: `#stablehlo<comparison_direction LT>`, `LT`, `"LT"`.
  bool EnumWord(std::string_view name, std::string* out) const;

 protected:
  const stablehlo::Operation* op_ = nullptr;
  const SlotTable* slots_ = nullptr;  // the function's
  std::vector<uint32_t> inputs_, outputs_;
};

using OpCompileFn = Status (*)(CompileCtx& cx, std::unique_ptr<Kernel>* out);

// What the compiler may do with an op besides compiling it: each op's registry entry says.
enum OpTrait : uint8_t {
  kElementwise = 1,  // its results have the shape of its operands (dynamic result dims come from them)
  kEvaluable = 2,    // no side effects, no regions, a kernel that reads only its operands: evaluated at compile
                     // time when every operand is known (the vocabulary of shape computations)
  kBatchable = 4,    // its kernel computes each element of an n-element value as it computes a 0-d one (a
                     // region of such ops runs batched, CompileCtx::CompileRegionBatched)
};

// An op's registry entry: its compile function and its traits (OpTrait bits).
struct OpEntry {
  OpEntry() = default;
  OpEntry(OpCompileFn fn, uint8_t t = 0) : compile(fn), traits(t) {}  // NOLINT: implicit (`m[name] = fn`)
  OpCompileFn compile = nullptr;
  uint8_t traits = 0;
};
using OpTable = std::unordered_map<std::string_view, OpEntry>;

// The op registry: name -> entry. Each op family registers its ops from its own translation unit (called
// from one table in registry.cc).
const OpTable& OpRegistry();

void RegisterElementwiseOps(OpTable* r);
void RegisterShapeOps(OpTable* r);
void RegisterControlOps(OpTable* r);
void RegisterCheckOps(OpTable* r);
void RegisterLinalgOps(OpTable* r);
// fft, triangular_solve, cholesky (linalg_solver_ops.cc).
void RegisterLinalgSolverOps(OpTable* r);
void RegisterReduceOps(OpTable* r);
void RegisterIndexOps(OpTable* r);
void RegisterRngOps(OpTable* r);
// replica_id, partition_id, the collectives, send/recv, infeed/outfeed (collective.h).
void RegisterCollectiveOps(OpTable* r);
// The reference interpreter's test ops: interpreter.run_parallel, interpreter.probe,
// check.expect_serialized_eq (reference_ops.cc).
void RegisterReferenceOps(OpTable* r);
// stablehlo.composite (composite.cc).
void RegisterCompositeOps(OpTable* r);
// batch_norm_inference, batch_norm_training, batch_norm_grad (batch_norm.cc).
void RegisterBatchNormOps(OpTable* r);
// chlo.is_inf, chlo.is_neg_inf, chlo.is_pos_inf, chlo.conj (chlo_float_class.cc).
void RegisterChloFloatClassOps(OpTable* r);
// chlo.ragged_dot (ragged_dot.cc).
void RegisterRaggedDotOps(OpTable* r);
// sdy.manual_computation (manual_computation.cc; sdy.named_computation is in control.cc).
void RegisterManualComputationOps(OpTable* r);
// Defined by chlo_special.cc when it exists (see registry.cc).
void RegisterChloSpecialOps(OpTable* r);

// A kernel calling the custom-call target `fn` (found as `target`) with the current op's operands and results
// (checks.cc); a failure reads "file:line:col: 'op.name' @target: message".
std::unique_ptr<Kernel> MakeCustomCallKernel(CompileCtx& cx, std::string target, const CustomCallFn* fn);

// The custom calls that only annotate values for the SPMD partitioner (Sharding, SPMDFullToShardShape,
// SPMDShardToFullShape, xla.sdy.FuncResultSharding, xla.sdy.GlobalToLocalShape, xla.sdy.LocalToGlobalShape,
// xla.sdy.ShardingGroup, xla.sdy.PropagationBarrier), and their compile: each result is its operand, no kernel
// (sharding_annotations.cc). UNIMPLEMENTED when one changes a value's type (a split over several devices).
bool IsShardingAnnotationTarget(std::string_view target);
Status CompileShardingAnnotation(CompileCtx& cx, std::string_view target, std::unique_ptr<Kernel>* k);
// Shardy's exported manual computation (xla.sdy.GlobalToLocalShape that splits values, a call of
// @xla.sdy.manual_computation_body*, xla.sdy.LocalToGlobalShape; manual_computation.cc): when the current op is
// one of the three, compiles it (the first two to nothing, the last to the whole computation) into *k and
// *status and returns true.
bool CompileShardyRoundTrip(CompileCtx& cx, std::unique_ptr<Kernel>* k, Status* status);
// jax.export's @shape_assertion(%ok, %values...) {error_message}: fails the run when %ok is false, the message's
// {k} replaced by operand k + 1 (shape_assertion.cc).
Status CompileShapeAssertion(CompileCtx& cx, std::unique_ptr<Kernel>* k);

// Helpers for kernels.
template <typename T>
inline T* Ptr(Frame& f, uint32_t slot) {
  return reinterpret_cast<T*>(f.slots[slot]);
}

// Row-major strides of dims.
inline std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Formats element `i` of a buffer of `type` as text (for check failures).
std::string FormatElement(ElementType type, const void* data, int64_t i);
// Formats a multi-index of flat index `i` over dims: "[1, 2]".
std::string FormatIndex(const std::vector<int64_t>& dims, int64_t i);

}  // namespace neuronmem::interp
