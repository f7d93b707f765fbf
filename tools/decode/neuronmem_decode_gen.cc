// neuronmem-decode-gen: writes the decode step (tools/decode/decode_model.h) as StableHLO text, or as a
// StableHLO portable artifact (vhlo MLIR bytecode, through neuronmem_manifest_write_artifact).
//
//   neuronmem-decode-gen [--batch N] [--max-blocks N] ... [--attention gather|kernel]
//                        [--format text|bytecode] [--target VERSION] [-o FILE]
//
// data/decode/decode_step.mlir (gather) and decode_step_kernel.mlir (--attention kernel) are this program's
// output with the default sizes (a test keeps them equal).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <neuronmem/neuronmem.h>

#include "decode_model.h"

namespace {

void Usage(FILE* out, const neuronmem_decode::Config& c) {
  std::fprintf(out,
               "usage: neuronmem-decode-gen [size flags] [--format text|bytecode] [--target VERSION] [-o FILE]\n"
               "Writes the decode step of neuronmem-decode as StableHLO text or a StableHLO portable artifact\n"
               "(stdout, or FILE).\n\n%s"
               "  --attention KIND   paged attention: gather (plain StableHLO, default) or kernel (a custom call to\n"
               "                     the NKI kernel 'paged_attention' that neuronmem-decode registers)\n"
               "  --format F         text (default) or bytecode: a StableHLO portable artifact (vhlo MLIR bytecode,\n"
               "                     as jax.export writes; the default when FILE ends in .mlir.bc)\n"
               "  --target VERSION   the artifact's StableHLO version (default: the newest the library reads)\n"
               "  -o FILE            write to FILE instead of stdout\n",
               neuronmem_decode::ConfigFlagsHelp(c).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  neuronmem_decode::Config c;
  const char* out_path = nullptr;
  const char* format = nullptr;
  const char* target = nullptr;
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
    } else if (flag == "--format" && value) {
      format = value;
      if (std::strcmp(format, "text") != 0 && std::strcmp(format, "bytecode") != 0) {
        std::fprintf(stderr, "neuronmem-decode-gen: --format needs text or bytecode, found '%s'\n", format);
        return 2;
      }
      ++i;
    } else if (flag == "--target" && value) {
      target = value;
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
  std::string text = neuronmem_decode::GenerateModule(c);
  const std::string path = out_path ? out_path : "";
  const bool by_name = path.size() > 8 && path.compare(path.size() - 8, 8, ".mlir.bc") == 0;
  const bool bytecode = format ? std::strcmp(format, "bytecode") == 0 : by_name;
  if (!bytecode && target) {
    std::fprintf(stderr, "neuronmem-decode-gen: --target applies to --format bytecode\n");
    return 2;
  }
  if (bytecode) {
    std::string artifact;
    neuronmem_status_t* s = neuronmem_manifest_write_artifact(
        text.data(), text.size(), "decode_step.mlir", target,
        [](const void* data, size_t size, void* user) {
          static_cast<std::string*>(user)->assign(static_cast<const char*>(data), size);
        },
        &artifact);
    if (s) {
      const neuronmem_string_t m = neuronmem_status_message(s);
      std::fprintf(stderr, "neuronmem-decode-gen: %.*s\n", static_cast<int>(m.size), m.data);
      const bool bad_target = neuronmem_status_code(s) == NEURONMEM_STATUS_INVALID_ARGUMENT && target;
      neuronmem_status_free(s);
      return bad_target ? 2 : 1;
    }
    text = std::move(artifact);
  }
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
