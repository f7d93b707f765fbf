// The devices of an sdy.manual_computation on the client's NeuronCores (interp::Program::RunOptions::parallel;
// docs/executor.md, "Shardy"). Each core has a worker thread for them, made the first time a manual computation
// uses the core, that runs one device at a time. A computation run by an execution on core c runs device d on
// core (c + d) mod cores: device 0 on the execution's own thread, the others on their cores' workers, each with
// its scratch (its slices, results and frames) from its core's device memory. Its devices wait for one another
// in their collectives, so they never run one after another: a device beyond the client's cores (more devices
// than cores), or whose core's worker is busy with another computation's device, runs on a std::thread of its own
// instead (sharing the cores). A computation never waits for a worker, so two computations cannot deadlock over
// them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "core/client.h"
#include "exec/stats.h"
#include "interpreter/interpreter.h"

namespace neuronmem::exec {

class CoreWorkers {
 public:
  explicit CoreWorkers(core::Client& client);
  // Stops and joins the workers (none may be running a device: the runtime waits for its executions first).
  ~CoreWorkers();
  CoreWorkers(const CoreWorkers&) = delete;
  CoreWorkers& operator=(const CoreWorkers&) = delete;

  size_t cores() const { return workers_.size(); }

  // The hook of one execution running on `core` (RunOptions::parallel: parallel.context = this call). `stats`
  // (nullable) gets how many cores and threads its manual computations ran their devices on.
  struct Call {
    CoreWorkers* workers = nullptr;
    uint32_t core = 0;
    ExecutionStats* stats = nullptr;
  };
  static void Run(void* call, size_t n, size_t bytes, interp::Program::RunOptions::Parallel::Task task, void* arg);

 private:
  struct Worker;
  struct Job;
  // Gives `job`'s device k to core c's worker; false when that worker runs another device (it is left alone).
  bool Claim(uint32_t c, Job* job, size_t k);
  void Loop(Worker* w);

  core::Client& client_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace neuronmem::exec
