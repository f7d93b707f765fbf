"func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"}> ({
^bb0(%x: tensor<4xf32>):
  "func.return"(%x) : (tensor<4xf32>) -> ()
}) : () -> ()
