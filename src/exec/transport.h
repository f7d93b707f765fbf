// How the cores of a launch reach each other: the one interface between the executor and whatever moves bytes
// between the processes of a launch's grid (interp::ProcessGrid, src/interpreter/process.h).
//
// The executor runs each device of a launch as one process of the grid and hands the grid a per-launch link
// (runtime.cc) that counts every message as a peer transfer of its receiving execution and then calls
// Transport::Copy. The executor never moves peer bytes itself, and never names an implementation: the
// runtime is built with one Transport (by default the in-process one, between the cores of this client).
//
// Launches across the processes of a job keep this transport for the copies within a process: the grid's remote
// processes are served by exec::CrossProcessLaunch over the job's fabric (cross_process.h), and what it receives
// is copied into the receiving device's memory through this interface. docs/executor.md ("Transport").
#pragma once

#include <memory>

#include "base/status.h"
#include "copy/copy_engine.h"
#include "interpreter/process.h"

namespace neuronmem::exec {

class Transport {
 public:
  virtual ~Transport() = default;
  // For messages: "in-process".
  virtual const char* name() const = 0;
  // Copies `t`: rows of bytes from process t.from's memory into process t.to's. Called on one of the two
  // processes' threads while the sender keeps the source alive and unchanged; several copies may run at once.
  // A failure fails the op that moved the bytes.
  virtual Status Copy(const interp::Transfer& t) = 0;
};

// The cores of one client: every byte moves through the client's copy engine (CopyEngine::PeerCopy), device
// memory to device memory with no host round trip.
std::unique_ptr<Transport> NewInProcessTransport(copy::CopyEngine& engine);

}  // namespace neuronmem::exec
