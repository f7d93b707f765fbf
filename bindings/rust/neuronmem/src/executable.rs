use crate::buffer::{Buffer, ElementType};
use crate::client::{Client, Device, Memory, MemoryKind};
use crate::error::{check, Code, Error, Result};
use crate::event::{Event, WaitList};
use crate::host::HostCallbacks;
use crate::manifest::{Manifest, PlacementPolicy};
use crate::{c_slice, sys};
use std::ffi::CString;
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

/// What `execute` does with an argument that is not in the memory its parameter names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ArgumentPlacement {
    /// FAILED_PRECONDITION naming the argument and the kinds.
    #[default]
    Strict,
    /// The runtime copies it there (counted as implicit).
    AutoCopy,
}

/// Compile options; the default is entry "main", the device policy, strict placement, every core.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// Text only.
    pub entry: Option<String>,
    /// Text only: the name in error locations.
    pub filename: Option<String>,
    pub policy: PlacementPolicy,
    pub argument_placement: ArgumentPlacement,
    /// 0 = as many replicas as the client's cores hold (cores / partitions).
    pub num_replicas: u32,
    /// SPMD partitions per replica: 0 = the module's `mhlo.num_partitions`, else 1.
    pub num_partitions: u32,
}

/// A parameter or an output of an executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutableValue {
    pub element_type: ElementType,
    pub dims: Vec<i64>,
    pub memory_kind: MemoryKind,
    pub bytes: u64,
    /// Parameters: the output it is donated into; outputs: the parameter donated into it; -1 if none.
    pub donation: i64,
}

/// A compiled graph for the client's NeuronCores; borrows the client, freed on drop.
pub struct Executable<'c> {
    client: &'c Client,
    raw: *mut sys::neuronmem_executable_t,
}
// Executables are immutable once compiled: every function on them is thread-safe.
unsafe impl Send for Executable<'_> {}
unsafe impl Sync for Executable<'_> {}

impl Drop for Executable<'_> {
    fn drop(&mut self) {
        unsafe { sys::neuronmem_executable_destroy(self.raw) }
    }
}

/// One submitted execution: its statistics once its done event is ready. Borrows the client.
pub struct Execution<'c> {
    _client: &'c Client,
    raw: *mut sys::neuronmem_execution_t,
}
unsafe impl Send for Execution<'_> {}
unsafe impl Sync for Execution<'_> {}

impl Drop for Execution<'_> {
    fn drop(&mut self) {
        unsafe { sys::neuronmem_execution_destroy(self.raw) }
    }
}

/// The C timeout_ns of a timeout: None = 0 (the client's default), Duration::MAX = u64::MAX (no deadline), else
/// its nanoseconds (at least 1, saturating below u64::MAX).
pub(crate) fn timeout_ns(timeout: Option<Duration>) -> u64 {
    match timeout {
        None => 0,
        Some(Duration::MAX) => u64::MAX,
        Some(d) => u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1).clamp(1, u64::MAX - 1),
    }
}

fn cstring(s: &Option<String>) -> Result<Option<CString>> {
    s.as_deref()
        .map(|v| CString::new(v).map_err(|_| Error::invalid(format!("{:?} contains a NUL byte", v))))
        .transpose()
}

impl Client {
    fn compile_raw(&self, text: Option<&str>, manifest: Option<&Manifest>, o: &CompileOptions)
        -> Result<Executable<'_>> {
        let (entry, filename) = (cstring(&o.entry)?, cstring(&o.filename)?);
        let opts = sys::neuronmem_compile_options_t {
            struct_size: sys::struct_size!(sys::neuronmem_compile_options_t, num_partitions),
            extension: ptr::null(),
            entry: entry.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            filename: filename.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            policy: match o.policy {
                PlacementPolicy::Device => sys::NEURONMEM_PLACEMENT_POLICY_DEVICE,
                PlacementPolicy::TorchNeuronx => sys::NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX,
            },
            argument_placement: match o.argument_placement {
                ArgumentPlacement::Strict => sys::NEURONMEM_ARGUMENT_PLACEMENT_STRICT,
                ArgumentPlacement::AutoCopy => sys::NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY,
            },
            num_replicas: o.num_replicas,
            num_partitions: o.num_partitions,
        };
        let mut raw = ptr::null_mut();
        check(unsafe {
            match (text, manifest) {
                (_, Some(m)) => sys::neuronmem_executable_compile_manifest(self.raw(), m.raw(), &opts, &mut raw),
                (Some(t), None) => {
                    sys::neuronmem_executable_compile_text(self.raw(), t.as_ptr().cast(), t.len(), &opts, &mut raw)
                }
                (None, None) => unreachable!("compile_raw without an input"),
            }
        })?;
        Ok(Executable { client: self, raw })
    }

    /// Compiles StableHLO text; anything the executor cannot run is UNIMPLEMENTED here, never later.
    pub fn compile(&self, text: &str, options: &CompileOptions) -> Result<Executable<'_>> {
        self.compile_raw(Some(text), None, options)
    }

    /// Compiles the graph of a manifest loaded from StableHLO text (its entry and policy).
    pub fn compile_manifest(&self, manifest: &Manifest, options: &CompileOptions) -> Result<Executable<'_>> {
        self.compile_raw(None, Some(manifest), options)
    }
}

/// The C arguments of a launch, borrowing the arrays (per: arguments per device).
#[allow(clippy::too_many_arguments)]
fn devices_args(executable: *mut sys::neuronmem_executable_t, devs: &[*mut sys::neuronmem_device_t],
                args: &[*mut sys::neuronmem_buffer_t], per: usize, waits: &[sys::neuronmem_event_list_t],
                non_donatable: &[usize], send: &[sys::neuronmem_host_callback_t],
                recv: &[sys::neuronmem_host_callback_t], timeout: Option<Duration>, launch_id: u64)
    -> sys::neuronmem_execute_devices_args_t {
    fn or_null<T>(v: &[T]) -> *const T {
        if v.is_empty() { ptr::null() } else { v.as_ptr() }
    }
    sys::neuronmem_execute_devices_args_t {
        struct_size: sys::struct_size!(sys::neuronmem_execute_devices_args_t, launch_id),
        extension: ptr::null(),
        executable,
        devices: or_null(devs),
        num_devices: devs.len(),
        arguments: or_null(args),
        num_arguments: per,
        waits: or_null(waits),
        non_donatable: or_null(non_donatable),
        num_non_donatable: non_donatable.len(),
        send_callbacks: or_null(send),
        num_send_callbacks: send.len(),
        recv_callbacks: or_null(recv),
        num_recv_callbacks: recv.len(),
        timeout_ns: timeout_ns(timeout),
        launch_id,
    }
}

impl<'c> Executable<'c> {
    pub fn properties(&self) -> Result<sys::neuronmem_executable_properties_t> {
        // SAFETY: a plain struct of integers.
        let mut p: sys::neuronmem_executable_properties_t = unsafe { std::mem::zeroed() };
        p.struct_size = sys::struct_size!(sys::neuronmem_executable_properties_t, num_manual_devices);
        check(unsafe { sys::neuronmem_executable_properties(self.raw, &mut p) })?;
        Ok(p)
    }

    fn values(&self, outputs: bool) -> Result<Vec<ExecutableValue>> {
        let p = self.properties()?;
        let n = if outputs { p.num_outputs } else { p.num_parameters };
        (0..n)
            .map(|i| {
                // SAFETY: a plain struct (integers, a pointer).
                let mut v: sys::neuronmem_executable_value_t = unsafe { std::mem::zeroed() };
                v.struct_size = sys::struct_size!(sys::neuronmem_executable_value_t, donation);
                check(unsafe {
                    if outputs {
                        sys::neuronmem_executable_output(self.raw, i, &mut v)
                    } else {
                        sys::neuronmem_executable_parameter(self.raw, i, &mut v)
                    }
                })?;
                Ok(ExecutableValue {
                    element_type: ElementType::from_raw(v.element_type).ok_or_else(|| {
                        Error::new(Code::Unknown, format!("element type {} is newer than this binding", v.element_type))
                    })?,
                    dims: unsafe { c_slice(v.dims, v.num_dims) }.to_vec(),
                    memory_kind: MemoryKind::from_raw(v.memory_kind)?,
                    bytes: v.bytes,
                    donation: v.donation,
                })
            })
            .collect()
    }

    pub fn parameters(&self) -> Result<Vec<ExecutableValue>> {
        self.values(false)
    }

    pub fn outputs(&self) -> Result<Vec<ExecutableValue>> {
        self.values(true)
    }

    /// The memory of `device` that parameter `index` must live in at execute.
    pub fn parameter_memory(&self, device: &Device<'c>, index: usize) -> Result<Memory<'c>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_executable_parameter_memory(self.raw, device.raw, index, &mut raw) })?;
        Ok(Memory { client: self.client, raw })
    }

    /// The memory of `device` that output `index` is allocated in.
    pub fn output_memory(&self, device: &Device<'c>, index: usize) -> Result<Memory<'c>> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::neuronmem_executable_output_memory(self.raw, device.raw, index, &mut raw) })?;
        Ok(Memory { client: self.client, raw })
    }

    /// Submits one execution on `device` after `wait` and every argument's content: the result buffers, the
    /// done event and the execution (statistics). Donated arguments are deleted by the call (their handles
    /// stay); `non_donatable` lists parameters not to donate this time.
    pub fn execute(&self, device: &Device<'c>, arguments: &[&Buffer<'_>], wait: &[&Event],
                   non_donatable: &[usize]) -> Result<(Vec<Buffer<'c>>, Event, Execution<'c>)> {
        self.execute_timeout(device, arguments, wait, non_donatable, None)
    }

    /// `execute` with a deadline: once `timeout` has passed since submission the execution stops (before its
    /// next op, or at once while queued) and its done event fails with DEADLINE_EXCEEDED. None = the client's
    /// `Options::execution_timeout`; `Duration::MAX` = none.
    pub fn execute_timeout(&self, device: &Device<'c>, arguments: &[&Buffer<'_>], wait: &[&Event],
                           non_donatable: &[usize], timeout: Option<Duration>)
        -> Result<(Vec<Buffer<'c>>, Event, Execution<'c>)> {
        let n_out = self.properties()?.num_outputs;
        let args: Vec<*mut sys::neuronmem_buffer_t> = arguments.iter().map(|b| b.raw()).collect();
        let waits = WaitList::new(wait);
        let ea = sys::neuronmem_execute_args_t {
            struct_size: sys::struct_size!(sys::neuronmem_execute_args_t, timeout_ns),
            extension: ptr::null(),
            executable: self.raw,
            device: device.raw,
            arguments: if args.is_empty() { ptr::null() } else { args.as_ptr() },
            num_arguments: args.len(),
            wait: waits.raw(),
            non_donatable: if non_donatable.is_empty() { ptr::null() } else { non_donatable.as_ptr() },
            num_non_donatable: non_donatable.len(),
            timeout_ns: timeout_ns(timeout),
        };
        let mut outs = vec![ptr::null_mut(); n_out.max(1)];
        let (mut done, mut execution) = (ptr::null_mut(), ptr::null_mut());
        check(unsafe { sys::neuronmem_executable_execute(&ea, outs.as_mut_ptr(), &mut done, &mut execution) })?;
        outs.truncate(n_out);
        let results = outs.into_iter().map(|raw| Buffer::from_parts(self.client, raw, None, None)).collect();
        Ok((results, Event::from_raw(done), Execution { _client: self.client, raw: execution }))
    }

    /// Submits one launch: an execution on each of `devices` (distinct devices the executable runs on),
    /// `arguments[d]` the arguments of `devices[d]`, `waits[d]` its wait events (an empty `waits`: none).
    /// Each runs on its core's own thread. Returns per device: the result buffers, the done event and the
    /// execution; a refused launch submits nothing.
    #[allow(clippy::type_complexity)]
    pub fn execute_devices(&self, devices: &[&Device<'c>], arguments: &[&[&Buffer<'_>]], waits: &[&[&Event]],
                           non_donatable: &[usize])
        -> Result<(Vec<Vec<Buffer<'c>>>, Vec<Event>, Vec<Execution<'c>>)> {
        self.execute_devices_with_host(devices, arguments, waits, non_donatable, &HostCallbacks::new())
    }

    /// `execute_devices` whose host transfers (send / recv with is_host_transfer) call `host`'s closures by
    /// channel id; the launch keeps them until every device has finished.
    #[allow(clippy::type_complexity)]
    pub fn execute_devices_with_host(&self, devices: &[&Device<'c>], arguments: &[&[&Buffer<'_>]],
                                     waits: &[&[&Event]], non_donatable: &[usize], host: &HostCallbacks)
        -> Result<(Vec<Vec<Buffer<'c>>>, Vec<Event>, Vec<Execution<'c>>)> {
        self.execute_devices_timeout(devices, arguments, waits, non_donatable, host, None)
    }

    /// `execute_devices_with_host` with every device's deadline (as `execute_timeout`'s).
    #[allow(clippy::type_complexity)]
    pub fn execute_devices_timeout(&self, devices: &[&Device<'c>], arguments: &[&[&Buffer<'_>]],
                                   waits: &[&[&Event]], non_donatable: &[usize], host: &HostCallbacks,
                                   timeout: Option<Duration>)
        -> Result<(Vec<Vec<Buffer<'c>>>, Vec<Event>, Vec<Execution<'c>>)> {
        self.execute_devices_launch(devices, arguments, waits, non_donatable, host, timeout, 0)
    }

    /// `execute_devices_timeout` with the caller's id for a launch across the processes of a job (PJRT's
    /// launch_id; 0 = none, docs/distributed.md): every process launching its devices of the launch gives the
    /// same id; a process that gives another fails the launch's ops that talk to it with FailedPrecondition
    /// naming both ids.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    pub fn execute_devices_launch(&self, devices: &[&Device<'c>], arguments: &[&[&Buffer<'_>]],
                                  waits: &[&[&Event]], non_donatable: &[usize], host: &HostCallbacks,
                                  timeout: Option<Duration>, launch_id: u64)
        -> Result<(Vec<Vec<Buffer<'c>>>, Vec<Event>, Vec<Execution<'c>>)> {
        let n = devices.len();
        if arguments.len() != n {
            return Err(Error::invalid(format!("{} argument lists for {} devices", arguments.len(), n)));
        }
        if !waits.is_empty() && waits.len() != n {
            return Err(Error::invalid(format!("{} wait lists for {} devices", waits.len(), n)));
        }
        let per = arguments.first().map_or(0, |a| a.len());
        if let Some(d) = arguments.iter().position(|a| a.len() != per) {
            return Err(Error::invalid(format!("device {} has {} arguments, device 0 has {}", d, arguments[d].len(),
                                              per)));
        }
        let n_out = self.properties()?.num_outputs;
        let devs: Vec<*mut sys::neuronmem_device_t> = devices.iter().map(|d| d.raw).collect();
        let args: Vec<*mut sys::neuronmem_buffer_t> =
            arguments.iter().flat_map(|a| a.iter().map(|b| b.raw())).collect();
        let wait_lists: Vec<WaitList> = waits.iter().map(|w| WaitList::new(w)).collect();
        let raw_waits: Vec<sys::neuronmem_event_list_t> = wait_lists.iter().map(|w| w.raw()).collect();
        let callbacks = Arc::new(host.to_raw());
        let la = devices_args(self.raw, &devs, &args, per, &raw_waits, non_donatable, &callbacks.send,
                              &callbacks.recv, timeout, launch_id);
        let mut outs = vec![ptr::null_mut(); (n * n_out).max(1)];
        let mut done = vec![ptr::null_mut(); n.max(1)];
        let mut executions = vec![ptr::null_mut(); n.max(1)];
        check(unsafe {
            sys::neuronmem_executable_execute_devices(&la, outs.as_mut_ptr(), done.as_mut_ptr(),
                                                      executions.as_mut_ptr())
        })?;
        let results = (0..n)
            .map(|d| {
                outs[d * n_out..(d + 1) * n_out]
                    .iter()
                    .map(|&raw| Buffer::from_parts(self.client, raw, None, None))
                    .collect()
            })
            .collect();
        let events: Vec<Event> = done[..n].iter().map(|&raw| Event::from_raw(raw)).collect();
        if !host.is_empty() {
            // Each device's event holds the callbacks until it is ready: the last one frees them. The launch is
            // running already, so a failure to register (never the case for an event just returned) must neither
            // lose its results nor free callbacks a device may still call: such callbacks are leaked instead.
            for ev in &events {
                let keep = Arc::clone(&callbacks);
                if ev.on_ready(move |_| drop(keep)).is_err() {
                    std::mem::forget(Arc::clone(&callbacks));
                }
            }
        }
        let runs = executions[..n].iter().map(|&raw| Execution { _client: self.client, raw }).collect();
        Ok((results, events, runs))
    }

    /// The (replica, partition) `device` runs: device d is replica d / P, partition d % P.
    pub fn logical_ids(&self, device: &Device<'c>) -> Result<(u32, u32)> {
        let (mut replica, mut partition) = (0u32, 0u32);
        check(unsafe { sys::neuronmem_executable_logical_ids(self.raw, device.raw, &mut replica, &mut partition) })?;
        Ok((replica, partition))
    }
}

/// One finished execution's transfers from one memory kind to another.
pub type TransferCounts = sys::neuronmem_transfer_counts_t;
/// One finished execution's transfers, bytes and times (ns).
pub type ExecutionStats = sys::neuronmem_execution_stats_t;

impl Execution<'_> {
    /// Stops the execution: queued, it fails at once; running, before its next op (an endless loop too). Its
    /// done event then fails with CANCELLED; cancelling a finished execution changes nothing. Never blocks.
    pub fn cancel(&self) -> Result<()> {
        check(unsafe { sys::neuronmem_execution_cancel(self.raw) })
    }

    /// The statistics (FAILED_PRECONDITION before the execution finished).
    pub fn stats(&self) -> Result<ExecutionStats> {
        // SAFETY: a plain struct of integers.
        let mut s: ExecutionStats = unsafe { std::mem::zeroed() };
        s.struct_size = sys::struct_size!(sys::neuronmem_execution_stats_t, manual_threads);
        check(unsafe { sys::neuronmem_execution_stats(self.raw, &mut s) })?;
        Ok(s)
    }

    /// The transfers from kind `from` to kind `to`.
    pub fn transfers(&self, from: MemoryKind, to: MemoryKind) -> Result<TransferCounts> {
        // SAFETY: a plain struct of integers.
        let mut t: TransferCounts = unsafe { std::mem::zeroed() };
        t.struct_size = sys::struct_size!(sys::neuronmem_transfer_counts_t, peer_bytes);
        check(unsafe { sys::neuronmem_execution_transfers(self.raw, from.raw(), to.raw(), &mut t) })?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The launch id reaches the C struct, and the struct's size covers it (the library reads launch_id only
    // when struct_size holds it).
    #[test]
    fn the_launch_id_reaches_the_c_arguments() {
        for id in [0u64, 7, u64::MAX] {
            let la = devices_args(ptr::null_mut(), &[], &[], 0, &[], &[], &[], &[], None, id);
            assert_eq!(la.launch_id, id);
            assert_eq!(la.struct_size, std::mem::size_of::<sys::neuronmem_execute_devices_args_t>());
            assert!(la.devices.is_null() && la.waits.is_null() && la.send_callbacks.is_null());
        }
        let dev = 8usize as *mut sys::neuronmem_device_t;
        let la = devices_args(ptr::null_mut(), &[dev], &[], 0, &[], &[3], &[], &[], Some(Duration::from_nanos(5)), 9);
        assert_eq!((la.num_devices, la.num_non_donatable, la.timeout_ns, la.launch_id), (1, 1, 5, 9));
    }
}
