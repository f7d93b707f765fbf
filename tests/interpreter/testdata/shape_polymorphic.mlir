// RUN: stablehlo-translate %s --interpret --args="[dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>]" | FileCheck %s
// A shape-polymorphic entry as jax.export writes one (symbolic dimension b, its shape_assertion, the body in a
// private function taking b as a jax.global_constant argument): the runner refines its shapes from --args (b = 3),
// so get_dimension_size, the dynamic broadcast and the call's `?` result dims are all known (issue 26).
module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<?x2xf32>) {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x2xf32>) -> tensor<i32>
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
    %c = stablehlo.constant dense<1> : tensor<i64>
    %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.custom_call @shape_assertion(%2, %1) {api_version = 2 : i32, error_message = "Input shapes do not match the polymorphic shapes specification. Expected value >= 1 for dimension variable 'b'. Obtained dimension variables: 'b' = {0} from specifying the polymorphic shapes.", has_side_effect = true} : (tensor<i1>, tensor<i64>) -> ()
    %3 = call @_wrapped_jax_export_main(%1, %arg0) : (tensor<i64>, tensor<?x2xf32>) -> tensor<?x2xf32>
    check.expect_eq_const %3, dense<[[2.0, 4.0], [6.0, 8.0], [10.0, 12.0]]> : tensor<3x2xf32>
    check.expect_eq_const %1, dense<3> : tensor<i64>
    func.return
  }
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = "b"}, %arg1: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32>
    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
    %c = stablehlo.constant dense<2> : tensor<1xi32>
    %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %3 = stablehlo.dynamic_broadcast_in_dim %cst, %2, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x2xf32>
    %4 = stablehlo.multiply %arg1, %3 : tensor<?x2xf32>
    return %4 : tensor<?x2xf32>
  }
}
