// Two public functions and a private one, no @main: the CLI's --entry chooses one, --all prints both.
module @two_entries {
  func.func public @prefill(%arg0: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @annotate_device_placement(%arg0) {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = "device"}} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @helper(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @helper(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    return %arg0 : tensor<4xf32>
  }
  func.func @decode(%arg0: tensor<2xi32>) -> (tensor<2xi32> {mhlo.memory_kind = "unpinned_host"}) {
    return %arg0 : tensor<2xi32>
  }
}
