#include "exec/session.h"

#include <utility>

namespace neuronmem::exec {

ExecutableLease::ExecutableLease(Session* session) : session_(session) {
  if (session_) session_->live_executables_.fetch_add(1, std::memory_order_acq_rel);
}

ExecutableLease& ExecutableLease::operator=(ExecutableLease&& o) noexcept {
  if (this != &o) {
    Reset();
    session_ = o.session_;
    o.session_ = nullptr;
  }
  return *this;
}

void ExecutableLease::Reset() {
  if (session_) session_->live_executables_.fetch_sub(1, std::memory_order_acq_rel);
  session_ = nullptr;
}

Status Session::Create(const core::ClientConfig& config, std::unique_ptr<Session>* out) {
  std::unique_ptr<core::Client> client;
  NEURONMEM_RETURN_IF_ERROR(core::Client::Create(config, &client));
  *out = std::make_unique<Session>(std::move(client));
  return Ok();
}

Session::Session(std::unique_ptr<core::Client> client) : client_(std::move(client)) {}

Session::~Session() { runtime_.reset(); }

Runtime& Session::runtime() {
  std::call_once(runtime_once_, [this] { runtime_ = std::make_unique<Runtime>(*client_, nullptr, job_.get()); });
  return *runtime_;
}

Status Session::UseTransport(std::unique_ptr<Transport>& transport) {
  bool made = false;
  std::call_once(runtime_once_, [&] {
    runtime_ = std::make_unique<Runtime>(*client_, std::move(transport), job_.get());
    made = true;
  });
  if (!made) return FailedPrecondition("the session's executor exists already: its transport cannot change");
  return Ok();
}

Status Session::JoinJob(std::unique_ptr<Job> job) {
  bool made = true;
  std::call_once(runtime_once_, [&] {
    job_ = std::move(job);
    runtime_ = std::make_unique<Runtime>(*client_, nullptr, job_.get());
    made = false;
  });
  if (made) return FailedPrecondition("the session's executor exists already: it cannot join a job");
  return Ok();
}

Status Session::Compile(const manifest::Manifest& m, const ExecutableOptions& options,
                        std::shared_ptr<const Executable>* out, ExecutableLease* lease) {
  // In a job, a program runs on the job's devices (global ids).
  NEURONMEM_RETURN_IF_ERROR(Executable::Compile(m, options, job_ ? job_->num_devices() : num_cores(), &kernels_, out));
  runtime();
  *lease = ExecutableLease(this);
  return Ok();
}

Status Session::CheckDestroy() const {
  if (const int64_t n = live_executables()) {
    return FailedPrecondition("%lld executables of this client still exist: destroy them first",
                              static_cast<long long>(n));
  }
  if (runtime_ && runtime_->pending()) {
    return FailedPrecondition("%lld executions of this client have not finished: wait for their events",
                              static_cast<long long>(runtime_->pending()));
  }
  return client_->CheckNoLiveBuffers();
}

Status Session::Destroy(std::unique_ptr<Session>& session) {
  NEURONMEM_RETURN_IF_ERROR(session->CheckDestroy());
  std::unique_ptr<Session> s = std::move(session);
  s->runtime_.reset();  // its workers go before the engine and memories they use
  return core::Client::Destroy(std::move(s->client_));
}

}  // namespace neuronmem::exec
