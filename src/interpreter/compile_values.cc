// The compiler's values: slots (one per leaf of a value), their uses, and the names in scope.
#include <algorithm>

#include "interpreter/compiler.h"
#include "interpreter/shape.h"

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
    if (batch_ > 0 && t.dims.empty()) {  // a batched region's 0-d value
      s.dims.push_back(batch_);
      s.count = batch_;
    }
    for (int64_t d : t.dims) {
      if (d < 0) {
        const std::string where =
            op ? FormatLocation(state()->filename, *op) + ": '" + std::string(op->name) + "'" : state()->filename;
        return Unimplemented("%s: dynamic shape %s is not supported", where.c_str(), TypeToString(t).c_str());
      }
      s.count *= d;
    }
    s.dims.assign(t.dims.begin(), t.dims.end());
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
  s.bytes = static_cast<size_t>(s.count) * ElementByteSize(s.type);
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
  s.count = 1;
  for (int64_t d : dims) s.count *= d;
  s.bytes = static_cast<size_t>(s.count) * ElementByteSize(type);
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

}  // namespace neuronmem::interp
