module @control {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %arg1: tensor<i1>,
      %arg2: tensor<i32>) -> tensor<4xf32> {
    %0 = call @offload(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.custom_call @MoveToDevice(%0) : (tensor<4xf32>) -> tensor<4xf32>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %2:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<4xf32>
     cond {
      %c_1 = stablehlo.constant dense<3> : tensor<i64>
      %5 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %5 : tensor<i1>
    } do {
      %5 = stablehlo.custom_call @MoveToDevice(%iterArg_0) : (tensor<4xf32>) -> tensor<4xf32>
      %6 = stablehlo.custom_call @MoveToHost(%5) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %iterArg, %6 : tensor<i64>, tensor<4xf32>
    }
    %3 = "stablehlo.while"(%arg0) ({
    ^bb0(%x: tensor<4xf32>):
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    }, {
    ^bb0(%x: tensor<4xf32>):
      %y = stablehlo.custom_call @MoveToDevice(%x) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %x : tensor<4xf32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %4 = stablehlo.custom_call @MoveToDevice(%2#1) : (tensor<4xf32>) -> tensor<4xf32>
    %7 = "stablehlo.if"(%arg1) ({
      stablehlo.return %arg0 : tensor<4xf32>
    }, {
      %8 = stablehlo.custom_call @MoveToHost(%1) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %8 : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %9 = stablehlo.custom_call @MoveToDevice(%7) : (tensor<4xf32>) -> tensor<4xf32>
    %10 = "stablehlo.case"(%arg2) ({
      stablehlo.return %arg0 : tensor<4xf32>
    }, {
      stablehlo.return %1 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    %11 = stablehlo.custom_call @MoveToDevice(%10) : (tensor<4xf32>) -> tensor<4xf32>
    return %11 : tensor<4xf32>
  }
  func.func private @offload(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @MoveToDevice(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.custom_call @MoveToHost(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
