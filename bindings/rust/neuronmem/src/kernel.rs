//! Custom kernels written in Rust: a closure registered by name on a [`Client`], called by the executor
//! through one `extern "C"` trampoline. A kernel's `Err` fails the execution with its code and message; a
//! panic is caught and becomes INTERNAL: nothing unwinds into the library.
use crate::buffer::{Element, ElementType};
use crate::client::{Client, MemoryKind};
use crate::error::{check, Code, Error, Result};
use crate::{c_slice, string, sys};
use std::borrow::Cow;
use std::ffi::CString;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// A registered kernel. `Send + Sync`: grid points (and executions on several cores) call it concurrently.
pub(crate) type KernelFn = Box<dyn Fn(&mut KernelCall<'_>) -> Result<()> + Send + Sync + 'static>;

/// What a kernel is called with. Every view borrows library memory for the call only.
pub struct KernelCall<'a> {
    raw: &'a sys::neuronmem_kernel_call_t,
    inputs: Vec<KernelInput<'a>>,
    outputs: Vec<KernelOutput<'a>>,
}

/// What every operand and result of a kernel call has: element type, dims, where it lies.
pub struct KernelTensor<'a> {
    raw: &'a sys::neuronmem_kernel_tensor_t,
}

/// One operand of a kernel call: read only. Derefs to its [`KernelTensor`].
pub struct KernelInput<'a>(KernelTensor<'a>);

/// One result of a kernel call: the kernel writes every element (grid points their own parts). Derefs to
/// its [`KernelTensor`].
pub struct KernelOutput<'a> {
    tensor: KernelTensor<'a>,
    concurrent: bool, // other grid points of the same launch may run at the same time
}

impl<'a> std::ops::Deref for KernelInput<'a> {
    type Target = KernelTensor<'a>;
    fn deref(&self) -> &KernelTensor<'a> {
        &self.0
    }
}

impl<'a> std::ops::Deref for KernelOutput<'a> {
    type Target = KernelTensor<'a>;
    fn deref(&self) -> &KernelTensor<'a> {
        &self.tensor
    }
}

impl<'a> KernelTensor<'a> {
    pub(crate) fn from_raw(raw: &'a sys::neuronmem_kernel_tensor_t) -> KernelTensor<'a> {
        KernelTensor { raw }
    }
    pub(crate) fn data_ptr(&self) -> *mut c_void {
        self.raw.data
    }
}

impl KernelTensor<'_> {
    pub fn element_type(&self) -> Option<ElementType> {
        ElementType::from_raw(self.raw.element_type)
    }
    pub fn dims(&self) -> &[i64] {
        unsafe { c_slice(self.raw.dims, self.raw.num_dims) }
    }
    /// Where the data lies (a pinned_host operand is read in place).
    pub fn memory_kind(&self) -> Result<MemoryKind> {
        MemoryKind::from_raw(self.raw.memory_kind)
    }
    /// The number of `T` in the tensor, if `T` is its element type (PRED and the 8- and 6-bit floats as `u8`,
    /// F16 / BF16 as `u16`).
    pub(crate) fn element_count<T: Element>(&self) -> Result<usize> {
        let et = self.element_type();
        let fits = et == Some(T::TYPE)
            || et.map_or(false, |e| e.storage() == T::TYPE)
            || (T::TYPE == ElementType::U16 && matches!(et, Some(ElementType::F16) | Some(ElementType::Bf16)));
        if !fits {
            return Err(Error::invalid(format!("the kernel tensor is {:?}, not {:?}", et, T::TYPE)));
        }
        Ok(self.dims().iter().map(|&d| d.max(0) as usize).product())
    }
}

impl KernelInput<'_> {
    /// The elements; INVALID_ARGUMENT if `T` is not the element type.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        let n = self.element_count::<T>()?;
        // SAFETY: the library passes n dense elements that nothing writes during the call.
        Ok(unsafe { c_slice(self.raw.data as *const T, n) })
    }
}

impl KernelOutput<'_> {
    /// The elements to write. FAILED_PRECONDITION in a launch of several grid points, which run at the same
    /// time over the same results: those use [`KernelOutput::as_mut_slice_shared`].
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        if self.concurrent {
            return Err(Error::new(Code::FailedPrecondition,
                                  "the results are shared by grid points running at once: as_mut_slice_shared"));
        }
        // SAFETY: no other call runs over this memory, and `&mut self` hands out one slice at a time.
        unsafe { self.as_mut_slice_shared() }
    }
    /// The elements to write, in a launch whose grid points run at the same time.
    ///
    /// # Safety
    /// Grid points running at once share this memory: each must write only elements no other grid point
    /// reads or writes, and read only elements it wrote itself. At most one slice per call at a time.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice_shared<T: Element>(&self) -> Result<&mut [T]> {
        let n = self.element_count::<T>()?;
        if n == 0 || self.raw.data.is_null() {
            return Ok(&mut []);
        }
        Ok(std::slice::from_raw_parts_mut(self.raw.data as *mut T, n))
    }
}

impl<'a> KernelCall<'a> {
    fn new(raw: &'a sys::neuronmem_kernel_call_t) -> KernelCall<'a> {
        let grid = unsafe { c_slice(raw.grid, raw.grid_rank) };
        let concurrent = grid.iter().map(|&d| d.max(0)).product::<i64>() > 1;
        KernelCall {
            raw,
            inputs: unsafe { c_slice(raw.inputs, raw.num_inputs) }
                .iter()
                .map(|raw| KernelInput(KernelTensor { raw }))
                .collect(),
            outputs: unsafe { c_slice(raw.outputs, raw.num_outputs) }
                .iter()
                .map(|raw| KernelOutput { tensor: KernelTensor { raw }, concurrent })
                .collect(),
        }
    }
    /// The custom-call target.
    pub fn target(&self) -> String {
        string(self.raw.target)
    }
    /// The registered name (func_name for AwsNeuronCustomNativeKernel).
    pub fn name(&self) -> String {
        string(self.raw.name)
    }
    /// The backend_config as written in the graph (NKI: base64 of JSON); may be empty.
    pub fn backend_config(&self) -> Cow<'_, str> {
        let s = self.raw.backend_config;
        String::from_utf8_lossy(unsafe { c_slice(s.data as *const u8, s.size) })
    }
    /// The launch grid; empty for a plain call.
    pub fn grid(&self) -> &[i64] {
        unsafe { c_slice(self.raw.grid, self.raw.grid_rank) }
    }
    /// This call's grid point.
    pub fn grid_index(&self) -> &[i64] {
        unsafe { c_slice(self.raw.grid_index, self.raw.grid_rank) }
    }
    /// The executing device's id.
    pub fn device(&self) -> i32 {
        self.raw.device
    }
    pub fn inputs(&self) -> &[KernelInput<'a>] {
        &self.inputs
    }
    pub fn outputs(&self) -> &[KernelOutput<'a>] {
        &self.outputs
    }
    /// The results, to write through [`KernelOutput::as_mut_slice`].
    pub fn outputs_mut(&mut self) -> &mut [KernelOutput<'a>] {
        &mut self.outputs
    }
}

/// A new status with `code` and `message`, for the library to take over.
pub(crate) fn new_status(code: Code, message: &str) -> *mut sys::neuronmem_status_t {
    unsafe { sys::neuronmem_status_create(code.raw(), message.as_ptr().cast(), message.len()) }
}

/// The message of a caught panic's payload.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".to_string())
}

unsafe extern "C" fn kernel_trampoline(call: *const sys::neuronmem_kernel_call_t, user_data: *mut c_void)
    -> *mut sys::neuronmem_status_t {
    // SAFETY: user_data is the KernelFn the client owns until it is destroyed, after every call.
    let f = &*(user_data as *const KernelFn);
    match catch_unwind(AssertUnwindSafe(|| f(&mut KernelCall::new(&*call)))) {
        Ok(Ok(())) => ptr::null_mut(),
        Ok(Err(e)) => new_status(e.code(), e.message()),
        Err(panic) => new_status(Code::Internal, &format!("the Rust kernel panicked: {}", panic_message(&*panic))),
    }
}

impl Client {
    /// Registers `kernel` under `name`: a custom call whose target is `name` calls it once, an
    /// AwsNeuronCustomNativeKernel call whose backend_config names func_name = `name` once per grid point
    /// (grid points at the same time, on library threads). Executables compiled from now on use it (those
    /// compiled before keep theirs). The client owns the closure until it is destroyed; it must not call the
    /// library.
    pub fn register_kernel<F>(&self, name: &str, kernel: F) -> Result<()>
    where
        F: Fn(&mut KernelCall<'_>) -> Result<()> + Send + Sync + 'static,
    {
        let cname = CString::new(name).map_err(|_| Error::invalid(format!("{:?} contains a NUL byte", name)))?;
        let boxed: Box<KernelFn> = Box::new(Box::new(kernel));
        let reg = sys::neuronmem_kernel_registration_t {
            struct_size: sys::struct_size!(sys::neuronmem_kernel_registration_t, user_data),
            extension: ptr::null(),
            name: cname.as_ptr(),
            fn_: Some(kernel_trampoline),
            user_data: &*boxed as *const KernelFn as *mut c_void,
        };
        let mut kernels = self.kernels.lock().unwrap_or_else(|p| p.into_inner());
        check(unsafe { sys::neuronmem_client_register_kernel(self.raw(), &reg) })?;
        kernels.push(boxed); // the heap address C holds does not move with the Vec
        Ok(())
    }
}
