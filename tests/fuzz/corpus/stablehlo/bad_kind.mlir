func.func @main(%arg0: tensor<4xf32> {mhlo.memory_kind = "hbm"}) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}
