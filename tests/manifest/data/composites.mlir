// jax.lax.composite's export: a composite in pretty form (its decomposition a private function named after
// it, with version and composite_attributes) and one in generic form. The bindings' manifest tests read it.
module @jit_scaled_add {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.composite "my.scale_shift" %arg0 {composite_attributes = {scale = 2.000000e+00 : f32, tag = "fast"}, decomposition = @my.scale_shift, version = 3 : i32} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "stablehlo.composite"(%0, %arg1) {decomposition = @add_impl, name = "ns.add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @my.scale_shift(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
    %0 = stablehlo.multiply %arg0, %cst : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @add_impl(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
