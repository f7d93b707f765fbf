// StableHLO text -> IR: a hand-written lexer and recursive-descent parser for the MLIR text that JAX and
// XLA print (pretty and generic forms, locations, foreign dialects kept opaque). Errors carry
// file:line:column. Nesting is limited to kMaxDepth; the parser never recurses without bound.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "stablehlo/ir.h"

namespace neuronmem::stablehlo {

constexpr int kMaxDepth = 256;

// Parses every module of `text` (modules split by `// -----`; a file without `module` is one implicit
// module). `filename` prefixes error messages. INVALID_ARGUMENT "file:line:col: message" on bad input.
// Text that starts with the MLIR bytecode magic is a StableHLO portable artifact: read by ParseBytecode
// (bytecode.h) into one module, errors "file: byte N: message".
Status ParseModules(std::string_view text, std::string_view filename, std::vector<Module>* out);

// Reads and parses a regular file (base/file.h: NOT_FOUND, INVALID_ARGUMENT for a FIFO, device, directory
// or a file over kMaxTextFileBytes).
Status ParseFile(const std::string& path, std::vector<Module>* out);

// Decodes a dense literal body (the text between `dense<` and `>`) for `type` into little-endian bytes.
Status DecodeDense(std::string_view body, const Type& type, std::vector<uint8_t>* bytes, bool* splat);

}  // namespace neuronmem::stablehlo
