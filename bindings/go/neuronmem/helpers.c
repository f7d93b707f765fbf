/* C helpers of the Go binding (helpers.h). */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

extern void neuronmemGoEventCallback(neuronmem_status_t* status, void* user_data);
extern void neuronmemGoEntryVisitor(neuronmem_string_t name, void* user_data);
extern void neuronmemGoBytesVisitor(void* data, size_t size, void* user_data);
extern neuronmem_status_t* neuronmemGoKernel(neuronmem_kernel_call_t* call, void* user_data);
extern neuronmem_status_t* neuronmemGoHostTransfer(neuronmem_host_transfer_t* transfer, void* user_data);

/* Zeroes a growable struct of `bytes` and sets its struct_size (its first member); returns it. */
static void* nm_sized(void* s, size_t bytes, size_t struct_size) {
  memset(s, 0, bytes);
  *(size_t*)s = struct_size;
  return s;
}
#define NM_SIZED(s, size) nm_sized((s), sizeof *(s), (size))

static neuronmem_event_list_t nm_wait(neuronmem_event_t* const* events, size_t n) {
  neuronmem_event_list_t w = {events, n};
  return w;
}

neuronmem_status_t* nm_event_on_ready(neuronmem_event_t* e, uintptr_t handle) {
  return neuronmem_event_on_ready(e, (neuronmem_event_callback_t)neuronmemGoEventCallback, (void*)handle);
}

neuronmem_status_t* nm_list_entries(const char* text, size_t size, const char* filename, uintptr_t handle) {
  return neuronmem_manifest_list_entries(text, size, filename,
                                         (neuronmem_manifest_entry_visitor_t)neuronmemGoEntryVisitor, (void*)handle);
}

neuronmem_status_t* nm_write_artifact(const char* text, size_t size, const char* filename, const char* target_version,
                                      uintptr_t handle) {
  return neuronmem_manifest_write_artifact(text, size, filename, target_version,
                                           (neuronmem_bytes_visitor_t)neuronmemGoBytesVisitor, (void*)handle);
}

neuronmem_status_t* nm_client_create(uint32_t num_cores, int mlock_mode, uint64_t device_bytes, uint64_t pinned_bytes,
                                     uint64_t execution_timeout_ns, neuronmem_client_t** out) {
  neuronmem_client_options_t o;
  NM_SIZED(&o, NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE);
  o.num_cores = num_cores;
  o.mlock_mode = (neuronmem_mlock_mode_t)mlock_mode;
  o.device_bytes_per_core = device_bytes;
  o.pinned_host_bytes = pinned_bytes;
  o.execution_timeout_ns = execution_timeout_ns;
  return neuronmem_client_create(&o, out);
}

neuronmem_status_t* nm_from_host(neuronmem_client_t* client, const void* data, int element_type, int semantics,
                                 const int64_t* dims, size_t num_dims, const int64_t* strides,
                                 neuronmem_memory_t* memory, neuronmem_event_t* const* wait, size_t num_wait,
                                 neuronmem_buffer_t** out, neuronmem_event_t** done_with_host) {
  neuronmem_buffer_from_host_args_t a;
  NM_SIZED(&a, NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE);
  a.data = data;
  a.element_type = (neuronmem_element_type_t)element_type;
  a.host_buffer_semantics = (neuronmem_host_buffer_semantics_t)semantics;
  a.dims = dims;
  a.num_dims = num_dims;
  a.byte_strides = strides;
  a.memory = memory;
  a.wait = nm_wait(wait, num_wait);
  return neuronmem_buffer_from_host(client, &a, out, NULL, done_with_host);
}

/* One entry of a batched upload; the batch's arrays live in C memory (nm_batch_*). */
neuronmem_buffer_from_host_args_t* nm_batch_new(size_t n) {
  return (neuronmem_buffer_from_host_args_t*)calloc(n ? n : 1, sizeof(neuronmem_buffer_from_host_args_t));
}
void nm_batch_set(neuronmem_buffer_from_host_args_t* a, size_t i, const void* data, int element_type, int semantics,
                  const int64_t* dims, size_t num_dims, neuronmem_memory_t* memory) {
  a[i].struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
  a[i].data = data;
  a[i].element_type = (neuronmem_element_type_t)element_type;
  a[i].host_buffer_semantics = (neuronmem_host_buffer_semantics_t)semantics;
  a[i].dims = dims;
  a[i].num_dims = num_dims;
  a[i].memory = memory;
}

neuronmem_status_t* nm_allocate(neuronmem_client_t* client, neuronmem_memory_t* memory, int element_type,
                                const int64_t* dims, size_t num_dims, neuronmem_buffer_t** out) {
  neuronmem_buffer_allocate_args_t a;
  NM_SIZED(&a, NEURONMEM_BUFFER_ALLOCATE_ARGS_STRUCT_SIZE);
  a.client = client;
  a.memory = memory;
  a.element_type = (neuronmem_element_type_t)element_type;
  a.dims = dims;
  a.num_dims = num_dims;
  return neuronmem_buffer_allocate(&a, out);
}

neuronmem_status_t* nm_copy(neuronmem_buffer_t* src, neuronmem_memory_t* memory, neuronmem_event_t* const* wait,
                            size_t num_wait, neuronmem_buffer_t** out) {
  neuronmem_buffer_copy_args_t a;
  NM_SIZED(&a, NEURONMEM_BUFFER_COPY_ARGS_STRUCT_SIZE);
  a.src = src;
  a.memory = memory;
  a.wait = nm_wait(wait, num_wait);
  return neuronmem_buffer_copy_to_memory(&a, out, NULL);
}

neuronmem_status_t* nm_read(neuronmem_buffer_t* b, uint64_t offset, uint64_t size, void* dst,
                            neuronmem_event_t* const* wait, size_t num_wait, neuronmem_event_t** out) {
  neuronmem_buffer_read_args_t a;
  NM_SIZED(&a, NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE);
  a.buffer = b;
  a.offset = offset;
  a.size = size;
  a.dst = dst;
  a.wait = nm_wait(wait, num_wait);
  return neuronmem_buffer_read(&a, out);
}

neuronmem_status_t* nm_write(neuronmem_buffer_t* b, uint64_t offset, uint64_t size, const void* src,
                             neuronmem_event_t* const* wait, size_t num_wait, neuronmem_event_t** out) {
  neuronmem_buffer_write_args_t a;
  NM_SIZED(&a, NEURONMEM_BUFFER_WRITE_ARGS_STRUCT_SIZE);
  a.buffer = b;
  a.offset = offset;
  a.size = size;
  a.src = src;
  a.wait = nm_wait(wait, num_wait);
  return neuronmem_buffer_write(&a, out);
}

neuronmem_status_t* nm_chunk(neuronmem_buffer_t* b, uint64_t offset, uint64_t size, const void* data,
                             neuronmem_event_t* const* wait, size_t num_wait, int is_last, neuronmem_event_t** out) {
  neuronmem_buffer_chunk_args_t a;
  NM_SIZED(&a, NEURONMEM_BUFFER_CHUNK_ARGS_STRUCT_SIZE);
  a.buffer = b;
  a.offset = offset;
  a.size = size;
  a.data = data;
  a.wait = nm_wait(wait, num_wait);
  a.is_last = is_last != 0;
  return neuronmem_buffer_upload_chunk(&a, out);
}

neuronmem_status_t* nm_load_file(neuronmem_buffer_t* b, const char* path, uint64_t file_offset, uint64_t size,
                                 uint64_t buffer_offset, neuronmem_event_t* const* wait, size_t num_wait,
                                 neuronmem_event_t** out) {
  neuronmem_buffer_load_file_args_t a;
  NM_SIZED(&a, NEURONMEM_BUFFER_LOAD_FILE_ARGS_STRUCT_SIZE);
  a.buffer = b;
  a.path = path;
  a.file_offset = file_offset;
  a.size = size;
  a.buffer_offset = buffer_offset;
  a.wait = nm_wait(wait, num_wait);
  return neuronmem_buffer_load_file(&a, out);
}

void nm_manifest_options(neuronmem_manifest_options_t* o, const char* entry, const char* filename, int policy,
                         uint32_t num_cores) {
  NM_SIZED(o, NEURONMEM_MANIFEST_OPTIONS_STRUCT_SIZE);
  o->entry = entry;
  o->filename = filename;
  o->policy = (neuronmem_placement_policy_t)policy;
  o->num_cores = num_cores;
}

neuronmem_status_t* nm_manifest_load_text(const char* text, size_t size, const char* entry, const char* filename,
                                          int policy, uint32_t num_cores, neuronmem_manifest_t** out) {
  neuronmem_manifest_options_t o;
  nm_manifest_options(&o, entry, filename, policy, num_cores);
  return neuronmem_manifest_load_text(text, size, &o, out);
}

neuronmem_status_t* nm_manifest_load_file(const char* path, const char* entry, int policy, uint32_t num_cores,
                                          neuronmem_manifest_t** out) {
  neuronmem_manifest_options_t o;
  nm_manifest_options(&o, entry, NULL, policy, num_cores);
  return neuronmem_manifest_load_file(path, &o, out);
}

neuronmem_status_t* nm_upload_arguments(const neuronmem_manifest_t* m, neuronmem_device_t* device,
                                        const void* const* host_data, size_t n, int semantics, neuronmem_buffer_t** out,
                                        neuronmem_event_t** ready) {
  neuronmem_manifest_upload_args_t a;
  NM_SIZED(&a, NEURONMEM_MANIFEST_UPLOAD_ARGS_STRUCT_SIZE);
  a.manifest = m;
  a.device = device;
  a.host_data = host_data;
  a.num_arguments = n;
  a.host_buffer_semantics = (neuronmem_host_buffer_semantics_t)semantics;
  return neuronmem_manifest_upload_arguments(&a, out, ready);
}

/* The helpers that only fill an output struct: zeroed, its struct_size set, then filled by the call. Each row:
 * the helper's name and parameters, the struct's size, the call (of the object `x`, index `i`, struct `out`). */
#define NM_OUTPUT(name, params, size, call) \
  neuronmem_status_t* name params {         \
    NM_SIZED(out, size);                    \
    return call;                            \
  }
NM_OUTPUT(nm_device_describe, (const neuronmem_device_t* x, neuronmem_device_description_t* out),
          NEURONMEM_DEVICE_DESCRIPTION_STRUCT_SIZE, neuronmem_device_describe(x, out))
NM_OUTPUT(nm_client_describe_device_id, (const neuronmem_client_t* x, int32_t id, neuronmem_device_description_t* out),
          NEURONMEM_DEVICE_DESCRIPTION_STRUCT_SIZE, neuronmem_client_describe_device_id(x, id, out))
NM_OUTPUT(nm_memory_describe, (const neuronmem_memory_t* x, neuronmem_memory_description_t* out),
          NEURONMEM_MEMORY_DESCRIPTION_STRUCT_SIZE, neuronmem_memory_describe(x, out))
NM_OUTPUT(nm_client_job_traffic, (const neuronmem_client_t* x, neuronmem_job_traffic_t* out),
          NEURONMEM_JOB_TRAFFIC_STRUCT_SIZE, neuronmem_client_job_traffic(x, out))
NM_OUTPUT(nm_memory_stats, (const neuronmem_memory_t* x, neuronmem_memory_stats_t* out),
          NEURONMEM_MEMORY_STATS_STRUCT_SIZE, neuronmem_memory_stats(x, out))
NM_OUTPUT(nm_manifest_counts, (const neuronmem_manifest_t* x, neuronmem_manifest_counts_t* out),
          NEURONMEM_MANIFEST_COUNTS_STRUCT_SIZE, neuronmem_manifest_counts(x, out))
NM_OUTPUT(nm_manifest_value, (const neuronmem_manifest_t* x, int is_result, size_t i, neuronmem_manifest_value_t* out),
          NEURONMEM_MANIFEST_VALUE_STRUCT_SIZE,
          is_result ? neuronmem_manifest_result(x, i, out) : neuronmem_manifest_argument(x, i, out))
NM_OUTPUT(nm_manifest_move, (const neuronmem_manifest_t* x, size_t i, neuronmem_manifest_move_t* out),
          NEURONMEM_MANIFEST_MOVE_STRUCT_SIZE, neuronmem_manifest_move(x, i, out))
NM_OUTPUT(nm_manifest_kernel, (const neuronmem_manifest_t* x, size_t i, neuronmem_manifest_kernel_t* out),
          NEURONMEM_MANIFEST_KERNEL_STRUCT_SIZE, neuronmem_manifest_kernel(x, i, out))
NM_OUTPUT(nm_manifest_channel, (const neuronmem_manifest_t* x, size_t i, neuronmem_manifest_channel_t* out),
          NEURONMEM_MANIFEST_CHANNEL_STRUCT_SIZE, neuronmem_manifest_channel(x, i, out))
NM_OUTPUT(nm_manifest_composite, (const neuronmem_manifest_t* x, size_t i, neuronmem_manifest_composite_t* out),
          NEURONMEM_MANIFEST_COMPOSITE_STRUCT_SIZE, neuronmem_manifest_composite(x, i, out))
NM_OUTPUT(nm_executable_properties, (const neuronmem_executable_t* x, neuronmem_executable_properties_t* out),
          NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE, neuronmem_executable_properties(x, out))
NM_OUTPUT(nm_executable_value,
          (const neuronmem_executable_t* x, int is_output, size_t i, neuronmem_executable_value_t* out),
          NEURONMEM_EXECUTABLE_VALUE_STRUCT_SIZE,
          is_output ? neuronmem_executable_output(x, i, out) : neuronmem_executable_parameter(x, i, out))
NM_OUTPUT(nm_execution_stats, (const neuronmem_execution_t* x, neuronmem_execution_stats_t* out),
          NEURONMEM_EXECUTION_STATS_STRUCT_SIZE, neuronmem_execution_stats(x, out))
NM_OUTPUT(nm_execution_transfers, (const neuronmem_execution_t* x, int from, int to, neuronmem_transfer_counts_t* out),
          NEURONMEM_TRANSFER_COUNTS_STRUCT_SIZE,
          neuronmem_execution_transfers(x, (neuronmem_memory_kind_t)from, (neuronmem_memory_kind_t)to, out))
#undef NM_OUTPUT

neuronmem_status_t* nm_compile(neuronmem_client_t* client, const char* text, size_t size,
                               const neuronmem_manifest_t* manifest, const char* entry, const char* filename,
                               int policy, int argument_placement, uint32_t num_replicas, uint32_t num_partitions,
                               neuronmem_executable_t** out) {
  neuronmem_compile_options_t o;
  NM_SIZED(&o, NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE);
  o.entry = entry;
  o.filename = filename;
  o.policy = (neuronmem_placement_policy_t)policy;
  o.argument_placement = (neuronmem_argument_placement_t)argument_placement;
  o.num_replicas = num_replicas;
  o.num_partitions = num_partitions;
  if (manifest) return neuronmem_executable_compile_manifest(client, manifest, &o, out);
  return neuronmem_executable_compile_text(client, text, size, &o, out);
}

neuronmem_status_t* nm_execute(neuronmem_executable_t* e, neuronmem_device_t* device,
                               neuronmem_buffer_t* const* arguments, size_t num_arguments,
                               neuronmem_event_t* const* wait, size_t num_wait, const size_t* non_donatable,
                               size_t num_non_donatable, uint64_t timeout_ns, neuronmem_buffer_t** out_results,
                               neuronmem_event_t** out_done, neuronmem_execution_t** out_execution) {
  neuronmem_execute_args_t a;
  NM_SIZED(&a, NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE);
  a.executable = e;
  a.device = device;
  a.arguments = arguments;
  a.num_arguments = num_arguments;
  a.wait = nm_wait(wait, num_wait);
  a.non_donatable = non_donatable;
  a.num_non_donatable = num_non_donatable;
  a.timeout_ns = timeout_ns;
  return neuronmem_executable_execute(&a, out_results, out_done, out_execution);
}

void nm_launch_args_init(neuronmem_execute_devices_args_t* a) {
  NM_SIZED(a, NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE);
}

neuronmem_status_t* nm_execute_devices(const neuronmem_execute_devices_args_t* base, neuronmem_executable_t* e,
                                       neuronmem_device_t* const* devices, size_t num_devices,
                                       neuronmem_buffer_t* const* arguments, size_t num_arguments,
                                       const neuronmem_event_list_t* waits, const size_t* non_donatable,
                                       size_t num_non_donatable, const neuronmem_host_callback_t* send_callbacks,
                                       size_t num_send_callbacks, const neuronmem_host_callback_t* recv_callbacks,
                                       size_t num_recv_callbacks, neuronmem_buffer_t** out_results,
                                       neuronmem_event_t** out_done, neuronmem_execution_t** out_executions) {
  neuronmem_execute_devices_args_t a = *base;
  a.executable = e;
  a.devices = devices;
  a.num_devices = num_devices;
  a.arguments = arguments;
  a.num_arguments = num_arguments;
  a.waits = waits;
  a.non_donatable = non_donatable;
  a.num_non_donatable = num_non_donatable;
  a.send_callbacks = send_callbacks;
  a.num_send_callbacks = num_send_callbacks;
  a.recv_callbacks = recv_callbacks;
  a.num_recv_callbacks = num_recv_callbacks;
  return neuronmem_executable_execute_devices(&a, out_results, out_done, out_executions);
}

void nm_host_callback(neuronmem_host_callback_t* out, int64_t channel_id, uintptr_t handle) {
  out->channel_id = channel_id;
  out->fn = (neuronmem_host_callback_fn_t)neuronmemGoHostTransfer;
  out->user_data = (void*)handle;
}

neuronmem_status_t* nm_register_kernel(neuronmem_client_t* client, const char* name, uintptr_t handle) {
  neuronmem_kernel_registration_t r;
  NM_SIZED(&r, NEURONMEM_KERNEL_REGISTRATION_STRUCT_SIZE);
  r.name = name;
  r.fn = (neuronmem_kernel_fn_t)neuronmemGoKernel;
  r.user_data = (void*)handle;
  return neuronmem_client_register_kernel(client, &r);
}

// The directory store's callbacks, with the directory as a string.
neuronmem_status_t* nm_directory_store_get(const char* dir, const char* key, size_t key_size, uint64_t timeout_ns,
                                           char** out_value, size_t* out_value_size) {
  return neuronmem_directory_store_get((void*)dir, key, key_size, timeout_ns, out_value, out_value_size);
}
neuronmem_status_t* nm_directory_store_put(const char* dir, const char* key, size_t key_size, const char* value,
                                           size_t value_size) {
  return neuronmem_directory_store_put((void*)dir, key, key_size, value, value_size);
}
