"""libneuronmem for Python: clients, memories, buffers, events, manifests and the upload plan over the C ABI.

Handles are context managers (``with Client() as c: ...``) and also close when garbage-collected. A call that
fails raises :class:`NeuronMemError`, whose ``code`` is the C status code (:class:`StatusCode`). Using a closed
handle raises FAILED_PRECONDITION; it never reaches the C library. Arrays cross as numpy arrays.
"""
import ctypes
import enum
import itertools
import os
import re
import threading
import weakref

import numpy as np

from . import _capi as C

__all__ = [
    "NeuronMemError", "StatusCode", "MemoryKind", "MlockMode", "ElementType", "HostBufferSemantics",
    "PlacementPolicy", "Client", "Device", "Memory", "HostAllocation", "Buffer", "Event", "Manifest",
    "ManifestValue", "version", "version_string", "element_type_size", "list_entries", "write_artifact",
    "ArgumentPlacement",
    "Executable", "ExecutableValue", "Execution", "KernelCall",
]


class _Enum(enum.IntEnum):
    """The binding's enums: int values as in C, printed as their names (Python 3.11's IntEnum prints the number)."""

    def __str__(self):
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, spec):
        return format(str(self), spec)


class StatusCode(_Enum):
    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15


class MemoryKind(_Enum):
    DEVICE = 0
    PINNED_HOST = 1
    UNPINNED_HOST = 2


class MlockMode(_Enum):
    BEST_EFFORT = 0
    REQUIRED = 1
    DISABLED = 2


class ElementType(_Enum):
    PRED = 0
    S8 = 1
    S16 = 2
    S32 = 3
    S64 = 4
    U8 = 5
    U16 = 6
    U32 = 7
    U64 = 8
    F16 = 9
    BF16 = 10
    F32 = 11
    F64 = 12
    C64 = 13  # complex<f32>: numpy complex64
    C128 = 14  # complex<f64>: numpy complex128
    F8E5M2 = 15  # the 8- and 6-bit floats: one byte each, read back as uint8 bit patterns
    F8E4M3FN = 16
    F8E4M3B11FNUZ = 17
    F8E5M2FNUZ = 18
    F8E4M3FNUZ = 19
    F8E4M3 = 20
    F8E3M4 = 21
    F8E8M0FNU = 22
    F6E2M3FN = 23
    F6E3M2FN = 24
    S4 = 25  # the sub-byte integers: one byte each, numpy int8 (S4, S2) or uint8 (U4, U2) values
    U4 = 26
    S2 = 27
    U2 = 28
    F4E2M1FN = 29  # 4-bit float: one byte each, a uint8 bit pattern


class HostBufferSemantics(_Enum):
    IMMUTABLE_ONLY_DURING_CALL = 0
    IMMUTABLE_UNTIL_TRANSFER_COMPLETES = 1
    IMMUTABLE_ZERO_COPY = 2
    MUTABLE_ZERO_COPY = 3


class PlacementPolicy(_Enum):
    DEVICE = 0
    TORCH_NEURONX = 1


# numpy dtype <-> element type. numpy has no bfloat16 and no 8- or 6-bit floats: BF16 buffers read back as uint16
# bit patterns and the small floats (F8*, F6*) as uint8 ones, and such an array is uploaded as one of them when
# element_type= names it.
_DTYPE_TO_ELEMENT = {
    np.dtype(np.bool_): ElementType.PRED, np.dtype(np.int8): ElementType.S8, np.dtype(np.int16): ElementType.S16,
    np.dtype(np.int32): ElementType.S32, np.dtype(np.int64): ElementType.S64, np.dtype(np.uint8): ElementType.U8,
    np.dtype(np.uint16): ElementType.U16, np.dtype(np.uint32): ElementType.U32,
    np.dtype(np.uint64): ElementType.U64, np.dtype(np.float16): ElementType.F16,
    np.dtype(np.float32): ElementType.F32, np.dtype(np.float64): ElementType.F64,
    np.dtype(np.complex64): ElementType.C64, np.dtype(np.complex128): ElementType.C128,
}
_ELEMENT_TO_DTYPE = {v: k for k, v in _DTYPE_TO_ELEMENT.items()}
_ELEMENT_TO_DTYPE[ElementType.BF16] = np.dtype(np.uint16)
for _small in ElementType:
    if _small.name.startswith(("F8E", "F6E", "F4E")):  # not F64
        _ELEMENT_TO_DTYPE[_small] = np.dtype(np.uint8)
_ELEMENT_TO_DTYPE.update({ElementType.S4: np.dtype(np.int8), ElementType.S2: np.dtype(np.int8),
                          ElementType.U4: np.dtype(np.uint8), ElementType.U2: np.dtype(np.uint8)})


class NeuronMemError(Exception):
    """A failed call: ``code`` (StatusCode) and ``message``, the library's message with the C API's names put in
    Python terms (``neuronmem_buffer_destroy`` reads ``Buffer.close()``); ``c_message`` is the message as the C
    library wrote it."""

    def __init__(self, code, message, _status=None):
        try:
            code = StatusCode(code)
        except ValueError:
            code = StatusCode.UNKNOWN
        python_message = _python_names(message)
        super().__init__(f"{code.name}: {python_message}")
        self.code = code
        self.message = python_message
        self.c_message = message
        self._status = _status  # the library's status object when it made the error (Event.complete uses it)

    def __del__(self):
        if getattr(self, "_status", None):
            C.status_free(self._status)
            self._status = None


# The C API's names in the library's messages, as a Python user meets them. Enum constants are found through the
# enums below (NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY -> ArgumentPlacement.AUTO_COPY).
_C_FUNCTION_NAMES = {
    "neuronmem_buffer_destroy": "Buffer.close()", "neuronmem_buffer_delete": "Buffer.delete()",
    "neuronmem_buffer_read": "Buffer.read()", "neuronmem_buffer_write": "Buffer.write()",
    "neuronmem_buffer_upload_chunk": "Buffer.upload_chunk()", "neuronmem_buffer_load_file": "Buffer.load_file()",
    "neuronmem_buffer_from_host": "Buffer.from_numpy()", "neuronmem_buffer_allocate": "Buffer.allocate()",
    "neuronmem_buffer_copy_to_memory": "Buffer.copy_to()", "neuronmem_client_destroy": "Client.close()",
    "neuronmem_client_create": "Client()", "neuronmem_client_host_allocate": "Client.host_allocate()",
    "neuronmem_client_host_free": "HostAllocation.close()",
    "neuronmem_client_register_kernel": "Client.register_kernel()", "neuronmem_event_create": "Client.create_event()",
    "neuronmem_event_wait": "Event.wait()", "neuronmem_event_on_ready": "Event.on_ready()",
    "neuronmem_event_complete": "Event.complete()", "neuronmem_event_destroy": "Event.close()",
    "neuronmem_executable_destroy": "Executable.close()", "neuronmem_execution_destroy": "Execution.close()",
    "neuronmem_executable_execute": "Executable.execute()",
    "neuronmem_executable_execute_devices": "Executable.execute_devices()",
    "neuronmem_executable_compile_text": "Executable.compile()", "neuronmem_manifest_destroy": "Manifest.close()",
    "neuronmem_manifest_load_file": "Manifest.load_file()", "neuronmem_manifest_load_text": "Manifest.load_text()",
}
_C_TYPE_NAMES = {
    "neuronmem_element_type_t": "ElementType", "neuronmem_memory_kind_t": "MemoryKind",
    "neuronmem_mlock_mode_t": "MlockMode", "neuronmem_host_buffer_semantics_t": "HostBufferSemantics",
    "neuronmem_placement_policy_t": "PlacementPolicy", "neuronmem_argument_placement_t": "ArgumentPlacement",
    "neuronmem_status_code_t": "StatusCode",
}
_C_NAME = re.compile(r"\b(neuronmem_[a-z0-9_]+|NEURONMEM_[A-Z0-9_]+)\b")


def _python_name(c_name):
    if c_name in _C_FUNCTION_NAMES:
        return _C_FUNCTION_NAMES[c_name]
    if c_name in _C_TYPE_NAMES:
        return _C_TYPE_NAMES[c_name]
    if c_name.startswith("NEURONMEM_"):
        rest = c_name[len("NEURONMEM_"):]
        # The longest C prefix that names one of the enums (STATUS_, MEMORY_KIND_, HOST_BUFFER_, ...).
        for prefix, cls in _C_ENUM_PREFIXES:
            if rest.startswith(prefix) and rest[len(prefix):] in cls.__members__:
                return f"{cls.__name__}.{rest[len(prefix):]}"
    return c_name


def _python_names(message):
    return _C_NAME.sub(lambda m: _python_name(m.group(1)), message)
# An int the C type of its field or argument cannot hold is refused, never masked (2**64 + 4 would become 4).
C.range_error = lambda message: NeuronMemError(StatusCode.INVALID_ARGUMENT, message)


def _take(status):
    """Converts an owned status (NULL = OK) to None or a NeuronMemError that owns it."""
    if not status:
        return None
    return NeuronMemError(C.status_code(status), C.status_message(status).text(), status)


def _check(status):
    err = _take(status)
    if err is not None:
        # `err` in this frame and this frame in err.__traceback__ would make a reference cycle: the failed call's
        # frames, and every handle they hold, would then wait for the cycle collector (a caught error kept
        # Client.close() refusing "still has 2 buffer(s)" until gc.collect()).
        try:
            raise err
        finally:
            del err


def _closed(what):
    return NeuronMemError(StatusCode.FAILED_PRECONDITION, f"{what} is closed")


def _fields(struct):
    """A filled output struct as a dict of its fields (struct_size left out)."""
    return {name: getattr(struct, name) for name, _ in struct._fields_ if name != "struct_size"}


def version():
    """The running library's version number, (major << 16) | (minor << 8) | patch."""
    return C.version()


def version_string():
    return C.version_string().decode()


def element_type_size(element_type):
    """Bytes per element of `element_type` (0 for an unknown type)."""
    return C.element_type_size(int(element_type))


def _dims_array(shape):
    shape = [int(d) for d in shape]
    return C.int_array(ctypes.c_int64, shape, "dims"), len(shape)


def _device_description(d):
    """A neuronmem_device_description_t as a dict."""
    return {"id": d.id, "process_index": d.process_index, "local_id": d.local_id, "kind": d.kind.text(),
            "debug_string": d.debug_string.text(), "to_string": d.to_string.text()}


def _timeout_ns(seconds, none=0):
    """A timeout in seconds as the C timeout_ns: None -> `none` (0: the client's default), inf or beyond
    UINT64_MAX nanoseconds -> UINT64_MAX (no deadline), else at least 1 ns."""
    if seconds is None:
        return none
    if seconds < 0:
        raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"timeout {seconds} is negative")
    if seconds == float("inf") or seconds * 1e9 >= (1 << 64) - 1:
        return (1 << 64) - 1
    return max(1, int(seconds * 1e9))


def _event_list(events):
    """(EventList, keepalive) for a sequence of Event objects, each checked open."""
    events = list(events or ())
    if not events:
        return C.EventList(None, 0), None
    handles = (C.event_p * len(events))()
    for i, e in enumerate(events):
        if not isinstance(e, Event):
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"wait[{i}] is not an Event")
        handles[i] = e._handle_or_raise()
    return C.EventList(handles, len(events)), handles


class _Closing:
    """Context-manager support and release at garbage collection for a handle with close() and closed."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if not self.closed:
                self.close()
        except Exception:  # at garbage collection there is no one to report an error to
            pass


class _Owned(_Closing):
    """A handle the caller owns, released by `_destroy` (a C function taking the handle) on close."""

    _what = "handle"

    def _h(self):
        if self._handle is None:
            raise _closed(self._what)
        return self._handle

    @property
    def closed(self):
        return self._handle is None

    def close(self):
        """Releases the handle. Closing twice is a no-op."""
        if self._handle is not None:
            type(self)._destroy(self._handle)
            self._handle = None


class Client(_Closing):
    """A libneuronmem client: its NeuronCores, memories and pinned-host arena. close() needs every buffer,
    executable and host allocation of it closed first, and names those still open when it refuses; leaving a
    `with` block closes them, then the client."""

    def __init__(self, num_cores=0, mlock_mode=MlockMode.BEST_EFFORT, device_bytes_per_core=0,
                 pinned_host_bytes=0, execution_timeout=None, process_index=0, num_processes=0, store_dir=None,
                 bootstrap_timeout=None, peer_timeout=None, fabric_interface=None):
        self._handle = None
        self._host_allocations = weakref.WeakSet()
        self._handles = weakref.WeakSet()  # its Buffers and Executables, for __exit__ and close()'s message
        self._kernel_tokens = []  # this client's entries in _kernels: released when the client is destroyed
        # execution_timeout: seconds every execution may take from submission (None = no limit); see
        # Executable.execute's timeout.
        # A job of several processes (docs/distributed.md): this client is process_index of num_processes,
        # bootstrapping through the directory store at store_dir (a fresh directory the processes share);
        # bootstrap_timeout / peer_timeout in seconds (None = 30 s); fabric_interface: the address the
        # libfabric endpoint binds to (None = 127.0.0.1).
        job = {}
        if num_processes > 1:
            if store_dir is None:
                raise ValueError("a job of several processes needs store_dir")
            dir_bytes = ctypes.create_string_buffer(os.fsencode(store_dir))  # alive until client_create returns
            job = dict(process_index=process_index, num_processes=num_processes,
                       kv_get=ctypes.cast(C.lib.neuronmem_directory_store_get, ctypes.c_void_p),
                       kv_put=ctypes.cast(C.lib.neuronmem_directory_store_put, ctypes.c_void_p),
                       kv_user_data=ctypes.cast(dir_bytes, ctypes.c_void_p),
                       bootstrap_timeout_ns=_timeout_ns(bootstrap_timeout, none=0),
                       peer_timeout_ns=_timeout_ns(peer_timeout, none=0),
                       fabric_interface=None if fabric_interface is None else fabric_interface.encode())
        else:
            job = dict(process_index=process_index, num_processes=num_processes)
        opts = C.new(C.ClientOptions, num_cores=num_cores, mlock_mode=int(mlock_mode),
                     device_bytes_per_core=device_bytes_per_core, pinned_host_bytes=pinned_host_bytes,
                     execution_timeout_ns=_timeout_ns(execution_timeout, none=0), **job)
        out = C.client_p()
        _check(C.client_create(ctypes.byref(opts), ctypes.byref(out)))
        self._handle = out

    def _h(self):
        if self._handle is None:
            raise _closed("client")
        return self._handle

    @property
    def process(self):
        """(process_index, num_processes) of this client's job; (0, 1) for a client of one process."""
        index, n = ctypes.c_uint32(), ctypes.c_uint32()
        _check(C.client_process(self._h(), ctypes.byref(index), ctypes.byref(n)))
        return index.value, n.value

    @property
    def job_traffic(self):
        """What this client's job transport moved since the client was created: messages_sent, bytes_sent,
        messages_received, bytes_received (headers included) and messages_dropped; all 0 for a client of one
        process."""
        t = C.new(C.JobTraffic)
        _check(C.client_job_traffic(self._h(), ctypes.byref(t)))
        return _fields(t)

    def describe_device_id(self, device_id):
        """The description of the job's device with global id device_id, this client's or another
        process's (whose devices are not addressable); NOT_FOUND outside the job."""
        d = C.new(C.DeviceDescription)
        _check(C.client_describe_device_id(self._h(), device_id, ctypes.byref(d)))
        return _device_description(d)

    @property
    def closed(self):
        return self._handle is None

    def close(self):
        """Destroys the client. FAILED_PRECONDITION while buffers or host allocations of it are alive (then
        nothing is destroyed). Closing twice is a no-op."""
        if self._handle is None:
            return
        live = [a for a in self._host_allocations if not a.closed]
        if live:
            raise NeuronMemError(StatusCode.FAILED_PRECONDITION,
                                 f"{len(live)} host allocation(s) of the client are still open: "
                                 f"{_list_open(live)}; close them first (HostAllocation.close())")
        status = C.client_destroy(self._handle)
        if status:
            err = _take(status)
            still_open = self.open_handles()
            if still_open:  # the library counts them; name them as Python objects
                err = NeuronMemError(err.code, f"{err.c_message}; still open: {_list_open(still_open)}")
            try:
                raise err
            finally:
                del err
        self._handle = None
        with _kernels_lock:  # no executable or execution of the client is left to call them
            for token in self._kernel_tokens:
                _kernels.pop(token, None)
        self._kernel_tokens = []


    def open_handles(self):
        """The Buffers, Executables and HostAllocations of this client that are still open."""
        handles = [h for h in list(self._handles) if not h.closed]
        handles.sort(key=lambda h: not isinstance(h, Buffer))  # buffers first: they may feed executions
        return handles + [a for a in list(self._host_allocations) if not a.closed]

    def __exit__(self, exc_type, exc, tb):
        """Closes the client's handles still open (buffers, then executables and host allocations), then the
        client. An error while an exception is already leaving the block does not replace it."""
        try:
            for h in self.open_handles():
                h.close()
            self.close()
        except NeuronMemError:
            if exc_type is None:
                raise

    def __repr__(self):
        if self._handle is None:
            return "<neuronmem.Client closed>"
        return f"<neuronmem.Client {len(self.devices)} device(s), {len(self.open_handles())} open handle(s)>"

    def _string(self, fn):
        s = C.String()
        _check(fn(self._h(), ctypes.byref(s)))
        return s.text()

    @property
    def platform_name(self):
        return self._string(C.client_platform_name)

    @property
    def platform_version(self):
        return self._string(C.client_platform_version)

    @property
    def extensions(self):
        names = ctypes.POINTER(C.String)()
        n = ctypes.c_size_t()
        _check(C.client_extensions(self._h(), ctypes.byref(names), ctypes.byref(n)))
        return [names[i].text() for i in range(n.value)]

    @property
    def devices(self):
        return _borrowed_list(C.client_devices, self._h(), C.device_p, lambda h: Device(self, h))

    @property
    def memories(self):
        return _borrowed_list(C.client_memories, self._h(), C.memory_p, lambda h: Memory(self, h))

    def lookup_device(self, device_id):
        out = C.device_p()
        _check(C.client_lookup_device(self._h(), device_id, ctypes.byref(out)))
        return Device(self, out)

    def lookup_memory(self, memory_id):
        out = C.memory_p()
        _check(C.client_lookup_memory(self._h(), memory_id, ctypes.byref(out)))
        return Memory(self, out)

    def host_allocate(self, size, alignment=0):
        """`size` bytes in the pinned-host arena (a :class:`HostAllocation`); data written there uploads to
        pinned_host zero-copy."""
        return HostAllocation(self, size, alignment)

    def host_is_pinned(self, obj, size=None):
        """Whether an address range (int address and size, or a numpy array / HostAllocation) lies inside the
        pinned-host arena."""
        if isinstance(obj, HostAllocation):
            ptr, size = obj.address, obj.size
        elif isinstance(obj, np.ndarray):
            ptr, size = obj.ctypes.data, obj.nbytes
        else:
            ptr = int(obj)
        out = ctypes.c_bool()
        _check(C.client_host_is_pinned(self._h(), ctypes.c_void_p(ptr), int(size or 0), ctypes.byref(out)))
        return out.value

    def register_kernel(self, name, fn):
        """Registers `fn(call)` as the kernel `name`: a custom call whose target is `name` calls it once, an
        AwsNeuronCustomNativeKernel call whose backend_config names func_name=`name` once per grid point. `call`
        is a :class:`KernelCall` (numpy views of the operands and results, valid during the call only). Raising
        fails the execution: a NeuronMemError with its code and message, any other exception as UNKNOWN with its
        type and message; nothing crosses into the library. Executables compiled from now on use it (those
        compiled before keep the kernel they were compiled with); `fn` is kept until the client is destroyed.
        It runs on library threads, grid points concurrently (each holding the GIL in turn), and must not call
        the library."""
        if not callable(fn):
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, "register_kernel: fn is not callable")
        encoded = name.encode() if isinstance(name, str) else bytes(name)
        if b"\0" in encoded:
            # The C name is NUL-terminated: "a\0b" would register "a".
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"register_kernel: the name {name!r} contains a NUL")
        handle = self._h()
        token = next(_tokens)
        with _kernels_lock:
            _kernels[token] = fn
        reg = C.new(C.KernelRegistration, name=encoded, fn=_kernel_trampoline, user_data=token)
        status = C.client_register_kernel(handle, ctypes.byref(reg))
        if status:
            with _kernels_lock:
                _kernels.pop(token, None)
            _check(status)
        self._kernel_tokens.append(token)

    def create_event(self):
        """A pending event that the caller completes (:meth:`Event.complete`)."""
        out = C.event_p()
        _check(C.event_create(self._h(), ctypes.byref(out)))
        return Event(out)


def _list_open(handles, limit=8):
    shown = ", ".join(repr(h) for h in handles[:limit])
    return shown + (f" and {len(handles) - limit} more" if len(handles) > limit else "")


def _borrowed_list(fn, handle, item_type, wrap):
    """Calls fn(handle, &array, &count) for a borrowed C array of handles and wraps each."""
    arr = ctypes.POINTER(item_type)()
    n = ctypes.c_size_t()
    _check(fn(handle, ctypes.byref(arr), ctypes.byref(n)))
    return [wrap(arr[i]) for i in range(n.value)]


class _Borrowed:
    """A handle borrowed from a client: usable while the client is open; equal when the handles are."""

    def __init__(self, client, handle):
        self.client = client
        self._handle = handle

    def _h(self):
        self.client._h()
        return self._handle

    def __eq__(self, other):
        return type(other) is type(self) and ctypes.addressof(self._handle.contents) == ctypes.addressof(
            other._handle.contents)

    def __hash__(self):
        return ctypes.addressof(self._handle.contents)


class Device(_Borrowed):
    """A NeuronCore, borrowed from its client: usable while the client is open."""

    def describe(self):
        d = C.new(C.DeviceDescription)
        _check(C.device_describe(self._h(), ctypes.byref(d)))
        return _device_description(d)

    @property
    def id(self):
        return self.describe()["id"]

    def __repr__(self):
        return self.describe()["to_string"] if not self.client.closed else "<Device of a closed client>"

    def memory_of_kind(self, kind):
        out = C.memory_p()
        _check(C.device_memory_of_kind(self._h(), int(kind), ctypes.byref(out)))
        return Memory(self.client, out)

    @property
    def default_memory(self):
        out = C.memory_p()
        _check(C.device_default_memory(self._h(), ctypes.byref(out)))
        return Memory(self.client, out)

    @property
    def addressable_memories(self):
        return _borrowed_list(C.device_addressable_memories, self._h(), C.memory_p,
                              lambda h: Memory(self.client, h))


class Memory(_Borrowed):
    """A memory (device HBM, pinned host or unpinned host), borrowed from its client."""

    def describe(self):
        d = C.new(C.MemoryDescription)
        _check(C.memory_describe(self._h(), ctypes.byref(d)))
        return {"id": d.id, "kind_id": MemoryKind(d.kind_id), "kind": d.kind.text(),
                "debug_string": d.debug_string.text(), "to_string": d.to_string.text()}

    @property
    def id(self):
        return self.describe()["id"]

    @property
    def kind(self):
        out = C.c_enum()
        _check(C.memory_kind(self._h(), ctypes.byref(out)))
        return MemoryKind(out.value)

    def __repr__(self):
        return self.describe()["debug_string"] if not self.client.closed else "<Memory of a closed client>"

    @property
    def addressable_devices(self):
        return _borrowed_list(C.memory_addressable_devices, self._h(), C.device_p,
                              lambda h: Device(self.client, h))

    def owner_is(self, client):
        """Whether `client` owns this memory (neuronmem_memory_client)."""
        out = C.client_p()
        _check(C.memory_client(self._h(), ctypes.byref(out)))
        return client._handle is not None and ctypes.addressof(out.contents) == ctypes.addressof(
            client._handle.contents)

    def stats(self):
        s = C.new(C.MemoryStats)
        _check(C.memory_stats(self._h(), ctypes.byref(s)))
        return _fields(s)


class HostAllocation(_Closing):
    """Bytes in the client's pinned-host arena. :meth:`as_numpy` views them; :meth:`close` frees them and
    fails (FAILED_PRECONDITION) while a numpy view of them is alive, so no view outlives the memory."""

    def __init__(self, client, size, alignment=0):
        self.client = client
        self._ptr = None
        out = ctypes.c_void_p()
        _check(C.client_host_allocate(client._h(), int(size), int(alignment), ctypes.byref(out)))
        self._ptr = out.value
        self.size = int(size)
        # One ctypes array per numpy view handed out: every view derived from it keeps it alive (it is their
        # base), so a live weak reference means a view of the memory exists.
        self._exports = []
        client._host_allocations.add(self)

    @property
    def closed(self):
        return self._ptr is None

    def __repr__(self):
        if self._ptr is None:
            return "<neuronmem.HostAllocation closed>"
        return f"<neuronmem.HostAllocation {self.size} bytes at {self._ptr:#x} in pinned_host>"

    @property
    def address(self):
        if self._ptr is None:
            raise _closed("host allocation")
        return self._ptr

    def as_numpy(self, dtype=np.uint8, shape=None):
        """A numpy array over the allocation's first bytes (all of them when shape is None)."""
        if self._ptr is None:
            raise _closed("host allocation")
        dtype = np.dtype(dtype)
        count = self.size // dtype.itemsize if shape is None else int(np.prod(shape, dtype=np.int64))
        if count < 0 or count * dtype.itemsize > self.size:
            raise NeuronMemError(StatusCode.OUT_OF_RANGE,
                                 f"{count} x {dtype} does not fit in the {self.size}-byte host allocation")
        exporter = (ctypes.c_uint8 * self.size).from_address(self._ptr)
        exporter._allocation = self  # a view keeps the allocation (and so its client) alive
        self._exports = [r for r in self._exports if r() is not None] + [weakref.ref(exporter)]
        arr = np.frombuffer(exporter, dtype=dtype, count=count)
        return arr if shape is None else arr.reshape(shape)

    def close(self):
        if self._ptr is None:
            return
        if any(r() is not None for r in self._exports):
            raise NeuronMemError(StatusCode.FAILED_PRECONDITION,
                                 "numpy views of the host allocation are still alive")
        ptr, self._ptr = self._ptr, None
        _check(C.client_host_free(self.client._h(), ctypes.c_void_p(ptr)))

    free = close



# on-ready callbacks: C gets a token (user_data), never a Python object; one trampoline dispatches.
_callbacks = {}
_callbacks_lock = threading.Lock()
_tokens = itertools.count(1)


@C.EventCallback
def _on_ready_trampoline(status, user_data):
    with _callbacks_lock:
        fn = _callbacks.pop(user_data, None)
    if fn is None:
        return
    err = None
    if status:
        err = NeuronMemError(C.status_code(status), C.status_message(status).text())
    try:
        fn(err)
    except Exception as e:  # an exception cannot cross into the library's thread: report and go on
        import sys
        print(f"neuronmem: on_ready callback raised {e!r}", file=sys.stderr)


class KernelCall:
    """What a registered kernel is called with. ``inputs`` are read-only numpy arrays over the operands,
    ``outputs`` writable numpy arrays over the results (the kernel writes every element; grid points running at
    once write their own parts); both view library memory and are valid during the call only (copy what must
    outlive it). ``input_kinds`` / ``output_kinds``: the MemoryKind each lies in (a pinned_host operand is
    read in place). ``target``, ``name`` (the registered name: func_name for AwsNeuronCustomNativeKernel),
    ``backend_config`` (as written in the graph), ``grid`` and ``grid_index`` (tuples; () for a plain call),
    ``device`` (the executing device's id). BF16 and F16 tensors are uint16 / float16 arrays."""

    def __init__(self, call):
        self.target = call.target.text()
        self.name = call.name.text()
        self.backend_config = call.backend_config.text()
        self.grid = tuple(call.grid[i] for i in range(call.grid_rank))
        self.grid_index = tuple(call.grid_index[i] for i in range(call.grid_rank))
        self.device = call.device
        self.inputs = [_kernel_view(call.inputs[i], False) for i in range(call.num_inputs)]
        self.outputs = [_kernel_view(call.outputs[i], True) for i in range(call.num_outputs)]
        self.input_kinds = [MemoryKind(call.inputs[i].memory_kind) for i in range(call.num_inputs)]
        self.output_kinds = [MemoryKind(call.outputs[i].memory_kind) for i in range(call.num_outputs)]


def _kernel_view(t, writable):
    """A numpy array over one kernel tensor (library memory, dense row-major)."""
    dtype = _ELEMENT_TO_DTYPE[ElementType(t.element_type)]
    shape = tuple(t.dims[i] for i in range(t.num_dims))
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes == 0 or not t.data:
        arr = np.empty(shape, dtype)
    else:
        arr = np.frombuffer((ctypes.c_char * nbytes).from_address(t.data), dtype).reshape(shape)
    arr.flags.writeable = writable
    return arr


def _new_status(code, message):
    """A status the library takes over (the kernel's return value), as a plain address."""
    code = int(code) if int(code) != StatusCode.OK else int(StatusCode.UNKNOWN)
    data = message.encode("utf-8", "replace")
    return ctypes.cast(C.status_create(code, data, len(data)), ctypes.c_void_p).value


# Registered kernels: C gets a token (user_data), never a Python object; one trampoline dispatches.
_kernels = {}
_kernels_lock = threading.Lock()


def _returned_status(call):
    """Runs call() on a library thread: None on success, else a status the library takes over. Nothing may
    unwind into the library's thread."""
    try:
        call()
        return None
    except NeuronMemError as e:
        return _new_status(e.code, e.message)
    except BaseException as e:
        return _new_status(StatusCode.UNKNOWN, f"{type(e).__name__}: {e}")


@C.KernelFn
def _kernel_trampoline(call_p, user_data):
    with _kernels_lock:
        fn = _kernels.get(user_data)
    if fn is None:
        return _new_status(StatusCode.INTERNAL, f"neuronmem: no Python kernel under token {user_data}")
    return _returned_status(lambda: fn(KernelCall(call_p.contents)))


class HostTransfer:
    """What a launch's send or recv callback is called with (a stablehlo.send / recv with is_host_transfer):
    ``channel_id``, ``device``, ``replica_id``, ``partition_id`` and ``tensors``: numpy arrays over the
    executing core's memory, read-only for a send (its payload), writable for a recv (fill every element),
    valid during the call only. ``kinds``: the MemoryKind each lies in."""

    def __init__(self, t, writable):
        self.channel_id = t.channel_id
        self.device = t.device
        self.replica_id = t.replica_id
        self.partition_id = t.partition_id
        self.tensors = [_kernel_view(t.tensors[i], writable) for i in range(t.num_tensors)]
        self.kinds = [MemoryKind(t.tensors[i].memory_kind) for i in range(t.num_tensors)]


# A launch's host callbacks: C gets a token (user_data) per (callable, direction); one trampoline dispatches.
# The entries go when every done event of the launch is ready (or the client is closed).
_host_callbacks = {}


@C.HostCallbackFn
def _host_trampoline(transfer_p, user_data):
    with _kernels_lock:
        entry = _host_callbacks.get(user_data)
    if entry is None:
        return _new_status(StatusCode.INTERNAL, f"neuronmem: no Python host callback under token {user_data}")
    fn, is_recv = entry
    return _returned_status(lambda: fn(HostTransfer(transfer_p.contents, is_recv)))


def _host_callback_array(callbacks, is_recv, tokens):
    """(HostCallback array or None, count) for a {channel_id: callable} mapping; registers each token."""
    callbacks = dict(callbacks or {})
    if not callbacks:
        return None, 0
    arr = (C.HostCallback * len(callbacks))()
    for i, (channel, fn) in enumerate(callbacks.items()):
        if not callable(fn):
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"the callback of channel {channel} is not callable")
        token = next(_tokens)
        with _kernels_lock:
            _host_callbacks[token] = (fn, is_recv)
        tokens.append(token)
        arr[i] = C.HostCallback(C.check_int(int(channel), ctypes.c_int64, "channel id"), _host_trampoline, token)
    return arr, len(callbacks)


def _drop_host_callbacks(tokens):
    with _kernels_lock:
        for token in tokens:
            _host_callbacks.pop(token, None)


class Event(_Closing):
    """A transfer's completion (or a caller-completed event). Outlives its client safely."""

    def __init__(self, handle, keepalive=None):
        self._handle = handle
        self._keepalive = keepalive  # host memory the transfer reads or writes until it is done

    def _handle_or_raise(self):
        if self._handle is None:
            raise _closed("event")
        return self._handle

    def __repr__(self):
        if self._handle is None:
            return "<neuronmem.Event closed>"
        if not self.is_ready:
            return "<neuronmem.Event pending>"
        err = self.error()
        return "<neuronmem.Event ready>" if err is None else f"<neuronmem.Event failed: {err}>"

    @property
    def closed(self):
        return self._handle is None

    @property
    def is_ready(self):
        out = ctypes.c_bool()
        _check(C.event_is_ready(self._handle_or_raise(), ctypes.byref(out)))
        return out.value

    def wait(self, timeout=None):
        """Blocks until ready (timeout in seconds; None = no limit). Raises the transfer's error, or
        DEADLINE_EXCEEDED."""
        # Beyond INT64_MAX nanoseconds (292 years) a wait is forever, as the C call's INT64_MAX is.
        ns = -1 if timeout is None or timeout == float("inf") else min(max(0, int(timeout * 1e9)), (1 << 63) - 1)
        _check(C.event_wait(self._handle_or_raise(), ns))

    def error(self):
        """The transfer's error (a NeuronMemError) or None; FAILED_PRECONDITION if not ready."""
        out = C.status_p()
        _check(C.event_error(self._handle_or_raise(), ctypes.byref(out)))
        return _take(out)

    def on_ready(self, fn):
        """Calls fn(error_or_None) exactly once when the event is ready, on the completing thread (at once if
        it already is)."""
        token = next(_tokens)
        with _callbacks_lock:
            _callbacks[token] = fn
        status = C.event_on_ready(self._handle_or_raise(), _on_ready_trampoline, ctypes.c_void_p(token))
        if status:
            with _callbacks_lock:
                _callbacks.pop(token, None)
            _check(status)

    def complete(self, error=None):
        """Completes an event from Client.create_event: success, or failed with `error`, a NeuronMemError (one
        a library call raised keeps its status object; one made by the caller gets a new status with its code
        and message; any other error is INVALID_ARGUMENT)."""
        if error is not None and not isinstance(error, NeuronMemError):
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, "complete(error): error must be a NeuronMemError")
        status = getattr(error, "_status", None)
        owned = None
        if error is not None and not status:
            owned = status = ctypes.cast(_new_status(error.code, error.message), C.status_p)
        try:
            _check(C.event_complete(self._handle_or_raise(), status))
        finally:
            if owned:
                C.status_free(owned)

    def close(self):
        """Releases the handle; pending work still completes. An event of an asynchronous read or write first
        waits for its transfer, since the host memory it moves lives only as long as the event."""
        if self._handle is None:
            return
        if self._keepalive is not None:
            _take(C.event_wait(self._handle, -1))
            self._keepalive = None
        C.event_destroy(self._handle)
        self._handle = None



def _host_view(data, what):
    """A C-contiguous numpy view of `data` (any buffer-protocol object) for the library to read."""
    arr = np.ascontiguousarray(data) if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
    if arr.nbytes and arr.ctypes.data == 0:
        raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"{what}: no data")
    return arr


def _writable_view(out, size, what):
    if isinstance(out, np.ndarray):
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"{what}: output must be a writable C-contiguous array")
        arr = out
    else:
        try:
            arr = np.frombuffer(out, dtype=np.uint8)
        except (TypeError, ValueError) as e:
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"{what}: output is not a buffer: {e}") from None
        if not arr.flags.writeable:
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"{what}: output is read-only")
    if arr.nbytes < size:
        raise NeuronMemError(StatusCode.INVALID_ARGUMENT,
                             f"{what}: output of {arr.nbytes} bytes is smaller than the {size} bytes to read")
    return arr


def _element_of(array, element_type):
    if element_type is None:
        et = _DTYPE_TO_ELEMENT.get(array.dtype)
        if et is None:
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"no element type for numpy dtype {array.dtype}")
        return et
    et = ElementType(element_type)
    if C.element_type_size(int(et)) != array.dtype.itemsize:
        raise NeuronMemError(StatusCode.INVALID_ARGUMENT,
                             f"{et.name} elements are {C.element_type_size(int(et))} bytes, the array's "
                             f"{array.dtype} are {array.dtype.itemsize}")
    return et


def _from_host_args(array, memory, semantics, element_type, wait_list):
    """(args struct, keepalive) for one upload of a numpy array."""
    if not isinstance(array, np.ndarray):
        array = np.asarray(array)
    if any(s < 0 for s in array.strides):
        array = np.ascontiguousarray(array)
    et = _element_of(array, element_type)
    dims, n = _dims_array(array.shape)
    strides = None
    if not array.flags.c_contiguous:
        strides = C.int_array(ctypes.c_int64, array.strides, "byte_strides")
    args = C.new(C.BufferFromHostArgs, data=array.ctypes.data if array.nbytes else None, element_type=int(et),
                 host_buffer_semantics=int(semantics), dims=dims, num_dims=n, byte_strides=strides,
                 memory=memory._h(), wait=wait_list)
    return args, (array, dims, strides)


class Buffer(_Closing):
    """A dense array in one memory. Holds its client open; close it (or leave the `with` block) before the
    client."""

    def __init__(self, client, handle, host_ref=None, done_with_host=None):
        self.client = client
        self._handle = handle
        client._handles.add(self)
        self._host_ref = host_ref  # host memory the buffer may read (or alias) until done_with_host
        self._done_with_host = done_with_host

    def _h(self):
        if self._handle is None:
            raise _closed("buffer")
        return self._handle

    @property
    def closed(self):
        return self._handle is None

    @classmethod
    def from_numpy(cls, array, memory, semantics=HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL, element_type=None,
                   wait=()):
        """Uploads a numpy array into `memory` (any kind, any core). With a zero-copy or until-transfer-completes
        semantics the buffer keeps the array alive (and it must not change) until the library is done with it.
        element_type: for BF16 (a uint16 array of bit patterns); otherwise taken from the dtype."""
        semantics = HostBufferSemantics(semantics)
        wait_list, wait_keep = _event_list(wait)
        args, keep = _from_host_args(array, memory, semantics, element_type, wait_list)
        out = C.buffer_p()
        done = C.event_p()
        keeps_host = semantics != HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL
        _check(C.buffer_from_host(memory.client._h(), ctypes.byref(args), ctypes.byref(out), None,
                                  ctypes.byref(done) if keeps_host else None))
        if not keeps_host:
            return cls(memory.client, out)
        return cls(memory.client, out, host_ref=keep, done_with_host=Event(done))

    @classmethod
    def from_numpy_batch(cls, items, semantics=HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL):
        """Uploads [(array, memory), ...] of one client in one batched submission: (buffers, one ready Event)."""
        items = list(items)
        if not items:
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, "from_numpy_batch: no arrays")
        client = items[0][1].client
        args = (C.BufferFromHostArgs * len(items))()
        keep = []
        for i, (array, memory) in enumerate(items):
            a, k = _from_host_args(array, memory, HostBufferSemantics(semantics), None, C.EventList(None, 0))
            args[i] = a
            keep.append(k)
        outs = (C.buffer_p * len(items))()
        ready = C.event_p()
        _check(C.buffer_from_host_batch(client._h(), args, len(items), outs, ctypes.byref(ready)))
        return _batch_result(client, outs, ready, keep, semantics)

    @classmethod
    def allocate(cls, memory, element_type, shape):
        """An uninitialised buffer of `shape` in `memory`; element_type is an ElementType or a numpy dtype."""
        if not isinstance(element_type, ElementType) and not isinstance(element_type, int):
            element_type = _DTYPE_TO_ELEMENT.get(np.dtype(element_type))
            if element_type is None:
                raise NeuronMemError(StatusCode.INVALID_ARGUMENT, "no element type for that dtype")
        dims, n = _dims_array(shape)
        args = C.new(C.BufferAllocateArgs, client=memory.client._h(), memory=memory._h(),
                     element_type=int(element_type), dims=dims, num_dims=n)
        out = C.buffer_p()
        _check(C.buffer_allocate(ctypes.byref(args), ctypes.byref(out)))
        return cls(memory.client, out)

    def copy_to(self, memory, wait=()):
        """A copy of this buffer in `memory` (any kind, any core of the same client); returns the new buffer
        (its ready_event() says when the copy landed)."""
        wait_list, wait_keep = _event_list(wait)
        args = C.new(C.BufferCopyArgs, src=self._h(), memory=memory._h(), wait=wait_list)
        out = C.buffer_p()
        _check(C.buffer_copy_to_memory(ctypes.byref(args), ctypes.byref(out), None))
        return Buffer(self.client, out)

    def _transfer(self, fn, args, asynchronous, keepalive):
        if not asynchronous:
            _check(fn(ctypes.byref(args), None))
            return None
        ev = C.event_p()
        _check(fn(ctypes.byref(args), ctypes.byref(ev)))
        return Event(ev, keepalive=keepalive)

    def read(self, out=None, offset=0, size=None, wait=(), asynchronous=False):
        """Reads bytes [offset, offset+size) into `out` (a writable buffer; a new bytearray when None). Returns
        `out`, or an Event when asynchronous (out must then stay untouched until it is ready)."""
        if size is None:
            size = self.nbytes - offset
        if out is None:
            out = bytearray(max(size, 0))
        view = _writable_view(out, size, "read")
        wait_list, wait_keep = _event_list(wait)
        args = C.new(C.BufferReadArgs, buffer=self._h(), offset=offset, size=size,
                     dst=view.ctypes.data if size else None, wait=wait_list)
        ev = self._transfer(C.buffer_read, args, asynchronous, (view, out))
        return ev if asynchronous else out

    def __array__(self, dtype=None, copy=None):
        """np.asarray(buffer): the content read back (a new array; BF16 as uint16 bit patterns)."""
        arr = self.to_numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __repr__(self):
        if self._handle is None:
            return "<neuronmem.Buffer closed>"
        try:
            mem = self.memory.describe()
            deleted = ", deleted" if self.is_deleted else ""
            return f"<neuronmem.Buffer {self.element_type.name}{list(self.shape)} in {mem['to_string']}{deleted}>"
        except NeuronMemError as e:  # e.g. its client is closed
            return f"<neuronmem.Buffer ({e.code.name})>"

    def to_numpy(self):
        """The buffer's content as a new numpy array of its shape (BF16 as uint16 bit patterns)."""
        arr = np.empty(self.shape, dtype=_ELEMENT_TO_DTYPE[self.element_type])
        self.read(arr)
        return arr

    def write(self, data, offset=0, wait=(), asynchronous=False):
        """Writes host bytes into [offset, offset+len) in place; an Event when asynchronous."""
        src = _host_view(data, "write")
        wait_list, wait_keep = _event_list(wait)
        args = C.new(C.BufferWriteArgs, buffer=self._h(), offset=offset, size=src.nbytes,
                     src=src.ctypes.data if src.nbytes else None, wait=wait_list)
        return self._transfer(C.buffer_write, args, asynchronous, src)

    def upload_chunk(self, data, offset, is_last=False, wait=(), asynchronous=False):
        """One chunk of a chunked upload into an allocated buffer; an Event when asynchronous."""
        src = _host_view(data, "upload_chunk")
        wait_list, wait_keep = _event_list(wait)
        args = C.new(C.BufferChunkArgs, buffer=self._h(), offset=offset, size=src.nbytes,
                     data=src.ctypes.data if src.nbytes else None, wait=wait_list, is_last=is_last)
        return self._transfer(C.buffer_upload_chunk, args, asynchronous, src)

    def load_file(self, path, file_offset=0, size=None, buffer_offset=0, wait=(), asynchronous=False):
        """Loads bytes [file_offset, file_offset+size) of a file (size None: the buffer's bytes from
        buffer_offset) into the buffer at buffer_offset; an Event when asynchronous."""
        if size is None:
            size = self.nbytes - buffer_offset
        wait_list, wait_keep = _event_list(wait)
        args = C.new(C.BufferLoadFileArgs, buffer=self._h(), path=os.fsencode(path), file_offset=file_offset,
                     size=size, buffer_offset=buffer_offset, wait=wait_list)
        return self._transfer(C.buffer_load_file, args, asynchronous, None)

    def ready_event(self):
        """An Event ready when the buffer's content is defined."""
        ev = C.event_p()
        _check(C.buffer_ready_event(self._h(), ctypes.byref(ev)))
        return Event(ev)

    def delete(self):
        """Releases the content (once pending transfers end); later transfers fail with FAILED_PRECONDITION."""
        _check(C.buffer_delete(self._h()))

    def close(self):
        """Destroys the handle (deleting the content). Closing twice is a no-op."""
        if self._handle is None:
            return
        C.buffer_destroy(self._handle)
        self._handle = None
        if self._done_with_host is not None:
            # The library may read (or alias) the host array until this event: keep it alive until then.
            _take(C.event_wait(self._done_with_host._handle, -1))
            self._done_with_host.close()
            self._done_with_host = None
        self._host_ref = None


    @property
    def memory(self):
        out = C.memory_p()
        _check(C.buffer_memory(self._h(), ctypes.byref(out)))
        return Memory(self.client, out)

    @property
    def device(self):
        out = C.device_p()
        _check(C.buffer_device(self._h(), ctypes.byref(out)))
        return Device(self.client, out)

    @property
    def element_type(self):
        out = C.c_enum()
        _check(C.buffer_element_type(self._h(), ctypes.byref(out)))
        return ElementType(out.value)

    @property
    def dtype(self):
        return _ELEMENT_TO_DTYPE[self.element_type]

    @property
    def shape(self):
        dims = ctypes.POINTER(ctypes.c_int64)()
        n = ctypes.c_size_t()
        _check(C.buffer_dims(self._h(), ctypes.byref(dims), ctypes.byref(n)))
        return tuple(dims[i] for i in range(n.value))

    @property
    def nbytes(self):
        out = ctypes.c_uint64()
        _check(C.buffer_on_device_size(self._h(), ctypes.byref(out)))
        return out.value

    @property
    def is_deleted(self):
        out = ctypes.c_bool()
        _check(C.buffer_is_deleted(self._h(), ctypes.byref(out)))
        return out.value

    @property
    def is_zero_copy(self):
        out = ctypes.c_bool()
        _check(C.buffer_is_zero_copy(self._h(), ctypes.byref(out)))
        return out.value


def _batch_result(client, outs, ready, keep, semantics):
    """(buffers, Event) of a batched upload. Unless the library copied during the call, each buffer keeps its
    host array (which zero-copy buffers alias) until it is closed and its own ready event says the library is
    done reading it."""
    buffers = []
    for i in range(len(keep)):
        guard = None
        if HostBufferSemantics(semantics) != HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL:
            ev = C.event_p()
            _check(C.buffer_ready_event(outs[i], ctypes.byref(ev)))
            guard = Event(ev)
        buffers.append(Buffer(client, outs[i], host_ref=keep[i] if guard else None, done_with_host=guard))
    return buffers, Event(ready)


class ManifestValue:
    """An argument or result of the entry function."""

    def __init__(self, manifest, is_result, v):
        self.index = v.index
        self.memory_kind = MemoryKind(v.memory_kind)
        self.name = v.name.text()
        self.element_type = v.element_type.text()
        self.buffer_element_type = ElementType(v.buffer_element_type) if v.buffer_element_type >= 0 else None
        self.kind_explicit = v.kind_explicit
        self.shape = tuple(v.dims[i] for i in range(v.num_dims))
        self.aliasing_output = v.aliasing_output
        self.buffer_donor = v.buffer_donor
        self.line, self.column = v.line, v.column
        self.attributes = {}
        for a in range(v.num_attributes):
            k, val = C.String(), C.String()
            _check(C.manifest_value_attribute(manifest._h(), is_result, self.index, a, ctypes.byref(k),
                                              ctypes.byref(val)))
            self.attributes[k.text()] = val.text()

    @property
    def dtype(self):
        """The numpy dtype to upload with (None if no buffer element type fits)."""
        return None if self.buffer_element_type is None else _ELEMENT_TO_DTYPE[self.buffer_element_type]

    def __repr__(self):
        return f"ManifestValue({self.index}, {self.name!r}, {self.element_type}{list(self.shape)}, " \
               f"{self.memory_kind.name.lower()})"


def _manifest_options(entry, filename, policy, num_cores):
    return C.new(C.ManifestOptions, entry=entry.encode() if entry else None,
                 filename=os.fsencode(filename) if filename else None, policy=int(policy), num_cores=num_cores)


def list_entries(text, filename=None):
    """The public functions of StableHLO text, in source order (the entries a manifest may load)."""
    data = text.encode() if isinstance(text, str) else bytes(text)
    names = []

    @C.EntryVisitor
    def visit(name, user_data):
        names.append(name.text())

    _check(C.manifest_list_entries(data, len(data), os.fsencode(filename) if filename else None, visit, None))
    return names


def write_artifact(text, target=None, filename=None):
    """StableHLO text (or an artifact) as a StableHLO portable artifact: vhlo MLIR bytecode for StableHLO
    `target` ("1.9.0"; None = the newest the library reads), as jax.export ships programs. Returns bytes."""
    data = text.encode() if isinstance(text, str) else bytes(text)
    out = []

    @C.BytesVisitor
    def visit(ptr, size, user_data):
        out.append(ctypes.string_at(ptr, size))

    _check(C.manifest_write_artifact(data, len(data), os.fsencode(filename) if filename else None,
                                     target.encode() if target else None, visit, None))
    return out[0]


class Manifest(_Owned):
    """The placement manifest of compiled StableHLO: where every argument and result lives."""

    _what = "manifest"
    _destroy = staticmethod(lambda h: C.manifest_destroy(h))

    def __init__(self, handle):
        self._handle = handle

    def __repr__(self):
        if self._handle is None:
            return "<neuronmem.Manifest closed>"
        module, entry = self.entry
        return f"<neuronmem.Manifest of @{entry}: {len(self.arguments)} argument(s), {len(self.results)} result(s)>"

    @classmethod
    def load_text(cls, text, entry=None, filename=None, policy=PlacementPolicy.DEVICE, num_cores=0):
        data = text.encode() if isinstance(text, str) else bytes(text)
        opts = _manifest_options(entry, filename, policy, num_cores)
        out = C.manifest_p()
        _check(C.manifest_load_text(data, len(data), ctypes.byref(opts), ctypes.byref(out)))
        return cls(out)

    @classmethod
    def load_file(cls, path, entry=None, policy=PlacementPolicy.DEVICE, num_cores=0):
        opts = _manifest_options(entry, None, policy, num_cores)
        out = C.manifest_p()
        _check(C.manifest_load_file(os.fsencode(path), ctypes.byref(opts), ctypes.byref(out)))
        return cls(out)

    @classmethod
    def load_json(cls, json_text):
        data = json_text.encode() if isinstance(json_text, str) else bytes(json_text)
        out = C.manifest_p()
        _check(C.manifest_load_json(data, len(data), ctypes.byref(out)))
        return cls(out)


    def to_json(self):
        s = C.String()
        _check(C.manifest_to_json(self._h(), ctypes.byref(s)))
        return s.text()

    @property
    def entry(self):
        """(module name, entry function name)."""
        m, e = C.String(), C.String()
        _check(C.manifest_entry(self._h(), ctypes.byref(m), ctypes.byref(e)))
        return m.text(), e.text()

    def counts(self):
        c = C.new(C.ManifestCounts)
        _check(C.manifest_counts(self._h(), ctypes.byref(c)))
        return {name[len("num_"):]: value for name, value in _fields(c).items()}

    def _values(self, fn, count, is_result):
        out = []
        for i in range(count):
            v = C.new(C.ManifestValue)
            _check(fn(self._h(), i, ctypes.byref(v)))
            out.append(ManifestValue(self, is_result, v))
        return out

    @property
    def arguments(self):
        return self._values(C.manifest_argument, self.counts()["arguments"], False)

    @property
    def results(self):
        return self._values(C.manifest_result, self.counts()["results"], True)

    @property
    def moves(self):
        out = []
        for i in range(self.counts()["moves"]):
            m = C.new(C.ManifestMove)
            _check(C.manifest_move(self._h(), i, ctypes.byref(m)))
            out.append({"function": m.function.text(), "value": m.value.text(), "result": m.result.text(),
                        "spelling": m.spelling.text(), "from_kind": m.from_kind.text(), "to_kind": m.to_kind.text(),
                        "from_memory_kind": MemoryKind(m.from_memory_kind),
                        "to_memory_kind": MemoryKind(m.to_memory_kind), "element_type": m.element_type.text(),
                        "shape": tuple(m.dims[j] for j in range(m.num_dims)), "line": m.line, "column": m.column})
        return out

    @property
    def host_compute(self):
        out = []
        for i in range(self.counts()["host_compute"]):
            op, fn = C.String(), C.String()
            line, col = ctypes.c_uint32(), ctypes.c_uint32()
            _check(C.manifest_host_compute(self._h(), i, ctypes.byref(op), ctypes.byref(fn), ctypes.byref(line),
                                           ctypes.byref(col)))
            out.append({"op": op.text(), "function": fn.text(), "line": line.value, "column": col.value})
        return out

    @property
    def kernels(self):
        out = []
        for i in range(self.counts()["kernels"]):
            k = C.new(C.ManifestKernel)
            _check(C.manifest_kernel(self._h(), i, ctypes.byref(k)))
            names = {}
            for is_output, n in ((False, k.num_input_names), (True, k.num_output_names)):
                lst = []
                for j in range(n):
                    s = C.String()
                    _check(C.manifest_kernel_io_name(self._h(), i, is_output, j, ctypes.byref(s)))
                    lst.append(s.text())
                names[is_output] = lst
            out.append({"function": k.function.text(), "func_name": k.func_name.text(), "binary": k.binary.text(),
                        "grid": tuple(k.grid[j] for j in range(k.grid_rank)), "input_names": names[False],
                        "output_names": names[True], "num_operands": k.num_operands, "num_results": k.num_results,
                        "line": k.line, "column": k.column})
        return out

    @property
    def custom_call_targets(self):
        """{target: number of calls}."""
        out = {}
        for i in range(self.counts()["custom_call_targets"]):
            s = C.String()
            n = ctypes.c_uint64()
            _check(C.manifest_custom_call_target(self._h(), i, ctypes.byref(s), ctypes.byref(n)))
            out[s.text()] = n.value
        return out

    @property
    def channels(self):
        out = []
        for i in range(self.counts()["channels"]):
            c = C.new(C.ManifestChannel)
            _check(C.manifest_channel(self._h(), i, ctypes.byref(c)))
            pairs = [(c.source_target_pairs[2 * j], c.source_target_pairs[2 * j + 1]) for j in range(c.num_pairs)]
            out.append({"function": c.function.text(), "op": c.op.text(), "handle": c.handle, "type": c.type,
                        "is_host_transfer": c.is_host_transfer, "source_target_pairs": pairs,
                        "num_payloads": c.num_payloads, "line": c.line, "column": c.column})
        return out

    @property
    def composites(self):
        """Each stablehlo.composite: its name, decomposition function, version and composite_attributes
        ({key: value as written}), in walk order."""
        out = []
        for i in range(self.counts()["composites"]):
            c = C.new(C.ManifestComposite)
            _check(C.manifest_composite(self._h(), i, ctypes.byref(c)))
            attributes = {}
            for j in range(c.num_attributes):
                key, value = C.String(), C.String()
                _check(C.manifest_composite_attribute(self._h(), i, j, ctypes.byref(key), ctypes.byref(value)))
                attributes[key.text()] = value.text()
            out.append({"function": c.function.text(), "name": c.name.text(),
                        "decomposition": c.decomposition.text(), "version": c.version, "attributes": attributes,
                        "line": c.line, "column": c.column})
        return out

    @property
    def warnings(self):
        out = []
        for i in range(self.counts()["warnings"]):
            s = C.String()
            _check(C.manifest_warning(self._h(), i, ctypes.byref(s)))
            out.append(s.text())
        return out

    def argument_memory(self, device, index):
        """The memory of `device` that argument `index` must be uploaded to."""
        out = C.memory_p()
        _check(C.manifest_argument_memory(self._h(), device._h(), index, ctypes.byref(out)))
        return Memory(device.client, out)

    def result_memory(self, device, index):
        """The memory of `device` that result `index` will live in."""
        out = C.memory_p()
        _check(C.manifest_result_memory(self._h(), device._h(), index, ctypes.byref(out)))
        return Memory(device.client, out)

    def upload_arguments(self, device, arrays, semantics=HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL):
        """The upload plan: one buffer per argument in the memory the manifest names for `device`, in one
        batched submission. Arrays in the pinned-host arena (HostAllocation.as_numpy) whose argument is
        pinned_host upload zero-copy. Each array must have the argument's shape and dtype. Returns (buffers,
        Event)."""
        args = self.arguments
        arrays = list(arrays)
        if len(arrays) != len(args):
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT,
                                 f"upload_arguments: {len(arrays)} arrays for {len(args)} arguments")
        keep = []
        data = (ctypes.c_void_p * max(len(arrays), 1))()
        for i, (a, v) in enumerate(zip(arrays, args)):
            a = np.asarray(a)
            if v.dtype is not None and (a.dtype != v.dtype or a.shape != v.shape):
                raise NeuronMemError(StatusCode.INVALID_ARGUMENT,
                                     f"upload_arguments: argument {i} ({v.name}) needs {v.dtype}{list(v.shape)}, "
                                     f"got {a.dtype}{list(a.shape)}")
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
            keep.append(a)
            data[i] = a.ctypes.data if a.nbytes else None
        up = C.new(C.ManifestUploadArgs, manifest=self._h(), device=device._h(), host_data=data,
                   num_arguments=len(arrays), host_buffer_semantics=int(semantics))
        outs = (C.buffer_p * max(len(arrays), 1))()
        ready = C.event_p()
        _check(C.manifest_upload_arguments(ctypes.byref(up), outs, ctypes.byref(ready)))
        return _batch_result(device.client, outs, ready, keep, semantics)


class ArgumentPlacement(_Enum):
    STRICT = 0
    AUTO_COPY = 1


class ExecutableValue:
    """A parameter or an output of a compiled executable."""

    def __init__(self, index, v):
        self.index = index
        self.element_type = ElementType(v.element_type)
        self.shape = tuple(v.dims[i] for i in range(v.num_dims))
        self.memory_kind = MemoryKind(v.memory_kind)
        self.nbytes = v.bytes
        self.donation = v.donation  # parameters: the output it is donated into; outputs: the parameter; or -1

    @property
    def dtype(self):
        return _ELEMENT_TO_DTYPE[self.element_type]

    def __repr__(self):
        return f"ExecutableValue({self.index}, {self.element_type.name}{list(self.shape)}, " \
               f"{self.memory_kind.name.lower()})"


def _compile_options(entry, filename, policy, argument_placement, num_replicas, num_partitions):
    return C.new(C.CompileOptions, entry=entry.encode() if entry else None,
                 filename=os.fsencode(filename) if filename else None, policy=int(policy),
                 argument_placement=int(argument_placement), num_replicas=num_replicas,
                 num_partitions=num_partitions)


class Executable(_Owned):
    """A compiled graph for the client's NeuronCores. Holds its client open; close it before the client.
    Closing frees it (executions already submitted still run)."""

    _what = "executable"
    _destroy = staticmethod(lambda h: C.executable_destroy(h))

    def __init__(self, client, handle):
        self.client = client
        self._handle = handle
        client._handles.add(self)

    def __repr__(self):
        if self._handle is None or self.client.closed:
            return "<neuronmem.Executable closed>"
        p = self.properties()
        return f"<neuronmem.Executable {p['num_parameters']} parameter(s) -> {p['num_outputs']} output(s)>"

    @classmethod
    def compile(cls, client, text, entry=None, filename=None, policy=PlacementPolicy.DEVICE,
                argument_placement=ArgumentPlacement.STRICT, num_replicas=0, num_partitions=0):
        """Compiles StableHLO text; UNIMPLEMENTED names what the executor cannot run. num_partitions 0 = the
        module's mhlo.num_partitions (else 1); num_replicas 0 = as many as the cores hold."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        opts = _compile_options(entry, filename, policy, argument_placement, num_replicas, num_partitions)
        out = C.executable_p()
        _check(C.executable_compile_text(client._h(), data, len(data), ctypes.byref(opts), ctypes.byref(out)))
        return cls(client, out)

    @classmethod
    def from_manifest(cls, client, manifest, argument_placement=ArgumentPlacement.STRICT, num_replicas=0,
                      num_partitions=0):
        """Compiles the graph of a manifest loaded from StableHLO text (its entry and policy)."""
        opts = _compile_options(None, None, PlacementPolicy.DEVICE, argument_placement, num_replicas, num_partitions)
        out = C.executable_p()
        _check(C.executable_compile_manifest(client._h(), manifest._h(), ctypes.byref(opts), ctypes.byref(out)))
        return cls(client, out)

    def _h(self):
        self.client._h()
        return super()._h()

    def properties(self):
        p = C.new(C.ExecutableProperties)
        _check(C.executable_properties(self._h(), ctypes.byref(p)))
        return _fields(p)

    @property
    def num_manual_devices(self):
        """The most devices one sdy.manual_computation whose body communicates runs at once (0: none). On a
        client of more than one core they run on its cores (Execution.stats()["manual_cores"] /
        ["manual_threads"] say where an execution's ran)."""
        return self.properties()["num_manual_devices"]

    def _values(self, fn, count):
        out = []
        for i in range(count):
            v = C.new(C.ExecutableValue)
            _check(fn(self._h(), i, ctypes.byref(v)))
            out.append(ExecutableValue(i, v))
        return out

    @property
    def parameters(self):
        return self._values(C.executable_parameter, self.properties()["num_parameters"])

    @property
    def outputs(self):
        return self._values(C.executable_output, self.properties()["num_outputs"])

    def parameter_memory(self, device, index):
        """The memory of `device` that parameter `index` must live in at execute."""
        out = C.memory_p()
        _check(C.executable_parameter_memory(self._h(), device._h(), index, ctypes.byref(out)))
        return Memory(device.client, out)

    def output_memory(self, device, index):
        """The memory of `device` that output `index` is allocated in."""
        out = C.memory_p()
        _check(C.executable_output_memory(self._h(), device._h(), index, ctypes.byref(out)))
        return Memory(device.client, out)

    def execute(self, device, arguments, wait=(), non_donatable=(), timeout=None):
        """Submits one execution on `device` after `wait` and every argument's content: (result buffers, the
        done Event, an Execution for the statistics and Execution.cancel). Donated arguments are deleted by the
        call. timeout: seconds from submission after which it stops and its event fails with
        DEADLINE_EXCEEDED (None = the client's execution_timeout; float("inf") = none)."""
        arguments = list(arguments)
        args_arr = (C.buffer_p * max(len(arguments), 1))()
        for i, b in enumerate(arguments):
            if not isinstance(b, Buffer):
                raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"arguments[{i}] is not a Buffer")
            args_arr[i] = b._h()
        nd = [int(i) for i in non_donatable]
        nd_arr = C.int_array(ctypes.c_size_t, nd, "non_donatable")
        wait_list, wait_keep = _event_list(wait)
        ea = C.new(C.ExecuteArgs, executable=self._h(), device=device._h(), arguments=args_arr,
                   num_arguments=len(arguments), wait=wait_list, non_donatable=nd_arr if nd else None,
                   num_non_donatable=len(nd), timeout_ns=_timeout_ns(timeout))
        n_out = self.properties()["num_outputs"]
        outs = (C.buffer_p * max(n_out, 1))()
        done = C.event_p()
        execution = C.execution_p()
        _check(C.executable_execute(ctypes.byref(ea), outs, ctypes.byref(done), ctypes.byref(execution)))
        return [Buffer(device.client, outs[i]) for i in range(n_out)], Event(done), Execution(execution)

    def execute_devices(self, devices, arguments, waits=None, non_donatable=(), send_callbacks=None,
                        recv_callbacks=None, timeout=None, launch_id=0):
        """Submits one launch: an execution on each of `devices` (distinct devices the executable runs on),
        arguments[d] the argument list of devices[d], waits[d] (optional) its wait events. Each runs on its
        core's own thread; a program with collectives or send/recv runs as one process grid over the devices.
        send_callbacks / recv_callbacks: {channel_id: fn(HostTransfer)} for the host transfers (an exception
        fails that device's execution). Returns (results[d] lists, done Events per device, Executions per
        device); a refused launch submits nothing. timeout: every device's, as execute's. launch_id: in a client of
        a job, the id every process gives its devices' part of one launch (docs/distributed.md)."""
        devices = list(devices)
        arguments = [list(a) for a in arguments]
        n = len(devices)
        if len(arguments) != n:
            raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"{len(arguments)} argument lists for {n} devices")
        per = len(arguments[0]) if arguments else 0
        devs = (C.device_p * max(n, 1))(*[d._h() for d in devices])
        args_arr = (C.buffer_p * max(n * per, 1))()
        for d, lst in enumerate(arguments):
            if len(lst) != per:
                raise NeuronMemError(StatusCode.INVALID_ARGUMENT,
                                     f"device {d} has {len(lst)} arguments, device 0 has {per}")
            for i, b in enumerate(lst):
                if not isinstance(b, Buffer):
                    raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"arguments[{d}][{i}] is not a Buffer")
                args_arr[d * per + i] = b._h()
        keep = []
        waits_arr = None
        if waits is not None:
            waits = list(waits)
            if len(waits) != n:
                raise NeuronMemError(StatusCode.INVALID_ARGUMENT, f"{len(waits)} wait lists for {n} devices")
            waits_arr = (C.EventList * max(n, 1))()
            for d, w in enumerate(waits):
                waits_arr[d], k = _event_list(w)
                keep.append(k)
        nd = [int(i) for i in non_donatable]
        nd_arr = C.int_array(ctypes.c_size_t, nd, "non_donatable")
        tokens = []
        try:
            sends, n_sends = _host_callback_array(send_callbacks, False, tokens)
            recvs, n_recvs = _host_callback_array(recv_callbacks, True, tokens)
            la = C.new(C.ExecuteDevicesArgs, executable=self._h(), devices=devs, num_devices=n, arguments=args_arr,
                       num_arguments=per, waits=waits_arr, non_donatable=nd_arr if nd else None,
                       num_non_donatable=len(nd), send_callbacks=sends, num_send_callbacks=n_sends,
                       recv_callbacks=recvs, num_recv_callbacks=n_recvs, timeout_ns=_timeout_ns(timeout),
                       launch_id=int(launch_id))
            n_out = self.properties()["num_outputs"]
            outs = (C.buffer_p * max(n * n_out, 1))()
            done = (C.event_p * max(n, 1))()
            executions = (C.execution_p * max(n, 1))()
            _check(C.executable_execute_devices(ctypes.byref(la), outs, done, executions))
        except BaseException:
            _drop_host_callbacks(tokens)
            raise
        results = [[Buffer(devices[d].client, outs[d * n_out + k]) for k in range(n_out)] for d in range(n)]
        events = [Event(done[d]) for d in range(n)]
        if tokens:
            # The callbacks stay registered until every device of the launch has finished.
            remaining = [n]
            lock = threading.Lock()

            def one_done(_err):
                with lock:
                    remaining[0] -= 1
                    last = remaining[0] == 0
                if last:
                    _drop_host_callbacks(tokens)

            for ev in events:
                ev.on_ready(one_done)
        return results, events, [Execution(executions[d]) for d in range(n)]

    def logical_ids(self, device):
        """(replica, partition) that `device` runs: device d is replica d // P, partition d % P."""
        replica, partition = ctypes.c_uint32(), ctypes.c_uint32()
        _check(C.executable_logical_ids(self._h(), device._h(), ctypes.byref(replica), ctypes.byref(partition)))
        return replica.value, partition.value


class Execution(_Owned):
    """One submitted execution: its statistics once its done event is ready."""

    _what = "execution"
    _destroy = staticmethod(lambda h: C.execution_destroy(h))

    def __init__(self, handle):
        self._handle = handle

    def __repr__(self):
        return "<neuronmem.Execution closed>" if self._handle is None else "<neuronmem.Execution>"

    def stats(self):
        """Transfers, bytes and times of the finished execution; FAILED_PRECONDITION before it finished."""
        s = C.new(C.ExecutionStats)
        _check(C.execution_stats(self._h(), ctypes.byref(s)))
        return _fields(s)

    def cancel(self):
        """Stops the execution: queued, it fails at once; running, before its next op (an endless loop too). Its
        done event then fails with CANCELLED; cancelling a finished execution changes nothing. Never blocks."""
        _check(C.execution_cancel(self._h()))

    def transfers(self, from_kind, to_kind):
        """The finished execution's transfers from one memory kind to another."""
        t = C.new(C.TransferCounts)
        _check(C.execution_transfers(self._h(), int(from_kind), int(to_kind), ctypes.byref(t)))
        return _fields(t)


# For _python_name: the C prefix of each enum's constants (NEURONMEM_ + prefix + member name).
_C_ENUM_PREFIXES = [("STATUS_", StatusCode), ("MEMORY_KIND_", MemoryKind), ("MLOCK_", MlockMode),
                    ("ELEMENT_TYPE_", ElementType), ("HOST_BUFFER_", HostBufferSemantics),
                    ("PLACEMENT_POLICY_", PlacementPolicy), ("ARGUMENT_PLACEMENT_", ArgumentPlacement)]
