// Helpers for the interpreter's tests: compile StableHLO text and run it.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "interpreter/interpreter.h"
#include "stablehlo/parser.h"

namespace neuronmem::interp::testing {

struct Compiled {
  std::vector<stablehlo::Module> modules;
  std::unique_ptr<Program> program;
  Status status;  // compile status
};

// Parses `text` and compiles `entry` of its first module.
Compiled CompileText(const std::string& text, const std::string& entry = "main");

struct RunResult {
  Status status;
  std::vector<std::vector<char>> outputs;  // result bytes
  template <typename T>
  std::vector<T> Get(size_t i) const {
    std::vector<T> v(outputs[i].size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), outputs[i].data(), outputs[i].size());
    return v;
  }
};

// Compiles and runs `entry` without arguments (or with `args`), returning the results' bytes.
RunResult RunText(const std::string& text, const std::vector<TensorView>& args = {}, const std::string& entry = "main");

// Text of a function @main that applies `body` (using %a, %b) and returns %r of `result_type`.
std::string Fn(const std::string& body, const std::string& result_type);

}  // namespace neuronmem::interp::testing
