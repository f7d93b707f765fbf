#loc1 = loc("decode.py":12:0)
#loc2 = loc("decode.py":13:4)
module @jit_decode_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xi32> {mhlo.memory_kind = "pinned_host", mhlo.sharding = "{replicated}"} loc("block_table"),
                         %arg1: tensor<8xi32> {mhlo.memory_kind = "pinned_host"} loc("seq_lens"),
                         %arg2: tensor<8x128xbf16> {jax.buffer_donor = true, tf.aliasing_output = 0 : i32} loc(#loc1),
                         %arg3: tensor<8x128xf32>)
      -> (tensor<8x128xbf16> {jax.result_info = "hidden", mhlo.memory_kind = "device"},
          tensor<8x128xf32> {jax.result_info = "offloaded",
                             mhlo.memory_kind = "pinned_host"}, tensor<8xi32>) {
    %0 = stablehlo.custom_call @annotate_device_placement(%arg1) {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = "device"}} : (tensor<8xi32>) -> tensor<8xi32> loc(#loc2)
    %1 = stablehlo.add %arg3, %arg3 : tensor<8x128xf32> loc("add")
    %2 = stablehlo.custom_call @MoveToHost(%1) {backend_config = ""} : (tensor<8x128xf32>) -> tensor<8x128xf32>
    %3 = stablehlo.custom_call @AwsNeuronMemoryPlacement(%0) {backend_config = "unpinned_host"} : (tensor<8xi32>) -> tensor<8xi32>
    %4 = stablehlo.custom_call @AwsNeuronCustomNativeKernel(%arg2, %arg2) {backend_config = "eyJrZXJuZWxfdmVyc2lvbiI6IDEsICJmdW5jX25hbWUiOiAibmtpX3RlbnNvcl9hZGQiLCAiZ3JpZCI6IFsyLCAxXSwgImhhc19jb2xsZWN0aXZlcyI6IGZhbHNlLCAia2xpcl9iaW5hcnkiOiB7ImJpbmFyeSI6ICIvdG1wL2sua2xpciisICJpbnB1dF9uYW1lcyI6IFsiYV9pbnB1dCIsICJiX2lucHV0Il0sICJvdXRwdXRfbmFtZXMiOiBbImNfb3V0cHV0Il19fQ=="} : (tensor<8x128xbf16>, tensor<8x128xbf16>) -> tensor<8x128xbf16>
    %5 = func.call @host_fn(%3) {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : (tensor<8xi32>) -> tensor<8xi32>
    %6 = "stablehlo.after_all"() : () -> !stablehlo.token
    %7 = "stablehlo.send"(%1, %6) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (tensor<8x128xf32>, !stablehlo.token) -> !stablehlo.token
    %8:2 = "stablehlo.recv"(%7) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (!stablehlo.token) -> (tensor<8x128xf32>, !stablehlo.token)
    %9 = stablehlo.custom_call @"my-target.v2"(%8#0) : (tensor<8x128xf32>) -> tensor<8x128xf32>
    return %4, %2, %5 : tensor<8x128xbf16>, tensor<8x128xf32>, tensor<8xi32> loc(#loc1)
  } loc(#loc1)
  func.func private @host_fn(%arg0: tensor<8xi3‹‹‹‹‹‹‹‹‹‹‹‹‹‹‹‹‹‹‹2>) -> tensor<8xi32> {
    %c = stablehlo.constant dense<1> : tensor<8xi32>
    %0 = stablehlo.add %arg0, %c : tensor<8xi32>
    return %0 : tensor<8xi32>
  }
} loc(#loc1)
#loc3 = loc("decode.py":20:0)
