module @passthrough {
  func.func public @main(%arg0: tensor<4x4xf32> {mhlo.memory_kind = "pinned_host"}, %arg1: tensor<4x4xf32>)
      -> tensor<4x4xf32> {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {}]> : tensor<4x4xf32>
    %1 = stablehlo.custom_call @annotate_device_placement(%0) {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = "device"}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = sdy.reshard %arg0 <@mesh, [{}, {"a"}]> : tensor<4x4xf32>
    %3 = sdy.propagation_barrier %2 allowed_direction=NONE : tensor<4x4xf32>
    %4 = stablehlo.custom_call @MoveToDevice(%3) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = stablehlo.custom_call @SPMDFullToShardShape(%5) {mhlo.sharding = "{manual}"} : (tensor<4x4xf32>) -> tensor<2x4xf32>
    %7 = stablehlo.custom_call @SPMDShardToFullShape(%6) {mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<2x4xf32>) -> tensor<4x4xf32>
    %8 = stablehlo.custom_call @MoveToDevice(%7) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %9:2 = stablehlo.optimization_barrier %arg1, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>
    %10 = stablehlo.reshape %9#1 : (tensor<4x4xf32>) -> tensor<16xf32>
    %11 = stablehlo.bitcast_convert %10 : (tensor<16xf32>) -> tensor<16xi32>
    %12 = stablehlo.custom_call @MoveToDevice(%11) : (tensor<16xi32>) -> tensor<16xi32>
    %13 = stablehlo.custom_call @MoveToDevice(%9#0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %14 = stablehlo.tuple %arg1, %arg0 : tuple<tensor<4x4xf32>, tensor<4x4xf32>>
    %15 = stablehlo.get_tuple_element %14[1] : (tuple<tensor<4x4xf32>, tensor<4x4xf32>>) -> tensor<4x4xf32>
    %16 = "stablehlo.get_tuple_element"(%14) {index = 0 : i32} : (tuple<tensor<4x4xf32>, tensor<4x4xf32>>) -> tensor<4x4xf32>
    %17 = stablehlo.custom_call @MoveToDevice(%15) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %18 = stablehlo.custom_call @MoveToDevice(%16) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %19 = stablehlo.add %arg0, %arg0 : tensor<4x4xf32>
    %20 = stablehlo.custom_call @MoveToDevice(%19) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %20 : tensor<4x4xf32>
  }
}
