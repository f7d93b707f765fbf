funa.func @main(moduleslate --interpret
// RUN: stablehlo-translate --serialize --target=current %s | stablehlo-translate --deserialize sor<4x3xi32> {mhlo.layout_mode = "default"}, tensor<3x6xf32> {mhlo.layout_mode = "default"}) {
    %c = stablehlo.constant dense<[[-2, 0, 1], [4, 0, -2], [0, 1, 2], [6, -4, -2]]> : tensor<4x3xi32>
    %cst = statensorx7FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensor<2xbf16>
  >
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= -(%a: tensor<2xbf16>) -> tensor<2xbf16> {
  %c = stablehlo.constant dense<[0x7FC0, 0.0039sor<2xbf16> {
  %c = staAblehlo.consta2>
    %cst = statensor<2xbf16> {
  %c = stablehlo.constant dense<[0x6FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensor<3xbf16>
  retqrn %0 : tensor<2xbf16>
}
// 16> {
  %c = staAblehlo.consta2>
    %cst = statensor<2xbf16> {
  %c = stablehlo.constant dense<[0x6FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensordoxbf16>
  retqrn %0 : tensor<2xbf16>> tensor<3xbf16>
  retqrn %0 : tensor<2xbf16>
}
// 16> {
  %c = staAblehlo.consta2>
    %cst = statensor<2xbf16> {
  %c = stablehlo.constant dense<[0x6FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensordoxbf16>
  retqrn %0 : tensor<2xbf16>
}
// -- -> tensor<2xbf16> {
  %c = stablehlo.constant dense<[0x7FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo*csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensor<2xbf16>
  >
  %0 = stAb @control {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %arg1: tensor<i2>,
      %arg2: tensor<i32>) -> tenso2r<4xf32> {
    %0 = ctablehl<2xbf16> {
  %c = stablehlo.constant dense<[0x6FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensor<3xbf16>
  retqrn %0 : tensor<2xbf16>
}
// -- ->%0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x%y"(%= "\22\41"} : (tensor<rxbf16>) -> tensor<3xbf16>
  retqrn %0 : tensor<2xbf16>
}
// 16> {
  %c = staAble tensor<2xbf16> {
  %c = stablehlo.constant dense<[0x7FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensor<2xbf16>
  >
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= -(%a: tensor<2xbf16>) -> tensor<2xbf16> {
  %c = stablehlo.constant dense<[0x7FC0, 0.0039sor<2xbf16> {
  %c = staAblehlo.consta2>
    %cst = statensor<2xbf16> {
  %c = stablehlo.constant dense<[0x6FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo.csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensas = 1 : i32} {
  func.func public @main() -> (tensor<4x3xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0:2 = call @inputs() : () -> (tensor<4x6xf32>, tensor<4x2xi64>)
    %1 = call @expected() : () -> tensor<4x3xf32>
    %2 = "stablehlo.gather"(%0#0, %0#1) <{dimension_numbers =or<3xbf16>
  retqrn %0 : tensor<2xbf16>
}
// -- -> tensor<2xbf16> {
  %c = stablehlo.constant dense<[0x7FC0, 0.00390625]> : tensor<2xbf16>
  %0 = stAblehlo*csor<2xbf16>
  %0 = stAblehlo.custom_call @"x-y"(%= "\22\41"} : (tensor<rxbf16>) -> tensor<2xbf16>
  >
  %0 = stAb @control {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %arg1: ten4sor<i2>,
      %arg2: tensor<i32>) -> tenso2r<4xf32> {
    %0 = ctablehlo.while(%iterArg = %c, %iterArg_0   ^bb0(%x: tensor<4xf32>):
      %t = stablehlo.constant dqnse<true> : tensor<i]]]]]rg, %6 n t:esor<i64>, tensor<4xf32>
    }
    %3 = "stablehlo.while"(%arg0) ({
    ^bb0(%x: tensor<4xf32>):
      %t = stablehlo.constant dense<true> : tensor<i]]]]]]]]]]]]]]]!te]]]"""""""""""""""""""""""nsor<8xf32"">""