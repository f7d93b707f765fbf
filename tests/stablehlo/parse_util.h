// Helpers shared by the parser's tests: parse text that must parse, or must not.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stablehlo/parser.h"

namespace neuronmem::stablehlo::testing {

inline std::vector<Module> MustParse(const std::string& text) {
  std::vector<Module> mods;
  Status s = ParseModules(text, "test.mlir", &mods);
  EXPECT_FALSE(s) << (s ? s->message : "");
  return mods;
}

// The parse error's message ("bad.mlir:line:col: ...").
inline std::string ParseError(const std::string& text) {
  std::vector<Module> mods;
  Status s = ParseModules(text, "bad.mlir", &mods);
  EXPECT_TRUE(s) << "expected a parse error for: " << text.substr(0, 80);
  return s ? s->message : "";
}

}  // namespace neuronmem::stablehlo::testing
