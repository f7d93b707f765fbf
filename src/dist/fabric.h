// Messages between the processes of a job over libfabric (docs/distributed.md).
//
// A Fabric is this process's place in a job of num_processes processes: one libfabric reliable-datagram
// endpoint (FI_EP_RDM, tagged messages) whose provider libfabric chooses (FI_PROVIDER is honoured: tcp or shm
// on one machine, efa on AWS), bound to the interface the caller names (loopback by default). Create
// bootstraps through the job's KvStore: process 0 publishes a fresh job token, every process publishes its
// endpoint address with the token and reads its peers'. Every message carries the token and its sender's
// index; a message that does not (not from an endpoint of this job) is dropped and counted, never copied
// into the caller's buffer.
//
// Sends are buffered, as in XLA: Send copies the data and returns without waiting for the receiver (the
// bytes move whether or not this process makes a later call: the Fabric's progress thread polls while its sends are
// not done and no call is inside; and before the Fabric is destroyed), so a ring where
// every process sends before it receives completes. SendOwned skips the copy and holds the caller's reference to the
// bytes until the provider is done with them. A receive waits for its peer at most peer_timeout; then,
// or when the provider reports the peer unreachable, it fails with UNAVAILABLE naming the lost process and
// the op waiting on it, and every later op that needs that peer fails at once.
//
// Thread-safe: calls are serialised, except that a Recv waiting for its message lets other threads' calls run
// (the cores of a launch send and receive at once). Processes must make their collectives in the same order
// (each collective is matched by its sequence number).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "dist/store.h"

namespace neuronmem::dist {

struct FabricOptions {
  uint32_t process_index = 0;
  uint32_t num_processes = 1;             // 1..65535
  KvStore* store = nullptr;               // required; not owned, used only during Create
  std::string key_prefix = "neuronmem/";  // the job's keys in the store
  uint32_t local_cores = 1;               // published; every process of a job must have the same count
  // How long Create waits for every peer to publish its endpoint.
  std::chrono::milliseconds bootstrap_timeout{30000};
  // How long an op waits for a peer before declaring it lost.
  std::chrono::milliseconds peer_timeout{30000};
  std::string provider;            // "" = libfabric's choice (FI_PROVIDER honoured)
  std::string node = "127.0.0.1";  // the interface the endpoint binds to
  // Register memory (RegisterMemory, the message buffers) and pass descriptors even when the provider does not
  // require it (FI_MR_LOCAL): for tests of the registered path on tcp or shm. Providers that require it
  // (efa) always get it.
  bool register_memory = false;
  // Messages above this many bytes travel as chunks of it, each its own message (the receiver takes chunk k while
  // the sender copies chunk k + 1; an all_reduce reduces each chunk as it lands), where the provider keeps a peer's
  // messages in order (FI_ORDER_SAS; else whole). A multiple of 64, at least 4096; 0 = whole messages, the default:
  // on tcp;ofi_rxm chunks were not faster (docs/performance.md, "Between processes: chunks"). Every process of a
  // job must use the same (Create refuses a peer that does not).
  size_t chunk_bytes = 0;
};

// The reductions AllReduce applies, over these element types.
enum class ReduceKind { kSum, kProduct, kMin, kMax };
enum class ReduceType { kF32, kF64, kS32, kS64, kU32, kU64 };

struct FabricStats {
  uint64_t messages_sent = 0, bytes_sent = 0;
  uint64_t messages_received = 0, bytes_received = 0;
  uint64_t messages_dropped = 0;   // not from an endpoint of this job (wrong token, sender, tag or size)
  uint64_t receives_in_place = 0;  // received straight into the caller's buffer (no copy)
  uint64_t registered_bytes = 0;   // memory registered with the provider (regions and message buffers)
  uint64_t sends_in_place = 0;     // SendOwned messages posted from the caller's memory (no copy)
};

class Fabric {
 public:
  // Opens the endpoint, bootstraps, and starts the Fabric's progress thread (one per Fabric; parked while nothing of
  // this process is in flight). INVALID_ARGUMENT (bad index or count, no store), DEADLINE_EXCEEDED naming the processes
  // that did not publish within bootstrap_timeout, FAILED_PRECONDITION (a peer published another job's token, another
  // core count, or two processes claim one index), UNAVAILABLE (libfabric offers no RDM provider, or it fails).
  static Status Create(const FabricOptions& options, std::unique_ptr<Fabric>* out);
  // Stops the progress thread, waits (at most peer_timeout) for buffered sends to reach live peers, then closes the
  // endpoint.
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  uint32_t process_index() const;
  uint32_t num_processes() const;
  // The provider libfabric chose ("tcp", "shm", "tcp;ofi_rxm", ...).
  const std::string& provider() const;
  FabricStats stats() const;
  // Whether this endpoint registers memory and passes descriptors (the provider requires FI_MR_LOCAL, or
  // FabricOptions::register_memory).
  bool registers_memory() const;

  // Registers [base, base + bytes) with the provider once (the pinned-host and device arenas): receives of
  // at least 64 KiB into it land in place with its descriptor. Where memory is registered, a receive into
  // memory outside every registered region goes through a registered buffer of the Fabric and is copied out.
  // A no-op (Ok) when registers_memory() is false. The region must outlive the Fabric or be unregistered
  // first. INVALID_ARGUMENT for an empty region or one overlapping a registered one, UNAVAILABLE if the
  // provider refuses it.
  Status RegisterMemory(void* base, size_t bytes);
  // Forgets a region registered at `base` (INVALID_ARGUMENT if there is none).
  Status UnregisterMemory(void* base);

  // Point to point, matched by (sender, receiver, tag); tags at or above 2^47 are reserved for collectives.
  // `op` names the caller's op in failures. Send is buffered (above); Recv waits for exactly `bytes` bytes.
  // A Recv of at least 64 KiB (into registered memory, where memory is registered) lands in `data` directly
  // and is directed to the peer's endpoint (from the store): another endpoint's message never matches it (so
  // it is not counted as dropped either), and a shorter message of the job (FAILED_PRECONDITION) may have
  // written its bytes into `data`.
  // interrupt (nullable): once it holds a status code (CANCELLED, DEADLINE_EXCEEDED: an execution stopped), Recv
  // stops waiting and fails with that code; the peer is not lost for it.
  // patience: how many peer timeouts Recv waits before declaring the peer lost (a message that can come only after
  // other processes' messages, each of which may take a peer timeout, e.g. down a chain; 0 counts as 1).
  Status Send(uint32_t to, uint64_t tag, const void* data, size_t bytes, std::string_view op = "send");
  Status Recv(uint32_t from, uint64_t tag, void* data, size_t bytes, std::string_view op = "recv",
              const std::atomic<int>* interrupt = nullptr, uint32_t patience = 1);

  // A buffered send without the staging copy: a message of at least 16 KiB is posted straight from `data` (where memory
  // is registered, only when `data` lies in a RegisterMemory region), and the Fabric holds `keep` (nullable; whatever
  // keeps those bytes valid: a buffer's owner) until the provider is done with them: delivered, held by the receiver's
  // provider, failed, or the peer lost; at the latest when the Fabric is destroyed. The caller must not change the
  // bytes until `keep` is dropped. Returns without waiting for the receiver, like Send; a smaller message, or one
  // the provider cannot gather, is copied as Send does (`keep` dropped on return). `keep` is dropped under the
  // Fabric's lock, by whichever thread reads the completion (a call, or the Fabric's progress thread): its destructor
  // must not call the Fabric and must be safe on another thread. Matched like
  // Send, in order with this process's other sends to `to`; errors as Send's.
  Status SendOwned(uint32_t to, uint64_t tag, const void* data, size_t bytes, std::shared_ptr<const void> keep,
                   std::string_view op = "send");

  // StableHLO collective_permute across processes: for each (source, target) pair, source's `in` becomes
  // target's `out`; a process that is no pair's target gets zeros. Every process passes the same pairs
  // (no source or target twice). `in` and `out` may alias.
  Status CollectivePermute(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, const void* in, void* out,
                           size_t bytes);
  // all_reduce over all processes as a ring (reduce-scatter then all-gather: each process sends and receives
  // 2(n-1)/n of the data, whatever n). `data` (count elements) is reduced in place; every process ends with
  // the same bits. A process that fails a step (a lost peer) passes its failure to its ring successor in place of
  // its next message, and step t waits t + 1 peer timeouts for its message (it can come only after the t steps
  // before it around the ring): every survivor fails naming the lost process, never a live one stuck behind it,
  // within 2(n-1) peer timeouts.
  Status AllReduce(ReduceKind kind, ReduceType type, void* data, size_t count);

  class Impl;

 private:
  explicit Fabric(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace neuronmem::dist
