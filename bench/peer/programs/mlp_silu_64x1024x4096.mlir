func.func @main(%x: tensor<64x1024xf32>, %w1: tensor<1024x4096xf32>, %b1: tensor<4096xf32>, %w2: tensor<4096x1024xf32>, %b2: tensor<1024xf32>) -> tensor<64x1024xf32> {
  %h0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<64x1024xf32>, tensor<1024x4096xf32>) -> tensor<64x4096xf32>
  %bb1 = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<4096xf32>) -> tensor<64x4096xf32>
  %h = stablehlo.add %h0, %bb1 : tensor<64x4096xf32>
  %s = stablehlo.logistic %h : tensor<64x4096xf32>
  %a = stablehlo.multiply %h, %s : tensor<64x4096xf32>
  %y0 = stablehlo.dot_general %a, %w2, contracting_dims = [1] x [0] : (tensor<64x4096xf32>, tensor<4096x1024xf32>) -> tensor<64x1024xf32>
  %bb2 = stablehlo.broadcast_in_dim %b2, dims = [1] : (tensor<1024xf32>) -> tensor<64x1024xf32>
  %y1 = stablehlo.add %y0, %bb2 : tensor<64x1024xf32>
  %y = stablehlo.add %y1, %x : tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}
