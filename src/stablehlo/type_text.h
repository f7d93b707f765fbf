// The bodies of types the lexer hands over as raw text: `tensor<...>` and `!quant.uniform<...>`.
#pragma once

#include <string_view>

#include "stablehlo/ir.h"

namespace neuronmem::stablehlo::parse {

// Parses `!quant.uniform<...>` (the whole type text) into a QuantType in the arena. Per-tensor:
// `<i8:f32, 0.5:-3>`; per-axis: `<i8:f32:1, {0.5:-3, 0.25}>`; a storage range: `<i8<-127:127>:f32, ...>`;
// a missing zero point is 0. Throws ParseError at `loc`.
const QuantType* ParseQuantType(std::string_view text, Location loc, Arena* arena);

// Parses the inside of tensor<...>: "2x3xf32", "f32", "?x4xi8", "2x3xf32, #encoding", "4x!quant.uniform<...>".
void ParseTensorBody(std::string_view body, Location loc, Type* t, Arena* arena);

}  // namespace neuronmem::stablehlo::parse
