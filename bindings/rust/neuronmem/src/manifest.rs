use crate::buffer::{byte_size, Buffer, ElementType, Semantics};
use crate::client::{Device, HostMemory, Memory, MemoryKind};
use crate::error::{check, Code, Error, Result};
use crate::event::Event;
use crate::{c_slice, string, sys};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

/// Where unannotated results live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PlacementPolicy {
    /// Results without mhlo.memory_kind live in `device`.
    #[default]
    Device,
    /// On the device only if every argument is there (torch-neuronx's rule).
    TorchNeuronx,
}

/// Load options; the default is entry "main", 2 cores, the device policy.
#[derive(Clone, Debug, Default)]
pub struct ManifestOptions {
    pub entry: Option<String>,
    /// The name used in error messages (load_text; load_file uses the path).
    pub filename: Option<String>,
    pub policy: PlacementPolicy,
    pub num_cores: u32,
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(format!("{:?} contains a NUL byte", s)))
}

fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |c| c.as_ptr())
}

/// The placement manifest of compiled StableHLO: where every argument and result of the entry function
/// lives. Immutable, so it is `Send + Sync`.
pub struct Manifest {
    raw: *mut sys::neuronmem_manifest_t,
}
unsafe impl Send for Manifest {}
unsafe impl Sync for Manifest {}

impl Drop for Manifest {
    fn drop(&mut self) {
        unsafe { sys::neuronmem_manifest_destroy(self.raw) }
    }
}

/// An argument or result of the entry function.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub index: u32,
    pub memory_kind: MemoryKind,
    /// SSA name ("arg0") or jax.result_info.
    pub name: String,
    /// As written: "f32", "bf16", "i1", ..., "tuple", "token".
    pub element_name: String,
    /// The buffer element type to upload with, if one fits.
    pub element_type: Option<ElementType>,
    pub kind_explicit: bool,
    /// -1 for a dynamic dimension.
    pub dims: Vec<i64>,
    pub aliasing_output: i64,
    pub buffer_donor: bool,
    pub line: u32,
    pub column: u32,
    pub attributes: BTreeMap<String, String>,
}

impl Value {
    /// The dense size in bytes (UNIMPLEMENTED without an element type, INVALID_ARGUMENT for a dynamic shape).
    pub fn size(&self) -> Result<u64> {
        match self.element_type {
            Some(et) => byte_size(et, &self.dims),
            None => Err(Error::new(Code::Unimplemented, format!("{} has no buffer element type", self.element_name))),
        }
    }
}

/// An intra-graph move between memory kinds.
#[derive(Clone, Debug, PartialEq)]
pub struct Move {
    pub function: String,
    pub value: String,
    pub result: String,
    pub spelling: String,
    pub from_kind: String,
    pub to_kind: String,
    pub from_memory_kind: MemoryKind,
    pub to_memory_kind: MemoryKind,
    pub element_name: String,
    pub dims: Vec<i64>,
    pub line: u32,
    pub column: u32,
}

/// A host-compute region.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCompute {
    pub op: String,
    pub function: String,
    pub line: u32,
    pub column: u32,
}

/// A custom NKI kernel with its decoded backend_config.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub function: String,
    pub func_name: String,
    pub binary: String,
    pub grid: Vec<i64>,
    pub input_names: Vec<String>,
    pub output_names: Vec<String>,
    pub num_operands: u32,
    pub num_results: u32,
    pub line: u32,
    pub column: u32,
}

/// A send or recv.
#[derive(Clone, Debug, PartialEq)]
pub struct Channel {
    pub function: String,
    pub op: String,
    pub handle: i64,
    pub channel_type: i32,
    pub is_host_transfer: bool,
    pub source_target_pairs: Vec<(i64, i64)>,
    pub num_payloads: usize,
    pub line: u32,
    pub column: u32,
}

/// A `stablehlo.composite` (jax.lax.composite, quantized patterns): it runs its decomposition function unless a
/// kernel registered under its name takes it over.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Composite {
    pub function: String,
    pub name: String,
    pub decomposition: String,
    /// 0 when absent (the spec's default).
    pub version: i64,
    /// composite_attributes as (key, value as written), in order.
    pub attributes: Vec<(String, String)>,
    pub line: u32,
    pub column: u32,
}

/// Every move, host-compute region, kernel, custom-call target (with its call count), channel, warning and
/// composite.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Parts {
    pub moves: Vec<Move>,
    pub host_compute: Vec<HostCompute>,
    pub kernels: Vec<Kernel>,
    pub custom_call_targets: BTreeMap<String, u64>,
    pub channels: Vec<Channel>,
    pub warnings: Vec<String>,
    pub composites: Vec<Composite>,
}

/// One argument's host data for `Manifest::upload_arguments`: pinned-host memory (pinned_host arguments then
/// upload zero-copy) or bytes (copied, into a copy the buffer owns when the library reads them later).
pub enum UploadArgument<'h, 'c> {
    Host(&'h HostMemory<'c>, u64),
    Bytes(&'h [u8]),
}

unsafe extern "C" fn collect_entry(name: sys::neuronmem_string_t, user_data: *mut c_void) {
    let names = &mut *(user_data as *mut Vec<String>);
    names.push(string(name));
}

unsafe extern "C" fn collect_bytes(data: *const c_void, size: usize, user_data: *mut c_void) {
    let out = &mut *(user_data as *mut Vec<u8>);
    out.clear();
    if size > 0 {
        out.extend_from_slice(std::slice::from_raw_parts(data as *const u8, size));
    }
}

fn zeroed<T>() -> T {
    // SAFETY: only used for the header's plain structs (integers, pointers, bools): all-zero is valid.
    unsafe { std::mem::zeroed() }
}

impl Manifest {
    pub(crate) fn raw(&self) -> *const sys::neuronmem_manifest_t {
        self.raw
    }

    /// Loads the manifest from StableHLO text.
    pub fn load_text(text: &str, options: &ManifestOptions) -> Result<Manifest> {
        let entry = options.entry.as_deref().map(cstring).transpose()?;
        let filename = options.filename.as_deref().map(cstring).transpose()?;
        let opts = Self::options(&entry, &filename, options);
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_manifest_load_text(text.as_ptr().cast(), text.len(), &opts, &mut raw) })?;
        Ok(Manifest { raw })
    }

    /// Loads the manifest from a StableHLO file.
    pub fn load_file(path: &Path, options: &ManifestOptions) -> Result<Manifest> {
        let cpath = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| Error::invalid(format!("path {:?} contains a NUL byte", path)))?;
        let entry = options.entry.as_deref().map(cstring).transpose()?;
        let opts = Self::options(&entry, &None, options);
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_manifest_load_file(cpath.as_ptr(), &opts, &mut raw) })?;
        Ok(Manifest { raw })
    }

    fn options(entry: &Option<CString>, filename: &Option<CString>, o: &ManifestOptions)
        -> sys::neuronmem_manifest_options_t {
        sys::neuronmem_manifest_options_t {
            struct_size: sys::struct_size!(sys::neuronmem_manifest_options_t, num_cores),
            extension: ptr::null(),
            entry: opt_ptr(entry),
            filename: opt_ptr(filename),
            policy: match o.policy {
                PlacementPolicy::Device => sys::NEURONMEM_PLACEMENT_POLICY_DEVICE,
                PlacementPolicy::TorchNeuronx => sys::NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX,
            },
            num_cores: o.num_cores,
        }
    }

    /// Loads a manifest from its JSON form (`to_json`).
    pub fn load_json(json: &str) -> Result<Manifest> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_manifest_load_json(json.as_ptr().cast(), json.len(), &mut raw) })?;
        Ok(Manifest { raw })
    }

    /// The public functions of StableHLO text in source order: the entries a manifest may load.
    pub fn list_entries(text: &str, filename: Option<&str>) -> Result<Vec<String>> {
        let filename = filename.map(cstring).transpose()?;
        let mut names: Vec<String> = Vec::new();
        check(unsafe {
            sys::neuronmem_manifest_list_entries(text.as_ptr().cast(), text.len(), opt_ptr(&filename),
                                                 Some(collect_entry), &mut names as *mut Vec<String> as *mut c_void)
        })?;
        Ok(names)
    }

    /// StableHLO text (or an artifact) as a StableHLO portable artifact: the vhlo MLIR bytecode jax.export
    /// ships, for StableHLO `target` ("1.9.0"; None = the newest the library reads, also its producer
    /// "StableHLO_v<version>"). `filename` (None = "<input>") prefixes parse errors and is the file of the ops'
    /// locations. InvalidArgument for bad text, a target outside 1.0.0 to the newest, more than one module, or a
    /// program vhlo cannot hold at the target (chlo ops, an attribute of a newer op version), naming the op.
    pub fn write_artifact(text: impl AsRef<[u8]>, target: Option<&str>, filename: Option<&str>) -> Result<Vec<u8>> {
        let text = text.as_ref();
        let filename = filename.map(cstring).transpose()?;
        let target = target.map(cstring).transpose()?;
        let mut out: Vec<u8> = Vec::new();
        check(unsafe {
            sys::neuronmem_manifest_write_artifact(text.as_ptr().cast(), text.len(), opt_ptr(&filename),
                                                   opt_ptr(&target), Some(collect_bytes),
                                                   &mut out as *mut Vec<u8> as *mut c_void)
        })?;
        Ok(out)
    }

    pub fn to_json(&self) -> Result<String> {
        let mut s = sys::neuronmem_string_t { data: ptr::null(), size: 0 };
        check(unsafe { sys::neuronmem_manifest_to_json(self.raw, &mut s) })?;
        Ok(string(s))
    }

    /// (module name, entry function name).
    pub fn entry(&self) -> Result<(String, String)> {
        let mut m = sys::neuronmem_string_t { data: ptr::null(), size: 0 };
        let mut e = m;
        check(unsafe { sys::neuronmem_manifest_entry(self.raw, &mut m, &mut e) })?;
        Ok((string(m), string(e)))
    }

    pub fn counts(&self) -> Result<sys::neuronmem_manifest_counts_t> {
        let mut c: sys::neuronmem_manifest_counts_t = zeroed();
        c.struct_size = sys::struct_size!(sys::neuronmem_manifest_counts_t, num_composites);
        check(unsafe { sys::neuronmem_manifest_counts(self.raw, &mut c) })?;
        Ok(c)
    }

    fn values(&self, is_result: bool) -> Result<Vec<Value>> {
        let c = self.counts()?;
        let n = if is_result { c.num_results } else { c.num_arguments };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut v: sys::neuronmem_manifest_value_t = zeroed();
            v.struct_size = sys::struct_size!(sys::neuronmem_manifest_value_t, num_attributes);
            check(unsafe {
                if is_result {
                    sys::neuronmem_manifest_result(self.raw, i, &mut v)
                } else {
                    sys::neuronmem_manifest_argument(self.raw, i, &mut v)
                }
            })?;
            let mut attributes = BTreeMap::new();
            for a in 0..v.num_attributes {
                let mut k = sys::neuronmem_string_t { data: ptr::null(), size: 0 };
                let mut val = k;
                check(unsafe { sys::neuronmem_manifest_value_attribute(self.raw, is_result, i, a, &mut k, &mut val) })?;
                attributes.insert(string(k), string(val));
            }
            out.push(Value {
                index: v.index,
                memory_kind: MemoryKind::from_raw(v.memory_kind)?,
                name: string(v.name),
                element_name: string(v.element_type),
                element_type: ElementType::from_raw(v.buffer_element_type),
                kind_explicit: v.kind_explicit,
                dims: unsafe { c_slice(v.dims, v.num_dims) }.to_vec(),
                aliasing_output: v.aliasing_output,
                buffer_donor: v.buffer_donor,
                line: v.line,
                column: v.column,
                attributes,
            });
        }
        Ok(out)
    }

    pub fn arguments(&self) -> Result<Vec<Value>> {
        self.values(false)
    }

    pub fn results(&self) -> Result<Vec<Value>> {
        self.values(true)
    }

    /// Reads every move, host-compute region, kernel, custom-call target, channel, warning and composite.
    pub fn parts(&self) -> Result<Parts> {
        let c = self.counts()?;
        let mut p = Parts::default();
        let empty = sys::neuronmem_string_t { data: ptr::null(), size: 0 };
        for i in 0..c.num_moves {
            let mut m: sys::neuronmem_manifest_move_t = zeroed();
            m.struct_size = sys::struct_size!(sys::neuronmem_manifest_move_t, column);
            check(unsafe { sys::neuronmem_manifest_move(self.raw, i, &mut m) })?;
            p.moves.push(Move {
                function: string(m.function),
                value: string(m.value),
                result: string(m.result),
                spelling: string(m.spelling),
                from_kind: string(m.from_kind),
                to_kind: string(m.to_kind),
                from_memory_kind: MemoryKind::from_raw(m.from_memory_kind)?,
                to_memory_kind: MemoryKind::from_raw(m.to_memory_kind)?,
                element_name: string(m.element_type),
                dims: unsafe { c_slice(m.dims, m.num_dims) }.to_vec(),
                line: m.line,
                column: m.column,
            });
        }
        for i in 0..c.num_host_compute {
            let (mut op, mut func, mut line, mut column) = (empty, empty, 0u32, 0u32);
            check(unsafe {
                sys::neuronmem_manifest_host_compute(self.raw, i, &mut op, &mut func, &mut line, &mut column)
            })?;
            p.host_compute.push(HostCompute { op: string(op), function: string(func), line, column });
        }
        for i in 0..c.num_kernels {
            let mut k: sys::neuronmem_manifest_kernel_t = zeroed();
            k.struct_size = sys::struct_size!(sys::neuronmem_manifest_kernel_t, column);
            check(unsafe { sys::neuronmem_manifest_kernel(self.raw, i, &mut k) })?;
            let io = |is_output: bool, n: usize| -> Result<Vec<String>> {
                (0..n)
                    .map(|j| {
                        let mut s = empty;
                        check(unsafe { sys::neuronmem_manifest_kernel_io_name(self.raw, i, is_output, j, &mut s) })?;
                        Ok(string(s))
                    })
                    .collect()
            };
            p.kernels.push(Kernel {
                function: string(k.function),
                func_name: string(k.func_name),
                binary: string(k.binary),
                grid: unsafe { c_slice(k.grid, k.grid_rank) }.to_vec(),
                input_names: io(false, k.num_input_names)?,
                output_names: io(true, k.num_output_names)?,
                num_operands: k.num_operands,
                num_results: k.num_results,
                line: k.line,
                column: k.column,
            });
        }
        for i in 0..c.num_custom_call_targets {
            let (mut s, mut n) = (empty, 0u64);
            check(unsafe { sys::neuronmem_manifest_custom_call_target(self.raw, i, &mut s, &mut n) })?;
            p.custom_call_targets.insert(string(s), n);
        }
        for i in 0..c.num_channels {
            let mut ch: sys::neuronmem_manifest_channel_t = zeroed();
            ch.struct_size = sys::struct_size!(sys::neuronmem_manifest_channel_t, column);
            check(unsafe { sys::neuronmem_manifest_channel(self.raw, i, &mut ch) })?;
            let flat = unsafe { c_slice(ch.source_target_pairs, 2 * ch.num_pairs) };
            p.channels.push(Channel {
                function: string(ch.function),
                op: string(ch.op),
                handle: ch.handle,
                channel_type: ch.type_,
                is_host_transfer: ch.is_host_transfer,
                source_target_pairs: flat.chunks(2).map(|pair| (pair[0], pair[1])).collect(),
                num_payloads: ch.num_payloads,
                line: ch.line,
                column: ch.column,
            });
        }
        for i in 0..c.num_warnings {
            let mut s = empty;
            check(unsafe { sys::neuronmem_manifest_warning(self.raw, i, &mut s) })?;
            p.warnings.push(string(s));
        }
        for i in 0..c.num_composites {
            let mut k: sys::neuronmem_manifest_composite_t = zeroed();
            k.struct_size = sys::struct_size!(sys::neuronmem_manifest_composite_t, column);
            check(unsafe { sys::neuronmem_manifest_composite(self.raw, i, &mut k) })?;
            let attributes = (0..k.num_attributes)
                .map(|j| {
                    let (mut key, mut value) = (empty, empty);
                    check(unsafe {
                        sys::neuronmem_manifest_composite_attribute(self.raw, i, j, &mut key, &mut value)
                    })?;
                    Ok((string(key), string(value)))
                })
                .collect::<Result<Vec<_>>>()?;
            p.composites.push(Composite {
                function: string(k.function),
                name: string(k.name),
                decomposition: string(k.decomposition),
                version: k.version,
                attributes,
                line: k.line,
                column: k.column,
            });
        }
        Ok(p)
    }

    /// The memory of `device` that argument `index` must be uploaded to.
    pub fn argument_memory<'c>(&self, device: &Device<'c>, index: usize) -> Result<Memory<'c>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_manifest_argument_memory(self.raw, device.raw, index, &mut raw) })?;
        Ok(Memory { client: device.client, raw })
    }

    /// The memory of `device` that result `index` will live in.
    pub fn result_memory<'c>(&self, device: &Device<'c>, index: usize) -> Result<Memory<'c>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_manifest_result_memory(self.raw, device.raw, index, &mut raw) })?;
        Ok(Memory { client: device.client, raw })
    }

    /// The upload plan: one buffer per argument in the memory the manifest names for `device`, in one
    /// batched submission with one event for all. Each argument's data must be exactly its dense size. The
    /// buffers borrow the host memory they were uploaded from.
    pub fn upload_arguments<'h, 'c: 'h>(&self, device: &Device<'c>, args: &[UploadArgument<'h, 'c>], sem: Semantics)
        -> Result<(Vec<Buffer<'h>>, Event)> {
        let values = self.arguments()?;
        if args.len() != values.len() {
            return Err(Error::invalid(format!(
                "upload_arguments: {} arguments given, the manifest has {}",
                args.len(),
                values.len()
            )));
        }
        let later = sem != Semantics::ImmutableOnlyDuringCall; // the library reads (or aliases) the data later
        let mut owned: Vec<Option<Box<[u8]>>> = Vec::with_capacity(args.len());
        let mut data: Vec<*const c_void> = Vec::with_capacity(args.len());
        for (i, (a, v)) in args.iter().zip(&values).enumerate() {
            let n = v.size()?;
            match a {
                UploadArgument::Host(host, offset) => {
                    if !std::ptr::eq(host.client(), device.client) {
                        return Err(Error::invalid(format!("argument {}: host memory of another client", i)));
                    }
                    data.push(host.range(*offset, n)? as *const c_void);
                    owned.push(None);
                }
                UploadArgument::Bytes(b) if b.len() as u64 == n => {
                    let copy: Option<Box<[u8]>> = if later { Some((*b).into()) } else { None };
                    data.push(copy.as_deref().unwrap_or(b).as_ptr().cast());
                    owned.push(copy);
                }
                UploadArgument::Bytes(b) => {
                    return Err(Error::invalid(format!(
                        "argument {} ({}): {} bytes given, {}{:?} needs {}",
                        i,
                        v.name,
                        b.len(),
                        v.element_name,
                        v.dims,
                        n
                    )))
                }
            }
        }
        let up = sys::neuronmem_manifest_upload_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_manifest_upload_args_t, host_buffer_semantics),
            extension: ptr::null(),
            manifest: self.raw,
            device: device.raw,
            host_data: data.as_ptr(),
            num_arguments: data.len(),
            host_buffer_semantics: sem.raw(),
        };
        let mut outs = vec![ptr::null_mut(); args.len()];
        let mut ready = ptr::null_mut();
        check(unsafe { sys::neuronmem_manifest_upload_arguments(&up, outs.as_mut_ptr(), &mut ready) })?;
        let ready = Event::from_raw(ready);
        let mut buffers = Vec::with_capacity(outs.len());
        for (raw, copy) in outs.into_iter().zip(owned) {
            // Keep the host data until the library is done with it: the buffer's own ready event.
            let guard = if later {
                let mut ev = ptr::null_mut();
                check(unsafe { sys::neuronmem_buffer_ready_event(raw, &mut ev) })?;
                Some(Event::from_raw(ev))
            } else {
                None
            };
            buffers.push(Buffer::from_parts(device.client, raw, guard, copy));
        }
        Ok((buffers, ready))
    }
}
