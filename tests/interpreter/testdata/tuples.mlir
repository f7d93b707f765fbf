// Tuples are flattened at compile time; get_tuple_element in its pretty form (`%t[1]`) and generic form.

func.func @get_tuple_element_pretty_and_generic() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %b = stablehlo.constant dense<3.0> : tensor<f32>
  %t = stablehlo.tuple %a, %b : tuple<tensor<2xi32>, tensor<f32>>
  %x = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xi32>, tensor<f32>>) -> tensor<2xi32>
  %y = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xi32>, tensor<f32>>) -> tensor<f32>
  %z = "stablehlo.get_tuple_element"(%t) {index = 1 : i32} : (tuple<tensor<2xi32>, tensor<f32>>) -> tensor<f32>
  check.expect_eq_const %x, dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %y, dense<3.0> : tensor<f32>
  check.expect_eq %y, %z : tensor<f32>
  func.return
}

// -----

func.func @get_tuple_element_of_a_nested_tuple() {
  %a = stablehlo.constant dense<1> : tensor<i32>
  %b = stablehlo.constant dense<2> : tensor<i32>
  %c = stablehlo.constant dense<3> : tensor<i32>
  %inner = stablehlo.tuple %b, %c : tuple<tensor<i32>, tensor<i32>>
  %t = stablehlo.tuple %a, %inner : tuple<tensor<i32>, tuple<tensor<i32>, tensor<i32>>>
  %i = stablehlo.get_tuple_element %t[1] : (tuple<tensor<i32>, tuple<tensor<i32>, tensor<i32>>>) -> tuple<tensor<i32>, tensor<i32>>
  %v = stablehlo.get_tuple_element %i[1] : (tuple<tensor<i32>, tensor<i32>>) -> tensor<i32>
  check.expect_eq_const %v, dense<3> : tensor<i32>
  func.return
}
