// C shim for buffers and events: argument checks, then the copy engine.
#include <neuronmem/buffer.h>

#include "api/shim.h"
#include "base/event.h"
#include "base/status.h"
#include "copy/copy_engine.h"
#include "core/client.h"

using neuronmem::InvalidArgument;
namespace copy = neuronmem::copy;

namespace {

neuronmem_status_t* CheckWaits(neuronmem_event_t* const* waits, size_t n) {
  if (n && !waits) return InvalidArgument("wait_events is NULL but num_wait_events is %zu", n).release();
  for (size_t i = 0; i < n; ++i) {
    if (!waits[i]) return InvalidArgument("wait_events[%zu] is NULL", i).release();
  }
  return nullptr;
}

// Completes a call whose caller passed no out-event: wait, and return the transfer's error.
neuronmem_status_t* WaitIfNoEvent(neuronmem::Event* ev, neuronmem_event_t** out) {
  if (out) {
    *out = ev;
    return nullptr;
  }
  neuronmem::Wait(ev, -1);
  neuronmem::Status err = neuronmem::CopyStatus(ev->error.get());
  neuronmem::Release(ev);
  return err.release();
}

}  // namespace

extern "C" {

uint64_t neuronmem_element_type_size(neuronmem_element_type_t type) { return copy::ElementSize(type); }

neuronmem_status_t* neuronmem_buffer_from_host(neuronmem_client_t* client,
                                               const neuronmem_buffer_from_host_args_t* args,
                                               neuronmem_buffer_t** out_buffer, neuronmem_event_t** out_ready,
                                               neuronmem_event_t** out_done_with_host) {
  NEURONMEM_REQUIRE(out_buffer);
  *out_buffer = nullptr;
  if (out_ready) *out_ready = nullptr;
  if (out_done_with_host) *out_done_with_host = nullptr;
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(args);
  NEURONMEM_API_BEGIN
  return client->copy_engine->FromHost(args, 1, out_buffer, out_ready, out_done_with_host).release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffers_from_host_batch(neuronmem_client_t* client,
                                                      const neuronmem_buffer_from_host_args_t* args, size_t count,
                                                      neuronmem_buffer_t** out_buffers, neuronmem_event_t** out_ready) {
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(out_buffers);
  for (size_t i = 0; i < count; ++i) out_buffers[i] = nullptr;
  if (count == 0) {
    if (out_ready) *out_ready = neuronmem::ReadyEvent();
    return nullptr;
  }
  NEURONMEM_REQUIRE(args);
  NEURONMEM_API_BEGIN
  return client->copy_engine->FromHost(args, count, out_buffers, out_ready, nullptr).release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_allocate(neuronmem_client_t* client, neuronmem_memory_t* memory,
                                              neuronmem_element_type_t element_type, const int64_t* dims,
                                              size_t num_dims, neuronmem_buffer_t** out_buffer) {
  NEURONMEM_REQUIRE(out_buffer);
  *out_buffer = nullptr;
  NEURONMEM_REQUIRE(client);
  NEURONMEM_REQUIRE(memory);
  NEURONMEM_API_BEGIN
  return client->copy_engine->Allocate(memory, element_type, dims, num_dims, out_buffer).release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_copy_to_memory(neuronmem_buffer_t* src, neuronmem_memory_t* memory,
                                                    neuronmem_event_t* const* wait_events, size_t num_wait_events,
                                                    neuronmem_buffer_t** out_buffer, neuronmem_event_t** out_ready) {
  NEURONMEM_REQUIRE(out_buffer);
  *out_buffer = nullptr;
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(src);
  NEURONMEM_REQUIRE(memory);
  if (auto* s = CheckWaits(wait_events, num_wait_events)) return s;
  NEURONMEM_API_BEGIN
  return src->client->copy_engine->CopyToMemory(src, memory, wait_events, num_wait_events, out_buffer, out_ready)
      .release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_read(neuronmem_buffer_t* buffer, uint64_t offset, void* dst, uint64_t size,
                                          neuronmem_event_t* const* wait_events, size_t num_wait_events,
                                          neuronmem_event_t** out_ready) {
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(buffer);
  if (auto* s = CheckWaits(wait_events, num_wait_events)) return s;
  NEURONMEM_API_BEGIN
  neuronmem::Event* ev = nullptr;
  if (auto s = buffer->client->copy_engine->Read(buffer, offset, dst, size, wait_events, num_wait_events, &ev,
                                                 /*caller_waits=*/out_ready == nullptr)) {
    return s.release();
  }
  return WaitIfNoEvent(ev, out_ready);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_write(neuronmem_buffer_t* buffer, uint64_t offset, const void* src, uint64_t size,
                                           neuronmem_event_t* const* wait_events, size_t num_wait_events,
                                           neuronmem_event_t** out_ready) {
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(buffer);
  if (auto* s = CheckWaits(wait_events, num_wait_events)) return s;
  NEURONMEM_API_BEGIN
  neuronmem::Event* ev = nullptr;
  if (auto s = buffer->client->copy_engine->Write(buffer, offset, src, size, wait_events, num_wait_events, &ev,
                                                  /*caller_waits=*/out_ready == nullptr)) {
    return s.release();
  }
  return WaitIfNoEvent(ev, out_ready);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_upload_chunk(neuronmem_buffer_t* buffer, uint64_t offset, const void* data,
                                                  uint64_t size, int32_t is_last, neuronmem_event_t* const* wait_events,
                                                  size_t num_wait_events, neuronmem_event_t** out_done) {
  if (out_done) *out_done = nullptr;
  NEURONMEM_REQUIRE(buffer);
  if (auto* s = CheckWaits(wait_events, num_wait_events)) return s;
  NEURONMEM_API_BEGIN
  neuronmem::Event* ev = nullptr;
  if (auto s = buffer->client->copy_engine->UploadChunk(buffer, offset, data, size, is_last != 0, wait_events,
                                                        num_wait_events, &ev)) {
    return s.release();
  }
  return WaitIfNoEvent(ev, out_done);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_load_file(neuronmem_buffer_t* buffer, const char* path, uint64_t file_offset,
                                               uint64_t size, uint64_t buffer_offset,
                                               neuronmem_event_t* const* wait_events, size_t num_wait_events,
                                               neuronmem_event_t** out_ready) {
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(path);
  if (auto* s = CheckWaits(wait_events, num_wait_events)) return s;
  NEURONMEM_API_BEGIN
  neuronmem::Event* ev = nullptr;
  if (auto s = buffer->client->copy_engine->LoadFile(buffer, path, file_offset, size, buffer_offset, wait_events,
                                                     num_wait_events, &ev)) {
    return s.release();
  }
  return WaitIfNoEvent(ev, out_ready);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_ready_event(neuronmem_buffer_t* buffer, neuronmem_event_t** out_event) {
  NEURONMEM_REQUIRE(out_event);
  *out_event = nullptr;
  NEURONMEM_REQUIRE(buffer);
  std::lock_guard<std::mutex> lock(buffer->definition_mu);
  *out_event = neuronmem::Share(buffer->definition.load(std::memory_order_acquire));
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_delete(neuronmem_buffer_t* buffer) {
  NEURONMEM_REQUIRE(buffer);
  return copy::DeleteBuffer(buffer).release();
}

void neuronmem_buffer_destroy(neuronmem_buffer_t* buffer) {
  if (buffer) copy::DestroyBuffer(buffer);
}

neuronmem_status_t* neuronmem_buffer_memory(const neuronmem_buffer_t* buffer, neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(buffer);
  *out_memory = buffer->memory;
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_device(const neuronmem_buffer_t* buffer, neuronmem_device_t** out_device) {
  NEURONMEM_REQUIRE(out_device);
  *out_device = nullptr;
  NEURONMEM_REQUIRE(buffer);
  *out_device = buffer->memory->devices[0];
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_element_type(const neuronmem_buffer_t* buffer,
                                                  neuronmem_element_type_t* out_type) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out_type);
  *out_type = buffer->type;
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_dims(const neuronmem_buffer_t* buffer, const int64_t** out_dims,
                                          size_t* out_num_dims) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out_dims);
  NEURONMEM_REQUIRE(out_num_dims);
  *out_dims = buffer->dims;
  *out_num_dims = buffer->rank;
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_on_device_size(const neuronmem_buffer_t* buffer, uint64_t* out_bytes) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out_bytes);
  *out_bytes = buffer->bytes;
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_is_deleted(const neuronmem_buffer_t* buffer, int32_t* out) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out);
  *out = buffer->deleted.load(std::memory_order_acquire) ? 1 : 0;
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_is_zero_copy(const neuronmem_buffer_t* buffer, int32_t* out) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out);
  *out = buffer->zero_copy ? 1 : 0;
  return nullptr;
}

neuronmem_status_t* neuronmem_event_is_ready(const neuronmem_event_t* event, int32_t* out) {
  NEURONMEM_REQUIRE(event);
  NEURONMEM_REQUIRE(out);
  *out = neuronmem::IsReady(event) ? 1 : 0;
  return nullptr;
}

neuronmem_status_t* neuronmem_event_wait(neuronmem_event_t* event, int64_t timeout_ns) {
  NEURONMEM_REQUIRE(event);
  if (!neuronmem::Wait(event, timeout_ns)) {
    return neuronmem::DeadlineExceeded("the event was not ready after %lld ns", static_cast<long long>(timeout_ns))
        .release();
  }
  return neuronmem::CopyStatus(event->error.get()).release();
}

neuronmem_status_t* neuronmem_event_get_error(const neuronmem_event_t* event, neuronmem_status_t** out_error) {
  NEURONMEM_REQUIRE(out_error);
  *out_error = nullptr;
  NEURONMEM_REQUIRE(event);
  if (!neuronmem::IsReady(event)) {
    return neuronmem::FailedPrecondition("the event is not ready yet: wait for it first").release();
  }
  *out_error = neuronmem::CopyStatus(event->error.get()).release();
  return nullptr;
}

neuronmem_status_t* neuronmem_event_on_ready(neuronmem_event_t* event, neuronmem_event_callback_t callback,
                                             void* user_data) {
  NEURONMEM_REQUIRE(event);
  NEURONMEM_REQUIRE(callback);
  NEURONMEM_API_BEGIN
  neuronmem::OnReady(event, [callback, user_data](const neuronmem_status_t* error) { callback(error, user_data); });
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_event_create(neuronmem_client_t* client, neuronmem_event_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  NEURONMEM_REQUIRE(client);
  NEURONMEM_API_BEGIN
  return client->copy_engine->CreateUserEvent(out).release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_event_complete(neuronmem_event_t* event, const neuronmem_status_t* error) {
  NEURONMEM_REQUIRE(event);
  NEURONMEM_API_BEGIN
  if (!event->user_owner) {
    return neuronmem::FailedPrecondition(
               "this event is completed by libneuronmem; only events made by neuronmem_event_create can be "
               "completed by the caller")
        .release();
  }
  if (!neuronmem::CompleteUserEvent(event, neuronmem::CopyStatus(error))) {
    return neuronmem::FailedPrecondition("the event is already complete (completed before, or cancelled)").release();
  }
  return nullptr;
  NEURONMEM_API_END
}

void neuronmem_event_destroy(neuronmem_event_t* event) {
  if (!event) return;
  if (event->user_owner && !neuronmem::IsReady(event)) {
    // The caller's only handle is going away: nobody can complete the event any more.
    neuronmem::CompleteUserEvent(event, neuronmem::Cancelled("the event was destroyed before it was completed"));
  }
  neuronmem::Release(event);
}

}  // extern "C"
