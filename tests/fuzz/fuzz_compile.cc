// libFuzzer target for the interpreter behind the parser: every function of every module that parses is
// compiled, and what compiles is run on zero-filled arguments. Compile must fail with a status on anything
// malformed (missing operands or results, overflowing shapes and attributes, mismatched signatures, deep
// call chains: issue 23), and a program that compiled must run to a status: nothing may crash, read out of
// bounds or hang.
//
// Runs are bounded: programs with a while loop are only compiled (a loop may legitimately never end, and
// stopping one is the executor's business), and so are programs whose values or workspace exceed 1 MiB.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "interpreter/interpreter.h"
#include "stablehlo/parser.h"

namespace {

using neuronmem::stablehlo::Block;
using neuronmem::stablehlo::Operation;

constexpr size_t kMaxRunBytes = size_t{1} << 20;

bool Loops(const Operation& op) {
  if (op.name == "stablehlo.while" || op.name == "interpreter.run_parallel") return true;
  for (const auto& r : op.regions)
    for (const Block& b : r.blocks)
      for (const Operation& o : b.ops)
        if (Loops(o)) return true;
  return false;
}

bool AnyLoops(const neuronmem::stablehlo::Module& m) {
  for (const auto& f : m.functions)
    for (const Block& b : f.body.blocks)
      for (const Operation& o : b.ops)
        if (Loops(o)) return true;
  return false;
}

void CompileAndRun(const neuronmem::stablehlo::Module& m, std::string_view entry) {
  neuronmem::interp::CompileOptions o;
  o.entry = std::string(entry);
  o.filename = "fuzz.mlir";
  std::unique_ptr<neuronmem::interp::Program> program;
  if (neuronmem::interp::Compile(m, o, &program)) return;
  if (AnyLoops(m)) return;
  size_t total = program->workspace_bytes();
  for (const auto& p : program->parameters()) total += p.NumBytes();
  for (const auto& r : program->results()) total += r.NumBytes();
  if (total > kMaxRunBytes) return;
  std::vector<std::unique_ptr<uint64_t[]>> storage;
  std::vector<neuronmem::interp::TensorView> args;
  for (const auto& p : program->parameters()) {
    storage.emplace_back(new uint64_t[p.NumBytes() / 8 + 1]());
    args.push_back({storage.back().get(), p.type, p.dims.data(), p.dims.size()});
  }
  neuronmem::interp::HostResultAllocator results;
  std::vector<neuronmem::interp::TensorView> views;
  (void)program->Run(args.data(), args.size(), &results, &views);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<neuronmem::stablehlo::Module> modules;
  if (neuronmem::stablehlo::ParseModules(text, "fuzz.mlir", &modules)) return 0;
  for (const auto& m : modules)
    for (const auto& f : m.functions) CompileAndRun(m, f.name);
  return 0;
}
