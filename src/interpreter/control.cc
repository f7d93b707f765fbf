// Control flow and calls: func.call/call, while, if, case, and the token ops (after_all).
#include "interpreter/program.h"
#include "interpreter/shape.h"

namespace neuronmem::interp {
namespace {

class CallKernel final : public Kernel {
 public:
  CallKernel(const Function* fn, std::vector<uint32_t> args, std::vector<uint32_t> results)
      : fn_(fn), args_(std::move(args)), results_(std::move(results)) {}
  Status Run(Frame& f) const override { return CallFunction(*fn_, f, args_.data(), results_.data()); }

 private:
  const Function* fn_;
  std::vector<uint32_t> args_, results_;
};

Status CompileCall(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::string_view callee = cx.op().callee;
  if (callee.empty()) {
    const stablehlo::Attribute* a = cx.Attr("callee");
    if (a) callee = a->str;
  }
  if (callee.empty()) return cx.Invalid("missing callee");
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
    if (a.type != p.type || a.dims != p.dims)
      return cx.Invalid("argument %zu does not match the callee's parameter", i);
  }
  cx.AddCallee(fn);
  *k = std::make_unique<CallKernel>(fn, std::move(args), std::move(results));
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
  Status Run(Frame& f) const override {
    const size_t n = init_.size();
    for (size_t i = 0; i < n; ++i) std::memmove(f.slots[a_[i]], f.slots[init_[i]], bytes_[i]);
    const std::vector<uint32_t>* cur = &a_;
    const std::vector<uint32_t>* next = &b_;
    for (;;) {
      for (size_t i = 0; i < n; ++i) f.slots[cond_->arg_slots[i]] = f.slots[(*cur)[i]];
      NEURONMEM_RETURN_IF_ERROR(RunBody(*cond_, f));
      if (!*reinterpret_cast<const bool*>(f.slots[cond_->result_slots[0]])) break;
      for (size_t i = 0; i < n; ++i) f.slots[body_->arg_slots[i]] = f.slots[(*cur)[i]];
      NEURONMEM_RETURN_IF_ERROR(RunBody(*body_, f));
      for (size_t i = 0; i < n; ++i) std::memmove(f.slots[(*next)[i]], f.slots[body_->result_slots[i]], bytes_[i]);
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
      cond->result_slots.size() != 1 || cx.slot(cond->result_slots[0]).type != ElementType::kPred)
    return cx.Invalid("cond/body regions do not match the loop's values");
  *k = std::make_unique<WhileKernel>(cond, body, std::move(init), std::move(a), std::move(b), std::move(results),
                                     std::move(bytes));
  return Ok();
}

// if / case: run one branch, copy its results.
class BranchKernel final : public Kernel {
 public:
  BranchKernel(uint32_t selector, bool is_pred, std::vector<const Body*> branches, std::vector<uint32_t> results,
               std::vector<size_t> bytes)
      : selector_(selector),
        is_pred_(is_pred),
        branches_(std::move(branches)),
        results_(std::move(results)),
        bytes_(std::move(bytes)) {}
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
      std::memmove(f.slots[results_[i]], f.slots[body.result_slots[i]], bytes_[i]);
    return Status();
  }

 private:
  uint32_t selector_;
  bool is_pred_;
  std::vector<const Body*> branches_;
  std::vector<uint32_t> results_;
  std::vector<size_t> bytes_;
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
    branches.push_back(b);
  }
  std::vector<uint32_t> results;
  std::vector<size_t> bytes;
  for (size_t i = 0; i < cx.num_outputs(); ++i) {
    results.push_back(cx.out(i));
    bytes.push_back(cx.out_slot(i).bytes);
  }
  *k = std::make_unique<BranchKernel>(cx.in(0), is_if, std::move(branches), std::move(results), std::move(bytes));
  return Ok();
}

Status CompileIf(CompileCtx& cx, std::unique_ptr<Kernel>* k) { return CompileBranches(cx, true, k); }
Status CompileCase(CompileCtx& cx, std::unique_ptr<Kernel>* k) { return CompileBranches(cx, false, k); }

// Tokens carry no data: after_all and create_token only define them.
Status CompileToken(CompileCtx&, std::unique_ptr<Kernel>*) { return Ok(); }

}  // namespace

void RegisterControlOps(std::unordered_map<std::string_view, OpCompileFn>* r) {
  auto& m = *r;
  m["func.call"] = CompileCall;
  m["call"] = CompileCall;
  m["stablehlo.while"] = CompileWhile;
  m["stablehlo.if"] = CompileIf;
  m["stablehlo.case"] = CompileCase;
  m["stablehlo.after_all"] = CompileToken;
  m["stablehlo.create_token"] = CompileToken;
}

}  // namespace neuronmem::interp
