/* C helpers of the Go binding: each builds an args struct on the C stack from plain arguments, so Go memory
 * passed to C never holds a Go pointer (cgo's pointer-passing rules) and C keeps nothing after the call. */
#ifndef NEURONMEM_GO_HELPERS_H
#define NEURONMEM_GO_HELPERS_H

#include <neuronmem/neuronmem.h>
#include <stdint.h>

neuronmem_status_t* nm_event_on_ready(neuronmem_event_t* e, uintptr_t handle);
neuronmem_status_t* nm_list_entries(const char* text, size_t size, const char* filename, uintptr_t handle);
neuronmem_status_t* nm_write_artifact(const char* text, size_t size, const char* filename, const char* target_version,
                                      uintptr_t handle);
neuronmem_status_t* nm_client_create(uint32_t num_cores, int mlock_mode, uint64_t device_bytes, uint64_t pinned_bytes,
                                     uint64_t execution_timeout_ns, neuronmem_client_t** out);
neuronmem_status_t* nm_from_host(neuronmem_client_t* client, const void* data, int element_type, int semantics,
                                 const int64_t* dims, size_t num_dims, const int64_t* strides,
                                 neuronmem_memory_t* memory, neuronmem_event_t* const* wait, size_t num_wait,
                                 neuronmem_buffer_t** out, neuronmem_event_t** done_with_host);
neuronmem_buffer_from_host_args_t* nm_batch_new(size_t n);
void nm_batch_set(neuronmem_buffer_from_host_args_t* a, size_t i, const void* data, int element_type, int semantics,
                  const int64_t* dims, size_t num_dims, neuronmem_memory_t* memory);
neuronmem_status_t* nm_allocate(neuronmem_client_t* client, neuronmem_memory_t* memory, int element_type,
                                const int64_t* dims, size_t num_dims, neuronmem_buffer_t** out);
neuronmem_status_t* nm_copy(neuronmem_buffer_t* src, neuronmem_memory_t* memory, neuronmem_event_t* const* wait,
                            size_t num_wait, neuronmem_buffer_t** out);
neuronmem_status_t* nm_read(neuronmem_buffer_t* b, uint64_t offset, uint64_t size, void* dst,
                            neuronmem_event_t* const* wait, size_t num_wait, neuronmem_event_t** out);
neuronmem_status_t* nm_write(neuronmem_buffer_t* b, uint64_t offset, uint64_t size, const void* src,
                             neuronmem_event_t* const* wait, size_t num_wait, neuronmem_event_t** out);
neuronmem_status_t* nm_chunk(neuronmem_buffer_t* b, uint64_t offset, uint64_t size, const void* data,
                             neuronmem_event_t* const* wait, size_t num_wait, int is_last, neuronmem_event_t** out);
neuronmem_status_t* nm_load_file(neuronmem_buffer_t* b, const char* path, uint64_t file_offset, uint64_t size,
                                 uint64_t buffer_offset, neuronmem_event_t* const* wait, size_t num_wait,
                                 neuronmem_event_t** out);
void nm_manifest_options(neuronmem_manifest_options_t* o, const char* entry, const char* filename, int policy,
                         uint32_t num_cores);
neuronmem_status_t* nm_manifest_load_text(const char* text, size_t size, const char* entry, const char* filename,
                                          int policy, uint32_t num_cores, neuronmem_manifest_t** out);
neuronmem_status_t* nm_manifest_load_file(const char* path, const char* entry, int policy, uint32_t num_cores,
                                          neuronmem_manifest_t** out);
neuronmem_status_t* nm_upload_arguments(const neuronmem_manifest_t* m, neuronmem_device_t* device,
                                        const void* const* host_data, size_t n, int semantics, neuronmem_buffer_t** out,
                                        neuronmem_event_t** ready);
neuronmem_status_t* nm_device_describe(const neuronmem_device_t* d, neuronmem_device_description_t* out);
neuronmem_status_t* nm_client_describe_device_id(const neuronmem_client_t* c, int32_t id,
                                                 neuronmem_device_description_t* out);
neuronmem_status_t* nm_directory_store_get(const char* dir, const char* key, size_t key_size, uint64_t timeout_ns,
                                           char** out_value, size_t* out_value_size);
neuronmem_status_t* nm_directory_store_put(const char* dir, const char* key, size_t key_size, const char* value,
                                           size_t value_size);
neuronmem_status_t* nm_memory_describe(const neuronmem_memory_t* m, neuronmem_memory_description_t* out);
neuronmem_status_t* nm_client_job_traffic(const neuronmem_client_t* c, neuronmem_job_traffic_t* out);
neuronmem_status_t* nm_memory_stats(const neuronmem_memory_t* m, neuronmem_memory_stats_t* out);
neuronmem_status_t* nm_manifest_counts(const neuronmem_manifest_t* m, neuronmem_manifest_counts_t* out);
neuronmem_status_t* nm_manifest_value(const neuronmem_manifest_t* m, int is_result, size_t i,
                                      neuronmem_manifest_value_t* out);
neuronmem_status_t* nm_manifest_move(const neuronmem_manifest_t* m, size_t i, neuronmem_manifest_move_t* out);
neuronmem_status_t* nm_manifest_kernel(const neuronmem_manifest_t* m, size_t i, neuronmem_manifest_kernel_t* out);
neuronmem_status_t* nm_manifest_channel(const neuronmem_manifest_t* m, size_t i, neuronmem_manifest_channel_t* out);
neuronmem_status_t* nm_manifest_composite(const neuronmem_manifest_t* m, size_t i, neuronmem_manifest_composite_t* out);

neuronmem_status_t* nm_compile(neuronmem_client_t* client, const char* text, size_t size,
                               const neuronmem_manifest_t* manifest, const char* entry, const char* filename,
                               int policy, int argument_placement, uint32_t num_replicas, uint32_t num_partitions,
                               neuronmem_executable_t** out);
neuronmem_status_t* nm_executable_properties(const neuronmem_executable_t* e, neuronmem_executable_properties_t* out);
neuronmem_status_t* nm_executable_value(const neuronmem_executable_t* e, int is_output, size_t i,
                                        neuronmem_executable_value_t* out);
neuronmem_status_t* nm_execute(neuronmem_executable_t* e, neuronmem_device_t* device,
                               neuronmem_buffer_t* const* arguments, size_t num_arguments,
                               neuronmem_event_t* const* wait, size_t num_wait, const size_t* non_donatable,
                               size_t num_non_donatable, uint64_t timeout_ns, neuronmem_buffer_t** out_results,
                               neuronmem_event_t** out_done, neuronmem_execution_t** out_execution);
/* A launch's args with its scalars (timeout_ns, launch_id) set from Go and every pointer NULL. */
void nm_launch_args_init(neuronmem_execute_devices_args_t* a);
/* Submits the launch of `base` (from nm_launch_args_init, scalars set) with these arrays. */
neuronmem_status_t* nm_execute_devices(const neuronmem_execute_devices_args_t* base, neuronmem_executable_t* e,
                                       neuronmem_device_t* const* devices, size_t num_devices,
                                       neuronmem_buffer_t* const* arguments, size_t num_arguments,
                                       const neuronmem_event_list_t* waits, const size_t* non_donatable,
                                       size_t num_non_donatable, const neuronmem_host_callback_t* send_callbacks,
                                       size_t num_send_callbacks, const neuronmem_host_callback_t* recv_callbacks,
                                       size_t num_recv_callbacks, neuronmem_buffer_t** out_results,
                                       neuronmem_event_t** out_done, neuronmem_execution_t** out_executions);
void nm_host_callback(neuronmem_host_callback_t* out, int64_t channel_id, uintptr_t handle);
neuronmem_status_t* nm_execution_stats(const neuronmem_execution_t* x, neuronmem_execution_stats_t* out);
neuronmem_status_t* nm_execution_transfers(const neuronmem_execution_t* x, int from, int to,
                                           neuronmem_transfer_counts_t* out);
neuronmem_status_t* nm_register_kernel(neuronmem_client_t* client, const char* name, uintptr_t handle);

#endif
