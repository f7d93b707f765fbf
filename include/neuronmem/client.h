/* libneuronmem: clients, NeuronCore devices, memories (kinds, ids, statistics) and the pinned-host
 * allocator.
 *
 * Ownership (docs/ownership.md): a client is created and destroyed by the caller; devices and memories
 * are borrowed from their client and live exactly as long as it. Every function is thread-safe unless
 * its contract says otherwise. Every status code a function returns is listed in its contract; a
 * returned status is owned by the caller (neuronmem_status_free). On failure, out-parameters are set to
 * NULL/0. */
#ifndef NEURONMEM_CLIENT_H
#define NEURONMEM_CLIENT_H

#include <neuronmem/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles. neuronmem_client_t is owned; devices and memories are borrowed from their client. */
typedef struct neuronmem_client neuronmem_client_t;
typedef struct neuronmem_device neuronmem_device_t;
typedef struct neuronmem_memory neuronmem_memory_t;

/* Memory kinds (docs/memory-kinds.md). Append-only. The numeric value is the memory's kind id. */
typedef enum neuronmem_memory_kind {
  NEURONMEM_MEMORY_KIND_DEVICE = 0,        /* "device": one NeuronCore's HBM arena */
  NEURONMEM_MEMORY_KIND_PINNED_HOST = 1,   /* "pinned_host": the client's page-locked host arena */
  NEURONMEM_MEMORY_KIND_UNPINNED_HOST = 2, /* "unpinned_host": ordinary pageable host memory */
  NEURONMEM_MEMORY_KIND_FORCE_32 = 0x7fffffff
} neuronmem_memory_kind_t;

/* What to do when the pinned-host arena cannot be locked with mlock(2). Append-only. */
typedef enum neuronmem_mlock_mode {
  NEURONMEM_MLOCK_BEST_EFFORT = 0, /* default: try; if refused, run unlocked and report it in stats */
  NEURONMEM_MLOCK_REQUIRED = 1,    /* fail client creation with UNAVAILABLE when mlock is refused */
  NEURONMEM_MLOCK_DISABLED = 2,    /* never lock (populated, but pageable) */
  NEURONMEM_MLOCK_FORCE_32 = 0x7fffffff
} neuronmem_mlock_mode_t;

/* A key-value store the processes of a job bootstrap through (docs/distributed.md), the shape of
 * PJRT_Client_Create's kv_get / kv_put. Called during neuronmem_client_create only, on its thread.
 * get: waits up to timeout_ns for `key` (key_size bytes, not NUL-terminated); on success returns NULL with
 * *out_value a copy of the value allocated with malloc(3) (the library frees it with free(3)) and
 * *out_value_size its size; returns DEADLINE_EXCEEDED or NOT_FOUND when the key is still absent, any other
 * status on failure (a value it left in *out_value is freed then too). put: sets `key` to `value`; returns
 * NULL or a status. The library takes ownership of every status the callbacks return; a failure of either
 * fails neuronmem_client_create with the callback's code (NOT_FOUND from get as DEADLINE_EXCEEDED), the
 * message naming the call and key ("bootstrap: ...: kv_get('key'): ..."), and nothing of the client stays. */
typedef neuronmem_status_t* (*neuronmem_kv_get_fn)(void* user_data, const char* key, size_t key_size,
                                                   uint64_t timeout_ns, char** out_value, size_t* out_value_size);
typedef neuronmem_status_t* (*neuronmem_kv_put_fn)(void* user_data, const char* key, size_t key_size, const char* value,
                                                   size_t value_size);

/* Client options. Growable: set struct_size = sizeof(neuronmem_client_options_t); an all-zero field
 * means its default. Defaults: 2 NeuronCores, 64 MiB device (HBM) arena per core, 64 MiB pinned-host
 * arena, NEURONMEM_MLOCK_BEST_EFFORT (creation takes tens of milliseconds; docs/memory-kinds.md), a job
 * of one process. */
typedef struct neuronmem_client_options {
  size_t struct_size;                          /* required: NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE */
  const neuronmem_extension_base_t* extension; /* extension chain; NULL (none is defined yet) */
  uint32_t num_cores;                          /* 1..64; 0 = 2 */
  neuronmem_mlock_mode_t mlock_mode;
  uint64_t device_bytes_per_core; /* HBM arena bytes per core, >= 1 MiB; 0 = 64 MiB */
  uint64_t pinned_host_bytes;     /* pinned-host arena bytes, >= 32 MiB (mimalloc's arena unit); 0 = 64 MiB */
  /* The deadline of every execution that sets none itself (neuronmem_execute_args_t.timeout_ns): nanoseconds
   * from its submission, then it fails with DEADLINE_EXCEEDED; 0 = none. */
  uint64_t execution_timeout_ns;
  /* A job of several processes (docs/distributed.md): this client is process `process_index` of
   * `num_processes` (0 or 1: a client of one process; then the fields below are unused). Every process has
   * the same num_cores; device ids are global (process p's local device l has id p * num_cores + l). With
   * 2 or more processes kv_get and kv_put are required: creation bootstraps the job through them (waiting at
   * most bootstrap_timeout_ns for the peers, 0 = 30 s) and opens a libfabric endpoint bound to
   * fabric_interface (a NUL-terminated address, borrowed for the call; NULL = "127.0.0.1"). An op that
   * waits on a peer fails after peer_timeout_ns (0 = 30 s) naming the lost process. */
  uint32_t process_index;
  uint32_t num_processes; /* 0..65535 */
  neuronmem_kv_get_fn kv_get;
  neuronmem_kv_put_fn kv_put;
  void* kv_user_data; /* passed to kv_get and kv_put */
  uint64_t bootstrap_timeout_ns;
  uint64_t peer_timeout_ns;
  const char* fabric_interface;
} neuronmem_client_options_t;
#define NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_client_options_t, fabric_interface)

/* A device as PJRT describes it. Growable: the caller sets struct_size; strings are borrowed from the
 * client and NUL-terminated. */
typedef struct neuronmem_device_description {
  size_t struct_size;
  int32_t id;            /* global id: process_index * num_cores + local_id */
  int32_t process_index; /* the process of the job that owns the device (0 for a client of one process) */
  int32_t local_id;      /* 0..num_cores-1 within its process */
  int32_t reserved;
  neuronmem_string_t kind;         /* "NC_v2" */
  neuronmem_string_t debug_string; /* "NeuronCore(id=0, process_index=0, local_id=0)" */
  neuronmem_string_t to_string;    /* "NC_v2 (NeuronCore(id=0, process_index=0, local_id=0))" */
} neuronmem_device_description_t;
#define NEURONMEM_DEVICE_DESCRIPTION_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_device_description_t, to_string)

/* A memory as PJRT describes it. Growable like neuronmem_device_description_t. */
typedef struct neuronmem_memory_description {
  size_t struct_size;
  int32_t id;                      /* stable id: docs/memory-kinds.md */
  neuronmem_memory_kind_t kind_id; /* its kind as the enum */
  neuronmem_string_t kind;         /* "device", "pinned_host" or "unpinned_host" */
  neuronmem_string_t debug_string; /* "NeuronMemory(id=0, kind=device)" */
  neuronmem_string_t to_string;    /* same as debug_string */
} neuronmem_memory_description_t;
#define NEURONMEM_MEMORY_DESCRIPTION_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_memory_description_t, to_string)

/* Arena statistics of one memory. Growable like neuronmem_device_description_t. */
typedef struct neuronmem_memory_stats {
  size_t struct_size;
  uint64_t capacity;          /* bytes the memory can hold; 0 = no fixed capacity (unpinned_host) */
  uint64_t bytes_in_use;      /* bytes handed out (as requested, before rounding) */
  uint64_t peak_bytes_in_use; /* maximum of bytes_in_use since creation */
  uint64_t live_allocations;  /* allocations not yet freed */
  /* device: the largest free block (a request up to it succeeds now, alignment permitting); pinned_host:
   * an upper bound (capacity - in use - headers; mimalloc's size classes and 32 MiB segments can make a
   * smaller request fail, docs/arenas.md); 0 if unbounded (unpinned_host). */
  uint64_t largest_free_block;
  uint64_t total_allocations; /* allocations made since creation */
  bool is_locked;             /* the memory is page-locked (mlock succeeded) */
  bool is_shared;             /* the same arena also backs other memory ids (the host kinds) */
} neuronmem_memory_stats_t;
#define NEURONMEM_MEMORY_STATS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_memory_stats_t, is_shared)

/* Creates a client: maps and populates the pinned-host arena and one device arena per core; with
 * num_processes >= 2 it also bootstraps the job through the key-value store (docs/distributed.md).
 * options: nullable (NULL = all defaults). out_client: required; receives an owned client.
 * Returns INVALID_ARGUMENT (NULL out_client, struct_size too small, extension not NULL, bad counts or
 * sizes, unknown mlock_mode, process_index >= num_processes, several processes without kv_get / kv_put),
 * RESOURCE_EXHAUSTED (the arenas cannot be mapped), UNAVAILABLE (mlock refused under
 * NEURONMEM_MLOCK_REQUIRED; libfabric offers no usable provider), DEADLINE_EXCEEDED (peers that did not
 * publish their endpoints within bootstrap_timeout_ns, named), FAILED_PRECONDITION (a peer's record in
 * the store is garbage or of another job, core count or provider; two processes claim one index), or
 * the status a store callback returned. Thread-safe. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_create(const neuronmem_client_options_t* options,
                                                          neuronmem_client_t** out_client);

/* Destroys a client and unmaps its arenas. NULL is a no-op (returns NULL). While buffers of the client
 * exist (not yet neuronmem_buffer_destroy'ed), returns FAILED_PRECONDITION and destroys nothing. If host
 * allocations are still live, the client is destroyed anyway (their pointers become invalid) and
 * FAILED_PRECONDITION is returned naming each memory's live allocations and bytes. Inside an event callback
 * returns FAILED_PRECONDITION and destroys nothing. Not thread-safe with other calls on the same client. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_destroy(neuronmem_client_t* client);

/* The platform name, "neuron". client, out: required. Borrowed from the client.
 * Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_platform_name(const neuronmem_client_t* client,
                                                                 neuronmem_string_t* out);

/* The platform version, e.g. "libneuronmem 0.1.0". Same contract as neuronmem_client_platform_name. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_platform_version(const neuronmem_client_t* client,
                                                                    neuronmem_string_t* out);

/* The names of the extension structs this client accepts in an extension chain (borrowed array of
 * borrowed strings); none in this release.
 * client, out_names, out_count: required. Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_extensions(const neuronmem_client_t* client,
                                                              const neuronmem_string_t** out_names, size_t* out_count);

/* The client's devices in id order (borrowed array). Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_devices(const neuronmem_client_t* client,
                                                           neuronmem_device_t* const** out_devices, size_t* out_count);

/* Every memory of the client in id order (borrowed array). Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_memories(const neuronmem_client_t* client,
                                                            neuronmem_memory_t* const** out_memories,
                                                            size_t* out_count);

/* The device with global id `id` (borrowed), one of this client's. Returns INVALID_ARGUMENT on NULL
 * arguments, NOT_FOUND for an unknown id or another process's device (the message names the process). */
NEURONMEM_API neuronmem_status_t* neuronmem_client_lookup_device(const neuronmem_client_t* client, int32_t id,
                                                                 neuronmem_device_t** out_device);

/* The memory with id `id` (borrowed). Returns INVALID_ARGUMENT on NULL arguments, NOT_FOUND for an
 * unknown id. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_lookup_memory(const neuronmem_client_t* client, int32_t id,
                                                                 neuronmem_memory_t** out_memory);

/* The memory of kind `kind` addressable by `device` (borrowed). Returns INVALID_ARGUMENT on NULL
 * arguments or an unknown kind. */
NEURONMEM_API neuronmem_status_t* neuronmem_device_memory_of_kind(const neuronmem_device_t* device,
                                                                  neuronmem_memory_kind_t kind,
                                                                  neuronmem_memory_t** out_memory);

/* Fills `out` (whose struct_size the caller sets) with the device's description. Returns
 * INVALID_ARGUMENT on NULL arguments or struct_size below the first version's size. */
NEURONMEM_API neuronmem_status_t* neuronmem_device_describe(const neuronmem_device_t* device,
                                                            neuronmem_device_description_t* out);

/* This client's place in its job: process *out_process_index of *out_num_processes (0 of 1 for a client
 * of one process). Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_process(const neuronmem_client_t* client,
                                                           uint32_t* out_process_index, uint32_t* out_num_processes);

/* What the transport of this client's job (docs/distributed.md) has moved since the client was created:
 * messages and bytes sent to and received from the other processes (payload and the transport's headers),
 * and messages dropped (not from an endpoint of the job). All zero for a client of one process. Growable:
 * fields past the caller's struct_size are left alone. */
typedef struct neuronmem_job_traffic {
  size_t struct_size;
  uint64_t messages_sent;
  uint64_t bytes_sent;
  uint64_t messages_received;
  uint64_t bytes_received;
  uint64_t messages_dropped;
} neuronmem_job_traffic_t;
#define NEURONMEM_JOB_TRAFFIC_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_job_traffic_t, messages_dropped)

/* Fills `out` (whose struct_size the caller sets) with the client's job traffic (above). Returns
 * INVALID_ARGUMENT on NULL arguments or struct_size below the first version's size. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_job_traffic(const neuronmem_client_t* client,
                                                               neuronmem_job_traffic_t* out);

/* Fills `out` (whose struct_size the caller sets) with the description of the device with global id `id`
 * of the job: this client's (addressable) or another process's (process_index differs; not addressable,
 * and not a neuronmem_device_t). Strings are borrowed from the client. Returns INVALID_ARGUMENT on NULL
 * arguments or struct_size below the first version's size, NOT_FOUND for an id outside
 * 0..num_processes*num_cores-1. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_describe_device_id(const neuronmem_client_t* client, int32_t id,
                                                                      neuronmem_device_description_t* out);

/* The directory store, as callbacks for neuronmem_client_options_t.kv_get / kv_put: `directory` (the
 * kv_user_data) is the path of an existing directory, a NUL-terminated string the caller keeps alive,
 * shared by the job's processes; each key is one file, written atomically; get polls until the key's file
 * exists. Use a fresh directory per job. They return INVALID_ARGUMENT (NULL arguments, not a directory,
 * a value over 64 KiB), DEADLINE_EXCEEDED (get: the key is absent after timeout_ns), INTERNAL (the file
 * cannot be written). */
NEURONMEM_API neuronmem_status_t* neuronmem_directory_store_get(void* directory, const char* key, size_t key_size,
                                                                uint64_t timeout_ns, char** out_value,
                                                                size_t* out_value_size);
NEURONMEM_API neuronmem_status_t* neuronmem_directory_store_put(void* directory, const char* key, size_t key_size,
                                                                const char* value, size_t value_size);

/* The memories the device can address, in id order (borrowed array): its device memory, its
 * pinned_host memory and its unpinned_host memory. Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_device_addressable_memories(const neuronmem_device_t* device,
                                                                        neuronmem_memory_t* const** out_memories,
                                                                        size_t* out_count);

/* The device's default memory: its `device` memory (borrowed). Returns INVALID_ARGUMENT on NULL
 * arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_device_default_memory(const neuronmem_device_t* device,
                                                                  neuronmem_memory_t** out_memory);

/* Fills `out` with the memory's description. Same contract as neuronmem_device_describe. */
NEURONMEM_API neuronmem_status_t* neuronmem_memory_describe(const neuronmem_memory_t* memory,
                                                            neuronmem_memory_description_t* out);

/* The devices that can address the memory (borrowed array). Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_memory_addressable_devices(const neuronmem_memory_t* memory,
                                                                       neuronmem_device_t* const** out_devices,
                                                                       size_t* out_count);

/* The memory's kind. memory, out_kind: required. Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_memory_kind(const neuronmem_memory_t* memory,
                                                        neuronmem_memory_kind_t* out_kind);

/* The client that owns the memory (borrowed). Returns INVALID_ARGUMENT on NULL arguments. */
NEURONMEM_API neuronmem_status_t* neuronmem_memory_client(const neuronmem_memory_t* memory,
                                                          neuronmem_client_t** out_client);

/* A snapshot of the memory's arena statistics. pinned_host memories of different cores share one arena
 * and report the same figures (is_shared = 1). Returns INVALID_ARGUMENT on NULL arguments or struct_size
 * below the first version's size. */
NEURONMEM_API neuronmem_status_t* neuronmem_memory_stats(const neuronmem_memory_t* memory,
                                                         neuronmem_memory_stats_t* out);

/* Allocates `size` bytes inside the client's pinned-host arena, aligned to `alignment` (a power of two,
 * 0 = 64, at most 4096). Memory written here can be uploaded to `pinned_host` without a copy.
 * client, out_ptr: required; *out_ptr receives memory owned by the caller until
 * neuronmem_client_host_free(). Returns INVALID_ARGUMENT (NULL arguments, size 0, alignment not a power of two
 * or too large, size that overflows), RESOURCE_EXHAUSTED (the arena is full: the message names the memory
 * and the sizes). Thread-safe; any thread may free what another allocated. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_host_allocate(neuronmem_client_t* client, uint64_t size,
                                                                 uint64_t alignment, void** out_ptr);

/* Frees memory from neuronmem_client_host_allocate(). ptr NULL is a no-op. Returns INVALID_ARGUMENT for a
 * pointer outside the arena, not at the start of an allocation, or already freed (a double free is
 * detected until the block is handed out again). Thread-safe. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_host_free(neuronmem_client_t* client, void* ptr);

/* Whether [ptr, ptr+size) lies inside the client's pinned-host arena (then an upload to pinned_host can
 * alias it). Writes the answer to *out. Returns INVALID_ARGUMENT on NULL client or out. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_host_is_pinned(const neuronmem_client_t* client, const void* ptr,
                                                                  uint64_t size, bool* out);

#ifdef __cplusplus
}
#endif

#endif /* NEURONMEM_CLIENT_H */
