// The compiler's classes, shared by the files that implement them:
//   compile.cc         interp::Compile, functions, blocks and regions
//   compile_op.cc      one op, in named steps (FunctionCompiler::CompileOp); slots, names in scope
//   compile_ctx.cc     what op compilers read through CompileCtx: attributes, errors
//   compile_time.cc    values known at compile time, result types with dynamic dims
//   host_placement.cc  host compute: where an op runs, copies of its inputs
//   in_place.cc        in-place updates
//   slot_plan.cc       the liveness plan of each memory space
//   program.cc         frames and Program::Run
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "interpreter/kernel.h"
#include "interpreter/program.h"
#include "stablehlo/function_index.h"

namespace neuronmem::interp {

using stablehlo::Attribute;
using stablehlo::Operation;
using stablehlo::Type;

// Number of leaves (slots) a value of type t takes: tuples flatten.
inline size_t LeafCount(const Type& t) {
  if (t.kind != Type::Kind::kTuple) return 1;
  size_t n = 0;
  for (const Type& e : t.elements) n += LeafCount(e);
  return n;
}

// Whether a tensor type has `?` dims.
inline bool HasDynamicDims(const Type& t) {
  if (t.kind != Type::Kind::kTensor && t.kind != Type::Kind::kScalar) return false;
  for (int64_t d : t.dims)
    if (d < 0) return true;
  return false;
}

// The ops that call a function of the module with their operands as its arguments.
inline bool IsCallLike(std::string_view name) {
  return name == "func.call" || name == "call" || name == "stablehlo.composite";
}

// A function compiled for refined arguments (CompileOptions::param_dims for the entry; a call of a function
// with `?` or jax.global_constant parameters): per flattened parameter, its dims (empty: as declared) and its
// value when it is known at compile time (a jax.global_constant argument; empty: not known).
struct ParamRefinement {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::vector<char>> values;
  bool empty() const {
    for (const auto& d : dims)
      if (!d.empty()) return false;
    for (const auto& v : values)
      if (!v.empty()) return false;
    return true;
  }
  // Distinguishes the specializations of one function: the dims and values, as text.
  std::string Key() const {
    std::string k;
    for (size_t i = 0; i < dims.size() || i < values.size(); ++i) {
      k += '(';
      if (i < dims.size())
        for (int64_t d : dims[i]) k += std::to_string(d) + 'x';
      k += ':';
      if (i < values.size()) k.append(values[i].data(), values[i].size());
      k += ')';
    }
    return k;
  }
};

inline void LeafTypes(const Type& t, std::vector<const Type*>* out) {
  if (t.kind != Type::Kind::kTuple) {
    out->push_back(&t);
    return;
  }
  for (const Type& e : t.elements) LeafTypes(e, out);
}

// The names in scope while a function compiles: each name's latest binding (an index into the compiler's
// stack of bindings), in an open-addressing table keyed by views of the names (into the module's source).
// A name whose bindings all went out of scope keeps its entry, with no binding.
class NameTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  void Reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (cap > entries_.size()) Rehash(cap);
  }
  uint32_t Get(std::string_view name) const {
    if (entries_.empty()) return kNone;
    for (size_t i = Hash(name) & (entries_.size() - 1);; i = (i + 1) & (entries_.size() - 1)) {
      const Entry& e = entries_[i];
      if (!e.used) return kNone;
      if (e.name == name) return e.head;
    }
  }
  // Makes `head` the name's latest binding; returns the one it replaces (kNone if none).
  uint32_t Set(std::string_view name, uint32_t head) {
    if (2 * (count_ + 1) > entries_.size()) Rehash(entries_.empty() ? 16 : 2 * entries_.size());
    for (size_t i = Hash(name) & (entries_.size() - 1);; i = (i + 1) & (entries_.size() - 1)) {
      Entry& e = entries_[i];
      if (!e.used) {
        e = Entry{name, head, true};
        ++count_;
        return kNone;
      }
      if (e.name == name) {
        const uint32_t prev = e.head;
        e.head = head;
        return prev;
      }
    }
  }

 private:
  struct Entry {
    std::string_view name;
    uint32_t head = kNone;
    bool used = false;
  };
  static size_t Hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: names are a few characters
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
  void Rehash(size_t cap) {
    std::vector<Entry> old(cap);
    old.swap(entries_);
    for (const Entry& e : old) {
      if (!e.used) continue;
      size_t i = Hash(e.name) & (cap - 1);
      while (entries_[i].used) i = (i + 1) & (cap - 1);
      entries_[i] = e;
    }
  }
  std::vector<Entry> entries_;  // a power of two, at most half full
  size_t count_ = 0;
};

class Compiler;
struct FusionStep;

class FunctionCompiler final : public CompileCtx {
 public:
  // `space`: the space of the code (0 device code, HostCompute::space host code).
  FunctionCompiler(Compiler* c, Function* fn, uint8_t space) : c_(c), fn_(fn), ctx_(space) { slots_ = &fn->slots; }

  Status CompileFunction(const stablehlo::Function& f);

  Status CompileRegion(size_t index, const Body** body) override;
  Status CompileRegionBatched(size_t index, int64_t n, const Body** body) override;
  Status CompileRegionFunction(size_t index, const Function** fn) override;
  void RecordConcurrentDevices(int64_t devices) override;
  const ManualDevices* manual_devices() const override;
  const ManualDevices* SetManualDevices(const ManualDevices* devices) override;
  stablehlo::Span<Operation> BlockOps() const override { return block_ ? block_->ops : stablehlo::Span<Operation>(); }
  Status LookupValue(const stablehlo::ValueRef& ref, uint32_t* slot) override;
  uint32_t AddScratch(ElementType type, const std::vector<int64_t>& dims) override;
  bool KeepUntilEnd(uint32_t slot) override;
  Status GetFunction(std::string_view name, const Function** fn) override;
  const stablehlo::Function* FindFunction(std::string_view name) const override;
  const stablehlo::Module& module() const override;
  const ProgramState* state() const override;
  const CustomCallRegistry* custom_calls() const override;

  Status ConstantData(uint32_t slot, const char* what, const char** data) override;
  void AliasOutput(size_t i, uint32_t slot) override { alias_[i] = slot; }
  void InPlace(size_t output, size_t input) override {
    if (requests_) requests_->emplace_back(output, input);
  }
  uint32_t AddConstant(const Slot& like, const void* data) override;
  void AddCallee(const Function* f) override { fn_->AddCallee(f); }

 private:
  struct OpRange {
    uint32_t start;
    std::vector<uint32_t> pending;  // slots whose life extends to this op's end
  };

  Status NewSlot(const Type& t, Slot::Kind kind, const Operation* op, uint32_t* out);
  // Appends the slots of a value of type `t` (one per leaf of a tuple) to `leaves`.
  Status DefineLeaves(const Type& t, Slot::Kind kind, const Operation* op, std::vector<uint32_t>* leaves);
  // The leaves of value `ref` (valid until the next definition).
  Status Lookup(const stablehlo::ValueRef& ref, const uint32_t** leaves, size_t* count);
  void Use(uint32_t slot);
  // Binds `name` in the innermost scope to a value with no results yet; AddResult appends one result (its
  // leaves) to the latest binding.
  void Define(std::string_view name);
  void AddResult(const uint32_t* leaves, size_t count);
  void OpenScope() { scopes_.push_back(Scope{bindings_.size(), ranges_.size(), leaves_.size()}); }
  void CloseScope();
  Status CompileBlock(const stablehlo::Block& block, Body* body, std::vector<uint32_t>* returned,
                      stablehlo::Span<stablehlo::Argument> extra_args = {});
  Status CompileOp(const Operation& op, Body* body, std::vector<uint32_t>* returned);
  // CompileOp's steps (compile_op.cc).
  void OpenOp();
  uint32_t CloseOp();  // the op's end tick
  Status ReadOperands(const Operation& op);
  Status CompileReturn(Body* body, std::vector<uint32_t>* returned);
  Status CompileTuple(const Operation& op);
  Status CompileGetTupleElement(const Operation& op);
  Status CompileOptimizationBarrier(const Operation& op);
  Status ResultTypes(const Operation& op, stablehlo::Span<Type>* types, std::vector<Type>* storage,
                     std::vector<std::vector<int64_t>>* dims);
  Status DefineResults(const Operation& op, bool is_move, stablehlo::Span<Type> result_types);
  Status BuildKernel(const Operation& op, OpCompileFn compile, std::unique_ptr<Kernel>* kernel,
                     std::vector<std::pair<size_t, size_t>>* requests);
  void FinishOp(const Operation& op, std::unique_ptr<Kernel> kernel,
                const std::vector<std::pair<size_t, size_t>>& requests, const uint32_t* uses_before,
                uint32_t slot_begin, Body* body);
  void BindResults(const Operation& op, stablehlo::Span<Type> result_types, const std::vector<uint32_t>& leaves);
  // Compiles the ops of `block` in order.
  Status CompileOps(const stablehlo::Block& block, Body* body, std::vector<uint32_t>* returned);
  // In-place updates: an op's requests (CompileCtx::InPlace) become candidates when the op closes; the
  // candidates whose operand is not used afterwards are applied once the whole function is compiled.
  struct InPlaceCandidate {
    uint32_t result, operand;
    uint32_t uses;  // the operand's use count when the op closed
  };
  void CheckInPlace(const std::vector<std::pair<size_t, size_t>>& requests, const uint32_t* uses_before);
  void ApplyInPlace(const std::vector<uint32_t>& returned);
  // The entry parameter that `slot` is, when this is the entry function and the options donate it; -1 otherwise.
  int32_t DonatableParam(uint32_t slot) const;
  // Host compute: where op runs, whether slot s lies outside host memory, the slot holding s's value in
  // `space` (a copy compiled in before the current op, made once per block; the caller counts its use), and
  // the current op's inputs and the values its regions read from outside, placed for code of `space` (the
  // region values are rebound by name in a scope of their own, which the caller pops; `uses_before` gets
  // the use counts of the copies that replace inputs).
  CompileOptions::HostCompute::Place PlaceOf(const Operation& op) const;
  bool OutsideHost(uint32_t s) const;
  uint32_t FindCopy(uint32_t s) const;  // UINT32_MAX: none in the open blocks
  uint32_t CopyTo(uint32_t s, uint8_t space, Body* body);
  Status PlaceInputs(uint8_t space, Body* body, bool with_regions, uint32_t* uses_before);

  Compiler* c_;
  Function* fn_;
  uint8_t ctx_;                                                 // the space of the code being compiled
  std::unordered_set<uint32_t> host_defined_;                   // slots host code defined
  std::vector<std::unordered_map<uint32_t, uint32_t>> copies_;  // per open block: slot -> its copy
  int depth_ = 0;
  uint32_t tick_ = 0;
  std::vector<OpRange> open_;   // by depth
  std::vector<int> def_depth_;  // by slot
  // The values in scope: names_ gives a name's latest binding; a binding's results are ranges_[first, first +
  // count), each a range of leaves_. Scopes are a stack: closing one drops what it defined and gives each name
  // its binding from before.
  struct Binding {
    std::string_view name;
    uint32_t prev;  // the name's binding before this one (NameTable::kNone: none)
    uint32_t first, count;
  };
  struct LeafRange {
    uint32_t begin, count;
  };
  struct Scope {
    size_t bindings, ranges, leaves;
  };
  NameTable names_;
  std::vector<Binding> bindings_;
  std::vector<LeafRange> ranges_;
  std::vector<uint32_t> leaves_;
  std::vector<Scope> scopes_;
  std::vector<uint32_t> block_args_;         // CompileBlock's scratch
  const stablehlo::Block* block_ = nullptr;  // the block whose ops CompileOps compiles
  std::vector<uint32_t> final_leaves_;       // CompileOp's scratch (results with aliases)
  std::vector<uint32_t> alias_;
  std::vector<size_t> operand_leaf_begin_;                      // CompileOp's scratch
  std::vector<uint32_t> uses_;                                  // by slot: Use() calls so far (every kind of slot)
  std::vector<std::pair<size_t, size_t>>* requests_ = nullptr;  // the op being compiled: (output, input)
  std::vector<InPlaceCandidate> in_place_;
  bool is_entry_ = false;
  std::vector<uint32_t> kept_;               // KeepUntilEnd's slots: live to the end, never overwritten in place
  const ParamRefinement* refine_ = nullptr;  // the function's parameters refined (nullptr: as declared)
  // The refinement of the callee of the op being compiled (a call or composite) from its operands; false when
  // its parameters are used as declared.
  Status CalleeRefinement(const stablehlo::Function& f, ParamRefinement* out, bool* refined);
  // The dims of the results of the call or composite being compiled, from its callee's specialization.
  Status CallResultDims(size_t result, std::vector<int64_t>* dims);
  // The refinement's dims against the declared parameter types of `f` (INVALID_ARGUMENT naming the parameter).
  Status CheckRefinement(const stablehlo::Function& f);
  // Compile-time evaluation (ConstantData). Every op with a kernel is a definer of its result slots; the
  // kernel, operands and created slots are kept for ops that may be evaluated (side-effect free, no regions).
  struct Definer {
    const Operation* op = nullptr;
    const Kernel* kernel = nullptr;
    uint32_t io = 0;  // its operand slots, then its result slots, at definer_slots_[io...]
    uint32_t num_inputs = 0, num_outputs = 0;
    uint32_t slot_begin = 0, slot_end = 0;  // the slots the op created (its results, scratch, constants)
  };
  std::vector<Definer> definers_;
  std::vector<uint32_t> definer_slots_;
  std::unordered_map<uint32_t, std::unique_ptr<uint64_t[]>> folded_;  // slot -> its value, once evaluated
  Status Evaluate(uint32_t slot, const char* what, int depth, const char** data);
  void RecordDefiner(const Operation& op, const Kernel* kernel, uint32_t slot_begin);
  Status RefineResultTypes(const Operation& op, stablehlo::Span<Type>* types, std::vector<Type>* storage,
                           std::vector<std::vector<int64_t>>* dims);

  // Fused element-wise regions (fusion.cc), once the function is compiled and before in-place updates.
  void FuseElementwise();
  void FuseBody(Body* body, const std::unordered_map<const Kernel*, uint32_t>& definer_of);
  bool FusibleOp(uint32_t definer, struct FusionStep* step);
  bool FusibleBroadcast(const Definer& d, const uint32_t* io, struct FusionStep* step);
  // The fused kernel of the run of definers `run` (owned by the function), or nullptr: the run stays unfused.
  const Kernel* BuildFused(const std::vector<uint32_t>& run, const std::vector<struct FusionStep>& steps);

  int64_t batch_ = 0;               // CompileRegionBatched: 0-d values become this many elements
  bool scratch_too_large_ = false;  // AddScratch was asked for a value above kMaxValueBytes
  friend class Compiler;
};

class Compiler {
 public:
  Compiler(const stablehlo::Module& m, const CompileOptions& o, Program::Impl* impl)
      : module_(m), options_(o), impl_(impl) {}

  // The function `name` compiled for code of `space` (host compute compiles a function apart for each side),
  // for the op `caller_op` (null: the entry), its `?` parameters refined by `refine` (nullable). Errors name the
  // caller's location.
  Status GetFunction(std::string_view name, const Function** out, const Operation* caller_op, uint8_t space,
                     const ParamRefinement* refine = nullptr);
  // `f` (a function of the module, or a region made into one: FunctionCompiler::CompileRegionFunction) compiled
  // under `key` in the program's functions, unless one is there already. `where` describes the caller for errors.
  Status CompileUnder(const stablehlo::Function& f, const std::string& key, std::string_view name, uint8_t space,
                      bool is_entry, const ParamRefinement* refine, const std::function<std::string()>& where,
                      const Function** out);

  const stablehlo::Module& module_;
  const CompileOptions& options_;
  Program::Impl* impl_;
  int nesting_ = 0;                        // functions and regions being compiled, one inside the other (NestingGuard)
  const ManualDevices* manual_ = nullptr;  // CompileCtx::manual_devices() of what compiles now
  stablehlo::FunctionIndex functions_{module_};  // callees by name: a lookup per call stays O(1)
  std::string key_;                              // GetFunction's scratch: the key in impl_->functions
};

// The traits of op `name` (OpTrait bits of its registry entry; 0 for an op without one).
inline uint8_t OpTraits(std::string_view name) {
  const OpTable& r = OpRegistry();
  const auto it = r.find(name);
  return it == r.end() ? 0 : it->second.traits;
}

// The ops that end a block: func.return, stablehlo.return, sdy.return (`return` is read as func.return).
inline bool IsReturn(std::string_view name) {
  return name == "func.return" || name == "stablehlo.return" || name == "return" || name == "sdy.return";
}

// Whether compiles with these options fuse element-wise regions (CompileOptions::fuse_elementwise, and the
// environment variable NEURONMEM_INTERP_FUSION=0 turns it off for every compile).
bool FusionEnabled(const CompileOptions& o);

// Plans the planned slots of every memory space by live interval (slot_plan.cc); peaks[k]: space k's peak.
void PlanSlots(SlotTable* slots, size_t* peaks);

}  // namespace neuronmem::interp
