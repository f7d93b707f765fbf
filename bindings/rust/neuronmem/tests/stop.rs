//! Stopping runaway executions through the Rust binding (issue 23): cancel, per-execute and client deadlines.
use neuronmem::*;
use std::time::{Duration, Instant};

const ENDLESS: &str = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.while(%v = %a) : tensor<4xf32>
    cond {
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1.0> : tensor<4xf32>
      %n = stablehlo.add %v, %one : tensor<4xf32>
      stablehlo.return %n : tensor<4xf32>
    }
  return %0 : tensor<4xf32>
}
";

fn client(timeout: Option<Duration>) -> Client {
    Client::new(&Options { num_cores: 1, device_bytes_per_core: 2 << 20, pinned_host_bytes: 32 << 20,
                           execution_timeout: timeout, ..Options::default() })
        .unwrap()
}

fn code(r: Result<()>) -> Code {
    r.expect_err("expected an error").code()
}

#[test]
fn cancel_and_deadlines_stop_an_endless_loop() {
    let c = client(None);
    let dev = c.lookup_device(0).unwrap();
    let exe = c.compile(ENDLESS, &CompileOptions::default()).unwrap();
    let a = dev.default_memory().unwrap().buffer_from_slice(&[4], &[1f32, 2.0, 3.0, 4.0], &[]).unwrap();
    let t0 = Instant::now();
    let (results, done, run) = exe.execute(&dev, &[&a], &[], &[]).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2), "execute ran the loop on the caller");
    std::thread::sleep(Duration::from_millis(20));
    assert!(!done.is_ready().unwrap());
    run.cancel().unwrap();
    assert_eq!(code(done.wait(Some(Duration::from_secs(10)))), Code::Cancelled);
    run.cancel().unwrap(); // after the end: nothing changes
    drop((results, done, run));

    let (results, done, _run) =
        exe.execute_timeout(&dev, &[&a], &[], &[], Some(Duration::from_millis(30))).unwrap();
    assert_eq!(code(done.wait(Some(Duration::from_secs(10)))), Code::DeadlineExceeded);
    drop(results);

    let (results, done, _runs) = exe
        .execute_devices_timeout(&[&dev], &[&[&a]], &[], &[], &HostCallbacks::new(), Some(Duration::from_millis(30)))
        .unwrap();
    assert_eq!(code(done[0].wait(Some(Duration::from_secs(10)))), Code::DeadlineExceeded);
    drop(results);
}

#[test]
fn client_default_deadline_and_its_opt_out() {
    let c = client(Some(Duration::from_millis(30)));
    let dev = c.lookup_device(0).unwrap();
    let exe = c.compile(ENDLESS, &CompileOptions::default()).unwrap();
    let a = dev.default_memory().unwrap().buffer_from_slice(&[4], &[1f32; 4], &[]).unwrap();
    let (results, done, _run) = exe.execute(&dev, &[&a], &[], &[]).unwrap();
    assert_eq!(code(done.wait(Some(Duration::from_secs(10)))), Code::DeadlineExceeded);
    drop(results);
    let (results, done, run) = exe.execute_timeout(&dev, &[&a], &[], &[], Some(Duration::MAX)).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!done.is_ready().unwrap(), "Duration::MAX still timed out");
    run.cancel().unwrap();
    assert_eq!(code(done.wait(Some(Duration::from_secs(10)))), Code::Cancelled);
    drop(results);
}
