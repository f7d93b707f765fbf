// Pretty-printed ops whose attributes continue on later lines: the interpreter reads an op's text up to
// the next op, not only its first line.

func.func @convolution_window_on_later_lines() {
  %lhs = stablehlo.constant dense<[[[[1.0], [2.0], [3.0], [4.0]],
                                    [[5.0], [6.0], [7.0], [8.0]],
                                    [[9.0], [10.0], [11.0], [12.0]],
                                    [[13.0], [14.0], [15.0], [16.0]]]]> : tensor<1x4x4x1xf32>
  %rhs = stablehlo.constant dense<1.0> : tensor<2x2x1x1xf32>
  %result = stablehlo.convolution(%lhs, %rhs)
    dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {
      stride = [2, 2]
    } {
      batch_group_count = 1 : i64,
      feature_group_count = 1 : i64
    }
  : (tensor<1x4x4x1xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x2x1xf32>
  check.expect_eq_const %result, dense<[[[[14.0], [22.0]], [[46.0], [54.0]]]]> : tensor<1x2x2x1xf32>
  func.return
}

// -----

func.func @dynamic_conv_padding_operand() {
  %lhs = stablehlo.constant dense<[[[[1], [2]], [[3], [4]]]]> : tensor<1x2x2x1xi32>
  %rhs = stablehlo.constant dense<1> : tensor<2x2x1x1xi32>
  %padding = stablehlo.constant dense<[[1, 0], [0, 1]]> : tensor<2x2xi32>
  %result = stablehlo.dynamic_conv(%lhs, %rhs, %padding)
    dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {
      stride = [1, 1],
      rhs_dilate = [1, 1]
    } {
      batch_group_count = 1 : i64,
      feature_group_count = 1 : i64,
      precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
    }
  : (tensor<1x2x2x1xi32>, tensor<2x2x1x1xi32>, tensor<2x2xi32>) -> tensor<1x2x2x1xi32>
  check.expect_eq_const %result, dense<[[[[3], [2]], [[10], [6]]]]> : tensor<1x2x2x1xi32>
  func.return
}

// -----

func.func @dynamic_conv_lhs_dilation_and_stride() {
  %lhs = stablehlo.constant dense<[[[[1], [2]], [[3], [4]]]]> : tensor<1x2x2x1xi64>
  %rhs = stablehlo.constant dense<1> : tensor<2x2x1x1xi64>
  %padding = stablehlo.constant dense<0> : tensor<2x2xi64>
  %result = stablehlo.dynamic_conv(%lhs, %rhs, %padding)
    dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {
      stride = [2, 1],
      lhs_dilate = [2, 2]
    } {
      batch_group_count = 1 : i64,
      feature_group_count = 1 : i64
    }
  : (tensor<1x2x2x1xi64>, tensor<2x2x1x1xi64>, tensor<2x2xi64>) -> tensor<1x1x2x1xi64>
  check.expect_eq_const %result, dense<[[[[1], [2]]]]> : tensor<1x1x2x1xi64>
  func.return
}

// -----

func.func @reduce_applies_on_a_later_line() {
  %input = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %init = stablehlo.constant dense<0> : tensor<i32>
  %result = stablehlo.reduce(%input init: %init)
      applies stablehlo.add across dimensions = [1]
      : (tensor<2x3xi32>, tensor<i32>) -> tensor<2xi32>
  check.expect_eq_const %result, dense<[6, 15]> : tensor<2xi32>
  func.return
}
