/* libneuronmem: the placement manifest, the contract between a StableHLO frontend and the runtime.
 *
 * A manifest is loaded from compiled StableHLO text (or its JSON form) and says, for the entry function,
 * where every argument and result lives (memory kind), every intra-graph move between kinds, host-compute
 * regions, custom kernels, custom-call targets and send/recv channels. For a given device it names the
 * memory each argument must be uploaded to and each result will live in, and it can upload all arguments
 * in one call. The public contract (every accepted spelling, defaults, validation rules, JSON schema,
 * stability) is docs/contract.md.
 *
 * Ownership: a manifest is owned by the caller (neuronmem_manifest_destroy); every string and array it
 * returns is borrowed from it and lives as long as it. Manifests are immutable: all functions are
 * thread-safe. On failure, out-parameters are set to NULL/0. */
#ifndef NEURONMEM_MANIFEST_H
#define NEURONMEM_MANIFEST_H

#include <neuronmem/buffer.h>
#include <neuronmem/client.h>
#include <neuronmem/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct neuronmem_manifest neuronmem_manifest_t; /* owned by the caller */

/* The version of the manifest's JSON schema this library writes and reads. */
#define NEURONMEM_MANIFEST_SCHEMA_VERSION 1

/* Where unannotated results live. Append-only. */
typedef enum neuronmem_placement_policy {
  NEURONMEM_PLACEMENT_POLICY_DEVICE = 0,        /* results without mhlo.memory_kind live in `device` */
  NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX = 1, /* they stay on the device only if every argument is there;
                                                   otherwise they go to `unpinned_host` (torch-neuronx's rule) */
  NEURONMEM_PLACEMENT_POLICY_FORCE_32 = 0x7fffffff
} neuronmem_placement_policy_t;

/* Load options. Growable: struct_size = NEURONMEM_MANIFEST_OPTIONS_STRUCT_SIZE (or sizeof); all-zero means
 * defaults. */
typedef struct neuronmem_manifest_options {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  const char* entry;                           /* NUL-terminated entry function name; NULL = "main" */
  const char* filename; /* NUL-terminated name used in error messages; NULL = "<input>" (or the path) */
  neuronmem_placement_policy_t policy;
  uint32_t num_cores; /* cores that send/recv pairs may name; 0 = 2 */
} neuronmem_manifest_options_t;
#define NEURONMEM_MANIFEST_OPTIONS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_manifest_options_t, num_cores)

/* Counts of each part of a manifest. Growable output struct: the caller sets struct_size. */
typedef struct neuronmem_manifest_counts {
  size_t struct_size;
  size_t num_arguments;
  size_t num_results;
  size_t num_moves;
  size_t num_host_compute;
  size_t num_kernels;
  size_t num_custom_call_targets;
  size_t num_channels;
  size_t num_warnings;   /* neuronmem_manifest_warning; filled when struct_size covers it */
  size_t num_composites; /* neuronmem_manifest_composite; filled when struct_size covers it */
} neuronmem_manifest_counts_t;
#define NEURONMEM_MANIFEST_COUNTS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_manifest_counts_t, num_composites)

/* An argument or result of the entry function. Growable output struct. */
typedef struct neuronmem_manifest_value {
  size_t struct_size;
  uint32_t index;
  neuronmem_memory_kind_t memory_kind;
  neuronmem_string_t name;         /* argument SSA name ("arg0") or jax.result_info of a result */
  neuronmem_string_t element_type; /* "f32", "bf16", "i1", ..., "tuple", "token" */
  int32_t buffer_element_type;     /* the neuronmem_element_type_t to upload with, or -1 if none fits */
  bool kind_explicit;              /* mhlo.memory_kind said so (false: the policy chose) */
  const int64_t* dims;             /* -1 for a dynamic dimension */
  size_t num_dims;
  int64_t aliasing_output; /* tf.aliasing_output, or -1 */
  bool buffer_donor;       /* jax.buffer_donor */
  uint32_t line, column;   /* source location */
  size_t num_attributes;   /* other attributes: neuronmem_manifest_value_attribute */
} neuronmem_manifest_value_t;
#define NEURONMEM_MANIFEST_VALUE_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_manifest_value_t, num_attributes)

/* An intra-graph move (annotate_device_placement, MoveToHost, MoveToDevice, AwsNeuronMemoryPlacement). */
typedef struct neuronmem_manifest_move {
  size_t struct_size;
  neuronmem_string_t function;              /* the function containing it */
  neuronmem_string_t value;                 /* the SSA value moved, "%3" */
  neuronmem_string_t result;                /* the SSA value holding the moved tensor */
  neuronmem_string_t spelling;              /* the custom-call target used */
  neuronmem_string_t from_kind;             /* kind of the value before the move */
  neuronmem_string_t to_kind;               /* as written: device, pinned_host, unpinned_host, vmem, pinned_device */
  neuronmem_memory_kind_t from_memory_kind; /* the kind of from_kind */
  neuronmem_memory_kind_t to_memory_kind;   /* where libneuronmem places to_kind (vmem and
                                     pinned_device are device-side: `device`) */
  neuronmem_string_t element_type;
  const int64_t* dims;
  size_t num_dims;
  uint32_t line, column;
} neuronmem_manifest_move_t;
#define NEURONMEM_MANIFEST_MOVE_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_manifest_move_t, column)

/* A custom kernel (AwsNeuronCustomNativeKernel) with its decoded backend_config. */
typedef struct neuronmem_manifest_kernel {
  size_t struct_size;
  neuronmem_string_t function;
  neuronmem_string_t func_name;
  neuronmem_string_t binary;
  const int64_t* grid;
  size_t grid_rank;
  size_t num_input_names; /* neuronmem_manifest_kernel_io_name */
  size_t num_output_names;
  uint32_t num_operands, num_results;
  uint32_t line, column;
} neuronmem_manifest_kernel_t;
#define NEURONMEM_MANIFEST_KERNEL_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_manifest_kernel_t, column)

/* A send or recv. */
typedef struct neuronmem_manifest_channel {
  size_t struct_size;
  neuronmem_string_t function;
  neuronmem_string_t op; /* "send" or "recv" */
  int64_t handle;
  int32_t type; /* 0 invalid, 1 device-to-device, 2 device-to-host, 3 host-to-device */
  bool is_host_transfer;
  const int64_t* source_target_pairs; /* num_pairs (source, target) pairs, flattened */
  size_t num_pairs;
  size_t num_payloads;
  uint32_t line, column;
} neuronmem_manifest_channel_t;
#define NEURONMEM_MANIFEST_CHANNEL_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_manifest_channel_t, column)

/* A stablehlo.composite (jax.lax.composite, quantized patterns): it runs its decomposition function unless a
 * kernel registered under its name takes it over (docs/executor.md, "Custom kernels"). Growable output
 * struct. */
typedef struct neuronmem_manifest_composite {
  size_t struct_size;
  neuronmem_string_t function;      /* the function containing it */
  neuronmem_string_t name;          /* "my_namespace.my_op" */
  neuronmem_string_t decomposition; /* the function it stands for, without '@' */
  int64_t version;                  /* 0 when absent (the spec's default) */
  size_t num_attributes;            /* composite_attributes: neuronmem_manifest_composite_attribute */
  uint32_t line, column;
} neuronmem_manifest_composite_t;
#define NEURONMEM_MANIFEST_COMPOSITE_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_manifest_composite_t, column)

/* Loads the manifest of the entry function from StableHLO text (`size` bytes, need not be NUL-terminated).
 * options: nullable. out: required, owned. Returns INVALID_ARGUMENT ("file:line:col: message" for bad text
 * or a placement that breaks the rules), UNIMPLEMENTED (tuple-typed value with a memory kind), NOT_FOUND
 * (no entry function). */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_load_text(const char* text, size_t size,
                                                               const neuronmem_manifest_options_t* options,
                                                               neuronmem_manifest_t** out);

/* As neuronmem_manifest_load_text, from a regular file (NOT_FOUND if missing; INVALID_ARGUMENT for a FIFO,
 * device or directory, or over 4 GiB). */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_load_file(const char* path,
                                                               const neuronmem_manifest_options_t* options,
                                                               neuronmem_manifest_t** out);

/* Called once per public function by neuronmem_manifest_list_entries; `name` is borrowed for the call. */
typedef void (*neuronmem_manifest_entry_visitor_t)(neuronmem_string_t name, void* user_data);

/* Calls visit(name, user_data) for each public function of StableHLO text (`size` bytes), in source order,
 * each name once: the entries neuronmem_manifest_options_t.entry may name. `filename` (NULL = "<input>")
 * prefixes parse errors: INVALID_ARGUMENT "file:line:col: message"; nothing is visited then. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_list_entries(const char* text, size_t size, const char* filename,
                                                                  neuronmem_manifest_entry_visitor_t visit,
                                                                  void* user_data);

/* Called once by neuronmem_manifest_write_artifact with the artifact's bytes, borrowed for the call. */
typedef void (*neuronmem_bytes_visitor_t)(const void* data, size_t size, void* user_data);

/* Writes the module of StableHLO text (or of an artifact; `size` bytes) as a StableHLO portable artifact, the
 * vhlo MLIR bytecode jax.export ships and every loader here accepts, for StableHLO `target_version` ("1.9.0";
 * NULL = the newest this library reads, which is also its producer "StableHLO_v<version>"), and calls
 * visit(data, size, user_data) once with its bytes. `filename` (NULL = "<input>") prefixes parse errors and is
 * the file of the ops' locations. INVALID_ARGUMENT for bad text, a target outside 1.0.0 to the newest, more
 * than one module, or a program vhlo cannot hold at the target (ops of other dialects such as chlo, an
 * attribute of a newer op version): the message names the op and its line; nothing is visited then. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_write_artifact(const char* text, size_t size, const char* filename,
                                                                    const char* target_version,
                                                                    neuronmem_bytes_visitor_t visit, void* user_data);

/* Loads a manifest from its JSON form. INVALID_ARGUMENT if the JSON does not follow the schema. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_load_json(const char* json, size_t size,
                                                               neuronmem_manifest_t** out);

/* The manifest as JSON (schema version NEURONMEM_MANIFEST_SCHEMA_VERSION); borrowed until the manifest is
 * destroyed. Built on the first call (thread-safe; later calls return the same string). */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_to_json(const neuronmem_manifest_t* manifest,
                                                             neuronmem_string_t* out);

/* Frees a manifest. NULL is a no-op. */
NEURONMEM_API void neuronmem_manifest_destroy(neuronmem_manifest_t* manifest);

/* Module and entry names (borrowed). */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_entry(const neuronmem_manifest_t* manifest,
                                                           neuronmem_string_t* out_module,
                                                           neuronmem_string_t* out_entry);

/* Counts (caller sets out->struct_size). INVALID_ARGUMENT for NULL or a too small struct_size. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_counts(const neuronmem_manifest_t* manifest,
                                                            neuronmem_manifest_counts_t* out);

/* Argument / result `index`. OUT_OF_RANGE for a bad index; INVALID_ARGUMENT for NULL or struct_size. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_argument(const neuronmem_manifest_t* manifest, size_t index,
                                                              neuronmem_manifest_value_t* out);
/* Result `index` of the entry function, as neuronmem_manifest_argument. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_result(const neuronmem_manifest_t* manifest, size_t index,
                                                            neuronmem_manifest_value_t* out);

/* Attribute `attr` (key and value as written) of argument (is_result false) or result `index`. OUT_OF_RANGE. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_value_attribute(const neuronmem_manifest_t* manifest,
                                                                     bool is_result, size_t index, size_t attr,
                                                                     neuronmem_string_t* out_key,
                                                                     neuronmem_string_t* out_value);

/* The parts below are numbered 0..count-1 (neuronmem_manifest_counts); each call returns OUT_OF_RANGE for
 * a bad index and INVALID_ARGUMENT for NULL arguments or a too small struct_size. Strings are borrowed. */
/* Intra-graph move `index`. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_move(const neuronmem_manifest_t* manifest, size_t index,
                                                          neuronmem_manifest_move_t* out);
/* Host-compute region `index`: the op, the function containing it, its source location. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_host_compute(const neuronmem_manifest_t* manifest, size_t index,
                                                                  neuronmem_string_t* out_op,
                                                                  neuronmem_string_t* out_function, uint32_t* out_line,
                                                                  uint32_t* out_column);
/* NKI kernel `index` with its decoded backend_config. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_kernel(const neuronmem_manifest_t* manifest, size_t index,
                                                            neuronmem_manifest_kernel_t* out);
/* Input (is_output false) or output name `name_index` of kernel `index`. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_kernel_io_name(const neuronmem_manifest_t* manifest, size_t index,
                                                                    bool is_output, size_t name_index,
                                                                    neuronmem_string_t* out);
/* Custom-call target `index` and how many calls in the module use it. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_custom_call_target(const neuronmem_manifest_t* manifest,
                                                                        size_t index, neuronmem_string_t* out_target,
                                                                        uint64_t* out_count);
/* send / recv `index` with its channel and source-target pairs. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_channel(const neuronmem_manifest_t* manifest, size_t index,
                                                             neuronmem_manifest_channel_t* out);

/* Composite `index`, in walk order (the entry function, then each function at its first call or composite). */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_composite(const neuronmem_manifest_t* manifest, size_t index,
                                                               neuronmem_manifest_composite_t* out);
/* Entry `attr` of composite `index`'s composite_attributes, in the order written: its key and its value as
 * written ("2 : i64", "dense<1.0> : tensor<f32>"; a string without its quotes). OUT_OF_RANGE for a bad index or
 * attr. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_composite_attribute(const neuronmem_manifest_t* manifest,
                                                                         size_t index, size_t attr,
                                                                         neuronmem_string_t* out_key,
                                                                         neuronmem_string_t* out_value);

/* Warning `index` (borrowed), "file:line:col: message": what the loader accepted but skipped (an op of an
 * unknown dialect in custom form, whose placement it therefore cannot follow). OUT_OF_RANGE past the last. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_warning(const neuronmem_manifest_t* manifest, size_t index,
                                                             neuronmem_string_t* out);

/* The memory of `device` that argument / result `index` must be uploaded to / will live in: `device` ->
 * that core's HBM memory, `pinned_host` -> that core's pinned_host memory, `unpinned_host` -> its
 * unpinned_host memory. Borrowed from the device's client. OUT_OF_RANGE, INVALID_ARGUMENT. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_argument_memory(const neuronmem_manifest_t* manifest,
                                                                     const neuronmem_device_t* device, size_t index,
                                                                     neuronmem_memory_t** out_memory);
/* The memory of `device` that result `index` will live in (as neuronmem_manifest_argument_memory). */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_result_memory(const neuronmem_manifest_t* manifest,
                                                                   const neuronmem_device_t* device, size_t index,
                                                                   neuronmem_memory_t** out_memory);

/* Arguments of neuronmem_manifest_upload_arguments. Growable. */
typedef struct neuronmem_manifest_upload_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  const neuronmem_manifest_t* manifest;
  neuronmem_device_t* device;   /* the device whose memories the arguments go to */
  const void* const* host_data; /* num_arguments pointers: dense, row-major data of each argument */
  size_t num_arguments;         /* must equal the manifest's */
  neuronmem_host_buffer_semantics_t host_buffer_semantics;
} neuronmem_manifest_upload_args_t;
#define NEURONMEM_MANIFEST_UPLOAD_ARGS_STRUCT_SIZE \
  NEURONMEM_STRUCT_SIZE(neuronmem_manifest_upload_args_t, host_buffer_semantics)

/* The upload plan: creates one buffer per argument in the memory the manifest names for args->device, from
 * host_data[i], in one batched submission with one event for all. An argument whose kind is pinned_host
 * and whose host data lies inside the client's pinned-host arena is uploaded zero-copy (no bytes move);
 * every other argument is copied with host_buffer_semantics (zero-copy values fall back to a copy where
 * not possible). out_buffers: num_arguments slots, each receives an owned buffer. out_ready: nullable.
 * Returns INVALID_ARGUMENT (NULL arguments, struct_size, num_arguments different from the manifest's, NULL
 * host data for a non-empty argument, unknown semantics), UNIMPLEMENTED (an argument with a dynamic shape,
 * a tuple, or an element type buffers do not support), RESOURCE_EXHAUSTED; on failure no buffer is
 * created, and out_buffers is left untouched when num_arguments is wrong, all NULL otherwise. */
NEURONMEM_API neuronmem_status_t* neuronmem_manifest_upload_arguments(const neuronmem_manifest_upload_args_t* args,
                                                                      neuronmem_buffer_t** out_buffers,
                                                                      neuronmem_event_t** out_ready);

#ifdef __cplusplus
}
#endif

#endif /* NEURONMEM_MANIFEST_H */
