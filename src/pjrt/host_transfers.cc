// Send/recv host transfers (stablehlo.send / recv with is_host_transfer) through PJRT's callbacks: a send's
// payload is handed to the frontend's PJRT_SendCallback as one chunk; a recv hands the frontend a
// PJRT_CopyToDeviceStream, whose chunks (PJRT_CopyToDeviceStream_AddChunk) fill the recv's result, and the
// execution waits (on its core's launch thread) until the stream holds every byte or is destroyed.
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/fault.h"
#include "exec/custom_kernels.h"
#include "exec/runtime.h"
#include "pjrt/plugin.h"

// What a recv's stream and the waiting execution share.
struct PJRT_CopyToDeviceStream {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    char* dst = nullptr;  // the recv's result; written only while the execution waits (!finished)
    int64_t total = 0, current = 0;
    bool finished = false;   // the execution stopped waiting: no chunk may land any more
    bool abandoned = false;  // the frontend destroyed the stream
  };
  std::shared_ptr<State> state;
};

namespace neuronmem::pjrt {
namespace {

uint64_t TensorBytes(const exec::CustomKernelTensor& t) {
  uint64_t n = ElementByteSize(t.type);
  for (size_t d = 0; d < t.rank; ++d) n *= static_cast<uint64_t>(t.dims[d]);
  return n;
}

PJRT_Error* CallbackError(PJRT_Error_Code code, const char* message, size_t size) {
  return MakeError(code, std::string(message ? message : "", message ? size : 0));
}
PJRT_CallbackError g_callback_error = CallbackError;

// A frontend callback's error as a status (the error is destroyed).
Status StatusOf(PJRT_Error* e, const char* what, int64_t channel) {
  if (!e) return Ok();
  const int32_t code = e->code >= PJRT_Error_Code_CANCELLED && e->code <= PJRT_Error_Code_DATA_LOSS
                           ? static_cast<int32_t>(e->code)
                           : static_cast<int32_t>(PJRT_Error_Code_UNKNOWN);
  Status s = MakeStatus(static_cast<neuronmem_status_code_t>(code),
                        std::string(what) + " callback of channel " + std::to_string(channel) + ": " + e->message);
  DestroyError(e);
  return s;
}

// What a frontend's send or recv callback did, through the test-only fault site fault::Site::kCallback as every
// other caller's callback (api::CallbackResult): armed, a callback that ran and succeeded fails instead with
// ABORTED "<what> callback of channel <n>: injected fault: the PJRT <what> callback failed".
Status CallbackResult(Status returned, bool injected, const char* what, int64_t channel) {
  if (!injected) return returned;
  return MakeStatus(NEURONMEM_STATUS_ABORTED, std::string(what) + " callback of channel " + std::to_string(channel) +
                                                  ": injected fault: the PJRT " + what + " callback failed");
}

void FreeChunk(void* data, void*) { std::free(data); }

Status Send(const PJRT_SendCallbackInfo& info, const exec::HostTransfer& t) {
  uint64_t total = 0;
  for (size_t k = 0; k < t.num_tensors; ++k) total += TensorBytes(t.tensors[k]);
  void* data = std::malloc(total ? total : 1);
  if (!data)
    return ResourceExhausted("send to the host, channel %lld: out of host memory", static_cast<long long>(t.channel));
  char* p = static_cast<char*>(data);
  for (size_t k = 0; k < t.num_tensors; ++k) {
    const uint64_t n = TensorBytes(t.tensors[k]);
    std::memcpy(p, t.tensors[k].data, n);
    p += n;
  }
  PJRT_Chunk chunk{data, total, FreeChunk, nullptr};  // the callback calls the deleter
  Status returned;
  {
    CallerCallbackScope scope("a PJRT send callback");
    returned = StatusOf(info.send_callback(&chunk, &g_callback_error, total, true, info.user_arg), "send", t.channel);
  }
  return CallbackResult(std::move(returned), fault::Hit(fault::Site::kCallback), "send", t.channel);
}

Status Recv(const PJRT_RecvCallbackInfo& info, const exec::HostTransfer& t) {
  if (t.num_tensors != 1)
    return Unimplemented("recv from the host, channel %lld: %zu results (one is supported)",
                         static_cast<long long>(t.channel), t.num_tensors);
  auto state = std::make_shared<PJRT_CopyToDeviceStream::State>();
  state->dst = static_cast<char*>(t.tensors[0].data);
  state->total = static_cast<int64_t>(TensorBytes(t.tensors[0]));
  auto* stream = new PJRT_CopyToDeviceStream{state};  // the callback owns it (PJRT_CopyToDeviceStream_Destroy)
  {
    CallerCallbackScope scope("a PJRT recv callback");
    info.recv_callback(stream, info.user_arg);
  }
  // An injected failure still waits for the stream: nothing may land in the result after the execution failed.
  const bool injected = fault::Hit(fault::Site::kCallback);
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->current == state->total || state->abandoned; });
  state->finished = true;
  if (injected) return CallbackResult(Ok(), true, "recv", t.channel);
  if (state->current != state->total) {
    return FailedPrecondition("recv from the host, channel %lld: the stream was destroyed after %lld of %lld bytes",
                              static_cast<long long>(t.channel), static_cast<long long>(state->current),
                              static_cast<long long>(state->total));
  }
  return Ok();
}

// ---- the stream's slots

PJRT_Error* PJRT_CopyToDeviceStream_Destroy(PJRT_CopyToDeviceStream_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_CopyToDeviceStream_Destroy_Args, stream);
  if (!args->stream) return nullptr;
  {
    std::lock_guard<std::mutex> lock(args->stream->state->mu);
    args->stream->state->abandoned = true;
  }
  args->stream->state->cv.notify_all();
  delete args->stream;
  return nullptr;
}

PJRT_Error* PJRT_CopyToDeviceStream_AddChunk(PJRT_CopyToDeviceStream_AddChunk_Args* args) {
  NM_PJRT_ARGS(args, PJRT_CopyToDeviceStream_AddChunk_Args, transfer_complete);
  args->transfer_complete = nullptr;
  NM_PJRT_REQUIRE(args->stream);
  NM_PJRT_REQUIRE(args->chunk);
  NM_PJRT_BEGIN
  PJRT_Chunk chunk = *args->chunk;
  auto& st = *args->stream->state;
  Status error;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.finished || st.current == st.total) {
      error = FailedPrecondition("PJRT_CopyToDeviceStream_AddChunk: the stream is complete");
    } else if (static_cast<int64_t>(chunk.size) > st.total - st.current) {
      error = InvalidArgument("PJRT_CopyToDeviceStream_AddChunk: a chunk of %zu bytes exceeds the %lld bytes left",
                              chunk.size, static_cast<long long>(st.total - st.current));
    } else {
      if (chunk.size) std::memcpy(st.dst + st.current, chunk.data, chunk.size);
      st.current += static_cast<int64_t>(chunk.size);
    }
  }
  st.cv.notify_all();
  if (chunk.deleter) chunk.deleter(chunk.data, chunk.deleter_arg);  // the stream took the chunk
  args->transfer_complete = NewPjrtEvent(error ? FailedEvent(std::move(error)) : ReadyEvent());
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_CopyToDeviceStream_TotalBytes(PJRT_CopyToDeviceStream_TotalBytes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_CopyToDeviceStream_TotalBytes_Args, total_bytes);
  NM_PJRT_REQUIRE(args->stream);
  args->total_bytes = args->stream->state->total;
  return nullptr;
}

PJRT_Error* PJRT_CopyToDeviceStream_GranuleSize(PJRT_CopyToDeviceStream_GranuleSize_Args* args) {
  NM_PJRT_ARGS(args, PJRT_CopyToDeviceStream_GranuleSize_Args, granule_size_in_bytes);
  NM_PJRT_REQUIRE(args->stream);
  args->granule_size_in_bytes = 1;  // any chunk size
  return nullptr;
}

PJRT_Error* PJRT_CopyToDeviceStream_CurrentBytes(PJRT_CopyToDeviceStream_CurrentBytes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_CopyToDeviceStream_CurrentBytes_Args, current_bytes);
  NM_PJRT_REQUIRE(args->stream);
  std::lock_guard<std::mutex> lock(args->stream->state->mu);
  args->current_bytes = args->stream->state->current;
  return nullptr;
}

}  // namespace

PJRT_Error* HostCallbacksOf(const PJRT_ExecuteOptions* o, const std::vector<uint32_t>& cores,
                            std::shared_ptr<const exec::HostCallbacks>* out) {
  out->reset();
  if (!o->num_send_ops && !o->num_recv_ops) return nullptr;
  if ((o->num_send_ops && !o->send_callbacks) || (o->num_recv_ops && !o->recv_callbacks))
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "PJRT_LoadedExecutable_Execute: options->send_callbacks or recv_callbacks is NULL with a count");
  const size_t n = cores.size();
  // The device list index of each core of the launch.
  std::map<uint32_t, size_t> index;
  for (size_t d = 0; d < n; ++d) index[cores[d]] = d;
  auto callbacks = std::make_shared<exec::HostCallbacks>();
  for (int send = 1; send >= 0; --send) {
    const size_t count = send ? o->num_send_ops : o->num_recv_ops;
    // channel -> one info per device
    std::map<int64_t, std::vector<const void*>> per_channel;
    for (size_t d = 0; d < n; ++d) {
      const void* list = send ? static_cast<const void*>(o->send_callbacks[d]) : o->recv_callbacks[d];
      if (!list)
        return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_LoadedExecutable_Execute: %s_callbacks[%zu] is NULL",
                      send ? "send" : "recv", d);
      for (size_t k = 0; k < count; ++k) {
        const int64_t channel = send ? o->send_callbacks[d][k].channel_id : o->recv_callbacks[d][k].channel_id;
        const bool has_fn =
            send ? o->send_callbacks[d][k].send_callback != nullptr : o->recv_callbacks[d][k].recv_callback != nullptr;
        if (!has_fn)
          return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                        "PJRT_LoadedExecutable_Execute: %s_callbacks[%zu][%zu] has no callback", send ? "send" : "recv",
                        d, k);
        std::vector<const void*>& v = per_channel[channel];
        v.resize(n, nullptr);
        v[d] = send ? static_cast<const void*>(&o->send_callbacks[d][k]) : &o->recv_callbacks[d][k];
      }
    }
    for (auto& [channel, infos] : per_channel) {
      if (send) {
        std::vector<PJRT_SendCallbackInfo> copies(n);  // the info structs need not outlive the call
        for (size_t d = 0; d < n; ++d)
          if (infos[d]) copies[d] = *static_cast<const PJRT_SendCallbackInfo*>(infos[d]);
        callbacks->send[channel] = [copies, index](const exec::HostTransfer& t) -> Status {
          const auto at = index.find(t.core);
          const PJRT_SendCallbackInfo* info = at == index.end() ? nullptr : &copies[at->second];
          if (!info || !info->send_callback)
            return FailedPrecondition("send to the host, channel %lld: no callback for device %u",
                                      static_cast<long long>(t.channel), t.core);
          return Send(*info, t);
        };
      } else {
        std::vector<PJRT_RecvCallbackInfo> copies(n);
        for (size_t d = 0; d < n; ++d)
          if (infos[d]) copies[d] = *static_cast<const PJRT_RecvCallbackInfo*>(infos[d]);
        callbacks->recv[channel] = [copies, index](const exec::HostTransfer& t) -> Status {
          const auto at = index.find(t.core);
          const PJRT_RecvCallbackInfo* info = at == index.end() ? nullptr : &copies[at->second];
          if (!info || !info->recv_callback)
            return FailedPrecondition("recv from the host, channel %lld: no callback for device %u",
                                      static_cast<long long>(t.channel), t.core);
          return Recv(*info, t);
        };
      }
    }
  }
  *out = std::move(callbacks);
  return nullptr;
}

void FillHostTransfers(PJRT_Api* api) {
  api->PJRT_CopyToDeviceStream_Destroy = PJRT_CopyToDeviceStream_Destroy;
  api->PJRT_CopyToDeviceStream_AddChunk = PJRT_CopyToDeviceStream_AddChunk;
  api->PJRT_CopyToDeviceStream_TotalBytes = PJRT_CopyToDeviceStream_TotalBytes;
  api->PJRT_CopyToDeviceStream_GranuleSize = PJRT_CopyToDeviceStream_GranuleSize;
  api->PJRT_CopyToDeviceStream_CurrentBytes = PJRT_CopyToDeviceStream_CurrentBytes;
}

}  // namespace neuronmem::pjrt
