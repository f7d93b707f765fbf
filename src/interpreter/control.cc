// Control flow and calls: func.call/call, while, if, case, and the token ops (after_all).
#include <algorithm>

#include "interpreter/program.h"
#include "interpreter/quant.h"
#include "interpreter/shape.h"
#include "interpreter/verify.h"

namespace neuronmem::interp {
namespace {

class CallKernel final : public Kernel {
 public:
  CallKernel(const Function* fn, std::vector<uint32_t> args, std::vector<uint32_t> results, std::vector<bool> crosses)
      : fn_(fn), args_(std::move(args)), results_(std::move(results)), crosses_(new bool[crosses.size()]) {
    for (size_t i = 0; i < crosses.size(); ++i) crosses_[i] = crosses[i];
    any_crosses_ = std::find(crosses.begin(), crosses.end(), true) != crosses.end();
  }
  Status Run(Frame& f) const override {
    return CallFunction(*fn_, f, args_.data(), results_.data(), any_crosses_ ? crosses_.get() : nullptr);
  }

 private:
  const Function* fn_;
  std::vector<uint32_t> args_, results_;
  std::unique_ptr<bool[]> crosses_;
  bool any_crosses_ = false;
};

}  // namespace

std::unique_ptr<Kernel> MakeCallKernel(const Function* fn, std::vector<uint32_t> args, std::vector<uint32_t> results,
                                       std::vector<bool> crosses) {
  return std::make_unique<CallKernel>(fn, std::move(args), std::move(results), std::move(crosses));
}

namespace {

Status CompileCall(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::string_view callee = cx.op().callee;
  if (callee.empty()) {
    const stablehlo::Attribute* a = cx.Attr("callee");
    if (a) callee = a->str;
  }
  if (callee.empty()) return cx.Invalid("missing callee");
  Status round_trip;  // the body of Shardy's exported manual computation runs in its LocalToGlobalShape
  if (callee.substr(0, 31) == "xla.sdy.manual_computation_body" && CompileShardyRoundTrip(cx, k, &round_trip))
    return round_trip;
  const Function* fn = nullptr;
  NEURONMEM_RETURN_IF_ERROR(cx.GetFunction(callee, &fn));
  std::vector<uint32_t> args, results;
  for (size_t i = 0; i < cx.num_inputs(); ++i) args.push_back(cx.in(i));
  for (size_t i = 0; i < cx.num_outputs(); ++i) results.push_back(cx.out(i));
  if (args.size() != fn->body.arg_slots.size() || results.size() != fn->body.result_slots.size())
    return cx.Invalid("call of @%.*s with %zu arguments and %zu results does not match its signature",
                      static_cast<int>(callee.size()), callee.data(), args.size(), results.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const Slot& a = cx.slot(args[i]);
    const Slot& p = fn->slots[fn->body.arg_slots[i]];
    if (!SameValueType(a, p))
      return cx.Invalid("argument %zu is %s; @%.*s takes %s", i, SlotTypeText(a).c_str(),
                        static_cast<int>(callee.size()), callee.data(), SlotTypeText(p).c_str());
  }
  for (size_t i = 0; i < results.size(); ++i) {  // a larger result would copy bytes the callee never wrote
    const Slot& r = cx.slot(results[i]);
    const Slot& c = fn->slots[fn->body.result_slots[i]];
    if (!SameValueType(r, c))
      return cx.Invalid("result %zu is declared %s; @%.*s returns %s", i, SlotTypeText(r).c_str(),
                        static_cast<int>(callee.size()), callee.data(), SlotTypeText(c).c_str());
  }
  std::vector<bool> crosses;
  for (size_t i = 0; i < results.size(); ++i)
    crosses.push_back(CrossesSpaces(fn->slots[fn->body.result_slots[i]], cx.slot(results[i])));
  cx.AddCallee(fn);
  *k = MakeCallKernel(fn, std::move(args), std::move(results), std::move(crosses));
  return Ok();
}

// Copies the values of `from` slots into `to` slots (sizes from the slot table).
struct Copier {
  std::vector<uint32_t> from, to;
  std::vector<size_t> bytes;
  void Run(Frame& f) const {
    for (size_t i = 0; i < from.size(); ++i)
      if (f.slots[to[i]] != f.slots[from[i]]) std::memmove(f.slots[to[i]], f.slots[from[i]], bytes[i]);
  }
};

class WhileKernel final : public Kernel {
 public:
  WhileKernel(const Body* cond, const Body* body, std::vector<uint32_t> init, std::vector<uint32_t> bufs_a,
              std::vector<uint32_t> bufs_b, std::vector<uint32_t> results, std::vector<size_t> bytes)
      : cond_(cond),
        body_(body),
        init_(std::move(init)),
        a_(std::move(bufs_a)),
        b_(std::move(bufs_b)),
        results_(std::move(results)),
        bytes_(std::move(bytes)) {}
  // init_crosses[i] / body_crosses[i]: the initial value / the body's result i was moved out of space 0 (a move
  // before the loop / inside the body), so copying it into the loop's buffers is a transfer.
  void SetCrossings(std::vector<bool> init_crosses, std::vector<bool> body_crosses) {
    init_crosses_ = std::move(init_crosses);
    body_crosses_ = std::move(body_crosses);
  }
  Status Run(Frame& f) const override {
    const size_t n = init_.size();
    for (size_t i = 0; i < n; ++i) CopyValue(f, f.slots[a_[i]], f.slots[init_[i]], bytes_[i], init_crosses_[i]);
    const std::vector<uint32_t>* cur = &a_;
    const std::vector<uint32_t>* next = &b_;
    for (;;) {
      for (size_t i = 0; i < n; ++i) f.slots[cond_->arg_slots[i]] = f.slots[(*cur)[i]];
      NEURONMEM_RETURN_IF_ERROR(RunBody(*cond_, f));
      if (!*reinterpret_cast<const bool*>(f.slots[cond_->result_slots[0]])) break;
      for (size_t i = 0; i < n; ++i) f.slots[body_->arg_slots[i]] = f.slots[(*cur)[i]];
      NEURONMEM_RETURN_IF_ERROR(RunBody(*body_, f));
      for (size_t i = 0; i < n; ++i)
        CopyValue(f, f.slots[(*next)[i]], f.slots[body_->result_slots[i]], bytes_[i], body_crosses_[i]);
      std::swap(cur, next);
    }
    for (size_t i = 0; i < n; ++i) std::memmove(f.slots[results_[i]], f.slots[(*cur)[i]], bytes_[i]);
    return Status();
  }

 private:
  const Body* cond_;
  const Body* body_;
  std::vector<uint32_t> init_, a_, b_, results_;
  std::vector<size_t> bytes_;
  std::vector<bool> init_crosses_, body_crosses_;
};

Status CompileWhile(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  const size_t n = cx.num_inputs();
  if (cx.num_outputs() != n) return cx.Invalid("while needs as many results as operands");
  std::vector<uint32_t> init, a, b, results;
  std::vector<size_t> bytes;
  for (size_t i = 0; i < n; ++i) {
    const Slot& s = cx.in_slot(i);
    init.push_back(cx.in(i));
    results.push_back(cx.out(i));
    bytes.push_back(s.bytes);
    a.push_back(cx.AddScratch(s.type, s.dims));
    b.push_back(cx.AddScratch(s.type, s.dims));
  }
  const Body* cond = nullptr;
  const Body* body = nullptr;
  NEURONMEM_RETURN_IF_ERROR(cx.CompileRegion(0, &cond));
  NEURONMEM_RETURN_IF_ERROR(cx.CompileRegion(1, &body));
  if (cond->arg_slots.size() != n || body->arg_slots.size() != n || body->result_slots.size() != n ||
      cond->result_slots.size() != 1 || cx.slot(cond->result_slots[0]).type != ElementType::kPred ||
      !cx.slot(cond->result_slots[0]).dims.empty())
    return cx.Invalid("cond/body regions do not match the loop's values");
  for (size_t i = 0; i < n; ++i) {
    const Slot& v = cx.in_slot(i);
    const char* bad = !SameValueType(cx.out_slot(i), v)                   ? "result"
                      : !SameValueType(cx.slot(cond->arg_slots[i]), v)    ? "cond argument"
                      : !SameValueType(cx.slot(body->arg_slots[i]), v)    ? "body argument"
                      : !SameValueType(cx.slot(body->result_slots[i]), v) ? "body result"
                                                                          : nullptr;
    if (bad) return cx.Invalid("%s %zu does not have loop value %zu's type %s", bad, i, i, SlotTypeText(v).c_str());
  }
  std::vector<bool> init_crosses, body_crosses;
  for (size_t i = 0; i < n; ++i) {
    init_crosses.push_back(CrossesSpaces(cx.slot(init[i]), cx.slot(a[i])));
    body_crosses.push_back(CrossesSpaces(cx.slot(body->result_slots[i]), cx.slot(a[i])));
  }
  auto kernel = std::make_unique<WhileKernel>(cond, body, std::move(init), std::move(a), std::move(b),
                                              std::move(results), std::move(bytes));
  kernel->SetCrossings(std::move(init_crosses), std::move(body_crosses));
  *k = std::move(kernel);
  return Ok();
}

// if / case: run one branch, copy its results.
class BranchKernel final : public Kernel {
 public:
  // crosses[b][i]: branch b's result i was moved out of space 0 inside the branch (copying it out is a transfer).
  BranchKernel(uint32_t selector, bool is_pred, std::vector<const Body*> branches, std::vector<uint32_t> results,
               std::vector<size_t> bytes, std::vector<std::vector<bool>> crosses)
      : selector_(selector),
        is_pred_(is_pred),
        branches_(std::move(branches)),
        results_(std::move(results)),
        bytes_(std::move(bytes)),
        crosses_(std::move(crosses)) {}
  Status Run(Frame& f) const override {
    size_t b;
    if (is_pred_) {
      b = *reinterpret_cast<const bool*>(f.slots[selector_]) ? 0 : 1;
    } else {
      int32_t v;
      std::memcpy(&v, f.slots[selector_], 4);
      b = (v < 0 || static_cast<size_t>(v) >= branches_.size()) ? branches_.size() - 1 : static_cast<size_t>(v);
    }
    const Body& body = *branches_[b];
    NEURONMEM_RETURN_IF_ERROR(RunBody(body, f));
    for (size_t i = 0; i < results_.size(); ++i)
      CopyValue(f, f.slots[results_[i]], f.slots[body.result_slots[i]], bytes_[i], crosses_[b][i]);
    return Status();
  }

 private:
  uint32_t selector_;
  bool is_pred_;
  std::vector<const Body*> branches_;
  std::vector<uint32_t> results_;
  std::vector<size_t> bytes_;
  std::vector<std::vector<bool>> crosses_;
};

Status CompileBranches(CompileCtx& cx, bool is_if, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1) return cx.Invalid("expected one selector operand");
  const Slot& sel = cx.in_slot(0);
  if (is_if ? sel.type != ElementType::kPred : sel.type != ElementType::kS32)
    return cx.Invalid("the selector must be %s", is_if ? "i1" : "i32");
  const size_t nb = cx.op().regions.size();
  if (nb == 0 || (is_if && nb != 2)) return cx.Invalid("wrong number of branches");
  std::vector<const Body*> branches;
  for (size_t i = 0; i < nb; ++i) {
    const Body* b = nullptr;
    NEURONMEM_RETURN_IF_ERROR(cx.CompileRegion(i, &b));
    if (b->result_slots.size() != cx.num_outputs())
      return cx.Invalid("branch %zu returns the wrong number of values", i);
    for (size_t r = 0; r < b->result_slots.size(); ++r) {
      if (!SameValueType(cx.slot(b->result_slots[r]), cx.out_slot(r)))
        return cx.Invalid("branch %zu returns %s as result %zu, which the op declares %s", i,
                          SlotTypeText(cx.slot(b->result_slots[r])).c_str(), r, SlotTypeText(cx.out_slot(r)).c_str());
    }
    branches.push_back(b);
  }
  std::vector<uint32_t> results;
  std::vector<size_t> bytes;
  for (size_t i = 0; i < cx.num_outputs(); ++i) {
    results.push_back(cx.out(i));
    bytes.push_back(cx.out_slot(i).bytes);
  }
  std::vector<std::vector<bool>> crosses;
  for (const Body* b : branches) {
    crosses.emplace_back();
    for (size_t i = 0; i < results.size(); ++i)
      crosses.back().push_back(CrossesSpaces(cx.slot(b->result_slots[i]), cx.slot(results[i])));
  }
  *k = std::make_unique<BranchKernel>(cx.in(0), is_if, std::move(branches), std::move(results), std::move(bytes),
                                      std::move(crosses));
  return Ok();
}

Status CompileIf(CompileCtx& cx, std::unique_ptr<Kernel>* k) { return CompileBranches(cx, true, k); }
Status CompileCase(CompileCtx& cx, std::unique_ptr<Kernel>* k) { return CompileBranches(cx, false, k); }

// chlo.scan(%inputs...) inits(%inits...) dimension=d [attributes {is_reverse = true}] { body }: for each
// position t along d (descending when reversed) the body takes the inputs' slices at t and the carries and
// returns the outputs' slices at t and the new carries; the results are the stacked outputs, then the
// final carries. Like a while loop's, a copy that takes a value out of the memory space a move put it in
// (an input or init moved before the scan, an output or carry the body moved) is a transfer (CopyValue).
class ScanKernel final : public Kernel {
 public:
  struct Geometry {
    int64_t outer = 1, len = 0, inner = 1;
  };
  ScanKernel(const Body* body, std::vector<uint32_t> ins, std::vector<uint32_t> inits, std::vector<uint32_t> outs,
             std::vector<uint32_t> slices, std::vector<uint32_t> carry_a, std::vector<uint32_t> carry_b,
             std::vector<size_t> esize, std::vector<size_t> carry_bytes, Geometry g, bool reverse)
      : body_(body),
        ins_(std::move(ins)),
        inits_(std::move(inits)),
        outs_(std::move(outs)),
        slices_(std::move(slices)),
        a_(std::move(carry_a)),
        b_(std::move(carry_b)),
        esize_(std::move(esize)),
        carry_bytes_(std::move(carry_bytes)),
        g_(g),
        reverse_(reverse) {}
  // Per input, output, init and carry: whether copying it takes it out of a move's memory space (a slice is
  // copied as one transfer per contiguous row: one when the scan dimension is the outermost).
  struct Crossings {
    std::vector<bool> in, out, init, carry;
  };
  void SetCrossings(Crossings c) { crosses_ = std::move(c); }

  Status Run(Frame& f) const override {
    const size_t n = ins_.size(), m = inits_.size();
    for (size_t j = 0; j < m; ++j) CopyValue(f, f.slots[a_[j]], f.slots[inits_[j]], carry_bytes_[j], crosses_.init[j]);
    const std::vector<uint32_t>* cur = &a_;
    const std::vector<uint32_t>* next = &b_;
    for (int64_t s = 0; s < g_.len; ++s) {
      const int64_t t = reverse_ ? g_.len - 1 - s : s;
      for (size_t k = 0; k < n; ++k) {
        const size_t row = g_.inner * esize_[k];
        for (int64_t o = 0; o < g_.outer; ++o)
          CopyValue(f, f.slots[slices_[k]] + o * row, f.slots[ins_[k]] + (o * g_.len + t) * row, row, crosses_.in[k]);
        f.slots[body_->arg_slots[k]] = f.slots[slices_[k]];
      }
      for (size_t j = 0; j < m; ++j) f.slots[body_->arg_slots[n + j]] = f.slots[(*cur)[j]];
      NEURONMEM_RETURN_IF_ERROR(RunBody(*body_, f));
      for (size_t k = 0; k < n; ++k) {
        const size_t row = g_.inner * esize_[k];
        for (int64_t o = 0; o < g_.outer; ++o)
          CopyValue(f, f.slots[outs_[k]] + (o * g_.len + t) * row, f.slots[body_->result_slots[k]] + o * row, row,
                    crosses_.out[k]);
      }
      for (size_t j = 0; j < m; ++j)
        CopyValue(f, f.slots[(*next)[j]], f.slots[body_->result_slots[n + j]], carry_bytes_[j], crosses_.carry[j]);
      std::swap(cur, next);
    }
    for (size_t j = 0; j < m; ++j) std::memmove(f.slots[outs_[n + j]], f.slots[(*cur)[j]], carry_bytes_[j]);
    return Status();
  }

 private:
  const Body* body_;
  std::vector<uint32_t> ins_, inits_, outs_, slices_, a_, b_;
  std::vector<size_t> esize_, carry_bytes_;
  Geometry g_;
  bool reverse_;
  Crossings crosses_;
};

Status CompileScan(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  // The number of scanned inputs: operandSegmentSizes (the parser derives it from the pretty `scan(...)
  // inits(...)` too).
  std::vector<int64_t> segments;
  if (!cx.IntList("operandSegmentSizes", &segments) || segments.size() != 2 || segments[0] < 0)
    return cx.Invalid("cannot read the scanned inputs (operandSegmentSizes)");
  const size_t n = static_cast<size_t>(segments[0]);
  const size_t total = cx.num_inputs();
  if (n == 0 || n > total || cx.num_outputs() != total) return cx.Invalid("expected inputs, inits and as many results");
  const size_t m = total - n;
  int64_t dim = -1;
  if (!cx.Int("dimension", &dim)) return cx.Invalid("missing dimension");
  bool reverse = false;
  cx.Bool("is_reverse", &reverse);
  const Slot in0 = cx.in_slot(0);
  const int64_t rank = static_cast<int64_t>(in0.dims.size());
  if (dim < 0 || dim >= rank) return cx.Invalid("dimension out of range");
  ScanKernel::Geometry g;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < dim) g.outer *= in0.dims[d];
    if (d > dim) g.inner *= in0.dims[d];
  }
  g.len = in0.dims[dim];
  std::vector<int64_t> slice_dims = in0.dims;
  slice_dims.erase(slice_dims.begin() + dim);
  const Body* body = nullptr;
  NEURONMEM_RETURN_IF_ERROR(cx.CompileRegion(0, &body));
  if (body->arg_slots.size() != total || body->result_slots.size() != total)
    return cx.Invalid("the body must take and return %zu values", total);
  std::vector<uint32_t> ins, inits, outs, slices, carry_a, carry_b;
  std::vector<size_t> esize, carry_bytes;
  for (size_t i = 0; i < total; ++i) {
    const Slot& in = cx.in_slot(i);
    const Slot& out = cx.out_slot(i);
    const Slot& arg = cx.slot(body->arg_slots[i]);
    const Slot& res = cx.slot(body->result_slots[i]);
    // Quantized carries and slices: the body's ops run on quantized values as everywhere else.
    if (!SameQuant(in.quant, out.quant) || !SameQuant(in.quant, arg.quant) || !SameQuant(in.quant, res.quant))
      return cx.Invalid("operand, result, body argument and body result %zu must share the quantization", i);
    if (out.type != in.type || out.dims != in.dims)
      return cx.Invalid("result %zu must have the type of operand %zu", i, i);
    if (i < n) {
      if (in.dims != in0.dims) return cx.Invalid("scanned inputs must have the same shape");
      if (arg.type != in.type || arg.dims != slice_dims || res.type != in.type || res.dims != slice_dims)
        return cx.Invalid("body argument and result %zu must be slices of input %zu", i, i);
      ins.push_back(cx.in(i));
      slices.push_back(cx.AddScratch(in.type, slice_dims));
      esize.push_back(ElementByteSize(in.type));
    } else {
      if (arg.type != in.type || arg.dims != in.dims || res.type != in.type || res.dims != in.dims)
        return cx.Invalid("body argument and result %zu must have the type of init %zu", i, i - n);
      inits.push_back(cx.in(i));
      carry_a.push_back(cx.AddScratch(in.type, in.dims));
      carry_b.push_back(cx.AddScratch(in.type, in.dims));
      carry_bytes.push_back(in.bytes);
    }
    outs.push_back(cx.out(i));
  }
  ScanKernel::Crossings crosses;
  for (size_t i = 0; i < n; ++i) {
    crosses.in.push_back(CrossesSpaces(cx.slot(ins[i]), cx.slot(slices[i])));
    crosses.out.push_back(CrossesSpaces(cx.slot(body->result_slots[i]), cx.slot(outs[i])));
  }
  for (size_t j = 0; j < m; ++j) {
    crosses.init.push_back(CrossesSpaces(cx.slot(inits[j]), cx.slot(carry_a[j])));
    crosses.carry.push_back(CrossesSpaces(cx.slot(body->result_slots[n + j]), cx.slot(carry_a[j])));
  }
  auto kernel = std::make_unique<ScanKernel>(body, std::move(ins), std::move(inits), std::move(outs), std::move(slices),
                                             std::move(carry_a), std::move(carry_b), std::move(esize),
                                             std::move(carry_bytes), g, reverse);
  kernel->SetCrossings(std::move(crosses));
  *k = std::move(kernel);
  return Ok();
}

// sdy.named_computation, and sdy.manual_computation whose body sees whole values (manual_computation.cc): the
// body runs on the operands as they are (its arguments alias them) and its results are copied into the op's.
class InlineRegionKernel final : public Kernel {
 public:
  InlineRegionKernel(const Body* body, std::vector<uint32_t> ins, std::vector<uint32_t> outs, std::vector<size_t> bytes)
      : body_(body), ins_(std::move(ins)), outs_(std::move(outs)), bytes_(std::move(bytes)) {}
  Status Run(Frame& f) const override {
    for (size_t i = 0; i < ins_.size(); ++i) f.slots[body_->arg_slots[i]] = f.slots[ins_[i]];
    NEURONMEM_RETURN_IF_ERROR(RunBody(*body_, f));
    for (size_t i = 0; i < outs_.size(); ++i)
      if (f.slots[outs_[i]] != f.slots[body_->result_slots[i]])
        std::memmove(f.slots[outs_[i]], f.slots[body_->result_slots[i]], bytes_[i]);
    return Status();
  }

 private:
  const Body* body_;
  std::vector<uint32_t> ins_, outs_;
  std::vector<size_t> bytes_;
};

}  // namespace

Status CompileInlineRegion(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.op().regions.size() != 1) return cx.Invalid("expected one region");
  const Body* body = nullptr;
  NEURONMEM_RETURN_IF_ERROR(cx.CompileRegion(0, &body));
  if (body->arg_slots.size() != cx.num_inputs() || body->result_slots.size() != cx.num_outputs())
    return cx.Invalid("the body takes %zu values and returns %zu; the op has %zu operands and %zu results",
                      body->arg_slots.size(), body->result_slots.size(), cx.num_inputs(), cx.num_outputs());
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    if (!SameValueType(cx.slot(body->arg_slots[i]), cx.in_slot(i)))
      return cx.Invalid("body argument %zu is typed differently from operand %zu, and no manual axis splits it", i, i);
  }
  std::vector<uint32_t> ins, outs;
  std::vector<size_t> bytes;
  for (size_t i = 0; i < cx.num_outputs(); ++i) {
    if (!SameValueType(cx.slot(body->result_slots[i]), cx.out_slot(i)))
      return cx.Invalid("body result %zu is typed differently from result %zu, and no manual axis splits it", i, i);
    outs.push_back(cx.out(i));
    bytes.push_back(cx.out_slot(i).bytes);
  }
  for (size_t i = 0; i < cx.num_inputs(); ++i) ins.push_back(cx.in(i));
  *k = std::make_unique<InlineRegionKernel>(body, std::move(ins), std::move(outs), std::move(bytes));
  return Ok();
}

namespace {

// Sharding annotations on one core: the value itself (no kernel).
Status CompileShardingIdentity(CompileCtx& cx, std::unique_ptr<Kernel>*) {
  if (cx.num_inputs() != cx.num_outputs()) return cx.Invalid("expected as many results as operands");
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    if (!SameValueType(cx.in_slot(i), cx.out_slot(i))) return cx.Invalid("result %zu differs from operand %zu", i, i);
    cx.AliasOutput(i, cx.in(i));
  }
  return Ok();
}

// Tokens carry no data: after_all and create_token only define them.
Status CompileToken(CompileCtx&, std::unique_ptr<Kernel>*) { return Ok(); }

}  // namespace

void RegisterControlOps(OpTable* r) {
  auto& m = *r;
  m["func.call"] = CompileCall;
  m["call"] = CompileCall;
  m["stablehlo.while"] = CompileWhile;
  m["stablehlo.if"] = CompileIf;
  m["stablehlo.case"] = CompileCase;
  m["chlo.scan"] = CompileScan;
  m["sdy.named_computation"] = CompileInlineRegion;
  m["sdy.sharding_constraint"] = CompileShardingIdentity;
  m["sdy.reshard"] = CompileShardingIdentity;
  m["sdy.propagation_barrier"] = CompileShardingIdentity;
  m["stablehlo.after_all"] = CompileToken;
  m["stablehlo.create_token"] = CompileToken;
}

}  // namespace neuronmem::interp
