func.func @main(%a: tensor<4xf32>) -> tensor<1xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%a, %z) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f16>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 2>, window_strides = array<i64: 9223372036854775807>, padding = dense<[[96854775807, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>, tensor<f32>) -> tensor<1xf32>
  func.return %r : tensor<1xf32>
}
