// Dynamic-shape ops whose shape operands are known at compile time: constants, or computed from constants
// (and from get_dimension_size) by side-effect-free ops. Results typed with `?` dims get their static shape.

func.func @dynamic_iota_question_dims_dim_1() {
  %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
  %0 = stablehlo.dynamic_iota %shape, dim = 1 : (tensor<2xi32>) -> tensor<?x?xf32>
  %expected = stablehlo.constant dense<[[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]> : tensor<2x3xf32>
  "check.expect_eq"(%0, %expected) : (tensor<?x?xf32>, tensor<2x3xf32>) -> ()
  func.return
}

// -----

func.func @dynamic_iota_shape_from_get_dimension_size() {
  %x = stablehlo.constant dense<0> : tensor<4x2xi8>
  %d0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<4x2xi8>) -> tensor<i32>
  %d1 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<4x2xi8>) -> tensor<i32>
  %r0 = stablehlo.reshape %d0 : (tensor<i32>) -> tensor<1xi32>
  %r1 = stablehlo.reshape %d1 : (tensor<i32>) -> tensor<1xi32>
  %shape = stablehlo.concatenate %r1, %r0, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %0 = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<2xi32>) -> tensor<?x4xi64>
  check.expect_eq_const %0, dense<[[0, 0, 0, 0], [1, 1, 1, 1]]> : tensor<2x4xi64>
  func.return
}

// -----

func.func @get_dimension_size_of_each_dim() {
  %x = stablehlo.constant dense<1.0> : tensor<2x5x1xf32>
  %0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<2x5x1xf32>) -> tensor<i32>
  %1 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x5x1xf32>) -> tensor<i32>
  %2 = "stablehlo.get_dimension_size"(%x) {dimension = 2 : i64} : (tensor<2x5x1xf32>) -> tensor<i32>
  check.expect_eq_const %0, dense<2> : tensor<i32>
  check.expect_eq_const %1, dense<5> : tensor<i32>
  check.expect_eq_const %2, dense<1> : tensor<i32>
  func.return
}

// -----

func.func @get_dimension_size_of_a_zero_dim() {
  %x = stablehlo.constant dense<> : tensor<3x0xi32>
  %0 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<3x0xi32>) -> tensor<i32>
  check.expect_eq_const %0, dense<0> : tensor<i32>
  func.return
}

// -----

func.func @dynamic_reshape_shape_computed_by_multiply() {
  %x = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %d0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<2x3xi32>) -> tensor<i32>
  %d1 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x3xi32>) -> tensor<i32>
  %n = stablehlo.multiply %d0, %d1 : tensor<i32>
  %shape = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %0 = stablehlo.dynamic_reshape %x, %shape : (tensor<2x3xi32>, tensor<1xi32>) -> tensor<?xi32>
  check.expect_eq_const %0, dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  func.return
}

// -----

func.func @dynamic_reshape_then_elementwise_on_question_dims() {
  %x = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %shape = stablehlo.constant dense<[2, 2]> : tensor<2xi64>
  %0 = stablehlo.dynamic_reshape %x, %shape : (tensor<4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %1 = stablehlo.add %0, %0 : tensor<?x?xf32>
  %2 = stablehlo.convert %1 : (tensor<?x?xf32>) -> tensor<?x2xi32>
  check.expect_eq_const %2, dense<[[2, 4], [6, 8]]> : tensor<2x2xi32>
  func.return
}

// -----

func.func @dynamic_broadcast_in_dim_question_dims() {
  %x = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi64>
  %dims = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %0 = stablehlo.dynamic_broadcast_in_dim %x, %dims, dims = [1] : (tensor<3xi64>, tensor<2xi64>) -> tensor<?x?xi64>
  check.expect_eq_const %0, dense<[[1, 2, 3], [1, 2, 3]]> : tensor<2x3xi64>
  func.return
}

// -----

func.func @dynamic_broadcast_in_dim_expanding_one() {
  %x = stablehlo.constant dense<[[7], [8]]> : tensor<2x1xi32>
  %dims = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
  %0 = "stablehlo.dynamic_broadcast_in_dim"(%x, %dims) {
    broadcast_dimensions = array<i64: 0, 1>,
    known_expanding_dimensions = array<i64: 1>,
    known_nonexpanding_dimensions = array<i64: 0>
  } : (tensor<2x1xi32>, tensor<2xi32>) -> tensor<2x?xi32>
  check.expect_eq_const %0, dense<[[7, 7, 7], [8, 8, 8]]> : tensor<2x3xi32>
  func.return
}

// -----

func.func @dynamic_pad_question_dims_interior() {
  %x = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %pv = stablehlo.constant dense<0> : tensor<i32>
  %low = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %high = stablehlo.constant dense<[0, -1]> : tensor<2xi32>
  %interior = stablehlo.constant dense<[0, 1]> : tensor<2xi32>
  %0 = stablehlo.dynamic_pad %x, %pv, %low, %high, %interior
    : (tensor<2x2xi32>, tensor<i32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x?xi32>
  check.expect_eq_const %0, dense<[[0, 0], [1, 0], [3, 0]]> : tensor<3x2xi32>
  func.return
}

// -----

func.func @real_dynamic_slice_question_dims_strided() {
  %x = stablehlo.constant dense<[[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14]]> : tensor<3x5xi32>
  %start = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %limit = stablehlo.constant dense<[3, 5]> : tensor<2xi64>
  %strides = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %0 = stablehlo.real_dynamic_slice %x, %start, %limit, %strides
    : (tensor<3x5xi32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xi32>
  check.expect_eq_const %0, dense<[[5, 7, 9], [10, 12, 14]]> : tensor<2x3xi32>
  func.return
}

// -----

func.func @real_dynamic_slice_limits_computed() {
  %x = stablehlo.constant dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi32>
  %start = stablehlo.constant dense<[1]> : tensor<1xi32>
  %len = stablehlo.constant dense<[3]> : tensor<1xi32>
  %limit = stablehlo.add %start, %len : tensor<1xi32>
  %strides = stablehlo.constant dense<[1]> : tensor<1xi32>
  %0 = stablehlo.real_dynamic_slice %x, %start, %limit, %strides
    : (tensor<6xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xi32>
  check.expect_eq_const %0, dense<[1, 2, 3]> : tensor<3xi32>
  func.return
}

// -----

func.func @dynamic_gather_question_dims() {
  %operand = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> : tensor<3x3xi32>
  %indices = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xi64>
  %sizes = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %0 = "stablehlo.dynamic_gather"(%operand, %indices, %sizes) {
    dimension_numbers = #stablehlo.gather<
      offset_dims = [1],
      collapsed_slice_dims = [0],
      start_index_map = [0],
      index_vector_dim = 1>
  } : (tensor<3x3xi32>, tensor<2x1xi64>, tensor<2xi64>) -> tensor<?x?xi32>
  check.expect_eq_const %0, dense<[[7, 8], [1, 2]]> : tensor<2x2xi32>
  func.return
}

// -----

func.func @dynamic_conv_question_dims() {
  %lhs = stablehlo.constant dense<[[[[1.0], [2.0], [3.0]]]]> : tensor<1x1x3x1xf32>
  %rhs = stablehlo.constant dense<[[[[1.0]], [[10.0]]]]> : tensor<1x2x1x1xf32>
  %padding = stablehlo.constant dense<[[0, 0], [1, 1]]> : tensor<2x2xi64>
  %0 = stablehlo.dynamic_conv(%lhs, %rhs, %padding)
    dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {stride = [1, 1]}
    {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
    : (tensor<1x1x3x1xf32>, tensor<1x2x1x1xf32>, tensor<2x2xi64>) -> tensor<?x?x?x?xf32>
  check.expect_eq_const %0, dense<[[[[10.0], [21.0], [32.0], [3.0]]]]> : tensor<1x1x4x1xf32>
  func.return
}
