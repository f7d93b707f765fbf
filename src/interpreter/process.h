// The StableHLO process grid (spec "Execution": processes, process groups, channels) for the interpreter.
//
// A program that uses collectives (all_reduce, all_gather, reduce_scatter, all_to_all, collective_permute,
// collective_broadcast, collective_reduce), send/recv, infeed/outfeed, replica_id or partition_id runs as
// one *process* of a grid of num_replicas x num_partitions processes. Whoever runs the processes hands each
// run its ProcessContext through Program::RunOptions::process:
//
//   - `grid`: the ProcessGrid the processes share. It matches the exchanges of collectives and the messages
//     of send/recv in call order, and never waits on a clock: a wait that can no longer be satisfied (a peer
//     finished or failed without reaching the op, or every running process is blocked) fails with a status
//     naming the op, its location, the channel and the missing processes.
//   - `replica_id`, `partition_id`: this process's place in the grid.
//   - `host`: the HostTransfers hook that serves send/recv with is_host_transfer, infeed and outfeed.
//
// The bytes that move between processes go through the grid's PeerTransfers (memcpy by default); the executor
// installs its own to move them with its copy engine and count them. docs/process-grid.md has the rules,
// and how the executor uses this interface.
//
// Every process must end with ProcessGrid::Finish (ProcessGrid::Run does it for processes it starts on its
// own threads); until then the grid counts it as running.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer_cache.h"
#include "base/status.h"
#include "interpreter/interpreter.h"

namespace neuronmem::interp {

// An op that talks to other processes, for error messages.
struct OpSite {
  std::string_view op;        // "stablehlo.all_reduce"
  std::string_view location;  // "file.mlir:12:5"
  int64_t channel = 0;        // the channel_handle's handle (0: none)
};

// One copy from process `from`'s memory to process `to`'s: `rows` runs of `row_bytes` bytes, the next run
// `src_stride` / `dst_stride` bytes after the previous one (a slice of a tensor along one dimension).
struct Transfer {
  uint32_t from = 0, to = 0;  // process indices (ProcessGrid::Index)
  const char* src = nullptr;
  char* dst = nullptr;
  size_t row_bytes = 0;
  size_t rows = 1;
  size_t src_stride = 0, dst_stride = 0;

  size_t bytes() const { return row_bytes * rows; }
};

// Moves the bytes between processes. Called by the receiving process's thread, while the sending process
// keeps `src` alive and unchanged; must be thread-safe (several processes copy at once).
class PeerTransfers {
 public:
  virtual ~PeerTransfers() = default;
  virtual Status Copy(const Transfer& t) = 0;
  // Whether process `process`'s bytes [data, data + bytes) stay valid and unchanged until the process ends
  // (ProcessGrid::Finish), as an argument a program only reads does: a send of them then lends them to the
  // message instead of copying them, and its receiver copies them once (the grid copies what is still unreceived
  // when the sender ends). Called from the process's own thread. Default: false (every buffered send copies).
  virtual bool Stable(uint32_t process, const void* data, size_t bytes);
  // Whether process `process`'s memory [data, data + bytes) stays allocated until the process ends, whatever it
  // holds (the program's workspace, which the executor frees after ProcessGrid::Finish): a send whose program
  // keeps the value unchanged (ProcessGrid::Send's `unchanged`) then lends it as for Stable. Default: false.
  virtual bool Outlives(uint32_t process, const void* data, size_t bytes);
  // The default: memcpy on the calling thread.
  static PeerTransfers* Memcpy();
};

// A host transfer of one process: which op, which process, which channel.
struct HostCall {
  OpSite site;
  uint32_t process = 0;     // ProcessGrid::Index of the calling process (a device of an sdy.manual_computation:
                            // the process of the run that runs the computation)
  std::string_view config;  // infeed_config / outfeed_config ("" for send/recv)
};

// Serves what a process exchanges with its host. Each call comes from the process's own thread; several
// processes may call at once. The data views are valid only during the call. A hook that does not serve
// a kind of transfer keeps the default, which fails the op with FAILED_PRECONDITION naming it.
class HostTransfers {
 public:
  virtual ~HostTransfers() = default;
  // stablehlo.send with is_host_transfer (channel type DEVICE_TO_HOST): `data` goes to the host.
  virtual Status Send(const HostCall& call, const TensorView* data, size_t n);
  // stablehlo.recv with is_host_transfer (channel type HOST_TO_DEVICE): the host fills `results`.
  virtual Status Recv(const HostCall& call, const TensorView* results, size_t n);
  // stablehlo.infeed: the host fills `results` (the values of the next infeed entry).
  virtual Status Infeed(const HostCall& call, const TensorView* results, size_t n);
  // stablehlo.outfeed: `data` goes to the host.
  virtual Status Outfeed(const HostCall& call, const TensorView* data, size_t n);
};

// The processes of a grid that run in other OS processes (a launch across the processes of a job,
// src/exec/cross_process.h): the grid sends their messages and collective operands through this hook instead
// of its own matching. Messages between one (sender, receiver) pair arrive in the order they were sent; each
// carries its op and shapes, and a receive checks them against its own. Thread-safe.
class RemoteProcesses {
 public:
  virtual ~RemoteProcesses() = default;
  // Whether grid process `process` runs in another OS process.
  virtual bool IsRemote(uint32_t process) const = 0;
  // The OS process (its index in the job) that runs grid process `process`.
  virtual uint32_t Owner(uint32_t process) const = 0;
  // Sends the n values of local process `from` to remote process `to` (buffered: returns without waiting).
  virtual Status Send(const OpSite& site, uint32_t from, uint32_t to, const TensorView* data, size_t n) = 0;
  // Receives the next message of remote process `from` to local process `to` into `results` (its shapes).
  // `patience`: how many peer timeouts to wait for it before taking `from` for lost (a message that comes down a
  // chain only after patience - 1 other messages, each of which may take a peer timeout).
  virtual Status Recv(const OpSite& site, uint32_t from, uint32_t to, const TensorView* results, size_t n,
                      uint32_t patience) = 0;
  // Sends, in place of the values a Send would carry, that local process `from` failed `site` with `why`: the
  // Recv that meets it fails with why's code, naming `from` and quoting why (a chain whose member failed
  // fails its later members at once instead of leaving them to wait for a peer's timeout).
  virtual Status SendFailure(const OpSite& site, uint32_t from, uint32_t to, const neuronmem_status_t& why) = 0;
  // Memory for `bytes` bytes received from other OS processes before they reach the values (uninitialised; null
  // where there is none). Default: fresh memory each time; a transport that receives often keeps it for reuse.
  virtual BufferLease Staging(size_t bytes);
};

class ProcessGrid;

// What a run knows of its process (Program::RunOptions::process). Without one, a run is process (0, 0)
// of a grid of its own with one process and no host hook.
struct ProcessContext {
  ProcessGrid* grid = nullptr;
  uint32_t replica_id = 0;
  uint32_t partition_id = 0;
  HostTransfers* host = nullptr;  // nullptr: host transfers, infeed and outfeed fail
};

// The grid: num_replicas x num_partitions processes, process index = replica * num_partitions + partition
// (the spec's flattened id). Thread-safe; each process calls it from its own thread.
class ProcessGrid {
 public:
  // `transport` (not owned, must outlive the grid) moves bytes between processes; nullptr: memcpy.
  ProcessGrid(uint32_t num_replicas, uint32_t num_partitions, PeerTransfers* transport = nullptr);
  // A grid some of whose processes run in other OS processes: `remote` (not owned, outlives the grid) moves
  // their messages and operands. Remote processes count as running here (they never end in this grid); a wait
  // for one ends when its message comes or the hook fails (a lost peer, a mismatched program).
  ProcessGrid(uint32_t num_replicas, uint32_t num_partitions, PeerTransfers* transport, RemoteProcesses* remote);
  ~ProcessGrid();
  ProcessGrid(const ProcessGrid&) = delete;
  ProcessGrid& operator=(const ProcessGrid&) = delete;

  uint32_t num_replicas() const { return replicas_; }
  uint32_t num_partitions() const { return partitions_; }
  uint32_t num_processes() const { return replicas_ * partitions_; }
  uint32_t Index(uint32_t replica, uint32_t partition) const { return replica * partitions_ + partition; }
  // "(replica, partition)" of a process index.
  std::string Name(uint32_t process) const;

  // A collective's rendezvous. `group` lists the process indices taking part, in group order, `self`
  // among them; every member contributes `n` views (its operands). The k-th Exchange a process makes over
  // a (channel, group) pair meets the k-th of every other member. Once all members have arrived, `read`
  // runs on each member's thread with members[m] = member m's n views (use CopyFrom to move bytes out of
  // them); the members stay in the exchange until every one has read, so the views stay valid. Fails
  // (without calling `read`) when a member finishes or fails first, when the grid is stuck, or when the
  // members contribute different ops, operand counts or shapes.
  using ExchangeRead = std::function<Status(const TensorView* const* members)>;
  Status Exchange(uint32_t self, const OpSite& site, const std::vector<uint32_t>& group, const TensorView* mine,
                  size_t n, const ExchangeRead& read);

  // Whether `group` has members in other OS processes (a grid with a RemoteProcesses hook).
  bool SpansProcesses(const std::vector<uint32_t>& group) const;

  // A reduction of every member's n values in group order whose traffic between OS processes does not grow with
  // their number (all_reduce across processes; docs/distributed.md, "Launches across processes"). `fold` runs
  // on member threads of this OS process with the values of member `from` (use CopyFrom to move their bytes):
  // `first` (the group's first member) sets the accumulator (`out`, n views of `mine`'s shapes) to them,
  // otherwise it folds them into it. On success every member's `out` holds the same bits: the fold of every
  // member's values in group order, exactly what folding them in one process gives. The accumulator travels
  // along the group: where the next member is in another OS process, this process's first member in group order
  // sends it to that process's first member (one message of the values' size), and the last member's OS process
  // starts a chain that hands the result once to every other OS process of the group (in order of their first
  // member, from the one after it). So each OS process sends and receives about twice the values' size once per
  // run of consecutive members it holds in the group (once, when its members are consecutive), whatever the
  // number of processes. Without members in other OS processes, the same fold after an Exchange.
  using FoldStep = std::function<Status(uint32_t from, const TensorView* values, bool first)>;
  Status FoldAcross(uint32_t self, const OpSite& site, const std::vector<uint32_t>& group, const TensorView* mine,
                    const TensorView* out, size_t n, const FoldStep& fold);

  // An Exchange whose group may span OS processes, where members need only some of the others' values:
  // needed[m * n + i] (the same in every OS process; empty: all) says whether value i of member m is read by any
  // member. `read` gets every local member's views and, of remote members, views whose data is their needed values
  // (nullptr for the others). Across OS processes the values move in a ring of the group's OS processes: each OS
  // process's first member in group order passes the blocks (an OS process's members' needed values) to the next
  // one, so each OS process sends and receives the other OS processes' needed values once, whatever their number
  // (all_gather: the others' operands; collective_broadcast: the root's, down a chain from its OS process). An
  // Exchange over a group with remote members is this with every value needed. Without remote members, Exchange.
  Status ShareAcross(uint32_t self, const OpSite& site, const std::vector<uint32_t>& group, const TensorView* mine,
                     size_t n, const std::vector<bool>& needed, const ExchangeRead& read);

  // Whether grid process `process` runs in another OS process (a grid with a RemoteProcesses hook).
  bool IsRemote(uint32_t process) const { return remote_ && remote_->IsRemote(process); }
  // Point to point between a local and a remote process, for collectives that send each member only its part
  // (all_to_all, collective_permute across OS processes). SendAcross is buffered; RecvAcross lands the values of
  // remote `from`'s next message to `self` in `results` (memory of the caller: move them on with CopyFrom, from
  // `from`, so the transport counts them). Matched in order per (sender, receiver); failures name the op's site.
  Status SendAcross(uint32_t self, const OpSite& site, uint32_t to, const TensorView* data, size_t n);
  Status RecvAcross(uint32_t self, const OpSite& site, uint32_t from, const TensorView* results, size_t n);
  // Memory (uninitialised) for `bytes` bytes that RecvAcross lands before CopyFrom moves them on: the remote hook's
  // (kept for reuse), or fresh where the grid has none. Null where there is no memory.
  BufferLease StagingAcross(size_t bytes) const { return remote_ ? remote_->Staging(bytes) : FreshBuffer(bytes); }

  // Sends `data` on `site.channel` to process `target` (-1: whichever process receives on the channel
  // next). Never waits for the receiver. Bytes the transport calls stable (PeerTransfers::Stable) are lent to
  // the message and copied once by the receive, on the receiver's thread (a waiting receiver is woken to take
  // it); otherwise a receiver already waiting gets them copied straight from `data` (one copy), else the grid
  // keeps a copy (made outside its lock) until the receive comes. unchanged: the caller keeps `data` unchanged
  // until `self` ends (a computed value the program never overwrites: CompileCtx::KeepUntilEnd), so bytes in
  // memory that outlives the process (PeerTransfers::Outlives) are lent too.
  Status Send(uint32_t self, const OpSite& site, int64_t target, const TensorView* data, size_t n,
              bool unchanged = false);
  // Receives into `results` the next message on `site.channel` from process `source` (-1: from any
  // sender that sent with target -1), in send order. Waits for it; fails when `source` finishes or fails
  // without sending it, or when the grid is stuck.
  Status Recv(uint32_t self, const OpSite& site, int64_t source, const TensorView* results, size_t n);

  // Copies bytes of another process (from an Exchange's views) into this one's memory through the
  // transport; a copy within one process is a plain memcpy. A failure inside an Exchange's `read`, a Send or
  // a Recv is returned prefixed with the op's site ("file:line:col: 'op' on channel c: ...").
  Status CopyFrom(const Transfer& t);

  // Ends process `self` with the status of its run. A process that ends with messages sent to it and not
  // received fails (naming channel and sender). Messages that borrow `self`'s bytes are copied if still
  // unreceived (but for a large one its receiver was already woken to take: that receive is waited for), and receives
  // copying them are waited for, so the bytes may go once it returns. Returns the process's final status.
  Status Finish(uint32_t self, Status status);
  // Ends process `self` before it ran, for a process its embedder never runs (the executor: a device a launch
  // leaves out). A wait for it fails at once saying so, with `why` ("device 2 is not part of this launch"):
  // "... waits for (2, 0) of its group [...]: (2, 0) never runs (device 2 is not part of this launch)". Its
  // final status is FAILED_PRECONDITION "process (2, 0) never runs: <why>". Instead of running it, never for a
  // process that runs; a no-op for one that ended.
  void Absent(uint32_t self, std::string why);
  // The final status of a finished process (a copy). Data sent to it after it finished fails it too, so
  // read it once every process has finished.
  Status FinalStatus(uint32_t process) const;

  // Whether `process` waits in the grid (an exchange or a receive) right now (diagnostics and tests).
  bool Waiting(uint32_t process) const;
  // Whether `process` has ended (Finish).
  bool Ended(uint32_t process) const;

  // Runs fn(process) for every process, each on its own std::thread (the calling thread runs the last),
  // finishes each with fn's status, and returns every process's final status, in process order.
  std::vector<Status> Run(const std::function<Status(uint32_t process)>& fn);

 private:
  struct Proc;
  struct Exch;
  struct Message;
  struct Wait;
  struct ExchangeKey {
    int64_t channel;
    std::vector<uint32_t> group;
    uint64_t instance;
    bool operator<(const ExchangeKey& o) const;
  };
  struct ChannelKey {
    int64_t channel;
    int64_t from, to;  // -1: any
    bool operator<(const ChannelKey& o) const;
  };

  // A group spanning OS processes, as every OS process sees it: each member's OS process (`owner`), the OS processes
  // in order of their first member (`procs`) and that first member, their representative (`rep`), this OS process's
  // members in group order (`local`), its index (`here`) and representative (`leader`).
  struct Across {
    std::vector<uint32_t> owner, procs, local;
    std::map<uint32_t, uint32_t> rep;
    uint32_t here = 0, leader = 0;
  };
  Across PlanAcross(uint32_t self, const std::vector<uint32_t>& group) const;

  // Recv from a remote process.
  Status RecvRemote(uint32_t self, const OpSite& site, int64_t source, const TensorView* results, size_t n);
  // Its body (failures not prefixed with the site): through storage of the call, then into `results` with the
  // transport, counted as the grid's messages are.
  Status RecvStaged(uint32_t self, const OpSite& site, uint32_t from, const TensorView* results, size_t n,
                    uint32_t patience = 1);

  // Hands the n values `data` sent by `from` to `to`, blocked in a receive that matched them (claimed by the
  // caller, who holds `lock`): copies them into its results outside the lock and wakes it. Returns the
  // failure of the send: a copy's (annotated with `site`) or a mismatch of shapes.
  Status Deliver(std::unique_lock<std::mutex>& lock, const OpSite& site, uint32_t from, uint32_t to,
                 const TensorView* data, size_t n);
  // The receiver blocked on a receive that a send of `self` on `site` to `target` satisfies, or -1.
  int64_t WaitingReceiver(uint32_t self, const OpSite& site, int64_t target) const;
  // A message of `self` leaves a mailbox without its lent bytes being read (or after they were): the sender
  // may end once none is left.
  void Returned(const Message& msg);
  // Copies every unreceived message that borrows `self`'s bytes (but a large one that a receiver woken for it is
  // about to take), then waits for the receives reading them.
  // Fails (RESOURCE_EXHAUSTED) only without memory for a copy: that message is withdrawn.
  Status Reclaim(std::unique_lock<std::mutex>& lock, uint32_t self);

  // Notifies p's thread (with the grid's lock held): wakes it, or ends its poll.
  static void Signal(Proc& p);
  // Waits (lock held) until done(): polls p's signal for a moment, then sleeps on its condition variable.
  template <class Pred>
  static void Sleep(std::unique_lock<std::mutex>& lock, Proc& p, Pred done);

  // Blocks `self` on its wait until woken; returns the failure the grid set, if any.
  Status Block(std::unique_lock<std::mutex>& lock, uint32_t self);
  // Fails waiters whose wait can no longer be satisfied; called whenever a process blocks or ends.
  void CheckStuck();
  void FailWaiter(uint32_t w, Status s);
  std::string Missing(const Wait& w) const;

  const uint32_t replicas_, partitions_;
  PeerTransfers* transport_;
  RemoteProcesses* remote_ = nullptr;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Proc>> procs_;
  std::map<ExchangeKey, std::shared_ptr<Exch>> exchanges_;
  std::map<ChannelKey, std::deque<std::shared_ptr<Message>>> mailboxes_;
  size_t running_;  // processes neither blocked nor ended
  uint64_t next_seq_ = 0;
};

}  // namespace neuronmem::interp
