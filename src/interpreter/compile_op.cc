// Compiling one op (FunctionCompiler::CompileOp, in its steps) and the values it reads and defines: slots (one
// per leaf of a value), their uses, the names in scope. (One file: the value helpers inline into CompileOp.)
#include <algorithm>
#include <cinttypes>

#include "base/checked.h"
#include "interpreter/compiler.h"
#include "interpreter/shape.h"
#include "interpreter/verify.h"

namespace neuronmem::interp {

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

bool FunctionCompiler::KeepUntilEnd(uint32_t slot) {
  if (!is_entry_ || depth_ != 0 || fn_->slots[slot].kind != Slot::Kind::kPlanned) return false;
  kept_.push_back(slot);
  return true;
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

// FunctionCompiler::CompileOp in its steps:
//   OpenOp / CloseOp   the op's live range: slots used by it (or inside its regions) live until it closes
//   ReadOperands       the operands' slots, each read counted as a use
//   CompileReturn, CompileTuple, CompileGetTupleElement, CompileOptimizationBarrier: ops of the compiler
//                      itself (no kernel: they rebind or hand over slots)
//   ResultTypes        the result types, dynamic dims refined (compile_time.cc)
//   PlaceInputs        host compute: the inputs placed for the side the op runs on (host_placement.cc)
//   DefineResults      the result slots, in their memory space
//   BuildKernel        the registry entry's compile function (which may compile the op's regions)
//   FinishOp           closing the op: live ranges, aliased results, in-place requests, the kernel kept
//   BindResults        the result names bound to their slots
Status FunctionCompiler::CompileOp(const Operation& op, Body* body, std::vector<uint32_t>* returned) {
  op_ = &op;
  const std::string_view name = op.name;
  // The parser kept only the name, operands and results of an op it could not read (an unknown dialect's
  // custom form): nothing of what it does is known, even when an op of that name is registered.
  if (op.skipped) return Unsupported("op of an unknown dialect that the parser skipped (its form could not be read)");
  OpenOp();
  NEURONMEM_RETURN_IF_ERROR(ReadOperands(op));
  // The operands' use counts before this op (an in-place request needs the op to read its operand once); on
  // the stack: this function recurses through the regions the op compiles.
  uint32_t uses_before_local[8];
  std::vector<uint32_t> uses_before_heap;
  if (inputs_.size() > 8) uses_before_heap.resize(inputs_.size());
  uint32_t* const uses_before = inputs_.size() > 8 ? uses_before_heap.data() : uses_before_local;
  for (size_t i = 0; i < inputs_.size(); ++i) uses_before[i] = uses_[inputs_[i]];
  for (uint32_t s : inputs_) Use(s);
  if (IsReturn(name)) return CompileReturn(body, returned);
  if (name == "stablehlo.tuple") return CompileTuple(op);
  if (name == "stablehlo.get_tuple_element") return CompileGetTupleElement(op);
  if (name == "stablehlo.optimization_barrier") return CompileOptimizationBarrier(op);
  const OpTable& reg = OpRegistry();
  const auto it = reg.find(name);
  if (it == reg.end()) {
    if (name.substr(0, 5) == "chlo." || name.substr(0, 10) == "stablehlo." || name.substr(0, 6) == "check.")
      return Unsupported("op is not supported by the interpreter");
    return Unsupported("op of an unknown dialect");
  }
  stablehlo::Span<Type> result_types = op.result_types;
  std::vector<Type> refined_types;
  std::vector<std::vector<int64_t>> refined_dims;
  NEURONMEM_RETURN_IF_ERROR(ResultTypes(op, &result_types, &refined_types, &refined_dims));
  // Host compute: the op runs in the code around it, or on the host (kHost) with everything inside it; its
  // inputs are placed for that side first. A placement move (kMove) moves its operand itself.
  using Place = CompileOptions::HostCompute::Place;
  const Place place = PlaceOf(op);
  const uint8_t outer_ctx = ctx_;
  const bool rebinds = place != Place::kMove && c_->options_.host_compute.place && !op.regions.empty();
  if (place != Place::kMove) {
    const uint8_t side = place == Place::kHost ? c_->options_.host_compute.space : ctx_;
    if (rebinds) OpenScope();
    NEURONMEM_RETURN_IF_ERROR(PlaceInputs(side, body, rebinds, uses_before));
    ctx_ = side;
  }
  const uint32_t slot_begin = static_cast<uint32_t>(fn_->slots.size());  // after the copies: not this op's
  NEURONMEM_RETURN_IF_ERROR(DefineResults(op, place == Place::kMove, result_types));
  std::unique_ptr<Kernel> kernel;
  std::vector<std::pair<size_t, size_t>> requests;
  NEURONMEM_RETURN_IF_ERROR(BuildKernel(op, it->second.compile, &kernel, &requests));
  ctx_ = outer_ctx;
  if (rebinds) CloseScope();  // the region values rebound for this op
  FinishOp(op, std::move(kernel), requests, uses_before, slot_begin, body);
  BindResults(op, result_types, final_leaves_);
  return Ok();
}

void FunctionCompiler::OpenOp() {
  open_.resize(depth_ + 1);
  open_[depth_].start = tick_;
  open_[depth_].pending.clear();
  ++tick_;
}

uint32_t FunctionCompiler::CloseOp() {
  const uint32_t end = tick_++;
  for (uint32_t s : open_[depth_].pending) {
    Slot& sl = fn_->slots[s];
    sl.live_end = std::max(sl.live_end, end);
  }
  open_[depth_].pending.clear();
  return end;
}

Status FunctionCompiler::ReadOperands(const Operation& op) {
  inputs_.clear();
  operand_leaf_begin_.clear();  // read before any region is compiled
  for (const auto& ref : op.operands) {
    const uint32_t* leaves;
    size_t n;
    NEURONMEM_RETURN_IF_ERROR(Lookup(ref, &leaves, &n));
    operand_leaf_begin_.push_back(inputs_.size());
    inputs_.insert(inputs_.end(), leaves, leaves + n);
  }
  uses_.resize(fn_->slots.size(), 0);
  return Ok();
}

// A return is a read by the code around it, but for the entry's: its caller places the results, from a copy
// already made in the output's space where there is one.
Status FunctionCompiler::CompileReturn(Body* body, std::vector<uint32_t>* returned) {
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
  CloseOp();
  return Ok();
}

// Tuples are compile-time only: a tuple value is its elements' leaves.
Status FunctionCompiler::CompileTuple(const Operation& op) {
  Define(op.result_name);
  AddResult(inputs_.data(), inputs_.size());
  CloseOp();
  return Ok();
}

Status FunctionCompiler::CompileGetTupleElement(const Operation& op) {
  int64_t index = -1;
  Int("index", &index);
  if (index < 0 || op.operands.size() != 1 || op.operand_types.size() != 1 ||
      op.operand_types[0].kind != Type::Kind::kTuple ||
      static_cast<size_t>(index) >= op.operand_types[0].elements.size())
    return Invalid("expected a tuple operand and an 'index' attribute in range");
  size_t begin = 0;
  for (int64_t i = 0; i < index; ++i) begin += LeafCount(op.operand_types[0].elements[i]);
  const size_t n = LeafCount(op.operand_types[0].elements[index]);
  Define(op.result_name);
  AddResult(inputs_.data() + begin, n);
  CloseOp();
  return Ok();
}

// optimization_barrier's results are its operands.
Status FunctionCompiler::CompileOptimizationBarrier(const Operation& op) {
  const auto& names = op.result_names;  // empty: result_name names them all
  if (op.num_results && names.empty()) Define(op.result_name);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const size_t b = operand_leaf_begin_[i];
    const size_t e = i + 1 < op.operands.size() ? operand_leaf_begin_[i + 1] : inputs_.size();
    if (!names.empty() && i < names.size()) Define(names[i]);
    if (names.empty() || i < names.size()) AddResult(inputs_.data() + b, e - b);
  }
  CloseOp();
  return Ok();
}

Status FunctionCompiler::ResultTypes(const Operation& op, stablehlo::Span<Type>* types, std::vector<Type>* storage,
                                     std::vector<std::vector<int64_t>>* dims) {
  if (types->size() != op.num_results) return Invalid("%u results but %zu result types", op.num_results, types->size());
  return RefineResultTypes(op, types, storage, dims);
}

// The result slots (outputs_, every leaf of every result in order): in the space of the code compiled, or for
// code of space 0 the space the options give the op (a placement move's).
Status FunctionCompiler::DefineResults(const Operation& op, bool is_move, stablehlo::Span<Type> result_types) {
  uint8_t space = c_->options_.result_space ? c_->options_.result_space(op) : 0;
  if (ctx_ && !is_move) space = ctx_;
  if (space >= kMaxSpaces) return Invalid("memory space %u is out of range", space);
  outputs_.clear();
  for (uint32_t i = 0; i < op.num_results; ++i)
    NEURONMEM_RETURN_IF_ERROR(DefineLeaves(result_types[i], Slot::Kind::kPlanned, &op, &outputs_));
  for (uint32_t leaf : outputs_) {
    fn_->slots[leaf].space = space;
    if (ctx_ && space == ctx_) host_defined_.insert(leaf);
  }
  alias_.assign(outputs_.size(), UINT32_MAX);
  return Ok();
}

// An op with regions compiles them (which recurses into CompileOp): this op's lists are kept around the call.
// (A call compiles its callee with a compiler of its own.)
Status FunctionCompiler::BuildKernel(const Operation& op, OpCompileFn compile, std::unique_ptr<Kernel>* kernel,
                                     std::vector<std::pair<size_t, size_t>>* requests) {
  std::vector<uint32_t> saved_in, saved_out;
  if (!op.regions.empty()) {
    saved_in = inputs_;
    saved_out = outputs_;
  }
  std::vector<std::pair<size_t, size_t>>* const outer_requests = requests_;  // an op whose region this is
  requests_ = requests;
  Status st = VerifyOp(*this);  // arity and types against the spec before the op's own compile function
  if (!st) st = compile(*this, kernel);
  requests_ = outer_requests;
  NEURONMEM_RETURN_IF_ERROR(std::move(st));
  if (scratch_too_large_)
    return Unsupported("its scratch values have more than %" PRId64 " bytes (or their sizes overflow)", kMaxValueBytes);
  op_ = &op;
  if (!op.regions.empty()) {
    inputs_ = std::move(saved_in);
    outputs_ = std::move(saved_out);
  }
  return Ok();
}

// Closes the op (every slot used inside it lives to its end, its results too: they are written while it
// runs); its values are final_leaves_: its result slots, or the slots its kernel aliased them to.
void FunctionCompiler::FinishOp(const Operation& op, std::unique_ptr<Kernel> kernel,
                                const std::vector<std::pair<size_t, size_t>>& requests, const uint32_t* uses_before,
                                uint32_t slot_begin, Body* body) {
  const uint32_t end = CloseOp();
  for (uint32_t o : outputs_) {
    Slot& sl = fn_->slots[o];
    sl.live_end = std::max(sl.live_end, end);
  }
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
}

void FunctionCompiler::BindResults(const Operation& op, stablehlo::Span<Type> result_types,
                                   const std::vector<uint32_t>& leaves) {
  if (op.num_results == 0) return;
  if (op.num_results == 1) {
    Define(op.result_name);
    AddResult(leaves.data(), leaves.size());
    return;
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
}

}  // namespace neuronmem::interp
