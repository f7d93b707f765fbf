// ProcessGrid: see process.h. One mutex guards the grid's state; each process waits on its own condition
// variable. A process that waits is `blocked`; whoever satisfies or fails its wait marks it running again
// before notifying it, so `running_` counts exactly the processes that can still make progress, and the
// grid is stuck when it drops to zero while some process waits.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstring>
#include <thread>

#include "base/poll.h"
#include "interpreter/process.h"

namespace neuronmem::interp {

namespace {

class MemcpyPeerTransfers final : public PeerTransfers {
 public:
  Status Copy(const Transfer& t) override {
    for (size_t r = 0; r < t.rows; ++r) std::memcpy(t.dst + r * t.dst_stride, t.src + r * t.src_stride, t.row_bytes);
    return Status();
  }
};

std::string ShapeText(const TensorView& v) {
  std::string s = "tensor<";
  for (size_t i = 0; i < v.rank; ++i) s += std::to_string(v.dims[i]) + "x";
  return s + std::string(ElementTypeName(v.type)) + ">";
}

bool SameShape(const TensorView& a, const TensorView& b) {
  if (a.type != b.type || a.rank != b.rank) return false;
  for (size_t i = 0; i < a.rank; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

std::string Where(const OpSite& site) {
  return std::string(site.location) + ": '" + std::string(site.op) + "' on channel " + std::to_string(site.channel);
}

}  // namespace

bool PeerTransfers::Stable(uint32_t, const void*, size_t) { return false; }
bool PeerTransfers::Outlives(uint32_t, const void*, size_t) { return false; }

PeerTransfers* PeerTransfers::Memcpy() {
  static MemcpyPeerTransfers* t = new MemcpyPeerTransfers();
  return t;
}

static Status NoHostHook(const HostCall& call, const char* what) {
  return FailedPrecondition("%.*s: '%.*s': %s: the process has no host hook for it",
                            static_cast<int>(call.site.location.size()), call.site.location.data(),
                            static_cast<int>(call.site.op.size()), call.site.op.data(), what);
}

Status HostTransfers::Send(const HostCall& call, const TensorView*, size_t) {
  return NoHostHook(call, ("a host transfer on channel " + std::to_string(call.site.channel)).c_str());
}
Status HostTransfers::Recv(const HostCall& call, const TensorView*, size_t) {
  return NoHostHook(call, ("a host transfer on channel " + std::to_string(call.site.channel)).c_str());
}
Status HostTransfers::Infeed(const HostCall& call, const TensorView*, size_t) { return NoHostHook(call, "infeed"); }
Status HostTransfers::Outfeed(const HostCall& call, const TensorView*, size_t) { return NoHostHook(call, "outfeed"); }

// ---- State ---------------------------------------------------------------------------------------------

struct ProcessGrid::Exch {
  std::vector<uint32_t> group;
  std::vector<const TensorView*> views;  // per member, once arrived
  std::vector<size_t> counts;
  std::vector<OpSite> sites;
  std::vector<bool> present;
  size_t arrived = 0;
  size_t departed = 0;  // members that read (or gave up)
  bool failed = false;  // a member gave up: the exchange can never complete
  ExchangeKey key;
};

struct ProcessGrid::Wait {
  enum class Kind { kNone, kExchange, kRecv };
  Kind kind = Kind::kNone;
  OpSite site;
  std::shared_ptr<Exch> exch;
  int64_t source = -1;  // recv
  const TensorView* results = nullptr;
  size_t n = 0;
  uint64_t seq = 0;      // order of waiting receivers (-1 receives go to the earliest)
  bool claimed = false;  // a sender is copying into `results`
  bool done = false;
  Status failure;
};

struct ProcessGrid::Proc {
  enum class State { kRunning, kBlocked, kFinished, kFailed, kAbsent };
  State state = State::kRunning;
  std::string absent;  // kAbsent: why the process never runs
  std::condition_variable cv;
  // Set (under the grid's lock) with every notification of cv: a waiter polls it for a moment before sleeping.
  std::atomic<bool> signaled{false};
  Wait wait;
  std::map<std::pair<int64_t, std::vector<uint32_t>>, uint64_t> exchanges;  // calls per (channel, group)
  size_t lent = 0;     // its messages that borrow its bytes and are still in a mailbox or being read
  bool retry = false;  // its receive was woken to take a message from its mailbox
  Status final;

  bool ended() const { return state == State::kFinished || state == State::kFailed || state == State::kAbsent; }
  // How an ended process left, for a waiter's message: "(1, 0) finished", "(2, 0) never runs (why)".
  std::string Gone() const {
    if (state == State::kAbsent) return "never runs (" + absent + ")";
    return state == State::kFailed ? "failed" : "finished";
  }
};

struct ProcessGrid::Message {
  uint32_t from = 0;
  std::string location;  // of the send
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::unique_ptr<char[]>> data;  // the grid's copies (none while lent)
  std::vector<TensorView> views;              // the values: into `data`, or the sender's bytes while lent
  bool lent = false;                          // the views are the sender's bytes (PeerTransfers::Stable)
  bool taken = false;                         // a receive took it, or its receiver ended without it

  // The values' shapes, views into the sender's bytes.
  Message(uint32_t sender, const OpSite& site, const TensorView* values, size_t n)
      : from(sender), location(site.location), dims(n), views(values, values + n) {
    for (size_t i = 0; i < n; ++i) {
      dims[i].assign(values[i].dims, values[i].dims + values[i].rank);
      views[i].dims = dims[i].data();
    }
  }
  // Copies of the values' bytes (reads only the views); false when there is no memory for value `*failed`.
  bool CopyValues(std::vector<std::unique_ptr<char[]>>* kept, size_t* failed) const {
    kept->resize(views.size());
    for (size_t i = 0; i < views.size(); ++i) {
      const size_t bytes = views[i].Bytes();
      (*kept)[i].reset(new (std::nothrow) char[bytes ? bytes : 1]);
      if (!(*kept)[i]) {
        *failed = i;
        return false;
      }
      if (bytes) std::memcpy((*kept)[i].get(), views[i].data, bytes);
    }
    return true;
  }
  // The values are now `kept` (CopyValues), no longer the sender's bytes.
  void Adopt(std::vector<std::unique_ptr<char[]>> kept) {
    data = std::move(kept);
    for (size_t i = 0; i < views.size(); ++i) views[i].data = data[i].get();
    lent = false;
  }
};

bool ProcessGrid::ExchangeKey::operator<(const ExchangeKey& o) const {
  if (channel != o.channel) return channel < o.channel;
  if (instance != o.instance) return instance < o.instance;
  return group < o.group;
}

bool ProcessGrid::ChannelKey::operator<(const ChannelKey& o) const {
  if (channel != o.channel) return channel < o.channel;
  if (from != o.from) return from < o.from;
  return to < o.to;
}

ProcessGrid::ProcessGrid(uint32_t num_replicas, uint32_t num_partitions, PeerTransfers* transport)
    : replicas_(num_replicas ? num_replicas : 1),
      partitions_(num_partitions ? num_partitions : 1),
      transport_(transport ? transport : PeerTransfers::Memcpy()),
      running_(num_processes()) {
  for (uint32_t i = 0; i < num_processes(); ++i) procs_.push_back(std::make_unique<Proc>());
}

ProcessGrid::ProcessGrid(uint32_t num_replicas, uint32_t num_partitions, PeerTransfers* transport,
                         RemoteProcesses* remote)
    : ProcessGrid(num_replicas, num_partitions, transport) {
  remote_ = remote;
}

ProcessGrid::~ProcessGrid() = default;

std::string ProcessGrid::Name(uint32_t process) const {
  return "(" + std::to_string(process / partitions_) + ", " + std::to_string(process % partitions_) + ")";
}

// ---- Waiting -------------------------------------------------------------------------------------------

void ProcessGrid::Signal(Proc& p) {
  p.signaled.store(true, std::memory_order_release);
  p.cv.notify_one();
}

template <class Pred>
void ProcessGrid::Sleep(std::unique_lock<std::mutex>& lock, Proc& p, Pred done) {
  // The peer usually comes within microseconds (the other core of a launch): poll for it before sleeping, since
  // a sleeping thread takes 10-80 us to wake on a busy host (docs/performance.md, "Multi-core launches").
  constexpr std::chrono::microseconds kPoll(20);
  while (!done()) {
    p.signaled.store(false, std::memory_order_relaxed);
    lock.unlock();
    const bool signaled = PollFor(kPoll, [&] { return p.signaled.load(std::memory_order_acquire); });
    lock.lock();
    if (!signaled) {
      p.cv.wait(lock, done);
      return;
    }
  }
}

Status ProcessGrid::Block(std::unique_lock<std::mutex>& lock, uint32_t self) {
  Proc& p = *procs_[self];
  p.state = Proc::State::kBlocked;
  --running_;
  CheckStuck();
  Sleep(lock, p, [&] { return p.wait.done || p.wait.failure; });
  Status failure = std::move(p.wait.failure);
  p.wait = Wait();
  return failure;
}

void ProcessGrid::FailWaiter(uint32_t w, Status s) {
  Proc& p = *procs_[w];
  p.wait.failure = std::move(s);
  p.state = Proc::State::kRunning;
  ++running_;
  Signal(p);
}

std::string ProcessGrid::Missing(const Wait& w) const {
  std::string s;
  if (w.kind == Wait::Kind::kExchange) {
    for (size_t m = 0; m < w.exch->group.size(); ++m) {
      if (w.exch->present[m]) continue;
      s += (s.empty() ? "" : ", ") + Name(w.exch->group[m]);
    }
  } else if (w.source >= 0) {
    s = Name(static_cast<uint32_t>(w.source));
  } else {
    s = "any sender";
  }
  return s;
}

void ProcessGrid::CheckStuck() {
  const uint32_t n = num_processes();
  // Waits that a finished or failed peer can no longer satisfy.
  for (uint32_t w = 0; w < n; ++w) {
    Proc& p = *procs_[w];
    if (p.state != Proc::State::kBlocked) continue;
    const Wait& wt = p.wait;
    std::string gone;
    if (wt.kind == Wait::Kind::kExchange) {
      // "(1, 0) finished, (2, 0) failed without reaching it; (3, 0) never runs (device 3 is not part of ...)"
      std::string absent;
      for (size_t m = 0; m < wt.exch->group.size(); ++m) {
        const Proc& q = *procs_[wt.exch->group[m]];
        if (wt.exch->present[m] || !q.ended()) continue;
        const bool never = q.state == Proc::State::kAbsent;
        std::string& list = never ? absent : gone;
        if (!list.empty()) list += never ? "; " : ", ";
        list += Name(wt.exch->group[m]) + " " + q.Gone();
      }
      if (!gone.empty()) gone += " without reaching it";
      if (!absent.empty()) gone += (gone.empty() ? "" : "; ") + absent;
      if (!gone.empty()) {
        std::string members;
        for (uint32_t g : wt.exch->group) members += (members.empty() ? "" : ", ") + Name(g);
        FailWaiter(w, FailedPrecondition("%s: process %s waits for %s of its group [%s]: %s", Where(wt.site).c_str(),
                                         Name(w).c_str(), Missing(wt).c_str(), members.c_str(), gone.c_str()));
      }
    } else if (wt.kind == Wait::Kind::kRecv && !wt.claimed) {
      bool unsatisfiable = false;
      if (wt.source >= 0) {
        const Proc& q = *procs_[wt.source];
        unsatisfiable = q.ended();
        if (unsatisfiable) gone = q.state == Proc::State::kAbsent ? q.Gone() : q.Gone() + " without sending it";
      } else {
        unsatisfiable = true;
        for (uint32_t k = 0; k < n && unsatisfiable; ++k) unsatisfiable = k == w || procs_[k]->ended();
        gone = "every other process ended without sending it";
      }
      if (unsatisfiable)
        FailWaiter(w, FailedPrecondition("%s: process %s waits for data from %s, which %s", Where(wt.site).c_str(),
                                         Name(w).c_str(), Missing(wt).c_str(), gone.c_str()));
    }
  }
  if (running_ > 0) return;
  // Every process that has not ended waits: nothing can satisfy any wait.
  std::string all;
  for (uint32_t w = 0; w < n; ++w) {
    const Proc& p = *procs_[w];
    if (p.state != Proc::State::kBlocked) continue;
    all += (all.empty() ? "" : "; ") + Name(w) + " at '" + std::string(p.wait.site.op) + "' (" +
           std::string(p.wait.site.location) + ")";
  }
  for (uint32_t w = 0; w < n; ++w) {
    Proc& p = *procs_[w];
    if (p.state != Proc::State::kBlocked) continue;
    const Wait& wt = p.wait;
    FailWaiter(w, FailedPrecondition("%s: process %s waits for %s, but every running process is blocked (%s)",
                                     Where(wt.site).c_str(), Name(w).c_str(), Missing(wt).c_str(), all.c_str()));
  }
}

// ---- Exchanges -----------------------------------------------------------------------------------------

Status ProcessGrid::Exchange(uint32_t self, const OpSite& site, const std::vector<uint32_t>& group,
                             const TensorView* mine, size_t n, const ExchangeRead& read) {
  const auto at = std::find(group.begin(), group.end(), self);
  if (self >= num_processes() || at == group.end())
    return InvalidArgument("%s: process %s is not in the group it exchanges with", Where(site).c_str(),
                           Name(self).c_str());
  const size_t me = static_cast<size_t>(at - group.begin());
  if (remote_ && std::any_of(group.begin(), group.end(), [&](uint32_t g) { return remote_->IsRemote(g); }))
    return ShareAcross(self, site, group, mine, n, {}, read);
  std::unique_lock<std::mutex> lock(mu_);
  Proc& p = *procs_[self];
  ExchangeKey key{site.channel, group, p.exchanges[{site.channel, group}]++};
  auto& slot = exchanges_[key];
  if (!slot) {
    slot = std::make_shared<Exch>();
    slot->group = group;
    slot->views.resize(group.size());
    slot->counts.resize(group.size());
    slot->sites.resize(group.size());
    slot->present.resize(group.size());
    slot->key = key;
  }
  std::shared_ptr<Exch> e = slot;
  e->views[me] = mine;
  e->counts[me] = n;
  e->sites[me] = site;
  e->present[me] = true;
  ++e->arrived;
  if (e->failed) {
    --e->arrived;
    e->present[me] = false;
    return FailedPrecondition("%s: process %s reaches an exchange its group has given up", Where(site).c_str(),
                              Name(self).c_str());
  }
  if (e->arrived == group.size()) {
    for (size_t m = 0; m < group.size(); ++m) {
      Proc& q = *procs_[group[m]];
      if (m == me || q.state != Proc::State::kBlocked || q.wait.exch != e) continue;
      q.wait.done = true;
      q.state = Proc::State::kRunning;
      ++running_;
      Signal(q);
    }
  } else {
    p.wait.kind = Wait::Kind::kExchange;
    p.wait.site = site;
    p.wait.exch = e;
    if (Status s = Block(lock, self)) {
      // Give up: the exchange can never complete; the last member to leave removes it.
      e->failed = true;
      e->present[me] = false;
      if (--e->arrived == 0) exchanges_.erase(e->key);
      return s;
    }
  }
  lock.unlock();
  // Every member has arrived: their views stay valid until every member has departed.
  Status s;
  for (size_t m = 0; m < group.size() && !s; ++m) {
    if (e->sites[m].op != site.op) {
      s = FailedPrecondition("%s: process %s meets %s at '%.*s' (%.*s) instead", Where(site).c_str(),
                             Name(self).c_str(), Name(group[m]).c_str(), static_cast<int>(e->sites[m].op.size()),
                             e->sites[m].op.data(), static_cast<int>(e->sites[m].location.size()),
                             e->sites[m].location.data());
    } else if (e->counts[m] != n) {
      s = FailedPrecondition("%s: process %s exchanges %zu values, process %s %zu", Where(site).c_str(),
                             Name(self).c_str(), n, Name(group[m]).c_str(), e->counts[m]);
    } else {
      for (size_t i = 0; i < n && !s; ++i)
        if (!SameShape(mine[i], e->views[m][i]))
          s = FailedPrecondition("%s: value %zu is %s on process %s but %s on process %s", Where(site).c_str(), i,
                                 ShapeText(mine[i]).c_str(), Name(self).c_str(), ShapeText(e->views[m][i]).c_str(),
                                 Name(group[m]).c_str());
    }
  }
  if (!s) {
    s = read(e->views.data());  // its copies' failures (the transport's) name the op
    if (s) s = Annotate(std::move(s), Where(site));
  }
  lock.lock();
  if (++e->departed == group.size()) {
    exchanges_.erase(e->key);
    for (uint32_t g : group)
      if (g != self) Signal(*procs_[g]);
  } else {
    // Not counted as blocked: every member has arrived and departs once it has read.
    Sleep(lock, p, [&] { return e->departed == e->group.size(); });
  }
  return s;
}

ProcessGrid::Across ProcessGrid::PlanAcross(uint32_t self, const std::vector<uint32_t>& group) const {
  Across a;
  a.here = remote_->Owner(self);
  a.owner.resize(group.size());
  for (size_t m = 0; m < group.size(); ++m) {
    a.owner[m] = remote_->Owner(group[m]);
    if (a.rep.emplace(a.owner[m], group[m]).second) a.procs.push_back(a.owner[m]);
    if (a.owner[m] == a.here) a.local.push_back(group[m]);
  }
  a.leader = a.rep.at(a.here);
  return a;
}

Status ProcessGrid::ShareAcross(uint32_t self, const OpSite& site, const std::vector<uint32_t>& group,
                                const TensorView* mine, size_t n, const std::vector<bool>& needed,
                                const ExchangeRead& read) {
  if (!SpansProcesses(group)) return Exchange(self, site, group, mine, n, read);
  if (self >= num_processes() || std::find(group.begin(), group.end(), self) == group.end())
    return InvalidArgument("%s: process %s is not in the group it exchanges with", Where(site).c_str(),
                           Name(self).c_str());
  if (!needed.empty() && needed.size() != group.size() * n)
    return InvalidArgument("%s: %zu flags of needed values for %zu members of %zu values", Where(site).c_str(),
                           needed.size(), group.size(), n);
  // The plan, the same in every OS process: the OS processes in order of their first member (`procs`), each one's
  // representative its first member. A value travels only if it is needed; its OS process's block is its members'
  // needed values, in (member, value) order.
  const size_t g = group.size();
  const Across plan = PlanAcross(self, group);
  const std::vector<uint32_t>&owner = plan.owner, &procs = plan.procs, &local = plan.local;
  const std::map<uint32_t, uint32_t>& rep = plan.rep;
  const uint32_t here = plan.here, leader = plan.leader;
  const auto need = [&](size_t m, size_t i) { return needed.empty() || needed[m * n + i]; };
  // The remote members' needed values land in the representative's staging, at these offsets.
  std::vector<size_t> offset(g * n, 0);
  size_t staged = 0;
  for (size_t m = 0; m < g; ++m)
    for (size_t i = 0; i < n; ++i)
      if (owner[m] != here && need(m, i)) {
        offset[m * n + i] = staged;
        staged += mine[i].Bytes();
      }
  BufferLease storage;
  if (self == leader) {
    storage = remote_->Staging(staged);
    if (!storage)
      return ResourceExhausted("%s: no memory to hold %zu bytes from other OS processes", Where(site).c_str(), staged);
  }
  const size_t q = procs.size();
  const size_t h = static_cast<size_t>(std::find(procs.begin(), procs.end(), here) - procs.begin());
  // The block of procs[p]: views of this process's members' values (`locals`, in group order) or of the staging.
  const auto block = [&](size_t p, const TensorView* const* locals, char* staging) {
    std::vector<TensorView> b;
    size_t k = 0;
    for (size_t m = 0; m < g; ++m) {
      if (owner[m] != procs[p]) continue;
      for (size_t i = 0; i < n; ++i) {
        if (!need(m, i)) continue;
        b.push_back(mine[i]);
        b.back().data = procs[p] == here ? locals[k][i].data : staging + offset[m * n + i];
      }
      if (owner[m] == here) ++k;
    }
    return b;
  };
  // The representatives pass the blocks around the ring of OS processes: at step s, each sends the block it got at
  // step s - 1 (its own at step 0) to the next and receives the previous one's, so after q - 1 steps each has every
  // block, and each OS process sent and received only the other processes' needed values once (a block that is
  // empty travels as no message: collective_broadcast's root block goes down a chain). Step s's message comes only
  // after s others, each of which may take a peer timeout: its receive waits s + 1 of them. A representative that
  // fails sends the failure in place of its next message, so the ones after it fail at once naming the cause.
  const auto ring = [&](const TensorView* const* locals, char* staging) -> Status {
    if (self != leader) return Status();
    const uint32_t right = rep.at(procs[(h + 1) % q]), left = rep.at(procs[(h + q - 1) % q]);
    Status failed;
    for (size_t s = 0; s + 1 < q; ++s) {
      std::vector<TensorView> out = block((h + q - s) % q, locals, staging);
      if (!out.empty()) {
        if (failed) {
          remote_->SendFailure(site, self, right, *failed).IgnoreError();
          return failed;
        }
        failed = remote_->Send(site, self, right, out.data(), out.size());
      }
      std::vector<TensorView> in = block((h + 2 * q - 1 - s) % q, locals, staging);
      if (!in.empty() && !failed) failed = remote_->Recv(site, left, self, in.data(), in.size(), s + 1);
    }
    return failed;
  };
  // Every member's views: the local ones', and the remote ones' needed values in the staging (nullptr otherwise).
  const auto compose = [&](const TensorView* const* locals, const char* staging) -> Status {
    std::vector<std::vector<TensorView>> theirs(g);
    std::vector<const TensorView*> all(g);
    size_t k = 0;
    for (size_t m = 0; m < g; ++m) {
      if (owner[m] == here) {
        all[m] = locals[k++];
        continue;
      }
      theirs[m].assign(mine, mine + n);
      for (size_t i = 0; i < n; ++i)
        theirs[m][i].data = need(m, i) ? const_cast<char*>(staging) + offset[m * n + i] : nullptr;
      all[m] = theirs[m].data();
    }
    return read(all.data());
  };
  if (local.size() == 1) {
    if (Status s = ring(&mine, storage.get())) return Annotate(std::move(s), Where(site));
    if (Status s = compose(&mine, storage.get())) return Annotate(std::move(s), Where(site));
    return Status();
  }
  // The local members meet twice: the representative passes the blocks (their values stay valid until every one has
  // read), then every member reads, the remote values from the representative's staging (its extra byte view).
  NEURONMEM_RETURN_IF_ERROR(Exchange(self, site, local, mine, n,
                                     [&](const TensorView* const* locals) { return ring(locals, storage.get()); }));
  std::vector<TensorView> with(mine, mine + n);
  const int64_t staged_dims[1] = {static_cast<int64_t>(staged)};
  TensorView staging;
  staging.type = ElementType::kU8;
  staging.dims = staged_dims;
  staging.rank = 1;
  staging.data = storage.get();
  with.push_back(staging);
  return Exchange(self, site, local, with.data(), n + 1, [&](const TensorView* const* locals) {
    return compose(locals, static_cast<const char*>(locals[0][n].data));  // locals[0]: the representative
  });
}

BufferLease RemoteProcesses::Staging(size_t bytes) { return FreshBuffer(bytes); }

Status ProcessGrid::SendAcross(uint32_t self, const OpSite& site, uint32_t to, const TensorView* data, size_t n) {
  if (!remote_ || !remote_->IsRemote(to) || self >= num_processes() || remote_->IsRemote(self))
    return InvalidArgument("%s: process %s sends across OS processes to %s, which is not remote", Where(site).c_str(),
                           Name(self).c_str(), Name(to).c_str());
  return Annotate(remote_->Send(site, self, to, data, n), Where(site));
}

Status ProcessGrid::RecvAcross(uint32_t self, const OpSite& site, uint32_t from, const TensorView* results, size_t n) {
  if (!remote_ || !remote_->IsRemote(from) || self >= num_processes() || remote_->IsRemote(self))
    return InvalidArgument("%s: process %s receives across OS processes from %s, which is not remote",
                           Where(site).c_str(), Name(self).c_str(), Name(from).c_str());
  return Annotate(remote_->Recv(site, from, self, results, n, 1), Where(site));
}

bool ProcessGrid::SpansProcesses(const std::vector<uint32_t>& group) const {
  return remote_ && std::any_of(group.begin(), group.end(), [&](uint32_t g) { return remote_->IsRemote(g); });
}

Status ProcessGrid::FoldAcross(uint32_t self, const OpSite& site, const std::vector<uint32_t>& group,
                               const TensorView* mine, const TensorView* out, size_t n, const FoldStep& fold) {
  if (self >= num_processes() || std::find(group.begin(), group.end(), self) == group.end())
    return InvalidArgument("%s: process %s is not in the group it reduces with", Where(site).c_str(),
                           Name(self).c_str());
  if (!SpansProcesses(group))
    return Exchange(self, site, group, mine, n, [&](const TensorView* const* members) {
      for (size_t m = 0; m < group.size(); ++m) NEURONMEM_RETURN_IF_ERROR(fold(group[m], members[m], m == 0));
      return Status();
    });
  // The plan, the same in every OS process: each OS process's representative is its first member in group order.
  const size_t g = group.size();
  const Across plan = PlanAcross(self, group);
  const std::vector<uint32_t>&owner = plan.owner, &procs = plan.procs, &local = plan.local;
  const std::map<uint32_t, uint32_t>& rep = plan.rep;
  const uint32_t here = plan.here, leader = plan.leader;
  // The representative folds this OS process's members (`locals`, in group order) into its `out`, receiving and
  // sending the accumulator where the group changes OS process, then passes the result along the chain.
  // Once it fails, its later sends carry the failure instead (its later receives are skipped): every OS process
  // after it in the chain fails at once, not after a peer timeout.
  const auto chain = [&](const TensorView* const* locals) -> Status {
    if (self != leader) return Status();
    Status failed;
    const auto send = [&](uint32_t to) {
      Status s = failed ? remote_->SendFailure(site, self, to, *failed) : remote_->Send(site, self, to, out, n);
      if (s && !failed) failed = std::move(s);
    };
    // The chain's k-th message (from 1) can come only after k - 1 others, each of which may wait a peer timeout
    // for its own: its receive waits k peer timeouts before taking the sender for lost, so a process further
    // down the chain than a lost one learns of it from the failure passed on, naming the lost one.
    uint32_t step = 0;
    const auto recv = [&](uint32_t from) {
      if (!failed) failed = RecvStaged(self, site, from, out, n, step);
    };
    size_t k = 0;
    for (size_t m = 0; m < g; ++m) {
      if (m > 0 && owner[m] != owner[m - 1]) {
        ++step;
        if (owner[m - 1] == here) send(rep.at(owner[m]));
        if (owner[m] == here) recv(rep.at(owner[m - 1]));
      }
      if (owner[m] != here) continue;
      const TensorView* values = locals[k++];
      if (!failed) failed = fold(group[m], values, m == 0);
    }
    const size_t q = procs.size();
    const size_t start = static_cast<size_t>(std::find(procs.begin(), procs.end(), owner[g - 1]) - procs.begin());
    for (size_t j = 1; j < q; ++j) {
      const uint32_t from = procs[(start + j - 1) % q], to = procs[(start + j) % q];
      ++step;
      if (from == here) send(rep.at(to));
      if (to == here) recv(rep.at(from));
    }
    return failed;
  };
  if (local.size() == 1) {
    if (Status s = chain(&mine)) return Annotate(std::move(s), Where(site));
    return Status();
  }
  // The local members meet twice: the representative folds them all (their values stay valid until every one
  // has read), then every other member copies the result out of the representative's `out`.
  NEURONMEM_RETURN_IF_ERROR(Exchange(self, site, local, mine, n, chain));
  return Exchange(self, site, local, out, n, [&](const TensorView* const* members) -> Status {
    if (self == leader) return Status();
    for (size_t i = 0; i < n; ++i) {
      Transfer t;
      t.from = leader;
      t.to = self;
      t.src = static_cast<const char*>(members[0][i].data);
      t.dst = static_cast<char*>(out[i].data);
      t.row_bytes = out[i].Bytes();
      if (t.row_bytes) NEURONMEM_RETURN_IF_ERROR(CopyFrom(t));
    }
    return Status();
  });
}

// ---- Messages ------------------------------------------------------------------------------------------

static Status CheckMessageShapes(const OpSite& site, const std::string& receiver, const TensorView* results, size_t n,
                                 const TensorView* sent, size_t sent_n) {
  if (sent_n != n)
    return FailedPrecondition("%s: process %s receives %zu values but %zu were sent", Where(site).c_str(),
                              receiver.c_str(), n, sent_n);
  for (size_t i = 0; i < n; ++i) {
    if (!SameShape(sent[i], results[i]))
      return FailedPrecondition("%s: process %s receives value %zu as %s but a %s was sent", Where(site).c_str(),
                                receiver.c_str(), i, ShapeText(results[i]).c_str(), ShapeText(sent[i]).c_str());
  }
  return Status();
}

int64_t ProcessGrid::WaitingReceiver(uint32_t self, const OpSite& site, int64_t target) const {
  // A receiver already waiting for exactly this message (the earliest one, for target -1)?
  int64_t found = -1;
  for (uint32_t k = 0; k < num_processes(); ++k) {
    const Proc& q = *procs_[k];
    if (q.state != Proc::State::kBlocked || q.wait.kind != Wait::Kind::kRecv || q.wait.claimed ||
        q.wait.site.channel != site.channel)
      continue;
    const bool match = target >= 0 ? (k == target && q.wait.source == self) : q.wait.source < 0;
    if (match && (found < 0 || q.wait.seq < procs_[found]->wait.seq)) found = k;
  }
  return found;
}

Status ProcessGrid::Deliver(std::unique_lock<std::mutex>& lock, const OpSite& site, uint32_t from, uint32_t to,
                            const TensorView* data, size_t n) {
  Proc& q = *procs_[to];
  q.wait.claimed = true;
  q.state = Proc::State::kRunning;
  ++running_;
  const OpSite rsite = q.wait.site;
  const TensorView* results = q.wait.results;
  const size_t rn = q.wait.n;
  lock.unlock();
  Status s = CheckMessageShapes(rsite, Name(to), results, rn, data, n);
  bool copy_failed = false;
  for (size_t i = 0; i < n && !s; ++i) {
    Transfer t;
    t.from = from;
    t.to = to;
    t.src = static_cast<const char*>(data[i].data);
    t.dst = static_cast<char*>(results[i].data);
    t.row_bytes = data[i].Bytes();
    if (t.row_bytes) copy_failed = static_cast<bool>(s = CopyFrom(t));
  }
  // A failed copy (the transport's) fails both ops, each named: this send and the receiver's recv.
  Status mine = s ? (copy_failed ? Annotate(CopyStatus(s.get()), Where(site)) : CopyStatus(s.get())) : Status();
  if (copy_failed) s = Annotate(std::move(s), Where(rsite));
  lock.lock();
  q.wait.done = true;
  q.wait.failure = std::move(s);
  Signal(q);
  return mine;
}

Status ProcessGrid::Send(uint32_t self, const OpSite& site, int64_t target, const TensorView* data, size_t n,
                         bool unchanged) {
  if (target >= static_cast<int64_t>(num_processes()))
    return InvalidArgument("%s: process %s sends to process %" PRId64 " of a grid of %u", Where(site).c_str(),
                           Name(self).c_str(), target, num_processes());
  if (remote_ && target < 0)
    return FailedPrecondition("%s: process %s sends without a target in a grid that spans OS processes",
                              Where(site).c_str(), Name(self).c_str());
  if (remote_ && remote_->IsRemote(static_cast<uint32_t>(target)))
    return Annotate(remote_->Send(site, self, static_cast<uint32_t>(target), data, n), Where(site));
  // Bytes that outlive the process's run are lent to the message (its receive copies them once); others are
  // copied into it outside the grid's lock, so that senders copy at once instead of one after the other.
  bool lend = false;
  for (size_t i = 0; i < n; ++i) {
    const size_t bytes = data[i].Bytes();
    if (!bytes) continue;
    lend =
        transport_->Stable(self, data[i].data, bytes) || (unchanged && transport_->Outlives(self, data[i].data, bytes));
    if (!lend) break;
  }
  const ChannelKey key{site.channel, target >= 0 ? static_cast<int64_t>(self) : -1, target};
  std::unique_lock<std::mutex> lock(mu_);
  std::shared_ptr<Message> msg;
  for (int pass = 0;; ++pass) {
    const int64_t found = WaitingReceiver(self, site, target);
    // A lent message goes to the mailbox even then: the receiver copies it on its own thread, so that two cores
    // exchanging messages each copy one, instead of the later sender copying both.
    if (found >= 0 && !lend)
      return Deliver(lock, site, self, static_cast<uint32_t>(found), msg ? msg->views.data() : data, n);
    if (target >= 0 && procs_[target]->ended()) {
      Proc& q = *procs_[target];
      if (!q.final)
        q.final = FailedPrecondition("%s: process %s sent data to process %s after it finished", Where(site).c_str(),
                                     Name(self).c_str(), Name(static_cast<uint32_t>(target)).c_str());
      return Status();
    }
    if (pass > 0 || lend) break;
    lock.unlock();
    msg = std::make_shared<Message>(self, site, data, n);
    std::vector<std::unique_ptr<char[]>> kept;
    size_t failed = 0;
    if (!msg->CopyValues(&kept, &failed))
      return ResourceExhausted("%s: no memory to hold %zu bytes sent by process %s", Where(site).c_str(),
                               data[failed].Bytes(), Name(self).c_str());
    msg->Adopt(std::move(kept));
    lock.lock();  // a receiver may have come meanwhile: look again
  }
  if (lend) {
    msg = std::make_shared<Message>(self, site, data, n);
    msg->lent = true;
    ++procs_[self]->lent;
  }
  mailboxes_[key].push_back(std::move(msg));
  if (lend) {
    const int64_t found = WaitingReceiver(self, site, target);
    if (found >= 0) {
      // Wakes it to take the message from the mailbox (Recv looks again).
      Proc& q = *procs_[found];
      q.wait.done = true;
      q.retry = true;
      q.state = Proc::State::kRunning;
      ++running_;
      Signal(q);
    }
  }
  return Status();
}

void ProcessGrid::Returned(const Message& msg) {
  if (!msg.lent) return;
  Proc& p = *procs_[msg.from];
  if (--p.lent == 0) Signal(p);  // Reclaim waits for it
}

Status ProcessGrid::Recv(uint32_t self, const OpSite& site, int64_t source, const TensorView* results, size_t n) {
  if (source >= static_cast<int64_t>(num_processes()))
    return InvalidArgument("%s: process %s receives from process %" PRId64 " of a grid of %u", Where(site).c_str(),
                           Name(self).c_str(), source, num_processes());
  if (remote_ && source < 0)
    return FailedPrecondition("%s: process %s receives without a source in a grid that spans OS processes",
                              Where(site).c_str(), Name(self).c_str());
  if (remote_ && remote_->IsRemote(static_cast<uint32_t>(source))) return RecvRemote(self, site, source, results, n);
  std::unique_lock<std::mutex> lock(mu_);
  const ChannelKey key{site.channel, source, source >= 0 ? static_cast<int64_t>(self) : -1};
  Proc& p = *procs_[self];
  for (;;) {
    auto box = mailboxes_.find(key);
    if (box != mailboxes_.end() && !box->second.empty()) {
      std::shared_ptr<Message> msg = std::move(box->second.front());
      box->second.pop_front();
      if (box->second.empty()) mailboxes_.erase(box);
      msg->taken = true;
      lock.unlock();
      // A lent message's bytes stay valid until it is returned: its sender's Finish waits for that.
      Status s = CheckMessageShapes(site, Name(self), results, n, msg->views.data(), msg->views.size());
      for (size_t i = 0; i < n && !s; ++i) {
        Transfer t;
        t.from = msg->from;
        t.to = self;
        t.src = static_cast<const char*>(msg->views[i].data);
        t.dst = static_cast<char*>(results[i].data);
        t.row_bytes = msg->views[i].Bytes();
        if (!t.row_bytes) continue;
        if ((s = CopyFrom(t))) s = Annotate(std::move(s), Where(site));
      }
      if (msg->lent) {
        lock.lock();
        Returned(*msg);
      }
      return s;
    }
    p.wait.kind = Wait::Kind::kRecv;
    p.wait.site = site;
    p.wait.source = source;
    p.wait.results = results;
    p.wait.n = n;
    p.wait.seq = next_seq_++;
    p.retry = false;
    if (Status s = Block(lock, self)) return s;
    if (!p.retry) return Status();  // a sender copied the message into `results`
    p.retry = false;                // a lent message came: take it from the mailbox
  }
}

Status ProcessGrid::RecvRemote(uint32_t self, const OpSite& site, int64_t source, const TensorView* results, size_t n) {
  return Annotate(RecvStaged(self, site, static_cast<uint32_t>(source), results, n), Where(site));
}

Status ProcessGrid::RecvStaged(uint32_t self, const OpSite& site, uint32_t from, const TensorView* results, size_t n,
                               uint32_t patience) {
  // Into storage of this call, then into the results through the transport (counted as the grid's messages are).
  std::vector<TensorView> held(results, results + n);
  std::vector<BufferLease> storage;
  for (size_t i = 0; i < n; ++i) {
    storage.emplace_back(remote_->Staging(held[i].Bytes()));
    if (!storage.back())
      return ResourceExhausted("no memory to hold %zu bytes from process %s", held[i].Bytes(), Name(from).c_str());
    held[i].data = storage.back().get();
  }
  NEURONMEM_RETURN_IF_ERROR(remote_->Recv(site, from, self, held.data(), n, patience));
  for (size_t i = 0; i < n; ++i) {
    Transfer t;
    t.from = from;
    t.to = self;
    t.src = static_cast<const char*>(held[i].data);
    t.dst = static_cast<char*>(results[i].data);
    t.row_bytes = held[i].Bytes();
    if (t.row_bytes) NEURONMEM_RETURN_IF_ERROR(CopyFrom(t));
  }
  return Status();
}

Status ProcessGrid::CopyFrom(const Transfer& t) {
  if (t.from == t.to) return PeerTransfers::Memcpy()->Copy(t);
  return transport_->Copy(t);
}

// ---- Ending --------------------------------------------------------------------------------------------

Status ProcessGrid::Finish(uint32_t self, Status status) {
  std::unique_lock<std::mutex> lock(mu_);
  Proc& p = *procs_[self];
  if (p.ended()) return CopyStatus(p.final.get());
  if (Status s = Reclaim(lock, self); s && !status) status = std::move(s);
  // Messages sent to this process that it never received fail it.
  for (auto it = mailboxes_.begin(); it != mailboxes_.end();) {
    if (it->first.to == self) {
      if (!status)
        status = FailedPrecondition("process %s ended without receiving the data process %s sent on channel %" PRId64
                                    " (%s)",
                                    Name(self).c_str(), Name(it->second.front()->from).c_str(), it->first.channel,
                                    it->second.front()->location.c_str());
      for (const auto& msg : it->second) {
        msg->taken = true;
        Returned(*msg);
      }
      it = mailboxes_.erase(it);
    } else {
      ++it;
    }
  }
  p.state = status ? Proc::State::kFailed : Proc::State::kFinished;
  p.final = std::move(status);
  --running_;
  bool all_ended = true;
  for (uint32_t k = 0; k < num_processes(); ++k)
    all_ended = all_ended && (procs_[k]->ended() || (remote_ && remote_->IsRemote(k)));
  if (all_ended) {
    // Messages to any receiver that nobody received fail their senders.
    for (auto& [key, box] : mailboxes_) {
      for (const auto& msg : box) {
        Proc& sender = *procs_[msg->from];
        if (!sender.final)
          sender.final = FailedPrecondition("%s: 'stablehlo.send' on channel %" PRId64
                                            ": the data process %s sent was never received",
                                            msg->location.c_str(), key.channel, Name(msg->from).c_str());
      }
    }
    mailboxes_.clear();
  }
  CheckStuck();
  return CopyStatus(p.final.get());
}

Status ProcessGrid::Reclaim(std::unique_lock<std::mutex>& lock, uint32_t self) {
  Proc& p = *procs_[self];
  if (!p.lent) return Status();
  std::vector<std::shared_ptr<Message>> unread;
  for (const auto& [key, box] : mailboxes_) {
    for (const auto& msg : box) {
      if (!msg->lent || msg->from != self) continue;
      // A receiver already woken to take this very message (the front of the mailbox it waits on) reads it
      // within a hand-off: a large message is waited for below instead of copied, which on a shared CPU put a
      // second copy (and a malloc) before the receiver's own; a small one copies in less than that hand-off
      // (256 B .. 64 KiB: 7.3-11.5 us copied, 10.7-18 us waited for; 1 MiB: 112 us copied, 92 us waited for;
      // docs/performance.md, "Multi-core launches: the other core's part").
      constexpr size_t kWaitBytes = 256 << 10;
      size_t bytes = 0;
      for (const TensorView& v : msg->views) bytes += v.Bytes();
      if (bytes >= kWaitBytes && key.to >= 0 && box.front() == msg) {
        const Proc& q = *procs_[key.to];
        if (q.retry && q.wait.kind == Wait::Kind::kRecv && q.wait.site.channel == key.channel &&
            q.wait.source == key.from)
          continue;
      }
      unread.push_back(msg);
    }
  }
  // Copied outside the lock: a receive may take one and read the same bytes meanwhile (both only read them).
  lock.unlock();
  std::vector<std::vector<std::unique_ptr<char[]>>> kept(unread.size());
  std::vector<bool> copied(unread.size());
  Status failure;
  for (size_t k = 0; k < unread.size(); ++k) {
    size_t failed = 0;
    copied[k] = unread[k]->CopyValues(&kept[k], &failed);
    if (!copied[k] && !failure)
      failure = ResourceExhausted("%s: 'stablehlo.send': no memory to hold the %zu bytes process %s sent once it ends",
                                  unread[k]->location.c_str(), unread[k]->views[failed].Bytes(), Name(self).c_str());
  }
  lock.lock();
  for (size_t k = 0; k < unread.size(); ++k) {
    Message& msg = *unread[k];
    if (msg.taken) continue;  // a receive reads it: waited for below
    --p.lent;
    if (copied[k]) {
      msg.Adopt(std::move(kept[k]));
      continue;
    }
    // Without memory to keep it, the message is withdrawn: its receive fails as for a send that never came.
    msg.taken = true;
    for (auto it = mailboxes_.begin(); it != mailboxes_.end();) {
      auto at = std::find(it->second.begin(), it->second.end(), unread[k]);
      if (at != it->second.end()) it->second.erase(at);
      it = it->second.empty() ? mailboxes_.erase(it) : std::next(it);
    }
  }
  Sleep(lock, p, [&] { return p.lent == 0; });
  return failure;
}

void ProcessGrid::Absent(uint32_t self, std::string why) {
  std::unique_lock<std::mutex> lock(mu_);
  Proc& p = *procs_[self];
  if (p.ended()) return;
  p.state = Proc::State::kAbsent;
  p.final = FailedPrecondition("process %s never runs: %s", Name(self).c_str(), why.c_str());
  p.absent = std::move(why);
  --running_;
  CheckStuck();
}

Status ProcessGrid::FinalStatus(uint32_t process) const {
  std::lock_guard<std::mutex> lock(mu_);
  return CopyStatus(procs_[process]->final.get());
}

bool ProcessGrid::Waiting(uint32_t process) const {
  std::lock_guard<std::mutex> lock(mu_);
  return procs_[process]->state == Proc::State::kBlocked;
}

bool ProcessGrid::Ended(uint32_t process) const {
  std::lock_guard<std::mutex> lock(mu_);
  return procs_[process]->ended();
}

std::vector<Status> ProcessGrid::Run(const std::function<Status(uint32_t)>& fn) {
  const uint32_t n = num_processes();
  auto body = [&](uint32_t k) {
    Status s;
    try {
      s = fn(k);
    } catch (const std::exception& e) {
      s = Internal("process %s: %s", Name(k).c_str(), e.what());
    }
    Finish(k, std::move(s)).IgnoreError();  // kept as its final status, returned below
  };
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (uint32_t k = 0; k + 1 < n; ++k) {
    try {
      threads.emplace_back(body, k);
    } catch (const std::exception& e) {
      Finish(k, ResourceExhausted("process %s: cannot start its thread: %s", Name(k).c_str(), e.what()))
          .IgnoreError();  // kept as its final status, returned below
    }
  }
  body(n - 1);
  for (auto& t : threads) t.join();
  std::vector<Status> out;
  for (uint32_t k = 0; k < n; ++k) out.push_back(FinalStatus(k));
  return out;
}

}  // namespace neuronmem::interp
