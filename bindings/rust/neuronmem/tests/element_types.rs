//! The element types from 13 on (issue 25): complex<f32> / complex<f64> as `[f32; 2]` / `[f64; 2]` pairs, the 8-
//! and 6-bit floats as `u8` bit patterns.
use neuronmem::*;

const COMPLEX: &str = "func.func @main(%re: tensor<2xf32>, %im: tensor<2xf32>) -> tensor<2xcomplex<f32>> {
  %0 = stablehlo.complex %re, %im : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}
";
const TO_F8: &str = "func.func @main(%z: tensor<2xcomplex<f64>>) -> tensor<2xf8E4M3FN> {
  %0 = stablehlo.real %z : (tensor<2xcomplex<f64>>) -> tensor<2xf64>
  %1 = stablehlo.convert %0 : (tensor<2xf64>) -> tensor<2xf8E4M3FN>
  return %1 : tensor<2xf8E4M3FN>
}
";

#[test]
fn complex_and_small_floats() {
    for (et, size) in [(ElementType::C64, 8), (ElementType::C128, 16), (ElementType::F8E5M2, 1),
                       (ElementType::F8E8M0FNU, 1), (ElementType::F6E3M2FN, 1)] {
        assert_eq!(et.size(), size, "{:?}", et);
    }
    assert!(ElementType::F6E2M3FN.is_small_float() && !ElementType::C128.is_small_float());
    let c = Client::new(&Options { num_cores: 1, ..Options::default() }).unwrap();
    let dev = c.lookup_device(0).unwrap();

    let exe = c.compile(COMPLEX, &CompileOptions::default()).unwrap();
    let outs = exe.outputs().unwrap();
    assert_eq!((outs[0].element_type, outs[0].bytes), (ElementType::C64, 16));
    let re = exe.parameter_memory(&dev, 0).unwrap().buffer_from_slice(&[2], &[1.5f32, -2.0], &[]).unwrap();
    let im = exe.parameter_memory(&dev, 1).unwrap().buffer_from_slice(&[2], &[0.25f32, 8.0], &[]).unwrap();
    let (results, done, _run) = exe.execute(&dev, &[&re, &im], &[], &[]).unwrap();
    done.wait(None).unwrap();
    assert_eq!(results[0].element_type().unwrap(), ElementType::C64);
    assert_eq!(results[0].to_vec::<[f32; 2]>().unwrap(), vec![[1.5, 0.25], [-2.0, 8.0]]);

    let exe = c.compile(TO_F8, &CompileOptions::default()).unwrap();
    let z = exe.parameter_memory(&dev, 0).unwrap().buffer_from_slice(&[2], &[[1.0f64, 7.0], [-2.0, 0.0]], &[]).unwrap();
    assert_eq!(z.element_type().unwrap(), ElementType::C128);
    let (results, done, _run) = exe.execute(&dev, &[&z], &[], &[]).unwrap();
    done.wait(None).unwrap();
    assert_eq!(results[0].element_type().unwrap(), ElementType::F8E4M3FN);
    assert_eq!(results[0].to_vec::<u8>().unwrap(), vec![0x38, 0xC0]);
}
