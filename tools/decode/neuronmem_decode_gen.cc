// neuronmem-decode-gen: writes the decode step (tools/decode/decode_model.h) as StableHLO text.
//
//   neuronmem-decode-gen [--batch N] [--max-blocks N] ... [--attention gather|kernel] [-o FILE]
//
// data/decode/decode_step.mlir (gather) and decode_step_kernel.mlir (--attention kernel) are this program's
// output with the default sizes (a test keeps them equal).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "decode_model.h"

namespace {

void Usage(FILE* out, const neuronmem_decode::Config& c) {
  std::fprintf(out,
               "usage: neuronmem-decode-gen [size flags] [-o FILE]\n"
               "Writes the decode step of neuronmem-decode as StableHLO text (stdout, or FILE).\n\n%s"
               "  --attention KIND   paged attention: gather (plain StableHLO, default) or kernel (a custom call to\n"
               "                     the NKI kernel 'paged_attention' that neuronmem-decode registers)\n"
               "  -o FILE            write to FILE instead of stdout\n",
               neuronmem_decode::ConfigFlagsHelp(c).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  neuronmem_decode::Config c;
  const char* out_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      Usage(stdout, c);
      return 0;
    }
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    std::string error;
    if (flag == "-o" && value) {
      out_path = value;
      ++i;
    } else if (flag == "--attention") {
      if (!value || !neuronmem_decode::ParseAttention(value, &c.attention)) {
        std::fprintf(stderr, "neuronmem-decode-gen: --attention needs gather or kernel\n");
        return 2;
      }
      ++i;
    } else if (neuronmem_decode::ParseConfigFlag(flag, value, &c, &error)) {
      ++i;
      if (!error.empty()) {
        std::fprintf(stderr, "neuronmem-decode-gen: %s\n", error.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "neuronmem-decode-gen: unknown argument '%s'\n", argv[i]);
      Usage(stderr, c);
      return 2;
    }
  }
  const std::string problem = neuronmem_decode::ValidateConfig(c);
  if (!problem.empty()) {
    std::fprintf(stderr, "neuronmem-decode-gen: %s\n", problem.c_str());
    return 2;
  }
  const std::string text = neuronmem_decode::GenerateModule(c);
  if (!out_path) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::ofstream f(out_path, std::ios::binary);
  f << text;
  if (!f) {
    std::fprintf(stderr, "neuronmem-decode-gen: cannot write %s: %s\n", out_path, std::strerror(errno));
    return 1;
  }
  return 0;
}
