#include "interpreter/host_compute.h"

#include <string_view>
#include <unordered_set>
#include <utility>

namespace neuronmem::interp {

namespace {

class HostComputeMove final : public Kernel {
 public:
  HostComputeMove(uint32_t from, uint32_t to, const Slot& like)
      : from_(from), to_(to), type_(like.type), dims_(like.dims), bytes_(like.bytes) {}

  Status Run(Frame& f) const override {
    const CustomCallFn& move = f.state->host_compute_move;
    if (!move) {
      if (bytes_ && f.slots[to_] != f.slots[from_]) std::memcpy(f.slots[to_], f.slots[from_], bytes_);
      return Status();
    }
    TensorView v[2];
    for (int i = 0; i < 2; ++i) {
      v[i].data = f.slots[i ? to_ : from_];
      v[i].type = type_;
      v[i].dims = dims_.data();
      v[i].rank = dims_.size();
    }
    CustomCallContext c;
    c.target = "host compute";
    c.run_context = f.context;
    c.op = op;
    c.operands = v;
    c.num_operands = 1;
    c.results = v + 1;
    c.num_results = 1;
    Status s = move(c);
    if (s)
      return MakeStatus(s->code, FormatLocation(f.state->filename, *op) + ": '" + std::string(op->name) +
                                     "': host compute: " + s->message);
    return s;
  }

 private:
  uint32_t from_, to_;
  ElementType type_;
  std::vector<int64_t> dims_;
  size_t bytes_;
};

struct Key {
  std::string_view name;
  uint32_t index;
  bool operator==(const Key& o) const { return name == o.name && index == o.index; }
};
struct KeyHash {
  size_t operator()(const Key& k) const { return std::hash<std::string_view>()(k.name) * 31 + k.index; }
};

// Collects the operands of the ops of `regions` that nothing inside defines. A name defined anywhere
// inside counts as defined (SSA names are unique in a function outside isolated regions, whose own
// definitions shadow the outer ones).
void Collect(stablehlo::Span<stablehlo::Region> regions, std::unordered_set<std::string_view>* defined,
             std::unordered_set<Key, KeyHash>* seen, std::vector<const stablehlo::ValueRef*>* out) {
  for (const stablehlo::Region& r : regions) {
    for (const stablehlo::Block& b : r.blocks) {
      for (const stablehlo::Argument& a : b.args) defined->insert(a.name);
      for (const stablehlo::Operation& o : b.ops) {
        for (const stablehlo::ValueRef& v : o.operands) {
          if (defined->count(v.name) || !seen->insert({v.name, v.index}).second) continue;
          out->push_back(&v);
        }
        Collect(o.regions, defined, seen, out);
        if (!o.result_name.empty()) defined->insert(o.result_name);
      }
    }
  }
}

}  // namespace

std::unique_ptr<Kernel> MakeHostComputeMove(uint32_t from, uint32_t to, const Slot& like) {
  return std::make_unique<HostComputeMove>(from, to, like);
}

std::vector<const stablehlo::ValueRef*> FreeValuesOfRegions(const stablehlo::Operation& op) {
  std::unordered_set<std::string_view> defined;
  std::unordered_set<Key, KeyHash> seen;
  std::vector<const stablehlo::ValueRef*> out;
  Collect(op.regions, &defined, &seen, &out);
  return out;
}

}  // namespace neuronmem::interp
