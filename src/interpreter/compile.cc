// Compiling a module into a Program: interp::Compile, the functions it calls, their blocks and regions.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "interpreter/compiler.h"
#include "interpreter/manual_devices.h"
#include "interpreter/run_state.h"
#include "interpreter/verify.h"

namespace neuronmem::interp {

Status Compiler::GetFunction(std::string_view name, const Function** out, const Operation* caller_op, uint8_t space,
                             const ParamRefinement* refine) {
  // Only an error builds the caller's description: a call to a compiled function allocates nothing but the key.
  const std::function<std::string()> where = [&] {
    return caller_op ? FormatLocation(options_.filename, *caller_op) + ": '" + std::string(caller_op->name) + "'"
                     : options_.filename;
  };
  key_.assign(name.data(), name.size());
  if (space) key_.append(1, '\0').append("host");
  if (refine && refine->empty()) refine = nullptr;
  if (refine) key_.append(1, '\0').append(refine->Key());
  if (manual_) key_.append(1, '\0').append(manual_->key());
  auto it = impl_->functions.find(key_);
  if (it != impl_->functions.end()) {
    if (it->second->compiling)
      return Unimplemented("%s: recursive call of @%.*s", where().c_str(), static_cast<int>(name.size()), name.data());
    *out = it->second.get();
    return Ok();
  }
  const stablehlo::Function* f = functions_.Find(name);
  if (!f) {
    return InvalidArgument("%s: no function @%.*s in the module", where().c_str(), static_cast<int>(name.size()),
                           name.data());
  }
  const std::string key = key_;
  return CompileUnder(*f, key, name, space, caller_op == nullptr && name == options_.entry, refine, where, out);
}

Status Compiler::CompileUnder(const stablehlo::Function& f, const std::string& key, std::string_view name,
                              uint8_t space, bool is_entry, const ParamRefinement* refine,
                              const std::function<std::string()>& where, const Function** out) {
  auto it = impl_->functions.find(key);
  if (it != impl_->functions.end()) {
    if (it->second->compiling)
      return Unimplemented("%s: recursive call of @%.*s", where().c_str(), static_cast<int>(name.size()), name.data());
    *out = it->second.get();
    return Ok();
  }
  auto fn = std::make_unique<Function>();
  fn->name = std::string(name);
  fn->compiling = true;
  Function* raw = fn.get();
  impl_->functions.emplace(key, std::move(fn));
  NestingGuard nested(&nesting_);
  if (nested.too_deep())
    return InvalidArgument("%s: calls and regions nested deeper than %d levels", where().c_str(), kMaxCompileNesting);
  FunctionCompiler fc(this, raw, space);
  fc.is_entry_ = is_entry;
  fc.refine_ = refine;
  NEURONMEM_RETURN_IF_ERROR(fc.CompileFunction(f));
  raw->compiling = false;
  *out = raw;
  return Ok();
}

Status FunctionCompiler::CompileOps(const stablehlo::Block& block, Body* body, std::vector<uint32_t>* returned) {
  Status st;
  const stablehlo::Block* outer = block_;
  block_ = &block;
  for (size_t i = 0; i < block.ops.size() && !st; ++i) st = CompileOp(block.ops[i], body, returned);
  block_ = outer;
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
    // A parameter of a refined function (checked by CompileFunction) takes its refined dims and value.
    const size_t p0 = body->arg_slots.size();
    const bool refined = depth_ == 0 && refine_ && a.type.kind != Type::Kind::kTuple;
    Type t = a.type;
    if (refined && p0 < refine_->dims.size() && !refine_->dims[p0].empty())
      t.dims = stablehlo::Span<int64_t>(refine_->dims[p0].data(), refine_->dims[p0].size());
    NEURONMEM_RETURN_IF_ERROR(DefineLeaves(t, Slot::Kind::kExternal, nullptr, &leaves));
    if (refined && p0 < refine_->values.size() && !refine_->values[p0].empty() &&
        refine_->values[p0].size() == fn_->slots[leaves[0]].bytes) {
      const std::vector<char>& v = refine_->values[p0];
      auto block_data = std::make_unique<uint64_t[]>(v.size() / 8 + 1);
      std::memcpy(block_data.get(), v.data(), v.size());
      folded_[leaves[0]] = std::move(block_data);
    }
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
    const bool batchable = IsReturn(o.name) || (OpTraits(o.name) & kBatchable);
    if (!batchable || !o.regions.empty() || o.skipped) return Unsupported("the region cannot be batched");
    for (const Type& t : o.result_types)
      if (!scalar(t)) return Unsupported("the region cannot be batched");
  }
  const int64_t outer = batch_;
  batch_ = n;
  Status s = CompileRegion(index, out);
  batch_ = outer;
  return s;
}

Status FunctionCompiler::CompileRegionFunction(size_t index, const Function** out) {
  const Operation& op = *op_;
  if (index >= op.regions.size()) return Invalid("expected at least %zu regions", index + 1);
  const auto& region = op.regions[index];
  if (region.blocks.size() != 1) return Unsupported("regions with %zu blocks are not supported", region.blocks.size());
  const stablehlo::Block& block = region.blocks[0];
  if (block.ops.empty() || !IsReturn(block.ops[block.ops.size() - 1].name))
    return Invalid("region %zu does not end in a return", index);
  const Operation& ret = block.ops[block.ops.size() - 1];
  if (ret.operand_types.size() != ret.operands.size())
    return Invalid("the return of region %zu does not state the types of its %zu values", index, ret.operands.size());
  // The region as a function: its block's arguments, its terminator's types; named after the op and its place.
  const std::string name = std::string(op.name) + " body at " + FormatLocation(state()->filename, op);
  stablehlo::Function f;
  f.name = name;
  f.visibility = "private";
  f.args = block.args;
  f.result_types = ret.operand_types;
  f.body = region;
  f.loc = op.loc;
  std::string key(1, '\0');  // no function of the module has this name
  key.append(name).append(1, '\0').append(std::to_string(index)).append(1, '\0').append(std::to_string(ctx_));
  const std::vector<uint32_t> saved_in = inputs_, saved_out = outputs_;
  Status s = c_->CompileUnder(
      f, key, name, ctx_, false, nullptr,
      [&] { return FormatLocation(state()->filename, op) + ": '" + std::string(op.name) + "'"; }, out);
  op_ = &op;
  inputs_ = saved_in;
  outputs_ = saved_out;
  return s;  // not a callee of this frame: it runs in frames of its own
}

Status FunctionCompiler::LookupValue(const stablehlo::ValueRef& ref, uint32_t* slot) {
  const uint32_t* leaves = nullptr;
  size_t count = 0;
  NEURONMEM_RETURN_IF_ERROR(Lookup(ref, &leaves, &count));
  if (count != 1)
    return Invalid("%%%.*s is a tuple of %zu values", static_cast<int>(ref.name.size()), ref.name.data(), count);
  *slot = leaves[0];
  Use(*slot);  // read by the current op's kernel: it lives until the op has run, and nothing updates it in place
  return Ok();
}

void FunctionCompiler::RecordConcurrentDevices(int64_t devices) {
  size_t& most = c_->impl_->num_manual_devices;
  most = std::max(most, static_cast<size_t>(devices));
}

const ManualDevices* FunctionCompiler::manual_devices() const { return c_->manual_; }

const ManualDevices* FunctionCompiler::SetManualDevices(const ManualDevices* devices) {
  const ManualDevices* outer = c_->manual_;
  c_->manual_ = devices;
  return outer;
}

Status FunctionCompiler::CalleeRefinement(const stablehlo::Function& f, ParamRefinement* out, bool* refined) {
  *refined = false;
  size_t p = 0;
  for (const stablehlo::Argument& a : f.args) {
    std::vector<const Type*> types;
    LeafTypes(a.type, &types);
    const bool global = a.type.kind != Type::Kind::kTuple && stablehlo::Find(a.attrs, "jax.global_constant");
    for (const Type* t : types) {
      if (p >= inputs_.size()) return Ok();  // the call's own check names the mismatch
      out->dims.emplace_back();
      out->values.emplace_back();
      const Slot& arg = fn_->slots[inputs_[p]];
      if (HasDynamicDims(*t)) {
        out->dims.back() = arg.dims;
        *refined = true;
      }
      // A global constant (a dimension variable's value) known here is known in the callee: its shapes follow.
      const char* data = nullptr;
      if (global && arg.bytes <= 64 && !Evaluate(inputs_[p], "a global constant", 0, &data)) {
        out->values.back().assign(data, data + arg.bytes);
        *refined = true;
      }
      ++p;
    }
  }
  return Ok();
}

Status FunctionCompiler::CallResultDims(size_t result, std::vector<int64_t>* dims) {
  std::string_view callee = op_->callee;
  if (callee.empty())
    if (const Attribute* a = Attr(op_->name == "stablehlo.composite" ? "decomposition" : "callee")) callee = a->str;
  const Function* fn = nullptr;
  NEURONMEM_RETURN_IF_ERROR(GetFunction(callee, &fn));
  size_t leaf = 0;
  for (size_t i = 0; i < result && i < op_->result_types.size(); ++i) leaf += LeafCount(op_->result_types[i]);
  if (leaf < fn->body.result_slots.size()) *dims = fn->slots[fn->body.result_slots[leaf]].dims;
  return Ok();
}

Status FunctionCompiler::GetFunction(std::string_view name, const Function** fn) {
  const Operation* op = op_;
  ParamRefinement refine;
  bool refined = false;
  if (IsCallLike(op_->name))
    if (const stablehlo::Function* f = FindFunction(name))
      NEURONMEM_RETURN_IF_ERROR(CalleeRefinement(*f, &refine, &refined));
  const std::vector<uint32_t> saved_in = inputs_, saved_out = outputs_;
  Status s = c_->GetFunction(name, fn, op_, ctx_, refined ? &refine : nullptr);
  op_ = op;
  inputs_ = saved_in;
  outputs_ = saved_out;
  return s;
}

const stablehlo::Function* FunctionCompiler::FindFunction(std::string_view name) const {
  return c_->functions_.Find(name);
}

const stablehlo::Module& FunctionCompiler::module() const { return c_->module_; }

Status FunctionCompiler::CompileFunction(const stablehlo::Function& f) {
  if (f.body.blocks.size() != 1)
    return Unimplemented("%s:%u:%u: function @%.*s: only single-block functions are supported",
                         state()->filename.c_str(), f.loc.line, f.loc.column, static_cast<int>(f.name.size()),
                         f.name.data());
  open_.resize(1);
  open_[0].start = 0;
  names_.Reserve(f.body.blocks[0].ops.size() + f.args.size());  // one name per op, most of them
  if (refine_) NEURONMEM_RETURN_IF_ERROR(CheckRefinement(f));
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
  // Kept values too (KeepUntilEnd), and one more use each: no op after their last reader takes their memory.
  for (uint32_t s : kept_) {
    Slot& sl = fn_->slots[s];
    sl.live_end = std::max(sl.live_end, tick_);
    ++uses_[s];
  }
  FuseElementwise();
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

// The refined dims of each parameter against its declared type: as many dims, each `?` or equal.
Status FunctionCompiler::CheckRefinement(const stablehlo::Function& f) {
  size_t p = 0;
  for (const stablehlo::Argument& a : f.args) {
    std::vector<const Type*> types;
    LeafTypes(a.type, &types);
    for (const Type* t : types) {
      const std::vector<int64_t>* d =
          p < refine_->dims.size() && !refine_->dims[p].empty() ? &refine_->dims[p] : nullptr;
      ++p;
      if (!d) continue;
      bool fits = a.type.kind != Type::Kind::kTuple && d->size() == t->dims.size();
      for (size_t k = 0; fits && k < d->size(); ++k) fits = (*d)[k] >= 0 && (t->dims[k] < 0 || t->dims[k] == (*d)[k]);
      if (!fits) {
        std::string got;
        for (int64_t x : *d) got += (got.empty() ? "" : ",") + std::to_string(x);
        return InvalidArgument("%s:%u:%u: function @%.*s: argument %zu (%%%.*s) of shape [%s] does not fit its type %s",
                               state()->filename.c_str(), a.loc.line, a.loc.column, static_cast<int>(f.name.size()),
                               f.name.data(), p - 1, static_cast<int>(a.name.size()), a.name.data(), got.c_str(),
                               TypeToString(*t).c_str());
      }
    }
  }
  if (p < refine_->dims.size())
    return InvalidArgument("%s:%u:%u: function @%.*s takes %zu parameters, not %zu", state()->filename.c_str(),
                           f.loc.line, f.loc.column, static_cast<int>(f.name.size()), f.name.data(), p,
                           refine_->dims.size());
  return Ok();
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
  ParamRefinement refine;
  refine.dims = options.param_dims;
  NEURONMEM_RETURN_IF_ERROR(
      c.GetFunction(options.entry, &entry, nullptr, host.place && host.entry_on_host ? host.space : 0, &refine));
  impl->entry = entry;
  for (size_t p = 0; p < entry->param_types.size(); ++p) {
    const Type& t = entry->param_types[p];
    ValueSpec v;
    v.type = t.kind == Type::Kind::kToken ? ElementType::kPred : t.element;
    if (t.kind == Type::Kind::kToken)
      v.dims = {0};              // an empty pred[0]
    else if (HasDynamicDims(t))  // refined
      v.dims = entry->slots[entry->body.arg_slots[p]].dims;
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
    impl->num_kernels += kv.second->kernels.size() - kv.second->fused_kernels;
    impl->num_in_place += kv.second->alias_slots.size();
  }
  impl->num_kernels -= impl->num_host_compute_moves;  // ops only
  impl->fallback_result.assign(impl->params.size(), -1);
  for (uint32_t p : entry->overwritten_params) impl->fallback_result[p] = options.donations[p];
  out->reset(new Program(std::move(impl)));
  return Ok();
}

}  // namespace neuronmem::interp
