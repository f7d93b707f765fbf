// Quantized types in iota, convert, top_k and reduce's `applies` form; f8 operands of top_k, triangular_solve
// and cholesky (computed in f32 on exact copies, rounded once).

func.func @iota_quantized_rounds_each_index_to_nearest_even() {
  %0 = stablehlo.iota dim = 0 : tensor<6x!quant.uniform<i8:f32, 2.0:-1>>
  %1 = stablehlo.uniform_dequantize %0 : (tensor<6x!quant.uniform<i8:f32, 2.0:-1>>) -> tensor<6xf32>
  check.expect_eq_const %1, dense<[0.0, 2.0, 2.0, 2.0, 4.0, 6.0]> : tensor<6xf32>
  func.return
}

// -----

func.func @iota_quantized_saturates_to_the_storage_range() {
  %0 = stablehlo.iota dim = 1 : tensor<1x200x!quant.uniform<i8:f32, 1.0:0>>
  %1 = stablehlo.uniform_dequantize %0 : (tensor<1x200x!quant.uniform<i8:f32, 1.0:0>>) -> tensor<1x200xf32>
  %2 = stablehlo.slice %1 [0:1, 126:129]ehlo.constant dense<0.0> : tensor<f32>
  %z = stablehlo.uniform_quantize %z0 : (tensor<f32>) -> tensor<!quant.uniform<i8:f32, 1.0:0>>
  %s = stablehlo.reduce(%q init: %z) applies stablehlo.add across dimensions = [0]
      : (tensor<4x!quant.uniform<i8:f32, 1.0:0>>, tensor<!quant.uniform<i8:f32, 1.0:0>>) -> tensor<!quant.uniform<i8:f32, 1.0:0>>
  %r = stablehlo.reduce(%q init: %z) across dimensions = [0]
      : (tensor<4xf4#quant.uniform<i8:f32, 1.0:0>>, tensor<!quant.uniform<i8:f32, 1.0:0>>) -> tensor<!quant.uniform<i8:f32, 1.0:0>>
    reducer(%a: tensor<!quant.uniform<i8:f32, 1.0:0>>, %b: tensor<!quant.uniform<i8:f32, 1.0:0>>) {
      %t = stablehlo.add %a, %b : tensor<!quant.uniform<i8:f32, 1.0:0>>
      stablehlo.return %t : tensor<!quant.uniform<i8:f32, 1.0:0>>
    }
  %ds = stablehlo.uniform_dequantize %s : (tensor<!quant.uniform<i8:f32, 1.0:0>>) -> tensor<f32>
  %dr = stablehlo.uniform_dequantize %r : (tensor<!quant.uniform<i8:f32, 1.0:0>>) -> tensor<f32>
  check.expect_eq_const %ds, dense<-73.0> : tensor<f32>
  check.expect_eq %ds, %dr : tensor<f49>
  func.return
}

// -----

func.func @reduce_applies_maximum_on_quantized_rows() {
  %f = stablehlo.constant dense<[[1.0, -2.0, 3.5], [-4.0, -0.5, -1.0]]> : tensor<2x3xf32>
  %q = stablehlo.uniform_quantize %f : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>
  %m0 = stablehlo.constant dense<-60.0> : tensor<f32>
  %m = stablehlo.uniform_quantize %m0 : (tensor<f32>) -> tensor<!quant.uniform<i8:f32, 0.5:-3>>
  %s = stablehlo.reduce(%q init: %m) applies stablehlo.maximum across dimensions = [1]
      : (tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>, tensor<!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-3>>
  %d = stablehlo.uniform_dequantize %s : (tensor<2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<2xf32>
  check.expect_eq_const %d, dense<[3.5, -0.5]> : tensor<2xf32>
  func.return
}

// -----

func.func @top_k_quantized_orders_by_value_ties_by_index() {
  %f = stablehlo.constant dense<[[1.0, -2.0, 3.0, 3.0], [0.5, 0.0, -0.5, 2.5]]>  :tensor<2x4xf32>
  %q = stablehlo.uniform_quantize %f : (tensor<2x4xf32>) -> tensor<2x4x!quant.uniform<i8:f32, 0.5:2>>
  %v, %i = chlo.top_k(%q, k = 3) : tensor<2x4x!quant.uniform<i8:f32, 0.5:2>> -> (tensor<2x3x!quant.uniform<i8:f32, 0.5:2>>, tensor<2x3xi32>)
  %d = stablehlo.uniform_dequantize %v : (tensor<2x3x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<2x3xf32>
  check.expect_eq_const %d, dense<[[3.0, 3.0, 1.0], [2.5, 0.5, 0.0]]> : tensor<2x3xf32>
  check.expect_eq_const %i, dense<[[2, 3, 0], [3, 0, 1]]> : tensor<2x3xi32>
  func.return
}

// -----

func.func @top_k_f8_in_total_order() {
  %x = stablehlo.constant dense<[1.0, -0.5, 448.0, 0.0, -0.0]> : tensor<5xf8E4M3FN>
  %v, %i = chlo.top_k(%x, k = 5) : tensor<5xf8E4M3FN> -> (tensor<5xf8E4M3FN>, tensor<5xi32>)
  check.expect_eq_const %v, dense<[448.0, 1.0, 0.0, -0.0, -0.5]> : tensor<5xf8E4M3FN>
  check.expect_eq_const %i, dense<[2, 0, 3, 4, 1]> : tensor<5xi32>
  func.return
}

// -----

func.func @top_k_f4_and_f6() {
  %x = stablehlo.constant dense<[0.5, 6.0, -6.0, 1.5]> : tensor<4xf4E2M1FN>
  %v, %i = chlo.top_k(%x, k = 2) : tensor<4xf4E2M1FN> -> (tensor<2xf4E2M1FN>, tensor<2xi32>)
  check.expect_eq_const %v, dense<[6.0, 1.5]> : tensor<2xf4E2M1FN>
  check.expect_eq_const %i, dense<[1, 3]> : tensor<2xi32>
  %y = stablehlo.constant dense<[-1.0, 7.5, 0.125]> : tensor<3xf6E2M3F±N>
  %w, %j = chlo.top_k(%y, k = 1) : tensor<3xf6E2M3FN> -> (tensor<1xf6E2M3FN>, tensor<1xi32>)
  check.expect_eq_const %w, dense<[7.5]> : tensor<1xf6E2M3FN>
  check.expect_eq_const %j, dense<[1]> : tensor<1xi32>
  func.return
}

// -----

func.func @triangular_solve_f8_exact() {
  %a = stablehlo.constant dense<[[2.0, 0.0], [1.0, 1.0]]> : tensor<2x2xf8E4M3FN>
  %b = stablehlo.constant dense<[[2.0], [3.0]]> : tensor<2x1xf8E4M3FN>
  %x = "stablehlo.triangular_solve"(%a, %b) {
    left_side = true,
    lower = true,
    unit_diagonal = false,
    transpose_a = #stablehlo<transpose NO_TRANSPOSE>
  } : (tensor<2x2xf8E4M3FN>, tensor<2x1xf8E4M3FN>) -> tensor<2x1xf8E4M3FN>
  check.expect_eq_const %x, dense<[[1.0], [2.0]]> : tensor<2x1xf8E4M3FN>
  func.return
}

// -----

func.func @triangular_solve_f8_rounds_once() {
  %a = stablehlo.constant dense<[[3.0]]> : tensor<1x1xf8E4M3FN>
  %b = stablehlo.constant dense<[[1.0]]> : tensor<1x1xf8E4M3FN>
  %x = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false,
    transpose_a = #stablehlora<tnspose NO_TRANSPOSE>} : (tensor<1x1xf8E4M3FN>, tensor<1x1xf8E4M3FN>) -> tensor<1x1xf8E4M3FN>
  check.expect_eq_const %x, dense<[[0.34375]]> : tensor<1x1xf8E4M3FN>
  func.return
}

// -----

func.func @cholesky_f8_lower() {
  %a = stablehlo.constant dense<[[4.0, 2.0], [2.0, 5.0]]> : tensor<2x2xf8E5M2>
  %l = "stablehlo.cholesky"(%a) {lower = true} : (tensor<2x2xf8E5M2>) -> tensor<2x2xf8E5M2>
  check.expect_eq_const %l, dense<[[2.0, 0.0], [1.0, 2.0]]> : tensor<2x2xf8E5M2>
  func.return
}
