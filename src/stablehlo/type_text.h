// The body of a tensor type, which the parser takes as raw text (`2x3xf32` is not a sequence of tokens).
#pragma once

#include <cstddef>
#include <string_view>

#include "stablehlo/ir.h"

namespace neuronmem::stablehlo::parse {

// Parses the inside of tensor<...>: "2x3xf32", "f32", "?x4xi8", "2x3xf32, #encoding", "4x!quant.uniform<...>".
// Sets the dims and the element type; for a quantized element type, returns where it starts in `body` (the
// parser reads it on the lexer's tokens, Parser::ParseQuantInTensor) and leaves the element to the caller;
// else returns npos. Throws ParseError at `loc`.
size_t ParseTensorBody(std::string_view body, Location loc, Type* t, Arena* arena);

}  // namespace neuronmem::stablehlo::parse
