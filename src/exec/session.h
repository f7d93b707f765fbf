// The composition root of the executor: one core client (devices, memories, copy engine), its executor
// runtime (made on first use), its kernel registry and the count of live executable handles, with the
// rules for tearing them down. The C API's client handle, the PJRT plugin, C++ tests and tools all build
// the stack through a Session, so the destroy rules live in one place.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "base/status.h"
#include "core/client.h"
#include "exec/custom_kernels.h"
#include "exec/executable.h"
#include "exec/runtime.h"
#include "exec/stats.h"
#include "exec/transport.h"
#include "manifest/manifest.h"

namespace neuronmem::exec {

class Session;

// One live handle of an executable (a C or PJRT handle): while any exists, the session refuses to be
// destroyed. Move-only; releases its count when destroyed.
class ExecutableLease {
 public:
  ExecutableLease() = default;
  explicit ExecutableLease(Session* session);
  ExecutableLease(ExecutableLease&& o) noexcept : session_(o.session_) { o.session_ = nullptr; }
  ExecutableLease& operator=(ExecutableLease&& o) noexcept;
  ExecutableLease(const ExecutableLease&) = delete;
  ExecutableLease& operator=(const ExecutableLease&) = delete;
  ~ExecutableLease() { Reset(); }
  void Reset();

 private:
  Session* session_ = nullptr;
};

class Session {
 public:
  // Creates the core client (core::Client::Create's statuses) and wraps it.
  static Status Create(const core::ClientConfig& config, std::unique_ptr<Session>* out);
  explicit Session(std::unique_ptr<core::Client> client);
  // Tears down without checks (Destroy is the checked path): the runtime's workers go before the engine and
  // memories they use.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  core::Client& client() const { return *client_; }
  copy::CopyEngine& engine() const { return client_->copy_engine(); }
  uint32_t num_cores() const { return static_cast<uint32_t>(client_->devices().size()); }
  CustomKernelRegistry& kernels() { return kernels_; }
  // The executor, made on first use with the in-process transport.
  Runtime& runtime();
  // This client is a process of a job (before the executor is made, i.e. before any compile): programs that use
  // the process grid run across the job's processes (cross_process.h). FAILED_PRECONDITION if the executor
  // exists already.
  Status JoinJob(std::unique_ptr<Job> job);
  const Job* job() const { return job_.get(); }
  // Makes the executor with `transport` (tests count or fail peer transfers): FAILED_PRECONDITION if the
  // executor exists already (then `transport` is left with the caller).
  Status UseTransport(std::unique_ptr<Transport>& transport);

  // Compiles for this session's cores with its kernels (Executable::Compile's statuses), makes the executor
  // (so that the first execute does not), and counts the new handle in `lease`.
  Status Compile(const manifest::Manifest& m, const ExecutableOptions& options, std::shared_ptr<const Executable>* out,
                 ExecutableLease* lease);
  // Runtime::Execute / Runtime::Launch on this session's executor.
  Status Execute(const ExecuteRequest& request, copy::Buffer* const* results, Event** done,
                 std::shared_ptr<const ExecutionStats>* stats) {
    return runtime().Execute(request, results, done, stats);
  }
  Status Launch(const LaunchRequest& request, copy::Buffer* const* results, Event** done,
                std::shared_ptr<const ExecutionStats>* stats) {
    return runtime().Launch(request, results, done, stats);
  }

  int64_t live_executables() const { return live_executables_.load(std::memory_order_acquire); }
  // FAILED_PRECONDITION while executable handles, unfinished executions or buffers of the session exist
  // (docs/ownership.md): nothing is destroyed then.
  Status CheckDestroy() const;
  // CheckDestroy, then the teardown: the executor, then the client (core::Client::Destroy's status about
  // live host allocations; the session is destroyed either way once the checks passed). On a failed check
  // the session is handed back in `session`.
  static Status Destroy(std::unique_ptr<Session>& session);

 private:
  friend class ExecutableLease;
  std::unique_ptr<core::Client> client_;
  CustomKernelRegistry kernels_;
  std::unique_ptr<Job> job_;  // before runtime_: the executor uses it
  std::once_flag runtime_once_;
  std::unique_ptr<Runtime> runtime_;
  std::atomic<int64_t> live_executables_{0};
};

}  // namespace neuronmem::exec
