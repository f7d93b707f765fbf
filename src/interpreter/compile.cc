// Compilation of a module into a Program (value slots, kernels, liveness-planned workspace) and running it.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "base/checked.h"
#include "interpreter/host_compute.h"
#include "interpreter/kernel.h"
#include "interpreter/program.h"
#include "interpreter/run_state.h"
#include "interpreter/shape.h"
#include "interpreter/verify.h"
#include "stablehlo/function_index.h"

namespace neuronmem::interp {

using stablehlo::Attribute;
using stablehlo::Operation;
using stablehlo::Type;

namespace {

constexpr size_t kAlign = 64;
inline size_t AlignUp(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

// Number of leaves (slots) a value of type t takes: tuples flatten.
size_t LeafCount(const Type& t) {
  if (t.kind != Type::Kind::kTuple) return 1;
  size_t n = 0;
  for (const Type& e : t.elements) n += LeafCount(e);
  return n;
}

void LeafTypes(const Type& t, std::vector<const Type*>* out) {
  if (t.kind != Type::Kind::kTuple) {
    out->push_back(&t);
    return;
  }
  for (const Type& e : t.elements) LeafTypes(e, out);
}

std::string NameOf(std::string_view s) { return std::string(s); }

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

}  // namespace

std::string FormatLocation(const std::string& file, const Operation& op) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ":%u:%u", op.loc.line, op.loc.column);
  return (file.empty() ? std::string("<input>") : file) + buf;
}

Status Interrupted(const Frame& frame, const Kernel& next) {
  const int code = frame.interrupt->load(std::memory_order_relaxed);
  std::string at;
  if (next.op)
    at = " before " + FormatLocation(frame.state->filename, *next.op) + ": '" + std::string(next.op->name) + "'";
  if (code == NEURONMEM_STATUS_DEADLINE_EXCEEDED)
    return DeadlineExceeded("the execution's deadline passed%s", at.c_str());
  if (code == NEURONMEM_STATUS_CANCELLED) return Cancelled("the execution was cancelled%s", at.c_str());
  return MakeStatus(static_cast<neuronmem_status_code_t>(code), "the execution was stopped" + at);
}

// ---- The compiler --------------------------------------------------------------------------------

class Compiler;

class FunctionCompiler final : public CompileCtx {
 public:
  // `space`: the space of the code (0 device code, HostCompute::space host code).
  FunctionCompiler(Compiler* c, Function* fn, uint8_t space) : c_(c), fn_(fn), ctx_(space) { slots_ = &fn->slots; }

  Status CompileFunction(const stablehlo::Function& f);

  Status CompileRegion(size_t index, const Body** body) override;
  Status CompileRegionBatched(size_t index, int64_t n, const Body** body) override;
  uint32_t AddScratch(ElementType type, const std::vector<int64_t>& dims) override;
  Status GetFunction(std::string_view name, const Function** fn) override;
  const stablehlo::Function* FindFunction(std::string_view name) const override;
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
  struct OpenOp {
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
  std::vector<OpenOp> open_;    // by depth
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
  std::vector<uint32_t> block_args_;    // CompileBlock's scratch
  std::vector<uint32_t> final_leaves_;  // CompileOp's scratch (results with aliases)
  std::vector<uint32_t> alias_;
  std::vector<size_t> operand_leaf_begin_;                      // CompileOp's scratch
  std::vector<uint32_t> uses_;                                  // by slot: Use() calls so far (every kind of slot)
  std::vector<std::pair<size_t, size_t>>* requests_ = nullptr;  // the op being compiled: (output, input)
  std::vector<InPlaceCandidate> in_place_;
  bool is_entry_ = false;
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

  int64_t batch_ = 0;               // CompileRegionBatched: 0-d values become this many elements
  bool scratch_too_large_ = false;  // AddScratch was asked for a value above kMaxValueBytes
  friend class Compiler;
};

class Compiler {
 public:
  Compiler(const stablehlo::Module& m, const CompileOptions& o, Program::Impl* impl)
      : module_(m), options_(o), impl_(impl) {}

  // The function `name` compiled for code of `space` (host compute compiles a function apart for each side).
  Status GetFunction(std::string_view name, const Function** out, const Operation* caller_op, const std::string& where,
                     uint8_t space) {
    std::string key = NameOf(name);
    if (space) key += std::string(1, '\0') + "host";
    auto it = impl_->functions.find(key);
    if (it != impl_->functions.end()) {
      if (it->second->compiling)
        return Unimplemented("%s: recursive call of @%.*s", where.c_str(), static_cast<int>(name.size()), name.data());
      *out = it->second.get();
      return Ok();
    }
    const stablehlo::Function* f = functions_.Find(name);
    if (!f) {
      if (caller_op)
        return InvalidArgument("%s: no function @%.*s in the module", where.c_str(), static_cast<int>(name.size()),
                               name.data());
      return InvalidArgument("%s: no function @%.*s in the module", options_.filename.c_str(),
                             static_cast<int>(name.size()), name.data());
    }
    auto fn = std::make_unique<Function>();
    fn->name = std::string(name);
    fn->compiling = true;
    Function* raw = fn.get();
    impl_->functions.emplace(std::move(key), std::move(fn));
    NestingGuard nested(&nesting_);
    if (nested.too_deep())
      return InvalidArgument("%s: calls and regions nested deeper than %d levels", where.c_str(), kMaxCompileNesting);
    FunctionCompiler fc(this, raw, space);
    fc.is_entry_ = caller_op == nullptr && name == options_.entry;
    NEURONMEM_RETURN_IF_ERROR(fc.CompileFunction(*f));
    raw->compiling = false;
    *out = raw;
    return Ok();
  }

  const stablehlo::Module& module_;
  const CompileOptions& options_;
  Program::Impl* impl_;
  int nesting_ = 0;  // functions and regions being compiled, one inside the other (NestingGuard)
  stablehlo::FunctionIndex functions_{module_};
};

static Status OpStatus(const CompileCtx& cx, neuronmem_status_code_t code, const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  const auto& fc = static_cast<const FunctionCompiler&>(cx);
  return MakeStatus(code,
                    FormatLocation(fc.state()->filename, cx.op()) + ": '" + std::string(cx.op().name) + "': " + buf);
}

Status CompileCtx::Unsupported(const char* fmt, ...) const {
  va_list ap;
  va_start(ap, fmt);
  Status s = OpStatus(*this, NEURONMEM_STATUS_UNIMPLEMENTED, fmt, ap);
  va_end(ap);
  return s;
}

Status CompileCtx::Invalid(const char* fmt, ...) const {
  va_list ap;
  va_start(ap, fmt);
  Status s = OpStatus(*this, NEURONMEM_STATUS_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return s;
}

const Attribute* CompileCtx::Attr(std::string_view name) const { return stablehlo::Find(op_->attributes, name); }

// The most elements an integer-list attribute may have: IntListOf is false for a longer dense tensor.
constexpr int64_t kMaxIntList = int64_t{1} << 20;

bool CompileCtx::IntListOf(const Attribute& a, std::vector<int64_t>* out) {
  out->clear();
  if (a.kind == Attribute::Kind::kArray) {
    for (const Attribute& e : a.array) {
      if (e.kind != Attribute::Kind::kInt) return false;
      out->push_back(e.i);
    }
    return true;
  }
  if (a.kind == Attribute::Kind::kDense) {
    const ElementType t = a.type.element;
    if (!IsInteger(t)) return false;
    const size_t bytes = ElementByteSize(t);
    int64_t n = 1;
    for (int64_t d : a.type.dims) n *= d;  // at most 2^34: the parser bounds dense literals
    // A splat is one value in the text: expanding a hostile shape would take the memory of the machine.
    if (n > kMaxIntList) return false;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* p = a.dense.data() + (a.splat ? 0 : i * bytes);
      int64_t v = 0;
      switch (bytes) {
        case 1: v = IsSignedInt(t) ? static_cast<int8_t>(*p) : *p; break;
        case 2: {
          int16_t x;
          std::memcpy(&x, p, 2);
          v = IsSignedInt(t) ? x : static_cast<uint16_t>(x);
          break;
        }
        case 4: {
          int32_t x;
          std::memcpy(&x, p, 4);
          v = IsSignedInt(t) ? x : static_cast<uint32_t>(x);
          break;
        }
        default: std::memcpy(&v, p, 8); break;
      }
      out->push_back(v);
    }
    return true;
  }
  return false;
}

bool CompileCtx::IntList(std::string_view name, std::vector<int64_t>* out) const {
  const Attribute* a = Attr(name);
  return a && IntListOf(*a, out);
}

bool CompileCtx::Int(std::string_view name, int64_t* out) const {
  const Attribute* a = Attr(name);
  if (!a || a->kind != Attribute::Kind::kInt) return false;
  *out = a->i;
  return true;
}

bool CompileCtx::Bool(std::string_view name, bool* out) const {
  const Attribute* a = Attr(name);
  if (!a) return false;
  if (a->kind == Attribute::Kind::kBool) {
    *out = a->b;
    return true;
  }
  if (a->kind == Attribute::Kind::kUnit) {
    *out = true;
    return true;
  }
  return false;
}

bool CompileCtx::EnumWord(std::string_view name, std::string* out) const {
  const Attribute* a = Attr(name);
  if (!a) return false;
  // The parser decodes "#stablehlo<comparison_direction LT>", "#stablehlo.transpose<TRANSPOSE>" and a bare
  // `LT` into kEnum "LT"; some producers write a string.
  if ((a->kind != Attribute::Kind::kEnum && a->kind != Attribute::Kind::kString) || a->str.empty()) return false;
  *out = std::string(a->str);
  return true;
}

const ProgramState* FunctionCompiler::state() const { return &c_->impl_->state; }
const CustomCallRegistry* FunctionCompiler::custom_calls() const { return c_->impl_->state.custom_calls; }

Status FunctionCompiler::NewSlot(const Type& t, Slot::Kind kind, const Operation* op, uint32_t* out) {
  Slot s;
  s.kind = kind;
  if (t.kind == Type::Kind::kToken) {  // an empty pred[0]
    s.type = ElementType::kPred;
    s.dims = {0};
    s.count = 0;
  } else if (t.kind == Type::Kind::kTensor || t.kind == Type::Kind::kScalar) {
    s.type = t.element;
    s.quant = t.quant;
    s.count = 1;
    if (batch_ > 0 && t.dims.empty()) s.dims.push_back(batch_);  // a batched region's 0-d value
    for (int64_t d : t.dims) {
      if (d < 0) {
        const std::string where =
            op ? FormatLocation(state()->filename, *op) + ": '" + std::string(op->name) + "'" : state()->filename;
        return Unimplemented("%s: dynamic shape %s is not supported", where.c_str(), TypeToString(t).c_str());
      }
    }
    if (!(batch_ > 0 && t.dims.empty())) s.dims.assign(t.dims.begin(), t.dims.end());
    if (!IsSupportedType(s.type)) {
      const std::string where =
          op ? FormatLocation(state()->filename, *op) + ": '" + std::string(op->name) + "'" : state()->filename;
      return Unimplemented("%s: element type %s is not supported", where.c_str(), TypeToString(t).c_str());
    }
  } else {
    const std::string where =
        op ? FormatLocation(state()->filename, *op) + ": '" + std::string(op->name) + "'" : state()->filename;
    return Unimplemented("%s: type %s is not supported", where.c_str(), TypeToString(t).c_str());
  }
  if (!ValueSize(s.dims.data(), s.dims.size(), s.type, &s.count, &s.bytes)) {
    const std::string where =
        op ? FormatLocation(state()->filename, *op) + ": '" + std::string(op->name) + "'" : state()->filename;
    return Unimplemented("%s: a value of type %s has more than %" PRId64 " bytes (or its element count overflows)",
                         where.c_str(), TypeToString(t).c_str(), kMaxValueBytes);
  }
  s.live_begin = s.live_end = depth_ < static_cast<int>(open_.size()) ? open_[depth_].start : tick_;
  *out = static_cast<uint32_t>(fn_->slots.size());
  fn_->slots.push_back(std::move(s));
  def_depth_.push_back(depth_);
  return Ok();
}

Status FunctionCompiler::DefineLeaves(const Type& t, Slot::Kind kind, const Operation* op,
                                      std::vector<uint32_t>* leaves) {
  if (t.kind != Type::Kind::kTuple) {
    uint32_t s;
    NEURONMEM_RETURN_IF_ERROR(NewSlot(t, kind, op, &s));
    leaves->push_back(s);
    return Ok();
  }
  std::vector<const Type*> types;
  LeafTypes(t, &types);
  for (const Type* lt : types) {
    uint32_t s;
    NEURONMEM_RETURN_IF_ERROR(NewSlot(*lt, kind, op, &s));
    leaves->push_back(s);
  }
  return Ok();
}

uint32_t FunctionCompiler::AddScratch(ElementType type, const std::vector<int64_t>& dims) {
  Slot s;
  s.kind = Slot::Kind::kPlanned;
  s.type = type;
  s.dims = dims;
  if (!ValueSize(dims.data(), dims.size(), type, &s.count, &s.bytes)) scratch_too_large_ = true;
  s.space = ctx_;
  s.live_begin = s.live_end = open_[depth_].start;
  const uint32_t id = static_cast<uint32_t>(fn_->slots.size());
  fn_->slots.push_back(std::move(s));
  def_depth_.push_back(depth_);
  open_[depth_].pending.push_back(id);
  return id;
}

uint32_t FunctionCompiler::AddConstant(const Slot& like, const void* data) {
  Slot s = like;
  s.kind = Slot::Kind::kConst;
  auto storage = std::make_unique<uint64_t[]>((s.bytes + 7) / 8 + 1);
  if (s.bytes) std::memcpy(storage.get(), data, s.bytes);
  s.const_data = reinterpret_cast<const char*>(storage.get());
  c_->impl_->constant_bytes += s.bytes;
  c_->impl_->constants.push_back(std::move(storage));
  const uint32_t id = static_cast<uint32_t>(fn_->slots.size());
  fn_->slots.push_back(std::move(s));
  def_depth_.push_back(depth_);
  return id;
}

void FunctionCompiler::Use(uint32_t slot) {
  if (uses_.size() <= slot) uses_.resize(fn_->slots.size(), 0);
  ++uses_[slot];
  if (fn_->slots[slot].kind != Slot::Kind::kPlanned) return;
  const int d = def_depth_[slot];
  if (d < static_cast<int>(open_.size())) open_[d].pending.push_back(slot);
}

Status FunctionCompiler::Lookup(const stablehlo::ValueRef& ref, const uint32_t** leaves, size_t* count) {
  const uint32_t b = names_.Get(ref.name);
  if (b == NameTable::kNone || ref.index >= bindings_[b].count) {
    return InvalidArgument("%s:%u:%u: '%.*s': use of undefined value %%%.*s#%u", state()->filename.c_str(),
                           ref.loc.line, ref.loc.column, static_cast<int>(op_->name.size()), op_->name.data(),
                           static_cast<int>(ref.name.size()), ref.name.data(), ref.index);
  }
  const LeafRange& r = ranges_[bindings_[b].first + ref.index];
  *leaves = leaves_.data() + r.begin;
  *count = r.count;
  return Ok();
}

void FunctionCompiler::Define(std::string_view name) {
  const uint32_t prev = names_.Set(name, static_cast<uint32_t>(bindings_.size()));
  bindings_.push_back(Binding{name, prev, static_cast<uint32_t>(ranges_.size()), 0});
}

void FunctionCompiler::AddResult(const uint32_t* leaves, size_t count) {
  ranges_.push_back(LeafRange{static_cast<uint32_t>(leaves_.size()), static_cast<uint32_t>(count)});
  leaves_.insert(leaves_.end(), leaves, leaves + count);
  ++bindings_.back().count;
}

void FunctionCompiler::CloseScope() {
  const Scope sc = scopes_.back();
  scopes_.pop_back();
  for (size_t i = bindings_.size(); i-- > sc.bindings;) names_.Set(bindings_[i].name, bindings_[i].prev);
  bindings_.resize(sc.bindings);
  ranges_.resize(sc.ranges);
  leaves_.resize(sc.leaves);
}

Status FunctionCompiler::CompileOp(const Operation& op, Body* body, std::vector<uint32_t>* returned) {
  op_ = &op;
  const std::string_view name = op.name;
  // The parser kept only the name, operands and results of an op it could not read (an unknown dialect's
  // custom form): nothing of what it does is known, even when an op of that name is registered.
  if (op.skipped) return Unsupported("op of an unknown dialect that the parser skipped (its form could not be read)");
  // Open the op: slots used by it (or by ops in its regions) live until it closes.
  open_.resize(depth_ + 1);
  open_[depth_].start = tick_;
  open_[depth_].pending.clear();
  const uint32_t start = tick_++;
  auto close = [&] {
    const uint32_t end = tick_++;
    for (uint32_t s : open_[depth_].pending) {
      Slot& sl = fn_->slots[s];
      sl.live_end = std::max(sl.live_end, end);
    }
    open_[depth_].pending.clear();
    return end;
  };
  // Operands (their use counts before this op: an in-place request needs the op to read its operand once).
  inputs_.clear();
  std::vector<size_t>& operand_leaf_begin = operand_leaf_begin_;  // read before any region is compiled
  operand_leaf_begin.clear();
  for (const auto& ref : op.operands) {
    const uint32_t* leaves;
    size_t n;
    NEURONMEM_RETURN_IF_ERROR(Lookup(ref, &leaves, &n));
    operand_leaf_begin.push_back(inputs_.size());
    inputs_.insert(inputs_.end(), leaves, leaves + n);
  }
  uses_.resize(fn_->slots.size(), 0);
  // (On the stack: this function recurses through the regions the op compiles.)
  uint32_t uses_before_local[8];
  std::vector<uint32_t> uses_before_heap;
  if (inputs_.size() > 8) uses_before_heap.resize(inputs_.size());
  uint32_t* const uses_before = inputs_.size() > 8 ? uses_before_heap.data() : uses_before_local;
  for (size_t i = 0; i < inputs_.size(); ++i) uses_before[i] = uses_[inputs_[i]];
  for (uint32_t s : inputs_) Use(s);
  const CompileOptions::HostCompute::Place place = PlaceOf(op);
  if (name == "func.return" || name == "stablehlo.return" || name == "return" || name == "sdy.return") {
    // A return is a read by the code around it, but for the entry's: its caller places the results, from a
    // copy already made in the output's space where there is one.
    if (!(is_entry_ && depth_ == 0)) {
      NEURONMEM_RETURN_IF_ERROR(PlaceInputs(ctx_, body, false, nullptr));
    } else {
      const std::vector<uint8_t>& want = c_->options_.host_compute.result_spaces;
      for (size_t i = 0; i < inputs_.size() && i < want.size(); ++i) {
        const uint32_t copy = FindCopy(inputs_[i]);
        if (copy != UINT32_MAX && fn_->slots[copy].space == want[i]) {
          Use(copy);
          inputs_[i] = copy;
        }
      }
    }
    *returned = inputs_;
    close();
    return Ok();
  }
  // Tuples: compile-time only.
  if (name == "stablehlo.tuple") {
    Define(op.result_name);
    AddResult(inputs_.data(), inputs_.size());
    close();
    return Ok();
  }
  if (name == "stablehlo.get_tuple_element") {
    int64_t index = -1;
    Int("index", &index);
    if (index < 0 || op.operands.size() != 1 || op.operand_types.size() != 1 ||
        op.operand_types[0].kind != Type::Kind::kTuple || index < 0 ||
        static_cast<size_t>(index) >= op.operand_types[0].elements.size())
      return Invalid("expected a tuple operand and an 'index' attribute in range");
    size_t begin = 0;
    for (int64_t i = 0; i < index; ++i) begin += LeafCount(op.operand_types[0].elements[i]);
    const size_t n = LeafCount(op.operand_types[0].elements[index]);
    Define(op.result_name);
    AddResult(inputs_.data() + begin, n);
    close();
    return Ok();
  }
  if (name == "stablehlo.optimization_barrier") {
    const auto& names = op.result_names;  // empty: result_name names them all
    if (op.num_results && names.empty()) Define(op.result_name);
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const size_t b = operand_leaf_begin[i];
      const size_t e = i + 1 < op.operands.size() ? operand_leaf_begin[i + 1] : inputs_.size();
      if (!names.empty() && i < names.size()) Define(names[i]);
      if (names.empty() || i < names.size()) AddResult(inputs_.data() + b, e - b);
    }
    close();
    return Ok();
  }
  const auto& reg = OpRegistry();
  auto it = reg.find(name);
  if (it == reg.end()) {
    if (name.substr(0, 5) == "chlo." || name.substr(0, 10) == "stablehlo." || name.substr(0, 6) == "check.")
      return Unsupported("op is not supported by the interpreter");
    return Unsupported("op of an unknown dialect");
  }
  // Results.
  stablehlo::Span<Type> result_types = op.result_types;
  if (result_types.size() != op.num_results)
    return Invalid("%u results but %zu result types", op.num_results, result_types.size());
  std::vector<Type> refined_types;
  std::vector<std::vector<int64_t>> refined_dims;
  NEURONMEM_RETURN_IF_ERROR(RefineResultTypes(op, &result_types, &refined_types, &refined_dims));
  // Host compute: the op runs in the code around it, or on the host (kHost) with everything inside it; its
  // inputs are placed for that side first. A placement move (kMove) moves its operand itself.
  using Place = CompileOptions::HostCompute::Place;
  const uint8_t outer_ctx = ctx_;
  const bool rebinds = place != Place::kMove && c_->options_.host_compute.place && !op.regions.empty();
  if (place != Place::kMove) {
    const uint8_t side = place == Place::kHost ? c_->options_.host_compute.space : ctx_;
    if (rebinds) OpenScope();
    NEURONMEM_RETURN_IF_ERROR(PlaceInputs(side, body, rebinds, uses_before));
    ctx_ = side;
  }
  const uint32_t slot_begin = static_cast<uint32_t>(fn_->slots.size());  // after the copies: not this op's
  uint8_t space = c_->options_.result_space ? c_->options_.result_space(op) : 0;
  if (ctx_ && place != Place::kMove) space = ctx_;
  if (space >= kMaxSpaces) return Invalid("memory space %u is out of range", space);
  outputs_.clear();  // every leaf of every result, in order
  for (uint32_t i = 0; i < op.num_results; ++i)
    NEURONMEM_RETURN_IF_ERROR(DefineLeaves(result_types[i], Slot::Kind::kPlanned, &op, &outputs_));
  for (uint32_t leaf : outputs_) {
    fn_->slots[leaf].space = space;
    if (ctx_ && space == ctx_) host_defined_.insert(leaf);
  }
  alias_.assign(outputs_.size(), UINT32_MAX);
  std::unique_ptr<Kernel> kernel;
  std::vector<std::pair<size_t, size_t>> requests;
  {
    // An op with regions compiles them (which recurses into CompileOp): keep this op's lists. (A call compiles
    // its callee with a compiler of its own.)
    std::vector<uint32_t> saved_in, saved_out;
    if (!op.regions.empty()) {
      saved_in = inputs_;
      saved_out = outputs_;
    }
    std::vector<std::pair<size_t, size_t>>* const outer_requests = requests_;  // an op whose region this is
    requests_ = &requests;
    Status st = VerifyOp(*this);
    if (!st) st = it->second(*this, &kernel);
    requests_ = outer_requests;
    NEURONMEM_RETURN_IF_ERROR(std::move(st));
    if (scratch_too_large_)
      return Unsupported("its scratch values have more than %" PRId64 " bytes (or their sizes overflow)",
                         kMaxValueBytes);
    op_ = &op;
    if (!op.regions.empty()) {
      inputs_ = std::move(saved_in);
      outputs_ = std::move(saved_out);
    }
  }
  ctx_ = outer_ctx;
  if (rebinds) CloseScope();  // the region values rebound for this op
  // Close this op: every slot used inside it lives to its end.
  const uint32_t end = close();
  (void)start;
  for (uint32_t o : outputs_) {  // results are written while the op runs
    Slot& sl = fn_->slots[o];
    sl.live_end = std::max(sl.live_end, end);
  }
  // Aliased outputs: the op's values are those slots (its own result slots stay what its kernel writes).
  std::vector<uint32_t>& leaves = final_leaves_;  // no recursion from here on
  leaves.assign(outputs_.begin(), outputs_.end());
  for (size_t k = 0; k < leaves.size(); ++k) {
    if (alias_[k] == UINT32_MAX) continue;
    const uint32_t leaf = leaves[k] = alias_[k];
    Use(leaf);
    if (fn_->slots[leaf].kind == Slot::Kind::kPlanned) {
      Slot& sl = fn_->slots[leaf];
      sl.live_end = std::max(sl.live_end, end);
    }
  }
  if (!requests.empty()) CheckInPlace(requests, uses_before);
  if (kernel) {
    kernel->op = &op;
    RecordDefiner(op, kernel.get(), slot_begin);
    body->kernels.push_back(kernel.get());
    fn_->kernels.push_back(std::move(kernel));
  }
  if (op.num_results == 0) return Ok();
  if (op.num_results == 1) {
    Define(op.result_name);
    AddResult(leaves.data(), leaves.size());
    return Ok();
  }
  const auto& names = op.result_names;  // empty: result_name names them all (%0#i)
  if (names.empty()) Define(op.result_name);
  size_t begin = 0;
  for (uint32_t i = 0; i < op.num_results; ++i) {
    const size_t n = LeafCount(result_types[i]);
    if (!names.empty()) Define(names[i]);
    AddResult(leaves.data() + begin, n);
    begin += n;
  }
  return Ok();
}

int32_t FunctionCompiler::DonatableParam(uint32_t slot) const {
  if (!is_entry_) return -1;  // a callee's parameters are its caller's values
  const auto& args = fn_->body.arg_slots;
  const auto it = std::find(args.begin(), args.end(), slot);
  if (it == args.end()) return -1;
  const size_t p = static_cast<size_t>(it - args.begin());
  const auto& donations = c_->options_.donations;
  return p < donations.size() && donations[p] >= 0 ? static_cast<int32_t>(p) : -1;
}

// The rules of docs/executor.md, "In-place updates", except "not used afterwards" (ApplyInPlace).
void FunctionCompiler::CheckInPlace(const std::vector<std::pair<size_t, size_t>>& requests,
                                    const uint32_t* uses_before) {
  for (const auto& [o, i] : requests) {
    if (o >= outputs_.size() || i >= inputs_.size() || alias_[o] != UINT32_MAX) continue;
    const uint32_t operand = inputs_[i], result = outputs_[o];
    // Read once by this op: not another of its operands, not inside its regions.
    if (uses_[operand] - uses_before[i] != 1) continue;
    // Defined in the block this op runs in: a value from outside a loop body or a branch is read again by
    // the next iteration or by the code after it; a region's arguments are its owner's values.
    if (def_depth_[operand] != depth_) continue;
    const Slot& src = fn_->slots[operand];
    const Slot& dst = fn_->slots[result];
    if (dst.kind != Slot::Kind::kPlanned || src.bytes != dst.bytes || src.bytes == 0) continue;
    if (src.kind == Slot::Kind::kExternal) {
      // Only the entry function's donatable parameters, in the memory space the op's result lives in.
      const int32_t p = depth_ == 0 ? DonatableParam(operand) : -1;
      if (p < 0) continue;
      const auto& spaces = c_->options_.param_spaces;
      const uint8_t space = static_cast<size_t>(p) < spaces.size() ? spaces[static_cast<size_t>(p)] : 0;
      if (space != dst.space) continue;
    } else if (src.kind != Slot::Kind::kPlanned || src.space != dst.space) {
      continue;  // a constant (the program's, read by every run), or another memory space
    }
    in_place_.push_back(InPlaceCandidate{result, operand, uses_[operand]});
  }
}

// Grants the candidates whose operand nobody reads after the op: the result becomes an alias of the
// operand's root (the planned slot or the parameter at the start of a chain of updates), whose live range
// grows to cover it. Runs before the slots are planned.
void FunctionCompiler::ApplyInPlace(const std::vector<uint32_t>& returned) {
  if (in_place_.empty()) return;
  std::vector<uint32_t> root(fn_->slots.size());
  for (uint32_t i = 0; i < root.size(); ++i) root[i] = i;
  for (const InPlaceCandidate& c : in_place_) {
    if (uses_[c.operand] != c.uses) continue;  // read afterwards (or returned)
    const uint32_t r = root[c.operand];
    Slot& rs = fn_->slots[r];
    Slot& res = fn_->slots[c.result];
    if (rs.kind == Slot::Kind::kExternal) {
      // A donated parameter's memory is its donation's result; a run that keeps the argument works there
      // instead, so that result must be as large.
      const int32_t p = DonatableParam(r);
      if (p < 0) continue;
      const size_t k = static_cast<size_t>(c_->options_.donations[static_cast<size_t>(p)]);
      if (k >= returned.size() || fn_->slots[returned[k]].bytes != rs.bytes) continue;
      const uint32_t param = static_cast<uint32_t>(p);
      auto& params = fn_->overwritten_params;
      if (std::find(params.begin(), params.end(), param) == params.end()) params.push_back(param);
    } else {
      rs.live_end = std::max(rs.live_end, res.live_end);
    }
    res.kind = Slot::Kind::kAlias;
    res.alias_of = r;
    root[c.result] = r;
    fn_->alias_slots.push_back(c.result);
  }
  std::sort(fn_->alias_slots.begin(), fn_->alias_slots.end());
}

// ---- Compile-time evaluation and result types with dynamic dims ---------------------------------------

namespace {

// Ops evaluated at compile time when every operand is known (the vocabulary of shape computations): no
// side effects, no regions, their kernels read only their operands and write only their own slots.
bool Evaluable(std::string_view name) {
  static const std::unordered_map<std::string_view, bool> ops = [] {
    std::unordered_map<std::string_view, bool> m;
    for (const char* n : {"abs",
                          "negate",
                          "sign",
                          "not",
                          "add",
                          "subtract",
                          "multiply",
                          "divide",
                          "remainder",
                          "maximum",
                          "minimum",
                          "and",
                          "or",
                          "xor",
                          "shift_left",
                          "shift_right_logical",
                          "shift_right_arithmetic",
                          "compare",
                          "select",
                          "clamp",
                          "convert",
                          "reshape",
                          "broadcast_in_dim",
                          "concatenate",
                          "slice",
                          "transpose",
                          "reverse",
                          "pad",
                          "iota",
                          "dynamic_slice",
                          "dynamic_update_slice",
                          "dynamic_reshape",
                          "dynamic_broadcast_in_dim",
                          "dynamic_iota",
                          "dynamic_pad",
                          "real_dynamic_slice"})
      m.emplace(n, true);
    return m;
  }();
  return name.substr(0, 10) == "stablehlo." && ops.count(name.substr(10)) > 0;
}

// Element-wise ops: a result has the shape of the operands (of the operand of the result's rank for select and
// clamp, whose predicate or bounds may be scalars). bitcast_convert is not one (it may change the last dim).
bool Elementwise(std::string_view name) {
  static const std::unordered_map<std::string_view, OpCompileFn> ops = [] {
    std::unordered_map<std::string_view, OpCompileFn> m;
    RegisterElementwiseOps(&m);
#ifdef NEURONMEM_INTERP_CHLO_SPECIAL
    RegisterChloSpecialOps(&m);
#endif
    m.erase("stablehlo.bitcast_convert");
    return m;
  }();
  return ops.count(name) > 0;
}

bool HasDynamicDims(const Type& t) {
  return (t.kind == Type::Kind::kTensor || t.kind == Type::Kind::kScalar) &&
         std::any_of(t.dims.begin(), t.dims.end(), [](int64_t d) { return d < 0; });
}

}  // namespace

// Records every op with a kernel (cheaply: whether it can be evaluated is decided when a value is asked for,
// which few programs do).
void FunctionCompiler::RecordDefiner(const Operation& op, const Kernel* kernel, uint32_t slot_begin) {
  Definer d;
  d.op = &op;
  d.slot_begin = slot_begin;
  d.slot_end = static_cast<uint32_t>(fn_->slots.size());
  d.kernel = kernel;
  d.io = static_cast<uint32_t>(definer_slots_.size());
  d.num_inputs = static_cast<uint32_t>(inputs_.size());
  d.num_outputs = static_cast<uint32_t>(outputs_.size());
  definer_slots_.insert(definer_slots_.end(), inputs_.begin(), inputs_.end());
  definer_slots_.insert(definer_slots_.end(), outputs_.begin(), outputs_.end());
  const uint32_t index = static_cast<uint32_t>(definers_.size());
  for (size_t k = 0; k < outputs_.size(); ++k)
    if (alias_[k] == UINT32_MAX) fn_->slots[outputs_[k]].definer = index;
  definers_.push_back(std::move(d));
}

Status FunctionCompiler::ConstantData(uint32_t slot, const char* what, const char** data) {
  return Evaluate(slot, what, 0, data);
}

Status FunctionCompiler::Evaluate(uint32_t slot, const char* what, int depth, const char** data) {
  const Slot& s = fn_->slots[slot];
  if (s.kind == Slot::Kind::kConst && s.const_data) {
    *data = s.const_data;
    return Ok();
  }
  if (auto f = folded_.find(slot); f != folded_.end()) {
    *data = reinterpret_cast<const char*>(f->second.get());
    return Ok();
  }
  if (s.kind == Slot::Kind::kExternal)
    return Unsupported("%s depends on the value of an argument (shapes computed from arguments are not supported)",
                       what);
  if (s.definer == UINT32_MAX) return Unsupported("%s is not known at compile time", what);
  const Definer& d = definers_[s.definer];
  const std::string by = "'" + std::string(d.op->name) + "' at " + FormatLocation(state()->filename, *d.op);
  size_t bytes = 0;  // what evaluating it allocates
  for (uint32_t i = d.slot_begin; i < d.slot_end; ++i) bytes += fn_->slots[i].bytes;
  if (!d.op->regions.empty() || bytes > (16u << 20) || !Evaluable(d.op->name))
    return Unsupported(
        "%s depends on the result of %s, which is not evaluated at compile time (dynamic shapes are "
        "not supported)",
        what, by.c_str());
  if (depth > 256) return Unsupported("%s is computed by more than 256 ops in a row", what);
  const stablehlo::Span<uint32_t> inputs(definer_slots_.data() + d.io, d.num_inputs);
  const stablehlo::Span<uint32_t> outputs(definer_slots_.data() + d.io + d.num_inputs, d.num_outputs);
  std::vector<const char*> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) NEURONMEM_RETURN_IF_ERROR(Evaluate(inputs[i], what, depth + 1, &in[i]));
  // A frame where the op's operands are their values and its own slots have memory of their own.
  std::vector<char*> ptrs(fn_->slots.size(), nullptr);
  for (size_t i = 0; i < fn_->slots.size(); ++i)
    if (fn_->slots[i].kind == Slot::Kind::kConst) ptrs[i] = const_cast<char*>(fn_->slots[i].const_data);
  for (size_t i = 0; i < inputs.size(); ++i) ptrs[inputs[i]] = const_cast<char*>(in[i]);
  std::unordered_map<uint32_t, std::unique_ptr<uint64_t[]>> own;
  for (uint32_t i = d.slot_begin; i < d.slot_end; ++i) {
    if (fn_->slots[i].kind != Slot::Kind::kPlanned) continue;
    auto block = std::make_unique<uint64_t[]>(fn_->slots[i].bytes / 8 + 1);
    ptrs[i] = reinterpret_cast<char*>(block.get());
    own.emplace(i, std::move(block));
  }
  Frame frame{};
  frame.slots = ptrs.data();
  frame.state = state();
  if (Status st = d.kernel->Run(frame))
    return Unsupported("%s: evaluating %s at compile time failed: %s", what, by.c_str(), st->message.c_str());
  for (uint32_t o : outputs) folded_[o] = std::move(own[o]);
  *data = reinterpret_cast<const char*>(folded_[slot].get());
  return Ok();
}

// Result types with `?` dims: the dynamic-shape ops' results from their shape operands (known at compile
// time, ConstantData), element-wise ops' from their operand. Others keep the type (NewSlot refuses it).
Status FunctionCompiler::RefineResultTypes(const Operation& op, stablehlo::Span<Type>* types,
                                           std::vector<Type>* storage, std::vector<std::vector<int64_t>>* dims) {
  if (std::none_of(types->begin(), types->end(), HasDynamicDims)) return Ok();
  storage->assign(types->begin(), types->end());
  dims->assign(types->size(), {});
  for (size_t i = 0; i < types->size(); ++i) {
    const Type& t = (*types)[i];
    if (!HasDynamicDims(t)) continue;
    std::vector<int64_t>& d = (*dims)[i];
    if (Elementwise(op.name)) {
      for (uint32_t in : inputs_)
        if (fn_->slots[in].dims.size() == t.dims.size()) d = fn_->slots[in].dims;
    } else {
      NEURONMEM_RETURN_IF_ERROR(InferDynamicResultDims(*this, i, t, &d));
    }
    if (d.empty() && !t.dims.empty())
      return Unsupported("result type %s: the interpreter cannot infer its dynamic dimensions at compile time",
                         TypeToString(t).c_str());
    bool agree = d.size() == t.dims.size();
    for (size_t k = 0; agree && k < d.size(); ++k) agree = t.dims[k] < 0 || t.dims[k] == d[k];
    if (!agree) {
      std::string got;
      for (int64_t x : d) got += (got.empty() ? "" : "x") + std::to_string(x);
      return Invalid("result type %s does not match the inferred shape [%s]", TypeToString(t).c_str(), got.c_str());
    }
    (*storage)[i].dims = stablehlo::Span<int64_t>(d.data(), d.size());
  }
  *types = stablehlo::Span<Type>(storage->data(), storage->size());
  return Ok();
}

Status FunctionCompiler::CompileOps(const stablehlo::Block& block, Body* body, std::vector<uint32_t>* returned) {
  Status st;
  for (size_t i = 0; i < block.ops.size() && !st; ++i) st = CompileOp(block.ops[i], body, returned);
  return st;
}

Status FunctionCompiler::CompileBlock(const stablehlo::Block& block, Body* body, std::vector<uint32_t>* returned,
                                      stablehlo::Span<stablehlo::Argument> extra_args) {
  OpenScope();
  copies_.emplace_back();
  const std::vector<uint8_t>& param_spaces = c_->options_.param_spaces;
  for (const auto& a : block.args.empty() ? extra_args : block.args) {
    std::vector<uint32_t>& leaves = block_args_;
    leaves.clear();
    NEURONMEM_RETURN_IF_ERROR(DefineLeaves(a.type, Slot::Kind::kExternal, nullptr, &leaves));
    // Where the argument lies: the entry's parameters where the caller said, else the code's own space.
    for (size_t i = 0; i < leaves.size(); ++i) {
      const size_t p = body->arg_slots.size() + i;
      fn_->slots[leaves[i]].space = is_entry_ && depth_ == 0 ? (p < param_spaces.size() ? param_spaces[p] : 0) : ctx_;
    }
    body->arg_slots.insert(body->arg_slots.end(), leaves.begin(), leaves.end());
    Define(a.name);
    AddResult(leaves.data(), leaves.size());
  }
  NEURONMEM_RETURN_IF_ERROR(CompileOps(block, body, returned));
  CloseScope();
  copies_.pop_back();
  return Ok();
}

CompileOptions::HostCompute::Place FunctionCompiler::PlaceOf(const Operation& op) const {
  const auto& place = c_->options_.host_compute.place;
  return place ? place(op) : CompileOptions::HostCompute::Place::kAround;
}

bool FunctionCompiler::OutsideHost(uint32_t s) const {
  const Slot& sl = fn_->slots[s];
  return sl.kind != Slot::Kind::kConst && !((c_->options_.host_compute.host_spaces >> sl.space) & 1u);
}

uint32_t FunctionCompiler::FindCopy(uint32_t s) const {
  for (auto it = copies_.rbegin(); it != copies_.rend(); ++it) {
    auto found = it->find(s);
    if (found != it->end()) return found->second;
  }
  return UINT32_MAX;
}

uint32_t FunctionCompiler::CopyTo(uint32_t s, uint8_t space, Body* body) {
  if (const uint32_t found = FindCopy(s); found != UINT32_MAX) return found;
  Slot copy = fn_->slots[s];
  copy.kind = Slot::Kind::kPlanned;
  copy.space = space;
  copy.offset = 0;
  copy.const_data = nullptr;
  copy.live_begin = copy.live_end = depth_ < static_cast<int>(open_.size()) ? open_[depth_].start : tick_;
  const uint32_t id = static_cast<uint32_t>(fn_->slots.size());
  std::unique_ptr<Kernel> k = MakeHostComputeMove(s, id, copy);
  fn_->slots.push_back(std::move(copy));
  def_depth_.push_back(depth_);
  uses_.resize(fn_->slots.size(), 0);
  if (space) host_defined_.insert(id);
  k->op = op_;
  Definer d;  // a copy is known at compile time when its source is
  d.op = op_;
  d.kernel = k.get();
  d.io = static_cast<uint32_t>(definer_slots_.size());
  d.num_inputs = d.num_outputs = 1;
  definer_slots_.push_back(s);
  definer_slots_.push_back(id);
  d.slot_begin = id;
  d.slot_end = id + 1;
  fn_->slots[id].definer = static_cast<uint32_t>(definers_.size());
  definers_.push_back(std::move(d));
  body->kernels.push_back(k.get());
  fn_->kernels.push_back(std::move(k));
  copies_.back()[s] = id;
  ++c_->impl_->num_host_compute_moves;
  return id;
}

Status FunctionCompiler::PlaceInputs(uint8_t space, Body* body, bool with_regions, uint32_t* uses_before) {
  if (!c_->options_.host_compute.place) return Ok();
  // Host code reads what lies outside host memory through a copy; device code what host code defined.
  auto misplaced = [&](uint32_t s) { return space ? OutsideHost(s) : host_defined_.count(s) != 0; };
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!misplaced(inputs_[i])) continue;
    inputs_[i] = CopyTo(inputs_[i], space, body);
    if (uses_before) uses_before[i] = uses_[inputs_[i]];  // this op's read of the copy comes next
    Use(inputs_[i]);
  }
  if (!with_regions) return Ok();
  std::vector<uint32_t> placed;   // the value's leaves, result after result
  std::vector<LeafRange> ranges;  // its results, into `placed`
  for (const stablehlo::ValueRef* v : FreeValuesOfRegions(*op_)) {
    const uint32_t b = names_.Get(v->name);
    if (b == NameTable::kNone || v->index >= bindings_[b].count) continue;
    const Binding binding = bindings_[b];
    placed.clear();
    ranges.clear();
    for (uint32_t r = 0; r < binding.count; ++r) {
      const LeafRange& lr = ranges_[binding.first + r];
      ranges.push_back(LeafRange{static_cast<uint32_t>(placed.size()), lr.count});
      placed.insert(placed.end(), leaves_.begin() + lr.begin, leaves_.begin() + lr.begin + lr.count);
    }
    bool moved = false;
    const LeafRange& moving = ranges[v->index];
    for (uint32_t k = moving.begin; k < moving.begin + moving.count; ++k) {
      uint32_t& s = placed[k];
      if (!misplaced(s)) continue;
      Use(s);  // the move reads it
      s = CopyTo(s, space, body);
      moved = true;
    }
    if (!moved) continue;
    Define(v->name);
    for (const LeafRange& r : ranges) AddResult(placed.data() + r.begin, r.count);
  }
  return Ok();
}

Status FunctionCompiler::CompileRegion(size_t index, const Body** out) {
  const Operation& op = *op_;
  if (index >= op.regions.size()) return Invalid("expected at least %zu regions", index + 1);
  const auto& region = op.regions[index];
  if (region.blocks.size() != 1) return Unsupported("regions with %zu blocks are not supported", region.blocks.size());
  NestingGuard nested(&c_->nesting_);
  if (nested.too_deep()) return Invalid("calls and regions nested deeper than %d levels", kMaxCompileNesting);
  auto body = std::make_unique<Body>();
  ++depth_;
  open_.resize(depth_ + 1);
  std::vector<uint32_t> returned;
  const std::vector<uint32_t> saved_in = inputs_, saved_out = outputs_;
  const std::vector<uint32_t> saved_alias = alias_;
  Status s = CompileBlock(region.blocks[0], body.get(), &returned);
  --depth_;
  op_ = &op;
  inputs_ = saved_in;
  outputs_ = saved_out;
  alias_ = saved_alias;
  NEURONMEM_RETURN_IF_ERROR(std::move(s));
  body->result_slots = returned;
  *out = body.get();
  fn_->bodies.push_back(std::move(body));
  return Ok();
}

// Element-wise ops whose kernels compute each element of an n-element value as the op computes a 0-d one.
static bool BatchableOp(std::string_view name) {
  static const std::string_view kOps[] = {
      "stablehlo.compare", "stablehlo.select", "stablehlo.and",      "stablehlo.or",       "stablehlo.xor",
      "stablehlo.not",     "stablehlo.add",    "stablehlo.subtract", "stablehlo.multiply", "stablehlo.maximum",
      "stablehlo.minimum", "stablehlo.negate", "stablehlo.abs",      "stablehlo.return",   "func.return"};
  return std::find(std::begin(kOps), std::end(kOps), name) != std::end(kOps);
}

Status FunctionCompiler::CompileRegionBatched(size_t index, int64_t n, const Body** out) {
  const Operation& op = *op_;
  if (index >= op.regions.size() || op.regions[index].blocks.size() != 1 || n < 1)
    return Unsupported("the region cannot be batched");
  const stablehlo::Block& block = op.regions[index].blocks[0];
  const auto scalar = [](const Type& t) {
    return (t.kind == Type::Kind::kTensor || t.kind == Type::Kind::kScalar) && t.dims.empty() && !t.quant;
  };
  for (const auto& a : block.args)
    if (!scalar(a.type)) return Unsupported("the region cannot be batched");
  for (const Operation& o : block.ops) {
    if (!BatchableOp(o.name) || !o.regions.empty() || o.skipped) return Unsupported("the region cannot be batched");
    for (const Type& t : o.result_types)
      if (!scalar(t)) return Unsupported("the region cannot be batched");
  }
  const int64_t outer = batch_;
  batch_ = n;
  Status s = CompileRegion(index, out);
  batch_ = outer;
  return s;
}

Status FunctionCompiler::GetFunction(std::string_view name, const Function** fn) {
  const Operation* op = op_;
  const std::vector<uint32_t> saved_in = inputs_, saved_out = outputs_;
  Status s = c_->GetFunction(name, fn, op_,
                             FormatLocation(state()->filename, *op_) + ": '" + std::string(op_->name) + "'", ctx_);
  op_ = op;
  inputs_ = saved_in;
  outputs_ = saved_out;
  return s;
}

const stablehlo::Function* FunctionCompiler::FindFunction(std::string_view name) const {
  return c_->module_.FindFunction(name);
}

// Greedy first-fit placement by live interval of the planned slots of one space (`keys`: (live_begin, slot id)
// of each); returns the peak.
static size_t PlanSpace(SlotTable* slots, std::vector<uint64_t>* space_keys) {
  std::vector<uint64_t>& keys = *space_keys;
  std::sort(keys.begin(), keys.end());
  struct Active {
    size_t offset, size;
    uint32_t end;
  };
  std::vector<Active> active;     // sorted by offset
  uint32_t min_end = UINT32_MAX;  // the earliest end in `active`
  size_t peak = 0;
  for (uint64_t key : keys) {
    Slot& s = (*slots)[static_cast<uint32_t>(key)];
    if (min_end < s.live_begin) {
      active.erase(std::remove_if(active.begin(), active.end(), [&](const Active& a) { return a.end < s.live_begin; }),
                   active.end());
      min_end = UINT32_MAX;
      for (const Active& a : active) min_end = std::min(min_end, a.end);
    }
    const size_t size = AlignUp(std::max<size_t>(s.bytes, 1));
    size_t at = 0;
    size_t pos = 0;
    for (; pos < active.size(); ++pos) {
      if (active[pos].offset >= at + size) break;
      at = std::max(at, active[pos].offset + active[pos].size);
    }
    s.offset = at;
    active.insert(active.begin() + pos, Active{at, size, s.live_end});
    min_end = std::min(min_end, s.live_end);
    peak = std::max(peak, at + size);
  }
  return peak;
}

// Plans every space; peaks[k]: space k's peak.
static void PlanSlots(SlotTable* slots, size_t* peaks) {
  // Per space, by (live_begin, slot id): one integer each.
  std::vector<uint64_t> keys[kMaxSpaces];
  for (uint32_t i = 0; i < slots->size(); ++i) {
    const Slot& s = (*slots)[i];
    if (s.kind == Slot::Kind::kPlanned) keys[s.space].push_back(uint64_t{s.live_begin} << 32 | i);
  }
  for (size_t k = 0; k < kMaxSpaces; ++k) peaks[k] = keys[k].empty() ? 0 : PlanSpace(slots, &keys[k]);
}

Status FunctionCompiler::CompileFunction(const stablehlo::Function& f) {
  if (f.body.blocks.size() != 1)
    return Unimplemented("%s:%u:%u: function @%.*s: only single-block functions are supported",
                         state()->filename.c_str(), f.loc.line, f.loc.column, static_cast<int>(f.name.size()),
                         f.name.data());
  open_.resize(1);
  open_[0].start = 0;
  names_.Reserve(f.body.blocks[0].ops.size() + f.args.size());  // one name per op, most of them
  std::vector<uint32_t> returned;
  NEURONMEM_RETURN_IF_ERROR(CompileBlock(f.body.blocks[0], &fn_->body, &returned, f.args));
  fn_->body.result_slots = returned;
  for (const auto& a : f.args) {
    std::vector<const Type*> types;
    LeafTypes(a.type, &types);
    for (const Type* t : types) fn_->param_types.push_back(*t);
  }
  for (const Type& t : f.result_types) {
    std::vector<const Type*> types;
    LeafTypes(t, &types);
    for (const Type* lt : types) fn_->result_types.push_back(*lt);
  }
  if (returned.size() != fn_->result_types.size())
    return InvalidArgument("%s:%u:%u: function @%.*s returns %zu values but declares %zu results",
                           state()->filename.c_str(), f.loc.line, f.loc.column, static_cast<int>(f.name.size()),
                           f.name.data(), returned.size(), fn_->result_types.size());
  for (size_t i = 0; i < returned.size(); ++i) {
    if (!SlotHasType(fn_->slots[returned[i]], fn_->result_types[i]))
      return InvalidArgument("%s:%u:%u: function @%.*s returns %s as result %zu, which it declares %s",
                             state()->filename.c_str(), f.loc.line, f.loc.column, static_cast<int>(f.name.size()),
                             f.name.data(), SlotTypeText(fn_->slots[returned[i]]).c_str(), i,
                             TypeToString(fn_->result_types[i]).c_str());
  }
  // Function results live to the end.
  for (uint32_t s : returned) {
    Slot& sl = fn_->slots[s];
    sl.live_end = std::max(sl.live_end, tick_);
  }
  uses_.resize(fn_->slots.size(), 0);
  ApplyInPlace(returned);
  size_t peaks[kMaxSpaces];
  PlanSlots(&fn_->slots, peaks);
  const size_t data = peaks[0];
  fn_->slot_array_bytes = AlignUp(fn_->slots.size() * sizeof(char*));
  fn_->frame_bytes = fn_->slot_array_bytes + data;
  std::sort(fn_->callees.begin(), fn_->callees.end());
  fn_->callees.erase(std::unique(fn_->callees.begin(), fn_->callees.end()), fn_->callees.end());
  size_t callee = 0;
  for (const Function* c : fn_->callees) callee = std::max(callee, c->stack_bytes);
  fn_->stack_bytes = fn_->frame_bytes + callee;
  for (uint8_t k = 1; k < kMaxSpaces; ++k) {
    fn_->space_frame_bytes[k] = peaks[k];
    size_t deepest = 0;
    for (const Function* c : fn_->callees) deepest = std::max(deepest, c->space_stack_bytes[k]);
    fn_->space_stack_bytes[k] = fn_->space_frame_bytes[k] + deepest;
  }
  return Ok();
}

// ---- Frames and running ---------------------------------------------------------------------------

void SetupFrame(const Function& fn, char* mem, char* const* spaces, Frame* frame) {
  frame->slots = reinterpret_cast<char**>(mem);
  char* data[kMaxSpaces] = {mem + fn.slot_array_bytes};
  for (size_t k = 1; k < kMaxSpaces; ++k) {
    data[k] = spaces[k];
    frame->space_stack[k] = spaces[k] ? spaces[k] + fn.space_frame_bytes[k] : nullptr;
  }
  frame->space_stack[0] = nullptr;
  for (size_t i = 0; i < fn.slots.size(); ++i) {
    const Slot& s = fn.slots[i];
    switch (s.kind) {
      case Slot::Kind::kPlanned: frame->slots[i] = data[s.space] + s.offset; break;
      case Slot::Kind::kConst: frame->slots[i] = const_cast<char*>(s.const_data); break;
      case Slot::Kind::kExternal:
      case Slot::Kind::kAlias: frame->slots[i] = nullptr; break;  // set by the caller / ResolveAliases
    }
  }
  frame->stack = mem + fn.frame_bytes;
}

Status CallFunction(const Function& fn, Frame& caller, const uint32_t* arg_slots, const uint32_t* result_slots,
                    const bool* crosses) {
  Frame frame;
  SetupFrame(fn, caller.stack, caller.space_stack, &frame);
  frame.state = caller.state;
  frame.context = caller.context;
  frame.run = caller.run;
  frame.interrupt = caller.interrupt;
  for (size_t i = 0; i < fn.body.arg_slots.size(); ++i) frame.slots[fn.body.arg_slots[i]] = caller.slots[arg_slots[i]];
  ResolveAliases(fn, &frame);
  NEURONMEM_RETURN_IF_ERROR(RunBody(fn.body, frame));
  for (size_t i = 0; i < fn.body.result_slots.size(); ++i) {
    const uint32_t src = fn.body.result_slots[i];
    CopyValue(caller, caller.slots[result_slots[i]], frame.slots[src], fn.slots[src].bytes, crosses && crosses[i]);
  }
  return Ok();
}

void Function::AddCallee(const Function* f) {
  // Kept unique by CompileFunction (a search here made n distinct calls cost n^2: issue 23, class 7).
  if (callees.empty() || callees.back() != f) callees.push_back(f);
}

Status Compile(const stablehlo::Module& module, const CompileOptions& options, std::unique_ptr<Program>* out) {
  auto impl = std::make_unique<Program::Impl>();
  impl->state.filename = options.filename;
  impl->state.custom_calls = options.custom_calls ? options.custom_calls : &CustomCallRegistry::BuiltIn();
  impl->state.reference_test_ops = options.reference_test_ops;
  impl->state.space_copy = options.space_copy;
  const CompileOptions::HostCompute& host = options.host_compute;
  if (host.place && (host.space == 0 || host.space >= kMaxSpaces || !((host.host_spaces >> host.space) & 1u)))
    return InvalidArgument("host compute needs a host memory space in 1..%zu", kMaxSpaces - 1);
  impl->state.host_compute_move = host.move;
  Compiler c(module, options, impl.get());
  const Function* entry = nullptr;
  NEURONMEM_RETURN_IF_ERROR(c.GetFunction(options.entry, &entry, nullptr, options.filename,
                                          host.place && host.entry_on_host ? host.space : 0));
  impl->entry = entry;
  for (const Type& t : entry->param_types) {
    ValueSpec v;
    v.type = t.kind == Type::Kind::kToken ? ElementType::kPred : t.element;
    if (t.kind == Type::Kind::kToken)
      v.dims = {0};  // an empty pred[0]
    else
      v.dims.assign(t.dims.begin(), t.dims.end());
    v.bytes = v.NumBytes();
    impl->params.push_back(std::move(v));
  }
  for (uint32_t s : entry->body.result_slots) {
    const Slot& sl = entry->slots[s];
    ValueSpec v;
    v.type = sl.type;
    v.dims = sl.dims;
    v.bytes = sl.bytes;
    v.space = sl.kind == Slot::Kind::kPlanned || sl.kind == Slot::Kind::kAlias ? sl.space : 0;
    for (size_t p = 0; p < entry->body.arg_slots.size(); ++p)
      if (entry->body.arg_slots[p] == s) v.param = static_cast<int32_t>(p);
    // Results whose memory may be a result's (Run): a parameter, or a value updated in place in one.
    const bool in_param = sl.kind == Slot::Kind::kAlias && entry->slots[sl.alias_of].kind == Slot::Kind::kExternal;
    if ((v.param >= 0 || in_param) && v.bytes)
      impl->param_results.push_back(static_cast<uint32_t>(impl->results.size()));
    impl->results.push_back(std::move(v));
  }
  for (const auto& kv : impl->functions) {
    impl->num_kernels += kv.second->kernels.size();
    impl->num_in_place += kv.second->alias_slots.size();
  }
  impl->num_kernels -= impl->num_host_compute_moves;  // ops only
  impl->fallback_result.assign(impl->params.size(), -1);
  for (uint32_t p : entry->overwritten_params) impl->fallback_result[p] = options.donations[p];
  out->reset(new Program(std::move(impl)));
  return Ok();
}

size_t ValueSpec::NumBytes() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return static_cast<size_t>(n) * ElementByteSize(type);
}

Status FrameMemory::Reserve(const Function& fn, Workspace* workspace, char* const* given) {
  if (given) {
    mem = given[0];
    for (size_t k = 1; k < kMaxSpaces; ++k) spaces[k] = given[k];
  } else {
    Workspace* ws = workspace ? workspace : &local;
    mem = ws->Reserve(fn.stack_bytes);
    // Without the executor's memories, the other spaces are ordinary host memory.
    for (size_t k = 1; k < kMaxSpaces && mem; ++k) {
      if (!fn.space_stack_bytes[k]) continue;
      if (!space_ws) space_ws.reset(new Workspace[kMaxSpaces]);
      spaces[k] = space_ws[k].Reserve(fn.space_stack_bytes[k]);
      if (!spaces[k]) mem = nullptr;
    }
  }
  if (!mem && fn.stack_bytes)
    return ResourceExhausted("no memory for the %zu-byte workspace of @%s", fn.stack_bytes, fn.name.c_str());
  return Ok();
}

Status RunStandalone(const Function& fn, const ProgramState* state, RunState* run, void* context, char* const* args,
                     char* const* results) {
  FrameMemory fm;
  NEURONMEM_RETURN_IF_ERROR(fm.Reserve(fn, nullptr, nullptr));
  Frame frame;
  SetupFrame(fn, fm.mem, fm.spaces, &frame);
  frame.state = state;
  frame.context = context;
  frame.run = run;
  frame.interrupt = run ? run->interrupt : nullptr;
  for (size_t i = 0; i < fn.body.arg_slots.size(); ++i) frame.slots[fn.body.arg_slots[i]] = args[i];
  ResolveAliases(fn, &frame);
  NEURONMEM_RETURN_IF_ERROR(RunBody(fn.body, frame));
  for (size_t i = 0; i < fn.body.result_slots.size(); ++i) {
    const uint32_t src = fn.body.result_slots[i];
    if (fn.slots[src].bytes) std::memmove(results[i], frame.slots[src], fn.slots[src].bytes);
  }
  return Ok();
}

Program::Program(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;
const std::vector<ValueSpec>& Program::parameters() const { return impl_->params; }
const std::vector<ValueSpec>& Program::results() const { return impl_->results; }
size_t Program::workspace_bytes() const { return impl_->entry->stack_bytes; }
size_t Program::workspace_bytes(size_t space) const {
  if (space == 0) return impl_->entry->stack_bytes;
  return space < kMaxSpaces ? impl_->entry->space_stack_bytes[space] : 0;
}
size_t Program::constant_bytes() const { return impl_->constant_bytes; }
size_t Program::num_kernels() const { return impl_->num_kernels; }
size_t Program::num_in_place() const { return impl_->num_in_place; }
size_t Program::num_host_compute_moves() const { return impl_->num_host_compute_moves; }
bool Program::overwrites_parameter(size_t i) const {
  return i < impl_->fallback_result.size() && impl_->fallback_result[i] >= 0;
}

Status Program::Run(const TensorView* args, size_t num_args, ResultAllocator* allocator,
                    std::vector<TensorView>* results, Workspace* workspace) const {
  RunOptions options;
  options.workspace = workspace;
  return Run(args, num_args, allocator, results, options);
}

Status Program::Run(const TensorView* args, size_t num_args, ResultAllocator* allocator,
                    std::vector<TensorView>* results, const RunOptions& options) const {
  const Function& fn = *impl_->entry;
  if (num_args != impl_->params.size())
    return InvalidArgument("@%s takes %zu arguments, %zu given", fn.name.c_str(), impl_->params.size(), num_args);
  for (size_t i = 0; i < num_args; ++i) {
    const ValueSpec& p = impl_->params[i];
    bool ok = args[i].type == p.type && args[i].rank == p.dims.size() && (args[i].data || p.bytes == 0);
    for (size_t d = 0; ok && d < p.dims.size(); ++d) ok = args[i].dims[d] == p.dims[d];
    if (!ok)
      return InvalidArgument("argument %zu of @%s does not match its parameter (%s with %zu dims expected)", i,
                             fn.name.c_str(), std::string(ElementTypeName(p.type)).c_str(), p.dims.size());
  }
  if (options.process) {
    const ProcessContext& pc = *options.process;
    if (!pc.grid || pc.replica_id >= pc.grid->num_replicas() || pc.partition_id >= pc.grid->num_partitions())
      return InvalidArgument("@%s: process (%u, %u) is not in the run's process grid", fn.name.c_str(), pc.replica_id,
                             pc.partition_id);
  }
  FrameMemory fm;
  NEURONMEM_RETURN_IF_ERROR(fm.Reserve(fn, options.workspace, options.spaces));
  RunState run;
  if (options.process) run.process = *options.process;
  run.interrupt = options.interrupt;
  Frame frame;
  SetupFrame(fn, fm.mem, fm.spaces, &frame);
  frame.state = &impl_->state;
  frame.context = options.context;
  frame.run = &run;
  frame.interrupt = options.interrupt;
  for (size_t i = 0; i < num_args; ++i) frame.slots[fn.body.arg_slots[i]] = static_cast<char*>(args[i].data);
  // The results' memory first: a parameter the program overwrites but this run does not donate is copied into
  // the memory of its donation's result, where the updates then happen (the argument stays as it was).
  results->clear();
  const size_t n = fn.body.result_slots.size();
  std::vector<char*> dsts(n);
  for (size_t i = 0; i < n; ++i) {
    const ValueSpec& spec = impl_->results[i];
    dsts[i] = static_cast<char*>(allocator->Allocate(i, spec.bytes));
    if (!dsts[i] && spec.bytes) return ResourceExhausted("no memory for result %zu (%zu bytes)", i, spec.bytes);
  }
  for (uint32_t p : fn.overwritten_params) {
    if (options.donated && options.donated[p]) continue;
    char* dst = dsts[static_cast<size_t>(impl_->fallback_result[p])];
    if (dst != args[p].data) std::memcpy(dst, args[p].data, impl_->params[p].bytes);
    frame.slots[fn.body.arg_slots[p]] = dst;
  }
  ResolveAliases(fn, &frame);
  Status status = RunBody(fn.body, frame);
  // A run given no grid ends its own (data it sent itself and never received fails it).
  if (run.solo) status = run.solo->Finish(0, std::move(status));
  NEURONMEM_RETURN_IF_ERROR(std::move(status));
  // A result's memory may be an argument's (a donated one) that another result returns: copy every such
  // source aside before any result is written, so the order of the copies cannot matter. Only a result that
  // returns an entry parameter (or a value updated in place in one) can read memory a result is written to
  // (the others read the workspace or constants, which no allocator hands out), so only those (listed at
  // compile) are checked.
  std::vector<std::unique_ptr<char[]>> staged;
  std::vector<std::pair<uint32_t, const char*>> staged_src;
  for (uint32_t i : impl_->param_results) {
    const char* src = frame.slots[fn.body.result_slots[i]];
    const size_t bytes = impl_->results[i].bytes;
    for (size_t k = 0; k < n && src != dsts[i]; ++k) {
      if (k == i || !impl_->results[k].bytes) continue;
      if (src < dsts[k] + impl_->results[k].bytes && dsts[k] < src + bytes) {
        staged.emplace_back(new char[bytes]);
        std::memcpy(staged.back().get(), src, bytes);
        staged_src.emplace_back(i, staged.back().get());
        break;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const ValueSpec& spec = impl_->results[i];
    void* dst = dsts[i];
    const char* src = frame.slots[fn.body.result_slots[i]];
    for (const auto& [index, copy] : staged_src)
      if (index == i) src = copy;
    if (spec.bytes && dst != src) std::memcpy(dst, src, spec.bytes);
    TensorView v;
    v.data = dst;
    v.type = spec.type;
    v.dims = spec.dims.data();
    v.rank = spec.dims.size();
    results->push_back(v);
  }
  return Ok();
}

Workspace::~Workspace() { std::free(data_); }

char* Workspace::Reserve(size_t bytes) {
  if (bytes <= size_ && data_) return data_;
  std::free(data_);
  data_ = static_cast<char*>(std::aligned_alloc(kAlign, AlignUp(std::max<size_t>(bytes, kAlign))));
  size_ = data_ ? bytes : 0;
  return data_;
}

void* HostResultAllocator::Allocate(size_t, size_t bytes) {
  void* p = std::aligned_alloc(kAlign, AlignUp(std::max<size_t>(bytes, 1)));
  if (p) blocks_.emplace_back(p);
  return p;
}

void HostResultAllocator::Free::operator()(void* p) const { std::free(p); }

}  // namespace neuronmem::interp
