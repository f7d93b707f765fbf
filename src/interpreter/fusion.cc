// Fused element-wise regions (docs/executor.md, "Fused element-wise regions"): once a function is compiled,
// each run of consecutive f32 element-wise kernels of one element count (with the broadcasts, converts,
// compares and selects between them) becomes one kernel that computes tile by tile. Values used only inside
// the region live in tile buffers (their slots get no memory); the others are written. What the fused kernel
// cannot do ends the region, and a region whose tiles would not fit stays unfused: fusion never fails a compile.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpreter/compiler.h"
#include "interpreter/fusion_tile.h"

namespace neuronmem::interp {
namespace {

using fusion::kTileVector;
using fusion::TileInstr;
using fusion::TileOp;

// The tile buffers of one run of a fused kernel live on the stack: at most kTileBudget floats (32 KiB, in L1/L2
// with the inputs' and outputs' tiles), in at most kMaxBuffers buffers; a region needing more stays unfused.
constexpr int64_t kTileBudget = 8192;
constexpr int kMaxBuffers = 32;
constexpr int64_t kMaxTile = 4096, kMinTile = 256;
// The most values one region holds (registers); a longer run of ops starts a new region.
constexpr size_t kMaxRegs = 256;
// Smaller values run unfused (a loop counter, a scalar: the tile machinery costs more than it saves).
constexpr int64_t kMinFusedElements = 64;

const fusion::TileIsa& PickTileIsa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return fusion::kTileAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return fusion::kTileAvx2;
  return fusion::kTileBase;
}

// How a fused kernel reads a value from outside the region into a register, per tile.
struct TileInput {
  enum class Mode : uint8_t {
    kFull,      // element i of an n-element value
    kSplat,     // element 0 of the slot (a 0-d value broadcast)
    kConst,     // `value` (a constant whose elements are all equal)
    kLeading,   // element i / period (a broadcast along the trailing dims)
    kTrailing,  // element i % period (a broadcast along the leading dims)
  };
  uint32_t slot = 0;
  uint16_t reg = 0;
  Mode mode = Mode::kFull;
  bool pred = false;  // the slot holds i1 bytes (read as 0.0f / 1.0f)
  int64_t period = 1;
  float value = 0;
};
struct TileOutput {
  uint32_t slot = 0;
  uint16_t reg = 0;
  bool pred = false;  // written as i1 bytes
};

float ReadElement(const char* base, bool pred, int64_t i) {
  if (pred) return base[i] ? 1.0f : 0.0f;
  float v;
  std::memcpy(&v, base + 4 * i, 4);
  return v;
}

class FusedKernel final : public Kernel {
 public:
  FusedKernel(int64_t n, int64_t tile, std::vector<TileInput> inputs, std::vector<TileOutput> outputs,
              std::vector<TileInstr> code, std::vector<int16_t> buffer_of)
      : n_(n),
        tile_(tile),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        code_(std::move(code)),
        buffer_of_(std::move(buffer_of)) {}

  Status Run(Frame& f) const override {
    static const fusion::TileIsa& isa = PickTileIsa();
    alignas(64) float buffers[kTileBudget];
    float* regs[kMaxRegs];
    for (size_t r = 0; r < buffer_of_.size(); ++r)
      regs[r] = buffer_of_[r] < 0 ? buffers : buffers + buffer_of_[r] * tile_;
    for (int64_t s = 0; s < n_; s += tile_) {
      const int64_t len = std::min(tile_, n_ - s);
      const int64_t vlen = (len + kTileVector - 1) / kTileVector * kTileVector;
      const bool padded = vlen != len;
      for (const TileInput& in : inputs_)
        Load(isa, f, in, s, len, vlen, padded, buffers + buffer_of_[in.reg] * tile_, regs);
      for (const TileOutput& out : outputs_) {
        float* buf = buffers + buffer_of_[out.reg] * tile_;
        regs[out.reg] = padded || out.pred ? buf : Ptr<float>(f, out.slot) + s;
      }
      isa.run(code_.data(), code_.size(), regs, vlen);
      for (const TileOutput& out : outputs_) {
        const float* v = regs[out.reg];
        if (out.pred) {
          isa.to_bytes(Ptr<uint8_t>(f, out.slot) + s, v, len);
        } else if (padded) {
          std::memcpy(Ptr<float>(f, out.slot) + s, v, static_cast<size_t>(len) * 4);
        }
      }
    }
    return Status();
  }

 private:
  static void Load(const fusion::TileIsa& isa, Frame& f, const TileInput& in, int64_t s, int64_t len, int64_t vlen,
                   bool padded, float* buf, float** regs) {
    const char* base = f.slots[in.slot];
    switch (in.mode) {
      case TileInput::Mode::kFull:
        if (!in.pred && !padded) {  // read in place
          regs[in.reg] = reinterpret_cast<float*>(const_cast<char*>(base)) + s;
          return;
        }
        if (in.pred) {
          isa.from_bytes(buf, reinterpret_cast<const uint8_t*>(base) + s, len);
        } else {
          std::memcpy(buf, base + 4 * s, static_cast<size_t>(len) * 4);
        }
        break;
      case TileInput::Mode::kSplat:
      case TileInput::Mode::kConst: {
        const float v = in.mode == TileInput::Mode::kConst ? in.value : ReadElement(base, in.pred, 0);
        isa.fill(buf, v, len);
        break;
      }
      case TileInput::Mode::kLeading:
        for (int64_t i = 0; i < len;) {
          const int64_t q = (s + i) / in.period;
          const int64_t end = std::min(len, (q + 1) * in.period - s);
          isa.fill(buf + i, ReadElement(base, in.pred, q), end - i);
          i = end;
        }
        break;
      case TileInput::Mode::kTrailing:
        for (int64_t i = 0; i < len;) {
          const int64_t j = (s + i) % in.period;
          const int64_t end = std::min(len, i + in.period - j);
          if (in.pred) {
            isa.from_bytes(buf + i, reinterpret_cast<const uint8_t*>(base) + j, end - i);
          } else {
            std::memcpy(buf + i, base + 4 * j, static_cast<size_t>(end - i) * 4);
          }
          i = end;
        }
        break;
    }
    isa.fill(buf + len, 0.0f, vlen - len);
    regs[in.reg] = buf;
  }

  int64_t n_, tile_;
  std::vector<TileInput> inputs_;
  std::vector<TileOutput> outputs_;
  std::vector<TileInstr> code_;
  std::vector<int16_t> buffer_of_;  // per register: its tile buffer
};

int Arity(TileOp op) {
  switch (op) {
    case TileOp::kCopy:
    case TileOp::kNeg:
    case TileOp::kAbs:
    case TileOp::kExp:
    case TileOp::kSqrt:
    case TileOp::kRsqrt:
    case TileOp::kTanh:
    case TileOp::kLogistic: return 1;
    case TileOp::kSelect: return 3;
    default: return 2;
  }
}

bool AllEqual(const char* data, size_t esize, int64_t n) {
  for (int64_t i = 1; i < n; ++i)
    if (std::memcmp(data, data + esize * static_cast<size_t>(i), esize) != 0) return false;
  return true;
}

}  // namespace

// What one fusible op does in a region.
struct FusionStep {
  int64_t n = 0;           // elements of its result
  bool broadcast = false;  // broadcast_in_dim: its operand read in `mode` (kFull: a copy)
  TileInput::Mode mode = TileInput::Mode::kFull;
  int64_t period = 1;
  TileOp op = TileOp::kCopy;
};

bool FusionEnabled(const CompileOptions& o) {
  if (!o.fuse_elementwise) return false;
  const char* e = std::getenv("NEURONMEM_INTERP_FUSION");
  return !(e && std::strcmp(e, "0") == 0);
}

// Element-wise ops the tile programs compute on f32 (compare: f32 operands, i1 result; select: i1, f32, f32).
bool TileOpOf(std::string_view name, TileOp* op, int* arity) {
  static const std::unordered_map<std::string_view, std::pair<TileOp, int>> kOps = {
      {"stablehlo.add", {TileOp::kAdd, 2}},         {"stablehlo.subtract", {TileOp::kSub, 2}},
      {"stablehlo.multiply", {TileOp::kMul, 2}},    {"stablehlo.divide", {TileOp::kDiv, 2}},
      {"stablehlo.maximum", {TileOp::kMax, 2}},     {"stablehlo.minimum", {TileOp::kMin, 2}},
      {"stablehlo.negate", {TileOp::kNeg, 1}},      {"stablehlo.abs", {TileOp::kAbs, 1}},
      {"stablehlo.exponential", {TileOp::kExp, 1}}, {"stablehlo.sqrt", {TileOp::kSqrt, 1}},
      {"stablehlo.rsqrt", {TileOp::kRsqrt, 1}},     {"stablehlo.compare", {TileOp::kCmpEq, 2}},
      {"stablehlo.tanh", {TileOp::kTanh, 1}},       {"stablehlo.logistic", {TileOp::kLogistic, 1}},
      {"stablehlo.select", {TileOp::kSelect, 3}},   {"stablehlo.convert", {TileOp::kCopy, 1}},
  };
  const auto it = kOps.find(name);
  if (it == kOps.end()) return false;
  *op = it->second.first;
  *arity = it->second.second;
  return true;
}

bool FunctionCompiler::FusibleOp(uint32_t index, FusionStep* step) {
  const Definer& d = definers_[index];
  if (d.num_outputs != 1 || d.op->regions.size() || d.op->skipped) return false;
  const uint32_t* io = definer_slots_.data() + d.io;
  const Slot& r = fn_->slots[io[d.num_inputs]];
  if (r.kind != Slot::Kind::kPlanned || r.definer != index || r.quant || r.count < kMinFusedElements) return false;
  if (r.type != ElementType::kF32 && r.type != ElementType::kPred) return false;
  for (uint32_t i = 0; i < d.num_inputs; ++i) {
    const Slot& a = fn_->slots[io[i]];
    if (a.quant || (a.type != ElementType::kF32 && a.type != ElementType::kPred)) return false;
    if (a.kind == Slot::Kind::kConst && !a.const_data) return false;
  }
  step->n = r.count;
  const std::string_view name = d.op->name;
  const Operation* saved = op_;
  op_ = d.op;
  bool ok = false;
  if (name == "stablehlo.broadcast_in_dim") {
    ok = FusibleBroadcast(d, io, step);
  } else if (OpTraits(name) & kElementwise) {
    int arity = 0;
    ok = TileOpOf(name, &step->op, &arity) && d.num_inputs == static_cast<uint32_t>(arity);
    for (uint32_t i = 0; ok && i < d.num_inputs; ++i) {
      const Slot& a = fn_->slots[io[i]];
      const bool select_pred = step->op == TileOp::kSelect && i == 0;
      const bool want_pred = select_pred || (name == "stablehlo.convert" && a.type == ElementType::kPred);
      ok = a.type == (want_pred ? ElementType::kPred : ElementType::kF32) &&
           (a.count == r.count || (select_pred && a.count == 1));
    }
    const bool pred_result = step->op >= TileOp::kCmpEq && step->op <= TileOp::kCmpGe;
    ok = ok && r.type == (pred_result ? ElementType::kPred : ElementType::kF32);
    if (ok && step->op == TileOp::kCmpEq) {  // the direction; IEEE order only (FLOAT or no compare_type)
      std::string dir, type;
      EnumWord("compare_type", &type);
      static const std::pair<const char*, TileOp> kDirs[] = {{"EQ", TileOp::kCmpEq}, {"NE", TileOp::kCmpNe},
                                                             {"LT", TileOp::kCmpLt}, {"LE", TileOp::kCmpLe},
                                                             {"GT", TileOp::kCmpGt}, {"GE", TileOp::kCmpGe}};
      ok = EnumWord("comparison_direction", &dir) && (type.empty() || type == "FLOAT");
      bool found = false;
      for (const auto& [w, op] : kDirs)
        if (dir == w) step->op = op, found = true;
      ok = ok && found;
    }
  }
  op_ = saved;
  return ok;
}

// broadcast_in_dim whose operand the fused kernel reads as it tiles the result: a 0-d value (splat), the same
// shape (a copy), or a value along the leading or the trailing dims of the result (size-1 dims broadcast).
bool FunctionCompiler::FusibleBroadcast(const Definer& d, const uint32_t* io, FusionStep* step) {
  const Slot& a = fn_->slots[io[0]];
  const Slot& r = fn_->slots[io[1]];
  std::vector<int64_t> bd;
  if (d.num_inputs != 1 || a.type != r.type || !(IntList("broadcast_dimensions", &bd) || IntList("dims", &bd)) ||
      bd.size() != a.dims.size())
    return false;
  step->broadcast = true;
  if (a.count == 1) {
    step->mode = TileInput::Mode::kSplat;
    return true;
  }
  const int64_t rank = static_cast<int64_t>(r.dims.size());
  std::vector<int64_t> mapped;  // the result dims the operand's non-1 dims run along, in the operand's order
  for (size_t k = 0; k < bd.size(); ++k) {
    if (a.dims[k] == 1) continue;
    if (bd[k] < 0 || bd[k] >= rank || r.dims[static_cast<size_t>(bd[k])] != a.dims[k]) return false;
    mapped.push_back(bd[k]);
  }
  const int64_t p = static_cast<int64_t>(mapped.size());
  bool leading = true, trailing = true;
  for (int64_t k = 0; k < p; ++k) {
    leading = leading && mapped[static_cast<size_t>(k)] == k;
    trailing = trailing && mapped[static_cast<size_t>(k)] == rank - p + k;
  }
  if (leading && trailing) {
    step->mode = TileInput::Mode::kFull;
  } else if (leading) {
    step->mode = TileInput::Mode::kLeading;
    step->period = r.count / a.count;
  } else if (trailing) {
    step->mode = TileInput::Mode::kTrailing;
    step->period = a.count;
  } else {
    return false;
  }
  return true;
}

void FunctionCompiler::FuseElementwise() {
  if (!FusionEnabled(c_->options_)) return;
  std::unordered_map<const Kernel*, uint32_t> definer_of;
  for (uint32_t i = 0; i < definers_.size(); ++i) definer_of.emplace(definers_[i].kernel, i);
  uses_.resize(fn_->slots.size(), 0);
  FuseBody(&fn_->body, definer_of);
  for (auto& b : fn_->bodies) FuseBody(b.get(), definer_of);
  // A value kept in tiles has no memory to update in place, nor to be updated in.
  in_place_.erase(std::remove_if(in_place_.begin(), in_place_.end(),
                                 [&](const InPlaceCandidate& c) {
                                   return fn_->slots[c.result].fused || fn_->slots[c.operand].fused;
                                 }),
                  in_place_.end());
}

void FunctionCompiler::FuseBody(Body* body, const std::unordered_map<const Kernel*, uint32_t>& definer_of) {
  std::vector<const Kernel*> kernels;
  std::vector<uint32_t> run;
  std::vector<FusionStep> steps;
  const auto flush = [&] {
    const Kernel* fused = run.size() >= 2 ? BuildFused(run, steps) : nullptr;
    if (fused) {
      kernels.push_back(fused);
    } else {
      for (uint32_t i : run) kernels.push_back(definers_[i].kernel);
    }
    run.clear();
    steps.clear();
  };
  for (const Kernel* k : body->kernels) {
    const auto it = definer_of.find(k);
    FusionStep step;
    if (it == definer_of.end() || !FusibleOp(it->second, &step)) {
      flush();
      kernels.push_back(k);
      continue;
    }
    if (!run.empty() && (step.n != steps[0].n || 2 * run.size() + 8 > kMaxRegs)) flush();
    run.push_back(it->second);
    steps.push_back(step);
  }
  flush();
  body->kernels = std::move(kernels);
}

const Kernel* FunctionCompiler::BuildFused(const std::vector<uint32_t>& run, const std::vector<FusionStep>& steps) {
  const int64_t n = steps[0].n;
  std::unordered_map<uint32_t, uint16_t> reg_of;      // region values and inputs read in full -> their register
  std::unordered_map<uint32_t, uint32_t> inner_uses;  // region values -> reads inside the region
  std::vector<TileInput> inputs;
  std::vector<TileInstr> code;
  std::vector<uint32_t> defined;  // region values in order
  uint16_t regs = 0;
  const auto input = [&](uint32_t slot, TileInput::Mode mode, int64_t period) -> uint16_t {
    if (mode == TileInput::Mode::kFull) {
      const auto it = reg_of.find(slot);
      if (it != reg_of.end()) {
        if (inner_uses.count(slot)) ++inner_uses[slot];
        return it->second;
      }
    }
    const Slot& s = fn_->slots[slot];
    TileInput in;
    in.slot = slot;
    in.reg = regs++;
    in.mode = mode;
    in.period = period;
    in.pred = s.type == ElementType::kPred;
    if (mode == TileInput::Mode::kFull && s.kind == Slot::Kind::kConst &&
        AllEqual(s.const_data, in.pred ? 1 : 4, s.count)) {
      in.mode = TileInput::Mode::kConst;
      in.value = ReadElement(s.const_data, in.pred, 0);
    }
    if (mode == TileInput::Mode::kFull) reg_of[slot] = in.reg;
    inputs.push_back(in);
    return in.reg;
  };
  for (size_t m = 0; m < run.size(); ++m) {
    const Definer& d = definers_[run[m]];
    const uint32_t* io = definer_slots_.data() + d.io;
    const uint32_t result = io[d.num_inputs];
    const FusionStep& st = steps[m];
    if (st.broadcast && st.mode != TileInput::Mode::kFull) {
      reg_of[result] = input(io[0], st.mode, st.period);  // read as it tiles: no instruction
    } else {
      TileInstr in{st.broadcast ? TileOp::kCopy : st.op, 0, 0, 0, 0};
      uint16_t* operand[3] = {&in.a, &in.b, &in.c};
      for (uint32_t i = 0; i < d.num_inputs; ++i) {
        const bool splat = fn_->slots[io[i]].count == 1 && n != 1;
        *operand[i] = input(io[i], splat ? TileInput::Mode::kSplat : TileInput::Mode::kFull, 1);
      }
      in.dst = regs++;
      reg_of[result] = in.dst;
      code.push_back(in);
    }
    inner_uses[result] = 0;
    defined.push_back(result);
  }
  if (regs + defined.size() > kMaxRegs) return nullptr;
  // The values used after the region are written; a value read in tiles (a broadcast) is copied out first.
  std::vector<TileOutput> outputs;
  std::vector<uint32_t> kept;
  for (uint32_t slot : defined) {
    if (uses_[slot] == inner_uses[slot]) {
      kept.push_back(slot);
      continue;
    }
    uint16_t reg = reg_of[slot];
    const bool from_input =
        std::any_of(inputs.begin(), inputs.end(), [&](const TileInput& in) { return in.reg == reg; });
    if (from_input) {
      code.push_back(TileInstr{TileOp::kCopy, regs, reg, 0, 0});
      reg = regs++;
    }
    outputs.push_back(TileOutput{slot, reg, fn_->slots[slot].type == ElementType::kPred});
  }
  // Tile buffers by live range (a destination may take the buffer of an operand it is the last reader of).
  const size_t end = code.size();
  std::vector<size_t> last(regs, 0);
  std::vector<bool> is_output(regs, false);
  for (size_t k = 0; k < code.size(); ++k) {
    last[code[k].dst] = std::max(last[code[k].dst], k);
    const int arity = Arity(code[k].op);
    const uint16_t ops[3] = {code[k].a, code[k].b, code[k].c};
    for (int i = 0; i < arity; ++i) last[ops[i]] = std::max(last[ops[i]], k);
  }
  for (const TileOutput& o : outputs) last[o.reg] = end, is_output[o.reg] = true;
  std::vector<int16_t> buffer_of(regs, -1);
  std::vector<int16_t> free;  // buffers of registers read for the last time
  int16_t buffers = 0;
  const auto take = [&](uint16_t reg) {
    if (!free.empty()) {
      buffer_of[reg] = free.back();
      free.pop_back();
    } else {
      buffer_of[reg] = buffers++;
    }
  };
  for (const TileInput& in : inputs) take(in.reg);
  std::vector<bool> released(regs, false);
  for (size_t k = 0; k < code.size(); ++k) {
    const uint16_t ops[3] = {code[k].a, code[k].b, code[k].c};
    const int arity = Arity(code[k].op);
    for (int i = 0; i < arity; ++i) {
      const uint16_t r = ops[i];
      if (last[r] == k && !is_output[r] && !released[r] && buffer_of[r] >= 0) {
        released[r] = true;
        free.push_back(buffer_of[r]);
      }
    }
    take(code[k].dst);
    if (last[code[k].dst] == k && !is_output[code[k].dst]) {  // never read
      released[code[k].dst] = true;
      free.push_back(buffer_of[code[k].dst]);
    }
  }
  if (buffers > kMaxBuffers) return nullptr;  // the tiles would not fit: the region stays unfused
  std::vector<TileInput> kernel_inputs = std::move(inputs);
  int64_t tile = kTileBudget / std::max<int64_t>(buffers, 1) / kTileVector * kTileVector;
  tile = std::min(std::max(tile, kMinTile), kMaxTile);
  for (uint32_t slot : kept) fn_->slots[slot].fused = true;
  // The kernel reads every input and writes every output from the first member to the last, a tile at a time:
  // the slot planner must keep their memory apart over that whole span (unfused, a member's output could
  // take the memory of an earlier member's input that is dead by then).
  uint32_t first = UINT32_MAX, last_start = 0;
  for (uint32_t slot : defined) {
    first = std::min(first, fn_->slots[slot].live_begin);
    last_start = std::max(last_start, fn_->slots[slot].live_begin);
  }
  for (const TileInput& in : kernel_inputs) {
    Slot& s = fn_->slots[in.slot];
    if (s.kind == Slot::Kind::kPlanned) s.live_end = std::max(s.live_end, last_start + 1);
  }
  for (const TileOutput& out : outputs) {
    Slot& s = fn_->slots[out.slot];
    s.live_begin = std::min(s.live_begin, first);
  }
  auto kernel = std::make_unique<FusedKernel>(n, tile, std::move(kernel_inputs), std::move(outputs), std::move(code),
                                              std::move(buffer_of));
  kernel->op = definers_[run[0]].op;
  Program::FusedRegion info;
  for (uint32_t i : run) info.ops.emplace_back(definers_[i].op->name);
  info.written = defined.size() - kept.size();
  info.in_tile = kept.size();
  c_->impl_->fused_regions.push_back(std::move(info));
  ++fn_->fused_kernels;
  const Kernel* raw = kernel.get();
  fn_->kernels.push_back(std::move(kernel));
  return raw;
}

}  // namespace neuronmem::interp
