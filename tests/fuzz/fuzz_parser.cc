// libFuzzer target for the StableHLO parser and the manifest derivation: any input must either parse or
// fail with a status; nothing may crash, hang, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "manifest/manifest.h"
#include "stablehlo/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<neuronmem::stablehlo::Module> modules;
  if (!neuronmem::stablehlo::ParseModules(text, "fuzz.mlir", &modules)) {
    for (const auto& m : modules) {
      for (const auto& f : m.functions) {
        neuronmem::manifest::Options o;
        o.entry = f.name;
        neuronmem::manifest::Manifest manifest;
        if (!neuronmem::manifest::Derive(m, o, &manifest)) {
          neuronmem::manifest::Manifest back;
          // For crashes only: tests/manifest checks that what the writer produces reads back.
          neuronmem::manifest::FromJson(neuronmem::manifest::ToJson(manifest), &back).IgnoreError();
        }
      }
    }
  }
  return 0;
}
