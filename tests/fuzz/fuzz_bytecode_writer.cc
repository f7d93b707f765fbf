// libFuzzer target for the StableHLO artifact writer (src/stablehlo/bytecode.h, neuronmem_manifest_write_artifact)
// round trip: StableHLO text is parsed, written as an artifact (at the newest target and at 1.0.0), read back and
// compared. The writer may refuse (a status) what vhlo cannot hold; what it writes must read back into the same
// functions, argument and result types and op names, and writing what was read back must give the same bytes.
// A mismatch aborts (a finding); nothing may crash, hang, leak or read out of bounds either.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "stablehlo/bytecode.h"
#include "stablehlo/parser.h"

namespace {

namespace shlo = neuronmem::stablehlo;

[[noreturn]] void Mismatch(const char* what, const std::string& detail) {
  std::fprintf(stderr, "bytecode writer round trip: %s: %s\n", what, detail.c_str());
  std::abort();
}

// A type as a canonical string: quantized types by their fields (the text parser keeps their source text,
// the artifact reader prints them), everything else as TypeToString prints it.
std::string TypeKey(const shlo::Type& t) {
  if (t.kind == shlo::Type::Kind::kTuple || t.kind == shlo::Type::Kind::kFunction) {
    std::string s = t.kind == shlo::Type::Kind::kTuple ? "tuple<" : "fn" + std::to_string(t.num_inputs) + "<";
    for (const shlo::Type& e : t.elements) s += TypeKey(e) + ",";
    return s + ">";
  }
  if (!t.quant) return shlo::TypeToString(t);
  const shlo::QuantType& q = *t.quant;
  std::string s = "quant<";
  for (int64_t d : t.dims) s += std::to_string(d) + "x";
  s += std::to_string(static_cast<int>(q.storage)) + ":" + std::to_string(static_cast<int>(q.expressed)) + ":" +
       std::to_string(q.storage_min) + ":" + std::to_string(q.storage_max) + ":" + std::to_string(q.axis);
  char buf[32];
  for (double v : q.scales) {
    std::snprintf(buf, sizeof buf, " %a", v);
    s += buf;
  }
  for (int64_t z : q.zero_points) s += " " + std::to_string(z);
  return s + (t.kind == shlo::Type::Kind::kScalar ? " scalar>" : ">");
}

// The op names and result types of a region, nested regions in brackets, in order, with the block arguments
// types except those of a function's entry block (the function's own: the text parser keeps them in the
// block as well for the generic form, the artifact reader only in the function).
void OpNames(const shlo::Region& r, bool function_body, std::string* out) {
  for (size_t k = 0; k < r.blocks.size(); ++k) {
    const shlo::Block& b = r.blocks[k];
    *out += "{";
    if (!function_body || k > 0) {
      for (const shlo::Argument& a : b.args) *out += TypeKey(a.type) + ",";
    }
    for (const shlo::Operation& op : b.ops) {
      *out += std::string(op.name) + "(";
      for (const shlo::Type& t : op.result_types) *out += TypeKey(t) + ",";
      for (const shlo::Region& n : op.regions) OpNames(n, false, out);
      *out += ")";
    }
    *out += "}";
  }
}

// What a round trip keeps of a module: its functions' names, visibility, signatures and op names.
std::string Shape(const shlo::Module& m) {
  std::string s;
  for (const shlo::Function& f : m.functions) {
    s += std::string(f.name) + " " + std::string(f.visibility) + " (";
    for (const shlo::Argument& a : f.args) s += TypeKey(a.type) + ",";
    s += ") -> (";
    for (const shlo::Type& t : f.result_types) s += TypeKey(t) + ",";
    s += ") ";
    OpNames(f.body, true, &s);
    s += "\n";
  }
  return s;
}

void RoundTrip(const shlo::Module& text, const char* target) {
  shlo::BytecodeWriteOptions o;
  if (target && shlo::ParseBytecodeTarget(target, o.target)) Mismatch("target refused", target);
  o.location_file = "fuzz.mlir";
  std::string bytes;
  if (shlo::WriteBytecode(text, o, &bytes)) return;  // refused with a status: fine
  shlo::Module back;
  if (auto s = shlo::ParseBytecode(bytes, "fuzz.mlir.bc", &back)) Mismatch("written artifact unreadable", s->message);
  const std::string want = Shape(text), got = Shape(back);
  if (want != got) Mismatch("IR differs", "text:\n" + want + "artifact:\n" + got);
  std::string again;
  if (auto s = shlo::WriteBytecode(back, o, &again)) Mismatch("read-back module refused", s->message);
  if (again != bytes) Mismatch("rewriting the read-back module gives other bytes", std::to_string(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<shlo::Module> modules;
  if (shlo::ParseModules(text, "fuzz.mlir", &modules) || modules.size() != 1) return 0;
  RoundTrip(modules[0], nullptr);
  RoundTrip(modules[0], "1.0.0");
  return 0;
}
