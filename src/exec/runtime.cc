#include "exec/runtime.h"

#include <algorithm>
#include <cinttypes>
#include <string>

#include "base/poll.h"
#include "copy/copy_engine.h"
#include "exec/moves.h"
#include "interpreter/process.h"

namespace neuronmem::exec {

namespace {

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::string ShapeText(ElementType type, Span<const int64_t> dims) {
  std::string s(ElementTypeName(type));
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + ']';
}

std::string KindText(MemoryKind k) { return std::string(MemoryKindName(k)); }

// Hands the program its results' memory: the buffers allocated (or donated) at submission.
class BufferResults final : public interp::ResultAllocator {
 public:
  explicit BufferResults(const std::vector<copy::StorageUse>& uses) : uses_(uses) {}
  void* Allocate(size_t index, size_t bytes) override {
    if (index >= uses_.size()) return nullptr;
    const copy::Storage* s = uses_[index].s;
    // A donated MUTABLE_ZERO_COPY argument's storage aliases the caller's memory and records no byte count: the
    // result takes that memory as donation promises (its size is the parameter's, checked at submission).
    const bool caller_memory = !s->owned && s->data && s->bytes == 0;
    if (s->bytes != bytes && !caller_memory) return nullptr;
    return bytes ? static_cast<void*>(s->data) : static_cast<void*>(uses_[index].s);  // non-null
  }

 private:
  const std::vector<copy::StorageUse>& uses_;
};

}  // namespace

// One launch of an executable that uses the process grid: each device's execution is the process of one
// interp::ProcessGrid whose index is the device id (devices the launch does not name end at once). The launch
// is the grid's transport link (each message is counted as a peer transfer of the execution that receives it,
// then moved by the runtime's Transport) and its host hook (the frontend's callbacks by channel). Its
// executions' events complete together, once every process has ended, each with its process's final status
// (data sent to a process after it ended still fails it: ProcessGrid::FinalStatus).
struct LaunchState final : interp::PeerTransfers, interp::HostTransfers {
  struct Proc {
    bool member = false;              // a device of the launch
    const RunContext* run = nullptr;  // while its program runs: which memory kind each address is
    // While its program runs: the arguments it only reads (not donated), valid until its process ends; its
    // workspaces, allocated until its process ends.
    std::vector<std::pair<const char*, size_t>> stable, workspace;
    std::shared_ptr<ExecutionStats> stats;
    EventRef done;
  };

  // first: the grid index of this client's core 0 (its global device id in a job); remote (nullable): the
  // link to the other processes of a launch that spans them.
  LaunchState(const Executable& exe, exec::Transport* t, std::shared_ptr<const HostCallbacks> h, uint32_t first_id,
              std::unique_ptr<CrossProcessLaunch> r)
      : transport(t), host(std::move(h)), first(first_id), remote(std::move(r)), procs(exe.num_devices()) {
    grid = std::make_unique<interp::ProcessGrid>(exe.num_replicas(), exe.num_partitions(), this, remote.get());
  }

  // interp::PeerTransfers: count, then move.
  Status Copy(const interp::Transfer& t) override {
    MemoryKind from = MemoryKind::kDevice, to = MemoryKind::kDevice;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (procs[t.from].run) from = procs[t.from].run->KindOf(t.src);  // else the grid held the message
      if (procs[t.to].run) to = procs[t.to].run->KindOf(t.dst);
    }
    NEURONMEM_RETURN_IF_ERROR(transport->Copy(t));
    std::lock_guard<std::mutex> lock(mu);
    procs[t.to].stats->AddPeer(from, to, t.bytes());
    return Ok();
  }
  // interp::PeerTransfers: a process's arguments it does not donate stay unchanged until the process ends (the
  // execution holds them until after ProcessGrid::Finish).
  bool Stable(uint32_t process, const void* data, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu);
    return Within(procs[process].stable, data, bytes);
  }
  // interp::PeerTransfers: a process's workspaces stay allocated until after ProcessGrid::Finish (Runtime::Run).
  bool Outlives(uint32_t process, const void* data, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu);
    return Within(procs[process].workspace, data, bytes);
  }
  static bool Within(const std::vector<std::pair<const char*, size_t>>& ranges, const void* data, size_t bytes) {
    const char* p = static_cast<const char*>(data);
    for (const auto& [begin, size] : ranges)
      if (p >= begin && bytes <= size && p - begin <= static_cast<ptrdiff_t>(size - bytes)) return true;
    return false;
  }
  // interp::HostTransfers: the frontend's callbacks.
  Status Send(const interp::HostCall& call, const interp::TensorView* data, size_t n) override {
    return CallHost(call, data, n, /*send=*/true);
  }
  Status Recv(const interp::HostCall& call, const interp::TensorView* results, size_t n) override {
    return CallHost(call, results, n, /*send=*/false);
  }

  Status CallHost(const interp::HostCall& call, const interp::TensorView* views, size_t n, bool send) {
    // Submission checked every host transfer of the manifest; this catches one it could not see.
    const HostCallback* fn = nullptr;
    if (host) {
      const auto& callbacks = send ? host->send : host->recv;
      auto it = callbacks.find(call.site.channel);
      if (it != callbacks.end()) fn = &it->second;
    }
    if (!fn)
      return FailedPrecondition("channel %lld has no %s callback", static_cast<long long>(call.site.channel),
                                send ? "send" : "recv");
    std::vector<CustomKernelTensor> tensors(n);
    const RunContext* run = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu);
      run = procs[call.process].run;  // its own process: alive during the call
    }
    for (size_t i = 0; i < n; ++i)
      tensors[i] = CustomKernelTensor(views[i], run ? run->KindOf(views[i].data) : MemoryKind::kDevice);
    HostTransfer t;
    t.channel = call.site.channel;
    t.core = call.process - first;
    t.replica = call.process / grid->num_partitions();
    t.partition = call.process % grid->num_partitions();
    t.tensors = tensors.data();
    t.num_tensors = n;
    const uint64_t t0 = NowNs();
    Status s = (*fn)(t);
    const uint64_t elapsed = NowNs() - t0;
    if (!s) {
      // The callback moved each tensor between the core's memory and the frontend's (pageable) host memory: an
      // explicit transfer of the execution, tensor by tensor, from its kind to unpinned_host (a send) or back
      // (a recv), its time part of the moves inside the graph.
      std::lock_guard<std::mutex> lock(mu);
      ExecutionStats& stats = *procs[call.process].stats;
      for (size_t i = 0; i < n; ++i) {
        const MemoryKind core = tensors[i].kind, host_kind = MemoryKind::kUnpinnedHost;
        stats.AddExplicit(send ? core : host_kind, send ? host_kind : core, views[i].Bytes());
      }
      stats.AddExplicitTime(elapsed);
    }
    if (s) {
      // "file:line:col: 'stablehlo.send': the send callback of channel 5: <the callback's message>"
      s = Annotate(std::move(s), std::string(call.site.location) + ": '" + std::string(call.site.op) + "': the " +
                                     (send ? "send" : "recv") + " callback of channel " +
                                     std::to_string(call.site.channel));
    }
    return s;
  }

  exec::Transport* transport;
  std::shared_ptr<const HostCallbacks> host;
  const uint32_t first;
  std::unique_ptr<CrossProcessLaunch> remote;
  std::unique_ptr<interp::ProcessGrid> grid;  // uses this as its transport: declared after what Copy uses
  std::mutex mu;
  std::vector<Proc> procs;
  size_t running = 0;  // members that have not ended
};

// One submitted execution: everything it holds until it finishes.
struct Execution {
  std::shared_ptr<const Executable> exe;
  uint32_t core = 0;
  std::vector<EventRef> waits;
  // What each wait is, to name it if it fails (names are built only then: submission is a hot path).
  struct WaitOrigin {
    enum What : uint8_t {
      kWaitEvent,     // wait.events[index]
      kImplicitCopy,  // parameter index's auto_copy
      kArgument,      // parameter index's content
      kOrderOnly,     // an operation still using a donated argument's bytes: its failure is not the execution's
    } what;
    uint32_t index;
  };
  std::vector<WaitOrigin> wait_origins;
  std::vector<copy::StorageUse> args;                 // the arguments' bytes (after auto_copy)
  std::vector<MemoryKind> arg_kinds;                  // where each lies
  std::vector<std::unique_ptr<copy::Buffer>> copies;  // auto_copy: the arguments moved to their memory
  std::vector<copy::StorageUse> results;              // the results' bytes
  std::vector<bool> donate;                           // which arguments are donated this time
  std::vector<copy::Buffer*> arg_buffers;             // from Prepare to Commit: each argument (after auto_copy)
  bool launch = false;  // part of a launch, or unbounded work: runs on its core's launch thread, never the caller
  std::unique_ptr<bool[]> donated;            // per argument: given up to this execution
  std::shared_ptr<LaunchState> grid;          // the launch's process grid, if the program uses one
  uint32_t process = 0;                       // its process in the grid (core, or global device id in a job)
  std::shared_ptr<ExecutionControl> control;  // nullable: it cannot be stopped
  EventRef done;
  std::shared_ptr<ExecutionStats> stats;
  uint64_t submitted_ns = 0;
  struct ImplicitCopy {
    MemoryKind from, to;
    uint64_t bytes;
    size_t wait;  // its index in waits: counted when it ran, only if it succeeded
  };
  std::vector<ImplicitCopy> implicit;
};

Runtime::Runtime(core::Client& client, std::unique_ptr<Transport> transport, Job* job)
    : client_(client),
      transport_(transport ? std::move(transport) : NewInProcessTransport(client.copy_engine())),
      job_(job),
      core_workers_(client) {
  for (uint32_t c = 0; c < client.devices().size(); ++c) {
    auto q = std::make_unique<CoreQueue>();
    q->runtime = this;
    q->core = c;
    queues_.push_back(std::move(q));
  }
}

Runtime::~Runtime() {
  pool_.WaitIdle([this] {
    for (const auto& q : queues_) {
      std::lock_guard<std::mutex> lock(q->mu);
      if (q->active || !q->queue.empty()) return false;
    }
    return true;
  });
  for (const auto& q : queues_) {
    {
      std::lock_guard<std::mutex> lock(q->mu);
      q->stop = true;
    }
    q->cv.notify_one();
    if (q->thread.joinable()) q->thread.join();
  }
  {
    std::lock_guard<std::mutex> lock(deadline_mu_);
    deadline_stop_ = true;
  }
  deadline_cv_.notify_one();
  if (deadline_thread_.joinable()) deadline_thread_.join();
}

bool ExecutionControl::Stop(int code) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!runtime_) return false;  // finished (or never submitted)
  int expected = 0;
  if (!code_.compare_exchange_strong(expected, code, std::memory_order_acq_rel)) return false;
  runtime_->Kick(core_);  // the runtime outlives every execution not finished
  return true;
}

void Runtime::Kick(uint32_t core) {
  CoreQueue* q = queues_[core].get();
  {
    std::lock_guard<std::mutex> lock(q->mu);
    if (!q->armed) return;  // a drain runs (the program polls the stop) or will look at the queue anyway
    q->armed = false;
    ++q->arm_gen;
  }
  pool_.Enqueue(&Runtime::DrainTask, q);
}

void Runtime::Arm(Execution& e, uint64_t timeout_ns) {
  if (!e.control) return;
  ExecutionControl& c = *e.control;
  {
    std::lock_guard<std::mutex> lock(c.mu_);
    c.runtime_ = this;
    c.core_ = e.core;
  }
  if (!timeout_ns) return;
  const uint64_t deadline = timeout_ns > UINT64_MAX - e.submitted_ns ? UINT64_MAX : e.submitted_ns + timeout_ns;
  std::lock_guard<std::mutex> lock(deadline_mu_);
  if (!deadline_thread_.joinable()) deadline_thread_ = std::thread([this] { DeadlineThread(); });
  c.deadline_ = deadlines_.emplace(deadline, std::weak_ptr<ExecutionControl>(e.control));
  c.timed_ = true;
  if (c.deadline_ == deadlines_.begin()) deadline_cv_.notify_one();
}

void Runtime::Disarm(Execution& e) {
  if (!e.control) return;
  ExecutionControl& c = *e.control;
  {
    std::lock_guard<std::mutex> lock(c.mu_);
    c.runtime_ = nullptr;  // a later Stop changes nothing
  }
  std::lock_guard<std::mutex> lock(deadline_mu_);
  if (c.timed_) deadlines_.erase(c.deadline_);
  c.timed_ = false;
}

void Runtime::DeadlineThread() {
  std::unique_lock<std::mutex> lock(deadline_mu_);
  while (!deadline_stop_) {
    if (deadlines_.empty()) {
      deadline_cv_.wait(lock);
      continue;
    }
    auto it = deadlines_.begin();
    const uint64_t now = NowNs();
    if (it->first > now) {
      // At most an hour at a time: a deadline centuries away must not overflow the clock's arithmetic.
      deadline_cv_.wait_for(lock, std::chrono::nanoseconds(std::min<uint64_t>(it->first - now, 3600'000'000'000ull)));
      continue;
    }
    std::shared_ptr<ExecutionControl> c = it->second.lock();
    if (c) c->timed_ = false;
    deadlines_.erase(it);
    lock.unlock();
    if (c) c->Stop(NEURONMEM_STATUS_DEADLINE_EXCEEDED);
    lock.lock();
  }
}

Status Runtime::Prepare(const ExecuteRequest& r, copy::Buffer* const* results, std::unique_ptr<Execution>* out) {
  NEURONMEM_RETURN_IF_ERROR(CheckRequest(r));
  std::vector<bool> donate, needs_copy;
  NEURONMEM_RETURN_IF_ERROR(CheckArguments(r, &donate, &needs_copy));
  std::unique_ptr<Execution> e = NewExecution(r, std::move(donate));
  // A failure from here on drops what was made with `e`; the caller destroys the result buffers.
  NEURONMEM_RETURN_IF_ERROR(CopyMisplacedArguments(r, needs_copy, *e));
  NEURONMEM_RETURN_IF_ERROR(UseArguments(*e));
  NEURONMEM_RETURN_IF_ERROR(AllocateResults(r, results, *e));
  *out = std::move(e);
  return Ok();
}

Status Runtime::CheckRequest(const ExecuteRequest& r) const {
  const Executable& exe = *r.executable;
  if (r.core >= exe.num_devices())
    return InvalidArgument("device %u: the executable runs on devices 0..%u (num_replicas %u, num_partitions %u)",
                           r.core, exe.num_devices() - 1, exe.num_replicas(), exe.num_partitions());
  if (r.arguments.size() != exe.parameters().size())
    return InvalidArgument("%zu arguments given, the executable takes %zu", r.arguments.size(),
                           exe.parameters().size());
  NEURONMEM_RETURN_IF_ERROR(client_.copy_engine().CheckForeignWaits(r.waits, "wait."));
  for (size_t i = 0; i < r.waits.size(); ++i) {
    if (IsReady(r.waits[i]) && r.waits[i]->error())
      return Annotate(CopyStatus(r.waits[i]->error()), "wait.events[" + std::to_string(i) + "] failed");
  }
  return Ok();
}

Status Runtime::CheckArguments(const ExecuteRequest& r, std::vector<bool>* donate_out,
                               std::vector<bool>* needs_copy_out) const {
  const Executable& exe = *r.executable;
  const auto& params = exe.parameters();
  const core::Device& device = *client_.devices()[r.core];
  // Which arguments are donated this time, and where each must go.
  std::vector<bool>& donate = *donate_out;
  donate.assign(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i) donate[i] = params[i].donation >= 0;
  for (size_t n : r.non_donatable) {
    if (n >= params.size())
      return InvalidArgument("non_donatable names argument %zu; the executable takes %zu", n, params.size());
    donate[n] = false;
  }
  std::vector<bool>& needs_copy = *needs_copy_out;
  needs_copy.assign(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    copy::Buffer& b = *r.arguments[i];
    const ValueInfo& p = params[i];
    if (b.deleted()) return FailedPrecondition("%s was deleted (or donated to an earlier execution)", p.name.c_str());
    if (b.element_type() != p.type || !std::equal(b.dims().begin(), b.dims().end(), p.dims.begin(), p.dims.end()))
      return InvalidArgument("%s: the buffer is %s but the parameter is %s", p.name.c_str(),
                             ShapeText(b.element_type(), b.dims()).c_str(),
                             ShapeText(p.type, Span<const int64_t>(p.dims.data(), p.dims.size())).c_str());
    const core::Memory& actual = *client_.memory(b.memory().id);
    const core::Memory& expected = *device.memory_of_kind(p.kind);
    // Host kinds are one arena for every core: any core's view of it is in place.
    const bool placed = actual.kind() == p.kind && (p.kind != MemoryKind::kDevice || actual.id() == expected.id());
    if (!placed) {
      if (exe.placement() == ArgumentPlacement::kStrict)
        return FailedPrecondition(
            "%s must live in %s memory of device %u (%s) but lives in %s (%s); copy it there or compile with "
            "NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY",
            p.name.c_str(), KindText(p.kind).c_str(), r.core, expected.debug_string().c_str(),
            KindText(actual.kind()).c_str(), actual.debug_string().c_str());
      needs_copy[i] = true;
    }
    if (donate[i] && !needs_copy[i] && b.read_only())
      return FailedPrecondition(
          "%s is donated but aliases caller memory given as IMMUTABLE_ZERO_COPY, which the library may not write; "
          "pass it as non_donatable or upload it with another semantics",
          p.name.c_str());
    if (donate[i]) {
      for (size_t j = 0; j < params.size(); ++j)
        if (j != i && r.arguments[j] == &b)
          return InvalidArgument("%s is donated but also passed as argument %zu", p.name.c_str(), j);
    }
    EventRef def(b.ReadyEvent());
    if (IsReady(def.get()) && def.get()->error())
      return Annotate(CopyStatus(def.get()->error()), p.name + ": its content failed");
  }
  return Ok();
}

std::unique_ptr<Execution> Runtime::NewExecution(const ExecuteRequest& r, std::vector<bool> donate) const {
  const size_t num_params = r.executable->parameters().size();
  auto e = std::make_unique<Execution>();
  e->exe = r.executable;
  e->core = r.core;
  e->stats = std::make_shared<ExecutionStats>();
  e->submitted_ns = NowNs();
  e->done = EventRef(NewEvent(client_.copy_engine().event_owner()));
  e->control = r.control;
  if (!e->control && r.timeout_ns) e->control = std::make_shared<ExecutionControl>();
  e->donate = std::move(donate);
  e->donated.reset(new bool[num_params + 1]());
  for (size_t i = 0; i < num_params; ++i) e->donated[i] = e->donate[i];
  for (size_t i = 0; i < r.waits.size(); ++i) {
    e->waits.emplace_back(Share(r.waits[i]));
    e->wait_origins.push_back({Execution::WaitOrigin::kWaitEvent, static_cast<uint32_t>(i)});
  }
  e->arg_buffers.assign(r.arguments.begin(), r.arguments.end());
  return e;
}

Status Runtime::CopyMisplacedArguments(const ExecuteRequest& r, const std::vector<bool>& needs_copy, Execution& e) {
  const auto& params = r.executable->parameters();
  const core::Device& device = *client_.devices()[r.core];
  copy::CopyEngine& engine = client_.copy_engine();
  std::vector<copy::Buffer*>& args = e.arg_buffers;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!needs_copy[i]) continue;
    copy::Buffer& b = *args[i];
    const core::Memory& target = *device.memory_of_kind(params[i].kind);
    auto moved = std::make_unique<copy::Buffer>();
    Event* ready = nullptr;
    const uint64_t t0 = NowNs();
    if (Status s = engine.CopyToMemory(b, target.view(), {}, moved.get(), &ready))
      return Annotate(std::move(s), params[i].name + ": the implicit copy to " + target.debug_string());
    std::shared_ptr<ExecutionStats> st = e.stats;
    OnReady(ready, [st, t0](const neuronmem_status_t*) { st->implicit_transfer_ns += NowNs() - t0; });
    e.implicit.push_back({client_.memory(b.memory().id)->kind(), params[i].kind, b.bytes(), e.waits.size()});
    e.waits.emplace_back(ready);
    e.wait_origins.push_back({Execution::WaitOrigin::kImplicitCopy, static_cast<uint32_t>(i)});
    args[i] = moved.get();
    e.copies.push_back(std::move(moved));
  }
  return Ok();
}

Status Runtime::UseArguments(Execution& e) {
  const auto& params = e.exe->parameters();
  copy::CopyEngine& engine = client_.copy_engine();
  e.args.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EventRef def;
    if (Status s = engine.UseBuffer(*e.arg_buffers[i], &e.args[i], &def)) return Annotate(std::move(s), params[i].name);
    if (!IsReady(def.get()) || def.get()->error()) {
      e.waits.push_back(std::move(def));
      e.wait_origins.push_back({Execution::WaitOrigin::kArgument, static_cast<uint32_t>(i)});
    }
    e.arg_kinds.push_back(params[i].kind);
  }
  // A donated argument's bytes become a result's, written by this execution: it first waits for every
  // operation still queued on them (PJRT's usage events: a download, a copy, an execution on another core).
  for (size_t i = 0; i < params.size(); ++i) {
    if (!e.donate[i]) continue;
    std::vector<EventRef> pending;
    copy::PendingUsages(e.args[i].s, &pending);
    for (EventRef& w : pending) {
      e.waits.push_back(std::move(w));
      e.wait_origins.push_back({Execution::WaitOrigin::kOrderOnly, 0});
    }
  }
  return Ok();
}

Status Runtime::AllocateResults(const ExecuteRequest& r, copy::Buffer* const* results, Execution& e) {
  const auto& outputs = r.executable->outputs();
  const core::Device& device = *client_.devices()[r.core];
  // Results: new buffers in the memory each output's kind names (donated ones at Commit).
  e.results.resize(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ValueInfo& o = outputs[k];
    if (o.donation >= 0 && e.donate[static_cast<size_t>(o.donation)]) continue;
    const core::Memory& m = *device.memory_of_kind(o.kind);
    Status s = client_.copy_engine().AllocateDefinedBy(
        m.view(), o.type, Span<const int64_t>(o.dims.data(), o.dims.size()), e.done.get(), results[k], &e.results[k]);
    if (s) return Annotate(std::move(s), o.name);  // a launch adds "device d" (once)
  }
  return Ok();
}

Status Runtime::Commit(const ExecuteRequest& r, Execution& e, copy::Buffer* const* results) {
  const Executable& exe = *r.executable;
  const auto& params = exe.parameters();
  const auto& outputs = exe.outputs();
  copy::CopyEngine& engine = client_.copy_engine();
  // Donations last: nothing can fail for a reason of ours after the first argument is given up.
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ValueInfo& o = outputs[k];
    if (o.donation < 0 || !e.donate[static_cast<size_t>(o.donation)]) continue;
    const size_t a = static_cast<size_t>(o.donation);
    if (Status s = engine.Donate(*e.arg_buffers[a], e.done.get(), results[k], &e.results[k]))
      return Annotate(std::move(s), params[a].name + " cannot be donated");
    if (e.arg_buffers[a] != r.arguments[a]) r.arguments[a]->Delete();  // the original of an auto-copied donation
  }
  e.arg_buffers.clear();
  return Ok();
}

void Runtime::MarkReads(Execution& e) {
  // A later donation of their bytes waits for this execution: only once it is sure to run (its event completes).
  for (size_t i = 0; i < e.args.size(); ++i)
    if (!e.donate[i]) copy::AddUsage(e.args[i].s, e.done.get());
}

namespace {

// A shape-polymorphic executable's specialization for the dims of `args` (its first num_parameters).
Status SpecializeFor(const Executable& exe, Span<copy::Buffer* const> args, std::shared_ptr<const Executable>* out) {
  const size_t n = exe.parameters().size();
  if (args.size() < n) return InvalidArgument("%zu arguments given, the executable takes %zu", args.size(), n);
  std::vector<std::vector<int64_t>> dims(n);
  for (size_t i = 0; i < n; ++i) dims[i].assign(args[i]->dims().begin(), args[i]->dims().end());
  return exe.Specialize(dims, out);
}

}  // namespace

Status Runtime::Execute(const ExecuteRequest& r, copy::Buffer* const* results, Event** done,
                        std::shared_ptr<const ExecutionStats>* stats_out) {
  if (r.executable->polymorphic()) {  // runs as the specialization for its arguments' shapes
    ExecuteRequest s = r;
    NEURONMEM_RETURN_IF_ERROR(SpecializeFor(*r.executable, r.arguments, &s.executable));
    return Execute(s, results, done, stats_out);
  }
  if (r.executable->uses_grid()) {
    // A process of a grid: a launch of this one device (its replica and partition ids, its host transfers).
    LaunchRequest l;
    l.executable = r.executable;
    l.cores = Span<const uint32_t>(&r.core, 1);
    l.arguments = r.arguments;
    l.waits = Span<const Span<Event* const>>(&r.waits, 1);
    l.non_donatable = r.non_donatable;
    l.host = r.host;
    l.controls = &r.control;
    l.timeout_ns = r.timeout_ns;
    return Launch(l, results, done, stats_out);
  }
  std::unique_ptr<Execution> e;
  NEURONMEM_RETURN_IF_ERROR(Prepare(r, results, &e));
  NEURONMEM_RETURN_IF_ERROR(Commit(r, *e, results));
  // Work without a known bound (a while loop) never runs on the caller: its core's thread runs it.
  e->launch = r.executable->unbounded();
  Event* ev = Share(e->done.get());
  *done = ev;
  if (stats_out) *stats_out = e->stats;
  pending_.fetch_add(1, std::memory_order_acq_rel);
  Arm(*e, r.timeout_ns);
  Submit(std::move(e));
  // The arguments it reads: a later donation of their bytes waits for this execution, unless it already ran
  // (on the caller: its core was idle). The caller's buffers outlive this call; a donated one is deleted, an
  // auto-copied one's original is read by its copy, which waits likewise.
  if (!IsReady(ev)) {
    for (copy::Buffer* b : r.arguments) client_.copy_engine().RecordUse(*b, ev);
  }
  return Ok();
}

Status Runtime::Launch(const LaunchRequest& r, copy::Buffer* const* results, Event** done,
                       std::shared_ptr<const ExecutionStats>* stats_out) {
  if (r.executable->polymorphic()) {  // every core runs the specialization for the first core's argument shapes
    LaunchRequest s = r;
    NEURONMEM_RETURN_IF_ERROR(SpecializeFor(*r.executable, r.arguments, &s.executable));
    return Launch(s, results, done, stats_out);
  }
  const Executable& exe = *r.executable;
  const size_t n = r.cores.size();
  const size_t num_params = exe.parameters().size();
  const size_t num_outputs = exe.outputs().size();
  if (n == 0) return InvalidArgument("a launch needs at least one device");
  if (r.arguments.size() != n * num_params)
    return InvalidArgument("%zu arguments given for %zu devices, the executable takes %zu per device",
                           r.arguments.size(), n, num_params);
  if (!r.waits.empty() && r.waits.size() != n)
    return InvalidArgument("%zu wait lists given for %zu devices", r.waits.size(), n);
  // In a job, a grid's processes are global device ids: this client's cores are first.. first + cores - 1.
  const uint32_t first = job_ && exe.uses_grid() ? job_->Global(0) : 0;
  for (size_t d = 0; d < n; ++d) {
    if (first + r.cores[d] >= exe.num_devices())
      return InvalidArgument("device %u: the executable runs on devices 0..%u (num_replicas %u, num_partitions %u)",
                             first + r.cores[d], exe.num_devices() - 1, exe.num_replicas(), exe.num_partitions());
    for (size_t j = 0; j < d; ++j)
      if (r.cores[j] == r.cores[d]) return InvalidArgument("device %u is listed twice in the launch", r.cores[d]);
  }
  // A donated buffer gives its memory to one execution's result: it may appear nowhere else in the launch.
  std::vector<ExecuteRequest> requests(n);
  for (size_t d = 0; d < n; ++d) {
    ExecuteRequest& q = requests[d];
    q.executable = r.executable;
    q.core = r.cores[d];
    q.arguments = Span<copy::Buffer* const>(r.arguments.data() + d * num_params, num_params);
    if (!r.waits.empty()) q.waits = r.waits[d];
    q.non_donatable = r.non_donatable;
    if (r.controls) q.control = r.controls[d];
    q.timeout_ns = r.timeout_ns;
  }
  std::vector<bool> donatable(num_params, false);
  for (size_t i = 0; i < num_params; ++i) donatable[i] = exe.parameters()[i].donation >= 0;
  for (size_t i : r.non_donatable)
    if (i < num_params) donatable[i] = false;
  for (size_t a = 0; a < r.arguments.size(); ++a) {
    if (!donatable[a % num_params]) continue;
    for (size_t b = 0; b < r.arguments.size(); ++b) {
      if (b / num_params != a / num_params && r.arguments[b] == r.arguments[a])
        return InvalidArgument("device %u: %s is donated but also passed to device %u", r.cores[a / num_params],
                               exe.parameters()[a % num_params].name.c_str(), r.cores[b / num_params]);
    }
  }
  // Every host transfer needs the frontend's callback for its channel.
  for (const HostChannel& c : exe.host_channels()) {
    const bool has = r.host && (c.send ? r.host->send : r.host->recv).count(c.handle);
    if (!has)
      return InvalidArgument("%s: channel %lld has no %s callback (send_callbacks / recv_callbacks of the launch)",
                             c.where.c_str(), static_cast<long long>(c.handle), c.send ? "send" : "recv");
  }
  std::shared_ptr<LaunchState> grid;
  // A grid with devices of other processes: their messages go over the job's fabric.
  const bool across = job_ && exe.uses_grid() && (first > 0 || exe.num_devices() > job_->cores());
  if (exe.uses_grid()) {
    grid = std::make_shared<LaunchState>(exe, transport_.get(), r.host, first,
                                         across ? job_->NewLaunch(exe.fingerprint(), r.launch_id) : nullptr);
  }
  // One device and no host callback: nothing of the launch can block (every other process of its grid is
  // absent, so a wait for one fails at once), so it keeps the plain rule (on the caller when its core is idle)
  // instead of paying a launch thread's wake-up. Callbacks always run on the core's launch thread. A launch
  // across processes waits for its peers: never on the caller.
  const bool alone = n == 1 && !across && (!r.host || (r.host->send.empty() && r.host->recv.empty()));
  std::vector<std::unique_ptr<Execution>> executions(n);
  for (size_t d = 0; d < n; ++d) {
    if (Status s = Prepare(requests[d], results + d * num_outputs, &executions[d]))
      return Annotate(std::move(s), "device " + std::to_string(r.cores[d]));
    executions[d]->launch = !alone || exe.unbounded();
    executions[d]->grid = grid;
    executions[d]->process = first + r.cores[d];
  }
  for (size_t d = 0; d < n; ++d) {
    if (Status s = Commit(requests[d], *executions[d], results + d * num_outputs))
      return Annotate(std::move(s), "device " + std::to_string(r.cores[d]));
  }
  for (size_t d = 0; d < n; ++d) {
    MarkReads(*executions[d]);
    done[d] = Share(executions[d]->done.get());
    if (stats_out) stats_out[d] = executions[d]->stats;
  }
  if (grid) {
    for (const auto& e : executions) {
      LaunchState::Proc& p = grid->procs[e->process];
      p.member = true;
      p.stats = e->stats;
      p.done = EventRef(Share(e->done.get()));
    }
    grid->running = n;
    // The grid's other processes never run: waiting for one of them fails at once, saying so.
    std::string members;
    for (size_t d = 0; d < n; ++d) members += (d ? ", " : "") + std::to_string(first + r.cores[d]);
    for (uint32_t i = 0; i < exe.num_devices(); ++i) {
      if (!grid->procs[i].member && !(grid->remote && grid->remote->IsRemote(i)))
        grid->grid->Absent(i, "device " + std::to_string(i) + " is not part of this launch, which runs device" +
                                  (n > 1 ? "s " : " ") + members);
    }
  }
  pending_.fetch_add(static_cast<int64_t>(n), std::memory_order_acq_rel);
  for (auto& e : executions) Arm(*e, r.timeout_ns);
  std::vector<CoreQueue*> to_drain;
  std::vector<Execution*> heads;  // the executions whose queue was idle: the caller owns their drain
  {
    std::lock_guard<std::mutex> launch_lock(launch_mu_);
    if (grid && grid->remote) grid->remote->Submit();  // numbered in the order launches enter the queues
    for (auto& e : executions) {
      CoreQueue* q = queues_[e->core].get();
      Execution* head = e.get();
      if (Enqueue(std::move(e))) {
        to_drain.push_back(q);
        heads.push_back(head);
      }
    }
  }
  // The caller runs one execution of the launch itself (or every one, when they cost less than a hand-off), as
  // the plain rule runs an execute, instead of paying its launch thread's wake-up; the others go to their
  // cores' launch threads, woken first.
  const size_t mine = CallerRuns(exe, r, alone, across, heads, n);
  for (size_t i = mine; i < to_drain.size(); ++i) Drain(to_drain[i], /*on_caller=*/true);
  for (size_t i = 0; i < mine; ++i) Drain(to_drain[i], /*on_caller=*/true);
  return Ok();
}

size_t Runtime::CallerRuns(const Executable& exe, const LaunchRequest& r, bool alone, bool across,
                           const std::vector<Execution*>& heads, size_t n) const {
  // One alone already follows the plain rule; a loop may never end; callbacks run on the launch threads; a
  // launch across processes waits for its peers; a caller inside a library callback must not block there.
  if (heads.empty() || alone || exe.unbounded() || across || InCallerCallback()) return 0;
  if (r.host && (!r.host->send.empty() || !r.host->recv.empty())) return 0;
  if (exe.uses_grid()) {
    // Its execution may wait in the grid for the others: only when each of them starts at once on its launch
    // thread (every core's queue was idle and no wait is pending), so the caller's wait is bounded.
    if (heads.size() != n) return 0;
    for (const Execution* e : heads)
      for (const EventRef& w : e->waits)
        if (!IsReady(w.get())) return 0;
  }
  // Parts that do not meet (no grid) and whose program ran shorter than a cross-thread hand-off all run on the
  // caller, one after the other: waking a launch thread and seeing its event complete cost 1.5-4.5 us here
  // (more when the two threads share a vCPU, as they mostly do on this 2-vCPU host), a + 1 on f32[4] 0.4 us
  // (docs/performance.md, "Multi-core launches: the other core's part"). Other parts go to their threads.
  constexpr uint64_t kHandOffNs = 3000;
  size_t mine = 1;
  const uint64_t last = exe.last_run_ns();
  if (!exe.uses_grid() && last && last * (heads.size() - 1) <= kHandOffNs) mine = heads.size();
  // The caller owns these drains (their queues were idle), so nothing else reads the executions before Drain.
  for (size_t i = 0; i < mine; ++i) heads[i]->launch = false;
  return mine;
}

bool Runtime::Enqueue(std::unique_ptr<Execution> e) {
  CoreQueue* q = queues_[e->core].get();
  std::lock_guard<std::mutex> lock(q->mu);
  q->queue.push_back(std::move(e));
  if (q->active) return false;  // the running drain takes it
  q->active = true;
  return true;
}

void Runtime::Submit(std::unique_ptr<Execution> e) {
  CoreQueue* q = queues_[e->core].get();
  if (Enqueue(std::move(e))) Drain(q, /*on_caller=*/true);
}

void Runtime::DrainTask(void* arg) {
  auto* q = static_cast<CoreQueue*>(arg);
  q->runtime->Drain(q, /*on_caller=*/false);
}

void Runtime::Drain(CoreQueue* q, bool on_caller) {
  bool ran = false;
  for (;;) {
    Execution* head = nullptr;
    Event* blocking = nullptr;
    uint64_t gen = 0;
    {
      std::lock_guard<std::mutex> lock(q->mu);
      if (q->queue.empty()) {
        q->active = false;
        break;
      }
      head = q->queue.front().get();
      // A stopped execution fails at once: it waits for nothing.
      const bool stopped = head->control && head->control->code();
      for (size_t i = 0; i < head->waits.size() && !stopped; ++i) {
        if (!IsReady(head->waits[i].get())) {
          blocking = Share(head->waits[i].get());
          q->armed = true;
          gen = ++q->arm_gen;
          break;
        }
      }
      if (!blocking && head->launch && std::this_thread::get_id() != q->thread.get_id()) {
        WakeLaunchThread(q);  // the queue stays active: the launch thread drains on
        return;
      }
      if (!blocking && on_caller && ran) {
        // The caller ran its own execution; others that queued meanwhile go to a worker.
        pool_.Enqueue(&Runtime::DrainTask, q);
        return;
      }
    }
    if (blocking) {
      // In order: the queue waits for this event; its completion re-arms the drain on a worker, unless a stop
      // (Kick) re-armed it first. Registered outside q->mu: the callback may run at once, here.
      OnReady(blocking, [this, q, blocking, gen](const neuronmem_status_t*) {
        bool go = false;
        {
          std::lock_guard<std::mutex> lock(q->mu);
          go = q->armed && q->arm_gen == gen;
          if (go) q->armed = false;
        }
        if (go) pool_.Enqueue(&Runtime::DrainTask, q);
        Release(blocking);
      });
      return;
    }
    Run(*head);
    ran = true;
    std::unique_ptr<Execution> finished;
    {
      std::lock_guard<std::mutex> lock(q->mu);
      finished = std::move(q->queue.front());
      q->queue.pop_front();
    }
    finished.reset();
  }
  pool_.Notify();
}

void Runtime::EndProcess(Execution& e) {
  LaunchState& l = *e.grid;
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (--l.running) return;
  }
  // The last process of the launch: every process has ended, so every final status is known.
  for (uint32_t i = 0; i < l.procs.size(); ++i) {
    if (!l.procs[i].member) continue;
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    Complete(l.procs[i].done.get(), l.grid->FinalStatus(i));
  }
}

void Runtime::WakeLaunchThread(CoreQueue* q) {
  if (!q->thread.joinable()) q->thread = std::thread([this, q] { LaunchThread(q); });
  q->wake.store(true, std::memory_order_release);
  if (!q->spinning) q->cv.notify_one();  // a polling thread sees `wake` by itself
}

void Runtime::LaunchThread(CoreQueue* q) {
  // How long the thread polls for the next launch after a drain: a sleeping thread takes 10-80 us to wake on
  // this machine, a polling one well under 1 us (docs/performance.md, "Multi-core launches").
  constexpr std::chrono::microseconds kPoll(50);
  std::unique_lock<std::mutex> lock(q->mu);
  for (;;) {
    if (!q->wake.load(std::memory_order_relaxed) && !q->stop) {
      q->spinning = true;
      lock.unlock();
      PollFor(kPoll, [q] { return q->wake.load(std::memory_order_acquire); });
      lock.lock();
      q->spinning = false;
    }
    q->cv.wait(lock, [q] { return q->wake.load(std::memory_order_relaxed) || q->stop; });
    if (q->stop) return;
    q->wake.store(false, std::memory_order_relaxed);
    lock.unlock();
    Drain(q, /*on_caller=*/false);
    lock.lock();
  }
}

void Runtime::Run(Execution& e) {
  const uint64_t start = NowNs();
  ExecutionStats& stats = *e.stats;
  stats.queue_ns = start - e.submitted_ns;
  const Executable& exe = *e.exe;
  const core::Device& device = *client_.devices()[e.core];
  // The workspace: one block per memory space, from the core's memories.
  char* spaces[interp::kMaxSpaces] = {};
  uint64_t space_bytes[interp::kMaxSpaces] = {};
  auto finish = [&](Status s) {
    // The grid keeps the final status (the last process to end reads every one: EndProcess). Ended while the
    // arguments and the workspace are still held: messages that borrow their bytes are copied or read by then.
    if (e.grid) e.grid->grid->Finish(e.process, std::move(s)).IgnoreError();
    // Workspaces this run got from Allocate: a memory cannot refuse them back, the status carries nothing to act
    // on.
    for (size_t k = 0; k < kNumMemoryKinds; ++k) {
      if (spaces[k])
        device.memory_of_kind(static_cast<MemoryKind>(k))->view().memory->Free(spaces[k], space_bytes[k]).IgnoreError();
    }
    e.args.clear();
    e.copies.clear();
    e.results.clear();
    Disarm(e);
    if (e.grid) {
      EndProcess(e);
      return;
    }
    // No longer pending once its event is ready: a caller that waited may destroy the client at once (the
    // runtime's destructor then waits for this drain to unwind).
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    Complete(e.done.get(), std::move(s));
  };
  if (const int code = e.control ? e.control->code() : 0) {
    // Stopped before it started: it waited for nothing, so its waits may still be pending.
    finish(MakeStatus(static_cast<neuronmem_status_code_t>(code),
                      code == NEURONMEM_STATUS_DEADLINE_EXCEEDED ? "the execution's deadline passed before it started"
                                                                 : "the execution was cancelled before it started"));
    return;
  }
  // Every wait is ready: the implicit copies that moved their bytes are counted (one that failed moved none).
  for (const Execution::ImplicitCopy& c : e.implicit)
    if (!e.waits[c.wait].get()->error()) stats.AddImplicit(c.from, c.to, c.bytes);
  for (size_t i = 0; i < e.waits.size(); ++i) {
    const Execution::WaitOrigin o = e.wait_origins[i];
    if (o.what == Execution::WaitOrigin::kOrderOnly) continue;
    if (const neuronmem_status_t* err = e.waits[i].get()->error()) {
      const std::string name = o.what == Execution::WaitOrigin::kWaitEvent
                                   ? "wait.events[" + std::to_string(o.index) + "]"
                                   : exe.parameters()[o.index].name +
                                         (o.what == Execution::WaitOrigin::kImplicitCopy ? " (its implicit copy)" : "");
      finish(Annotate(CopyStatus(err), name + " failed"));
      return;
    }
  }
  RunContext run;
  run.stats = &stats;
  run.core = e.core;
  run.pool = &pool_;
  for (size_t k = 0; k < kNumMemoryKinds; ++k) {
    const core::Memory* m = device.memory_of_kind(static_cast<MemoryKind>(k));
    run.memories[k] = m ? m->view().memory : nullptr;
  }
  Status failure;
  for (size_t k = 0; k < kNumMemoryKinds && !failure; ++k) {
    space_bytes[k] = exe.program().workspace_bytes(k);
    if (!space_bytes[k]) continue;
    const auto kind = static_cast<MemoryKind>(k);
    memory::Memory* mem = device.memory_of_kind(kind)->view().memory;
    void* p = nullptr;
    if (Status s = mem->Allocate(space_bytes[k], 64, &p)) {
      space_bytes[k] = 0;
      failure = ResourceExhausted(
          "device %u (core %u): the execution's %s workspace of %" PRIu64 " bytes does not fit: %s", e.core, e.core,
          KindText(kind).c_str(), exe.program().workspace_bytes(k), s->message.c_str());
      break;
    }
    spaces[k] = static_cast<char*>(p);
    run.Add(p, space_bytes[k], kind);
  }
  if (!failure) {
    std::vector<interp::TensorView> views(e.args.size());
    for (size_t i = 0; i < e.args.size(); ++i) {
      const ValueInfo& p = exe.parameters()[i];
      views[i].data = e.args[i].s->data;
      views[i].type = p.type;
      views[i].dims = p.dims.data();
      views[i].rank = p.dims.size();
      // The parameter's size: a zero-copy argument's storage aliases caller memory and records no byte count.
      run.Add(e.args[i].s->data, p.bytes, e.arg_kinds[i]);
    }
    BufferResults allocator(e.results);
    std::vector<interp::TensorView> out;
    interp::Program::RunOptions options;
    options.spaces = spaces;
    options.context = &run;
    // The program writes into a donated argument's memory (now its result's); a kept one stays untouched.
    options.donated = e.donated.get();
    options.interrupt = e.control ? e.control->interrupt() : nullptr;
    // A manual computation's devices on the client's cores (CoreWorkers); on one core, a thread each.
    CoreWorkers::Call call{&core_workers_, e.core, &stats};
    const interp::Program::RunOptions::Parallel parallel{&CoreWorkers::Run, &call};
    if (core_workers_.cores() > 1) options.parallel = &parallel;
    // A manual computation's devices' frames of the other spaces: in the kinds' memories, counted as such.
    const interp::Program::RunOptions::SpaceMemory space_memory{&AllocateSpaceFrames, &ReleaseSpaceFrames, &run};
    options.space_memory = &space_memory;
    interp::ProcessContext process;
    if (e.grid) {
      process.grid = e.grid->grid.get();
      process.replica_id = exe.replica_of(e.process);
      process.partition_id = exe.partition_of(e.process);
      process.host = e.grid.get();
      options.process = &process;
      if (e.grid->remote) e.grid->remote->SetInterrupt(e.process, options.interrupt);
      std::lock_guard<std::mutex> lock(e.grid->mu);
      LaunchState::Proc& proc = e.grid->procs[e.process];
      proc.run = &run;
      for (size_t i = 0; i < e.args.size(); ++i)
        if (!e.donated[i] && exe.parameters()[i].bytes)
          proc.stable.emplace_back(reinterpret_cast<const char*>(e.args[i].s->data), exe.parameters()[i].bytes);
      for (size_t k = 0; k < kNumMemoryKinds; ++k)
        if (spaces[k]) proc.workspace.emplace_back(spaces[k], space_bytes[k]);
    }
    const uint64_t t0 = NowNs();
    failure = exe.program().Run(views.data(), views.size(), &allocator, &out, options);
    const uint64_t t1 = NowNs();
    if (e.grid) {
      std::lock_guard<std::mutex> lock(e.grid->mu);
      e.grid->procs[e.process].run = nullptr;
      e.grid->procs[e.process].stable.clear();
      e.grid->procs[e.process].workspace.clear();
    }
    if (!failure) {
      // Outputs whose value the graph returns from another kind's memory are moved into it.
      for (size_t k = 0; k < exe.outputs().size(); ++k) {
        const ValueInfo& o = exe.outputs()[k];
        if (exe.returned_kind(k) != o.kind) stats.AddExplicit(exe.returned_kind(k), o.kind, o.bytes);
      }
    }
    const uint64_t elapsed = t1 - t0;
    const uint64_t moving = stats.explicit_transfer_ns.load(std::memory_order_relaxed);
    stats.op_ns = elapsed > moving ? elapsed - moving : 0;
  }
  exe.NoteRun(NowNs() - start);
  finish(std::move(failure));
}

}  // namespace neuronmem::exec
