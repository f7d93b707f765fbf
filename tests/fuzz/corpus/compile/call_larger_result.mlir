func.func @main(%a: tensor<4xf32>) -> tensor<1024xf32> {
  %r = func.call @f(%a) : (tensor<4xf32>) -> tensor<1024xf32>
  func.return %r : tensor<1024xf32>
}
func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = stablehlo.add %a, %a : tensor<4xf32>
  func.return %b : tensor<4xf32>
}
