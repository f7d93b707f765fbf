// StableHLO programs of a 2-core launch that moves an f32[n] tensor core to core (pairs [[0, 1], [1, 0]]: each
// core gets the other's tensor), shared by the benchmarks that time the in-process transport.
#pragma once

#include <cstddef>
#include <string>

namespace neuronmem::bench {

inline std::string Tensor(size_t n) { return "tensor<" + std::to_string(n) + "xf32>"; }

inline std::string SendRecvText(size_t n) {
  const std::string t = Tensor(n);
  const std::string attrs =
      "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, "
      "0]]> : tensor<2x2xi64>";
  return "func.func @main(%x: " + t + ") -> " + t + " {\n  %t = stablehlo.after_all : !stablehlo.token\n" +
         "  %s = \"stablehlo.send\"(%x, %t) {" + attrs + "} : (" + t + ", !stablehlo.token) -> !stablehlo.token\n" +
         "  %r:2 = \"stablehlo.recv\"(%s) {" + attrs + "} : (!stablehlo.token) -> (" + t + ", !stablehlo.token)\n" +
         "  return %r#0 : " + t + "\n}\n";
}

// The same, sending a value the program computes (x + x) instead of its argument: sent once per run, the program
// keeps it unchanged until the run ends, so the grid lends it as it lends an argument (the receive copies it once).
inline std::string SendRecvComputedText(size_t n) {
  const std::string t = Tensor(n);
  const std::string attrs =
      "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, "
      "0]]> : tensor<2x2xi64>";
  return "func.func @main(%x: " + t + ") -> " + t + " {\n  %y = stablehlo.add %x, %x : " + t +
         "\n  %t = stablehlo.after_all : !stablehlo.token\n" + "  %s = \"stablehlo.send\"(%y, %t) {" + attrs + "} : (" +
         t + ", !stablehlo.token) -> !stablehlo.token\n" + "  %r:2 = \"stablehlo.recv\"(%s) {" + attrs +
         "} : (!stablehlo.token) -> (" + t + ", !stablehlo.token)\n" + "  return %r#0 : " + t + "\n}\n";
}

inline std::string PermuteText(size_t n) {
  const std::string t = Tensor(n);
  return "func.func @main(%x: " + t + ") -> " + t + " {\n  %r = \"stablehlo.collective_permute\"(%x) " +
         "{source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (" + t + ") -> " + t +
         "\n  return %r : " + t + "\n}\n";
}

// collective_permute of x + x: the baseline of SendRecvComputedText (the same add, then the same exchange).
inline std::string PermuteComputedText(size_t n) {
  const std::string t = Tensor(n);
  return "func.func @main(%x: " + t + ") -> " + t + " {\n  %y = stablehlo.add %x, %x : " + t +
         "\n  %r = \"stablehlo.collective_permute\"(%y) " +
         "{source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (" + t + ") -> " + t +
         "\n  return %r : " + t + "\n}\n";
}

inline std::string AllReduceText(size_t n) {
  const std::string t = Tensor(n);
  return "func.func @main(%x: " + t + ") -> " + t + " {\n  %r = \"stablehlo.all_reduce\"(%x) ({\n" +
         "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n      %s = stablehlo.add %a, %b : tensor<f32>\n" +
         "      stablehlo.return %s : tensor<f32>\n  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (" + t +
         ") -> " + t + "\n  return %r : " + t + "\n}\n";
}

}  // namespace neuronmem::bench
