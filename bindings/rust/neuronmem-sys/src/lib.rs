//! Raw declarations of libneuronmem's C API, version 0.2 (`include/neuronmem/*.h`): every type, constant and
//! function, field for field. Linked through pkg-config by build.rs. The safe API is the `neuronmem` crate.
//! Tests check every struct's size and field offsets against the header compiled by the system C compiler,
//! and that every function the installed headers declare is declared here.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_void};

macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
            _not_send_sync: core::marker::PhantomData<*mut u8>,
        }
    )*};
}
opaque!(neuronmem_status_t, neuronmem_client_t, neuronmem_device_t, neuronmem_memory_t, neuronmem_buffer_t,
        neuronmem_event_t, neuronmem_manifest_t);

// Every enum of the header is 32-bit (each has a *_FORCE_32 member): a C int here, with its values as consts.
pub type neuronmem_extension_type_t = i32;
pub type neuronmem_status_code_t = i32;
pub type neuronmem_memory_kind_t = i32;
pub type neuronmem_mlock_mode_t = i32;
pub type neuronmem_element_type_t = i32;
pub type neuronmem_host_buffer_semantics_t = i32;
pub type neuronmem_placement_policy_t = i32;

pub const NEURONMEM_VERSION_MAJOR: u32 = 0;
pub const NEURONMEM_VERSION_MINOR: u32 = 2;
pub const NEURONMEM_VERSION_PATCH: u32 = 0;
pub const NEURONMEM_VERSION_NUMBER: u32 =
    (NEURONMEM_VERSION_MAJOR << 16) | (NEURONMEM_VERSION_MINOR << 8) | NEURONMEM_VERSION_PATCH;
pub const NEURONMEM_MAX_RANK: usize = 16;
pub const NEURONMEM_MANIFEST_SCHEMA_VERSION: u32 = 1;
pub const NEURONMEM_EXTENSION_TYPE_NONE: neuronmem_extension_type_t = 0;

pub const NEURONMEM_STATUS_OK: neuronmem_status_code_t = 0;
pub const NEURONMEM_STATUS_CANCELLED: neuronmem_status_code_t = 1;
pub const NEURONMEM_STATUS_UNKNOWN: neuronmem_status_code_t = 2;
pub const NEURONMEM_STATUS_INVALID_ARGUMENT: neuronmem_status_code_t = 3;
pub const NEURONMEM_STATUS_DEADLINE_EXCEEDED: neuronmem_status_code_t = 4;
pub const NEURONMEM_STATUS_NOT_FOUND: neuronmem_status_code_t = 5;
pub const NEURONMEM_STATUS_ALREADY_EXISTS: neuronmem_status_code_t = 6;
pub const NEURONMEM_STATUS_PERMISSION_DENIED: neuronmem_status_code_t = 7;
pub const NEURONMEM_STATUS_RESOURCE_EXHAUSTED: neuronmem_status_code_t = 8;
pub const NEURONMEM_STATUS_FAILED_PRECONDITION: neuronmem_status_code_t = 9;
pub const NEURONMEM_STATUS_ABORTED: neuronmem_status_code_t = 10;
pub const NEURONMEM_STATUS_OUT_OF_RANGE: neuronmem_status_code_t = 11;
pub const NEURONMEM_STATUS_UNIMPLEMENTED: neuronmem_status_code_t = 12;
pub const NEURONMEM_STATUS_INTERNAL: neuronmem_status_code_t = 13;
pub const NEURONMEM_STATUS_UNAVAILABLE: neuronmem_status_code_t = 14;
pub const NEURONMEM_STATUS_DATA_LOSS: neuronmem_status_code_t = 15;

pub const NEURONMEM_MEMORY_KIND_DEVICE: neuronmem_memory_kind_t = 0;
pub const NEURONMEM_MEMORY_KIND_PINNED_HOST: neuronmem_memory_kind_t = 1;
pub const NEURONMEM_MEMORY_KIND_UNPINNED_HOST: neuronmem_memory_kind_t = 2;

pub const NEURONMEM_MLOCK_BEST_EFFORT: neuronmem_mlock_mode_t = 0;
pub const NEURONMEM_MLOCK_REQUIRED: neuronmem_mlock_mode_t = 1;
pub const NEURONMEM_MLOCK_DISABLED: neuronmem_mlock_mode_t = 2;

pub const NEURONMEM_ELEMENT_TYPE_PRED: neuronmem_element_type_t = 0;
pub const NEURONMEM_ELEMENT_TYPE_S8: neuronmem_element_type_t = 1;
pub const NEURONMEM_ELEMENT_TYPE_S16: neuronmem_element_type_t = 2;
pub const NEURONMEM_ELEMENT_TYPE_S32: neuronmem_element_type_t = 3;
pub const NEURONMEM_ELEMENT_TYPE_S64: neuronmem_element_type_t = 4;
pub const NEURONMEM_ELEMENT_TYPE_U8: neuronmem_element_type_t = 5;
pub const NEURONMEM_ELEMENT_TYPE_U16: neuronmem_element_type_t = 6;
pub const NEURONMEM_ELEMENT_TYPE_U32: neuronmem_element_type_t = 7;
pub const NEURONMEM_ELEMENT_TYPE_U64: neuronmem_element_type_t = 8;
pub const NEURONMEM_ELEMENT_TYPE_F16: neuronmem_element_type_t = 9;
pub const NEURONMEM_ELEMENT_TYPE_BF16: neuronmem_element_type_t = 10;
pub const NEURONMEM_ELEMENT_TYPE_F32: neuronmem_element_type_t = 11;
pub const NEURONMEM_ELEMENT_TYPE_F64: neuronmem_element_type_t = 12;
pub const NEURONMEM_ELEMENT_TYPE_C64: neuronmem_element_type_t = 13;
pub const NEURONMEM_ELEMENT_TYPE_C128: neuronmem_element_type_t = 14;
pub const NEURONMEM_ELEMENT_TYPE_F8E5M2: neuronmem_element_type_t = 15;
pub const NEURONMEM_ELEMENT_TYPE_F8E4M3FN: neuronmem_element_type_t = 16;
pub const NEURONMEM_ELEMENT_TYPE_F8E4M3B11FNUZ: neuronmem_element_type_t = 17;
pub const NEURONMEM_ELEMENT_TYPE_F8E5M2FNUZ: neuronmem_element_type_t = 18;
pub const NEURONMEM_ELEMENT_TYPE_F8E4M3FNUZ: neuronmem_element_type_t = 19;
pub const NEURONMEM_ELEMENT_TYPE_F8E4M3: neuronmem_element_type_t = 20;
pub const NEURONMEM_ELEMENT_TYPE_F8E3M4: neuronmem_element_type_t = 21;
pub const NEURONMEM_ELEMENT_TYPE_F8E8M0FNU: neuronmem_element_type_t = 22;
pub const NEURONMEM_ELEMENT_TYPE_F6E2M3FN: neuronmem_element_type_t = 23;
pub const NEURONMEM_ELEMENT_TYPE_F6E3M2FN: neuronmem_element_type_t = 24;
pub const NEURONMEM_ELEMENT_TYPE_S4: neuronmem_element_type_t = 25;
pub const NEURONMEM_ELEMENT_TYPE_U4: neuronmem_element_type_t = 26;
pub const NEURONMEM_ELEMENT_TYPE_S2: neuronmem_element_type_t = 27;
pub const NEURONMEM_ELEMENT_TYPE_U2: neuronmem_element_type_t = 28;
pub const NEURONMEM_ELEMENT_TYPE_F4E2M1FN: neuronmem_element_type_t = 29;

pub const NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL: neuronmem_host_buffer_semantics_t = 0;
pub const NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES: neuronmem_host_buffer_semantics_t = 1;
pub const NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY: neuronmem_host_buffer_semantics_t = 2;
pub const NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY: neuronmem_host_buffer_semantics_t = 3;

pub const NEURONMEM_PLACEMENT_POLICY_DEVICE: neuronmem_placement_policy_t = 0;
pub const NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX: neuronmem_placement_policy_t = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_string_t {
    pub data: *const c_char,
    pub size: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_extension_base_t {
    pub struct_size: usize,
    pub type_: neuronmem_extension_type_t,
    pub next: *const neuronmem_extension_base_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_client_options_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub num_cores: u32,
    pub mlock_mode: neuronmem_mlock_mode_t,
    pub device_bytes_per_core: u64,
    pub pinned_host_bytes: u64,
    pub execution_timeout_ns: u64,
    pub process_index: u32,
    pub num_processes: u32,
    pub kv_get: neuronmem_kv_get_fn,
    pub kv_put: neuronmem_kv_put_fn,
    pub kv_user_data: *mut c_void,
    pub bootstrap_timeout_ns: u64,
    pub peer_timeout_ns: u64,
    pub fabric_interface: *const c_char,
}

/// The key-value store callbacks of a multi-process job (NULL: none).
pub type neuronmem_kv_get_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        key: *const c_char,
        key_size: usize,
        timeout_ns: u64,
        out_value: *mut *mut c_char,
        out_value_size: *mut usize,
    ) -> *mut neuronmem_status_t,
>;
pub type neuronmem_kv_put_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        key: *const c_char,
        key_size: usize,
        value: *const c_char,
        value_size: usize,
    ) -> *mut neuronmem_status_t,
>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_device_description_t {
    pub struct_size: usize,
    pub id: i32,
    pub process_index: i32,
    pub local_id: i32,
    pub reserved: i32,
    pub kind: neuronmem_string_t,
    pub debug_string: neuronmem_string_t,
    pub to_string: neuronmem_string_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_memory_description_t {
    pub struct_size: usize,
    pub id: i32,
    pub kind_id: neuronmem_memory_kind_t,
    pub kind: neuronmem_string_t,
    pub debug_string: neuronmem_string_t,
    pub to_string: neuronmem_string_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_job_traffic_t {
    pub struct_size: usize,
    pub messages_sent: u64,
    pub bytes_sent: u64,
    pub messages_received: u64,
    pub bytes_received: u64,
    pub messages_dropped: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_memory_stats_t {
    pub struct_size: usize,
    pub capacity: u64,
    pub bytes_in_use: u64,
    pub peak_bytes_in_use: u64,
    pub live_allocations: u64,
    pub largest_free_block: u64,
    pub total_allocations: u64,
    pub is_locked: bool,
    pub is_shared: bool,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_event_list_t {
    pub events: *const *mut neuronmem_event_t,
    pub num_events: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_buffer_from_host_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub data: *const c_void,
    pub element_type: neuronmem_element_type_t,
    pub host_buffer_semantics: neuronmem_host_buffer_semantics_t,
    pub dims: *const i64,
    pub num_dims: usize,
    pub byte_strides: *const i64,
    pub memory: *mut neuronmem_memory_t,
    pub wait: neuronmem_event_list_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_buffer_allocate_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub client: *mut neuronmem_client_t,
    pub memory: *mut neuronmem_memory_t,
    pub element_type: neuronmem_element_type_t,
    pub dims: *const i64,
    pub num_dims: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_buffer_copy_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub src: *mut neuronmem_buffer_t,
    pub memory: *mut neuronmem_memory_t,
    pub wait: neuronmem_event_list_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_buffer_read_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub buffer: *mut neuronmem_buffer_t,
    pub offset: u64,
    pub size: u64,
    pub dst: *mut c_void,
    pub wait: neuronmem_event_list_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_buffer_write_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub buffer: *mut neuronmem_buffer_t,
    pub offset: u64,
    pub size: u64,
    pub src: *const c_void,
    pub wait: neuronmem_event_list_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_buffer_chunk_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub buffer: *mut neuronmem_buffer_t,
    pub offset: u64,
    pub size: u64,
    pub data: *const c_void,
    pub wait: neuronmem_event_list_t,
    pub is_last: bool,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_buffer_load_file_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub buffer: *mut neuronmem_buffer_t,
    pub path: *const c_char,
    pub file_offset: u64,
    pub size: u64,
    pub buffer_offset: u64,
    pub wait: neuronmem_event_list_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_manifest_options_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub entry: *const c_char,
    pub filename: *const c_char,
    pub policy: neuronmem_placement_policy_t,
    pub num_cores: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_manifest_counts_t {
    pub struct_size: usize,
    pub num_arguments: usize,
    pub num_results: usize,
    pub num_moves: usize,
    pub num_host_compute: usize,
    pub num_kernels: usize,
    pub num_custom_call_targets: usize,
    pub num_channels: usize,
    pub num_warnings: usize,
    pub num_composites: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_manifest_value_t {
    pub struct_size: usize,
    pub index: u32,
    pub memory_kind: neuronmem_memory_kind_t,
    pub name: neuronmem_string_t,
    pub element_type: neuronmem_string_t,
    pub buffer_element_type: i32,
    pub kind_explicit: bool,
    pub dims: *const i64,
    pub num_dims: usize,
    pub aliasing_output: i64,
    pub buffer_donor: bool,
    pub line: u32,
    pub column: u32,
    pub num_attributes: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_manifest_move_t {
    pub struct_size: usize,
    pub function: neuronmem_string_t,
    pub value: neuronmem_string_t,
    pub result: neuronmem_string_t,
    pub spelling: neuronmem_string_t,
    pub from_kind: neuronmem_string_t,
    pub to_kind: neuronmem_string_t,
    pub from_memory_kind: neuronmem_memory_kind_t,
    pub to_memory_kind: neuronmem_memory_kind_t,
    pub element_type: neuronmem_string_t,
    pub dims: *const i64,
    pub num_dims: usize,
    pub line: u32,
    pub column: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_manifest_kernel_t {
    pub struct_size: usize,
    pub function: neuronmem_string_t,
    pub func_name: neuronmem_string_t,
    pub binary: neuronmem_string_t,
    pub grid: *const i64,
    pub grid_rank: usize,
    pub num_input_names: usize,
    pub num_output_names: usize,
    pub num_operands: u32,
    pub num_results: u32,
    pub line: u32,
    pub column: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_manifest_channel_t {
    pub struct_size: usize,
    pub function: neuronmem_string_t,
    pub op: neuronmem_string_t,
    pub handle: i64,
    pub type_: i32,
    pub is_host_transfer: bool,
    pub source_target_pairs: *const i64,
    pub num_pairs: usize,
    pub num_payloads: usize,
    pub line: u32,
    pub column: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_manifest_composite_t {
    pub struct_size: usize,
    pub function: neuronmem_string_t,
    pub name: neuronmem_string_t,
    pub decomposition: neuronmem_string_t,
    pub version: i64,
    pub num_attributes: usize,
    pub line: u32,
    pub column: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_manifest_upload_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub manifest: *const neuronmem_manifest_t,
    pub device: *mut neuronmem_device_t,
    pub host_data: *const *const c_void,
    pub num_arguments: usize,
    pub host_buffer_semantics: neuronmem_host_buffer_semantics_t,
}

opaque!(neuronmem_executable_t, neuronmem_execution_t);

pub type neuronmem_argument_placement_t = i32;
pub const NEURONMEM_ARGUMENT_PLACEMENT_STRICT: neuronmem_argument_placement_t = 0;
pub const NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY: neuronmem_argument_placement_t = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_compile_options_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub entry: *const c_char,
    pub filename: *const c_char,
    pub policy: neuronmem_placement_policy_t,
    pub argument_placement: neuronmem_argument_placement_t,
    pub num_replicas: u32,
    pub num_partitions: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_executable_properties_t {
    pub struct_size: usize,
    pub num_parameters: usize,
    pub num_outputs: usize,
    pub num_replicas: u32,
    pub peak_device_bytes: u64,
    pub peak_host_bytes: u64,
    pub num_ops: u64,
    pub num_explicit_moves: u64,
    pub num_partitions: u32,
    pub num_specializations: u64,
    pub num_manual_devices: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_executable_value_t {
    pub struct_size: usize,
    pub element_type: neuronmem_element_type_t,
    pub dims: *const i64,
    pub num_dims: usize,
    pub memory_kind: neuronmem_memory_kind_t,
    pub bytes: u64,
    pub donation: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_execute_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub executable: *mut neuronmem_executable_t,
    pub device: *mut neuronmem_device_t,
    pub arguments: *const *mut neuronmem_buffer_t,
    pub num_arguments: usize,
    pub wait: neuronmem_event_list_t,
    pub non_donatable: *const usize,
    pub num_non_donatable: usize,
    pub timeout_ns: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_execute_devices_args_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub executable: *mut neuronmem_executable_t,
    pub devices: *const *mut neuronmem_device_t,
    pub num_devices: usize,
    pub arguments: *const *mut neuronmem_buffer_t,
    pub num_arguments: usize,
    pub waits: *const neuronmem_event_list_t,
    pub non_donatable: *const usize,
    pub num_non_donatable: usize,
    pub send_callbacks: *const neuronmem_host_callback_t,
    pub num_send_callbacks: usize,
    pub recv_callbacks: *const neuronmem_host_callback_t,
    pub num_recv_callbacks: usize,
    pub timeout_ns: u64,
    pub launch_id: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_host_transfer_t {
    pub struct_size: usize,
    pub channel_id: i64,
    pub device: i32,
    pub replica_id: u32,
    pub partition_id: u32,
    pub tensors: *const neuronmem_kernel_tensor_t,
    pub num_tensors: usize,
}

pub type neuronmem_host_callback_fn_t = Option<
    unsafe extern "C" fn(transfer: *const neuronmem_host_transfer_t, user_data: *mut c_void)
        -> *mut neuronmem_status_t,
>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_host_callback_t {
    pub channel_id: i64,
    pub fn_: neuronmem_host_callback_fn_t,
    pub user_data: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_execution_stats_t {
    pub struct_size: usize,
    pub explicit_transfers: u64,
    pub explicit_bytes: u64,
    pub implicit_transfers: u64,
    pub implicit_bytes: u64,
    pub op_ns: u64,
    pub transfer_ns: u64,
    pub queue_ns: u64,
    pub peer_transfers: u64,
    pub peer_bytes: u64,
    pub manual_cores: u64,
    pub manual_threads: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_transfer_counts_t {
    pub struct_size: usize,
    pub explicit_transfers: u64,
    pub explicit_bytes: u64,
    pub implicit_transfers: u64,
    pub implicit_bytes: u64,
    pub peer_transfers: u64,
    pub peer_bytes: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_kernel_tensor_t {
    pub data: *mut c_void,
    pub element_type: neuronmem_element_type_t,
    pub dims: *const i64,
    pub num_dims: usize,
    pub memory_kind: neuronmem_memory_kind_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_kernel_call_t {
    pub struct_size: usize,
    pub target: neuronmem_string_t,
    pub name: neuronmem_string_t,
    pub backend_config: neuronmem_string_t,
    pub inputs: *const neuronmem_kernel_tensor_t,
    pub num_inputs: usize,
    pub outputs: *const neuronmem_kernel_tensor_t,
    pub num_outputs: usize,
    pub grid: *const i64,
    pub grid_rank: usize,
    pub grid_index: *const i64,
    pub device: i32,
}

pub type neuronmem_kernel_fn_t = Option<
    unsafe extern "C" fn(call: *const neuronmem_kernel_call_t, user_data: *mut c_void) -> *mut neuronmem_status_t,
>;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct neuronmem_kernel_registration_t {
    pub struct_size: usize,
    pub extension: *const neuronmem_extension_base_t,
    pub name: *const c_char,
    /// `fn` in C.
    pub fn_: neuronmem_kernel_fn_t,
    pub user_data: *mut c_void,
}

/// NEURONMEM_STRUCT_SIZE(type, last): the offset of `last` plus its size. `struct_size!(T, field)`.
#[macro_export]
macro_rules! struct_size {
    ($t:ty, $field:ident) => {{
        let u = core::mem::MaybeUninit::<$t>::uninit();
        let base = u.as_ptr();
        // SAFETY: addr_of! computes a field address without reading or referencing the uninitialised value.
        let field = unsafe { core::ptr::addr_of!((*base).$field) };
        (field as usize - base as usize) + $crate::size_of_pointee(field)
    }};
}

/// The size of what a raw pointer points to, without dereferencing it.
pub fn size_of_pointee<T>(_: *const T) -> usize {
    core::mem::size_of::<T>()
}

/// The published struct sizes (the header's NEURONMEM_*_STRUCT_SIZE macros).
pub fn published_sizes() -> [(&'static str, usize); 31] {
    [
        ("neuronmem_extension_base_t", struct_size!(neuronmem_extension_base_t, next)),
        ("neuronmem_client_options_t", struct_size!(neuronmem_client_options_t, fabric_interface)),
        ("neuronmem_device_description_t", struct_size!(neuronmem_device_description_t, to_string)),
        ("neuronmem_memory_description_t", struct_size!(neuronmem_memory_description_t, to_string)),
        ("neuronmem_memory_stats_t", struct_size!(neuronmem_memory_stats_t, is_shared)),
        ("neuronmem_job_traffic_t", struct_size!(neuronmem_job_traffic_t, messages_dropped)),
        ("neuronmem_buffer_from_host_args_t", struct_size!(neuronmem_buffer_from_host_args_t, wait)),
        ("neuronmem_buffer_allocate_args_t", struct_size!(neuronmem_buffer_allocate_args_t, num_dims)),
        ("neuronmem_buffer_copy_args_t", struct_size!(neuronmem_buffer_copy_args_t, wait)),
        ("neuronmem_buffer_read_args_t", struct_size!(neuronmem_buffer_read_args_t, wait)),
        ("neuronmem_buffer_write_args_t", struct_size!(neuronmem_buffer_write_args_t, wait)),
        ("neuronmem_buffer_chunk_args_t", struct_size!(neuronmem_buffer_chunk_args_t, is_last)),
        ("neuronmem_buffer_load_file_args_t", struct_size!(neuronmem_buffer_load_file_args_t, wait)),
        ("neuronmem_manifest_options_t", struct_size!(neuronmem_manifest_options_t, num_cores)),
        ("neuronmem_manifest_counts_t", struct_size!(neuronmem_manifest_counts_t, num_composites)),
        ("neuronmem_manifest_value_t", struct_size!(neuronmem_manifest_value_t, num_attributes)),
        ("neuronmem_manifest_move_t", struct_size!(neuronmem_manifest_move_t, column)),
        ("neuronmem_manifest_kernel_t", struct_size!(neuronmem_manifest_kernel_t, column)),
        ("neuronmem_manifest_channel_t", struct_size!(neuronmem_manifest_channel_t, column)),
        ("neuronmem_manifest_composite_t", struct_size!(neuronmem_manifest_composite_t, column)),
        ("neuronmem_manifest_upload_args_t", struct_size!(neuronmem_manifest_upload_args_t, host_buffer_semantics)),
        ("neuronmem_compile_options_t", struct_size!(neuronmem_compile_options_t, num_partitions)),
        ("neuronmem_executable_properties_t", struct_size!(neuronmem_executable_properties_t, num_manual_devices)),
        ("neuronmem_executable_value_t", struct_size!(neuronmem_executable_value_t, donation)),
        ("neuronmem_execute_args_t", struct_size!(neuronmem_execute_args_t, timeout_ns)),
        ("neuronmem_execute_devices_args_t", struct_size!(neuronmem_execute_devices_args_t, launch_id)),
        ("neuronmem_host_transfer_t", struct_size!(neuronmem_host_transfer_t, num_tensors)),
        ("neuronmem_execution_stats_t", struct_size!(neuronmem_execution_stats_t, manual_threads)),
        ("neuronmem_transfer_counts_t", struct_size!(neuronmem_transfer_counts_t, peer_bytes)),
        ("neuronmem_kernel_call_t", struct_size!(neuronmem_kernel_call_t, device)),
        ("neuronmem_kernel_registration_t", struct_size!(neuronmem_kernel_registration_t, user_data)),
    ]
}

pub type neuronmem_event_callback_t =
    Option<unsafe extern "C" fn(error: *const neuronmem_status_t, user_data: *mut c_void)>;
pub type neuronmem_manifest_entry_visitor_t =
    Option<unsafe extern "C" fn(name: neuronmem_string_t, user_data: *mut c_void)>;
pub type neuronmem_bytes_visitor_t =
    Option<unsafe extern "C" fn(data: *const c_void, size: usize, user_data: *mut c_void)>;

type S = *mut neuronmem_status_t;

extern "C" {
    // status.h
    pub fn neuronmem_status_create(code: neuronmem_status_code_t, message: *const c_char, size: usize) -> S;
    pub fn neuronmem_status_code(status: *const neuronmem_status_t) -> neuronmem_status_code_t;
    pub fn neuronmem_status_message(status: *const neuronmem_status_t) -> neuronmem_string_t;
    pub fn neuronmem_status_free(status: S);
    pub fn neuronmem_status_code_name(code: neuronmem_status_code_t) -> *const c_char;
    pub fn neuronmem_version() -> u32;
    pub fn neuronmem_version_string() -> *const c_char;
    // client.h
    pub fn neuronmem_client_create(options: *const neuronmem_client_options_t, out: *mut *mut neuronmem_client_t) -> S;
    pub fn neuronmem_client_destroy(client: *mut neuronmem_client_t) -> S;
    pub fn neuronmem_client_platform_name(client: *const neuronmem_client_t, out: *mut neuronmem_string_t) -> S;
    pub fn neuronmem_client_platform_version(client: *const neuronmem_client_t, out: *mut neuronmem_string_t) -> S;
    pub fn neuronmem_client_extensions(client: *const neuronmem_client_t, out_names: *mut *const neuronmem_string_t,
                                       out_count: *mut usize) -> S;
    pub fn neuronmem_client_devices(client: *const neuronmem_client_t, out: *mut *const *mut neuronmem_device_t,
                                    out_count: *mut usize) -> S;
    pub fn neuronmem_client_memories(client: *const neuronmem_client_t, out: *mut *const *mut neuronmem_memory_t,
                                     out_count: *mut usize) -> S;
    pub fn neuronmem_client_lookup_device(client: *const neuronmem_client_t, id: i32,
                                          out: *mut *mut neuronmem_device_t) -> S;
    pub fn neuronmem_client_lookup_memory(client: *const neuronmem_client_t, id: i32,
                                          out: *mut *mut neuronmem_memory_t) -> S;
    pub fn neuronmem_client_process(client: *const neuronmem_client_t, out_process_index: *mut u32,
                                    out_num_processes: *mut u32) -> S;
    pub fn neuronmem_client_job_traffic(client: *const neuronmem_client_t, out: *mut neuronmem_job_traffic_t) -> S;
    pub fn neuronmem_client_describe_device_id(client: *const neuronmem_client_t, id: i32,
                                               out: *mut neuronmem_device_description_t) -> S;
    pub fn neuronmem_directory_store_get(directory: *mut c_void, key: *const c_char, key_size: usize, timeout_ns: u64,
                                         out_value: *mut *mut c_char, out_value_size: *mut usize) -> S;
    pub fn neuronmem_directory_store_put(directory: *mut c_void, key: *const c_char, key_size: usize,
                                         value: *const c_char, value_size: usize) -> S;
    pub fn neuronmem_device_memory_of_kind(device: *const neuronmem_device_t, kind: neuronmem_memory_kind_t,
                                           out: *mut *mut neuronmem_memory_t) -> S;
    pub fn neuronmem_device_describe(device: *const neuronmem_device_t, out: *mut neuronmem_device_description_t) -> S;
    pub fn neuronmem_device_addressable_memories(device: *const neuronmem_device_t,
                                                 out: *mut *const *mut neuronmem_memory_t, out_count: *mut usize) -> S;
    pub fn neuronmem_device_default_memory(device: *const neuronmem_device_t, out: *mut *mut neuronmem_memory_t) -> S;
    pub fn neuronmem_memory_describe(memory: *const neuronmem_memory_t, out: *mut neuronmem_memory_description_t) -> S;
    pub fn neuronmem_memory_addressable_devices(memory: *const neuronmem_memory_t,
                                                out: *mut *const *mut neuronmem_device_t, out_count: *mut usize) -> S;
    pub fn neuronmem_memory_kind(memory: *const neuronmem_memory_t, out: *mut neuronmem_memory_kind_t) -> S;
    pub fn neuronmem_memory_client(memory: *const neuronmem_memory_t, out: *mut *mut neuronmem_client_t) -> S;
    pub fn neuronmem_memory_stats(memory: *const neuronmem_memory_t, out: *mut neuronmem_memory_stats_t) -> S;
    pub fn neuronmem_client_host_allocate(client: *mut neuronmem_client_t, size: u64, alignment: u64,
                                          out: *mut *mut c_void) -> S;
    pub fn neuronmem_client_host_free(client: *mut neuronmem_client_t, ptr: *mut c_void) -> S;
    pub fn neuronmem_client_host_is_pinned(client: *const neuronmem_client_t, ptr: *const c_void, size: u64,
                                           out: *mut bool) -> S;
    // buffer.h
    pub fn neuronmem_buffer_from_host(client: *mut neuronmem_client_t, args: *const neuronmem_buffer_from_host_args_t,
                                      out_buffer: *mut *mut neuronmem_buffer_t, out_ready: *mut *mut neuronmem_event_t,
                                      out_done_with_host: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_buffer_from_host_batch(client: *mut neuronmem_client_t,
                                            args: *const neuronmem_buffer_from_host_args_t, count: usize,
                                            out_buffers: *mut *mut neuronmem_buffer_t,
                                            out_ready: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_buffer_allocate(args: *const neuronmem_buffer_allocate_args_t,
                                     out: *mut *mut neuronmem_buffer_t) -> S;
    pub fn neuronmem_buffer_copy_to_memory(args: *const neuronmem_buffer_copy_args_t,
                                           out: *mut *mut neuronmem_buffer_t,
                                           out_ready: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_buffer_read(args: *const neuronmem_buffer_read_args_t,
                                 out_ready: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_buffer_write(args: *const neuronmem_buffer_write_args_t,
                                  out_ready: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_buffer_upload_chunk(args: *const neuronmem_buffer_chunk_args_t,
                                         out_done: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_buffer_load_file(args: *const neuronmem_buffer_load_file_args_t,
                                      out_ready: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_buffer_ready_event(buffer: *mut neuronmem_buffer_t, out: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_buffer_delete(buffer: *mut neuronmem_buffer_t) -> S;
    pub fn neuronmem_buffer_destroy(buffer: *mut neuronmem_buffer_t);
    pub fn neuronmem_buffer_memory(buffer: *const neuronmem_buffer_t, out: *mut *mut neuronmem_memory_t) -> S;
    pub fn neuronmem_buffer_device(buffer: *const neuronmem_buffer_t, out: *mut *mut neuronmem_device_t) -> S;
    pub fn neuronmem_buffer_element_type(buffer: *const neuronmem_buffer_t, out: *mut neuronmem_element_type_t) -> S;
    pub fn neuronmem_buffer_dims(buffer: *const neuronmem_buffer_t, out_dims: *mut *const i64,
                                 out_num_dims: *mut usize) -> S;
    pub fn neuronmem_buffer_on_device_size(buffer: *const neuronmem_buffer_t, out: *mut u64) -> S;
    pub fn neuronmem_buffer_is_deleted(buffer: *const neuronmem_buffer_t, out: *mut bool) -> S;
    pub fn neuronmem_buffer_is_zero_copy(buffer: *const neuronmem_buffer_t, out: *mut bool) -> S;
    pub fn neuronmem_element_type_size(element_type: neuronmem_element_type_t) -> u64;
    pub fn neuronmem_event_is_ready(event: *const neuronmem_event_t, out: *mut bool) -> S;
    pub fn neuronmem_event_wait(event: *mut neuronmem_event_t, timeout_ns: i64) -> S;
    pub fn neuronmem_event_error(event: *const neuronmem_event_t, out_error: *mut S) -> S;
    pub fn neuronmem_event_on_ready(event: *mut neuronmem_event_t, callback: neuronmem_event_callback_t,
                                    user_data: *mut c_void) -> S;
    pub fn neuronmem_event_create(client: *mut neuronmem_client_t, out: *mut *mut neuronmem_event_t) -> S;
    pub fn neuronmem_event_complete(event: *mut neuronmem_event_t, error: *const neuronmem_status_t) -> S;
    pub fn neuronmem_event_destroy(event: *mut neuronmem_event_t);
    // manifest.h
    pub fn neuronmem_manifest_load_text(text: *const c_char, size: usize, options: *const neuronmem_manifest_options_t,
                                        out: *mut *mut neuronmem_manifest_t) -> S;
    pub fn neuronmem_manifest_load_file(path: *const c_char, options: *const neuronmem_manifest_options_t,
                                        out: *mut *mut neuronmem_manifest_t) -> S;
    pub fn neuronmem_manifest_list_entries(text: *const c_char, size: usize, filename: *const c_char,
                                           visit: neuronmem_manifest_entry_visitor_t, user_data: *mut c_void) -> S;
    pub fn neuronmem_manifest_write_artifact(text: *const c_char, size: usize, filename: *const c_char,
                                             target_version: *const c_char, visit: neuronmem_bytes_visitor_t,
                                             user_data: *mut c_void) -> S;
    pub fn neuronmem_manifest_load_json(json: *const c_char, size: usize, out: *mut *mut neuronmem_manifest_t) -> S;
    pub fn neuronmem_manifest_to_json(manifest: *const neuronmem_manifest_t, out: *mut neuronmem_string_t) -> S;
    pub fn neuronmem_manifest_destroy(manifest: *mut neuronmem_manifest_t);
    pub fn neuronmem_manifest_entry(manifest: *const neuronmem_manifest_t, out_module: *mut neuronmem_string_t,
                                    out_entry: *mut neuronmem_string_t) -> S;
    pub fn neuronmem_manifest_counts(manifest: *const neuronmem_manifest_t, out: *mut neuronmem_manifest_counts_t) -> S;
    pub fn neuronmem_manifest_argument(manifest: *const neuronmem_manifest_t, index: usize,
                                       out: *mut neuronmem_manifest_value_t) -> S;
    pub fn neuronmem_manifest_result(manifest: *const neuronmem_manifest_t, index: usize,
                                     out: *mut neuronmem_manifest_value_t) -> S;
    pub fn neuronmem_manifest_value_attribute(manifest: *const neuronmem_manifest_t, is_result: bool, index: usize,
                                              attr: usize, out_key: *mut neuronmem_string_t,
                                              out_value: *mut neuronmem_string_t) -> S;
    pub fn neuronmem_manifest_move(manifest: *const neuronmem_manifest_t, index: usize,
                                   out: *mut neuronmem_manifest_move_t) -> S;
    pub fn neuronmem_manifest_host_compute(manifest: *const neuronmem_manifest_t, index: usize,
                                           out_op: *mut neuronmem_string_t, out_function: *mut neuronmem_string_t,
                                           out_line: *mut u32, out_column: *mut u32) -> S;
    pub fn neuronmem_manifest_kernel(manifest: *const neuronmem_manifest_t, index: usize,
                                     out: *mut neuronmem_manifest_kernel_t) -> S;
    pub fn neuronmem_manifest_kernel_io_name(manifest: *const neuronmem_manifest_t, index: usize, is_output: bool,
                                             name_index: usize, out: *mut neuronmem_string_t) -> S;
    pub fn neuronmem_manifest_custom_call_target(manifest: *const neuronmem_manifest_t, index: usize,
                                                 out_target: *mut neuronmem_string_t, out_count: *mut u64) -> S;
    pub fn neuronmem_manifest_channel(manifest: *const neuronmem_manifest_t, index: usize,
                                      out: *mut neuronmem_manifest_channel_t) -> S;
    pub fn neuronmem_manifest_warning(manifest: *const neuronmem_manifest_t, index: usize,
                                      out: *mut neuronmem_string_t) -> S;
    pub fn neuronmem_manifest_composite(manifest: *const neuronmem_manifest_t, index: usize,
                                        out: *mut neuronmem_manifest_composite_t) -> S;
    pub fn neuronmem_manifest_composite_attribute(manifest: *const neuronmem_manifest_t, index: usize,
                                                  attr: usize, out_key: *mut neuronmem_string_t,
                                                  out_value: *mut neuronmem_string_t) -> S;
    pub fn neuronmem_manifest_argument_memory(manifest: *const neuronmem_manifest_t, device: *const neuronmem_device_t,
                                              index: usize, out: *mut *mut neuronmem_memory_t) -> S;
    pub fn neuronmem_manifest_result_memory(manifest: *const neuronmem_manifest_t, device: *const neuronmem_device_t,
                                            index: usize, out: *mut *mut neuronmem_memory_t) -> S;
    pub fn neuronmem_manifest_upload_arguments(args: *const neuronmem_manifest_upload_args_t,
                                               out_buffers: *mut *mut neuronmem_buffer_t,
                                               out_ready: *mut *mut neuronmem_event_t) -> S;
    // executable.h
    pub fn neuronmem_executable_compile_text(client: *mut neuronmem_client_t, text: *const c_char, size: usize,
                                             options: *const neuronmem_compile_options_t,
                                             out: *mut *mut neuronmem_executable_t) -> S;
    pub fn neuronmem_executable_compile_manifest(client: *mut neuronmem_client_t,
                                                 manifest: *const neuronmem_manifest_t,
                                                 options: *const neuronmem_compile_options_t,
                                                 out: *mut *mut neuronmem_executable_t) -> S;
    pub fn neuronmem_executable_destroy(executable: *mut neuronmem_executable_t);
    pub fn neuronmem_executable_properties(executable: *const neuronmem_executable_t,
                                           out: *mut neuronmem_executable_properties_t) -> S;
    pub fn neuronmem_executable_parameter(executable: *const neuronmem_executable_t, index: usize,
                                          out: *mut neuronmem_executable_value_t) -> S;
    pub fn neuronmem_executable_output(executable: *const neuronmem_executable_t, index: usize,
                                       out: *mut neuronmem_executable_value_t) -> S;
    pub fn neuronmem_executable_parameter_memory(executable: *const neuronmem_executable_t,
                                                 device: *const neuronmem_device_t, index: usize,
                                                 out: *mut *mut neuronmem_memory_t) -> S;
    pub fn neuronmem_executable_output_memory(executable: *const neuronmem_executable_t,
                                              device: *const neuronmem_device_t, index: usize,
                                              out: *mut *mut neuronmem_memory_t) -> S;
    pub fn neuronmem_executable_execute(args: *const neuronmem_execute_args_t,
                                        out_results: *mut *mut neuronmem_buffer_t,
                                        out_done: *mut *mut neuronmem_event_t,
                                        out_execution: *mut *mut neuronmem_execution_t) -> S;
    pub fn neuronmem_executable_execute_devices(args: *const neuronmem_execute_devices_args_t,
                                                out_results: *mut *mut neuronmem_buffer_t,
                                                out_done: *mut *mut neuronmem_event_t,
                                                out_executions: *mut *mut neuronmem_execution_t) -> S;
    pub fn neuronmem_executable_logical_ids(executable: *const neuronmem_executable_t,
                                            device: *const neuronmem_device_t, out_replica: *mut u32,
                                            out_partition: *mut u32) -> S;
    pub fn neuronmem_execution_stats(execution: *const neuronmem_execution_t,
                                     out: *mut neuronmem_execution_stats_t) -> S;
    pub fn neuronmem_execution_transfers(execution: *const neuronmem_execution_t, from: neuronmem_memory_kind_t,
                                         to: neuronmem_memory_kind_t, out: *mut neuronmem_transfer_counts_t) -> S;
    pub fn neuronmem_execution_cancel(execution: *mut neuronmem_execution_t) -> *mut neuronmem_status_t;
    pub fn neuronmem_execution_destroy(execution: *mut neuronmem_execution_t);
    pub fn neuronmem_client_register_kernel(client: *mut neuronmem_client_t,
                                            args: *const neuronmem_kernel_registration_t) -> S;
}

#[cfg(test)]
mod tests;
