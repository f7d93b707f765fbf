#include "api/shim.h"

#include <neuronmem/neuronmem.h>

#include <string>

#include "base/fault.h"

// Every growable struct of the public headers, against its published size.
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_extension_base_t, NEURONMEM_EXTENSION_BASE_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_client_options_t, NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_device_description_t, NEURONMEM_DEVICE_DESCRIPTION_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_memory_description_t, NEURONMEM_MEMORY_DESCRIPTION_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_memory_stats_t, NEURONMEM_MEMORY_STATS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_buffer_from_host_args_t, NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_buffer_allocate_args_t, NEURONMEM_BUFFER_ALLOCATE_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_buffer_copy_args_t, NEURONMEM_BUFFER_COPY_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_buffer_read_args_t, NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_buffer_write_args_t, NEURONMEM_BUFFER_WRITE_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_buffer_chunk_args_t, NEURONMEM_BUFFER_CHUNK_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_buffer_load_file_args_t, NEURONMEM_BUFFER_LOAD_FILE_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_manifest_options_t, NEURONMEM_MANIFEST_OPTIONS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_manifest_counts_t, NEURONMEM_MANIFEST_COUNTS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_manifest_value_t, NEURONMEM_MANIFEST_VALUE_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_manifest_move_t, NEURONMEM_MANIFEST_MOVE_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_manifest_kernel_t, NEURONMEM_MANIFEST_KERNEL_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_manifest_channel_t, NEURONMEM_MANIFEST_CHANNEL_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_manifest_upload_args_t, NEURONMEM_MANIFEST_UPLOAD_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_compile_options_t, NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_executable_properties_t, NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_executable_value_t, NEURONMEM_EXECUTABLE_VALUE_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_execute_args_t, NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_execute_devices_args_t, NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_host_transfer_t, NEURONMEM_HOST_TRANSFER_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_execution_stats_t, NEURONMEM_EXECUTION_STATS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_transfer_counts_t, NEURONMEM_TRANSFER_COUNTS_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_kernel_call_t, NEURONMEM_KERNEL_CALL_STRUCT_SIZE);
NEURONMEM_ASSERT_STRUCT_SIZE(neuronmem_kernel_registration_t, NEURONMEM_KERNEL_REGISTRATION_STRUCT_SIZE);

namespace neuronmem::api {

Status CheckStructSize(size_t struct_size, size_t min_size, const char* type, const char* where) {
  if (struct_size >= min_size) return Ok();
  return InvalidArgument("%s%s.struct_size is %zu, smaller than the minimum %zu; set it to sizeof(%s)", where, type,
                         struct_size, min_size, type);
}

Status ElementTypeOf(int64_t c_value, const char* where, ElementType* out) {
  *out = ElementTypeFromC(c_value);
  if (*out == ElementType::kInvalid) {
    return InvalidArgument("%selement_type %lld is not a neuronmem_element_type_t", where,
                           static_cast<long long>(c_value));
  }
  return Ok();
}

Status CheckExtensions(const neuronmem_extension_base_t* chain, const char* type, const char* where) {
  if (!chain) return Ok();
  if (chain->struct_size < NEURONMEM_EXTENSION_BASE_STRUCT_SIZE) {
    return InvalidArgument("%s%s.extension has struct_size %zu, smaller than neuronmem_extension_base_t", where, type,
                           chain->struct_size);
  }
  // No extension struct is defined in this release, so the chain's first entry is already unknown.
  return InvalidArgument("%s%s.extension has type %d, which this library does not know (it defines none)", where, type,
                         static_cast<int>(EnumValue(chain->type)));
}

Status RefuseBlockingInCallback(const char* call) {
  const char* where = CallerCallbackName();
  if (!where) return Ok();
  return FailedPrecondition(
      "%s inside %s: it runs on a library thread that completes transfers or executions, so blocking there can "
      "wait for itself; pass an out event instead and return from the callback",
      call, where);
}

Status CallbackResult(neuronmem_status_t* returned, const char* what) {
  Status s(returned);
  if (fault::Hit(fault::Site::kCallback)) {
    return MakeStatus(NEURONMEM_STATUS_ABORTED, std::string("injected fault: ") + what + " failed");
  }
  return s;
}

Status WaitList(const neuronmem_event_list_t& list, const char* where, Span<Event* const>* out) {
  neuronmem_event_t* const* events = list.events;
  const size_t count = list.num_events;
  if (count && !events) return InvalidArgument("%swait.events is NULL but wait.num_events is %zu", where, count);
  for (size_t i = 0; i < count; ++i) {
    if (!events[i]) return InvalidArgument("%swait.events[%zu] is NULL", where, i);
  }
  *out = Span<Event* const>(events, count);
  return Ok();
}

}  // namespace neuronmem::api
