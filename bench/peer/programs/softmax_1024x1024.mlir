func.func @main(%x: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<1024x1024xf32>, tensor<f32>) -> tensor<1024xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<1024xf32>) -> tensor<1024x1024xf32>
  %d = stablehlo.subtract %x, %mb : tensor<1024x1024xf32>
  %e = stablehlo.exponential %d : tensor<1024x1024xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<1024x1024xf32>, tensor<f32>) -> tensor<1024xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<1024xf32>) -> tensor<1024x1024xf32>
  %y = stablehlo.divide %e, %sb : tensor<1024x1024xf32>
  return %y : tensor<1024x1024xf32>
}
