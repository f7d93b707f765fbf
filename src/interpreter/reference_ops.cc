// The StableHLO reference interpreter's own test ops, which its interpret/ suites use (accepted only with
// CompileOptions::reference_test_ops, as the conformance runner sets it):
//   - interpreter.run_parallel: runs `programs` (a replicas x partitions array of functions) as the
//     processes of a ProcessGrid, one std::thread each, with the operands split among them in process
//     order and their results concatenated. Host transfers go through the grid's channels and infeed pops
//     the next function of `infeed` and returns its value, as in the reference interpreter; outfeed values
//     are kept for the run.
//   - interpreter.probe: records its operand under `probe_id` (in memory, per run) and returns it.
//   - check.expect_serialized_eq: compares a value with the `iter`-th record of `probe_id`.
#include <cinttypes>
#include <string>
#include <vector>

#include "interpreter/checks.h"
#include "interpreter/program.h"
#include "interpreter/run_state.h"

namespace neuronmem::interp {

void ProbeStore::Add(std::string_view id, const TensorView& v) {
  Probe p;
  p.id = std::string(id);
  p.type = v.type;
  p.dims.assign(v.dims, v.dims + v.rank);
  const char* d = static_cast<const char*>(v.data);
  p.data.assign(d, d + v.Bytes());
  std::lock_guard<std::mutex> lock(mu_);
  probes_.push_back(std::move(p));
}

bool ProbeStore::Find(std::string_view id, int64_t iteration, Probe* out, size_t* count) const {
  std::lock_guard<std::mutex> lock(mu_);
  *count = 0;
  bool found = false;
  for (const Probe& p : probes_) {
    if (p.id != id) continue;
    if (static_cast<int64_t>(*count) == iteration) {
      *out = p;
      found = true;
    }
    ++*count;
  }
  return found;
}

namespace {

Status RequireReferenceOps(CompileCtx& cx) {
  if (cx.state()->reference_test_ops) return Ok();
  return cx.Unsupported("a test op of StableHLO's reference interpreter (only the conformance runner accepts it)");
}

std::string OpLocation(const Frame& f, const stablehlo::Operation& op) {
  return FormatLocation(f.state->filename, op) + ": '" + std::string(op.name) + "'";
}

// ---- interpreter.run_parallel ---------------------------------------------------------------------------

// The host of a run_parallel's processes, as in the reference interpreter: host transfers travel on the
// grid's channels (a send with is_host_transfer reaches whichever process receives on its channel next),
// infeed evaluates the next function of the `infeed` list, outfeed values are collected.
class ReferenceHost final : public HostTransfers {
 public:
  ReferenceHost(ProcessGrid* grid, const std::vector<const Function*>* infeed, const ProgramState* state, void* context)
      : grid_(grid), infeed_(infeed), state_(state), context_(context) {}

  Status Send(const HostCall& call, const TensorView* data, size_t n) override {
    return grid_->Send(call.process, call.site, -1, data, n);
  }
  Status Recv(const HostCall& call, const TensorView* results, size_t n) override {
    return grid_->Recv(call.process, call.site, -1, results, n);
  }
  Status Infeed(const HostCall& call, const TensorView* results, size_t n) override {
    const Function* fn = nullptr;
    size_t index = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = next_infeed_;
      if (index < infeed_->size()) fn = (*infeed_)[next_infeed_++];
    }
    const std::string where = std::string(call.site.location) + ": '" + std::string(call.site.op) + "'";
    if (!fn)
      return FailedPrecondition("%s: process %s reads infeed entry %zu, but run_parallel's infeed lists %zu",
                                where.c_str(), grid_->Name(call.process).c_str(), index + 1, infeed_->size());
    const Slot& r = fn->slots[fn->body.result_slots[0]];
    if (n != 1 || results[0].type != r.type || results[0].rank != r.dims.size() ||
        !std::equal(r.dims.begin(), r.dims.end(), results[0].dims))
      return FailedPrecondition("%s: infeed entry @%s does not give the %zu values the op reads", where.c_str(),
                                fn->name.c_str(), n);
    RunState host;  // the infeed function runs as host code: a process of its own
    char* out = static_cast<char*>(results[0].data);
    return Annotate(RunStandalone(*fn, state_, &host, context_, nullptr, &out), where + ": infeed @" + fn->name);
  }
  Status Outfeed(const HostCall& call, const TensorView* data, size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < n; ++i) {
      ProbeStore::Probe v;
      v.id = grid_->Name(call.process);
      v.type = data[i].type;
      v.dims.assign(data[i].dims, data[i].dims + data[i].rank);
      const char* d = static_cast<const char*>(data[i].data);
      v.data.assign(d, d + data[i].Bytes());
      outfeed_.push_back(std::move(v));
    }
    return Status();
  }

 private:
  ProcessGrid* grid_;
  const std::vector<const Function*>* infeed_;
  const ProgramState* state_;
  void* context_;
  std::mutex mu_;
  size_t next_infeed_ = 0;
  std::vector<ProbeStore::Probe> outfeed_;
};

class RunParallelKernel final : public Kernel {
 public:
  RunParallelKernel(uint32_t replicas, uint32_t partitions, std::vector<const Function*> programs,
                    std::vector<const Function*> infeed, std::vector<uint32_t> ins, std::vector<uint32_t> outs)
      : replicas_(replicas),
        partitions_(partitions),
        programs_(std::move(programs)),
        infeed_(std::move(infeed)),
        ins_(std::move(ins)),
        outs_(std::move(outs)) {
    size_t a = 0, r = 0;
    for (const Function* fn : programs_) {
      arg_begin_.push_back(a);
      result_begin_.push_back(r);
      a += fn->body.arg_slots.size();
      r += fn->body.result_slots.size();
    }
  }

  Status Run(Frame& f) const override {
    ProcessGrid grid(replicas_, partitions_);
    ReferenceHost host(&grid, &infeed_, f.state, f.context);
    ProbeStore* probes = &f.run->probe_store();
    std::vector<char*> slots(ins_.size() + outs_.size());
    for (size_t i = 0; i < ins_.size(); ++i) slots[i] = f.slots[ins_[i]];
    for (size_t i = 0; i < outs_.size(); ++i) slots[ins_.size() + i] = f.slots[outs_[i]];
    const std::vector<Status> st = grid.Run([&](uint32_t k) {
      RunState run;
      run.process.grid = &grid;
      run.process.replica_id = k / partitions_;
      run.process.partition_id = k % partitions_;
      run.process.host = &host;
      run.probes = probes;
      run.interrupt = f.interrupt;
      run.space_memory = f.run->space_memory;
      return RunStandalone(*programs_[k], f.state, &run, f.context, slots.data() + arg_begin_[k],
                           slots.data() + ins_.size() + result_begin_[k]);
    });
    for (uint32_t k = 0; k < st.size(); ++k)
      if (st[k])
        return Annotate(CopyStatus(st[k].get()),
                        OpLocation(f, *op) + ": process " + grid.Name(k) + " (@" + programs_[k]->name + ")");
    return Status();
  }

 private:
  uint32_t replicas_, partitions_;
  std::vector<const Function*> programs_;  // in process order
  std::vector<const Function*> infeed_;
  std::vector<uint32_t> ins_, outs_;
  std::vector<size_t> arg_begin_, result_begin_;
};

Status SymbolList(CompileCtx& cx, const stablehlo::Attribute& a, std::vector<std::string_view>* names) {
  if (a.kind != stablehlo::Attribute::Kind::kArray) return cx.Invalid("expected an array of @functions");
  for (const stablehlo::Attribute& e : a.array) {
    if (e.kind != stablehlo::Attribute::Kind::kSymbol) return cx.Invalid("expected an array of @functions");
    names->push_back(e.str);
  }
  return Ok();
}

Status CompileRunParallel(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  NEURONMEM_RETURN_IF_ERROR(RequireReferenceOps(cx));
  const stablehlo::Attribute* programs = cx.Attr("programs");
  if (!programs || programs->kind != stablehlo::Attribute::Kind::kArray || programs->array.empty())
    return cx.Invalid("`programs` must be a non-empty array of arrays of @functions");
  std::vector<const Function*> fns;
  size_t partitions = 0;
  for (const stablehlo::Attribute& row : programs->array) {
    std::vector<std::string_view> names;
    NEURONMEM_RETURN_IF_ERROR(SymbolList(cx, row, &names));
    if (names.empty() || (partitions && names.size() != partitions))
      return cx.Invalid("every row of `programs` must name the same number (> 0) of functions");
    partitions = names.size();
    for (std::string_view name : names) {
      const Function* fn = nullptr;
      NEURONMEM_RETURN_IF_ERROR(cx.GetFunction(name, &fn));
      fns.push_back(fn);
    }
  }
  std::vector<uint32_t> ins, outs;
  for (size_t i = 0; i < cx.num_inputs(); ++i) ins.push_back(cx.in(i));
  for (size_t i = 0; i < cx.num_outputs(); ++i) outs.push_back(cx.out(i));
  size_t a = 0, r = 0;
  for (const Function* fn : fns) {
    for (uint32_t s : fn->body.arg_slots) {
      if (a >= ins.size()) return cx.Invalid("fewer operands than the programs take");
      const Slot& p = fn->slots[s];
      const Slot& given = cx.slot(ins[a]);
      if (p.type != given.type || p.dims != given.dims)
        return cx.Invalid("operand %zu does not match the parameter of @%s it is for", a, fn->name.c_str());
      ++a;
    }
    for (uint32_t s : fn->body.result_slots) {
      if (r >= outs.size()) return cx.Invalid("fewer results than the programs return");
      const Slot& p = fn->slots[s];
      const Slot& given = cx.slot(outs[r]);
      if (p.type != given.type || p.dims != given.dims)
        return cx.Invalid("result %zu does not match the result of @%s it is from", r, fn->name.c_str());
      ++r;
    }
  }
  if (a != ins.size() || r != outs.size())
    return cx.Invalid("%zu operands and %zu results, but the programs take %zu and return %zu", ins.size(), outs.size(),
                      a, r);
  std::vector<const Function*> infeed;
  if (const stablehlo::Attribute* feed = cx.Attr("infeed")) {
    std::vector<std::string_view> names;
    NEURONMEM_RETURN_IF_ERROR(SymbolList(cx, *feed, &names));
    if (names.empty()) return cx.Invalid("`infeed` is optional but must not be empty");
    for (std::string_view name : names) {
      const Function* fn = nullptr;
      NEURONMEM_RETURN_IF_ERROR(cx.GetFunction(name, &fn));
      if (!fn->body.arg_slots.empty() || fn->body.result_slots.size() != 1)
        return cx.Invalid("infeed function @%s must take nothing and return one tensor", fn->name.c_str());
      infeed.push_back(fn);
    }
  }
  *k = std::make_unique<RunParallelKernel>(static_cast<uint32_t>(programs->array.size()),
                                           static_cast<uint32_t>(partitions), std::move(fns), std::move(infeed),
                                           std::move(ins), std::move(outs));
  return Ok();
}

// ---- interpreter.probe / check.expect_serialized_eq ------------------------------------------------------

Status ProbeId(CompileCtx& cx, std::string* id) {
  const stablehlo::Attribute* a = cx.Attr("probe_id");
  if (!a || a->kind != stablehlo::Attribute::Kind::kString) return cx.Invalid("missing the string `probe_id`");
  *id = std::string(a->str);
  return Ok();
}

class ProbeKernel final : public Kernel {
 public:
  ProbeKernel(std::string id, uint32_t in, const Slot& s) : id_(std::move(id)), in_(in), type_(s.type), dims_(s.dims) {}
  Status Run(Frame& f) const override {
    TensorView v;
    v.data = f.slots[in_];
    v.type = type_;
    v.dims = dims_.data();
    v.rank = dims_.size();
    f.run->probe_store().Add(id_, v);
    return Status();
  }

 private:
  std::string id_;
  uint32_t in_;
  ElementType type_;
  std::vector<int64_t> dims_;
};

Status CompileProbe(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  NEURONMEM_RETURN_IF_ERROR(RequireReferenceOps(cx));
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("takes one operand and has one result");
  if (cx.in_slot(0).type != cx.out_slot(0).type || cx.in_slot(0).dims != cx.out_slot(0).dims)
    return cx.Invalid("the result must have the operand's type");
  std::string id;
  NEURONMEM_RETURN_IF_ERROR(ProbeId(cx, &id));
  cx.AliasOutput(0, cx.in(0));
  *k = std::make_unique<ProbeKernel>(std::move(id), cx.in(0), cx.in_slot(0));
  return Ok();
}

class ExpectSerializedKernel final : public Kernel {
 public:
  ExpectSerializedKernel(std::string id, int64_t iter, uint32_t in, const Slot& s)
      : id_(std::move(id)), iter_(iter), in_(in), type_(s.type), dims_(s.dims) {}
  Status Run(Frame& f) const override {
    ProbeStore::Probe p;
    size_t count = 0;
    if (!f.run->probe_store().Find(id_, iter_, &p, &count))
      return FailedPrecondition("%s: probe '%s' has no iteration %" PRId64 " (it recorded %zu values)",
                                OpLocation(f, *op).c_str(), id_.c_str(), iter_, count);
    TensorView actual;
    actual.data = f.slots[in_];
    actual.type = type_;
    actual.dims = dims_.data();
    actual.rank = dims_.size();
    if (p.type != type_ || p.dims != dims_) {
      return FailedPrecondition("%s: probe '%s' iteration %" PRId64 " recorded a %s value of %zu dims, not a %s of %zu",
                                OpLocation(f, *op).c_str(), id_.c_str(), iter_,
                                std::string(ElementTypeName(p.type)).c_str(), p.dims.size(),
                                std::string(ElementTypeName(type_)).c_str(), dims_.size());
    }
    TensorView expected = actual;
    expected.data = p.data.data();
    Status s = CheckValues(actual, expected, CheckKind::kExact);
    if (s)
      return Annotate(std::move(s), OpLocation(f, *op) + ": probe '" + id_ + "' iteration " + std::to_string(iter_));
    return Status();
  }

 private:
  std::string id_;
  int64_t iter_;
  uint32_t in_;
  ElementType type_;
  std::vector<int64_t> dims_;
};

Status CompileExpectSerialized(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  NEURONMEM_RETURN_IF_ERROR(RequireReferenceOps(cx));
  if (cx.num_inputs() != 1 || cx.num_outputs() != 0) return cx.Invalid("takes one operand and has no result");
  std::string id;
  NEURONMEM_RETURN_IF_ERROR(ProbeId(cx, &id));
  int64_t iter = 0;
  if (cx.Attr("iter") && (!cx.Int("iter", &iter) || iter < 0)) return cx.Invalid("`iter` must be an integer >= 0");
  *k = std::make_unique<ExpectSerializedKernel>(std::move(id), iter, cx.in(0), cx.in_slot(0));
  return Ok();
}

}  // namespace

void RegisterReferenceOps(OpTable* r) {
  auto& m = *r;
  m["interpreter.run_parallel"] = CompileRunParallel;
  m["interpreter.probe"] = CompileProbe;
  m["check.expect_serialized_eq"] = CompileExpectSerialized;
}

}  // namespace neuronmem::interp
