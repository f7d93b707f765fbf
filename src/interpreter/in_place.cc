// In-place updates: an op's result in its operand's memory when nothing reads the operand afterwards.
#include <algorithm>

#include "interpreter/compiler.h"

namespace neuronmem::interp {

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

}  // namespace neuronmem::interp
