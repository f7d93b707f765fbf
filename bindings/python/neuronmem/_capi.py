"""Raw ctypes declarations of the libneuronmem C API (include/neuronmem/*.h, version 0.2).

Every struct mirrors its C definition field by field; tests/test_layout.py checks sizes and offsets against
the header compiled by the system C compiler. The library is found, in order, through $NEURONMEM_LIBRARY
(a path to libneuronmem.so), the libdir recorded when the package was installed (neuronmem/_install.py, written
by setup.py), `pkg-config --variable=libdir neuronmem`, then the dynamic loader's search."""
import ctypes
import ctypes.util
import os
import subprocess
from ctypes import POINTER, c_bool, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p

c_enum = c_int32  # every enum is 32-bit (FORCE_32 members)


def _library_in(libdir):
    try:
        for name in sorted(os.listdir(libdir)):
            if name.startswith("libneuronmem.so"):
                return os.path.join(libdir, name)
    except OSError:
        pass
    return None


def _installed_libdir():
    try:
        from . import _install  # only in an installed package
    except ImportError:
        return None
    return _install.LIBDIR


def _find_library():
    path = os.environ.get("NEURONMEM_LIBRARY")
    if path:
        return path
    libdir = _installed_libdir()
    if libdir and _library_in(libdir):
        return _library_in(libdir)
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "neuronmem"], capture_output=True, text=True,
                                check=True).stdout.strip()
        if _library_in(libdir):
            return _library_in(libdir)
    except (OSError, subprocess.CalledProcessError):
        pass
    found = ctypes.util.find_library("neuronmem")
    if not found:
        raise OSError("libneuronmem not found: set NEURONMEM_LIBRARY or PKG_CONFIG_PATH")
    return found


lib = ctypes.CDLL(_find_library())

# ctypes converts a Python int to a C integer by masking: 2**64 + 4 becomes 4, -1 becomes 2**64 - 1. Every
# integer that reaches the library here is range-checked first (struct fields set through new(), function
# arguments through _range_checked, arrays through int_array, other fields through check_int) and refused
# with range_error, which the package sets to raise NeuronMemError(INVALID_ARGUMENT).
range_error = OverflowError


def _int_bounds(ctype):
    """(lo, hi) of a ctypes integer type, or None for a type that is not one."""
    if not (isinstance(ctype, type) and issubclass(ctype, ctypes._SimpleCData)) or ctype._type_ not in "bBhHiIlLqQ":
        return None
    bits = 8 * ctypes.sizeof(ctype)
    if ctype._type_.islower():  # signed
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def check_int(value, ctype, what):
    """Returns value if the C type ctype holds it, else raises range_error naming `what`."""
    lo, hi = _int_bounds(ctype)
    if isinstance(value, int) and not lo <= value <= hi:
        raise range_error(f"{what} = {value} does not fit {ctype.__name__} ({lo}..{hi})")
    return value


def int_array(ctype, values, what, min_len=1):
    """A ctypes array of `values` (at least min_len elements), each range-checked."""
    values = list(values)
    lo, hi = _int_bounds(ctype)
    if values and (min(values) < lo or max(values) > hi):  # min/max run in C: the common case costs little
        for i, v in enumerate(values):
            check_int(v, ctype, f"{what}[{i}]")
    return (ctype * max(len(values), min_len))(*values)


class Opaque(ctypes.Structure):
    _fields_ = []


status_p = POINTER(Opaque)
client_p = POINTER(Opaque)
device_p = POINTER(Opaque)
memory_p = POINTER(Opaque)
buffer_p = POINTER(Opaque)
event_p = POINTER(Opaque)
manifest_p = POINTER(Opaque)
executable_p = POINTER(Opaque)
execution_p = POINTER(Opaque)


class String(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("size", c_size_t)]

    def text(self):
        return ctypes.string_at(self.data, self.size).decode("utf-8", "replace") if self.size else ""


class ExtensionBase(ctypes.Structure):
    pass


ExtensionBase._fields_ = [("struct_size", c_size_t), ("type", c_enum), ("next", POINTER(ExtensionBase))]


class ClientOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("num_cores", c_uint32),
                ("mlock_mode", c_enum), ("device_bytes_per_core", c_uint64), ("pinned_host_bytes", c_uint64),
                ("execution_timeout_ns", c_uint64), ("process_index", c_uint32), ("num_processes", c_uint32),
                ("kv_get", c_void_p), ("kv_put", c_void_p), ("kv_user_data", c_void_p),
                ("bootstrap_timeout_ns", c_uint64), ("peer_timeout_ns", c_uint64), ("fabric_interface", c_char_p)]


class DeviceDescription(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("id", c_int32), ("process_index", c_int32), ("local_id", c_int32),
                ("reserved", c_int32), ("kind", String), ("debug_string", String), ("to_string", String)]


class JobTraffic(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("messages_sent", c_uint64), ("bytes_sent", c_uint64),
                ("messages_received", c_uint64), ("bytes_received", c_uint64), ("messages_dropped", c_uint64)]


class MemoryDescription(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("id", c_int32), ("kind_id", c_enum), ("kind", String),
                ("debug_string", String), ("to_string", String)]


class MemoryStats(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("capacity", c_uint64), ("bytes_in_use", c_uint64),
                ("peak_bytes_in_use", c_uint64), ("live_allocations", c_uint64), ("largest_free_block", c_uint64),
                ("total_allocations", c_uint64), ("is_locked", c_bool), ("is_shared", c_bool)]


class EventList(ctypes.Structure):
    _fields_ = [("events", POINTER(event_p)), ("num_events", c_size_t)]


class BufferFromHostArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("data", c_void_p),
                ("element_type", c_enum), ("host_buffer_semantics", c_enum), ("dims", POINTER(c_int64)),
                ("num_dims", c_size_t), ("byte_strides", POINTER(c_int64)), ("memory", memory_p),
                ("wait", EventList)]


class BufferAllocateArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("client", client_p),
                ("memory", memory_p), ("element_type", c_enum), ("dims", POINTER(c_int64)), ("num_dims", c_size_t)]


class BufferCopyArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("src", buffer_p),
                ("memory", memory_p), ("wait", EventList)]


class BufferReadArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("buffer", buffer_p),
                ("offset", c_uint64), ("size", c_uint64), ("dst", c_void_p), ("wait", EventList)]


class BufferWriteArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("buffer", buffer_p),
                ("offset", c_uint64), ("size", c_uint64), ("src", c_void_p), ("wait", EventList)]


class BufferChunkArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("buffer", buffer_p),
                ("offset", c_uint64), ("size", c_uint64), ("data", c_void_p), ("wait", EventList),
                ("is_last", c_bool)]


class BufferLoadFileArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("buffer", buffer_p),
                ("path", c_char_p), ("file_offset", c_uint64), ("size", c_uint64), ("buffer_offset", c_uint64),
                ("wait", EventList)]


class ManifestOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("entry", c_char_p),
                ("filename", c_char_p), ("policy", c_enum), ("num_cores", c_uint32)]


class ManifestCounts(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("num_arguments", c_size_t), ("num_results", c_size_t),
                ("num_moves", c_size_t), ("num_host_compute", c_size_t), ("num_kernels", c_size_t),
                ("num_custom_call_targets", c_size_t), ("num_channels", c_size_t), ("num_warnings", c_size_t),
                ("num_composites", c_size_t)]


class ManifestValue(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("index", c_uint32), ("memory_kind", c_enum), ("name", String),
                ("element_type", String), ("buffer_element_type", c_int32), ("kind_explicit", c_bool),
                ("dims", POINTER(c_int64)), ("num_dims", c_size_t), ("aliasing_output", c_int64),
                ("buffer_donor", c_bool), ("line", c_uint32), ("column", c_uint32), ("num_attributes", c_size_t)]


class ManifestMove(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("function", String), ("value", String), ("result", String),
                ("spelling", String), ("from_kind", String), ("to_kind", String), ("from_memory_kind", c_enum),
                ("to_memory_kind", c_enum), ("element_type", String), ("dims", POINTER(c_int64)),
                ("num_dims", c_size_t), ("line", c_uint32), ("column", c_uint32)]


class ManifestKernel(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("function", String), ("func_name", String), ("binary", String),
                ("grid", POINTER(c_int64)), ("grid_rank", c_size_t), ("num_input_names", c_size_t),
                ("num_output_names", c_size_t), ("num_operands", c_uint32), ("num_results", c_uint32),
                ("line", c_uint32), ("column", c_uint32)]


class ManifestChannel(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("function", String), ("op", String), ("handle", c_int64),
                ("type", c_int32), ("is_host_transfer", c_bool), ("source_target_pairs", POINTER(c_int64)),
                ("num_pairs", c_size_t), ("num_payloads", c_size_t), ("line", c_uint32), ("column", c_uint32)]


class ManifestComposite(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("function", String), ("name", String), ("decomposition", String),
                ("version", c_int64), ("num_attributes", c_size_t), ("line", c_uint32), ("column", c_uint32)]


class ManifestUploadArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("manifest", manifest_p),
                ("device", device_p), ("host_data", POINTER(c_void_p)), ("num_arguments", c_size_t),
                ("host_buffer_semantics", c_enum)]


class CompileOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("entry", c_char_p),
                ("filename", c_char_p), ("policy", c_enum), ("argument_placement", c_enum), ("num_replicas", c_uint32),
                ("num_partitions", c_uint32)]


class ExecutableProperties(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("num_parameters", c_size_t), ("num_outputs", c_size_t),
                ("num_replicas", c_uint32), ("peak_device_bytes", c_uint64), ("peak_host_bytes", c_uint64),
                ("num_ops", c_uint64), ("num_explicit_moves", c_uint64), ("num_partitions", c_uint32),
                ("num_specializations", c_uint64), ("num_manual_devices", c_uint64)]


class ExecutableValue(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("element_type", c_enum), ("dims", POINTER(c_int64)),
                ("num_dims", c_size_t), ("memory_kind", c_enum), ("bytes", c_uint64), ("donation", c_int64)]


class ExecuteArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("executable", executable_p),
                ("device", device_p), ("arguments", POINTER(buffer_p)), ("num_arguments", c_size_t),
                ("wait", EventList), ("non_donatable", POINTER(c_size_t)), ("num_non_donatable", c_size_t),
                ("timeout_ns", c_uint64)]


class KernelTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("element_type", c_enum), ("dims", POINTER(c_int64)), ("num_dims", c_size_t),
                ("memory_kind", c_enum)]


class HostTransfer(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("channel_id", c_int64), ("device", c_int32), ("replica_id", c_uint32),
                ("partition_id", c_uint32), ("tensors", POINTER(KernelTensor)), ("num_tensors", c_size_t)]


# neuronmem_host_callback_fn_t: returns NULL or a status the library takes over (a plain pointer here).
HostCallbackFn = ctypes.CFUNCTYPE(c_void_p, POINTER(HostTransfer), c_void_p)


class HostCallback(ctypes.Structure):
    _fields_ = [("channel_id", c_int64), ("fn", HostCallbackFn), ("user_data", c_void_p)]


class ExecuteDevicesArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("executable", executable_p),
                ("devices", POINTER(device_p)), ("num_devices", c_size_t), ("arguments", POINTER(buffer_p)),
                ("num_arguments", c_size_t), ("waits", POINTER(EventList)), ("non_donatable", POINTER(c_size_t)),
                ("num_non_donatable", c_size_t), ("send_callbacks", POINTER(HostCallback)),
                ("num_send_callbacks", c_size_t), ("recv_callbacks", POINTER(HostCallback)),
                ("num_recv_callbacks", c_size_t), ("timeout_ns", c_uint64), ("launch_id", c_uint64)]


class ExecutionStats(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("explicit_transfers", c_uint64), ("explicit_bytes", c_uint64),
                ("implicit_transfers", c_uint64), ("implicit_bytes", c_uint64), ("op_ns", c_uint64),
                ("transfer_ns", c_uint64), ("queue_ns", c_uint64), ("peer_transfers", c_uint64),
                ("peer_bytes", c_uint64), ("manual_cores", c_uint64), ("manual_threads", c_uint64)]


class TransferCounts(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("explicit_transfers", c_uint64), ("explicit_bytes", c_uint64),
                ("implicit_transfers", c_uint64), ("implicit_bytes", c_uint64), ("peer_transfers", c_uint64),
                ("peer_bytes", c_uint64)]


class KernelCall(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("target", String), ("name", String), ("backend_config", String),
                ("inputs", POINTER(KernelTensor)), ("num_inputs", c_size_t), ("outputs", POINTER(KernelTensor)),
                ("num_outputs", c_size_t), ("grid", POINTER(c_int64)), ("grid_rank", c_size_t),
                ("grid_index", POINTER(c_int64)), ("device", c_int32)]


# neuronmem_kernel_fn_t: returns NULL or a status the library takes over (a plain pointer here, so that ctypes
# hands it to C unchanged).
KernelFn = ctypes.CFUNCTYPE(c_void_p, POINTER(KernelCall), c_void_p)


class KernelRegistration(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("extension", POINTER(ExtensionBase)), ("name", c_char_p),
                ("fn", KernelFn), ("user_data", c_void_p)]


def published_size(struct, last):
    """NEURONMEM_STRUCT_SIZE(struct, last): every field up to and including `last`."""
    field = getattr(struct, last)
    return field.offset + field.size


# struct -> its NEURONMEM_*_STRUCT_SIZE, computed like the header's macro.
STRUCT_SIZES = {
    ExtensionBase: published_size(ExtensionBase, "next"),
    ClientOptions: published_size(ClientOptions, "fabric_interface"),
    DeviceDescription: published_size(DeviceDescription, "to_string"),
    MemoryDescription: published_size(MemoryDescription, "to_string"),
    MemoryStats: published_size(MemoryStats, "is_shared"),
    JobTraffic: published_size(JobTraffic, "messages_dropped"),
    BufferFromHostArgs: published_size(BufferFromHostArgs, "wait"),
    BufferAllocateArgs: published_size(BufferAllocateArgs, "num_dims"),
    BufferCopyArgs: published_size(BufferCopyArgs, "wait"),
    BufferReadArgs: published_size(BufferReadArgs, "wait"),
    BufferWriteArgs: published_size(BufferWriteArgs, "wait"),
    BufferChunkArgs: published_size(BufferChunkArgs, "is_last"),
    BufferLoadFileArgs: published_size(BufferLoadFileArgs, "wait"),
    ManifestOptions: published_size(ManifestOptions, "num_cores"),
    ManifestCounts: published_size(ManifestCounts, "num_composites"),
    ManifestValue: published_size(ManifestValue, "num_attributes"),
    ManifestMove: published_size(ManifestMove, "column"),
    ManifestKernel: published_size(ManifestKernel, "column"),
    ManifestChannel: published_size(ManifestChannel, "column"),
    ManifestComposite: published_size(ManifestComposite, "column"),
    ManifestUploadArgs: published_size(ManifestUploadArgs, "host_buffer_semantics"),
    CompileOptions: published_size(CompileOptions, "num_partitions"),
    ExecutableProperties: published_size(ExecutableProperties, "num_manual_devices"),
    ExecutableValue: published_size(ExecutableValue, "donation"),
    ExecuteArgs: published_size(ExecuteArgs, "timeout_ns"),
    ExecuteDevicesArgs: published_size(ExecuteDevicesArgs, "launch_id"),
    HostTransfer: published_size(HostTransfer, "num_tensors"),
    ExecutionStats: published_size(ExecutionStats, "manual_threads"),
    TransferCounts: published_size(TransferCounts, "peer_bytes"),
    KernelCall: published_size(KernelCall, "device"),
    KernelRegistration: published_size(KernelRegistration, "user_data"),
}


_FIELD_BOUNDS = {}


def new(struct, **fields):
    """A zeroed struct with struct_size set to its published size, then `fields` (each integer range-checked
    against its field's C type: ctypes would mask it)."""
    bounds = _FIELD_BOUNDS.get(struct)
    if bounds is None:
        bounds = tuple((f[0],) + b for f in struct._fields_ if f[0] != "struct_size" and (b := _int_bounds(f[1])))
        _FIELD_BOUNDS[struct] = bounds
    for name, lo, hi in bounds:
        value = fields.get(name)
        if value is not None and isinstance(value, int) and not lo <= value <= hi:
            raise range_error(f"{struct.__name__}.{name} = {value} does not fit ({lo}..{hi})")
    return struct(struct_size=STRUCT_SIZES[struct], **fields)


EventCallback = ctypes.CFUNCTYPE(None, status_p, c_void_p)
EntryVisitor = ctypes.CFUNCTYPE(None, String, c_void_p)
BytesVisitor = ctypes.CFUNCTYPE(None, c_void_p, c_size_t, c_void_p)

P = POINTER
_S = status_p
# name: (restype, argtypes). Every public function of the 0.2 headers.
_SIGNATURES = {
    # status.h
    "neuronmem_status_create": (_S, [c_enum, c_void_p, c_size_t]),
    "neuronmem_status_code": (c_enum, [_S]),
    "neuronmem_status_message": (String, [_S]),
    "neuronmem_status_free": (None, [_S]),
    "neuronmem_status_code_name": (c_char_p, [c_enum]),
    "neuronmem_version": (c_uint32, []),
    "neuronmem_version_string": (c_char_p, []),
    # client.h
    "neuronmem_client_create": (_S, [P(ClientOptions), P(client_p)]),
    "neuronmem_client_destroy": (_S, [client_p]),
    "neuronmem_client_platform_name": (_S, [client_p, P(String)]),
    "neuronmem_client_platform_version": (_S, [client_p, P(String)]),
    "neuronmem_client_extensions": (_S, [client_p, P(P(String)), P(c_size_t)]),
    "neuronmem_client_devices": (_S, [client_p, P(P(device_p)), P(c_size_t)]),
    "neuronmem_client_memories": (_S, [client_p, P(P(memory_p)), P(c_size_t)]),
    "neuronmem_client_lookup_device": (_S, [client_p, c_int32, P(device_p)]),
    "neuronmem_client_lookup_memory": (_S, [client_p, c_int32, P(memory_p)]),
    "neuronmem_client_process": (_S, [client_p, P(c_uint32), P(c_uint32)]),
    "neuronmem_client_job_traffic": (_S, [client_p, P(JobTraffic)]),
    "neuronmem_client_describe_device_id": (_S, [client_p, c_int32, P(DeviceDescription)]),
    "neuronmem_directory_store_get": (_S, [c_void_p, c_void_p, c_size_t, c_uint64, P(c_void_p), P(c_size_t)]),
    "neuronmem_directory_store_put": (_S, [c_void_p, c_void_p, c_size_t, c_void_p, c_size_t]),
    "neuronmem_device_memory_of_kind": (_S, [device_p, c_enum, P(memory_p)]),
    "neuronmem_device_describe": (_S, [device_p, P(DeviceDescription)]),
    "neuronmem_device_addressable_memories": (_S, [device_p, P(P(memory_p)), P(c_size_t)]),
    "neuronmem_device_default_memory": (_S, [device_p, P(memory_p)]),
    "neuronmem_memory_describe": (_S, [memory_p, P(MemoryDescription)]),
    "neuronmem_memory_addressable_devices": (_S, [memory_p, P(P(device_p)), P(c_size_t)]),
    "neuronmem_memory_kind": (_S, [memory_p, P(c_enum)]),
    "neuronmem_memory_client": (_S, [memory_p, P(client_p)]),
    "neuronmem_memory_stats": (_S, [memory_p, P(MemoryStats)]),
    "neuronmem_client_host_allocate": (_S, [client_p, c_uint64, c_uint64, P(c_void_p)]),
    "neuronmem_client_host_free": (_S, [client_p, c_void_p]),
    "neuronmem_client_host_is_pinned": (_S, [client_p, c_void_p, c_uint64, P(c_bool)]),
    # buffer.h
    "neuronmem_buffer_from_host": (_S, [client_p, P(BufferFromHostArgs), P(buffer_p), P(event_p), P(event_p)]),
    "neuronmem_buffer_from_host_batch": (_S, [client_p, P(BufferFromHostArgs), c_size_t, P(buffer_p), P(event_p)]),
    "neuronmem_buffer_allocate": (_S, [P(BufferAllocateArgs), P(buffer_p)]),
    "neuronmem_buffer_copy_to_memory": (_S, [P(BufferCopyArgs), P(buffer_p), P(event_p)]),
    "neuronmem_buffer_read": (_S, [P(BufferReadArgs), P(event_p)]),
    "neuronmem_buffer_write": (_S, [P(BufferWriteArgs), P(event_p)]),
    "neuronmem_buffer_upload_chunk": (_S, [P(BufferChunkArgs), P(event_p)]),
    "neuronmem_buffer_load_file": (_S, [P(BufferLoadFileArgs), P(event_p)]),
    "neuronmem_buffer_ready_event": (_S, [buffer_p, P(event_p)]),
    "neuronmem_buffer_delete": (_S, [buffer_p]),
    "neuronmem_buffer_destroy": (None, [buffer_p]),
    "neuronmem_buffer_memory": (_S, [buffer_p, P(memory_p)]),
    "neuronmem_buffer_device": (_S, [buffer_p, P(device_p)]),
    "neuronmem_buffer_element_type": (_S, [buffer_p, P(c_enum)]),
    "neuronmem_buffer_dims": (_S, [buffer_p, P(P(c_int64)), P(c_size_t)]),
    "neuronmem_buffer_on_device_size": (_S, [buffer_p, P(c_uint64)]),
    "neuronmem_buffer_is_deleted": (_S, [buffer_p, P(c_bool)]),
    "neuronmem_buffer_is_zero_copy": (_S, [buffer_p, P(c_bool)]),
    "neuronmem_element_type_size": (c_uint64, [c_enum]),
    "neuronmem_event_is_ready": (_S, [event_p, P(c_bool)]),
    "neuronmem_event_wait": (_S, [event_p, c_int64]),
    "neuronmem_event_error": (_S, [event_p, P(status_p)]),
    "neuronmem_event_on_ready": (_S, [event_p, EventCallback, c_void_p]),
    "neuronmem_event_create": (_S, [client_p, P(event_p)]),
    "neuronmem_event_complete": (_S, [event_p, _S]),
    "neuronmem_event_destroy": (None, [event_p]),
    # manifest.h
    "neuronmem_manifest_load_text": (_S, [c_void_p, c_size_t, P(ManifestOptions), P(manifest_p)]),
    "neuronmem_manifest_load_file": (_S, [c_char_p, P(ManifestOptions), P(manifest_p)]),
    "neuronmem_manifest_list_entries": (_S, [c_void_p, c_size_t, c_char_p, EntryVisitor, c_void_p]),
    "neuronmem_manifest_write_artifact": (_S, [c_void_p, c_size_t, c_char_p, c_char_p, BytesVisitor, c_void_p]),
    "neuronmem_manifest_load_json": (_S, [c_void_p, c_size_t, P(manifest_p)]),
    "neuronmem_manifest_to_json": (_S, [manifest_p, P(String)]),
    "neuronmem_manifest_destroy": (None, [manifest_p]),
    "neuronmem_manifest_entry": (_S, [manifest_p, P(String), P(String)]),
    "neuronmem_manifest_counts": (_S, [manifest_p, P(ManifestCounts)]),
    "neuronmem_manifest_argument": (_S, [manifest_p, c_size_t, P(ManifestValue)]),
    "neuronmem_manifest_result": (_S, [manifest_p, c_size_t, P(ManifestValue)]),
    "neuronmem_manifest_value_attribute": (_S, [manifest_p, c_bool, c_size_t, c_size_t, P(String), P(String)]),
    "neuronmem_manifest_move": (_S, [manifest_p, c_size_t, P(ManifestMove)]),
    "neuronmem_manifest_host_compute": (_S, [manifest_p, c_size_t, P(String), P(String), P(c_uint32),
                                              P(c_uint32)]),
    "neuronmem_manifest_kernel": (_S, [manifest_p, c_size_t, P(ManifestKernel)]),
    "neuronmem_manifest_kernel_io_name": (_S, [manifest_p, c_size_t, c_bool, c_size_t, P(String)]),
    "neuronmem_manifest_custom_call_target": (_S, [manifest_p, c_size_t, P(String), P(c_uint64)]),
    "neuronmem_manifest_channel": (_S, [manifest_p, c_size_t, P(ManifestChannel)]),
    "neuronmem_manifest_composite": (_S, [manifest_p, c_size_t, P(ManifestComposite)]),
    "neuronmem_manifest_composite_attribute": (_S, [manifest_p, c_size_t, c_size_t, P(String), P(String)]),
    "neuronmem_manifest_warning": (_S, [manifest_p, c_size_t, P(String)]),
    "neuronmem_manifest_argument_memory": (_S, [manifest_p, device_p, c_size_t, P(memory_p)]),
    "neuronmem_manifest_result_memory": (_S, [manifest_p, device_p, c_size_t, P(memory_p)]),
    "neuronmem_manifest_upload_arguments": (_S, [P(ManifestUploadArgs), P(buffer_p), P(event_p)]),
    # executable.h
    "neuronmem_executable_compile_text": (_S, [client_p, c_void_p, c_size_t, P(CompileOptions), P(executable_p)]),
    "neuronmem_executable_compile_manifest": (_S, [client_p, manifest_p, P(CompileOptions), P(executable_p)]),
    "neuronmem_executable_destroy": (None, [executable_p]),
    "neuronmem_executable_properties": (_S, [executable_p, P(ExecutableProperties)]),
    "neuronmem_executable_parameter": (_S, [executable_p, c_size_t, P(ExecutableValue)]),
    "neuronmem_executable_output": (_S, [executable_p, c_size_t, P(ExecutableValue)]),
    "neuronmem_executable_parameter_memory": (_S, [executable_p, device_p, c_size_t, P(memory_p)]),
    "neuronmem_executable_output_memory": (_S, [executable_p, device_p, c_size_t, P(memory_p)]),
    "neuronmem_executable_execute": (_S, [P(ExecuteArgs), P(buffer_p), P(event_p), P(execution_p)]),
    "neuronmem_executable_execute_devices": (_S, [P(ExecuteDevicesArgs), P(buffer_p), P(event_p), P(execution_p)]),
    "neuronmem_executable_logical_ids": (_S, [executable_p, device_p, P(c_uint32), P(c_uint32)]),
    "neuronmem_execution_stats": (_S, [execution_p, P(ExecutionStats)]),
    "neuronmem_execution_transfers": (_S, [execution_p, c_enum, c_enum, P(TransferCounts)]),
    "neuronmem_execution_cancel": (_S, [execution_p]),
    "neuronmem_execution_destroy": (None, [execution_p]),
    "neuronmem_client_register_kernel": (_S, [client_p, P(KernelRegistration)]),
}



def _range_checked(name, fn, argtypes):
    """fn, refusing an int argument its C type cannot hold (ctypes itself would mask it). Functions without an
    integer argument are returned as they are."""
    checks = [(i, _int_bounds(t), t.__name__) for i, t in enumerate(argtypes) if _int_bounds(t)]
    if not checks:
        return fn

    def call(*args):
        for i, (lo, hi), type_name in checks:
            v = args[i]
            if isinstance(v, int) and not lo <= v <= hi:
                raise range_error(f"{name}: argument {i + 1} = {v} does not fit {type_name} ({lo}..{hi})")
        return fn(*args)

    call.__name__ = name
    return call


for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args
    globals()[_name[len("neuronmem_"):]] = _range_checked(_name, _fn, _args)

BOUND_FUNCTIONS = frozenset(_SIGNATURES)
# The public headers whose every function is bound here (tests/test_layout.py checks it).
COVERED_HEADERS = ("status.h", "client.h", "buffer.h", "manifest.h", "executable.h")
