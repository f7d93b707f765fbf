//! The safe Rust API of libneuronmem: clients, NeuronCore devices, memories, the pinned-host arena, buffers,
//! events, placement manifests and the upload plan (the C API through `neuronmem-sys`).
//!
//! - Handles release themselves on drop. Devices, memories, buffers and host memory borrow their [`Client`],
//!   so none can outlive it; a buffer that aliases [`HostMemory`] (zero-copy) borrows that too.
//! - Every call returns [`Result`]; an [`Error`] carries the C status code and message.
//! - Slices instead of pointer and length; an output slice that is too small is an error, never a write past it.
//! - `Send`/`Sync` follow the C contract: every function is thread-safe, so handles are `Send + Sync`;
//!   [`Event`]s may be waited on from any thread and outlive their client.
//! - Callbacks are closures (`Event::on_ready`, `Client::register_kernel`); a panic inside one is caught,
//!   never unwound into C.
//! - Host memory the library keeps using after a call returns is either pinned-host memory owned by the
//!   binding while the transfer runs, or copied: no Rust memory is read or written by C after a call returns.

mod buffer;
mod client;
mod error;
mod event;
mod executable;
mod host;
mod kernel;
mod manifest;

pub use buffer::{Buffer, Element, ElementType, Semantics};
pub use client::{Client, Device, DeviceDescription, HostMemory, MemoryDescription, Memory, MemoryKind, MemoryStats,
                 MlockMode, Options};
pub use error::{Code, Error, Result};
pub use event::Event;
pub use host::{HostCallbacks, HostFn, HostTransfer};
pub use kernel::{KernelCall, KernelInput, KernelOutput, KernelTensor};
pub use executable::{ArgumentPlacement, CompileOptions, Executable, ExecutableValue, Execution, ExecutionStats,
                     TransferCounts};
pub use manifest::{Channel, Composite, HostCompute, Kernel, Manifest, ManifestOptions, Move, Parts, PlacementPolicy,
                   UploadArgument, Value};

use neuronmem_sys as sys;

/// The running library's version number, (major << 16) | (minor << 8) | patch.
pub fn version() -> u32 {
    unsafe { sys::neuronmem_version() }
}

/// The running library's version, "MAJOR.MINOR.PATCH".
pub fn version_string() -> String {
    unsafe { std::ffi::CStr::from_ptr(sys::neuronmem_version_string()) }.to_string_lossy().into_owned()
}

/// A borrowed C string as an owned String.
pub(crate) fn string(s: sys::neuronmem_string_t) -> String {
    if s.size == 0 || s.data.is_null() {
        return String::new();
    }
    let bytes = unsafe { std::slice::from_raw_parts(s.data as *const u8, s.size) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// A borrowed C array as a slice (empty for NULL).
pub(crate) unsafe fn c_slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n)
    }
}

pub(crate) const NO_EVENTS: sys::neuronmem_event_list_t =
    sys::neuronmem_event_list_t { events: std::ptr::null(), num_events: 0 };
