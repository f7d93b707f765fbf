// Launches across the processes of a job (docs/distributed.md, "Launches across processes").
//
// A client of a job of several processes (neuronmem_client_options_t.num_processes) has a Job: its process index,
// its cores and the dist::Fabric to its peers. An executable that uses the process grid runs on global device ids
// (device d of process p has id p * cores + d): every process launches its own devices with the same program,
// and the grid processes of the other OS processes are remote. A launch's CrossProcessLaunch is the grid's
// interp::RemoteProcesses: it moves the messages and collective operands between local and remote grid processes
// over the fabric, while the local ones still meet through the grid and the launch's in-process Transport.
//
// Matching: both sides count the messages of each (sender device, receiver device) pair within a launch, and the
// launches of a client that span processes; the fabric tag is (launch count, sender core, receiver core, message
// count). So every process of a job must submit its cross-process launches in the same order (as XLA requires of
// launches with collectives). Each message carries the launch id, the program's fingerprint, the op, the channel
// and the shapes, and a receive checks all of them: processes that run another program or another launch, or reach
// another op, fail with FAILED_PRECONDITION naming the peer, never with a wrong result. A lost peer fails the op
// waiting on it with UNAVAILABLE naming the process and the op (the fabric's peer timeout).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/status.h"
#include "dist/fabric.h"
#include "interpreter/process.h"

namespace neuronmem::exec {

class CrossProcessLaunch;

// This client's place in a job. Thread-safe.
class Job {
 public:
  // `fabric` (not owned) outlives the Job; `cores`: this process's cores (every process has as many).
  Job(dist::Fabric* fabric, uint32_t cores) : fabric_(fabric), cores_(cores) {}

  uint32_t process_index() const { return fabric_->process_index(); }
  uint32_t num_processes() const { return fabric_->num_processes(); }
  uint32_t cores() const { return cores_; }
  uint32_t num_devices() const { return cores_ * num_processes(); }
  // The global device id of local core `core`.
  uint32_t Global(uint32_t core) const { return process_index() * cores_ + core; }
  dist::Fabric& fabric() const { return *fabric_; }
  // Where the launches' messages and received values are staged: kept for reuse (up to 256 MiB: a 64 MiB exchange holds
  // a message and a staging buffer), so a large message does not fault in fresh memory on each side every time (4 MiB:
  // about 4 ms of a 8-9 ms launch).
  BufferCache& buffers() const { return *buffers_; }

  // The link of a launch that spans processes: `fingerprint` identifies the program, `launch_id` the caller's
  // launch (0: none given); every process passes the same ones. It is numbered once submitted (Submit).
  std::unique_ptr<CrossProcessLaunch> NewLaunch(uint64_t fingerprint, uint64_t launch_id);

 private:
  friend class CrossProcessLaunch;
  dist::Fabric* fabric_;
  const uint32_t cores_;
  mutable std::atomic<uint64_t> launches_{0};  // launches submitted across processes
  const std::shared_ptr<BufferCache> buffers_ = BufferCache::Create(256u << 20);
};

// One launch's messages to and from the other processes of the job.
class CrossProcessLaunch final : public interp::RemoteProcesses {
 public:
  CrossProcessLaunch(const Job& job, uint64_t fingerprint, uint64_t launch_id)
      : job_(job), fingerprint_(fingerprint), launch_id_(launch_id), interrupts_(job.num_devices()) {}

  // What stops local process `process`'s execution (its ExecutionControl's interrupt; nullable): a receive it waits
  // in ends when the execution is cancelled or its deadline passes. Set by the process's own thread before it runs.
  void SetInterrupt(uint32_t process, const std::atomic<int>* interrupt) { interrupts_[process] = interrupt; }

  // Numbers the launch: the next of the client's launches across processes. Once, when it is sure to run (a launch
  // refused at submission takes no number), in the order launches enter their queues; before any message.
  void Submit() { sequence_ = job_.launches_.fetch_add(1, std::memory_order_relaxed); }

  bool IsRemote(uint32_t process) const override { return process / job_.cores() != job_.process_index(); }
  uint32_t Owner(uint32_t process) const override { return process / job_.cores(); }
  Status Send(const interp::OpSite& site, uint32_t from, uint32_t to, const interp::TensorView* data,
              size_t n) override;
  Status Recv(const interp::OpSite& site, uint32_t from, uint32_t to, const interp::TensorView* results, size_t n,
              uint32_t patience) override;
  Status SendFailure(const interp::OpSite& site, uint32_t from, uint32_t to, const neuronmem_status_t& why) override;
  BufferLease Staging(size_t bytes) override { return job_.buffers().Take(bytes); }

  // Payload bytes this launch sent to and received from other processes.
  uint64_t bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }
  uint64_t bytes_received() const { return bytes_received_.load(std::memory_order_relaxed); }

 private:
  struct Descriptor;  // what every message starts with
  // A message being built: room for the descriptor, then `bytes` of payload (at least kInline: the first message's).
  struct Message {
    BufferLease data;
    size_t bytes = 0;
    char* payload() const;
  };
  Message NewMessage(size_t bytes) const;
  // Numbers the message from `from` to `to` and sends it: `d` (its descriptor, numbered here and written into `m`),
  // then m's payload: the first kInline bytes with the descriptor (copied by the fabric), the rest in a second
  // message sent from `m` itself, which the fabric holds until it is delivered.
  Status Post(const interp::OpSite& site, uint32_t from, uint32_t to, Descriptor& d, Message m);
  // The fabric tag of message `k` (part 0: the descriptor with the first bytes, 1: the rest) from `from` to `to`.
  uint64_t Tag(uint32_t from, uint32_t to, uint64_t k, int part) const;
  uint64_t Next(std::map<std::pair<uint32_t, uint32_t>, uint64_t>& counts, uint32_t from, uint32_t to);

  const Job& job_;
  uint64_t sequence_ = 0;
  const uint64_t fingerprint_, launch_id_;
  std::vector<const std::atomic<int>*> interrupts_;  // per grid process (only local ones are set)
  std::mutex mu_;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> sent_, received_;
  std::atomic<uint64_t> bytes_sent_{0}, bytes_received_{0};
};

}  // namespace neuronmem::exec
