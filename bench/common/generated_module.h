// A generated decode-step-like StableHLO module (bench/parse's input, ~1.87 MB at 10,000 ops): element-wise
// ops, compares and selects, constants, and placement annotations (annotate_device_placement, MoveToDevice)
// with source locations. Every value is well typed (the interpreter compiles it). Shared by the parse and
// interpreter benchmarks.
#pragma once

#include <sstream>
#include <string>

namespace neuronmem::bench {

inline std::string GenerateDecodeModule(int ops) {
  std::ostringstream s;
  s << "#loc1 = loc(\"gen.py\":1:0)\n";
  s << "module @jit_generated attributes {mhlo.num_partitions = 1 : i32} {\n";
  s << "  func.func public @main(%arg0: tensor<8x16xi32> {mhlo.memory_kind = \"pinned_host\"}, "
       "%arg1: tensor<8x128xf32> {mhlo.sharding = \"{replicated}\"}) -> (tensor<8x128xf32> "
       "{jax.result_info = \"out\", mhlo.memory_kind = \"device\"}) {\n";
  s << "    %v0 = stablehlo.add %arg1, %arg1 : tensor<8x128xf32> loc(#loc1)\n";
  for (int i = 1; i < ops; ++i) {
    switch (i % 5) {
      case 0:
        s << "    %v" << i << " = stablehlo.multiply %v" << i - 1 << ", %arg1 : tensor<8x128xf32> loc(\"gen.py\":" << i
          << ":4)\n";
        break;
      case 1:
        s << "    %v" << i << " = stablehlo.custom_call @annotate_device_placement(%v" << i - 1
          << ") {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = \"pinned_host\"}} : "
             "(tensor<8x128xf32>) -> tensor<8x128xf32>\n";
        break;
      case 2:
        s << "    %c" << i << " = stablehlo.constant dense<[1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]> : tensor<8xf32>\n";
        s << "    %v" << i << " = stablehlo.custom_call @MoveToDevice(%v" << i - 1
          << ") {backend_config = \"\"} : (tensor<8x128xf32>) -> tensor<8x128xf32>\n";
        break;
      case 3:
        s << "    %v" << i << " = \"stablehlo.add\"(%v" << i - 1 << ", %v" << i - 2
          << ") : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>\n";
        break;
      default:
        s << "    %p" << i << " = stablehlo.compare  GT, %v" << i - 1
          << ", %arg1,  FLOAT : (tensor<8x128xf32>, "
             "tensor<8x128xf32>) -> tensor<8x128xi1>\n";
        s << "    %s" << i << " = stablehlo.select %p" << i << ", %v" << i - 1
          << ", %arg1 : tensor<8x128xi1>, "
             "tensor<8x128xf32>\n";
        s << "    %w" << i << " = stablehlo.negate %s" << i << " : tensor<8x128xf32>\n";
        s << "    %v" << i << " = stablehlo.abs %w" << i << " : tensor<8x128xf32>\n";
        break;
    }
  }
  s << "    return %arg1 : tensor<8x128xf32>\n  }\n}\n";
  return s.str();
}

}  // namespace neuronmem::bench
