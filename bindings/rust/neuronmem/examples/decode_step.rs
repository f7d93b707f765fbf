//! Loads the manifest of a decode step, writes the decode metadata (block table, sequence lengths) into the
//! pinned-host arena, uploads every argument to the memory kind the manifest asks for (pinned_host arguments
//! zero-copy), and reads each buffer back.
//!
//!     cargo run --offline --example decode_step -- tests/manifest/data/decode_step.mlir
use neuronmem::{Client, Manifest, ManifestOptions, MemoryKind, Options, Semantics, UploadArgument};
use std::path::PathBuf;

fn main() -> neuronmem::Result<()> {
    let path = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../tests/manifest/data/decode_step.mlir")
    });
    let manifest = Manifest::load_file(&path, &ManifestOptions::default())?;
    let client = Client::new(&Options { num_cores: 2, ..Options::default() })?;
    let device = client.lookup_device(0)?;
    let args = manifest.arguments()?;
    let mut contents = Vec::new();
    let mut pinned = Vec::new();
    for a in &args {
        let bytes: Vec<u8> = (0..a.size()?).map(|j| (j % 251) as u8).collect();
        if a.memory_kind == MemoryKind::PinnedHost {
            // Decode metadata: written where the device reads it.
            let mut host = client.host_allocate(bytes.len() as u64, 0)?;
            host.as_mut_slice().copy_from_slice(&bytes);
            pinned.push(host);
        }
        contents.push(bytes);
    }
    let mut hosts = pinned.iter();
    let uploads: Vec<UploadArgument> = args
        .iter()
        .zip(&contents)
        .map(|(a, bytes)| match a.memory_kind {
            MemoryKind::PinnedHost => UploadArgument::Host(hosts.next().expect("one per pinned argument"), 0),
            _ => UploadArgument::Bytes(bytes),
        })
        .collect();
    let (buffers, ready) = manifest.upload_arguments(&device, &uploads, Semantics::ImmutableZeroCopy)?;
    ready.wait(None)?;
    for ((a, buffer), bytes) in args.iter().zip(&buffers).zip(&contents) {
        let mut back = vec![0u8; bytes.len()];
        buffer.read_all(&mut back)?;
        assert_eq!(&back, bytes, "argument {} did not read back", a.index);
        println!("{}: {}{:?} in {:?}{}", a.name, a.element_name, a.dims, buffer.memory()?,
                 if buffer.is_zero_copy()? { " (zero-copy)" } else { "" });
    }
    for (i, r) in manifest.results()?.iter().enumerate() {
        println!("result {} ({}) will live in {:?}", i, r.name, manifest.result_memory(&device, i)?);
    }
    println!("all {} arguments uploaded and read back", args.len());
    Ok(())
}
