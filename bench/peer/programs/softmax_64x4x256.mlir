func.func @main(%x: tensor<64x4x256xf32>) -> tensor<64x4x256xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [2] : (tensor<64x4x256xf32>, tensor<f32>) -> tensor<64x4xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0, 1] : (tensor<64x4xf32>) -> tensor<64x4x256xf32>
  %d = stablehlo.subtract %x, %mb : tensor<64x4x256xf32>
  %e = stablehlo.exponential %d : tensor<64x4x256xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<64x4x256xf32>, tensor<f32>) -> tensor<64x4xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0, 1] : (tensor<64x4xf32>) -> tensor<64x4x256xf32>
  %y = stablehlo.divide %e, %sb : tensor<64x4x256xf32>
  return %y : tensor<64x4x256xf32>
}
