func.func @main(%a: tensor<4xf32>) -> tensor<1024xi32> {
  func.return %a : tensor<4xf32>
}
