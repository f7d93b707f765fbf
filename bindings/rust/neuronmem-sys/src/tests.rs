//! The declarations against the installed header: struct sizes, published sizes and field offsets as the
//! system C compiler sees them (build.rs runs bindings/layout/layout_dump.c), and every declared function.
use super::*;
use std::collections::{BTreeMap, BTreeSet};

include!(concat!(env!("OUT_DIR"), "/c_layout.rs"));

macro_rules! field {
    ($t:ty, $f:ident) => {{
        let u = core::mem::MaybeUninit::<$t>::uninit();
        let base = u.as_ptr();
        // SAFETY: addr_of! computes the address without reading the uninitialised value.
        let p = unsafe { core::ptr::addr_of!((*base).$f) };
        (p as usize - base as usize, size_of_pointee(p))
    }};
}

macro_rules! layout {
    ($out:ident; $($t:ident { $($f:ident $(= $cname:literal)?),* })*) => {$(
        $(
            #[allow(unused_mut, unused_assignments)]
            let mut name = stringify!($f);
            $( name = $cname; )?
            let (off, size) = field!($t, $f);
            $out.insert((stringify!($t).to_string(), name.to_string()), (off, size));
        )*
        $out.insert((stringify!($t).to_string(), "-".to_string()), (usize::MAX, core::mem::size_of::<$t>()));
    )*};
}

fn rust_layout() -> BTreeMap<(String, String), (usize, usize)> {
    let mut m = BTreeMap::new();
    layout!(m;
        neuronmem_string_t { data, size }
        neuronmem_extension_base_t { struct_size, type_ = "type", next }
        neuronmem_client_options_t { struct_size, extension, num_cores, mlock_mode, device_bytes_per_core,
                                     pinned_host_bytes, execution_timeout_ns, process_index, num_processes, kv_get,
                                     kv_put, kv_user_data, bootstrap_timeout_ns, peer_timeout_ns, fabric_interface }
        neuronmem_device_description_t { struct_size, id, process_index, local_id, reserved, kind, debug_string,
                                         to_string }
        neuronmem_memory_description_t { struct_size, id, kind_id, kind, debug_string, to_string }
        neuronmem_job_traffic_t { struct_size, messages_sent, bytes_sent, messages_received, bytes_received,
                                  messages_dropped }
        neuronmem_memory_stats_t { struct_size, capacity, bytes_in_use, peak_bytes_in_use, live_allocations,
                                   largest_free_block, total_allocations, is_locked, is_shared }
        neuronmem_event_list_t { events, num_events }
        neuronmem_buffer_from_host_args_t { struct_size, extension, data, element_type, host_buffer_semantics, dims,
                                            num_dims, byte_strides, memory, wait }
        neuronmem_buffer_allocate_args_t { struct_size, extension, client, memory, element_type, dims, num_dims }
        neuronmem_buffer_copy_args_t { struct_size, extension, src, memory, wait }
        neuronmem_buffer_read_args_t { struct_size, extension, buffer, offset, size, dst, wait }
        neuronmem_buffer_write_args_t { struct_size, extension, buffer, offset, size, src, wait }
        neuronmem_buffer_chunk_args_t { struct_size, extension, buffer, offset, size, data, wait, is_last }
        neuronmem_buffer_load_file_args_t { struct_size, extension, buffer, path, file_offset, size, buffer_offset,
                                            wait }
        neuronmem_manifest_options_t { struct_size, extension, entry, filename, policy, num_cores }
        neuronmem_manifest_counts_t { struct_size, num_arguments, num_results, num_moves, num_host_compute,
                                      num_kernels, num_custom_call_targets, num_channels, num_warnings,
                                      num_composites }
        neuronmem_manifest_value_t { struct_size, index, memory_kind, name, element_type, buffer_element_type,
                                     kind_explicit, dims, num_dims, aliasing_output, buffer_donor, line, column,
                                     num_attributes }
        neuronmem_manifest_move_t { struct_size, function, value, result, spelling, from_kind, to_kind,
                                    from_memory_kind, to_memory_kind, element_type, dims, num_dims, line, column }
        neuronmem_manifest_kernel_t { struct_size, function, func_name, binary, grid, grid_rank, num_input_names,
                                      num_output_names, num_operands, num_results, line, column }
        neuronmem_manifest_channel_t { struct_size, function, op, handle, type_ = "type", is_host_transfer,
                                       source_target_pairs, num_pairs, num_payloads, line, column }
        neuronmem_manifest_composite_t { struct_size, function, name, decomposition, version, num_attributes, line,
                                         column }
        neuronmem_manifest_upload_args_t { struct_size, extension, manifest, device, host_data, num_arguments,
                                           host_buffer_semantics }
        neuronmem_compile_options_t { struct_size, extension, entry, filename, policy, argument_placement,
                                      num_replicas, num_partitions }
        neuronmem_executable_properties_t { struct_size, num_parameters, num_outputs, num_replicas,
                                            peak_device_bytes, peak_host_bytes, num_ops, num_explicit_moves,
                                            num_partitions, num_specializations, num_manual_devices }
        neuronmem_executable_value_t { struct_size, element_type, dims, num_dims, memory_kind, bytes, donation }
        neuronmem_execute_args_t { struct_size, extension, executable, device, arguments, num_arguments, wait,
                                   non_donatable, num_non_donatable, timeout_ns }
        neuronmem_execute_devices_args_t { struct_size, extension, executable, devices, num_devices, arguments,
                                           num_arguments, waits, non_donatable, num_non_donatable, send_callbacks,
                                           num_send_callbacks, recv_callbacks, num_recv_callbacks, timeout_ns,
                                           launch_id }
        neuronmem_host_transfer_t { struct_size, channel_id, device, replica_id, partition_id, tensors,
                                    num_tensors }
        neuronmem_host_callback_t { channel_id, fn_ = "fn", user_data }
        neuronmem_execution_stats_t { struct_size, explicit_transfers, explicit_bytes, implicit_transfers,
                                      implicit_bytes, op_ns, transfer_ns, queue_ns, peer_transfers, peer_bytes,
                                      manual_cores, manual_threads }
        neuronmem_transfer_counts_t { struct_size, explicit_transfers, explicit_bytes, implicit_transfers,
                                      implicit_bytes, peer_transfers, peer_bytes }
        neuronmem_kernel_tensor_t { data, element_type, dims, num_dims, memory_kind }
        neuronmem_kernel_call_t { struct_size, target, name, backend_config, inputs, num_inputs, outputs,
                                  num_outputs, grid, grid_rank, grid_index, device }
        neuronmem_kernel_registration_t { struct_size, extension, name, fn_ = "fn", user_data }
    );
    m
}

#[test]
fn every_struct_and_field_matches_the_header() {
    let rust = rust_layout();
    let published: BTreeMap<&str, usize> = published_sizes().iter().cloned().collect();
    let mut seen = BTreeSet::new();
    for &(name, field, offset, size) in C_LAYOUT {
        let key = (name.to_string(), field.to_string());
        let got = rust.get(&key).unwrap_or_else(|| panic!("{}.{} is not declared in Rust", name, field));
        if field == "-" {
            assert_eq!(got.1, size, "sizeof({})", name);
            if let Some(p) = published.get(name) {
                assert_eq!(*p, offset, "the published size of {}", name);
            }
        } else {
            assert_eq!(*got, (offset, size), "{}.{} (offset, size)", name, field);
        }
        seen.insert(key);
    }
    let declared: BTreeSet<_> = rust.keys().cloned().collect();
    assert_eq!(declared, seen, "fields declared in Rust but not in the header");
    assert_eq!(published.len(), 31);
}

/// The public headers whose every function is declared here; a header added later is declared (and listed
/// here) in its own change.
const COVERED_HEADERS: [&str; 5] = ["status.h", "client.h", "buffer.h", "manifest.h", "executable.h"];

#[test]
fn every_public_function_is_declared() {
    let dir = std::path::Path::new(env!("NEURONMEM_INCLUDE_DIR")).join("neuronmem");
    let ours = include_str!("lib.rs");
    let mut n = 0;
    for header in COVERED_HEADERS {
        let text = std::fs::read_to_string(dir.join(header)).expect("an installed header");
        // Declarations: NEURONMEM_API <type> <name>(  (possibly over several lines).
        for decl in text.split("NEURONMEM_API").skip(1) {
            let head = decl.split('(').next().unwrap();
            let name = head.split_whitespace().last().unwrap().trim_start_matches('*');
            if !name.starts_with("neuronmem_") {
                continue;
            }
            n += 1;
            assert!(ours.contains(&format!("pub fn {}(", name)), "{} is not declared", name);
        }
    }
    assert!(n > 60, "only {} declarations found in {}", n, dir.display());
}

#[test]
fn the_linked_library_is_this_version() {
    assert_eq!(unsafe { neuronmem_version() }, NEURONMEM_VERSION_NUMBER);
}
