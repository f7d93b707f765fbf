func.func @main() -> () {
  %0 = stablehlo.foo [[[[[[[[[[[[
