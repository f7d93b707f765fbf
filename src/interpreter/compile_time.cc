// Values known at compile time (constants, and what side-effect-free ops compute from them, evaluated with
// their kernels), and result types whose dynamic dims they give.
#include <algorithm>
#include <string>

#include "interpreter/compiler.h"
#include "interpreter/shape.h"

namespace neuronmem::interp {

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
  if (!d.op->regions.empty() || bytes > (16u << 20) || !(OpTraits(d.op->name) & kEvaluable))
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
    if (OpTraits(op.name) & kElementwise) {
      for (uint32_t in : inputs_)
        if (fn_->slots[in].dims.size() == t.dims.size()) d = fn_->slots[in].dims;
    } else if (IsCallLike(op.name)) {
      NEURONMEM_RETURN_IF_ERROR(CallResultDims(i, &d));
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

}  // namespace neuronmem::interp
