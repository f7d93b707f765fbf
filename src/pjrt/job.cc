// A client's place in a job of several processes (docs/distributed.md): PJRT_Client_Create's kv_get / kv_put
// callbacks as the store the job bootstraps through, and the libfabric endpoint that bootstrap opens.
#include <chrono>
#include <string>

#include "dist/fabric.h"
#include "dist/store.h"
#include "pjrt/plugin.h"

namespace neuronmem::pjrt {
namespace {

// The message and code of an error a frontend's callback returned (made by PJRT_CallbackError, so one of this
// plugin's errors), as a Status; the error is destroyed.
Status TakeCallbackError(PJRT_Error* e, const std::string& what) {
  const PJRT_Error_Code code = e->code;
  std::string message = what + ": " + e->message;
  DestroyError(e);
  switch (code) {
    case PJRT_Error_Code_NOT_FOUND:  // absent after the wait: the bootstrap's deadline
    case PJRT_Error_Code_DEADLINE_EXCEEDED: return DeadlineExceeded("%s", message.c_str());
    case PJRT_Error_Code_INVALID_ARGUMENT: return InvalidArgument("%s", message.c_str());
    default: return Unavailable("%s", message.c_str());
  }
}

PJRT_Error* CallbackError(PJRT_Error_Code code, const char* message, size_t message_size) {
  return MakeError(code, std::string(message ? message : "", message ? message_size : 0));
}
// The callbacks receive a pointer to the function that makes their errors.
PJRT_CallbackError g_callback_error = CallbackError;

// The frontend's kv_get / kv_put (PJRT's callback shapes) as the job's store.
class CallbackStore final : public dist::KvStore {
 public:
  explicit CallbackStore(const PJRT_Client_Create_Args* args) : args_(args) {}

  Status Get(const std::string& key, std::chrono::milliseconds timeout, std::string* value) override {
    PJRT_KeyValueGetCallback_Args a{};
    a.struct_size = PJRT_KeyValueGetCallback_Args_STRUCT_SIZE;
    a.key = key.data();
    a.key_size = key.size();
    a.timeout_in_ms = timeout.count() > INT32_MAX ? INT32_MAX : static_cast<int>(timeout.count());
    a.callback_error = &g_callback_error;
    a.user_arg = args_->kv_get_user_arg;
    if (PJRT_Error* e = args_->kv_get_callback(&a)) return TakeCallbackError(e, "kv_get('" + key + "')");
    if (!a.value && a.value_size) return InvalidArgument("kv_get('%s') succeeded without a value", key.c_str());
    const size_t n = a.value_size;
    if (a.value)
      value->assign(a.value, n);
    else
      value->clear();
    if (a.value && a.value_deleter_callback) a.value_deleter_callback(a.value);
    if (n > dist::kMaxStoreValueBytes)
      return InvalidArgument("kv_get('%s') returned %zu bytes (at most %zu)", key.c_str(), n,
                             dist::kMaxStoreValueBytes);
    return Ok();
  }

  Status Put(const std::string& key, const std::string& value) override {
    PJRT_KeyValuePutCallback_Args a{};
    a.struct_size = PJRT_KeyValuePutCallback_Args_STRUCT_SIZE;
    a.key = key.data();
    a.key_size = key.size();
    a.value = value.data();
    a.value_size = value.size();
    a.callback_error = &g_callback_error;
    a.user_arg = args_->kv_put_user_arg;
    if (PJRT_Error* e = args_->kv_put_callback(&a)) return TakeCallbackError(e, "kv_put('" + key + "')");
    return Ok();
  }

 private:
  const PJRT_Client_Create_Args* args_;
};

}  // namespace

PJRT_Error* JoinJob(const PJRT_Client_Create_Args* args, const JobOptions& job, uint32_t num_cores,
                    std::unique_ptr<dist::Fabric>* out) {
  if (job.num_processes <= 1) {
    if (job.process_index != 0)
      return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                    "PJRT_Client_Create: process_index (node_id) %u is out of range: a job of one process",
                    job.process_index);
    return nullptr;
  }
  if (job.process_index >= job.num_processes)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "PJRT_Client_Create: process_index (node_id) %u is out of range (num_processes %u)",
                  job.process_index, job.num_processes);
  if (!args->kv_get_callback || !args->kv_put_callback)
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "PJRT_Client_Create: a job of %u processes needs kv_get_callback and kv_put_callback",
                  job.num_processes);
  CallbackStore store(args);
  dist::FabricOptions f;
  f.process_index = job.process_index;
  f.num_processes = job.num_processes;
  f.store = &store;
  f.key_prefix = "neuronmem_pjrt/";
  f.local_cores = num_cores;
  if (!job.fabric_interface.empty()) f.node = job.fabric_interface;
  return FromStatus(dist::Fabric::Create(f, out), "PJRT_Client_Create: joining the job");
}

}  // namespace neuronmem::pjrt
