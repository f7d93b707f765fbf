//! The Rust side of the bindings' latency figures (scripts/bench-bindings.sh; the C baseline is
//! bindings/bench/upload_latency.c): a 256-byte f32[64] upload into core 0's device memory then drop, and a
//! 256-byte in-place write. Prints "rust upload <ns/op>" and "rust write <ns/op>" (best of 5 means).
use neuronmem::{Client, Options};
use std::time::Instant;

fn best_of(n: u32, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> neuronmem::Result<()> {
    let n: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let client = Client::new(&Options { num_cores: 2, ..Options::default() })?;
    let mem = client.lookup_memory(0)?;
    let data: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let upload = best_of(n, || drop(mem.buffer_from_slice(&[64], &data, &[]).expect("upload")));
    println!("rust upload {:.1}", upload);
    let buf = mem.buffer_from_slice(&[64], &data, &[])?;
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    let write = best_of(n, || buf.write(&bytes, 0, &[]).expect("write"));
    println!("rust write {:.1}", write);
    Ok(())
}
