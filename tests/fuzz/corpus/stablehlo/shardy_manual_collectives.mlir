module @jit_f attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22x\22=2]>}"}, mhlo.num_partitions = 2 : i32} {
  sdy.mesh @m2 = <["x"=2], device_ids=[1, 0]>
  func.func public @main(%arg0: tensor<8x2xi32>) -> (tensor<4x2xi32>, tensor<8x2xi32>) {
    %1 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%arg0) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.in_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22x\22}, {}]>]>", xla.sdy.manual_axes = "#sdy<manual_axes{\22x\22}>"}} : (tensor<8x2xi32>) -> tensor<4x2xi32>
    %2 = call @xla.sdy.manual_computation_body(%1) {mhlo.frontend_attributes = {inlineable = "false"}} : (tensor<4x2xi32>) -> tensor<4x2xi32>
    %3 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%2) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.manual_axes = "#sdy<manual_axes{\22x\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{}, {}]>]>"}} : (tensor<4x2xi32>) -> tensor<4x2xi32>
    %4 = sdy.manual_computation(%arg0) in_shardings=[<@m2, [{"x"}, {}]>] out_shardings=[<@m2, [{"x"}, {}]>] manual_axes={"x"} (%a: tensor<4x2xi32>) {
      %p = stablehlo.partition_id : tensor<ui32>
      %g = "stablehlo.all_gather"(%a) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, use_global_device_ids} : (tensor<4x2xi32>) -> tensor<8x2xi32>
      %s = stablehlo.slice %g [0:4, 0:2] : (tensor<8x2xi32>) -> tensor<4x2xi32>
      sdy.return %s : tensor<4x2xi32>
    } : (tensor<8x2xi32>) -> tensor<8x2xi32>
    return %3, %4 : tensor<4x2xi32>, tensor<8x2xi32>
  }
  func.func @xla.sdy.manual_computation_body(%arg0: tensor<4x2xi32>) -> tensor<4x2xi32> {
    %0 = "stablehlo.all_reduce"(%arg0) ({
      ^bb0(%x: tensor<i32>, %y: tensor<i32>):
        %s = stablehlo.add %x, %y : tensor<i32>
        stablehlo.return %s : tensor<i32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids} : (tensor<4x2xi32>) -> tensor<4x2xi32>
    return %0 : tensor<4x2xi32>
  }
}
