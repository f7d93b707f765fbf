// For the interpreter benchmarks: a program compiled from StableHLO text, and results written into
// caller-owned buffers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "interpreter/interpreter.h"
#include "stablehlo/parser.h"

namespace neuronmem::bench {

// The first function of `text` compiled (null when parsing or compiling fails); `mods` keeps the parsed modules
// the program refers to.
inline std::unique_ptr<interp::Program> CompileOrNull(const std::string& text, std::vector<stablehlo::Module>* mods) {
  if (stablehlo::ParseModules(text, "bench.mlir", mods)) return nullptr;
  interp::CompileOptions o;
  std::unique_ptr<interp::Program> p;
  if (interp::Compile((*mods)[0], o, &p)) return nullptr;
  return p;
}

// Results into caller-owned buffers, one per result index.
class FixedResults : public interp::ResultAllocator {
 public:
  explicit FixedResults(std::vector<void*> bufs) : bufs_(std::move(bufs)) {}
  void* Allocate(size_t index, size_t) override { return index < bufs_.size() ? bufs_[index] : nullptr; }

 private:
  std::vector<void*> bufs_;
};

}  // namespace neuronmem::bench
