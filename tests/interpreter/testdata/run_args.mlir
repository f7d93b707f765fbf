// RUN: stablehlo-translate %s --interpret --args="[dense<[1, 2]> : tensor<2xi32>, dense<[[1.5, -2.0]]> : tensor<1x2xf32>, dense<(1.0, -2.5)> : tensor<complex<f32>>, dense<true> : tensor<i1>, dense<\"0x0000803F\"> : tensor<f32>]" | FileCheck %s
// RUN: not stablehlo-translate %s --interpret --args="not_array" 2>&1 | FileCheck %s --check-prefixes=CHECK-ERROR
// The entry's arguments come from the first RUN line's --args (stablehlo-translate --interpret's option): splats,
// nested lists, complex values, hex strings; the `not` line's malformed list is not the one used.

func.func @main(%a: tensor<2xi32>, %b: tensor<1x2xf32>, %c: tensor<complex<f32>>, %d: tensor<i1>, %e: tensor<f32>) {
  check.expect_eq_const %a, dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %b, dense<[[1.5, -2.0]]> : tensor<1x2xf32>
  check.expect_eq_const %c, dense<(1.0, -2.5)> : tensor<complex<f32>>
  check.expect_eq_const %d, dense<true> : tensor<i1>
  check.expect_eq_const %e, dense<1.0> : tensor<f32>
  func.return
}
