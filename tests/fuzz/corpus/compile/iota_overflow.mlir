func.func @main() -> tensor<4294967296x4294967296xf32> {
  %r = stablehlo.iota dim = 0 : tensor<4294967296x4294967296xf32>
  func.return %r : tensor<4294967296x4294967296xf32>
}
