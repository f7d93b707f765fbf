use crate::client::{Client, Device, HostMemory, Memory};
use crate::error::{check, Code, Error, Result};
use crate::event::{Event, WaitList};
use crate::{c_slice, sys};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

/// A buffer's element type (`neuronmem_element_type_t`). `C64` / `C128` are complex<f32> / complex<f64>
/// ((re, im) pairs: upload them as bytes, or as `[f32; 2]` / `[f64; 2]` pairs); the 8- and 6-bit floats take one
/// byte each and travel as `u8` bit patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    Pred,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    F16,
    Bf16,
    F32,
    F64,
    C64,
    C128,
    F8E5M2,
    F8E4M3FN,
    F8E4M3B11FNUZ,
    F8E5M2FNUZ,
    F8E4M3FNUZ,
    F8E4M3,
    F8E3M4,
    F8E8M0FNU,
    F6E2M3FN,
    F6E3M2FN,
    /// The sub-byte integers: one byte per element, read and written as `i8` (S4, S2) or `u8` (U4, U2).
    S4,
    U4,
    S2,
    U2,
    /// The 4-bit float (MX): one byte per element, a `u8` bit pattern.
    F4E2M1FN,
}

const ELEMENT_TYPES: [ElementType; 30] = [
    ElementType::Pred,
    ElementType::S8,
    ElementType::S16,
    ElementType::S32,
    ElementType::S64,
    ElementType::U8,
    ElementType::U16,
    ElementType::U32,
    ElementType::U64,
    ElementType::F16,
    ElementType::Bf16,
    ElementType::F32,
    ElementType::F64,
    ElementType::C64,
    ElementType::C128,
    ElementType::F8E5M2,
    ElementType::F8E4M3FN,
    ElementType::F8E4M3B11FNUZ,
    ElementType::F8E5M2FNUZ,
    ElementType::F8E4M3FNUZ,
    ElementType::F8E4M3,
    ElementType::F8E3M4,
    ElementType::F8E8M0FNU,
    ElementType::F6E2M3FN,
    ElementType::F6E3M2FN,
    ElementType::S4,
    ElementType::U4,
    ElementType::S2,
    ElementType::U2,
    ElementType::F4E2M1FN,
];

impl ElementType {
    pub(crate) fn raw(self) -> sys::neuronmem_element_type_t {
        self as i32 // declared in the C enum's order, from 0
    }

    pub(crate) fn from_raw(t: i32) -> Option<ElementType> {
        usize::try_from(t).ok().and_then(|i| ELEMENT_TYPES.get(i).copied())
    }

    /// One of the 8-, 6- or 4-bit float types (one byte each, read and written as `u8` bit patterns).
    pub fn is_small_float(self) -> bool {
        (self.raw() >= ElementType::F8E5M2.raw() && self.raw() <= ElementType::F6E3M2FN.raw())
            || self == ElementType::F4E2M1FN
    }

    /// The Rust element type whose bytes hold this one's elements (one byte each): `i8` for S4 and S2, `u8` for
    /// U4, U2, PRED and the small floats; the type itself otherwise.
    pub(crate) fn storage(self) -> ElementType {
        match self {
            ElementType::S4 | ElementType::S2 => ElementType::S8,
            ElementType::U4 | ElementType::U2 | ElementType::Pred => ElementType::U8,
            t if t.is_small_float() => ElementType::U8,
            t => t,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> u64 {
        unsafe { sys::neuronmem_element_type_size(self.raw()) }
    }
}

/// How the library may use host memory in an upload (PJRT's host-buffer semantics). The safe API has no
/// MUTABLE_ZERO_COPY: memory Rust can read must not be written by the library behind a shared borrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Semantics {
    ImmutableOnlyDuringCall,
    ImmutableUntilTransferCompletes,
    ImmutableZeroCopy,
}

impl Semantics {
    pub(crate) fn raw(self) -> sys::neuronmem_host_buffer_semantics_t {
        match self {
            Semantics::ImmutableOnlyDuringCall => sys::NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL,
            Semantics::ImmutableUntilTransferCompletes => sys::NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES,
            Semantics::ImmutableZeroCopy => sys::NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY,
        }
    }
}

/// A plain element type: any bit pattern is a valid value (so no `bool`: PRED buffers read as `u8`, F16 / BF16 as
/// `u16` bit patterns, the 8- and 6-bit floats as `u8` ones; complex<f32> / complex<f64> as `[f32; 2]` /
/// `[f64; 2]` (re, im) pairs).
///
/// # Safety
/// Implementors must be plain-old-data of exactly `TYPE.size()` bytes, valid for every bit pattern.
pub unsafe trait Element: Copy + Default + 'static {
    const TYPE: ElementType;
}
unsafe impl Element for i8 {
    const TYPE: ElementType = ElementType::S8;
}
unsafe impl Element for i16 {
    const TYPE: ElementType = ElementType::S16;
}
unsafe impl Element for i32 {
    const TYPE: ElementType = ElementType::S32;
}
unsafe impl Element for i64 {
    const TYPE: ElementType = ElementType::S64;
}
unsafe impl Element for u8 {
    const TYPE: ElementType = ElementType::U8;
}
unsafe impl Element for u16 {
    const TYPE: ElementType = ElementType::U16;
}
unsafe impl Element for u32 {
    const TYPE: ElementType = ElementType::U32;
}
unsafe impl Element for u64 {
    const TYPE: ElementType = ElementType::U64;
}
unsafe impl Element for f32 {
    const TYPE: ElementType = ElementType::F32;
}
unsafe impl Element for f64 {
    const TYPE: ElementType = ElementType::F64;
}
unsafe impl Element for [f32; 2] {
    const TYPE: ElementType = ElementType::C64;
}
unsafe impl Element for [f64; 2] {
    const TYPE: ElementType = ElementType::C128;
}

fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), std::mem::size_of_val(data)) }
}

fn as_bytes_mut<T: Element>(data: &mut [T]) -> &mut [u8] {
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast(), std::mem::size_of_val(data)) }
}

/// The dense size of a shape, checked (a negative dimension, an overflow).
pub(crate) fn byte_size(et: ElementType, dims: &[i64]) -> Result<u64> {
    let mut n = et.size();
    for (i, &d) in dims.iter().enumerate() {
        let d = u64::try_from(d).map_err(|_| Error::invalid(format!("dims[{}] = {} is negative", i, d)))?;
        n = n.checked_mul(d).ok_or_else(|| Error::invalid(format!("the shape {:?} overflows", dims)))?;
    }
    Ok(n)
}

fn dims_ptr(dims: &[i64]) -> *const i64 {
    if dims.is_empty() {
        ptr::null()
    } else {
        dims.as_ptr()
    }
}

fn data_ptr(b: &[u8]) -> *const u8 {
    if b.is_empty() {
        ptr::null()
    } else {
        b.as_ptr()
    }
}

fn out_event(async_: bool, ev: &mut *mut sys::neuronmem_event_t) -> *mut *mut sys::neuronmem_event_t {
    if async_ {
        ev
    } else {
        ptr::null_mut()
    }
}

/// A dense array in one memory. It borrows its client (and, when it aliases or still reads them, the host
/// memory it was uploaded from), and is destroyed on drop.
pub struct Buffer<'a> {
    client: &'a Client,
    raw: *mut sys::neuronmem_buffer_t,
    // After dropping the handle, wait for this (the library is done with the host data) before the borrow or
    // the owned copy below ends.
    host_done: Option<Event>,
    _owned: Option<Box<[u8]>>,
}
// Every buffer function is thread-safe.
unsafe impl Send for Buffer<'_> {}
unsafe impl Sync for Buffer<'_> {}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        unsafe { sys::neuronmem_buffer_destroy(self.raw) };
        if let Some(ev) = self.host_done.take() {
            drop(ev.wait(None));
        }
    }
}

impl<'c> Memory<'c> {
    fn upload_raw(&self, data: *const u8, et: ElementType, dims: &[i64], sem: Semantics, wait: &[&Event],
                     want_done: bool) -> Result<(*mut sys::neuronmem_buffer_t, Option<Event>)> {
        let waits = WaitList::new(wait);
        let args = sys::neuronmem_buffer_from_host_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_buffer_from_host_args_t, wait),
            extension: ptr::null(),
            data: data.cast(),
            element_type: et.raw(),
            host_buffer_semantics: sem.raw(),
            dims: dims_ptr(dims),
            num_dims: dims.len(),
            byte_strides: ptr::null(),
            memory: self.raw,
            wait: waits.raw(),
        };
        let mut out = ptr::null_mut();
        let mut done = ptr::null_mut();
        let done_out = if want_done { &mut done as *mut _ } else { ptr::null_mut() };
        let client = self.client.raw();
        check(unsafe { sys::neuronmem_buffer_from_host(client, &args, &mut out, ptr::null_mut(), done_out) })?;
        Ok((out, if want_done { Some(Event::from_raw(done)) } else { None }))
    }

    /// Uploads dense bytes of a type and shape into this memory (any kind, any core); copied during the call.
    pub fn buffer_from_bytes(&self, et: ElementType, dims: &[i64], data: &[u8], wait: &[&Event])
        -> Result<Buffer<'c>> {
        let n = byte_size(et, dims)?;
        if data.len() as u64 != n {
            return Err(Error::invalid(format!("{} bytes of data for a {:?}{:?} buffer of {} bytes", data.len(), et,
                                              dims, n)));
        }
        let (raw, _) = self.upload_raw(data_ptr(data), et, dims, Semantics::ImmutableOnlyDuringCall, wait, false)?;
        Ok(Buffer { client: self.client, raw, host_done: None, _owned: None })
    }

    /// Uploads a slice of prod(dims) elements; copied during the call.
    pub fn buffer_from_slice<T: Element>(&self, dims: &[i64], data: &[T], wait: &[&Event]) -> Result<Buffer<'c>> {
        self.buffer_from_bytes(T::TYPE, dims, as_bytes(data), wait)
    }

    /// Uploads bytes [offset, offset+size) of pinned-host memory. With `ImmutableZeroCopy` into a pinned_host
    /// memory the buffer aliases them (`is_zero_copy`); the buffer borrows `host` for its whole life.
    pub fn buffer_from_host<'h>(&self, host: &'h HostMemory<'c>, offset: u64, et: ElementType, dims: &[i64],
                                sem: Semantics, wait: &[&Event]) -> Result<Buffer<'h>>
    where
        'c: 'h,
    {
        let p = host.range(offset, byte_size(et, dims)?)?;
        let copied_now = sem == Semantics::ImmutableOnlyDuringCall;
        let (raw, done) = self.upload_raw(p, et, dims, sem, wait, !copied_now)?;
        Ok(Buffer { client: self.client, raw, host_done: done, _owned: None })
    }

    /// An uninitialised buffer (a negative dimension is the library's INVALID_ARGUMENT).
    pub fn allocate(&self, et: ElementType, dims: &[i64]) -> Result<Buffer<'c>> {
        let args = sys::neuronmem_buffer_allocate_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_buffer_allocate_args_t, num_dims),
            extension: ptr::null(),
            client: self.client.raw(),
            memory: self.raw,
            element_type: et.raw(),
            dims: dims_ptr(dims),
            num_dims: dims.len(),
        };
        let mut out = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_allocate(&args, &mut out) })?;
        Ok(Buffer { client: self.client, raw: out, host_done: None, _owned: None })
    }
}

impl Client {
    /// Uploads every (memory, type, shape, bytes) in one batched submission with one event for all; the bytes
    /// are copied during the call. On failure no buffer is created.
    pub fn upload_batch<'c>(&'c self, entries: &[(Memory<'c>, ElementType, &[i64], &[u8])])
        -> Result<(Vec<Buffer<'c>>, Event)> {
        if entries.is_empty() {
            return Err(Error::invalid("upload_batch: no entries"));
        }
        let mut args = Vec::with_capacity(entries.len());
        for (i, (mem, et, dims, data)) in entries.iter().enumerate() {
            let n = byte_size(*et, dims).map_err(|e| Error::invalid(format!("entry {}: {}", i, e.message())))?;
            if data.len() as u64 != n {
                return Err(Error::invalid(format!("entry {}: {} bytes of data for {}", i, data.len(), n)));
            }
            args.push(sys::neuronmem_buffer_from_host_args_t {
                struct_size: sys::struct_size!(sys::neuronmem_buffer_from_host_args_t, wait),
                extension: ptr::null(),
                data: data_ptr(data).cast(),
                element_type: et.raw(),
                host_buffer_semantics: Semantics::ImmutableOnlyDuringCall.raw(),
                dims: dims_ptr(dims),
                num_dims: dims.len(),
                byte_strides: ptr::null(),
                memory: mem.raw,
                wait: crate::NO_EVENTS,
            });
        }
        let mut outs = vec![ptr::null_mut(); entries.len()];
        let mut ready = ptr::null_mut();
        check(unsafe {
            sys::neuronmem_buffer_from_host_batch(self.raw(), args.as_ptr(), args.len(), outs.as_mut_ptr(), &mut ready)
        })?;
        let bufs = outs.into_iter().map(|raw| Buffer { client: self, raw, host_done: None, _owned: None }).collect();
        Ok((bufs, Event::from_raw(ready)))
    }
}

impl<'a> Buffer<'a> {
    pub(crate) fn raw(&self) -> *mut sys::neuronmem_buffer_t {
        self.raw
    }

    pub(crate) fn from_parts(client: &'a Client, raw: *mut sys::neuronmem_buffer_t, host_done: Option<Event>,
                             owned: Option<Box<[u8]>>) -> Buffer<'a> {
        Buffer { client, raw, host_done, _owned: owned }
    }

    /// Copies the buffer into a new one in `memory` (any kind, any core of the same client) after `wait`.
    pub fn copy_to<'c>(&self, memory: &Memory<'c>, wait: &[&Event]) -> Result<Buffer<'c>> {
        let waits = WaitList::new(wait);
        let args = sys::neuronmem_buffer_copy_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_buffer_copy_args_t, wait),
            extension: ptr::null(),
            src: self.raw,
            memory: memory.raw,
            wait: waits.raw(),
        };
        let mut out = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_copy_to_memory(&args, &mut out, ptr::null_mut()) })?;
        Ok(Buffer { client: memory.client, raw: out, host_done: None, _owned: None })
    }

    fn read_raw(&self, dst: *mut u8, offset: u64, size: u64, wait: &[&Event], async_: bool)
        -> Result<Option<Event>> {
        let waits = WaitList::new(wait);
        let args = sys::neuronmem_buffer_read_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_buffer_read_args_t, wait),
            extension: ptr::null(),
            buffer: self.raw,
            offset,
            size,
            dst: dst.cast(),
            wait: waits.raw(),
        };
        let mut ev = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_read(&args, out_event(async_, &mut ev)) })?;
        Ok(if async_ { Some(Event::from_raw(ev)) } else { None })
    }

    /// Reads `dst.len()` bytes from `offset` into `dst` after `wait`; returns when they are there.
    pub fn read(&self, dst: &mut [u8], offset: u64, wait: &[&Event]) -> Result<()> {
        self.read_raw(dst.as_mut_ptr(), offset, dst.len() as u64, wait, false).map(|_| ())
    }

    /// Reads the whole buffer into the front of `dst`; a `dst` shorter than the buffer is INVALID_ARGUMENT.
    pub fn read_all(&self, dst: &mut [u8]) -> Result<()> {
        let n = self.size()?;
        if (dst.len() as u64) < n {
            return Err(Error::invalid(format!(
                "the output slice of {} bytes is smaller than the buffer's {} bytes",
                dst.len(),
                n
            )));
        }
        self.read(&mut dst[..n as usize], 0, &[])
    }

    /// Reads the whole buffer into `dst`, whose element type must match (u8 for PRED and the 8- and 6-bit floats,
    /// u16 for F16 and BF16).
    pub fn read_into<T: Element>(&self, dst: &mut [T]) -> Result<()> {
        let et = self.element_type()?;
        let fits = T::TYPE == et
            || (T::TYPE == ElementType::U16 && matches!(et, ElementType::F16 | ElementType::Bf16))
            || T::TYPE == et.storage();
        if !fits {
            return Err(Error::invalid(format!("a {:?} output for a {:?} buffer", T::TYPE, et)));
        }
        self.read_all(as_bytes_mut(dst))
    }

    /// The whole buffer as a new Vec.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let n = self.size()? as usize / std::mem::size_of::<T>();
        let mut v = vec![T::default(); n];
        self.read_into(&mut v)?;
        Ok(v)
    }

    /// Reads [offset, offset+size) into pinned-host memory at `host_offset` without blocking; `host` is
    /// borrowed mutably for the call, and its slices wait for the transfer.
    pub fn read_async(&self, host: &mut HostMemory<'_>, host_offset: u64, offset: u64, size: u64,
                      wait: &[&Event]) -> Result<Event> {
        let p = host.range(host_offset, size)?;
        let ev = self.read_raw(p, offset, size, wait, true)?.expect("an event");
        host.track(&ev, true);
        Ok(ev)
    }

    fn write_raw(&self, src: *const u8, size: u64, offset: u64, wait: &[&Event], async_: bool)
        -> Result<Option<Event>> {
        let waits = WaitList::new(wait);
        let args = sys::neuronmem_buffer_write_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_buffer_write_args_t, wait),
            extension: ptr::null(),
            buffer: self.raw,
            offset,
            size,
            src: src.cast(),
            wait: waits.raw(),
        };
        let mut ev = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_write(&args, out_event(async_, &mut ev)) })?;
        Ok(if async_ { Some(Event::from_raw(ev)) } else { None })
    }

    /// Writes `src` into the buffer at `offset`, in place, after `wait`; returns when the bytes are there.
    pub fn write(&self, src: &[u8], offset: u64, wait: &[&Event]) -> Result<()> {
        self.write_raw(data_ptr(src), src.len() as u64, offset, wait, false).map(|_| ())
    }

    /// Writes `size` bytes of pinned-host memory from `host_offset` at `offset` without blocking.
    pub fn write_async(&self, host: &HostMemory<'_>, host_offset: u64, size: u64, offset: u64, wait: &[&Event])
        -> Result<Event> {
        let p = host.range(host_offset, size)?;
        let ev = self.write_raw(p, size, offset, wait, true)?.expect("an event");
        host.track(&ev, false);
        Ok(ev)
    }

    fn chunk_raw(&self, data: *const u8, size: u64, offset: u64, is_last: bool, wait: &[&Event], async_: bool)
        -> Result<Option<Event>> {
        let waits = WaitList::new(wait);
        let args = sys::neuronmem_buffer_chunk_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_buffer_chunk_args_t, is_last),
            extension: ptr::null(),
            buffer: self.raw,
            offset,
            size,
            data: data.cast(),
            wait: waits.raw(),
            is_last,
        };
        let mut ev = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_upload_chunk(&args, out_event(async_, &mut ev)) })?;
        Ok(if async_ { Some(Event::from_raw(ev)) } else { None })
    }

    /// One chunk of a chunked upload into an allocated buffer; returns when it landed. `is_last` makes the
    /// content defined once every chunk is there.
    pub fn upload_chunk(&self, data: &[u8], offset: u64, is_last: bool, wait: &[&Event]) -> Result<()> {
        self.chunk_raw(data_ptr(data), data.len() as u64, offset, is_last, wait, false).map(|_| ())
    }

    /// `upload_chunk` from pinned-host memory, without blocking.
    pub fn upload_chunk_async(&self, host: &HostMemory<'_>, host_offset: u64, size: u64, offset: u64, is_last: bool,
                              wait: &[&Event]) -> Result<Event> {
        let p = host.range(host_offset, size)?;
        let ev = self.chunk_raw(p, size, offset, is_last, wait, true)?.expect("an event");
        host.track(&ev, false);
        Ok(ev)
    }

    fn load_file_raw(&self, path: &Path, file_offset: u64, size: u64, buffer_offset: u64, wait: &[&Event],
                     async_: bool) -> Result<Option<Event>> {
        let cpath = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| Error::invalid(format!("path {:?} contains a NUL byte", path)))?;
        let waits = WaitList::new(wait);
        let args = sys::neuronmem_buffer_load_file_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_buffer_load_file_args_t, wait),
            extension: ptr::null(),
            buffer: self.raw,
            path: cpath.as_ptr(), // the library opens the file during the call
            file_offset,
            size,
            buffer_offset,
            wait: waits.raw(),
        };
        let mut ev = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_load_file(&args, out_event(async_, &mut ev)) })?;
        Ok(if async_ { Some(Event::from_raw(ev)) } else { None })
    }

    /// Loads bytes [file_offset, file_offset+size) of a regular file at `buffer_offset`; returns when done.
    pub fn load_file(&self, path: &Path, file_offset: u64, size: u64, buffer_offset: u64, wait: &[&Event])
        -> Result<()> {
        self.load_file_raw(path, file_offset, size, buffer_offset, wait, false).map(|_| ())
    }

    /// `load_file` without blocking (io_uring).
    pub fn load_file_async(&self, path: &Path, file_offset: u64, size: u64, buffer_offset: u64, wait: &[&Event])
        -> Result<Event> {
        Ok(self.load_file_raw(path, file_offset, size, buffer_offset, wait, true)?.expect("an event"))
    }

    /// An event ready when the content is defined (upload, copy, last chunk).
    pub fn ready_event(&self) -> Result<Event> {
        let mut ev = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_ready_event(self.raw, &mut ev) })?;
        Ok(Event::from_raw(ev))
    }

    /// Releases the content once pending transfers end; later calls on the buffer fail with
    /// FAILED_PRECONDITION (the handle lives until drop).
    pub fn delete(&self) -> Result<()> {
        check(unsafe { sys::neuronmem_buffer_delete(self.raw) })
    }

    pub fn memory(&self) -> Result<Memory<'a>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_memory(self.raw, &mut raw) })?;
        Ok(Memory { client: self.client, raw })
    }

    /// The device whose queue moves the buffer's bytes.
    pub fn device(&self) -> Result<Device<'a>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_buffer_device(self.raw, &mut raw) })?;
        Ok(Device { client: self.client, raw })
    }

    pub fn element_type(&self) -> Result<ElementType> {
        let mut t = 0;
        check(unsafe { sys::neuronmem_buffer_element_type(self.raw, &mut t) })?;
        ElementType::from_raw(t)
            .ok_or_else(|| Error::new(Code::Unknown, format!("element type {} is newer than this binding", t)))
    }

    pub fn dims(&self) -> Result<Vec<i64>> {
        let mut d = ptr::null();
        let mut n = 0;
        check(unsafe { sys::neuronmem_buffer_dims(self.raw, &mut d, &mut n) })?;
        Ok(unsafe { c_slice(d, n) }.to_vec())
    }

    /// Bytes the buffer occupies (dense).
    pub fn size(&self) -> Result<u64> {
        let mut n = 0;
        check(unsafe { sys::neuronmem_buffer_on_device_size(self.raw, &mut n) })?;
        Ok(n)
    }

    pub fn is_deleted(&self) -> Result<bool> {
        let mut v = false;
        check(unsafe { sys::neuronmem_buffer_is_deleted(self.raw, &mut v) })?;
        Ok(v)
    }

    pub fn is_zero_copy(&self) -> Result<bool> {
        let mut v = false;
        check(unsafe { sys::neuronmem_buffer_is_zero_copy(self.raw, &mut v) })?;
        Ok(v)
    }
}
