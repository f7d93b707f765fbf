func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>) {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %s = stablehlo.add %t, %b : tensor<3x2xf32>
  %c = stablehlo.constant dense<1.0> : tensor<f32>
  %p = stablehlo.pad %a, %c, low = [0, 1], high = [0, -1], interior = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %d, %s, %p : tensor<2x2xf32>, tensor<3x2xf32>, tensor<2x3xf32>
}
