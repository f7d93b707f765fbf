#include "interp_test_util.h"

#include <gtest/gtest.h>

namespace neuronmem::interp::testing {

Compiled CompileText(const std::string& text, const std::string& entry) {
  Compiled c;
  c.status = stablehlo::ParseModules(text, "test.mlir", &c.modules);
  if (c.status) return c;
  CompileOptions o;
  o.entry = entry;
  o.filename = "test.mlir";
  c.status = Compile(c.modules[0], o, &c.program);
  return c;
}

RunResult RunText(const std::string& text, const std::vector<TensorView>& args, const std::string& entry) {
  RunResult r;
  Compiled c = CompileText(text, entry);
  if (c.status) {
    r.status = std::move(c.status);
    return r;
  }
  HostResultAllocator alloc;
  std::vector<TensorView> results;
  r.status = c.program->Run(args.data(), args.size(), &alloc, &results);
  if (r.status) return r;
  for (const TensorView& v : results) {
    const char* p = static_cast<const char*>(v.data);
    r.outputs.emplace_back(p, p + v.Bytes());
  }
  return r;
}

std::string Fn(const std::string& body, const std::string& result_type) {
  return "func.func @main() -> " + result_type + " {\n" + body + "\n  func.return %r : " + result_type + "\n}\n";
}

}  // namespace neuronmem::interp::testing
