// Host compute: where an op runs (around it, on the host, or a placement move), and the copies that give
// code of one memory space the values of another.
#include <algorithm>

#include "interpreter/compiler.h"
#include "interpreter/host_compute.h"

namespace neuronmem::interp {

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

}  // namespace neuronmem::interp
