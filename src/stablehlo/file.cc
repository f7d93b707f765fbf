// Parsing a file: read it whole, then parse the text.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {

Status ParseFile(const std::string& path, std::vector<Module>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '%s': %s", path.c_str(), std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  return ParseModules(text, path, out);
}

}  // namespace neuronmem::stablehlo
