// libFuzzer target for the StableHLO portable artifact reader (src/stablehlo/bytecode.h) and what reads its
// IR after it (the manifest derivation, the compiler): any input must either read or fail with a status;
// nothing may crash, hang, leak or read out of bounds. Inputs without the bytecode magic get it prepended,
// so the fuzzer spends its time inside the reader.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "interpreter/interpreter.h"
#include "manifest/manifest.h"
#include "stablehlo/bytecode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (!neuronmem::stablehlo::IsBytecode(bytes)) bytes.insert(0, "ML\xefR", 4);
  neuronmem::stablehlo::Module module;
  if (neuronmem::stablehlo::ParseBytecode(bytes, "fuzz.mlir.bc", &module)) return 0;
  for (const auto& f : module.functions) {
    neuronmem::manifest::Options o;
    o.entry = std::string(f.name);
    neuronmem::manifest::Manifest manifest;
    (void)neuronmem::manifest::Derive(module, o, &manifest);
  }
  if (module.FindFunction("main")) {
    neuronmem::interp::CompileOptions co;
    co.filename = "fuzz.mlir.bc";
    std::unique_ptr<neuronmem::interp::Program> program;
    (void)neuronmem::interp::Compile(module, co, &program);
  }
  return 0;
}
