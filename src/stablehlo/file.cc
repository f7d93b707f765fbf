// Parsing a file: read it whole, then parse the text.
#include <string>

#include "base/file.h"

#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {

Status ParseFile(const std::string& path, std::vector<Module>* out) {
  std::string text;
  NEURONMEM_RETURN_IF_ERROR(ReadRegularFile(path.c_str(), kMaxTextFileBytes, &text));
  return ParseModules(text, path, out);
}

}  // namespace neuronmem::stablehlo
