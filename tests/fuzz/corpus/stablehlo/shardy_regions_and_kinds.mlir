#loc4 = loc("x.py":3:4)
module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["a"=2, "b"=1]>
  sdy.mesh @empty_mesh = <[]>
  func.func public @main(%arg0: tensor<4x4xf32> {mhlo.memory_kind = "pinned_host", sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, %arg1: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}], replicated={"a"}>}) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}) {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {}]> : tensor<4x4xf32>
    %1 = sdy.reshard %0 <@mesh, [{}, {"b"}]> : tensor<4x4xf32>
    %2 = sdy.propagation_barrier %1 allowed_direction=NONE : tensor<4x4xf32>
    %3 = sdy.manual_computation(%2, %arg1) in_shardings=[<@mesh, [{"a"}, {}]>, <@mesh, [{}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg2: tensor<2x4xf32> loc(#loc4), %arg3: tensor<4x4xf32>) {
      %10 = stablehlo.custom_call @annotate_device_placement(%arg2) {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = "device"}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
      sdy.return %10 : tensor<2x4xf32>
    } : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = sdy.named_computation<"foo">(%3) in_shardings=[<@mesh, [{"a"}, {}]>] (%arg2: tensor<4x4xf32>) {
      %5 = stablehlo.add %arg2, %arg2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>]>} : tensor<4x4xf32>
      sdy.return %5 : tensor<4x4xf32>
    } : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %4 : tensor<4x4xf32>
  }
}
