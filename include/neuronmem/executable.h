/* libneuronmem: executables, the software NeuronCore's compiled graphs (PJRT's executable shape).
 *
 * Compile StableHLO text (or a loaded manifest) for the client's NeuronCores, ask what it takes and returns
 * (element types, dims, memory kinds from the manifest, the memory each lives in on a device), then execute
 * it asynchronously on a device: argument buffers and wait events in, result buffers (allocated in the memory
 * each result's kind names on that core) and one completion event out. Executions on one core run in
 * submission order; the caller may queue the next before this one finished. Every byte an execution moves
 * between memory kinds is counted (neuronmem_execution_stats): explicit moves the graph asks for
 * (annotate_device_placement, MoveToHost, MoveToDevice, AwsNeuronMemoryPlacement) apart from implicit copies
 * the runtime made (NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY). Concepts and rules: docs/executor.md.
 *
 * Ownership: executables, executions, result buffers and events returned here are owned by the caller
 * (neuronmem_executable_destroy, neuronmem_execution_destroy, neuronmem_buffer_destroy,
 * neuronmem_event_destroy); devices and memories are borrowed from the client. An executable must not outlive
 * its client (neuronmem_client_destroy refuses while executables or executions are pending). Executables are
 * immutable once compiled: all functions are thread-safe. On failure, out-parameters are set to NULL/0; the
 * execute calls' arrays are cleared as far as args tells their length (none when args->struct_size is too
 * small or num_devices exceeds the client's devices (64 without an executable); out_results only once
 * args->executable is known, since its length is the executable's output count). */
#ifndef NEURONMEM_EXECUTABLE_H
#define NEURONMEM_EXECUTABLE_H

#include <neuronmem/buffer.h>
#include <neuronmem/client.h>
#include <neuronmem/manifest.h>
#include <neuronmem/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct neuronmem_executable neuronmem_executable_t; /* owned by the caller */
typedef struct neuronmem_execution neuronmem_execution_t;   /* owned by the caller */

/* What execute does with an argument that does not live in the memory its manifest entry names on the
 * device. Append-only. */
typedef enum neuronmem_argument_placement {
  /* FAILED_PRECONDITION naming the argument, the expected and the actual memory kind. */
  NEURONMEM_ARGUMENT_PLACEMENT_STRICT = 0,
  /* The runtime copies it there through the copy engine and counts the copy as implicit. */
  NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY = 1,
  NEURONMEM_ARGUMENT_PLACEMENT_FORCE_32 = 0x7fffffff
} neuronmem_argument_placement_t;

/* Compile options. Growable: struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE (or sizeof); all-zero
 * means defaults. */
typedef struct neuronmem_compile_options {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  const char* entry;                           /* NUL-terminated entry function (text only); NULL = "main" */
  const char* filename;                /* NUL-terminated name for error locations (text only); NULL = "<input>" */
  neuronmem_placement_policy_t policy; /* results without mhlo.memory_kind (text only) */
  neuronmem_argument_placement_t argument_placement; /* STRICT (default) or AUTO_COPY */
  /* Replicas: the executable runs on devices 0..num_replicas*num_partitions-1; 0 = as many as the client's cores
   * hold (cores / num_partitions). */
  uint32_t num_replicas;
  /* SPMD partitions per replica: 0 = the module's mhlo.num_partitions (1 if it states none). Device d runs
   * replica d / num_partitions, partition d % num_partitions (neuronmem_executable_logical_ids). */
  uint32_t num_partitions;
} neuronmem_compile_options_t;
#define NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_compile_options_t, num_partitions)

/* What an executable is. Growable output struct: the caller sets struct_size. */
typedef struct neuronmem_executable_properties {
  size_t struct_size;
  size_t num_parameters;
  size_t num_outputs;
  uint32_t num_replicas;
  uint64_t peak_device_bytes; /* the device-arena workspace of one execution (intermediates, planned) */
  uint64_t peak_host_bytes;   /* the same for intermediates in pinned_host / unpinned_host (moved there,
                                 or defined by host compute) */
  uint64_t num_ops;           /* compiled ops over every function and region */
  /* Places in the graph that move data: its intra-graph moves and the moves host compute adds at its
   * boundary. One in a loop moves once per iteration; what an execution moved: neuronmem_execution_stats. */
  uint64_t num_explicit_moves;
  uint32_t num_partitions; /* it runs on devices 0..num_replicas*num_partitions-1 */
  /* A shape-polymorphic entry (parameters with -1 dims: jax.export's symbolic dimensions) compiles once per tuple
   * of argument shapes at execute, its shapes refined from the arguments, each kept in a cache of 16 (least
   * recently used out first): how many it compiled so far. 0 for other executables (peak bytes and num_ops are
   * 0 for a polymorphic one: they are its specializations'). Filled when struct_size covers it. */
  uint64_t num_specializations;
  /* The most devices one sdy.manual_computation whose body communicates runs at once (0: none communicates, or
   * every one runs its devices one after another). On a client of more than one core they run on its cores
   * (device d of an execution on core c on core (c + d) mod cores; devices beyond the cores on threads of their
   * own); on one core each on a thread of its own (docs/executor.md, "Shardy"). What an execution's ran on:
   * neuronmem_execution_stats. Filled when struct_size covers it. */
  uint64_t num_manual_devices;
} neuronmem_executable_properties_t;
#define NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE \
  NEURONMEM_STRUCT_SIZE(neuronmem_executable_properties_t, num_manual_devices)

/* A parameter or an output of the entry function. Growable output struct. */
typedef struct neuronmem_executable_value {
  size_t struct_size;
  neuronmem_element_type_t element_type;
  const int64_t* dims; /* borrowed from the executable; NULL for rank 0 */
  size_t num_dims;
  neuronmem_memory_kind_t memory_kind; /* from the manifest */
  uint64_t bytes;                      /* dense size */
  /* Parameters: the output whose memory this argument becomes when donated (tf.aliasing_output, or the
   * output a jax.buffer_donor is matched with), else -1. Outputs: the parameter donated into it, or -1. */
  int64_t donation;
} neuronmem_executable_value_t;
#define NEURONMEM_EXECUTABLE_VALUE_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_executable_value_t, donation)

/* Arguments of neuronmem_executable_execute. Growable. */
typedef struct neuronmem_execute_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  neuronmem_executable_t* executable;
  neuronmem_device_t* device;           /* one of devices 0..num_replicas-1 of the executable's client */
  neuronmem_buffer_t* const* arguments; /* num_arguments buffers of the client, borrowed for the call */
  size_t num_arguments;                 /* must equal num_parameters */
  neuronmem_event_list_t wait;          /* events to wait for before the execution starts */
  /* Parameters not to donate this time (PJRT's non_donatable_input_indices); NULL if none. */
  const size_t* non_donatable;
  size_t num_non_donatable;
  /* The execution's deadline: nanoseconds from submission, then it stops (before its next op, or at once
   * while queued) and its event fails with DEADLINE_EXCEEDED; 0 = the client's execution_timeout_ns
   * (neuronmem_client_options_t), UINT64_MAX = none even if the client sets one. */
  uint64_t timeout_ns;
} neuronmem_execute_args_t;
#define NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_execute_args_t, timeout_ns)

/* A tensor in a memory of the executing core, dense, row-major: an operand or result of a kernel call (custom
 * kernels, below) or the payload of a host transfer. */
typedef struct neuronmem_kernel_tensor {
  void* data; /* operands: read only; results: the kernel writes every element */
  neuronmem_element_type_t element_type;
  const int64_t* dims; /* NULL for rank 0 */
  size_t num_dims;
  neuronmem_memory_kind_t memory_kind; /* where data lies (a pinned_host operand is read in place) */
} neuronmem_kernel_tensor_t;

/* One host transfer of an execution: a stablehlo.send (channel type 2, device to host) or stablehlo.recv
 * (channel type 3, host to device) with is_host_transfer. Every pointer is borrowed for the call only. */
typedef struct neuronmem_host_transfer {
  size_t struct_size;
  int64_t channel_id; /* the op's channel_handle handle */
  int32_t device;     /* the executing device's id */
  uint32_t replica_id;
  uint32_t partition_id;
  /* send: the payload, to read; recv: the op's results, to fill (every element). Views of the executing
   * core's memories (neuronmem_kernel_tensor_t: data, element type, dims, memory kind). */
  const neuronmem_kernel_tensor_t* tensors;
  size_t num_tensors;
} neuronmem_host_transfer_t;
#define NEURONMEM_HOST_TRANSFER_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_host_transfer_t, num_tensors)

/* A send or recv callback (PJRT's send_callbacks / recv_callbacks): returns NULL or a status
 * (neuronmem_status_create; the library frees it), which fails the executing device's execution as
 * "file:line:col: 'stablehlo.send': the send callback of channel N: ...". Called on the executing core's
 * thread, several devices at once. A library call from it that could block (a wait on an event not ready, a
 * synchronous read or write, neuronmem_client_destroy) returns FAILED_PRECONDITION. */
typedef neuronmem_status_t* (*neuronmem_host_callback_fn_t)(const neuronmem_host_transfer_t* transfer, void* user_data);

/* A callback for one channel id. */
typedef struct neuronmem_host_callback {
  int64_t channel_id;
  neuronmem_host_callback_fn_t fn;
  void* user_data; /* passed to fn; must stay valid until every device's done event of the launch is ready */
} neuronmem_host_callback_t;

/* Arguments of neuronmem_executable_execute_devices: one launch on several devices at once (PJRT's Execute
 * with per-device argument lists). Arrays indexed by device are in the order of `devices`. Growable. */
typedef struct neuronmem_execute_devices_args {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  neuronmem_executable_t* executable;
  neuronmem_device_t* const* devices; /* num_devices distinct devices the executable runs on */
  size_t num_devices;
  /* num_devices * num_arguments buffers of the client, row-major: arguments[d * num_arguments + i] is
   * argument i of devices[d]; borrowed for the call. */
  neuronmem_buffer_t* const* arguments;
  size_t num_arguments; /* per device: must equal num_parameters */
  /* waits[d]: events devices[d]'s execution waits for before it starts; NULL = none for every device. */
  const neuronmem_event_list_t* waits;
  /* Parameters not to donate this time, on every device (PJRT's non_donatable_input_indices); NULL if none. */
  const size_t* non_donatable;
  size_t num_non_donatable;
  /* Host transfers by channel id, for every device of the launch: each send with is_host_transfer calls the
   * send callback of its channel, each such recv the recv callback. Every host transfer of the executable
   * needs one (INVALID_ARGUMENT naming the op and channel otherwise); a channel id listed twice is
   * INVALID_ARGUMENT. Copied by the call. */
  const neuronmem_host_callback_t* send_callbacks;
  size_t num_send_callbacks;
  const neuronmem_host_callback_t* recv_callbacks;
  size_t num_recv_callbacks;
  uint64_t timeout_ns; /* every device's execution, as neuronmem_execute_args_t.timeout_ns */
  /* A launch across the processes of a job (docs/distributed.md): the caller's id for it (PJRT's launch_id; 0 =
   * none). Every process launching its devices of the launch gives the same id; a process that gives another
   * fails the launch's ops that talk to it with FAILED_PRECONDITION naming both ids. */
  uint64_t launch_id;
} neuronmem_execute_devices_args_t;
#define NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_execute_devices_args_t, launch_id)

/* Statistics of one finished execution. Growable output struct. Times in nanoseconds. */
typedef struct neuronmem_execution_stats {
  size_t struct_size;
  /* moves the graph asks for (annotations, MoveToHost/Device, result kinds), and each tensor a host-transfer
   * callback reads or writes (the core's kind -> unpinned_host for a send, back for a recv) */
  uint64_t explicit_transfers;
  uint64_t explicit_bytes;
  uint64_t implicit_transfers; /* copies the runtime made (AUTO_COPY arguments) */
  uint64_t implicit_bytes;
  uint64_t op_ns;       /* running ops (transfers inside the graph excluded) */
  uint64_t transfer_ns; /* explicit moves inside the graph, plus implicit copies from submission to completion */
  uint64_t queue_ns;    /* from submission until the core started it */
  /* Messages this execution received from other cores of its launch (send/recv, collectives), each counted
   * once, by its receiver; also in neuronmem_execution_transfers (sender's kind -> receiver's kind). */
  uint64_t peer_transfers;
  uint64_t peer_bytes;
  /* sdy.manual_computation devices (neuronmem_executable_properties_t.num_manual_devices) on a client of more than
   * one core: the most cores one computation of the execution ran its devices on, and the most devices one ran
   * on threads of their own (more devices than cores, or a core busy with another execution's computation). Both
   * 0 on a client of one core (a thread per device). Filled when struct_size covers them. */
  uint64_t manual_cores;
  uint64_t manual_threads;
} neuronmem_execution_stats_t;
#define NEURONMEM_EXECUTION_STATS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_execution_stats_t, manual_threads)

/* The transfers of one execution from one memory kind to another. Growable output struct. */
typedef struct neuronmem_transfer_counts {
  size_t struct_size;
  uint64_t explicit_transfers;
  uint64_t explicit_bytes;
  uint64_t implicit_transfers;
  uint64_t implicit_bytes;
  uint64_t peer_transfers; /* messages received from other cores of the launch */
  uint64_t peer_bytes;
} neuronmem_transfer_counts_t;
#define NEURONMEM_TRANSFER_COUNTS_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_transfer_counts_t, peer_bytes)

/* ---- Custom kernels (the NKI path) ------------------------------------------------------------------- */

/* What a kernel is called with; every pointer is borrowed for the call only. */
typedef struct neuronmem_kernel_call {
  size_t struct_size;
  neuronmem_string_t target;         /* the custom-call target */
  neuronmem_string_t name;           /* the registered name (func_name for AwsNeuronCustomNativeKernel) */
  neuronmem_string_t backend_config; /* as written in the graph (NKI: base64 of JSON); may be empty */
  const neuronmem_kernel_tensor_t* inputs;
  size_t num_inputs;
  const neuronmem_kernel_tensor_t* outputs;
  size_t num_outputs;
  const int64_t* grid; /* the launch grid; grid_rank 0: one call */
  size_t grid_rank;
  const int64_t* grid_index; /* this call's grid point */
  int32_t device;            /* the executing device's id */
} neuronmem_kernel_call_t;
#define NEURONMEM_KERNEL_CALL_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_kernel_call_t, device)

/* A kernel: returns NULL on success or a status (neuronmem_status_create; the library frees it), which fails
 * the execution as "file:line:col: 'stablehlo.custom_call' @target: kernel 'name' at grid point [i]: ...".
 * Called on library threads, for several grid points at once. A call into the library that could block
 * (a wait on an event not ready, a synchronous read or write, neuronmem_client_destroy) returns
 * FAILED_PRECONDITION there instead of hanging the core: kernels must not wait for the library. */
typedef neuronmem_status_t* (*neuronmem_kernel_fn_t)(const neuronmem_kernel_call_t* call, void* user_data);

/* Arguments of neuronmem_client_register_kernel. Growable. */
typedef struct neuronmem_kernel_registration {
  size_t struct_size;
  const neuronmem_extension_base_t* extension; /* extension chain; NULL */
  const char* name;                            /* NUL-terminated: a custom-call target, or an NKI func_name */
  neuronmem_kernel_fn_t fn;
  void* user_data; /* passed to fn; must stay valid while the client and executables calling it live */
} neuronmem_kernel_registration_t;
#define NEURONMEM_KERNEL_REGISTRATION_STRUCT_SIZE NEURONMEM_STRUCT_SIZE(neuronmem_kernel_registration_t, user_data)

/* Registers (or replaces, for executables compiled afterwards) a kernel of the client: a custom call whose
 * target is args->name runs it once; an AwsNeuronCustomNativeKernel call whose backend_config names
 * func_name = args->name runs it once per point of its grid (in parallel). Executables keep the kernels they
 * were compiled with. A custom call to a target with no kernel fails at compile with its location. Returns
 * INVALID_ARGUMENT (NULL or empty name, NULL fn, struct_size; a name the executor runs itself:
 * annotate_device_placement, MoveToHost, MoveToDevice, AwsNeuronMemoryPlacement, AwsNeuronCustomNativeKernel
 * or any name starting with "check."; nothing is registered then). Thread-safe. */
NEURONMEM_API neuronmem_status_t* neuronmem_client_register_kernel(neuronmem_client_t* client,
                                                                   const neuronmem_kernel_registration_t* args);

/* Every call below that takes an args or options struct returns INVALID_ARGUMENT for a struct_size smaller
 * than the struct's first published size or an extension chain with an unknown type. */

/* Compiles StableHLO text (`size` bytes, need not be NUL-terminated) for the client's cores. options:
 * nullable. out: required, owned. Returns INVALID_ARGUMENT (bad text, placement rules, options),
 * NOT_FOUND (no entry), UNIMPLEMENTED "file:line:col: 'op': reason" for anything the executor cannot run
 * (an unknown op or custom-call target, an element type, a tuple or token parameter) - never later. */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_compile_text(neuronmem_client_t* client, const char* text,
                                                                    size_t size,
                                                                    const neuronmem_compile_options_t* options,
                                                                    neuronmem_executable_t** out);

/* Compiles the graph of a manifest loaded from StableHLO text (its entry and policy; options->entry and
 * policy are ignored). The manifest may be destroyed afterwards. Codes as compile_text, and
 * FAILED_PRECONDITION for a manifest loaded from JSON (it has no graph). */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_compile_manifest(neuronmem_client_t* client,
                                                                        const neuronmem_manifest_t* manifest,
                                                                        const neuronmem_compile_options_t* options,
                                                                        neuronmem_executable_t** out);

/* Frees the executable; executions already submitted still run. NULL is a no-op. */
NEURONMEM_API void neuronmem_executable_destroy(neuronmem_executable_t* executable);

/* Counts and sizes (caller sets out->struct_size). INVALID_ARGUMENT for NULL or a too small struct_size. */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_properties(const neuronmem_executable_t* executable,
                                                                  neuronmem_executable_properties_t* out);

/* Parameter `index` (caller sets out->struct_size). OUT_OF_RANGE for a bad index, INVALID_ARGUMENT. */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_parameter(const neuronmem_executable_t* executable, size_t index,
                                                                 neuronmem_executable_value_t* out);

/* Output `index` (caller sets out->struct_size). OUT_OF_RANGE for a bad index, INVALID_ARGUMENT. */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_output(const neuronmem_executable_t* executable, size_t index,
                                                              neuronmem_executable_value_t* out);

/* The memory of `device` that parameter `index` must live in at execute (borrowed from the client).
 * OUT_OF_RANGE for a bad index, INVALID_ARGUMENT for NULL or a device of another client. */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_parameter_memory(const neuronmem_executable_t* executable,
                                                                        const neuronmem_device_t* device, size_t index,
                                                                        neuronmem_memory_t** out);

/* The memory of `device` that output `index` is allocated in (borrowed). Codes as parameter_memory. */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_output_memory(const neuronmem_executable_t* executable,
                                                                     const neuronmem_device_t* device, size_t index,
                                                                     neuronmem_memory_t** out);

/* Submits one execution on args->device after args->wait and every argument's content. A program that uses
 * the process grid (replica_id, partition_id, collectives, send/recv) runs as a launch of this one device
 * (neuronmem_executable_execute_devices): replica_id answers the device's replica; it has no host-transfer
 * callbacks (a host transfer is INVALID_ARGUMENT naming its channel). out_results
 * (required): num_outputs slots, each receives an owned buffer, defined when the execution finishes.
 * out_done (required): an owned event ready when every result is defined, failed with the run's error (an
 * op's "file:line:col: 'op': reason", RESOURCE_EXHAUSTED naming the core when its device arena cannot
 * hold the workspace, a failed wait event). out_execution (nullable): an owned handle for the statistics.
 * Donated arguments are deleted by this call; their memory becomes the result's (one given as
 * MUTABLE_ZERO_COPY is the caller's memory: the result aliases it, the execution writes the result there, and
 * the memory must stay valid until the result is destroyed, when the upload's done_with_host event completes).
 * Returns INVALID_ARGUMENT
 * (argument count, a buffer or event of another client, shape or element type of an argument differs
 * from its parameter, a device the executable does not run on; a shape-polymorphic executable's argument whose
 * shape does not fit its -1 dims), FAILED_PRECONDITION (a deleted or donated
 * argument; an argument to donate that aliases IMMUTABLE_ZERO_COPY memory; STRICT: an argument in another
 * memory kind than its parameter's; a wait event or argument that already failed), RESOURCE_EXHAUSTED (no
 * memory for a result); the argument buffers stay intact then. May run the execution on the calling thread
 * when the core is idle and nothing is pending, but only a program whose work is bounded: one with a
 * stablehlo.while always runs on its core's thread, so this call never waits for a loop that may not end (a
 * custom kernel runs where its execution runs: how long it takes is the caller's own code). Stop an
 * execution with args->timeout_ns or neuronmem_execution_cancel. A shape-polymorphic executable runs the
 * specialization for the arguments' shapes, compiled by the first call that needs it (its compile errors are
 * this call's: INVALID_ARGUMENT or UNIMPLEMENTED "file:line:col: ..."; docs/executor.md). */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_execute(const neuronmem_execute_args_t* args,
                                                               neuronmem_buffer_t** out_results,
                                                               neuronmem_event_t** out_done,
                                                               neuronmem_execution_t** out_execution);

/* Submits one launch: an execution of the executable on each of args->devices, each as
 * neuronmem_executable_execute would submit it on its device (same checks, placement, donation, results),
 * submitted together: launches reach every core they share in one order. Each device of a launch runs its
 * execution on a thread of its own core (made the first time a launch uses the core), but the caller may run
 * the first device's itself when its core is idle (never with host callbacks or a loop without a known bound,
 * docs/executor.md "Threads"), and every idle device's, one after the other, for a program without collectives
 * whose last execution took less than a thread's hand-off; a launch of one device without callbacks cannot
 * block and runs as neuronmem_executable_execute does.
 * A program that uses replica_id, partition_id, collectives or send/recv runs as one process per device of
 * a process grid of num_replicas x num_partitions processes (device d = process d; in a client of a job,
 * d is the global id and the grid spans the job's processes, each launching its own devices with the same
 * program and launch_id, docs/distributed.md): collectives and
 * send/recv between cores move device memory to device memory through the copy engine (counted as
 * peer_transfers of the receiving execution), host transfers call the launch's callbacks; a process that
 * waits for a device the launch does not name, or for a peer that ended or failed first, fails naming the op,
 * channel and processes, never hangs; the launch's events then complete together once every device ended.
 * out_results (required): num_devices * num_outputs slots, row-major (out_results[d * num_outputs + k] is
 * output k of devices[d]), each an owned buffer. out_done (required): num_devices owned events, out_done[d]
 * ready when devices[d]'s results are defined or failed with its error. out_executions (nullable):
 * num_devices owned handles for the statistics. Returns what neuronmem_executable_execute returns, with
 * "device d: " before a device's message, and INVALID_ARGUMENT for no devices or more than the client has
 * (nothing written then), a num_arguments other than num_parameters, a device listed twice or
 * one the executable does not run on, a NULL per-device array entry, a donated buffer passed twice, a host
 * transfer without its callback, a NULL callback or a channel id listed twice; then nothing was submitted
 * and every out slot is NULL (arguments donated by an earlier device of the launch stay donated only if a
 * later device's donation itself fails). Thread-safe. */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_execute_devices(const neuronmem_execute_devices_args_t* args,
                                                                       neuronmem_buffer_t** out_results,
                                                                       neuronmem_event_t** out_done,
                                                                       neuronmem_execution_t** out_executions);

/* The replica and partition `device` runs when it executes the executable: device d is replica
 * d / num_partitions, partition d % num_partitions (what stablehlo.replica_id / partition_id return there).
 * In a client of a job (docs/distributed.md), d is the device's global id for a program that uses the process
 * grid. out_replica, out_partition: required. INVALID_ARGUMENT for NULL or a device of another client or one the
 * executable does not run on (outputs set to 0). */
NEURONMEM_API neuronmem_status_t* neuronmem_executable_logical_ids(const neuronmem_executable_t* executable,
                                                                   const neuronmem_device_t* device,
                                                                   uint32_t* out_replica, uint32_t* out_partition);

/* The statistics of a finished execution (caller sets out->struct_size). FAILED_PRECONDITION while its
 * event is not ready; INVALID_ARGUMENT for NULL or a too small struct_size. */
NEURONMEM_API neuronmem_status_t* neuronmem_execution_stats(const neuronmem_execution_t* execution,
                                                            neuronmem_execution_stats_t* out);

/* The transfers of a finished execution from memory kind `from` to `to` (caller sets out->struct_size).
 * FAILED_PRECONDITION while not finished; INVALID_ARGUMENT for an unknown kind, NULL or struct_size. */
NEURONMEM_API neuronmem_status_t* neuronmem_execution_transfers(const neuronmem_execution_t* execution,
                                                                neuronmem_memory_kind_t from,
                                                                neuronmem_memory_kind_t to,
                                                                neuronmem_transfer_counts_t* out);

/* Stops the execution: one still queued fails at once (it waits for none of its events), one running stops
 * before its next op (every iteration of a loop runs ops, so an endless stablehlo.while stops too; a kernel or
 * host callback that never returns does not). Its done event then fails with CANCELLED naming the op it did
 * not run, its workspace goes back to the core's memories, its results are never defined (their events fail
 * likewise), and its donated arguments stay deleted, as every donated argument is from submission on (their
 * memory belongs to the failed results). A process of a launch blocked in a collective or recv stops once its
 * peers end (cancel each device's execution to stop a launch). Cancelling one that finished, or was already
 * stopped (cancelled or its deadline passed), changes nothing and returns NULL. INVALID_ARGUMENT for NULL.
 * Thread-safe; never blocks (callable from kernels and callbacks). */
NEURONMEM_API neuronmem_status_t* neuronmem_execution_cancel(neuronmem_execution_t* execution);

/* Frees the handle (the execution itself goes on). NULL is a no-op. */
NEURONMEM_API void neuronmem_execution_destroy(neuronmem_execution_t* execution);

#ifdef __cplusplus
}
#endif

#endif /* NEURONMEM_EXECUTABLE_H */
