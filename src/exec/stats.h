// Execution statistics: what one execution moved between memory kinds, explicit (the graph asked),
// implicit (the runtime copied an argument) or from a peer (a message another core of its launch sent it),
// and where its time went.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/memory_kind.h"

namespace neuronmem::exec {

struct TransferCounts {
  uint64_t explicit_transfers = 0, explicit_bytes = 0;
  uint64_t implicit_transfers = 0, implicit_bytes = 0;
  uint64_t peer_transfers = 0, peer_bytes = 0;  // messages received from other cores of the launch
};

// One (from, to) pair's counts while the execution runs: written at once by every thread that runs part of it
// (an sdy.manual_computation's devices, the launch's peer and host transfers), hence atomic.
struct AtomicTransferCounts {
  std::atomic<uint64_t> explicit_transfers{0}, explicit_bytes{0};
  std::atomic<uint64_t> implicit_transfers{0}, implicit_bytes{0};
  std::atomic<uint64_t> peer_transfers{0}, peer_bytes{0};

  TransferCounts Load() const {
    TransferCounts c;
    c.explicit_transfers = explicit_transfers.load(std::memory_order_relaxed);
    c.explicit_bytes = explicit_bytes.load(std::memory_order_relaxed);
    c.implicit_transfers = implicit_transfers.load(std::memory_order_relaxed);
    c.implicit_bytes = implicit_bytes.load(std::memory_order_relaxed);
    c.peer_transfers = peer_transfers.load(std::memory_order_relaxed);
    c.peer_bytes = peer_bytes.load(std::memory_order_relaxed);
    return c;
  }
};

// Written by the submitting thread (implicit copies) and the threads running the execution: its own, and those of
// the devices of its sdy.manual_computations, which count their moves and host transfers at once. So the counts
// and the time of the moves are atomic (relaxed: each is only added to); the other fields are written by the
// execution's own thread alone. Read once the execution's event is ready (its completion publishes every field).
// The implicit copies' time is added from their events' callbacks. explicit_transfer_ns sums the moves of every
// thread: devices that move at once add their times up.
struct ExecutionStats {
  AtomicTransferCounts pairs[kNumMemoryKinds][kNumMemoryKinds];
  uint64_t op_ns = 0;
  std::atomic<uint64_t> explicit_transfer_ns{0};
  std::atomic<uint64_t> implicit_transfer_ns{0};
  uint64_t queue_ns = 0;
  // sdy.manual_computation devices (a body that communicates, on a client of more than one core; CoreWorkers):
  // the most cores one computation of the execution ran its devices on, and the most devices one ran on threads
  // of their own (beyond the cores, or a core's worker busy). Written by the threads running the computations.
  std::atomic<uint64_t> manual_cores{0};
  std::atomic<uint64_t> manual_threads{0};

  void AddExplicit(MemoryKind from, MemoryKind to, uint64_t bytes) {
    AtomicTransferCounts& c = pairs[static_cast<int>(from)][static_cast<int>(to)];
    c.explicit_transfers.fetch_add(1, std::memory_order_relaxed);
    c.explicit_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  void AddExplicitTime(uint64_t ns) { explicit_transfer_ns.fetch_add(ns, std::memory_order_relaxed); }
  void AddImplicit(MemoryKind from, MemoryKind to, uint64_t bytes) {
    AtomicTransferCounts& c = pairs[static_cast<int>(from)][static_cast<int>(to)];
    c.implicit_transfers.fetch_add(1, std::memory_order_relaxed);
    c.implicit_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  void AddPeer(MemoryKind from, MemoryKind to, uint64_t bytes) {
    AtomicTransferCounts& c = pairs[static_cast<int>(from)][static_cast<int>(to)];
    c.peer_transfers.fetch_add(1, std::memory_order_relaxed);
    c.peer_bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  TransferCounts Total() const {
    TransferCounts t;
    for (const auto& row : pairs) {
      for (const AtomicTransferCounts& a : row) {
        const TransferCounts c = a.Load();
        t.explicit_transfers += c.explicit_transfers;
        t.explicit_bytes += c.explicit_bytes;
        t.implicit_transfers += c.implicit_transfers;
        t.implicit_bytes += c.implicit_bytes;
        t.peer_transfers += c.peer_transfers;
        t.peer_bytes += c.peer_bytes;
      }
    }
    return t;
  }
};

}  // namespace neuronmem::exec
