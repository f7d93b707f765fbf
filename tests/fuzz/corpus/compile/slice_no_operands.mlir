func.func @main() {
  "stablehlo.slice"() : () -> ()
  "stablehlo.reshape"() : () -> ()
  "stablehlo.dynamic_update_slice"() : () -> ()
  func.return
}
