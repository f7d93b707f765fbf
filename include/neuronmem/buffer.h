/* libneuronmem: buffers, events and transfers (the copy engine).
 *
 * A buffer is a dense array of one element type living in one memory (device HBM of a core, the pinned-host
 * arena, or ordinary host memory). Every transfer is asynchronous: it returns an event that becomes ready
 * when the transfer has finished (or failed), and accepts a list of events to wait for before it starts:
 * events of the same client only (another client's event is INVALID_ARGUMENT at submission). Transfers
 * on the same NeuronCore's DMA queue complete in submission order. Concepts: docs/async.md.
 *
 * Ownership: buffers and events returned by these calls are owned by the caller (neuronmem_buffer_destroy,
 * neuronmem_event_destroy); memories and devices are borrowed from the client. All functions are
 * thread-safe. On failure, out-parameters are set to NULL. */
#ifndef NEURONMEM_BUFFER_H
#define NEURONMEM_BUFFER_H

#include <neuronmem/client.h>
#include <neuronmem/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct neuronmem_buffer neuronmem_buffer_t; /* owned by the caller */
typedef struct neuronmem_event neuronmem_event_t;   /* owned by the caller */

/* The largest rank a buffer may have. */
#define NEURONMEM_MAX_RANK 16

/* Element types. Append-only (tests/abi/check_enums.py holds the released values). Every element takes a whole
 * number of bytes (neuronmem_element_type_size). The small floats from 13 on are stored one element per byte, their
 * bits in the low bits of the byte as MLIR's dense literals store them (f6: the low 6 bits, f4: the low 4, the rest
 * zero); the complex types are (real, imaginary) pairs. The sub-byte integers (25-28) take one byte per element too,
 * holding the value as an int8 or uint8 (S4 -1 is 0xff), unpacked: PJRT's packed forms are the plugin's business. Names
 * and formats are PJRT_Buffer_Type's and StableHLO's (docs/numerics.md says what each float format is). */
typedef enum neuronmem_element_type {
  NEURONMEM_ELEMENT_TYPE_PRED = 0, /* 1 byte, 0 or 1 */
  NEURONMEM_ELEMENT_TYPE_S8 = 1,
  NEURONMEM_ELEMENT_TYPE_S16 = 2,
  NEURONMEM_ELEMENT_TYPE_S32 = 3,
  NEURONMEM_ELEMENT_TYPE_S64 = 4,
  NEURONMEM_ELEMENT_TYPE_U8 = 5,
  NEURONMEM_ELEMENT_TYPE_U16 = 6,
  NEURONMEM_ELEMENT_TYPE_U32 = 7,
  NEURONMEM_ELEMENT_TYPE_U64 = 8,
  NEURONMEM_ELEMENT_TYPE_F16 = 9,
  NEURONMEM_ELEMENT_TYPE_BF16 = 10,
  NEURONMEM_ELEMENT_TYPE_F32 = 11,
  NEURONMEM_ELEMENT_TYPE_F64 = 12,
  NEURONMEM_ELEMENT_TYPE_C64 = 13,    /* complex<f32>: 8 bytes */
  NEURONMEM_ELEMENT_TYPE_C128 = 14,   /* complex<f64>: 16 bytes */
  NEURONMEM_ELEMENT_TYPE_F8E5M2 = 15, /* the 8-bit floats: 1 byte each */
  NEURONMEM_ELEMENT_TYPE_F8E4M3FN = 16,
  NEURONMEM_ELEMENT_TYPE_F8E4M3B11FNUZ = 17,
  NEURONMEM_ELEMENT_TYPE_F8E5M2FNUZ = 18,
  NEURONMEM_ELEMENT_TYPE_F8E4M3FNUZ = 19,
  NEURONMEM_ELEMENT_TYPE_F8E4M3 = 20,
  NEURONMEM_ELEMENT_TYPE_F8E3M4 = 21,
  NEURONMEM_ELEMENT_TYPE_F8E8M0FNU = 22,
  NEURONMEM_ELEMENT_TYPE_F6E2M3FN = 23, /* 6-bit floats (MX): 1 byte each, the low 6 bits */
  NEURONMEM_ELEMENT_TYPE_F6E3M2FN = 24,
  NEURONMEM_ELEMENT_TYPE_S4 = 25,       /* the sub-byte integers: 1 byte each, the value as an int8 (S4: -8..7) */
  NEURONMEM_ELEMENT_TYPE_U4 = 26,       /* 1 byte each, the value as a uint8 (U4: 0..15) */
  NEURONMEM_ELEMENT_TYPE_S2 = 27,       /* -2..1 */
  NEURONMEM_ELEMENT_TYPE_U2 = 28,       /* 0..3 */
  NEURONMEM_ELEMENT_TYPE_F4E2M1FN = 29, /* 4-bit float (MX): 1 byte each, the low 4 bits */
  NEURONMEM_ELEMENT_TYPE_FORCE_32 = 0x7fffffff
} neuronmem_element_type_t;

/* How the library may use the caller's host memory in neuronmem_buffer_from_host (PJRT's semantics).
 * Append-only. */
typedef enum neuronmem_host_buffer_semantics {
  /* The library keeps no reference after the call returns: it copies (or stages) the data during the call. */
  NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL = 0,
  /* The caller keeps the data unchanged until the done-with-host-buffer event is ready. */
  NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES = 1,
  /* The buffer aliases the caller's memory for its whole life, when the target allows it (a pinned_host
   * target and data inside the client's pinned-host arena, or an unpinned_host target, dense layout);
   * otherwise the library copies as for IMMUTABLE_UNTIL_TRANSFER_COMPLETES. The caller must not change
   * the data while the buffer lives. */
  NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY = 2,
  /* As IMMUTABLE_ZERO_COPY, but the caller may write the memory between transfers (it is the buffer). */
  NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY = 3,
  NEURONMEM_HOST_BUFFER_FORCE_32 = 0x7fffffff
} neuronmem_host_buffer_semantics_t;

/* The events a call waits for before it starts: `num_events` handles (borrowed for the call), or none. */
typedef struct neuronmem_event_list {
  neuronmem_event_t* const* events; /* may be NULL when num_events == 0; no entry may be NULL */
  size_t num_events;
} neuronmem_event_list_t;

/* Arguments of neuronmem_buffer_from_host. Growable: struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE
 * (or sizeof); zero fields mean defaults. */
typedef struct neuronmem_buffer_from_host_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  const void* data;                            /* the host data; NULL only for 0 bytes */
  neuronmem_element_type_t element_type;
  neuronmem_host_buffer_semantics_t host_buffer_semantics;
  const int64_t* dims;         /* num_dims sizes, each >= 0; NULL if none */
  size_t num_dims;             /* 0..NEURONMEM_MAX_RANK */
  const int64_t* byte_strides; /* NULL = dense row-major; else num_dims strides in bytes (>= 0) */
  neuronmem_memory_t* memory;  /* the target memory (any kind, any core) */
  neuronmem_event_list_t wait; /* events to wait for before the transfer starts */
} neuronmem_buffer_from_host_args_t;
#define NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_buffer_from_host_args_t, wait)

/* Arguments of neuronmem_buffer_allocate. Growable like neuronmem_buffer_from_host_args_t. */
typedef struct neuronmem_buffer_allocate_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  neuronmem_client_t* client;
  neuronmem_memory_t* memory; /* a memory of `client` */
  neuronmem_element_type_t element_type;
  const int64_t* dims; /* num_dims sizes, each >= 0; NULL if none */
  size_t num_dims;     /* 0..NEURONMEM_MAX_RANK */
} neuronmem_buffer_allocate_args_t;
#define NEURONMEM_BUFFER_ALLOCATE_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_buffer_allocate_args_t, num_dims)

/* Arguments of neuronmem_buffer_copy_to_memory. Growable. */
typedef struct neuronmem_buffer_copy_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  neuronmem_buffer_t* src;
  neuronmem_memory_t* memory; /* the target memory (any kind, any core) of src's client */
  neuronmem_event_list_t wait;
} neuronmem_buffer_copy_args_t;
#define NEURONMEM_BUFFER_COPY_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_buffer_copy_args_t, wait)

/* Arguments of neuronmem_buffer_read: bytes [offset, offset+size) of `buffer` into host memory `dst`
 * (valid until the read's event is ready). Growable. */
typedef struct neuronmem_buffer_read_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  neuronmem_buffer_t* buffer;
  uint64_t offset;
  uint64_t size;
  void* dst; /* NULL only for 0 bytes */
  neuronmem_event_list_t wait;
} neuronmem_buffer_read_args_t;
#define NEURONMEM_BUFFER_READ_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_buffer_read_args_t, wait)

/* Arguments of neuronmem_buffer_write: host bytes `src` (unchanged until the write's event is ready) into
 * [offset, offset+size) of `buffer`. Growable. */
typedef struct neuronmem_buffer_write_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  neuronmem_buffer_t* buffer;
  uint64_t offset;
  uint64_t size;
  const void* src; /* NULL only for 0 bytes */
  neuronmem_event_list_t wait;
} neuronmem_buffer_write_args_t;
#define NEURONMEM_BUFFER_WRITE_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_buffer_write_args_t, wait)

/* Arguments of neuronmem_buffer_upload_chunk. Growable. */
typedef struct neuronmem_buffer_chunk_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  neuronmem_buffer_t* buffer;                  /* from neuronmem_buffer_allocate */
  uint64_t offset;
  uint64_t size;
  const void* data; /* unchanged until the chunk's event is ready; NULL only for 0 bytes */
  neuronmem_event_list_t wait;
  bool is_last; /* the buffer's content is defined once this and every earlier chunk landed */
} neuronmem_buffer_chunk_args_t;
#define NEURONMEM_BUFFER_CHUNK_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_buffer_chunk_args_t, is_last)

/* Arguments of neuronmem_buffer_load_file: bytes [file_offset, file_offset+size) of the file at `path`
 * into the buffer at buffer_offset. Growable. */
typedef struct neuronmem_buffer_load_file_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  neuronmem_buffer_t* buffer;
  const char* path; /* NUL-terminated */
  uint64_t file_offset;
  uint64_t size;
  uint64_t buffer_offset;
  neuronmem_event_list_t wait;
} neuronmem_buffer_load_file_args_t;
#define NEURONMEM_BUFFER_LOAD_FILE_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_buffer_load_file_args_t, wait)

/* on-ready callback: `error` is NULL on success, else the transfer's error (borrowed for the call only).
 * Runs exactly once, on the thread that completed the event or, if the event was already ready, on the
 * registering thread before neuronmem_event_on_ready returns. Must not block for long. */
typedef void (*neuronmem_event_callback_t)(const neuronmem_status_t* error, void* user_data);

/* ---- Buffers -------------------------------------------------------------------------------------- */

/* Every call below that takes an args struct returns INVALID_ARGUMENT for a NULL args, a struct_size
 * smaller than the struct's first published size, an extension chain with an unknown type, a NULL
 * wait.events with a count, or a NULL entry in it. */

/* Creates a buffer in args->memory holding the host data. client, args, out_buffer: required.
 * out_ready (nullable): receives an event ready when the buffer's content is defined.
 * out_done_with_host (nullable): receives an event ready when the library no longer reads args->data (for
 * zero-copy buffers: when the buffer's memory is released).
 * Returns INVALID_ARGUMENT (unknown element type or semantics, rank above NEURONMEM_MAX_RANK, negative dims
 * or strides, a byte size that overflows, NULL data for a non-empty buffer, a memory of another client),
 * RESOURCE_EXHAUSTED (the target memory is full: the message names it and the sizes). */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_from_host(neuronmem_client_t* client,
                                                             const neuronmem_buffer_from_host_args_t* args,
                                                             neuronmem_buffer_t** out_buffer,
                                                             neuronmem_event_t** out_ready,
                                                             neuronmem_event_t** out_done_with_host);

/* Creates `count` buffers from `args[0..count)` in one batched submission with one event for all (the
 * upload plan's path): out_buffers (required) receives count owned buffers, out_ready (nullable) one event
 * ready when every buffer is defined (failed if any transfer failed). Same argument rules and codes as
 * neuronmem_buffer_from_host (messages name the entry, "args[3]: ..."); on failure no buffer is created. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_from_host_batch(neuronmem_client_t* client,
                                                                   const neuronmem_buffer_from_host_args_t* args,
                                                                   size_t count, neuronmem_buffer_t** out_buffers,
                                                                   neuronmem_event_t** out_ready);

/* Creates an uninitialised buffer in args->memory (its content counts as defined). out_buffer: required.
 * Returns INVALID_ARGUMENT (as above) or RESOURCE_EXHAUSTED. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_allocate(const neuronmem_buffer_allocate_args_t* args,
                                                            neuronmem_buffer_t** out_buffer);

/* Copies args->src into a new buffer in args->memory (any kind, any core). out_buffer: required; out_ready:
 * nullable. Waits for src's content and for args->wait. Returns INVALID_ARGUMENT (a memory of another
 * client), FAILED_PRECONDITION (src deleted), RESOURCE_EXHAUSTED. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_copy_to_memory(const neuronmem_buffer_copy_args_t* args,
                                                                  neuronmem_buffer_t** out_buffer,
                                                                  neuronmem_event_t** out_ready);

/* Copies bytes [offset, offset+size) of args->buffer to host memory args->dst. out_ready: nullable (then
 * the call waits for the copy and returns its error; refused inside an event callback). Returns OUT_OF_RANGE
 * (range past the buffer), FAILED_PRECONDITION (deleted; synchronous inside a callback). */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_read(const neuronmem_buffer_read_args_t* args,
                                                        neuronmem_event_t** out_ready);

/* Writes host bytes args->src into [offset, offset+size) of an existing buffer, in place: the per-step
 * update of decode metadata (a small write on an idle queue completes before the call returns). out_ready:
 * nullable (then the call waits; refused inside an event callback). Codes as neuronmem_buffer_read. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_write(const neuronmem_buffer_write_args_t* args,
                                                         neuronmem_event_t** out_ready);

/* Chunked upload into a buffer from neuronmem_buffer_allocate: copies args->size bytes of args->data to
 * args->offset after args->wait. With is_last, the buffer's content becomes defined once every chunk has
 * landed (neuronmem_buffer_ready_event). out_done: nullable (then the call waits; refused inside an event
 * callback). Returns OUT_OF_RANGE, FAILED_PRECONDITION (deleted, or a chunk after the last). */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_upload_chunk(const neuronmem_buffer_chunk_args_t* args,
                                                                neuronmem_event_t** out_done);

/* Loads a byte range of a file into the buffer, asynchronously through io_uring. out_ready: nullable (then
 * the call waits; refused inside an event callback). Returns NOT_FOUND (no such file), PERMISSION_DENIED,
 * OUT_OF_RANGE (range past the end of the file or of the buffer), INVALID_ARGUMENT (not a regular file:
 * never blocks on a FIFO), FAILED_PRECONDITION (deleted, or an IMMUTABLE_ZERO_COPY buffer). */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_load_file(const neuronmem_buffer_load_file_args_t* args,
                                                             neuronmem_event_t** out_ready);

/* An event ready when the buffer's content is defined (upload, copy, last chunk). out_event: required,
 * owned. Returns INVALID_ARGUMENT. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_ready_event(neuronmem_buffer_t* buffer,
                                                               neuronmem_event_t** out_event);

/* Deletes the buffer's content: the memory is released once every pending transfer that touches it has
 * finished; later calls on the buffer return FAILED_PRECONDITION. Deleting twice is a no-op. The handle
 * stays valid until neuronmem_buffer_destroy. Returns INVALID_ARGUMENT for NULL. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_delete(neuronmem_buffer_t* buffer);

/* Deletes (if not yet) and frees the handle. NULL is a no-op. */
NEURONMEM_API void neuronmem_buffer_destroy(neuronmem_buffer_t* buffer);

/* Queries. buffer and the out-pointer: required (INVALID_ARGUMENT otherwise). Borrowed results live as long
 * as the buffer handle. They work on deleted buffers too. */
/* The memory the buffer lives in (borrowed from the client). */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_memory(const neuronmem_buffer_t* buffer,
                                                          neuronmem_memory_t** out_memory);
/* The device whose queue moves the buffer's bytes: its memory's core (borrowed from the client). */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_device(const neuronmem_buffer_t* buffer,
                                                          neuronmem_device_t** out_device);
/* The buffer's element type. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_element_type(const neuronmem_buffer_t* buffer,
                                                                neuronmem_element_type_t* out_type);
/* The buffer's shape: *out_num_dims sizes at *out_dims (borrowed from the handle; NULL for rank 0). */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_dims(const neuronmem_buffer_t* buffer, const int64_t** out_dims,
                                                        size_t* out_num_dims);
/* Bytes the buffer occupies in its memory (dense). */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_on_device_size(const neuronmem_buffer_t* buffer,
                                                                  uint64_t* out_bytes);
/* Whether neuronmem_buffer_delete was called on the buffer. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_is_deleted(const neuronmem_buffer_t* buffer, bool* out);
/* Whether the buffer aliases caller memory (zero-copy) rather than owning a copy. */
NEURONMEM_API neuronmem_status_t* neuronmem_buffer_is_zero_copy(const neuronmem_buffer_t* buffer, bool* out);

/* The size in bytes of one element of `type`, or 0 for an unknown type. */
NEURONMEM_API uint64_t neuronmem_element_type_size(neuronmem_element_type_t type);

/* ---- Events --------------------------------------------------------------------------------------- */

/* Whether the event is ready (succeeded or failed). Returns INVALID_ARGUMENT. */
NEURONMEM_API neuronmem_status_t* neuronmem_event_is_ready(const neuronmem_event_t* event, bool* out);

/* Blocks until the event is ready or timeout_ns nanoseconds passed (< 0 or INT64_MAX: no limit). Returns NULL
 * if the transfer succeeded, a copy of its error if it failed, DEADLINE_EXCEEDED on timeout,
 * INVALID_ARGUMENT for NULL, FAILED_PRECONDITION inside an event callback unless the event is ready or
 * timeout_ns is 0. Without a limit, the calling thread may copy part of a large transfer the event stands
 * for before it blocks (docs/async.md, "Waiting threads help"). */
NEURONMEM_API neuronmem_status_t* neuronmem_event_wait(neuronmem_event_t* event, int64_t timeout_ns);

/* The transfer's error: writes a copy (owned by the caller) or NULL on success to *out_error. Returns
 * FAILED_PRECONDITION if the event is not ready yet, INVALID_ARGUMENT for NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_event_error(const neuronmem_event_t* event, neuronmem_status_t** out_error);

/* Registers a callback that runs exactly once when the event is ready (at once if it already is), on the
 * thread that completes it. Inside the callback, calls that could block (a wait on a pending event, a
 * synchronous transfer, neuronmem_client_destroy) return FAILED_PRECONDITION (docs/async.md).
 * Returns INVALID_ARGUMENT for NULL event or callback. */
NEURONMEM_API neuronmem_status_t* neuronmem_event_on_ready(neuronmem_event_t* event,
                                                           neuronmem_event_callback_t callback, void* user_data);

/* Creates a pending event that the caller completes with neuronmem_event_complete: the frontend's own work
 * (an executed graph, a host computation) as a dependency that transfers can wait on. Owned by the caller
 * (neuronmem_event_destroy). If it is destroyed, or the client is destroyed, before it is completed, it
 * completes with CANCELLED, so transfers waiting on it fail instead of waiting forever.
 * Returns INVALID_ARGUMENT for NULL, FAILED_PRECONDITION while the client is being destroyed. */
NEURONMEM_API neuronmem_status_t* neuronmem_event_create(neuronmem_client_t* client, neuronmem_event_t** out);

/* Completes an event made by neuronmem_event_create: it becomes ready, failed with a copy of `error`
 * (borrowed; NULL means success). Transfers waiting on it then run, or fail with that error's code.
 * Callbacks registered on it run on this thread. Returns FAILED_PRECONDITION if the event is already
 * complete (or was cancelled) or was not made by neuronmem_event_create, INVALID_ARGUMENT for NULL. */
NEURONMEM_API neuronmem_status_t* neuronmem_event_complete(neuronmem_event_t* event, const neuronmem_status_t* error);

/* Releases the caller's reference; pending work still completes (an uncompleted event from
 * neuronmem_event_create is completed with CANCELLED first). NULL is a no-op. */
NEURONMEM_API void neuronmem_event_destroy(neuronmem_event_t* event);

#ifdef __cplusplus
}
#endif

#endif /* NEURONMEM_BUFFER_H */
