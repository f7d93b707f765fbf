// An op of a dialect the parser does not know, in a custom form it cannot read: skipped with a warning.
module @mixed {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %arg1: tensor<4xf32>) -> tensor<4xf32> {
    %0 = acme.pack %arg1 into {1, 2} : tensor<4xf32>
    %1 = stablehlo.custom_call @annotate_device_placement(%arg0) {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = "device"}} : (tensor<4xf32>) -> tensor<4xf32>
    %2 = stablehlo.add %0, %1 : tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
