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

// Written by the submitting thread (implicit copies) and the thread running the execution; read once the
// execution's event is ready (its completion publishes every field). The implicit copies' time is added
// from their events' callbacks, hence atomic.
struct ExecutionStats {
  TransferCounts pairs[kNumMemoryKinds][kNumMemoryKinds];
  uint64_t op_ns = 0;
  uint64_t explicit_transfer_ns = 0;
  std::atomic<uint64_t> implicit_transfer_ns{0};
  uint64_t queue_ns = 0;
  // sdy.manual_computation devices (a body that communicates, on a client of more than one core; CoreWorkers):
  // the most cores one computation of the execution ran its devices on, and the most devices one ran on threads
  // of their own (beyond the cores, or a core's worker busy). Written by the threads running the computations.
  std::atomic<uint64_t> manual_cores{0};
  std::atomic<uint64_t> manual_threads{0};

  void AddExplicit(MemoryKind from, MemoryKind to, uint64_t bytes) {
    TransferCounts& c = pairs[static_cast<int>(from)][static_cast<int>(to)];
    ++c.explicit_transfers;
    c.explicit_bytes += bytes;
  }
  void AddImplicit(MemoryKind from, MemoryKind to, uint64_t bytes) {
    TransferCounts& c = pairs[static_cast<int>(from)][static_cast<int>(to)];
    ++c.implicit_transfers;
    c.implicit_bytes += bytes;
  }
  void AddPeer(MemoryKind from, MemoryKind to, uint64_t bytes) {
    TransferCounts& c = pairs[static_cast<int>(from)][static_cast<int>(to)];
    ++c.peer_transfers;
    c.peer_bytes += bytes;
  }
  TransferCounts Total() const {
    TransferCounts t;
    for (const auto& row : pairs) {
      for (const TransferCounts& c : row) {
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
