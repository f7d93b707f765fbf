// C shim for buffers and events: checks the C arguments and structs, converts them (element types,
// semantics, wait lists, memories) and calls the copy engine.
#include <neuronmem/buffer.h>

#include <string>
#include <vector>

#include "api/handles.h"
#include "api/shim.h"
#include "base/event.h"
#include "base/status.h"
#include "copy/copy_engine.h"

using neuronmem::InvalidArgument;
using neuronmem::Status;
namespace api = neuronmem::api;
namespace copy = neuronmem::copy;

namespace {

// Completes a call whose caller passed no out-event: wait, and return the transfer's error.
neuronmem_status_t* WaitIfNoEvent(neuronmem::Event* ev, neuronmem_event_t** out) {
  if (out) {
    *out = ev;
    return nullptr;
  }
  neuronmem::Wait(ev, -1);
  Status err = neuronmem::CopyStatus(ev->error());
  neuronmem::Release(ev);
  return err.release();
}

// The C++ memory of a memory handle of `client`; INVALID_ARGUMENT for one of another client.
Status MemoryOf(neuronmem_client_t* client, neuronmem_memory_t* memory, const char* where,
                const copy::MemoryView** out) {
  if (!memory) return InvalidArgument("%sthe target memory is NULL", where);
  if (memory->client != client) {
    return InvalidArgument("%smemory: %s belongs to another client", where, memory->memory->debug_string().c_str());
  }
  *out = &memory->memory->view();
  return neuronmem::Ok();
}

// neuronmem_buffer_from_host_args_t -> copy::FromHostArgs. `where` prefixes messages ("args[3]: ").
Status ConvertFromHostArgs(neuronmem_client_t* client, const neuronmem_buffer_from_host_args_t& a, const char* where,
                           copy::FromHostArgs* out) {
  NEURONMEM_RETURN_IF_ERROR(
      api::CheckArgs(a, NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE, "neuronmem_buffer_from_host_args_t", where));
  NEURONMEM_RETURN_IF_ERROR(MemoryOf(client, a.memory, where, &out->memory));
  const int64_t semantics = api::EnumValue(a.host_buffer_semantics);  // never loaded as the enum
  if (semantics < 0 || semantics > NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY) {
    return InvalidArgument("%shost_buffer_semantics %lld is not a neuronmem_host_buffer_semantics_t", where,
                           static_cast<long long>(semantics));
  }
  out->semantics = static_cast<copy::HostBufferSemantics>(semantics);
  NEURONMEM_RETURN_IF_ERROR(api::ElementTypeOf(a.element_type, where, &out->type));
  if (a.num_dims && !a.dims) return InvalidArgument("%sdims is NULL but num_dims is %zu", where, a.num_dims);
  out->dims = neuronmem::Span<const int64_t>(a.dims, a.num_dims);
  if (a.byte_strides) {
    for (size_t d = 0; d < a.num_dims && d < NEURONMEM_MAX_RANK; ++d) {
      if (a.byte_strides[d] < 0) return InvalidArgument("%sbyte_strides[%zu] is negative", where, d);
    }
  }
  out->byte_strides = a.byte_strides;
  out->data = a.data;
  return api::WaitList(a.wait, where, &out->waits);
}

// Creates one buffer (a handle of `client`) from a C argument struct: the small-upload path, so no
// container is allocated here.
neuronmem_status_t* BufferFromHost(neuronmem_client_t* client, const neuronmem_buffer_from_host_args_t& args,
                                   neuronmem_buffer_t** out, neuronmem_event_t** out_ready,
                                   neuronmem_event_t** out_done_with_host) {
  copy::FromHostArgs converted;
  if (Status s = ConvertFromHostArgs(client, args, "", &converted)) return s.release();
  auto handle = std::make_unique<neuronmem_buffer_t>();
  handle->client = client;
  copy::Buffer* buffer = &handle->buffer;
  if (Status s = client->engine().FromHost({&converted, 1}, &buffer, out_ready, out_done_with_host)) {
    return s.release();
  }
  *out = handle.release();
  return nullptr;
}

// Creates `count` buffers from C argument structs in one submission with one event.
neuronmem_status_t* BuffersFromHost(neuronmem_client_t* client, const neuronmem_buffer_from_host_args_t* args,
                                    size_t count, neuronmem_buffer_t** out, neuronmem_event_t** out_ready) {
  std::vector<copy::FromHostArgs> converted(count);
  for (size_t i = 0; i < count; ++i) {
    const std::string where = "args[" + std::to_string(i) + "]: ";
    if (Status s = ConvertFromHostArgs(client, args[i], where.c_str(), &converted[i])) return s.release();
  }
  std::vector<std::unique_ptr<neuronmem_buffer_t>> handles(count);
  std::vector<copy::Buffer*> buffers(count);
  for (size_t i = 0; i < count; ++i) {
    handles[i] = std::make_unique<neuronmem_buffer_t>();
    handles[i]->client = client;
    buffers[i] = &handles[i]->buffer;
  }
  if (Status s = client->engine().FromHost(converted, buffers.data(), out_ready, nullptr)) return s.release();
  for (size_t i = 0; i < count; ++i) out[i] = handles[i].release();
  return nullptr;
}

}  // namespace

extern "C" {

uint64_t neuronmem_element_type_size(neuronmem_element_type_t type) {
  const neuronmem::ElementType t = neuronmem::ElementTypeFromC(api::EnumValue(type));
  return t == neuronmem::ElementType::kInvalid ? 0 : neuronmem::ElementByteSize(t);
}

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
  return BufferFromHost(client, *args, out_buffer, out_ready, out_done_with_host);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_from_host_batch(neuronmem_client_t* client,
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
  if (count == 1) return BufferFromHost(client, *args, out_buffers, out_ready, nullptr);
  return BuffersFromHost(client, args, count, out_buffers, out_ready);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_allocate(const neuronmem_buffer_allocate_args_t* args,
                                              neuronmem_buffer_t** out_buffer) {
  NEURONMEM_REQUIRE(out_buffer);
  *out_buffer = nullptr;
  NEURONMEM_REQUIRE(args);
  NEURONMEM_API_BEGIN
  if (Status s =
          api::CheckArgs(*args, NEURONMEM_BUFFER_ALLOCATE_ARGS_STRUCT_SIZE, "neuronmem_buffer_allocate_args_t")) {
    return s.release();
  }
  if (!args->client) return InvalidArgument("args->client is NULL").release();
  const copy::MemoryView* view = nullptr;
  if (Status s = MemoryOf(args->client, args->memory, "", &view)) return s.release();
  neuronmem::ElementType type;
  if (Status s = api::ElementTypeOf(api::EnumValue(args->element_type), "", &type)) return s.release();
  if (args->num_dims && !args->dims) {
    return InvalidArgument("dims is NULL but num_dims is %zu", args->num_dims).release();
  }
  auto handle = std::make_unique<neuronmem_buffer_t>();
  handle->client = args->client;
  if (Status s = args->client->engine().Allocate(*view, type, {args->dims, args->num_dims}, &handle->buffer)) {
    return s.release();
  }
  *out_buffer = handle.release();
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_copy_to_memory(const neuronmem_buffer_copy_args_t* args,
                                                    neuronmem_buffer_t** out_buffer, neuronmem_event_t** out_ready) {
  NEURONMEM_REQUIRE(out_buffer);
  *out_buffer = nullptr;
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(args);
  NEURONMEM_API_BEGIN
  if (Status s = api::CheckArgs(*args, NEURONMEM_BUFFER_COPY_ARGS_STRUCT_SIZE, "neuronmem_buffer_copy_args_t")) {
    return s.release();
  }
  neuronmem_buffer_t* src = args->src;
  if (!src) return InvalidArgument("args->src is NULL").release();
  copy::EventList waits;
  if (Status s = api::WaitList(args->wait, "", &waits)) return s.release();
  const copy::MemoryView* view = nullptr;
  if (Status s = MemoryOf(src->client, args->memory, "", &view)) return s.release();
  auto handle = std::make_unique<neuronmem_buffer_t>();
  handle->client = src->client;
  if (Status s = src->client->engine().CopyToMemory(src->buffer, *view, waits, &handle->buffer, out_ready)) {
    return s.release();
  }
  *out_buffer = handle.release();
  return nullptr;
  NEURONMEM_API_END
}

}  // extern "C"

namespace {

// The checks every transfer on an existing buffer shares: the struct, the buffer, the wait list.
template <typename Args>
Status TransferArgs(const Args* args, size_t min_size, const char* type, copy::EventList* waits) {
  NEURONMEM_RETURN_IF_ERROR(api::CheckArgs(*args, min_size, type));
  if (!args->buffer) return InvalidArgument("args->buffer is NULL");
  return api::WaitList(args->wait, "", waits);
}

}  // namespace

extern "C" {

neuronmem_status_t* neuronmem_buffer_read(const neuronmem_buffer_read_args_t* args, neuronmem_event_t** out_ready) {
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(args);
  NEURONMEM_API_BEGIN
  if (!out_ready) {
    if (Status s = api::RefuseBlockingInCallback(
            "neuronmem_buffer_read without an out event (a synchronous call) is refused")) {
      return s.release();
    }
  }
  copy::EventList waits;
  if (Status s = TransferArgs(args, NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE, "neuronmem_buffer_read_args_t", &waits)) {
    return s.release();
  }
  neuronmem_buffer_t* b = args->buffer;
  neuronmem::Event* ev = nullptr;
  if (Status s = b->client->engine().Read(b->buffer, args->offset, args->dst, args->size, waits, &ev,
                                          /*caller_waits=*/out_ready == nullptr)) {
    return s.release();
  }
  return WaitIfNoEvent(ev, out_ready);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_write(const neuronmem_buffer_write_args_t* args, neuronmem_event_t** out_ready) {
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(args);
  NEURONMEM_API_BEGIN
  if (!out_ready) {
    if (Status s = api::RefuseBlockingInCallback(
            "neuronmem_buffer_write without an out event (a synchronous call) is refused")) {
      return s.release();
    }
  }
  copy::EventList waits;
  if (Status s = TransferArgs(args, NEURONMEM_BUFFER_WRITE_ARGS_STRUCT_SIZE, "neuronmem_buffer_write_args_t", &waits)) {
    return s.release();
  }
  neuronmem_buffer_t* b = args->buffer;
  neuronmem::Event* ev = nullptr;
  if (Status s = b->client->engine().Write(b->buffer, args->offset, args->src, args->size, waits, &ev,
                                           /*caller_waits=*/out_ready == nullptr)) {
    return s.release();
  }
  return WaitIfNoEvent(ev, out_ready);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_upload_chunk(const neuronmem_buffer_chunk_args_t* args,
                                                  neuronmem_event_t** out_done) {
  if (out_done) *out_done = nullptr;
  NEURONMEM_REQUIRE(args);
  NEURONMEM_API_BEGIN
  if (!out_done) {
    if (Status s = api::RefuseBlockingInCallback(
            "neuronmem_buffer_upload_chunk without an out event (a synchronous call) is refused")) {
      return s.release();
    }
  }
  copy::EventList waits;
  if (Status s = TransferArgs(args, NEURONMEM_BUFFER_CHUNK_ARGS_STRUCT_SIZE, "neuronmem_buffer_chunk_args_t", &waits)) {
    return s.release();
  }
  neuronmem_buffer_t* b = args->buffer;
  neuronmem::Event* ev = nullptr;
  if (Status s =
          b->client->engine().UploadChunk(b->buffer, args->offset, args->data, args->size, args->is_last, waits, &ev)) {
    return s.release();
  }
  return WaitIfNoEvent(ev, out_done);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_load_file(const neuronmem_buffer_load_file_args_t* args,
                                               neuronmem_event_t** out_ready) {
  if (out_ready) *out_ready = nullptr;
  NEURONMEM_REQUIRE(args);
  NEURONMEM_API_BEGIN
  if (!out_ready) {
    if (Status s = api::RefuseBlockingInCallback(
            "neuronmem_buffer_load_file without an out event (a synchronous call) is refused")) {
      return s.release();
    }
  }
  copy::EventList waits;
  if (Status s = TransferArgs(args, NEURONMEM_BUFFER_LOAD_FILE_ARGS_STRUCT_SIZE, "neuronmem_buffer_load_file_args_t",
                              &waits)) {
    return s.release();
  }
  if (!args->path) return InvalidArgument("args->path is NULL").release();
  neuronmem_buffer_t* b = args->buffer;
  neuronmem::Event* ev = nullptr;
  if (Status s = b->client->engine().LoadFile(b->buffer, args->path, args->file_offset, args->size, args->buffer_offset,
                                              waits, &ev)) {
    return s.release();
  }
  return WaitIfNoEvent(ev, out_ready);
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_buffer_ready_event(neuronmem_buffer_t* buffer, neuronmem_event_t** out_event) {
  NEURONMEM_REQUIRE(out_event);
  *out_event = nullptr;
  NEURONMEM_REQUIRE(buffer);
  *out_event = buffer->buffer.ReadyEvent();
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_delete(neuronmem_buffer_t* buffer) {
  NEURONMEM_REQUIRE(buffer);
  buffer->buffer.Delete();
  return nullptr;
}

void neuronmem_buffer_destroy(neuronmem_buffer_t* buffer) { delete buffer; }

neuronmem_status_t* neuronmem_buffer_memory(const neuronmem_buffer_t* buffer, neuronmem_memory_t** out_memory) {
  NEURONMEM_REQUIRE(out_memory);
  *out_memory = nullptr;
  NEURONMEM_REQUIRE(buffer);
  *out_memory = buffer->client->shell(buffer->buffer.memory());
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_device(const neuronmem_buffer_t* buffer, neuronmem_device_t** out_device) {
  NEURONMEM_REQUIRE(out_device);
  *out_device = nullptr;
  NEURONMEM_REQUIRE(buffer);
  *out_device = buffer->client->shell(buffer->buffer.memory())->devices[0];
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_element_type(const neuronmem_buffer_t* buffer,
                                                  neuronmem_element_type_t* out_type) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out_type);
  *out_type = static_cast<neuronmem_element_type_t>(neuronmem::ElementTypeToC(buffer->buffer.element_type()));
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_dims(const neuronmem_buffer_t* buffer, const int64_t** out_dims,
                                          size_t* out_num_dims) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out_dims);
  NEURONMEM_REQUIRE(out_num_dims);
  *out_dims = buffer->buffer.dims().data();
  *out_num_dims = buffer->buffer.dims().size();
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_on_device_size(const neuronmem_buffer_t* buffer, uint64_t* out_bytes) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out_bytes);
  *out_bytes = buffer->buffer.bytes();
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_is_deleted(const neuronmem_buffer_t* buffer, bool* out) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out);
  *out = buffer->buffer.deleted();
  return nullptr;
}

neuronmem_status_t* neuronmem_buffer_is_zero_copy(const neuronmem_buffer_t* buffer, bool* out) {
  NEURONMEM_REQUIRE(buffer);
  NEURONMEM_REQUIRE(out);
  *out = buffer->buffer.zero_copy();
  return nullptr;
}

neuronmem_status_t* neuronmem_event_is_ready(const neuronmem_event_t* event, bool* out) {
  NEURONMEM_REQUIRE(event);
  NEURONMEM_REQUIRE(out);
  *out = neuronmem::IsReady(event);
  return nullptr;
}

neuronmem_status_t* neuronmem_event_wait(neuronmem_event_t* event, int64_t timeout_ns) {
  NEURONMEM_REQUIRE(event);
  if (timeout_ns != 0 && !neuronmem::IsReady(event)) {
    if (Status s = api::RefuseBlockingInCallback("neuronmem_event_wait on an event that is not ready")) {
      return s.release();
    }
  }
  if (!neuronmem::Wait(event, timeout_ns)) {
    return neuronmem::DeadlineExceeded("the event was not ready after %lld ns", static_cast<long long>(timeout_ns))
        .release();
  }
  return neuronmem::CopyStatus(event->error()).release();
}

neuronmem_status_t* neuronmem_event_error(const neuronmem_event_t* event, neuronmem_status_t** out_error) {
  NEURONMEM_REQUIRE(out_error);
  *out_error = nullptr;
  NEURONMEM_REQUIRE(event);
  if (!neuronmem::IsReady(event)) {
    return neuronmem::FailedPrecondition("the event is not ready yet: wait for it first").release();
  }
  *out_error = neuronmem::CopyStatus(event->error()).release();
  return nullptr;
}

neuronmem_status_t* neuronmem_event_on_ready(neuronmem_event_t* event, neuronmem_event_callback_t callback,
                                             void* user_data) {
  NEURONMEM_REQUIRE(event);
  NEURONMEM_REQUIRE(callback);
  NEURONMEM_API_BEGIN
  neuronmem::OnReady(event, [callback, user_data](const neuronmem_status_t* error) {
    neuronmem::CallerCallbackScope in_callback;
    callback(error, user_data);
  });
  return nullptr;
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_event_create(neuronmem_client_t* client, neuronmem_event_t** out) {
  NEURONMEM_REQUIRE(out);
  *out = nullptr;
  NEURONMEM_REQUIRE(client);
  NEURONMEM_API_BEGIN
  return client->engine().CreateUserEvent(out).release();
  NEURONMEM_API_END
}

neuronmem_status_t* neuronmem_event_complete(neuronmem_event_t* event, const neuronmem_status_t* error) {
  NEURONMEM_REQUIRE(event);
  NEURONMEM_API_BEGIN
  if (!event->user_completed()) {
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
  if (event->user_completed() && !neuronmem::IsReady(event)) {
    // The caller's only handle is going away: nobody can complete the event any more.
    neuronmem::CompleteUserEvent(event, neuronmem::Cancelled("the event was destroyed before it was completed"));
  }
  neuronmem::Release(event);
}

}  // extern "C"
