//! The safe API over the installed library: the C tests' round trips and placement checks (tests/c,
//! tests/manifest), events and callbacks across threads, and misuse that must return an Error.
use neuronmem::*;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/manifest/data").join(name)
}

fn client(cores: u32) -> Client {
    Client::new(&Options { num_cores: cores, device_bytes_per_core: 2 << 20, pinned_host_bytes: 32 << 20,
                           ..Options::default() })
        .unwrap()
}

fn code<T>(r: Result<T>) -> Code {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => {
            assert!(!e.message().is_empty());
            e.code()
        }
    }
}

#[test]
fn listing_and_memory_ids() {
    let c = client(3);
    assert_eq!(c.platform_name().unwrap(), "neuron");
    assert!(c.platform_version().unwrap().contains(&version_string()));
    assert_eq!(version() >> 8, 0x0002);
    assert!(c.extensions().unwrap().is_empty());
    let devs = c.devices().unwrap();
    assert_eq!(devs.len(), 3);
    assert_eq!(c.memories().unwrap().len(), 9);
    for (d, dev) in devs.iter().enumerate() {
        let d = d as i32;
        let desc = dev.describe().unwrap();
        assert_eq!((desc.id, desc.local_id, desc.kind.as_str()), (d, d, "NC_v2"));
        assert_eq!(desc.to_string, format!("NC_v2 (NeuronCore(id={}, process_index=0, local_id={}))", d, d));
        let def = dev.default_memory().unwrap();
        let md = def.describe().unwrap();
        assert_eq!((md.id, md.kind), (2 * d, MemoryKind::Device));
        assert_eq!(md.debug_string, format!("NeuronMemory(id={}, kind=device)", 2 * d));
        assert_eq!(dev.memory_of_kind(MemoryKind::PinnedHost).unwrap().id().unwrap(), 2 * d + 1);
        assert_eq!(dev.memory_of_kind(MemoryKind::UnpinnedHost).unwrap().id().unwrap(), 6 + d);
        let ids: Vec<i32> = dev.addressable_memories().unwrap().iter().map(|m| m.id().unwrap()).collect();
        assert_eq!(ids, vec![2 * d, 2 * d + 1, 6 + d]);
        assert_eq!(c.lookup_device(d).unwrap(), *dev);
        assert_eq!(def.addressable_devices().unwrap(), vec![*dev]);
        assert!(def.is_owned_by(&c).unwrap());
    }
    assert_eq!(c.lookup_memory(3).unwrap().kind().unwrap(), MemoryKind::PinnedHost);
    assert_eq!(code(c.lookup_memory(9)), Code::NotFound);
    assert_eq!(code(c.lookup_device(3)), Code::NotFound);
    let st = devs[0].default_memory().unwrap().stats().unwrap();
    assert_eq!((st.capacity, st.live_allocations), (2 << 20, 0));
}

#[test]
fn host_memory() {
    let c = client(1);
    let mut hm = c.host_allocate(4096, 0).unwrap();
    hm.as_mut_slice().fill(7);
    assert!(c.is_pinned(hm.as_slice()).unwrap());
    assert!(!c.is_pinned(&[0u8; 64]).unwrap());
    hm.free().unwrap();
    assert_eq!(code(c.host_allocate(0, 0)), Code::InvalidArgument);
    assert_eq!(code(c.host_allocate(64, 3)), Code::InvalidArgument);
    assert_eq!(code(c.host_allocate(1 << 40, 0)), Code::ResourceExhausted);
}

#[test]
fn events_callbacks_and_threads() {
    let c = client(1);
    let ev = c.new_event().unwrap();
    assert!(!ev.is_ready().unwrap());
    assert_eq!(code(ev.result()), Code::FailedPrecondition);
    assert_eq!(code(ev.wait(Some(Duration::from_millis(1)))), Code::DeadlineExceeded);
    let (tx, rx) = mpsc::channel();
    ev.on_ready(move |r| tx.send(r.is_ok()).unwrap()).unwrap();
    let other = ev.clone();
    std::thread::spawn(move || other.complete(None).unwrap()).join().unwrap(); // completed on another thread
    assert!(rx.recv_timeout(Duration::from_secs(5)).unwrap());
    ev.wait(None).unwrap();
    assert!(ev.result().unwrap().is_ok());
    assert_eq!(code(ev.complete(None)), Code::FailedPrecondition);
    let (tx, rx) = mpsc::channel();
    ev.on_ready(move |_| tx.send(std::thread::current().id()).unwrap()).unwrap();
    assert_eq!(rx.try_recv().unwrap(), std::thread::current().id()); // at once, on this thread
    // A panicking callback is caught: it never unwinds into the library.
    ev.on_ready(|_| panic!("inside a callback")).unwrap();

    // Completed with an error: the dependent transfer fails with its code.
    let lookup_error = c.lookup_memory(99).err().unwrap();
    let gate = c.new_event().unwrap();
    let mem = c.lookup_memory(0).unwrap();
    let buf = mem.buffer_from_slice(&[4], &[1i32, 2, 3, 4], &[]).unwrap();
    let hm = c.host_allocate(16, 0).unwrap();
    let w = buf.write_async(&hm, 0, 16, 0, &[&gate]).unwrap();
    gate.complete(Some(&lookup_error)).unwrap();
    assert_eq!(code(w.wait(None)), Code::NotFound);
    assert_eq!(buf.to_vec::<i32>().unwrap(), vec![1, 2, 3, 4]);
    let fresh = c.new_event().unwrap();
    fresh.complete(Some(&lookup_error)).unwrap();
    assert_eq!(code(fresh.wait(None)), Code::NotFound);
    let made = c.new_event().unwrap(); // an error the caller made gets a status of its own
    made.complete(Some(&Error::new(Code::Aborted, "made here"))).unwrap();
    let e = made.wait(None).unwrap_err();
    assert_eq!((e.code(), e.message()), (Code::Aborted, "made here"));
}

#[test]
fn round_trip_across_cores() {
    let c = client(3);
    let devs = c.devices().unwrap();
    let (dev0, dev1) = (devs[0].default_memory().unwrap(), devs[1].default_memory().unwrap());
    let values = [1i32, -2, 3, -4, 5, -6];
    let buf = dev0.buffer_from_slice(&[2, 3], &values, &[]).unwrap();
    assert_eq!(buf.dims().unwrap(), vec![2, 3]);
    assert_eq!((buf.element_type().unwrap(), buf.size().unwrap()), (ElementType::S32, 24));
    assert_eq!((buf.memory().unwrap(), buf.device().unwrap()), (dev0, devs[0]));
    let up = buf.ready_event().unwrap();
    let moved = buf.copy_to(&dev1, &[&up]).unwrap();
    assert_eq!(moved.device().unwrap(), devs[1]);
    assert_eq!(moved.to_vec::<i32>().unwrap(), values);
    let mut part = [0u8; 8];
    moved.read(&mut part, 4, &[]).unwrap();
    assert_eq!(i32::from_le_bytes(part[..4].try_into().unwrap()), -2);
}

#[test]
fn every_kind_to_every_kind() {
    let c = client(3);
    let devs = c.devices().unwrap();
    let data: Vec<f32> = (0..300).map(|i| i as f32 / 150.0 - 1.0).collect();
    let kinds = [MemoryKind::Device, MemoryKind::PinnedHost, MemoryKind::UnpinnedHost];
    for from in kinds {
        for to in kinds {
            let a = devs[0].memory_of_kind(from).unwrap().buffer_from_slice(&[10, 30], &data, &[]).unwrap();
            let b = a.copy_to(&devs[2].memory_of_kind(to).unwrap(), &[]).unwrap();
            assert_eq!(b.memory().unwrap().kind().unwrap(), to);
            assert_eq!(b.to_vec::<f32>().unwrap(), data, "{:?} -> {:?}", from, to);
        }
    }
}

#[test]
fn chunks_writes_files_async_reads_and_batches() {
    let c = client(2);
    let mem = c.lookup_device(1).unwrap().default_memory().unwrap();
    let b = mem.allocate(ElementType::S32, &[4, 4]).unwrap();
    for row in 0..4u32 {
        let chunk: Vec<u8> = (0..4).flat_map(|_| (row as i32).to_le_bytes()).collect();
        b.upload_chunk(&chunk, 16 * row as u64, row == 3, &[]).unwrap();
    }
    assert_eq!(code(b.upload_chunk(&[0; 4], 0, false, &[])), Code::FailedPrecondition);
    b.write(&[9, 0, 0, 0, 9, 0, 0, 0], 8, &[]).unwrap();
    assert_eq!(&b.to_vec::<i32>().unwrap()[..8], &[0, 0, 9, 9, 1, 1, 1, 1]);
    assert_eq!(code(b.write(&[0; 8], 60, &[])), Code::OutOfRange);

    let dir = std::env::temp_dir().join(format!("neuronmem-rust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("weights.bin");
    let raw: Vec<u8> = (0..128u8).collect();
    std::fs::write(&path, &raw).unwrap();
    let f = mem.allocate(ElementType::U8, &[32]).unwrap();
    f.load_file(&path, 16, 32, 0, &[]).unwrap();
    f.load_file_async(&path, 0, 8, 24, &[]).unwrap().wait(None).unwrap();
    let mut out = [0u8; 32];
    f.read_all(&mut out).unwrap();
    assert_eq!(&out[..24], &raw[16..40]);
    assert_eq!(&out[24..], &raw[..8]);
    assert_eq!(code(f.load_file(&dir.join("missing"), 0, 8, 0, &[])), Code::NotFound);
    assert_eq!(code(f.load_file(&path, 120, 16, 0, &[])), Code::OutOfRange);
    std::fs::remove_dir_all(&dir).unwrap();

    let mut hm = c.host_allocate(64, 0).unwrap();
    let rd = f.read_async(&mut hm, 0, 0, 32, &[]).unwrap();
    assert_eq!(&hm.as_slice()[..32], &out); // as_slice waits for the read that writes it
    rd.wait(None).unwrap();
    assert_eq!(code(f.read_async(&mut hm, 40, 0, 32, &[])), Code::InvalidArgument); // past the host memory

    let devs = c.devices().unwrap();
    let mems: Vec<Memory> = devs.iter().map(|d| d.default_memory().unwrap()).collect();
    let payloads: Vec<Vec<u8>> = (1..=2u8).map(|i| vec![i; i as usize]).collect();
    let dims: Vec<[i64; 1]> = (1..=2).map(|i| [i]).collect();
    let entries: Vec<(Memory, ElementType, &[i64], &[u8])> =
        (0..2).map(|i| (mems[i], ElementType::U8, &dims[i][..], &payloads[i][..])).collect();
    let (bufs, ready) = c.upload_batch(&entries).unwrap();
    ready.wait(None).unwrap();
    for (bb, p) in bufs.iter().zip(&payloads) {
        assert_eq!(&bb.to_vec::<u8>().unwrap(), p);
    }
}

#[test]
fn zero_copy_from_the_pinned_arena() {
    let c = client(1);
    let pinned = c.lookup_device(0).unwrap().memory_of_kind(MemoryKind::PinnedHost).unwrap();
    let mut hm = c.host_allocate(8 * 16 * 4, 0).unwrap();
    for (i, w) in hm.as_mut_slice().chunks_mut(4).enumerate() {
        w.copy_from_slice(&(i as i32).to_le_bytes());
    }
    {
        let b = pinned.buffer_from_host(&hm, 0, ElementType::S32, &[8, 16], Semantics::ImmutableZeroCopy, &[])
            .unwrap();
        assert!(b.is_zero_copy().unwrap());
        assert_eq!(b.to_vec::<i32>().unwrap()[5], 5);
        // An immutable zero-copy buffer refuses writes (they would change memory Rust may be reading).
        assert_eq!(code(b.write(&[0; 4], 0, &[])), Code::FailedPrecondition);
        assert_eq!(
            code(pinned.buffer_from_host(&hm, 256, ElementType::S32, &[8, 16], Semantics::ImmutableZeroCopy, &[])),
            Code::InvalidArgument
        );
    } // the buffer ends before the memory may be written again
    hm.as_mut_slice()[0] = 42;
    hm.free().unwrap();
}

#[test]
fn misuse_is_an_error_value() {
    let c = client(2);
    let mem = c.lookup_memory(0).unwrap();
    let buf = mem.buffer_from_slice(&[6], &[0i32, 1, 2, 3, 4, 5], &[]).unwrap();
    // A too-small output slice, the wrong element type, a range past the end.
    assert_eq!(code(buf.read_all(&mut [0u8; 8])), Code::InvalidArgument);
    assert_eq!(code(buf.read_into(&mut [0i32; 2])), Code::InvalidArgument);
    assert_eq!(code(buf.read_into(&mut [0f32; 6])), Code::InvalidArgument);
    assert_eq!(code(buf.read(&mut [0u8; 8], 20, &[])), Code::OutOfRange);
    // A negative dimension; data of the wrong size.
    assert_eq!(code(mem.allocate(ElementType::F32, &[-1, 3])), Code::InvalidArgument);
    assert_eq!(code(mem.buffer_from_slice(&[-2], &[1f32, 2.0], &[])), Code::InvalidArgument);
    assert_eq!(code(mem.buffer_from_slice(&[3], &[1f32, 2.0], &[])), Code::InvalidArgument);
    // A memory and an event of another client.
    let other = client(1);
    assert_eq!(code(buf.copy_to(&other.lookup_memory(0).unwrap(), &[])), Code::InvalidArgument);
    let foreign = other.new_event().unwrap();
    assert_eq!(code(buf.write(&[0; 4], 0, &[&foreign])), Code::InvalidArgument);
    // Use after delete (the handle lives on; the content is gone).
    buf.delete().unwrap();
    assert!(buf.is_deleted().unwrap());
    assert_eq!(code(buf.to_vec::<i32>()), Code::FailedPrecondition);
    assert_eq!(code(buf.write(&[0; 4], 0, &[])), Code::FailedPrecondition);
    // Use after close is a compile error in Rust: a Buffer borrows its Client, so `drop(c)` here does not
    // compile while `buf` is used below, and a dropped Buffer cannot be named.
    assert_eq!(buf.dims().unwrap(), vec![6]);
    // Unknown entry, bad text, bad JSON.
    assert_eq!(code(Manifest::load_json("{}")), Code::InvalidArgument);
}

#[test]
fn a_client_closes_once_its_buffers_are_gone() {
    let c = client(1);
    {
        let _b = c.lookup_memory(0).unwrap().allocate(ElementType::U8, &[16]).unwrap();
    }
    c.close().unwrap();
}

#[test]
fn manifest() {
    let m = Manifest::load_file(&data("decode_step.mlir"), &ManifestOptions::default()).unwrap();
    assert_eq!(m.entry().unwrap(), ("jit_decode_step".to_string(), "main".to_string()));
    let c = m.counts().unwrap();
    assert_eq!((c.num_arguments, c.num_results, c.num_moves, c.num_host_compute, c.num_kernels, c.num_channels),
               (4, 3, 3, 1, 1, 2));
    let args = m.arguments().unwrap();
    let kinds: Vec<MemoryKind> = args.iter().map(|a| a.memory_kind).collect();
    assert_eq!(kinds, [MemoryKind::PinnedHost, MemoryKind::PinnedHost, MemoryKind::Device, MemoryKind::Device]);
    assert_eq!((args[0].name.as_str(), args[0].element_type, &args[0].dims[..]), ("arg0", Some(ElementType::S32),
               &[8i64, 16][..]));
    assert_eq!(args[0].attributes.get("mhlo.sharding").map(String::as_str), Some("{replicated}"));
    assert!(args[2].buffer_donor && args[2].aliasing_output == 0 && args[2].element_type == Some(ElementType::Bf16));
    let res = m.results().unwrap();
    assert_eq!(res[0].name, "hidden");
    assert_eq!((res[1].memory_kind, res[2].memory_kind), (MemoryKind::PinnedHost, MemoryKind::Device));
    let p = m.parts().unwrap();
    assert_eq!(p.moves.len(), 3);
    assert_eq!(p.kernels[0].func_name, "nki_tensor_add");
    assert_eq!(p.kernels[0].input_names, ["a_input", "b_input"]);
    assert_eq!(p.kernels[0].grid, [2, 1]);
    assert_eq!(p.host_compute[0].function, "main");
    assert_eq!(p.channels[0].source_target_pairs, [(0, 1), (1, 0)]);
    assert_eq!(p.custom_call_targets.get("my-target.v2"), Some(&1));
    assert!(p.warnings.is_empty());
    let js = m.to_json().unwrap();
    assert_eq!(Manifest::load_json(&js).unwrap().to_json().unwrap(), js);

    let two = std::fs::read_to_string(data("two_entries.mlir")).unwrap();
    assert_eq!(Manifest::list_entries(&two, None).unwrap(), ["prefill", "decode"]);
    let opts = ManifestOptions { entry: Some("decode".into()), ..ManifestOptions::default() };
    assert_eq!(Manifest::load_text(&two, &opts).unwrap().results().unwrap()[0].memory_kind, MemoryKind::UnpinnedHost);
    assert_eq!(code(Manifest::load_text(&two, &ManifestOptions::default())), Code::NotFound);
    let e = Manifest::load_file(&data("bad_kind.mlir"), &ManifestOptions::default()).err().unwrap();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("bad_kind.mlir:"), "{}", e);
    let e = Manifest::list_entries("func.func @f(", Some("x.mlir")).err().unwrap();
    assert!(e.message().starts_with("x.mlir:1:"), "{}", e);
}

// Text -> Manifest::write_artifact -> an artifact that loads into the same manifest; the target names the
// producer; a target out of range and a chlo op are refused (neuronmem_manifest_write_artifact).
#[test]
fn write_artifact() {
    let text = "func.func @main(%arg0: tensor<4xf32> {mhlo.memory_kind = \"pinned_host\"}) -> tensor<4xf32> {\n  \
                %0 = stablehlo.exponential %arg0 : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n";
    let opts = ManifestOptions { filename: Some("e.mlir".into()), ..ManifestOptions::default() };
    let want = Manifest::load_text(text, &opts).unwrap().to_json().unwrap();
    let dir = std::env::temp_dir().join(format!("neuronmem-rust-artifact-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (target, producer) in [(None, &b"StableHLO_v"[..]), (Some("1.0.0"), &b"StableHLO_v1.0.0\0"[..])] {
        let data = Manifest::write_artifact(text, target, Some("e.mlir")).unwrap();
        assert_eq!(&data[..4], b"ML\xefR");
        assert!(data[..40].windows(producer.len()).any(|w| w == producer), "{:?}: {:?}", target, &data[..40]);
        // The artifact is not UTF-8 text: loaded from a file.
        let path = dir.join("e.mlir.bc");
        std::fs::write(&path, &data).unwrap();
        let got = Manifest::load_file(&path, &ManifestOptions::default()).unwrap().to_json().unwrap();
        assert_eq!(got.replace("e.mlir.bc", "e.mlir"), want, "{:?}", target);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let old = Manifest::write_artifact(text.as_bytes(), Some("1.0.0"), None).unwrap();
    assert!(old.windows(15).any(|w| w == b"exponential_v1\0"));
    assert_eq!(code(Manifest::write_artifact(text, Some("9.0.0"), None)), Code::InvalidArgument);
    let chlo = text.replace("stablehlo.exponential %arg0 : tensor<4xf32>", "chlo.erf %arg0 : tensor<4xf32> -> tensor<4xf32>");
    let e = Manifest::write_artifact(&chlo, None, Some("erf.mlir")).err().unwrap();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("chlo.erf"), "{}", e);
    assert_eq!(code(Manifest::write_artifact("func.func @f(", None, None)), Code::InvalidArgument);
    assert_eq!(code(Manifest::write_artifact(text, Some("1.0\0.0"), None)), Code::InvalidArgument);
}

// The composites of a manifest with their name, decomposition, version and composite_attributes (issue 26).
#[test]
fn manifest_composites() {
    let m = Manifest::load_file(&data("composites.mlir"), &ManifestOptions::default()).unwrap();
    assert_eq!(m.counts().unwrap().num_composites, 2);
    let p = m.parts().unwrap();
    let attr = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(
        p.composites,
        [
            Composite {
                function: "main".into(),
                name: "my.scale_shift".into(),
                decomposition: "my.scale_shift".into(),
                version: 3,
                attributes: vec![attr("scale", "2.000000e+00 : f32"), attr("tag", "fast")],
                line: 5,
                column: 5,
            },
            Composite {
                function: "main".into(),
                name: "ns.add".into(),
                decomposition: "add_impl".into(),
                version: 0,
                attributes: vec![],
                line: 6,
                column: 5,
            },
        ]
    );
    let plain = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n";
    assert!(Manifest::load_text(plain, &ManifestOptions::default()).unwrap().parts().unwrap().composites.is_empty());
}

#[test]
fn placement_and_upload_plan() {
    let m = Manifest::load_file(&data("decode_step.mlir"), &ManifestOptions::default()).unwrap();
    let c = Client::new(&Options { num_cores: 2, device_bytes_per_core: 4 << 20, pinned_host_bytes: 32 << 20,
                                   ..Options::default() }).unwrap();
    let dev = c.lookup_device(1).unwrap();
    let arg_ids: Vec<i32> = (0..4).map(|i| m.argument_memory(&dev, i).unwrap().id().unwrap()).collect();
    assert_eq!(arg_ids, [3, 3, 2, 2]);
    let res_ids: Vec<i32> = (0..3).map(|i| m.result_memory(&dev, i).unwrap().id().unwrap()).collect();
    assert_eq!(res_ids, [2, 3, 2]);
    assert_eq!(code(m.argument_memory(&dev, 9)), Code::OutOfRange);
    let args = m.arguments().unwrap();
    let contents: Vec<Vec<u8>> = args.iter().enumerate()
        .map(|(i, a)| (0..a.size().unwrap()).map(|j| (j % 97) as u8 + i as u8).collect()).collect();
    let mut hosts = Vec::new();
    for (a, bytes) in args.iter().zip(&contents) {
        if a.memory_kind == MemoryKind::PinnedHost {
            let mut hm = c.host_allocate(bytes.len() as u64, 0).unwrap();
            hm.as_mut_slice().copy_from_slice(bytes);
            hosts.push(hm);
        }
    }
    {
        let ups: Vec<UploadArgument> = vec![UploadArgument::Host(&hosts[0], 0), UploadArgument::Host(&hosts[1], 0),
                                            UploadArgument::Bytes(&contents[2]), UploadArgument::Bytes(&contents[3])];
        let bad = [UploadArgument::Bytes(&contents[2][..3])];
        assert_eq!(code(m.upload_arguments(&dev, &bad, Semantics::ImmutableZeroCopy)), Code::InvalidArgument);
        let (bufs, ready) = m.upload_arguments(&dev, &ups, Semantics::ImmutableZeroCopy).unwrap();
        ready.wait(None).unwrap();
        for (i, b) in bufs.iter().enumerate() {
            assert_eq!(b.memory().unwrap(), m.argument_memory(&dev, i).unwrap());
            assert_eq!(b.is_zero_copy().unwrap(), i < 2, "argument {}", i);
            let mut out = vec![0u8; contents[i].len()];
            b.read_all(&mut out).unwrap();
            assert_eq!(out, contents[i]);
        }
    }
    drop(hosts);
    c.close().unwrap();
}

#[test]
fn handles_are_send_and_sync_as_the_c_contract_allows() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Client>();
    send_sync::<Device>();
    send_sync::<Memory>();
    send_sync::<HostMemory>();
    send_sync::<Buffer>();
    send_sync::<Event>();
    send_sync::<Manifest>();
    send_sync::<Error>();
    // And used so: a buffer read from several threads at once, an event waited on from another thread.
    let c = client(1);
    let buf = c.lookup_memory(0).unwrap().buffer_from_slice(&[64], &[7u32; 64], &[]).unwrap();
    let ready = buf.ready_event().unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| assert_eq!(buf.to_vec::<u32>().unwrap(), vec![7u32; 64]));
        }
        s.spawn(|| ready.wait(None).unwrap());
    });
}

const EXEC_TEXT: &str = r#"func.func @main(%w: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.multiply %w, %x : tensor<4xf32>
  %1 = stablehlo.custom_call @MoveToHost(%0) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
"#;

// A shape-polymorphic entry (jax.export's symbolic dimension b) runs a specialization per argument shape; the
// properties count them (issue 26).
#[test]
fn shape_polymorphic_executable() {
    let text = "module @jit_f attributes {jax.uses_shape_polymorphism = true} {
  func.func public @main(%arg0: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x2xf32>) -> tensor<i32>
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
    %2 = call @_wrapped_jax_export_main(%1, %arg0) : (tensor<i64>, tensor<?x2xf32>) -> tensor<?x2xf32>
    return %2 : tensor<?x2xf32>
  }
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = \"b\"},
      %arg1: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %0 = stablehlo.multiply %arg1, %arg1 : tensor<?x2xf32>
    return %0 : tensor<?x2xf32>
  }
}
";
    let c = client(1);
    let dev = c.lookup_device(0).unwrap();
    let exe = c.compile(text, &CompileOptions::default()).unwrap();
    assert_eq!(exe.parameters().unwrap()[0].dims, [-1, 2]);
    for b in [2i64, 5, 2] {
        let x: Vec<f32> = (0..2 * b).map(|i| i as f32).collect();
        let arg = exe.parameter_memory(&dev, 0).unwrap().buffer_from_slice(&[b, 2], &x, &[]).unwrap();
        let (results, done, _run) = exe.execute(&dev, &[&arg], &[], &[]).unwrap();
        done.wait(None).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v * v).collect();
        assert_eq!(results[0].to_vec::<f32>().unwrap(), want);
    }
    assert_eq!(exe.properties().unwrap().num_specializations, 2);
}

#[test]
fn executables() {
    let c = client(2);
    let dev = c.lookup_device(1).unwrap();
    let opts = CompileOptions { filename: Some("rust.mlir".into()), ..CompileOptions::default() };
    let exe = c.compile(EXEC_TEXT, &opts).unwrap();
    let p = exe.properties().unwrap();
    assert_eq!((p.num_parameters, p.num_outputs, p.num_replicas, p.num_explicit_moves), (2, 2, 2, 1));
    let params = exe.parameters().unwrap();
    let outs = exe.outputs().unwrap();
    assert_eq!((params[0].memory_kind, params[1].memory_kind), (MemoryKind::PinnedHost, MemoryKind::Device));
    assert_eq!((outs[1].memory_kind, &outs[1].dims[..], outs[1].bytes), (MemoryKind::PinnedHost, &[4i64][..], 16));
    assert_eq!(exe.parameter_memory(&dev, 0).unwrap().id().unwrap(), 3);
    assert_eq!(exe.output_memory(&dev, 0).unwrap().id().unwrap(), 2);
    let w = exe.parameter_memory(&dev, 0).unwrap().buffer_from_slice(&[4], &[1f32, 2.0, 3.0, 4.0], &[]).unwrap();
    let x = exe.parameter_memory(&dev, 1).unwrap().buffer_from_slice(&[4], &[2f32; 4], &[]).unwrap();
    let (results, done, run) = exe.execute(&dev, &[&w, &x], &[], &[]).unwrap();
    done.wait(None).unwrap();
    assert_eq!(results[1].to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0, 8.0]);
    assert_eq!(results[1].memory().unwrap().kind().unwrap(), MemoryKind::PinnedHost);
    let st = run.stats().unwrap();
    assert_eq!((st.explicit_transfers, st.explicit_bytes, st.implicit_transfers), (1, 16, 0));
    let tc = run.transfers(MemoryKind::Device, MemoryKind::PinnedHost).unwrap();
    assert_eq!((tc.explicit_transfers, tc.implicit_transfers), (1, 0));
    // Strict placement and a wrong argument count are errors; nothing is created.
    let misplaced = dev.default_memory().unwrap().buffer_from_slice(&[4], &[1f32; 4], &[]).unwrap();
    assert_eq!(code(exe.execute(&dev, &[&misplaced, &x], &[], &[])), Code::FailedPrecondition);
    assert_eq!(code(exe.execute(&dev, &[&x], &[], &[])), Code::InvalidArgument);
    let bad = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.custom_call @nope(%a) : \
               (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n";
    let e = c.compile(bad, &CompileOptions { filename: Some("bad.mlir".into()), ..CompileOptions::default() })
        .err()
        .unwrap();
    assert_eq!(e.code(), Code::Unimplemented);
    assert!(e.message().contains("bad.mlir:"), "{}", e);
    let m = Manifest::load_text(EXEC_TEXT, &ManifestOptions::default()).unwrap();
    assert_eq!(c.compile_manifest(&m, &CompileOptions::default()).unwrap().parameters().unwrap().len(), 2);
}

const SPMD_TEXT: &str = "module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
";

#[test]
fn launches_on_several_devices() {
    let c = client(2);
    let devs = c.devices().unwrap();
    let exe = c.compile(SPMD_TEXT, &CompileOptions::default()).unwrap();
    let p = exe.properties().unwrap();
    assert_eq!((p.num_replicas, p.num_partitions), (1, 2));
    assert_eq!(exe.logical_ids(&devs[1]).unwrap(), (0, 1));
    let a0 = devs[0].default_memory().unwrap().buffer_from_slice(&[4], &[1f32; 4], &[]).unwrap();
    let a1 = devs[1].default_memory().unwrap().buffer_from_slice(&[4], &[2f32; 4], &[]).unwrap();
    let gate = c.new_event().unwrap();
    let (results, done, runs) =
        exe.execute_devices(&[&devs[0], &devs[1]], &[&[&a0], &[&a1]], &[&[&gate], &[]], &[]).unwrap();
    done[1].wait(None).unwrap(); // device 1 waits for nothing
    assert!(!done[0].is_ready().unwrap());
    gate.complete(None).unwrap();
    done[0].wait(None).unwrap();
    assert_eq!(results[0][0].to_vec::<f32>().unwrap(), [2.0; 4]);
    assert_eq!(results[1][0].to_vec::<f32>().unwrap(), [4.0; 4]);
    for run in &runs {
        let st = run.stats().unwrap();
        assert_eq!((st.peer_transfers, st.peer_bytes, st.implicit_transfers), (0, 0, 0));
        assert_eq!(run.transfers(MemoryKind::Device, MemoryKind::Device).unwrap().peer_bytes, 0);
    }
    // A launch id (for a launch across the processes of a job) is accepted by a client of one process.
    let (results, done, _) = exe
        .execute_devices_launch(&[&devs[0], &devs[1]], &[&[&a0], &[&a1]], &[], &[], &HostCallbacks::new(), None, 42)
        .unwrap();
    for e in &done {
        e.wait(None).unwrap();
    }
    assert_eq!(results[1][0].to_vec::<f32>().unwrap(), [4.0; 4]);
    // A device listed twice: nothing is submitted.
    let e = exe.execute_devices(&[&devs[0], &devs[0]], &[&[&a0], &[&a0]], &[], &[]).err().unwrap();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("listed twice"), "{}", e);
    let one = c.compile(SPMD_TEXT, &CompileOptions { num_replicas: 1, num_partitions: 1, ..CompileOptions::default() })
        .unwrap();
    assert_eq!(code(one.logical_ids(&devs[1])), Code::InvalidArgument);
}

const HOST_TEXT: &str = "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %s = \"stablehlo.send\"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>,
      is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = \"stablehlo.recv\"(%s) {channel_handle = #stablehlo.channel_handle<handle = 6, type = 3>,
      is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %y = stablehlo.add %x, %r#0 : tensor<2xf32>
  return %y : tensor<2xf32>
}
";

#[test]
fn host_transfers_through_callbacks() {
    use std::sync::{Arc, Mutex};
    let c = client(2);
    let devs = c.devices().unwrap();
    let exe = c.compile(HOST_TEXT, &CompileOptions { filename: Some("host.mlir".into()), ..CompileOptions::default() })
        .unwrap();
    let a0 = devs[0].default_memory().unwrap().buffer_from_slice(&[2], &[1f32, 2.0], &[]).unwrap();
    let a1 = devs[1].default_memory().unwrap().buffer_from_slice(&[2], &[2f32, 3.0], &[]).unwrap();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&sent);
    let host = HostCallbacks::new()
        .send(5, move |t| {
            log.lock().unwrap().push((t.device(), t.as_slice::<f32>(0)?.to_vec()));
            if t.device() == 1 {
                return Err(Error::new(Code::DataLoss, "the host is gone"));
            }
            Ok(())
        })
        .recv(6, |t| {
            let v = 100.0 * (t.device() + 1) as f32;
            t.as_mut_slice::<f32>(0)?.fill(v);
            Ok(())
        });
    let (results, done, _runs) =
        exe.execute_devices_with_host(&[&devs[0], &devs[1]], &[&[&a0], &[&a1]], &[], &[], &host).unwrap();
    done[0].wait(None).unwrap();
    assert_eq!(results[0][0].to_vec::<f32>().unwrap(), [101.0, 102.0]);
    let e = done[1].wait(None).err().unwrap();
    assert_eq!(e.code(), Code::DataLoss);
    assert!(e.message().contains("the send callback of channel 5: the host is gone"), "{}", e);
    let mut got = sent.lock().unwrap().clone();
    got.sort_by_key(|(d, _)| *d);
    assert_eq!(got, vec![(0, vec![1.0, 2.0]), (1, vec![2.0, 3.0])]);
    // A missing callback is refused at execute, naming the channel.
    let only_send = HostCallbacks::new().send(5, |_| Ok(()));
    let e = exe.execute_devices_with_host(&[&devs[0], &devs[1]], &[&[&a0], &[&a1]], &[], &[], &only_send).err().unwrap();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("channel 6 has no recv callback"), "{}", e);
}

// psum over "x"=2 in a shard_map: each half of f32[4] gets the sum of both, the devices on both cores (issue 26).
#[test]
fn manual_computation_on_both_cores() {
    let text = r#"module @m {
  sdy.mesh @mesh = <["x"=2]>
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>]
        manual_axes={"x"} (%a: tensor<2xf32>) {
      %s = "stablehlo.all_reduce"(%a) ({
        ^bb0(%x: tensor<f32>, %y: tensor<f32>):
          %t = stablehlo.add %x, %y : tensor<f32>
          stablehlo.return %t : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
          channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}
          : (tensor<2xf32>) -> tensor<2xf32>
      sdy.return %s : tensor<2xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
"#;
    let c = client(2);
    let dev = c.lookup_device(0).unwrap();
    let exe = c.compile(text, &CompileOptions::default()).unwrap();
    assert_eq!(exe.properties().unwrap().num_manual_devices, 2);
    let arg = exe.parameter_memory(&dev, 0).unwrap().buffer_from_slice(&[4], &[1f32, 2., 30., 40.], &[]).unwrap();
    let (results, done, run) = exe.execute(&dev, &[&arg], &[], &[]).unwrap();
    done.wait(None).unwrap();
    assert_eq!(results[0].to_vec::<f32>().unwrap(), [31f32, 42., 31., 42.]);
    let st = run.stats().unwrap();
    assert_eq!((st.manual_cores, st.manual_threads), (2, 0));
}
