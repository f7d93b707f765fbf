func.func @main(%x: tensor<64x1024xf32>, %w1: tensor<1024x4096xf32>, %b1: tensor<4096xf32>, %w2: tensor<4096x1024xf32>, %b2: tensor<1024xf32>) -> tensor<64x1024xf32> {
  %h0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<64x1024xf32>, tensor<1024x4096xf32>) -> tensor<64x4096xf32>
  %bb1 = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<4096xf32>) -> tensor<64x4096xf32>
  %h = stablehlo.add %h0, %bb1 : tensor<64x4096xf32>
  %c0 = stablehlo.constant dense<4.471500e-02> : tensor<64x4096xf32>
  %c1 = stablehlo.constant dense<0.797884583> : tensor<64x4096xf32>
  %c2 = stablehlo.constant dense<1.000000e+00> : tensor<64x4096xf32>
  %c3 = stablehlo.constant dense<5.000000e-01> : tensor<64x4096xf32>
  %x2 = stablehlo.multiply %h, %h : tensor<64x4096xf32>
  %x3 = stablehlo.multiply %x2, %h : tensor<64x4096xf32>
  %g0 = stablehlo.multiply %c0, %x3 : tensor<64x4096xf32>
  %g1 = stablehlo.add %h, %g0 : tensor<64x4096xf32>
  %g2 = stablehlo.multiply %c1, %g1 : tensor<64x4096xf32>
  %g3 = stablehlo.tanh %g2 : tensor<64x4096xf32>
  %g4 = stablehlo.add %c2, %g3 : tensor<64x4096xf32>
  %g5 = stablehlo.multiply %c3, %g4 : tensor<64x4096xf32>
  %a = stablehlo.multiply %h, %g5 : tensor<64x4096xf32>
  %y0 = stablehlo.dot_general %a, %w2, contracting_dims = [1] x [0] : (tensor<64x4096xf32>, tensor<4096x1024xf32>) -> tensor<64x1024xf32>
  %bb2 = stablehlo.broadcast_in_dim %b2, dims = [1] : (tensor<1024xf32>) -> tensor<64x1024xf32>
  %y1 = stablehlo.add %y0, %bb2 : tensor<64x1024xf32>
  %y = stablehlo.add %y1, %x : tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}
