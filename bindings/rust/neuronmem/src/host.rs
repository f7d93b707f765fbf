//! Host transfers of a launch: closures keyed by channel id that serve each stablehlo.send / recv with
//! is_host_transfer (PJRT's send / recv callbacks), called through one `extern "C"` trampoline. An `Err` fails
//! that device's execution with its code and message; a panic is caught and becomes INTERNAL.
use crate::buffer::Element;
use crate::error::{Code, Result};
use crate::kernel::{new_status, panic_message, KernelTensor};
use crate::{c_slice, sys};
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

/// A host callback. `Send + Sync`: the devices of a launch call it at the same time.
pub type HostFn = Arc<dyn Fn(&mut HostTransfer<'_>) -> Result<()> + Send + Sync + 'static>;

/// The callbacks of one launch, by channel id.
#[derive(Clone, Default)]
pub struct HostCallbacks {
    pub(crate) send: Vec<(i64, HostFn)>,
    pub(crate) recv: Vec<(i64, HostFn)>,
}

impl HostCallbacks {
    pub fn new() -> HostCallbacks {
        HostCallbacks::default()
    }
    /// Serves the sends with is_host_transfer on `channel` (their payload, to read).
    pub fn send<F>(mut self, channel: i64, f: F) -> HostCallbacks
    where
        F: Fn(&mut HostTransfer<'_>) -> Result<()> + Send + Sync + 'static,
    {
        self.send.push((channel, Arc::new(f)));
        self
    }
    /// Serves the recvs with is_host_transfer on `channel` (their results, to fill).
    pub fn recv<F>(mut self, channel: i64, f: F) -> HostCallbacks
    where
        F: Fn(&mut HostTransfer<'_>) -> Result<()> + Send + Sync + 'static,
    {
        self.recv.push((channel, Arc::new(f)));
        self
    }
    pub fn is_empty(&self) -> bool {
        self.send.is_empty() && self.recv.is_empty()
    }
}

/// What a host callback is called with. Every view borrows library memory for the call only.
pub struct HostTransfer<'a> {
    raw: &'a sys::neuronmem_host_transfer_t,
    tensors: Vec<KernelTensor<'a>>,
    recv: bool,
}

impl<'a> HostTransfer<'a> {
    pub fn channel_id(&self) -> i64 {
        self.raw.channel_id
    }
    pub fn device(&self) -> i32 {
        self.raw.device
    }
    pub fn replica_id(&self) -> u32 {
        self.raw.replica_id
    }
    pub fn partition_id(&self) -> u32 {
        self.raw.partition_id
    }
    /// A send's payload, or a recv's results.
    pub fn tensors(&self) -> &[KernelTensor<'a>] {
        &self.tensors
    }
    /// The elements of tensor `i`; INVALID_ARGUMENT if `T` is not its element type.
    pub fn as_slice<T: Element>(&self, i: usize) -> Result<&[T]> {
        let t = self.tensor(i)?;
        let n = t.element_count::<T>()?;
        // SAFETY: the library passes n dense elements, valid during the call.
        Ok(unsafe { c_slice(t.data_ptr() as *const T, n) })
    }
    /// The elements of a recv's result `i`, to fill (FAILED_PRECONDITION for a send's payload).
    pub fn as_mut_slice<T: Element>(&mut self, i: usize) -> Result<&mut [T]> {
        if !self.recv {
            return Err(crate::Error::new(Code::FailedPrecondition, "a send's payload is read only"));
        }
        let t = self.tensor(i)?;
        let n = t.element_count::<T>()?;
        if n == 0 || t.data_ptr().is_null() {
            return Ok(&mut []);
        }
        // SAFETY: the recv's results belong to this call alone; `&mut self` hands out one slice at a time.
        Ok(unsafe { std::slice::from_raw_parts_mut(t.data_ptr() as *mut T, n) })
    }
    fn tensor(&self, i: usize) -> Result<&KernelTensor<'a>> {
        self.tensors
            .get(i)
            .ok_or_else(|| crate::Error::invalid(format!("tensor {} of {}", i, self.tensors.len())))
    }
}

/// One registered callback as C sees it: the closure and its direction.
pub(crate) struct Entry {
    f: HostFn,
    recv: bool,
}

unsafe extern "C" fn host_trampoline(t: *const sys::neuronmem_host_transfer_t, user_data: *mut c_void)
    -> *mut sys::neuronmem_status_t {
    // SAFETY: user_data is an Entry the launch keeps until every device of the launch has finished.
    let e = &*(user_data as *const Entry);
    let raw = &*t;
    let tensors = c_slice(raw.tensors, raw.num_tensors).iter().map(KernelTensor::from_raw).collect();
    let mut ht = HostTransfer { raw, tensors, recv: e.recv };
    match catch_unwind(AssertUnwindSafe(|| (e.f)(&mut ht))) {
        Ok(Ok(())) => ptr::null_mut(),
        Ok(Err(err)) => new_status(err.code(), err.message()),
        Err(panic) => new_status(Code::Internal, &format!("the Rust host callback panicked: {}", panic_message(&*panic))),
    }
}

/// The C arrays of a launch's callbacks and the entries they point at (kept alive by the caller).
pub(crate) struct Raw {
    pub(crate) entries: Vec<Box<Entry>>,
    pub(crate) send: Vec<sys::neuronmem_host_callback_t>,
    pub(crate) recv: Vec<sys::neuronmem_host_callback_t>,
}

impl HostCallbacks {
    pub(crate) fn to_raw(&self) -> Raw {
        let mut raw = Raw { entries: Vec::new(), send: Vec::new(), recv: Vec::new() };
        for (list, recv) in [(&self.send, false), (&self.recv, true)] {
            for (channel, f) in list {
                let entry = Box::new(Entry { f: f.clone(), recv });
                let cb = sys::neuronmem_host_callback_t {
                    channel_id: *channel,
                    fn_: Some(host_trampoline),
                    user_data: &*entry as *const Entry as *mut c_void,
                };
                if recv { raw.recv.push(cb) } else { raw.send.push(cb) }
                raw.entries.push(entry); // the heap address C holds does not move with the Vec
            }
        }
        raw
    }
}

// The entries hold Send + Sync closures; the C structs only point at them.
unsafe impl Send for Raw {}
unsafe impl Sync for Raw {}
