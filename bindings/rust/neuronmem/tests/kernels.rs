//! Custom kernels written in Rust: a plain custom call and an NKI call (AwsNeuronCustomNativeKernel) with a
//! grid, computed by closures; a kernel's error or panic fails the execution with its message and never
//! unwinds into the library; the client owns its kernels.
use neuronmem::*;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

fn client() -> Client {
    Client::new(&Options { num_cores: 2, device_bytes_per_core: 2 << 20, pinned_host_bytes: 32 << 20,
                           ..Options::default() })
        .unwrap()
}

const SCALE: &str = r#"func.func @main(%a: tensor<2x2xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<2x2xf32> {
  %0 = stablehlo.custom_call @rs.scale2(%a) {backend_config = "opaque-config"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = stablehlo.add %0, %0 : tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}
"#;

/// base64 (standard alphabet, padded) of `bytes`: the NKI backend_config encoding.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn nki_text(func_name: &str, grid: i64) -> String {
    let config = base64(format!(r#"{{"func_name":"{}","grid":[{}]}}"#, func_name, grid).as_bytes());
    format!(
        r#"func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {{
  %0 = stablehlo.custom_call @AwsNeuronCustomNativeKernel(%a, %b)
      {{backend_config = "{}"}}
      : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}}
"#,
        config
    )
}

/// Uploads `args` into the parameter memories of device 0, executes, and reads the first result.
fn run(c: &Client, exe: &Executable<'_>, dims: &[i64], args: &[&[f32]]) -> Result<Vec<f32>> {
    let dev = c.lookup_device(0)?;
    let bufs: Vec<Buffer<'_>> = args
        .iter()
        .enumerate()
        .map(|(i, a)| exe.parameter_memory(&dev, i).unwrap().buffer_from_slice(dims, a, &[]).unwrap())
        .collect();
    let refs: Vec<&Buffer<'_>> = bufs.iter().collect();
    let (results, done, _run) = exe.execute(&dev, &refs, &[], &[])?;
    done.wait(None)?;
    results[0].to_vec::<f32>()
}

#[test]
fn base64_matches_the_c_test() {
    assert_eq!(base64(br#"{"func_name":"nki_add","grid":[4]}"#), "eyJmdW5jX25hbWUiOiJua2lfYWRkIiwiZ3JpZCI6WzRdfQ==");
}

#[test]
fn plain_custom_call() {
    let c = client();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    c.register_kernel("rs.scale2", move |k| {
        let input: Vec<f32> = k.inputs()[0].as_slice::<f32>()?.to_vec();
        log.lock().unwrap().push(format!("{} {} {} {:?} {:?} {:?} {:?} {}", k.target(), k.name(), k.backend_config(),
                                         k.grid(), k.inputs()[0].dims(), k.inputs()[0].memory_kind()?,
                                         k.outputs()[0].memory_kind()?, k.device()));
        assert_eq!(code(k.inputs()[0].as_slice::<i32>()), Code::InvalidArgument);
        for (o, i) in k.outputs_mut()[0].as_mut_slice::<f32>()?.iter_mut().zip(input) {
            *o = 2.0 * i;
        }
        Ok(())
    })
    .unwrap();
    let exe = c.compile(SCALE, &CompileOptions::default()).unwrap();
    assert_eq!(run(&c, &exe, &[2, 2], &[&[1.0, 2.0, 3.0, 4.0]]).unwrap(), [4.0, 8.0, 12.0, 16.0]);
    assert_eq!(*seen.lock().unwrap(), ["rs.scale2 rs.scale2 opaque-config [] [2, 2] PinnedHost Device 0"]);
}

fn code<T>(r: Result<T>) -> Code {
    r.err().expect("an error").code()
}

#[test]
fn nki_kernel_with_a_grid() {
    let c = client();
    let points = Arc::new(Mutex::new(BTreeSet::new()));
    let seen = points.clone();
    c.register_kernel("nki_add", move |k| {
        assert_eq!((k.target().as_str(), k.grid()), ("AwsNeuronCustomNativeKernel", &[4i64][..]));
        let p = k.grid_index()[0] as usize;
        seen.lock().unwrap().insert(p);
        let (a, b) = (k.inputs()[0].as_slice::<f32>()?.to_vec(), k.inputs()[1].as_slice::<f32>()?.to_vec());
        let out = &mut k.outputs_mut()[0];
        assert_eq!(code(out.as_mut_slice::<f32>()), Code::FailedPrecondition); // grid points run at once
        // SAFETY: grid point p writes only elements [2p, 2p+2), which no other point touches.
        let out = unsafe { out.as_mut_slice_shared::<f32>()? };
        for i in 2 * p..2 * p + 2 {
            out[i] = a[i] + b[i];
        }
        Ok(())
    })
    .unwrap();
    let exe = c.compile(&nki_text("nki_add", 4), &CompileOptions::default()).unwrap();
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let b = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0];
    assert_eq!(run(&c, &exe, &[8], &[&a, &b]).unwrap(), [11.0, 22.0, 33.0, 44.0, 55.0, 66.0, 77.0, 88.0]);
    assert_eq!(*points.lock().unwrap(), (0..4).collect::<BTreeSet<usize>>());
}

#[test]
fn kernel_errors_and_panics_fail_the_execution() {
    let c = client();
    c.register_kernel("nki_fail", |k| {
        if k.grid_index() == [2] {
            return Err(Error::new(Code::DataLoss, "the tile was corrupt"));
        }
        Ok(())
    })
    .unwrap();
    c.register_kernel("rs_panic", |_| panic!("the kernel panicked on purpose")).unwrap();
    let ones = [1.0f32; 8];
    for (name, want, words) in [
        ("nki_fail", Code::DataLoss, ["kernel 'nki_fail' at grid point [2]", "the tile was corrupt"]),
        ("rs_panic", Code::Internal, ["the Rust kernel panicked", "the kernel panicked on purpose"]),
    ] {
        let opts = CompileOptions { filename: Some("k.mlir".into()), ..CompileOptions::default() };
        let exe = c.compile(&nki_text(name, 3), &opts).unwrap();
        let e = run(&c, &exe, &[8], &[&ones, &ones]).unwrap_err();
        assert_eq!(e.code(), want, "{}", e);
        for w in words.iter().chain(["k.mlir:2:"].iter()) {
            assert!(e.message().contains(w), "{} lacks {:?}", e, w);
        }
    }
    // The client stays usable; unregistered and bad names.
    assert_eq!(code(c.compile(&nki_text("missing", 1), &CompileOptions::default())), Code::Unimplemented);
    assert_eq!(code(c.register_kernel("", |_| Ok(()))), Code::InvalidArgument);
    assert_eq!(code(c.register_kernel("a\0b", |_| Ok(()))), Code::InvalidArgument);
    // Targets the executor runs itself are refused.
    for name in ["MoveToHost", "annotate_device_placement", "AwsNeuronCustomNativeKernel", "check.expect_eq"] {
        let e = c.register_kernel(name, |_| Ok(())).unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e);
        assert!(e.message().contains(name), "{}", e);
    }
}

#[test]
fn the_client_owns_its_kernels() {
    struct Tracked(Arc<Mutex<bool>>);
    impl Drop for Tracked {
        fn drop(&mut self) {
            *self.0.lock().unwrap() = true;
        }
    }
    let dropped = Arc::new(Mutex::new(false));
    let c = client();
    let tracked = Tracked(dropped.clone());
    c.register_kernel("k1", move |_| {
        let _keep = &tracked;
        Ok(())
    })
    .unwrap();
    {
        let exe = c.compile(&nki_text("k1", 1), &CompileOptions::default()).unwrap();
        assert_eq!(run(&c, &exe, &[8], &[&[0.0; 8], &[0.0; 8]]).unwrap().len(), 8);
    }
    assert!(!*dropped.lock().unwrap());
    c.close().unwrap();
    assert!(*dropped.lock().unwrap());
}
