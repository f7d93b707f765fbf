use crate::error::{check, Code, Error, Result};
use crate::event::Event;
use crate::kernel::KernelFn;
use crate::{c_slice, string, sys};
use std::ptr::{self, NonNull};
use std::sync::Mutex;

/// Where a memory lives (`neuronmem_memory_kind_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// One NeuronCore's HBM arena.
    Device,
    /// The client's page-locked host arena.
    PinnedHost,
    /// Ordinary pageable host memory.
    UnpinnedHost,
}

impl MemoryKind {
    pub(crate) fn raw(self) -> sys::neuronmem_memory_kind_t {
        match self {
            MemoryKind::Device => sys::NEURONMEM_MEMORY_KIND_DEVICE,
            MemoryKind::PinnedHost => sys::NEURONMEM_MEMORY_KIND_PINNED_HOST,
            MemoryKind::UnpinnedHost => sys::NEURONMEM_MEMORY_KIND_UNPINNED_HOST,
        }
    }

    pub(crate) fn from_raw(k: sys::neuronmem_memory_kind_t) -> Result<MemoryKind> {
        match k {
            sys::NEURONMEM_MEMORY_KIND_DEVICE => Ok(MemoryKind::Device),
            sys::NEURONMEM_MEMORY_KIND_PINNED_HOST => Ok(MemoryKind::PinnedHost),
            sys::NEURONMEM_MEMORY_KIND_UNPINNED_HOST => Ok(MemoryKind::UnpinnedHost),
            _ => Err(Error::new(Code::Unknown, format!("memory kind {} is newer than this binding", k))),
        }
    }
}

/// What to do when the pinned-host arena cannot be page-locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MlockMode {
    #[default]
    BestEffort,
    Required,
    Disabled,
}

/// Client options; zero fields mean the library's defaults (2 cores, 64 MiB per core, 64 MiB pinned).
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub num_cores: u32,
    pub mlock_mode: MlockMode,
    pub device_bytes_per_core: u64,
    pub pinned_host_bytes: u64,
    /// How long every execution that sets no timeout of its own may take from submission before it fails with
    /// DEADLINE_EXCEEDED; None (or zero) = no limit.
    pub execution_timeout: Option<std::time::Duration>,
}

/// A libneuronmem client: NeuronCores, memories and the pinned-host arena. Dropping it destroys it; every
/// device, memory, buffer and host allocation borrows it, so none outlives it.
pub struct Client {
    raw: NonNull<sys::neuronmem_client_t>,
    /// The kernels registered on it (their addresses are the C user_data): freed once it is destroyed.
    pub(crate) kernels: Mutex<Vec<Box<KernelFn>>>,
}

// Every C function on a client is thread-safe except destroy, which takes the client by value (drop/close).
unsafe impl Send for Client {}
unsafe impl Sync for Client {}

impl Client {
    /// Creates a client.
    pub fn new(options: &Options) -> Result<Client> {
        let opts = sys::neuronmem_client_options_t {
            struct_size: sys::struct_size!(sys::neuronmem_client_options_t, execution_timeout_ns),
            extension: ptr::null(),
            num_cores: options.num_cores,
            mlock_mode: match options.mlock_mode {
                MlockMode::BestEffort => sys::NEURONMEM_MLOCK_BEST_EFFORT,
                MlockMode::Required => sys::NEURONMEM_MLOCK_REQUIRED,
                MlockMode::Disabled => sys::NEURONMEM_MLOCK_DISABLED,
            },
            device_bytes_per_core: options.device_bytes_per_core,
            pinned_host_bytes: options.pinned_host_bytes,
            execution_timeout_ns: crate::executable::timeout_ns(options.execution_timeout),
            process_index: 0,
            num_processes: 0,
            kv_get: None,
            kv_put: None,
            kv_user_data: ptr::null_mut(),
            bootstrap_timeout_ns: 0,
            peer_timeout_ns: 0,
            fabric_interface: ptr::null(),
        };
        let mut out = ptr::null_mut();
        check(unsafe { sys::neuronmem_client_create(&opts, &mut out) })?;
        Ok(Client { raw: NonNull::new(out).expect("client_create returned NULL with OK"), kernels: Mutex::default() })
    }

    pub(crate) fn raw(&self) -> *mut sys::neuronmem_client_t {
        self.raw.as_ptr()
    }

    /// Destroys the client, returning the library's error. On an error (a buffer was leaked with
    /// `mem::forget`, so the library refused) the client is leaked as well: it stays valid for those buffers.
    pub fn close(mut self) -> Result<()> {
        let raw = self.raw();
        let kernels = std::mem::take(self.kernels.get_mut().unwrap_or_else(|p| p.into_inner()));
        std::mem::forget(self);
        let r = check(unsafe { sys::neuronmem_client_destroy(raw) });
        if r.is_err() {
            std::mem::forget(kernels); // the client lives on, and may still call them
        }
        r
    }

    fn string(&self, f: unsafe extern "C" fn(*const sys::neuronmem_client_t, *mut sys::neuronmem_string_t)
        -> *mut sys::neuronmem_status_t) -> Result<String> {
        let mut s = sys::neuronmem_string_t { data: ptr::null(), size: 0 };
        check(unsafe { f(self.raw(), &mut s) })?;
        Ok(string(s))
    }

    /// "neuron".
    pub fn platform_name(&self) -> Result<String> {
        self.string(sys::neuronmem_client_platform_name)
    }

    /// E.g. "libneuronmem 0.2.0".
    pub fn platform_version(&self) -> Result<String> {
        self.string(sys::neuronmem_client_platform_version)
    }

    /// The extension structs the client accepts (none in this release).
    pub fn extensions(&self) -> Result<Vec<String>> {
        let mut names = ptr::null();
        let mut n = 0;
        check(unsafe { sys::neuronmem_client_extensions(self.raw(), &mut names, &mut n) })?;
        Ok(unsafe { c_slice(names, n) }.iter().map(|s| string(*s)).collect())
    }

    /// The NeuronCores in id order.
    pub fn devices(&self) -> Result<Vec<Device<'_>>> {
        let mut arr = ptr::null();
        let mut n = 0;
        check(unsafe { sys::neuronmem_client_devices(self.raw(), &mut arr, &mut n) })?;
        Ok(unsafe { c_slice(arr, n) }.iter().map(|&raw| Device { client: self, raw }).collect())
    }

    /// Every memory in id order.
    pub fn memories(&self) -> Result<Vec<Memory<'_>>> {
        let mut arr = ptr::null();
        let mut n = 0;
        check(unsafe { sys::neuronmem_client_memories(self.raw(), &mut arr, &mut n) })?;
        Ok(unsafe { c_slice(arr, n) }.iter().map(|&raw| Memory { client: self, raw }).collect())
    }

    /// The device with global id `id` (NOT_FOUND if none).
    pub fn lookup_device(&self, id: i32) -> Result<Device<'_>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_client_lookup_device(self.raw(), id, &mut raw) })?;
        Ok(Device { client: self, raw })
    }

    /// The memory with id `id` (NOT_FOUND if none).
    pub fn lookup_memory(&self, id: i32) -> Result<Memory<'_>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_client_lookup_memory(self.raw(), id, &mut raw) })?;
        Ok(Memory { client: self, raw })
    }

    /// `size` bytes in the pinned-host arena (alignment 0 = 64).
    pub fn host_allocate(&self, size: u64, alignment: u64) -> Result<HostMemory<'_>> {
        let mut p = ptr::null_mut();
        check(unsafe { sys::neuronmem_client_host_allocate(self.raw(), size, alignment, &mut p) })?;
        Ok(HostMemory {
            client: self,
            ptr: NonNull::new(p as *mut u8).expect("host_allocate returned NULL with OK"),
            len: size as usize,
            pending: Mutex::new(Vec::new()),
            freed: false,
        })
    }

    /// Whether `bytes` lie in the pinned-host arena (only a HostMemory's do).
    pub fn is_pinned(&self, bytes: &[u8]) -> Result<bool> {
        let mut out = false;
        check(unsafe {
            sys::neuronmem_client_host_is_pinned(self.raw(), bytes.as_ptr().cast(), bytes.len() as u64, &mut out)
        })?;
        Ok(out)
    }

    /// A pending event that the caller completes (`Event::complete`).
    pub fn new_event(&self) -> Result<Event> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_event_create(self.raw(), &mut raw) })?;
        Ok(Event::from_raw(raw))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Nothing borrows the client any more, so the library destroys it (its error, if any, has no reader).
        if check(unsafe { sys::neuronmem_client_destroy(self.raw()) }).is_err() {
            // Not destroyed (a leaked buffer or execution): its kernels may still be called.
            std::mem::forget(std::mem::take(self.kernels.get_mut().unwrap_or_else(|p| p.into_inner())));
        }
    }
}

/// A device as PJRT describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceDescription {
    pub id: i32,
    pub process_index: i32,
    pub local_id: i32,
    pub kind: String,
    pub debug_string: String,
    pub to_string: String,
}

/// A NeuronCore, borrowed from its client.
#[derive(Clone, Copy)]
pub struct Device<'c> {
    pub(crate) client: &'c Client,
    pub(crate) raw: *mut sys::neuronmem_device_t,
}
unsafe impl Send for Device<'_> {}
unsafe impl Sync for Device<'_> {}

impl PartialEq for Device<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.raw == o.raw
    }
}

impl std::fmt::Debug for Device<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.describe() {
            Ok(d) => f.write_str(&d.to_string),
            Err(e) => write!(f, "Device({})", e),
        }
    }
}

impl<'c> Device<'c> {
    pub fn client(&self) -> &'c Client {
        self.client
    }

    pub fn describe(&self) -> Result<DeviceDescription> {
        let mut d: sys::neuronmem_device_description_t = unsafe { std::mem::zeroed() };
        d.struct_size = sys::struct_size!(sys::neuronmem_device_description_t, to_string);
        check(unsafe { sys::neuronmem_device_describe(self.raw, &mut d) })?;
        Ok(DeviceDescription {
            id: d.id,
            process_index: d.process_index,
            local_id: d.local_id,
            kind: string(d.kind),
            debug_string: string(d.debug_string),
            to_string: string(d.to_string),
        })
    }

    pub fn id(&self) -> Result<i32> {
        Ok(self.describe()?.id)
    }

    /// The device's own HBM memory.
    pub fn default_memory(&self) -> Result<Memory<'c>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_device_default_memory(self.raw, &mut raw) })?;
        Ok(Memory { client: self.client, raw })
    }

    /// The device's memory of `kind`.
    pub fn memory_of_kind(&self, kind: MemoryKind) -> Result<Memory<'c>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_device_memory_of_kind(self.raw, kind.raw(), &mut raw) })?;
        Ok(Memory { client: self.client, raw })
    }

    /// The memories the device can address, in id order.
    pub fn addressable_memories(&self) -> Result<Vec<Memory<'c>>> {
        let mut arr = ptr::null();
        let mut n = 0;
        check(unsafe { sys::neuronmem_device_addressable_memories(self.raw, &mut arr, &mut n) })?;
        Ok(unsafe { c_slice(arr, n) }.iter().map(|&raw| Memory { client: self.client, raw }).collect())
    }
}

/// A memory as PJRT describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryDescription {
    pub id: i32,
    pub kind: MemoryKind,
    pub kind_name: String,
    pub debug_string: String,
    pub to_string: String,
}

/// A snapshot of a memory's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStats {
    pub capacity: u64,
    pub bytes_in_use: u64,
    pub peak_bytes_in_use: u64,
    pub live_allocations: u64,
    pub largest_free_block: u64,
    pub total_allocations: u64,
    pub is_locked: bool,
    pub is_shared: bool,
}

/// A device HBM, pinned-host or unpinned-host memory, borrowed from its client.
#[derive(Clone, Copy)]
pub struct Memory<'c> {
    pub(crate) client: &'c Client,
    pub(crate) raw: *mut sys::neuronmem_memory_t,
}
unsafe impl Send for Memory<'_> {}
unsafe impl Sync for Memory<'_> {}

impl PartialEq for Memory<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.raw == o.raw
    }
}

impl std::fmt::Debug for Memory<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.describe() {
            Ok(d) => f.write_str(&d.debug_string),
            Err(e) => write!(f, "Memory({})", e),
        }
    }
}

impl<'c> Memory<'c> {
    pub fn client(&self) -> &'c Client {
        self.client
    }

    pub fn describe(&self) -> Result<MemoryDescription> {
        let mut d: sys::neuronmem_memory_description_t = unsafe { std::mem::zeroed() };
        d.struct_size = sys::struct_size!(sys::neuronmem_memory_description_t, to_string);
        check(unsafe { sys::neuronmem_memory_describe(self.raw, &mut d) })?;
        Ok(MemoryDescription {
            id: d.id,
            kind: MemoryKind::from_raw(d.kind_id)?,
            kind_name: string(d.kind),
            debug_string: string(d.debug_string),
            to_string: string(d.to_string),
        })
    }

    /// The stable id: 2k device, 2k+1 pinned_host, 2N+k unpinned_host.
    pub fn id(&self) -> Result<i32> {
        Ok(self.describe()?.id)
    }

    pub fn kind(&self) -> Result<MemoryKind> {
        let mut k = 0;
        check(unsafe { sys::neuronmem_memory_kind(self.raw, &mut k) })?;
        MemoryKind::from_raw(k)
    }

    /// The devices that can address the memory.
    pub fn addressable_devices(&self) -> Result<Vec<Device<'c>>> {
        let mut arr = ptr::null();
        let mut n = 0;
        check(unsafe { sys::neuronmem_memory_addressable_devices(self.raw, &mut arr, &mut n) })?;
        Ok(unsafe { c_slice(arr, n) }.iter().map(|&raw| Device { client: self.client, raw }).collect())
    }

    /// Whether `client` owns the memory.
    pub fn is_owned_by(&self, client: &Client) -> Result<bool> {
        let mut owner = ptr::null_mut();
        check(unsafe { sys::neuronmem_memory_client(self.raw, &mut owner) })?;
        Ok(owner == client.raw())
    }

    pub fn stats(&self) -> Result<MemoryStats> {
        let mut s: sys::neuronmem_memory_stats_t = unsafe { std::mem::zeroed() };
        s.struct_size = sys::struct_size!(sys::neuronmem_memory_stats_t, is_shared);
        check(unsafe { sys::neuronmem_memory_stats(self.raw, &mut s) })?;
        Ok(MemoryStats {
            capacity: s.capacity,
            bytes_in_use: s.bytes_in_use,
            peak_bytes_in_use: s.peak_bytes_in_use,
            live_allocations: s.live_allocations,
            largest_free_block: s.largest_free_block,
            total_allocations: s.total_allocations,
            is_locked: s.is_locked,
            is_shared: s.is_shared,
        })
    }
}

/// Bytes in the client's pinned-host arena: what asynchronous transfers and zero-copy uploads use. Every way
/// to reach the bytes first waits for the transfers in flight that write them (`as_slice`) or touch them at
/// all (`as_mut_slice`, drop), so Rust never sees memory the library is still moving.
pub struct HostMemory<'c> {
    client: &'c Client,
    ptr: NonNull<u8>,
    len: usize,
    pending: Mutex<Vec<(Event, bool)>>, // (transfer, whether it writes the host memory)
    freed: bool,
}
unsafe impl Send for HostMemory<'_> {}
unsafe impl Sync for HostMemory<'_> {}

impl<'c> HostMemory<'c> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn client(&self) -> &'c Client {
        self.client
    }

    fn settle(&self, writers_only: bool) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|(ev, writes)| {
            if writers_only && !*writes {
                return !matches!(ev.is_ready(), Ok(true));
            }
            // The transfer's own error is the event holder's to read; here only its end matters.
            drop(ev.wait(None));
            false
        });
    }

    /// The bytes, once no transfer in flight writes them.
    pub fn as_slice(&self) -> &[u8] {
        self.settle(true);
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes for writing, once no transfer in flight uses them (a zero-copy buffer borrows the memory,
    /// so none exists while this borrow does).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.settle(false);
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The address of [offset, offset+n), checked; registers `ev` once the caller has it.
    pub(crate) fn range(&self, offset: u64, n: u64) -> Result<*mut u8> {
        match offset.checked_add(n) {
            Some(end) if end <= self.len as u64 => Ok(unsafe { self.ptr.as_ptr().add(offset as usize) }),
            _ => Err(Error::invalid(format!(
                "range [{}, {}+{}) is outside the {}-byte host memory",
                offset, offset, n, self.len
            ))),
        }
    }

    pub(crate) fn track(&self, ev: &Event, writes_host: bool) {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).push((ev.clone(), writes_host));
    }

    /// Returns the memory to the arena, reporting the library's error (dropping does the same silently).
    pub fn free(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        if self.freed {
            return Ok(());
        }
        self.settle(false);
        self.freed = true;
        check(unsafe { sys::neuronmem_client_host_free(self.client.raw(), self.ptr.as_ptr().cast()) })
    }
}

impl Drop for HostMemory<'_> {
    fn drop(&mut self) {
        drop(self.release());
    }
}
