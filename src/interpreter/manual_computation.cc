// sdy.manual_computation over manual axes of more than one device. The mesh (`sdy.mesh @mesh = <["x"=2, "y"=2]>`)
// and the manual axes give the devices (every combination of the manual axes' coordinates, row-major in mesh
// order). Each operand is split along the dims its in_sharding names manual axes for (the first axis of a dim is
// the major one), the body runs once per device on that device's slices, and each result is assembled from the
// devices' results along the dims its out_sharding names; a result replicated over a manual axis is taken from the
// devices at coordinate 0 of that axis.
//
// Two ways to run the devices:
//   - A body that does not communicate runs on the calling thread (one core), device after device, as XLA's CPU
//     backend runs a single-device module that contains one. An operand whose slices are runs of its bytes (split
//     along dim 0) is used in place; other slices are copied into scratch of the body's argument type.
//   - A body that communicates (collectives, partition_id, send/recv, also through called functions) runs its
//     devices at once, device d as process (0, d) of a grid of one replica and one partition per device, each on
//     a core of the embedder's (RunOptions::parallel: the executor's cores) or, without one, on a thread of its
//     own, with the body compiled as a function of its own (CompileRegionFunction) so that each device has its
//     own frames. The collectives' groups and pairs (channel handles and use_global_device_ids, as JAX's
//     shard_map lowers them) name devices of the whole mesh, free axes included: the body is compiled with the
//     mesh's devices (manual_devices.h), which reads them as groups of processes (one per combination of the manual
//     coordinates) and gives partition_id the device at the process's manual coordinates and free coordinates 0.
// A computation whose body sees whole operands and returns whole results (every manual axis of size 1, or nothing
// split, and no communication) runs as an inline region (control.cc).
#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "interpreter/compiler.h"
#include "interpreter/manual_devices.h"
#include "interpreter/process.h"
#include "interpreter/quant.h"
#include "interpreter/run_state.h"

namespace neuronmem::interp {

Status CompileInlineRegion(CompileCtx& cx, std::unique_ptr<Kernel>* k);

namespace {

struct MeshAxis {
  std::string name;
  int64_t size = 0;
};

// A cursor over an attribute's text (Shardy's custom syntax, kept opaque by the parser).
struct Cursor {
  std::string_view s;
  size_t i = 0;
  void Space() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool Accept(char c) {
    Space();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool Peek(char c) {
    Space();
    return i < s.size() && s[i] == c;
  }
  bool String(std::string* out) {
    if (!Accept('"')) return false;
    const size_t end = s.find('"', i);
    if (end == std::string_view::npos) return false;
    *out = std::string(s.substr(i, end - i));
    i = end + 1;
    return true;
  }
  bool Int(int64_t* out) {
    Space();
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i || j - i > 15) return false;
    *out = std::stoll(std::string(s.substr(i, j - i)));
    i = j;
    return true;
  }
};

// `<["x"=2, "y"=4]>` or `<["x"=2], device_ids=[1, 0]>`: the device of each mesh position (row-major), the
// partition that holds its shards (empty: position p is device p).
bool ParseMesh(std::string_view text, std::vector<MeshAxis>* axes, std::vector<int64_t>* device_ids) {
  Cursor c{text};
  if (!c.Accept('<') || !c.Accept('[')) return false;
  if (!c.Accept(']')) {
    do {
      MeshAxis a;
      if (!c.String(&a.name) || !c.Accept('=') || !c.Int(&a.size) || a.size < 1) return false;
      axes->push_back(std::move(a));
    } while (c.Accept(','));
    if (!c.Accept(']')) return false;
  }
  if (!c.Accept(',')) return true;
  c.Space();
  if (text.substr(c.i, 10) != "device_ids") return false;
  c.i += 10;
  if (!c.Accept('=') || !c.Accept('[')) return false;
  if (c.Accept(']')) return true;
  do {
    int64_t id = 0;
    if (!c.Int(&id)) return false;
    device_ids->push_back(id);
  } while (c.Accept(','));
  return c.Accept(']');
}

struct Sharding {
  std::string mesh;
  std::vector<std::vector<std::string>> dims;  // the axes of each dim, major first
};

// `<@mesh, [{"x"}, {"y", ?}p1, {}], replicated={"z"}>`. Sub-axes (`"x":(1)2`) and inline meshes
// (`<mesh<["x"=2]>, ...>`) are refused: false with *unsupported naming what.
bool ParseSharding(std::string_view text, Sharding* out, const char** unsupported) {
  Cursor c{text};
  if (!c.Accept('<')) return false;
  if (!c.Accept('@')) {
    c.Space();
    if (text.substr(c.i, 5) == "mesh<") *unsupported = "a mesh written inline";
    return false;
  }
  const size_t start = c.i;
  while (c.i < text.size() && text[c.i] != ',' && text[c.i] != ' ' && text[c.i] != '>') ++c.i;
  out->mesh = std::string(text.substr(start, c.i - start));
  if (out->mesh.empty() || !c.Accept(',') || !c.Accept('[')) return false;
  if (c.Accept(']')) return true;
  do {
    if (!c.Accept('{')) return false;
    std::vector<std::string> axes;
    if (!c.Accept('}')) {
      do {
        if (c.Accept('?')) continue;
        std::string name;
        if (!c.String(&name)) return false;
        if (c.Peek(':')) {
          *unsupported = "a sub-axis";
          return false;
        }
        axes.push_back(std::move(name));
      } while (c.Accept(','));
      if (!c.Accept('}')) return false;
    }
    if (c.Accept('p')) {
      int64_t priority = 0;
      if (!c.Int(&priority)) return false;
    }
    out->dims.push_back(std::move(axes));
  } while (c.Accept(','));
  return c.Accept(']');
}

// The ops a body may not contain when its instances run one after another: they talk to other devices or ask
// which device runs them.
bool Communicates(std::string_view name) {
  return name == "stablehlo.all_reduce" || name == "stablehlo.all_gather" || name == "stablehlo.reduce_scatter" ||
         name == "stablehlo.all_to_all" || name == "stablehlo.collective_permute" ||
         name == "stablehlo.collective_broadcast" || name == "stablehlo.collective_reduce" ||
         name == "stablehlo.partition_id" || name == "stablehlo.send" || name == "stablehlo.recv";
}

// The first op of `region` (or of a function it calls, transitively) that communicates, or nullptr.
const stablehlo::Operation* FindCommunication(const CompileCtx& cx, const stablehlo::Region& region,
                                              std::set<std::string_view>* seen) {
  for (const stablehlo::Block& b : region.blocks) {
    for (const stablehlo::Operation& op : b.ops) {
      if (Communicates(op.name)) return &op;
      for (const stablehlo::Region& r : op.regions)
        if (const stablehlo::Operation* found = FindCommunication(cx, r, seen)) return found;
      if ((op.name == "func.call" || op.name == "call") && !op.callee.empty() && seen->insert(op.callee).second) {
        if (const stablehlo::Function* f = cx.FindFunction(op.callee))
          if (const stablehlo::Operation* found = FindCommunication(cx, f->body, seen)) return found;
      }
    }
  }
  return nullptr;
}

// One operand or result: the element size and, per dim, the manual axes (indices into the manual list) that
// split it, major first.
struct Split {
  size_t esize = 0;
  std::vector<int64_t> global, local;
  std::vector<std::vector<size_t>> axes;
  std::vector<bool> uses;  // per manual axis: whether it splits this value
  // Every device's slice is one run of the value's bytes (a split of dim 0, or of the first dim above 1, and
  // no other; or a value replicated over the manual axes): an operand's slice is used in place, not copied.
  bool contiguous = false;
};

// Copies the box of `box` dims between a tensor of dims `sd` at offset `so` and one of dims `dd` at `doff`.
void CopyBox(const char* src, const std::vector<int64_t>& sd, const std::vector<int64_t>& so, char* dst,
             const std::vector<int64_t>& dd, const std::vector<int64_t>& doff, const std::vector<int64_t>& box,
             size_t es, size_t level, int64_t sbase, int64_t dbase) {
  const size_t rank = box.size();
  if (rank == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  const int64_t s_index = sbase * sd[level] + so[level];
  const int64_t d_index = dbase * dd[level] + doff[level];
  if (level + 1 == rank) {
    std::memcpy(dst + static_cast<size_t>(d_index) * es, src + static_cast<size_t>(s_index) * es,
                static_cast<size_t>(box[level]) * es);
    return;
  }
  for (int64_t j = 0; j < box[level]; ++j)
    CopyBox(src, sd, so, dst, dd, doff, box, es, level + 1, s_index + j, d_index + j);
}

// What both ways of running a manual computation share: the manual axes and where each device's slices lie.
class ManualKernelBase : public Kernel {
 public:
  explicit ManualKernelBase(std::vector<int64_t> sizes) : sizes_(std::move(sizes)) {
    for (int64_t s : sizes_) devices_ *= s;
  }

 protected:
  // The coordinates of device `d` (row-major over the manual axes in mesh order).
  void Coord(int64_t d, std::vector<int64_t>* coord) const {
    coord->resize(sizes_.size());
    for (size_t a = sizes_.size(), rest = static_cast<size_t>(d); a-- > 0;) {
      (*coord)[a] = static_cast<int64_t>(rest % static_cast<size_t>(sizes_[a]));
      rest /= static_cast<size_t>(sizes_[a]);
    }
  }
  // Where device `coord`'s slice of a value starts.
  std::vector<int64_t> Offsets(const Split& s, const std::vector<int64_t>& coord) const {
    std::vector<int64_t> off(s.local.size(), 0);
    for (size_t d = 0; d < off.size(); ++d) {
      int64_t piece = 0;
      for (size_t a : s.axes[d]) piece = piece * sizes_[a] + coord[a];
      off[d] = piece * s.local[d];
    }
    return off;
  }
  // Where device `coord`'s slice of an operand lies when it is a run of the operand's bytes.
  char* InPlace(const Split& s, char* global, const std::vector<int64_t>& coord) const {
    const std::vector<int64_t> off = Offsets(s, coord);
    int64_t at = 0;
    for (size_t d = 0; d < off.size(); ++d) at = at * s.global[d] + off[d];
    return global + static_cast<size_t>(at) * s.esize;
  }
  // Copies device `coord`'s slice of an operand into `local`.
  void Gather(const Split& s, const char* global, const std::vector<int64_t>& coord, char* local) const {
    if (s.esize == 0) return;
    const std::vector<int64_t> zero(s.local.size(), 0);
    CopyBox(global, s.global, Offsets(s, coord), local, s.local, zero, s.local, s.esize, 0, 0, 0);
  }
  // Copies device `coord`'s result `local` into its place in `global` (a result replicated over a manual axis
  // comes from the devices at coordinate 0 of that axis; the others write nothing).
  void Scatter(const Split& s, const char* local, const std::vector<int64_t>& coord, char* global) const {
    if (s.esize == 0) return;
    for (size_t a = 0; a < coord.size(); ++a)
      if (!s.uses[a] && coord[a] != 0) return;
    const std::vector<int64_t> zero(s.local.size(), 0);
    CopyBox(local, s.local, zero, global, s.global, Offsets(s, coord), s.local, s.esize, 0, 0, 0);
  }

  std::vector<int64_t> sizes_;  // of the manual axes, in mesh order
  int64_t devices_ = 1;
};

// A body that does not communicate, its instances one after another on the calling thread (one core).
class ManualComputationKernel final : public ManualKernelBase {
 public:
  ManualComputationKernel(const Body* body, std::vector<int64_t> sizes, std::vector<uint32_t> ins,
                          std::vector<uint32_t> locals, std::vector<Split> in_splits, std::vector<uint32_t> outs,
                          std::vector<Split> out_splits)
      : ManualKernelBase(std::move(sizes)),
        body_(body),
        ins_(std::move(ins)),
        locals_(std::move(locals)),
        in_splits_(std::move(in_splits)),
        outs_(std::move(outs)),
        out_splits_(std::move(out_splits)) {}

  Status Run(Frame& f) const override {
    std::vector<int64_t> coord;
    for (int64_t d = 0; d < devices_; ++d) {
      Coord(d, &coord);
      for (size_t i = 0; i < ins_.size(); ++i) {
        const Split& s = in_splits_[i];
        if (s.contiguous) {  // the body's argument aliases the slice (as an inline region's aliases the operand)
          f.slots[body_->arg_slots[i]] = InPlace(s, f.slots[ins_[i]], coord);
          continue;
        }
        char* local = f.slots[locals_[i]];
        f.slots[body_->arg_slots[i]] = local;
        Gather(s, f.slots[ins_[i]], coord, local);
      }
      NEURONMEM_RETURN_IF_ERROR(RunBody(*body_, f));
      for (size_t i = 0; i < outs_.size(); ++i)
        Scatter(out_splits_[i], f.slots[body_->result_slots[i]], coord, f.slots[outs_[i]]);
    }
    return Status();
  }

 private:
  const Body* body_;
  std::vector<uint32_t> ins_, locals_;
  std::vector<Split> in_splits_;
  std::vector<uint32_t> outs_;
  std::vector<Split> out_splits_;
};

// A body compiled as a function of its own (CompileRegionFunction, or the called body of Shardy's exported form).
// A body that communicates runs its instances at once, device d as process (0, d) of a grid of its own (one
// replica, one partition per device; the body's collectives and partition_id were compiled to name processes,
// manual_devices.h): through RunOptions::parallel when the run has it (the executor's cores; each
// device's slices, results and frames in the scratch it gives), else each on its own thread (ProcessGrid::Run,
// scratch and frames on the heap); one that does not communicate runs them one after another on the calling
// thread. Each instance has frames of its own. Each device's operand slices that are not runs of the operand's
// bytes and its results lie in scratch; each device writes its results into place itself (the boxes are
// disjoint).
// The host hook of a computation's devices: a device's host transfers (send/recv with is_host_transfer, infeed,
// outfeed) are those of the run that runs the computation, so the run's hook sees the run's process (`process`,
// the run's index in its grid), not the device's index in the computation's own grid (an executor's launch keeps
// its per-process state, statistics and device ids by that index). Nested computations forward it outward.
class RunsHost final : public HostTransfers {
 public:
  RunsHost(HostTransfers* host, uint32_t process) : host_(host), process_(process) {}
  Status Send(const HostCall& call, const TensorView* data, size_t n) override {
    return host_->Send(Runs(call), data, n);
  }
  Status Recv(const HostCall& call, const TensorView* results, size_t n) override {
    return host_->Recv(Runs(call), results, n);
  }
  Status Infeed(const HostCall& call, const TensorView* results, size_t n) override {
    return host_->Infeed(Runs(call), results, n);
  }
  Status Outfeed(const HostCall& call, const TensorView* data, size_t n) override {
    return host_->Outfeed(Runs(call), data, n);
  }

 private:
  HostCall Runs(const HostCall& call) const {
    HostCall c = call;
    c.process = process_;
    return c;
  }
  HostTransfers* host_;
  uint32_t process_;
};

class FunctionManualKernel final : public ManualKernelBase {
 public:
  FunctionManualKernel(const Function* body, bool concurrent, std::vector<int64_t> sizes,
                       std::vector<uint32_t> partition, std::vector<uint32_t> ins, std::vector<Split> in_splits,
                       std::vector<uint32_t> outs, std::vector<Split> out_splits, std::vector<size_t> local_bytes)
      : ManualKernelBase(std::move(sizes)),
        body_(body),
        concurrent_(concurrent),
        device_of_(partition.size()),
        ins_(std::move(ins)),
        in_splits_(std::move(in_splits)),
        outs_(std::move(outs)),
        out_splits_(std::move(out_splits)) {
    for (size_t i = 0; i < local_bytes.size(); ++i) {  // operands' scratch (0 for those used in place), results'
      scratch_offset_.push_back(per_device_);
      per_device_ += AlignUp(local_bytes[i]);
    }
    for (size_t d = 0; d < partition.size(); ++d) device_of_[partition[d]] = static_cast<uint32_t>(d);
    partition_of_ = std::move(partition);
    frame_bytes_ = AlignUp(StandaloneFrameBytes(*body_));
  }

  Status Run(Frame& f) const override {
    if (concurrent_ && frame_bytes_ && f.run && f.run->parallel && f.run->parallel->run)
      return RunOnCores(f, *f.run->parallel);
    Workspace scratch;
    const size_t copies = concurrent_ ? static_cast<size_t>(devices_) : 1;  // one after another: one is reused
    char* mem = scratch.Reserve(per_device_ * copies);
    if (!mem && per_device_)
      return ResourceExhausted("%s: '%.*s': out of memory for the %lld devices' slices",
                               FormatLocation(f.state->filename, *op).c_str(), static_cast<int>(op->name.size()),
                               op->name.data(), static_cast<long long>(devices_));
    if (!concurrent_) {
      for (int64_t d = 0; d < devices_; ++d) {
        Status s = RunDevice(f, static_cast<uint32_t>(d), mem, f.run);
        if (s) return Failed(f, std::move(s), static_cast<uint32_t>(d));
      }
      return Status();
    }
    ProcessGrid grid(1, static_cast<uint32_t>(devices_));
    HostTransfers* parent = f.run ? f.run->process.host : nullptr;
    RunsHost host(parent, f.run ? f.run->self() : 0);
    Concurrent at{this, &f, &grid, parent ? &host : nullptr, f.run ? &f.run->probe_store() : nullptr};
    const std::vector<Status> st = grid.Run([&](uint32_t p) -> Status {
      const uint32_t d = device_of_[p];
      return RunProcess(at, d, mem + per_device_ * d, nullptr);
    });
    return Report(f, [&](uint32_t d) { return CopyStatus(st[partition_of_[d]].get()); });
  }

 private:
  // What the devices of one concurrent run share.
  struct Concurrent {
    const FunctionManualKernel* kernel;
    Frame* f;
    ProcessGrid* grid;
    HostTransfers* host;
    ProbeStore* probes;
  };
  // Device d as process partition_of_[d] of at.grid, its scratch at `own` and its frames at `frames` (nullptr:
  // host memory of its own).
  Status RunProcess(const Concurrent& at, uint32_t d, char* own, char* frames) const {
    RunState run;
    run.process.grid = at.grid;
    run.process.partition_id = partition_of_[d];
    run.process.host = at.host;
    run.probes = at.probes;
    run.interrupt = at.f->interrupt;
    run.parallel = at.f->run ? at.f->run->parallel : nullptr;
    run.space_memory = at.f->run ? at.f->run->space_memory : nullptr;
    return RunDevice(*at.f, d, own, &run, frames);
  }
  // The devices on the embedder's cores (RunOptions::parallel): each device's scratch (its slices, its results,
  // then its frames) is the hook's, device k runs process partition_of_[k], and ends it in the grid itself.
  Status RunOnCores(Frame& f, const Program::RunOptions::Parallel& parallel) const {
    ProcessGrid grid(1, static_cast<uint32_t>(devices_));
    RunsHost host(f.run->process.host, f.run->self());
    Concurrent at{this, &f, &grid, f.run->process.host ? &host : nullptr, &f.run->probe_store()};
    parallel.run(parallel.context, static_cast<size_t>(devices_), per_device_ + frame_bytes_, &DeviceTask, &at);
    return Report(f, [&](uint32_t d) { return grid.FinalStatus(partition_of_[d]); });
  }
  // The run's status from each device's (status_of(d)): the first device that failed on its own (a cancel, a
  // failed op) before the first that failed waiting for a peer that had ended (FAILED_PRECONDITION), so that
  // the status names the cause.
  template <class StatusOf>
  Status Report(const Frame& f, const StatusOf& status_of) const {
    Status waited;
    uint32_t waited_device = 0;
    for (uint32_t d = 0; d < static_cast<uint32_t>(devices_); ++d) {
      Status s = status_of(d);
      if (!s) continue;
      if (s->code != NEURONMEM_STATUS_FAILED_PRECONDITION) return Failed(f, std::move(s), d);
      if (!waited) {
        waited = std::move(s);
        waited_device = d;
      }
    }
    return waited ? Failed(f, std::move(waited), waited_device) : Status();
  }
  static void DeviceTask(void* arg, size_t k, char* scratch, Status start) {
    const Concurrent& at = *static_cast<const Concurrent*>(arg);
    const FunctionManualKernel& self = *at.kernel;
    const uint32_t d = static_cast<uint32_t>(k);
    Status s = std::move(start);
    if (!s) {
      try {
        s = self.RunProcess(at, d, scratch, scratch + self.per_device_);
      } catch (const std::exception& e) {
        s = Internal("device %u: %s", d, e.what());
      }
    }
    at.grid->Finish(self.partition_of_[d], std::move(s)).IgnoreError();  // kept as its final status
  }
  // Device d's instance, its scratch at `own`, as a process of `run`.
  Status RunDevice(Frame& f, uint32_t d, char* own, RunState* run, char* frames = nullptr) const {
    std::vector<int64_t> coord;
    Coord(d, &coord);
    std::vector<char*> args(ins_.size()), results(outs_.size());
    for (size_t i = 0; i < ins_.size(); ++i) {
      const Split& s = in_splits_[i];
      if (s.contiguous) {
        args[i] = InPlace(s, f.slots[ins_[i]], coord);
        continue;
      }
      args[i] = own + scratch_offset_[i];
      Gather(s, f.slots[ins_[i]], coord, args[i]);
    }
    for (size_t i = 0; i < outs_.size(); ++i) results[i] = own + scratch_offset_[ins_.size() + i];
    NEURONMEM_RETURN_IF_ERROR(RunStandalone(*body_, f.state, run, f.context, args.data(), results.data(), frames));
    for (size_t i = 0; i < outs_.size(); ++i) Scatter(out_splits_[i], results[i], coord, f.slots[outs_[i]]);
    return Status();
  }
  Status Failed(const Frame& f, Status s, uint32_t d) const {
    return Annotate(std::move(s), FormatLocation(f.state->filename, *op) + ": '" + std::string(op->name) +
                                      "' on device " + std::to_string(d));
  }

  const Function* body_;
  bool concurrent_;
  std::vector<uint32_t> device_of_;     // per partition (process), the device (mesh position) it runs
  std::vector<uint32_t> partition_of_;  // per device, its partition (process)
  size_t frame_bytes_ = 0;              // of a device's frames in the hook's scratch (0: they need other spaces)
  std::vector<uint32_t> ins_;
  std::vector<Split> in_splits_;
  std::vector<uint32_t> outs_;
  std::vector<Split> out_splits_;
  std::vector<size_t> scratch_offset_;  // per operand, then per result: in a device's scratch
  size_t per_device_ = 0;
};

std::string TypeText(const Slot& s) {
  std::string t = "tensor<";
  for (int64_t d : s.dims) t += std::to_string(d) + "x";
  t += ElementTypeName(s.type);
  return t + ">";
}

// Reads one value's sharding and checks the global type against the local one.
Status ReadSplit(CompileCtx& cx, const char* what, size_t i, const Sharding& sh, const std::vector<std::string>& manual,
                 const std::vector<int64_t>& sizes, const Slot& global, const Slot& local, Split* out) {
  if (sh.dims.size() != global.dims.size() || local.dims.size() != global.dims.size() || local.type != global.type)
    return cx.Invalid("%s %zu: the sharding names %zu dims for %s, and the body's value is %s", what, i, sh.dims.size(),
                      TypeText(global).c_str(), TypeText(local).c_str());
  out->global = global.dims;
  out->local = local.dims;
  out->axes.resize(global.dims.size());
  out->uses.assign(manual.size(), false);
  for (size_t d = 0; d < sh.dims.size(); ++d) {
    int64_t factor = 1;
    for (const std::string& axis : sh.dims[d]) {
      size_t a = 0;
      while (a < manual.size() && manual[a] != axis) ++a;
      if (a == manual.size()) continue;  // a free axis: the body still sees the dim whole
      if (out->uses[a])
        return cx.Invalid("the %s sharding of value %zu names axis \"%s\" twice", what, i, axis.c_str());
      out->uses[a] = true;
      out->axes[d].push_back(a);
      factor *= sizes[a];
    }
    if (global.dims[d] < 0 || local.dims[d] * factor != global.dims[d])
      return cx.Invalid("%s %zu: %s split %lld ways along dim %zu is not the body's %s", what, i,
                        TypeText(global).c_str(), static_cast<long long>(factor), d, TypeText(local).c_str());
  }
  size_t first_split = global.dims.size();
  for (size_t d = 0; d < global.dims.size() && first_split == global.dims.size(); ++d)
    if (local.dims[d] != global.dims[d]) first_split = d;
  out->contiguous = true;  // dims before the first split one of size 1, those after it whole
  for (size_t d = 0; d < global.dims.size(); ++d)
    if (d < first_split ? global.dims[d] != 1 : d > first_split && local.dims[d] != global.dims[d])
      out->contiguous = false;
  if (global.count == 0) return Ok();  // nothing to copy (esize stays 0)
  if (global.bytes % static_cast<size_t>(global.count) != 0 || global.bytes / static_cast<size_t>(global.count) == 0)
    return cx.Unsupported("%s %zu: elements of %s are packed below a byte; slicing them is not supported", what, i,
                          TypeText(global).c_str());
  out->esize = global.bytes / static_cast<size_t>(global.count);
  return Ok();
}

// The mesh of a manual computation and its manual axes, read and checked against the values' shardings.
struct ManualAxes {
  std::string mesh_name;
  std::vector<MeshAxis> mesh;
  std::vector<int64_t> device_ids;  // the mesh's (empty: none)
  std::vector<std::string> manual;  // in mesh order
  std::vector<int64_t> sizes;       // of the manual axes
  int64_t devices = 1;
};

// Reads each value's sharding (texts[i]: operands first, then results; ok[i]: the attribute is one at all).
Status ReadShardings(CompileCtx& cx, const std::vector<std::string_view>& texts, const std::vector<bool>& ok,
                     size_t num_inputs, std::vector<Sharding>* shardings) {
  for (size_t i = 0; i < texts.size(); ++i) {
    const bool in = i < num_inputs;
    const size_t j = in ? i : i - num_inputs;
    Sharding sh;
    const char* unsupported = nullptr;
    if (!ok[i] || !ParseSharding(texts[i], &sh, &unsupported)) {
      if (unsupported)
        return cx.Unsupported("the sharding of %s %zu has %s, which is not supported: %.*s", in ? "operand" : "result",
                              j, unsupported, static_cast<int>(texts[i].size()), texts[i].data());
      return cx.Invalid("the sharding of %s %zu is not a sharding: %.*s", in ? "operand" : "result", j,
                        static_cast<int>(texts[i].size()), texts[i].data());
    }
    if (!shardings->empty() && sh.mesh != (*shardings)[0].mesh)
      return cx.Unsupported("the sharding of %s %zu is over mesh @%s, the first value's over @%s",
                            in ? "operand" : "result", j, sh.mesh.c_str(), (*shardings)[0].mesh.c_str());
    shardings->push_back(std::move(sh));
  }
  return Ok();
}

// The text of mesh `name`: an `sdy.mesh` op of the module, or (an exported module) an entry of the module's
// `xla.sdy.meshes` frontend attribute (`{mesh = #sdy.mesh<["x"=2]>}`). Empty when neither has it.
std::string_view MeshText(const stablehlo::Module& m, const std::string& name) {
  for (const stablehlo::Operation& op : m.other_ops)
    if (op.name == "sdy.mesh" && op.callee == name)
      for (const auto& kv : op.attributes)
        if (kv.first.empty() && kv.second.kind == stablehlo::Attribute::Kind::kOpaque) return kv.second.text;
  const stablehlo::Attribute* fa = stablehlo::Find(m.attributes, "mhlo.frontend_attributes");
  const stablehlo::Attribute* meshes = fa ? fa->Get("xla.sdy.meshes") : nullptr;
  if (!meshes || meshes->kind != stablehlo::Attribute::Kind::kString) return {};
  const std::string_view t = meshes->str;
  for (size_t at = t.find(name); at != std::string_view::npos; at = t.find(name, at + 1)) {
    const bool starts = at > 0 && (t[at - 1] == '{' || t[at - 1] == ' ' || t[at - 1] == ',');
    Cursor c{t, at + name.size()};
    if (!starts || !c.Accept('=')) continue;
    c.Space();
    if (t.substr(c.i, 9) != "#sdy.mesh") continue;
    const size_t open = c.i + 9;
    int depth = 0;
    for (size_t e = open; e < t.size(); ++e) {
      depth += t[e] == '<' ? 1 : t[e] == '>' ? -1 : 0;
      if (depth == 0) return t.substr(open, e + 1 - open);
    }
  }
  return {};
}

// a * b, or `cap` when that is more (or overflows).
int64_t CappedProduct(int64_t a, int64_t b, int64_t cap) {
  int64_t p = 0;
  return __builtin_mul_overflow(a, b, &p) || p > cap ? cap : p;
}

Status ResolveAxes(CompileCtx& cx, const std::set<std::string>& manual_set, const std::vector<Sharding>& shardings,
                   size_t num_inputs, ManualAxes* ax) {
  ax->mesh_name = shardings[0].mesh;
  const std::string_view text = MeshText(cx.module(), ax->mesh_name);
  if (text.empty()) return cx.Invalid("mesh @%s is not declared in the module (sdy.mesh)", ax->mesh_name.c_str());
  if (!ParseMesh(text, &ax->mesh, &ax->device_ids))
    return cx.Unsupported("cannot read the axes of mesh @%s", ax->mesh_name.c_str());
  int64_t positions = 1;
  for (const MeshAxis& a : ax->mesh) positions = CappedProduct(positions, a.size, int64_t{1} << 40);
  std::vector<bool> taken(ax->device_ids.size());
  for (int64_t id : ax->device_ids) {
    const bool fits = static_cast<int64_t>(ax->device_ids.size()) == positions && id >= 0 && id < positions &&
                      !taken[static_cast<size_t>(id)];
    if (!fits)
      return cx.Invalid("the device_ids of mesh @%s are not a permutation of its %lld devices", ax->mesh_name.c_str(),
                        static_cast<long long>(positions));
    taken[static_cast<size_t>(id)] = true;
  }
  for (const MeshAxis& a : ax->mesh) {
    if (!manual_set.count(a.name)) continue;
    ax->manual.push_back(a.name);
    ax->sizes.push_back(a.size);
    ax->devices = CappedProduct(ax->devices, a.size, (int64_t{1} << 20) + 1);
    if (ax->devices > (int64_t{1} << 20)) return cx.Unsupported("the manual axes name more than 2^20 devices");
  }
  const auto in_mesh = [&](const std::string& name) {
    return std::any_of(ax->mesh.begin(), ax->mesh.end(), [&](const MeshAxis& a) { return a.name == name; });
  };
  for (const std::string& axis : manual_set)
    if (!in_mesh(axis))
      return cx.Invalid("manual axis \"%s\" is not an axis of mesh @%s", axis.c_str(), ax->mesh_name.c_str());
  for (size_t i = 0; i < shardings.size(); ++i)
    for (const auto& dim : shardings[i].dims)
      for (const std::string& axis : dim)
        if (!in_mesh(axis))
          return cx.Invalid("the sharding of %s %zu names axis \"%s\", which is not an axis of mesh @%s",
                            i < num_inputs ? "operand" : "result", i < num_inputs ? i : i - num_inputs, axis.c_str(),
                            ax->mesh_name.c_str());
  return Ok();
}

// Compiles a manual computation's body (`compile`). A body that communicates (`comm`, the first such op) runs
// its devices at once, a thread each, and is compiled with the mesh's devices (manual_devices.h): its
// collectives' groups and pairs name devices of the whole mesh, each the process of its manual coordinates.
template <typename CompileFn>
Status CompileBody(CompileCtx& cx, const ManualAxes& ax, const stablehlo::Operation* comm, CompileFn compile) {
  if (!comm) return compile();
  constexpr int64_t kMaxThreads = 4096;  // one thread per device
  if (ax.devices > kMaxThreads)
    return cx.Unsupported(
        "the body contains '%.*s' (line %u:%u), which communicates between devices, and the manual axes name %lld "
        "devices: a body that communicates runs each device on a thread of its own, at most %lld",
        static_cast<int>(comm->name.size()), comm->name.data(), comm->loc.line, comm->loc.column,
        static_cast<long long>(ax.devices), static_cast<long long>(kMaxThreads));
  constexpr int64_t kMaxMesh = int64_t{1} << 16;  // the device map holds a few entries per mesh device
  int64_t mesh_devices = 1;
  std::vector<ManualDevices::Axis> axes;
  for (const MeshAxis& a : ax.mesh) {
    mesh_devices = CappedProduct(mesh_devices, a.size, kMaxMesh + 1);
    const bool manual = std::find(ax.manual.begin(), ax.manual.end(), a.name) != ax.manual.end();
    axes.push_back(ManualDevices::Axis{a.name, a.size, manual});
  }
  if (mesh_devices > kMaxMesh)
    return cx.Unsupported(
        "the body contains '%.*s' (line %u:%u), which communicates between devices, and mesh @%s has more than %lld "
        "devices, the most whose ids its groups may name",
        static_cast<int>(comm->name.size()), comm->name.data(), comm->loc.line, comm->loc.column, ax.mesh_name.c_str(),
        static_cast<long long>(kMaxMesh));
  const ManualDevices devices(ax.mesh_name, std::move(axes), ax.device_ids);
  const ManualDevices* outer = cx.SetManualDevices(&devices);
  Status s = compile();
  cx.SetManualDevices(outer);
  return s;
}

// A manual computation whose body is a function of its own (`body`, compiled by CompileBody): its devices one
// after another on the calling thread, or, when the body communicates (`comm`), at once as the processes of a
// grid of one replica and one partition per device (process d: device d, row-major over the manual axes).
Status CompileFunctionKernel(CompileCtx& cx, const Function* body, const stablehlo::Operation* comm,
                             const ManualAxes& ax, const std::vector<Sharding>& shardings, std::vector<uint32_t> ins,
                             std::vector<uint32_t> outs, std::unique_ptr<Kernel>* k) {
  if (body->body.arg_slots.size() != ins.size() || body->body.result_slots.size() != outs.size())
    return cx.Invalid("the body takes %zu values and returns %zu; the op has %zu operands and %zu results",
                      body->body.arg_slots.size(), body->body.result_slots.size(), ins.size(), outs.size());
  std::vector<Split> in_splits(ins.size()), out_splits(outs.size());
  std::vector<size_t> local_bytes;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Slot& local = body->slots[body->body.arg_slots[i]];
    NEURONMEM_RETURN_IF_ERROR(
        ReadSplit(cx, "operand", i, shardings[i], ax.manual, ax.sizes, cx.slot(ins[i]), local, &in_splits[i]));
    local_bytes.push_back(in_splits[i].contiguous ? 0 : local.bytes);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const Slot& local = body->slots[body->body.result_slots[i]];
    NEURONMEM_RETURN_IF_ERROR(ReadSplit(cx, "result", i, shardings[ins.size() + i], ax.manual, ax.sizes,
                                        cx.slot(outs[i]), local, &out_splits[i]));
    local_bytes.push_back(local.bytes);
  }
  if (comm) cx.RecordConcurrentDevices(ax.devices);
  // The partition of each device: its index (the body's collectives and partition_id were compiled to name the
  // mesh's device ids through it).
  std::vector<uint32_t> partition(static_cast<size_t>(ax.devices));
  for (size_t d = 0; d < partition.size(); ++d) partition[d] = static_cast<uint32_t>(d);
  *k = std::make_unique<FunctionManualKernel>(body, comm != nullptr, ax.sizes, std::move(partition), std::move(ins),
                                              std::move(in_splits), std::move(outs), std::move(out_splits),
                                              std::move(local_bytes));
  return Ok();
}

Status CompileManualComputation(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  const stablehlo::Operation& op = cx.op();
  if (op.regions.size() != 1 || op.regions[0].blocks.size() != 1) return cx.Invalid("expected one region of one block");
  const stablehlo::Attribute* ins_attr = cx.Attr("in_shardings");
  const stablehlo::Attribute* outs_attr = cx.Attr("out_shardings");
  const stablehlo::Attribute* manual_attr = cx.Attr("manual_axes");
  if (!ins_attr || !outs_attr || !manual_attr)
    return cx.Invalid("expected in_shardings, out_shardings and manual_axes");
  if (ins_attr->array.size() != cx.num_inputs() || outs_attr->array.size() != cx.num_outputs())
    return cx.Invalid("%zu in_shardings and %zu out_shardings for %zu operands and %zu results", ins_attr->array.size(),
                      outs_attr->array.size(), cx.num_inputs(), cx.num_outputs());
  std::set<std::string> manual_set;
  for (const auto& kv : manual_attr->dict) manual_set.insert(std::string(kv.first));
  if (manual_set.empty()) return CompileInlineRegion(cx, k);  // nothing manual: the body sees whole values

  if (cx.num_inputs() + cx.num_outputs() == 0) return CompileInlineRegion(cx, k);

  // The mesh: named by the shardings, declared at the top of the module.
  std::vector<std::string_view> texts;
  std::vector<bool> ok;
  for (size_t i = 0; i < cx.num_inputs() + cx.num_outputs(); ++i) {
    const bool in = i < cx.num_inputs();
    const stablehlo::Attribute& a = in ? ins_attr->array[i] : outs_attr->array[i - cx.num_inputs()];
    texts.push_back(a.text);
    ok.push_back(a.kind == stablehlo::Attribute::Kind::kOpaque);
  }
  std::vector<Sharding> shardings;
  NEURONMEM_RETURN_IF_ERROR(ReadShardings(cx, texts, ok, cx.num_inputs(), &shardings));
  ManualAxes ax;
  NEURONMEM_RETURN_IF_ERROR(ResolveAxes(cx, manual_set, shardings, cx.num_inputs(), &ax));
  std::set<std::string_view> seen;
  const stablehlo::Operation* c = FindCommunication(cx, op.regions[0], &seen);
  // One device that does not communicate: the body as a region. One that does still names the mesh's devices.
  if (ax.devices == 1 && !c) return CompileInlineRegion(cx, k);
  if (c) {
    const Function* body = nullptr;
    NEURONMEM_RETURN_IF_ERROR(CompileBody(cx, ax, c, [&] { return cx.CompileRegionFunction(0, &body); }));
    std::vector<uint32_t> ins, outs;
    for (size_t i = 0; i < cx.num_inputs(); ++i) ins.push_back(cx.in(i));
    for (size_t i = 0; i < cx.num_outputs(); ++i) outs.push_back(cx.out(i));
    return CompileFunctionKernel(cx, body, c, ax, shardings, std::move(ins), std::move(outs), k);
  }
  // Nothing split (every value replicated over the manual axes): each device computes the same, once is enough.
  bool splits = false;
  for (const Sharding& sh : shardings)
    for (const auto& dim : sh.dims)
      for (const std::string& axis : dim)
        for (size_t a = 0; a < ax.manual.size(); ++a) splits = splits || (ax.manual[a] == axis && ax.sizes[a] > 1);
  if (!splits) return CompileInlineRegion(cx, k);

  const Body* body = nullptr;
  NEURONMEM_RETURN_IF_ERROR(cx.CompileRegion(0, &body));
  if (body->arg_slots.size() != cx.num_inputs() || body->result_slots.size() != cx.num_outputs())
    return cx.Invalid("the body takes %zu values and returns %zu; the op has %zu operands and %zu results",
                      body->arg_slots.size(), body->result_slots.size(), cx.num_inputs(), cx.num_outputs());
  std::vector<Split> in_splits(cx.num_inputs()), out_splits(cx.num_outputs());
  std::vector<uint32_t> ins, locals, outs;
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    const Slot& local = cx.slot(body->arg_slots[i]);
    NEURONMEM_RETURN_IF_ERROR(
        ReadSplit(cx, "operand", i, shardings[i], ax.manual, ax.sizes, cx.in_slot(i), local, &in_splits[i]));
    ins.push_back(cx.in(i));
    locals.push_back(in_splits[i].contiguous ? UINT32_MAX : cx.AddScratch(local.type, local.dims));
  }
  for (size_t i = 0; i < cx.num_outputs(); ++i) {
    NEURONMEM_RETURN_IF_ERROR(ReadSplit(cx, "result", i, shardings[cx.num_inputs() + i], ax.manual, ax.sizes,
                                        cx.out_slot(i), cx.slot(body->result_slots[i]), &out_splits[i]));
    outs.push_back(cx.out(i));
  }
  *k = std::make_unique<ManualComputationKernel>(body, std::move(ax.sizes), std::move(ins), std::move(locals),
                                                 std::move(in_splits), std::move(outs), std::move(out_splits));
  return Ok();
}

// ---- Shardy's exported form ---------------------------------------------------------------------------------
//
// What XLA's Shardy round trip leaves of an sdy.manual_computation in an exported module:
//   %l = custom_call @xla.sdy.GlobalToLocalShape(%g...) {mhlo.frontend_attributes = {xla.sdy.in_shardings =
//        "#sdy.sharding_per_value<[...]>", xla.sdy.manual_axes = "#sdy<manual_axes{"x"}>"}}
//   %r = call @xla.sdy.manual_computation_body(%l...)
//   %o = custom_call @xla.sdy.LocalToGlobalShape(%r...) {mhlo.frontend_attributes = {xla.sdy.out_shardings = ...}}
// with the mesh in the module's `xla.sdy.meshes` frontend attribute. The three run as one manual computation: the
// first two compile to nothing, the last to the kernel (its operands are %g, read by name).

// Whether `ref` names result i of `def`.
bool NamesResult(const stablehlo::ValueRef& ref, const stablehlo::Operation& def, size_t i) {
  if (!def.result_names.empty())
    return i < def.result_names.size() && ref.name == def.result_names[i] && ref.index == 0;
  return !def.result_name.empty() && ref.name == def.result_name && ref.index == i;
}

// Whether `op` (or an op of its regions) reads a result of `def`.
bool ReadsAny(const stablehlo::Operation& op, const stablehlo::Operation& def) {
  for (const stablehlo::ValueRef& ref : op.operands)
    for (size_t i = 0; i < def.result_types.size(); ++i)
      if (NamesResult(ref, def, i)) return true;
  for (const stablehlo::Region& r : op.regions)
    for (const stablehlo::Block& b : r.blocks)
      for (const stablehlo::Operation& inner : b.ops)
        if (ReadsAny(inner, def)) return true;
  return false;
}

// Whether `user`'s operands are exactly `def`'s results, in order.
bool ReadsExactly(const stablehlo::Operation& user, const stablehlo::Operation& def) {
  if (user.operands.size() != def.result_types.size() || user.operands.empty()) return false;
  for (size_t i = 0; i < user.operands.size(); ++i)
    if (!NamesResult(user.operands[i], def, i)) return false;
  return true;
}

bool IsBodyCall(const stablehlo::Operation& op) {
  return (op.name == "func.call" || op.name == "call") && op.callee.substr(0, 31) == "xla.sdy.manual_computation_body";
}
bool IsTarget(const stablehlo::Operation& op, std::string_view target) {
  return op.name == "stablehlo.custom_call" && op.callee == target;
}

// The round trip around the op at index `at` of `ops` (its GlobalToLocalShape, body call or LocalToGlobalShape):
// false when the op is not part of one, or when a value between the three reaches anything else.
struct RoundTrip {
  const stablehlo::Operation *g2l = nullptr, *call = nullptr, *l2g = nullptr;
};
bool FindRoundTrip(stablehlo::Span<stablehlo::Operation> ops, const stablehlo::Operation* op, RoundTrip* rt) {
  if (op < ops.begin() || op >= ops.end()) return false;
  size_t at = static_cast<size_t>(op - ops.begin());
  // Back to the GlobalToLocalShape.
  if (IsTarget(*op, "xla.sdy.LocalToGlobalShape")) {
    while (at > 0 && !(IsBodyCall(ops[at - 1]) && ReadsExactly(*op, ops[at - 1]))) --at;
    if (at == 0) return false;
    op = &ops[--at];
  }
  if (IsBodyCall(*op)) {
    const stablehlo::Operation* call = op;
    while (at > 0 && !(IsTarget(ops[at - 1], "xla.sdy.GlobalToLocalShape") && ReadsExactly(*call, ops[at - 1]))) --at;
    if (at == 0) return false;
    op = &ops[--at];
  }
  if (!IsTarget(*op, "xla.sdy.GlobalToLocalShape")) return false;
  rt->g2l = op;
  for (size_t j = at + 1; j < ops.size(); ++j) {
    const stablehlo::Operation& o = ops[j];
    if (!rt->call && IsBodyCall(o) && ReadsExactly(o, *rt->g2l)) {
      rt->call = &o;
    } else if (rt->call && !rt->l2g && IsTarget(o, "xla.sdy.LocalToGlobalShape") && ReadsExactly(o, *rt->call)) {
      rt->l2g = &o;
    } else if (ReadsAny(o, *rt->g2l) || (rt->call && ReadsAny(o, *rt->call))) {
      return false;  // a local value read by something else
    }
  }
  return rt->call && rt->l2g;
}

// Parses `#sdy.sharding_per_value<[<@mesh, [...]>, ...]>` into one text per value.
bool SplitPerValue(std::string_view text, std::vector<std::string_view>* values) {
  Cursor c{text};
  c.Space();
  if (text.substr(c.i, 23) != "#sdy.sharding_per_value") return false;
  c.i += 23;
  if (!c.Accept('<') || !c.Accept('[')) return false;
  if (c.Accept(']')) return c.Accept('>');
  do {
    c.Space();
    const size_t start = c.i;
    int depth = 0;
    for (; c.i < text.size(); ++c.i) {
      depth += text[c.i] == '<' ? 1 : text[c.i] == '>' ? -1 : 0;
      if (depth == 0) break;
    }
    if (c.i >= text.size() || text[start] != '<') return false;
    values->push_back(text.substr(start, ++c.i - start));
  } while (c.Accept(','));
  return c.Accept(']') && c.Accept('>');
}

// `#sdy<manual_axes{"x", "y"}>`.
bool ParseManualAxes(std::string_view text, std::set<std::string>* axes) {
  const size_t open = text.find('{');
  if (text.find("manual_axes") == std::string_view::npos || open == std::string_view::npos) return false;
  Cursor c{text, open + 1};
  if (c.Accept('}')) return true;
  do {
    std::string name;
    if (!c.String(&name)) return false;
    axes->insert(std::move(name));
  } while (c.Accept(','));
  return c.Accept('}');
}

// A frontend attribute of `op` as a string ("" when absent).
std::string_view Frontend(const stablehlo::Operation& op, std::string_view key) {
  const stablehlo::Attribute* fa = stablehlo::Find(op.attributes, "mhlo.frontend_attributes");
  const stablehlo::Attribute* a = fa ? fa->Get(key) : nullptr;
  return a && a->kind == stablehlo::Attribute::Kind::kString ? a->str : std::string_view();
}

// The LocalToGlobalShape of a round trip: the whole manual computation.
Status CompileRoundTrip(CompileCtx& cx, const RoundTrip& rt, std::unique_ptr<Kernel>* k) {
  const stablehlo::Operation& g2l = *rt.g2l;
  std::set<std::string> manual_set;
  const std::string_view manual_text = Frontend(g2l, "xla.sdy.manual_axes");
  if (!ParseManualAxes(manual_text, &manual_set))
    return cx.Invalid("@xla.sdy.GlobalToLocalShape (line %u:%u) has no readable xla.sdy.manual_axes: \"%.*s\"",
                      g2l.loc.line, g2l.loc.column, static_cast<int>(manual_text.size()), manual_text.data());
  std::vector<std::string_view> texts;
  const std::string_view ins_text = Frontend(g2l, "xla.sdy.in_shardings");
  const std::string_view outs_text = Frontend(cx.op(), "xla.sdy.out_shardings");
  if (!SplitPerValue(ins_text, &texts) || texts.size() != g2l.operands.size())
    return cx.Invalid(
        "xla.sdy.in_shardings of @xla.sdy.GlobalToLocalShape (line %u:%u) is not a sharding per each of "
        "its %zu operands: \"%.*s\"",
        g2l.loc.line, g2l.loc.column, g2l.operands.size(), static_cast<int>(ins_text.size()), ins_text.data());
  if (!SplitPerValue(outs_text, &texts) || texts.size() != g2l.operands.size() + cx.num_outputs())
    return cx.Invalid("xla.sdy.out_shardings is not a sharding per each of the %zu results: \"%.*s\"", cx.num_outputs(),
                      static_cast<int>(outs_text.size()), outs_text.data());
  std::vector<Sharding> shardings;
  NEURONMEM_RETURN_IF_ERROR(
      ReadShardings(cx, texts, std::vector<bool>(texts.size(), true), g2l.operands.size(), &shardings));
  ManualAxes ax;
  NEURONMEM_RETURN_IF_ERROR(ResolveAxes(cx, manual_set, shardings, g2l.operands.size(), &ax));
  std::set<std::string_view> seen{rt.call->callee};
  const stablehlo::Function* parsed = cx.FindFunction(rt.call->callee);
  const stablehlo::Operation* comm = parsed ? FindCommunication(cx, parsed->body, &seen) : nullptr;
  const Function* body = nullptr;
  NEURONMEM_RETURN_IF_ERROR(CompileBody(cx, ax, comm, [&] { return cx.GetFunction(rt.call->callee, &body); }));
  std::vector<uint32_t> ins, outs;
  for (const stablehlo::ValueRef& ref : g2l.operands) {
    uint32_t slot = 0;
    NEURONMEM_RETURN_IF_ERROR(cx.LookupValue(ref, &slot));
    ins.push_back(slot);
  }
  for (size_t i = 0; i < cx.num_outputs(); ++i) outs.push_back(cx.out(i));
  return CompileFunctionKernel(cx, body, comm, ax, shardings, std::move(ins), std::move(outs), k);
}

}  // namespace

bool CompileShardyRoundTrip(CompileCtx& cx, std::unique_ptr<Kernel>* k, Status* status) {
  RoundTrip rt;
  if (!FindRoundTrip(cx.BlockOps(), &cx.op(), &rt)) return false;
  // A round trip that splits nothing and whose body does not communicate: the annotations pass through and the
  // body is an ordinary call. A body that communicates names the mesh's devices (manual_devices.h) either way.
  bool splits = false;
  for (size_t i = 0; i < rt.g2l->operand_types.size() && i < rt.g2l->result_types.size(); ++i)
    splits =
        splits || stablehlo::TypeToString(rt.g2l->operand_types[i]) != stablehlo::TypeToString(rt.g2l->result_types[i]);
  if (!splits) {
    std::set<std::string_view> seen{rt.call->callee};
    const stablehlo::Function* parsed = cx.FindFunction(rt.call->callee);
    if (!parsed || !FindCommunication(cx, parsed->body, &seen)) return false;
  }
  *status = &cx.op() == rt.l2g ? CompileRoundTrip(cx, rt, k) : Ok();  // the other two: no kernel
  return true;
}

void RegisterManualComputationOps(OpTable* r) { (*r)["sdy.manual_computation"] = CompileManualComputation; }

}  // namespace neuronmem::interp
