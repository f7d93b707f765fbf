// Helpers for tests and benchmarks that issue many transfers: each fills the call's args struct (with its
// struct_size) from plain arguments and makes the public call. The argument checks themselves are tested
// on the calls directly (tests/copy/copy_test.cc, ArgsStructs).
#pragma once

#include <neuronmem/buffer.h>

namespace neuronmem_test {

inline neuronmem_status_t* Allocate(neuronmem_client_t* client, neuronmem_memory_t* memory,
                                    neuronmem_element_type_t type, const int64_t* dims, size_t num_dims,
                                    neuronmem_buffer_t** out) {
  neuronmem_buffer_allocate_args_t a{};
  a.struct_size = sizeof a;
  a.client = client;
  a.memory = memory;
  a.element_type = type;
  a.dims = dims;
  a.num_dims = num_dims;
  return neuronmem_buffer_allocate(&a, out);
}

inline neuronmem_status_t* CopyToMemory(neuronmem_buffer_t* src, neuronmem_memory_t* memory,
                                        neuronmem_event_t* const* waits, size_t num_waits, neuronmem_buffer_t** out,
                                        neuronmem_event_t** out_ready) {
  neuronmem_buffer_copy_args_t a{};
  a.struct_size = sizeof a;
  a.src = src;
  a.memory = memory;
  a.wait = {waits, num_waits};
  return neuronmem_buffer_copy_to_memory(&a, out, out_ready);
}

inline neuronmem_status_t* Read(neuronmem_buffer_t* buffer, uint64_t offset, void* dst, uint64_t size,
                                neuronmem_event_t* const* waits, size_t num_waits, neuronmem_event_t** out_ready) {
  neuronmem_buffer_read_args_t a{};
  a.struct_size = sizeof a;
  a.buffer = buffer;
  a.offset = offset;
  a.dst = dst;
  a.size = size;
  a.wait = {waits, num_waits};
  return neuronmem_buffer_read(&a, out_ready);
}

inline neuronmem_status_t* Write(neuronmem_buffer_t* buffer, uint64_t offset, const void* src, uint64_t size,
                                 neuronmem_event_t* const* waits, size_t num_waits, neuronmem_event_t** out_ready) {
  neuronmem_buffer_write_args_t a{};
  a.struct_size = sizeof a;
  a.buffer = buffer;
  a.offset = offset;
  a.src = src;
  a.size = size;
  a.wait = {waits, num_waits};
  return neuronmem_buffer_write(&a, out_ready);
}

inline neuronmem_status_t* UploadChunk(neuronmem_buffer_t* buffer, uint64_t offset, const void* data, uint64_t size,
                                       bool is_last, neuronmem_event_t* const* waits, size_t num_waits,
                                       neuronmem_event_t** out_done) {
  neuronmem_buffer_chunk_args_t a{};
  a.struct_size = sizeof a;
  a.buffer = buffer;
  a.offset = offset;
  a.data = data;
  a.size = size;
  a.is_last = is_last;
  a.wait = {waits, num_waits};
  return neuronmem_buffer_upload_chunk(&a, out_done);
}

inline neuronmem_status_t* LoadFile(neuronmem_buffer_t* buffer, const char* path, uint64_t file_offset, uint64_t size,
                                    uint64_t buffer_offset, neuronmem_event_t* const* waits, size_t num_waits,
                                    neuronmem_event_t** out_ready) {
  neuronmem_buffer_load_file_args_t a{};
  a.struct_size = sizeof a;
  a.buffer = buffer;
  a.path = path;
  a.file_offset = file_offset;
  a.size = size;
  a.buffer_offset = buffer_offset;
  a.wait = {waits, num_waits};
  return neuronmem_buffer_load_file(&a, out_ready);
}

}  // namespace neuronmem_test
