// The StableHLO portable artifact reader (src/stablehlo/bytecode.h): every artifact of
// ../shared/conformance/stablehlo-bytecode reads into the IR its text original gives (functions, ops,
// types, constants) and the same manifest; malformed artifacts get a status naming the byte offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/status.h"
#include "manifest/manifest.h"
#include "stablehlo/bytecode.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {
namespace {

namespace fs = std::filesystem;

std::string BytecodeDir() {
  const char* d = std::getenv("NEURONMEM_BYTECODE_DIR");
  return d ? d : "";
}
std::string TextDir() {
  const char* d = std::getenv("NEURONMEM_CONFORMANCE_DIR");
  return d ? d : "";
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

#define SKIP_WITHOUT_ARTIFACTS()                                                   \
  if (!fs::is_directory(BytecodeDir())) {                                          \
    GTEST_SKIP() << "the artifact folder " << BytecodeDir()                        \
                 << " is absent (it is ../shared/conformance/stablehlo-bytecode)"; \
  }

// "abs_int8_20_20.1.0.0.mlir.bc" -> "abs_int8_20_20"; its target -> "1.0.0".
std::string StemOf(const std::string& file, std::string* target) {
  std::string s = file.substr(0, file.size() - std::string(".mlir.bc").size());
  for (const char* t : {".current", ".1.0.0", ".1.5.0", ".1.9.0"}) {
    const std::string suffix(t);
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
      if (target) *target = suffix.substr(1);
      return s.substr(0, s.size() - suffix.size());
    }
  }
  return s;
}

std::string Spec(const manifest::TensorSpec& t) {
  std::string s = t.element_type + "[";
  for (int64_t d : t.dims) s += std::to_string(d) + ",";
  return s + "]";
}

std::string ValueSummary(const manifest::Value& v, bool with_name) {
  std::string s = Spec(v.type) + " " + std::string(MemoryKindName(v.memory_kind)) + (v.kind_explicit ? "!" : "") +
                  " alias=" + std::to_string(v.aliasing_output) + (v.buffer_donor ? " donor" : "");
  if (with_name) s += " name=" + v.name;
  for (const auto& kv : v.attributes) s += " " + kv.first + "=" + kv.second;
  return s;
}

// What the manifest says about placement: kinds, shapes, moves, host compute, targets, channels.
std::vector<std::string> Summary(const manifest::Manifest& m) {
  std::vector<std::string> out;
  out.push_back("module " + m.module + " entry " + m.entry + " policy " + m.policy);
  for (const auto& v : m.arguments) out.push_back("arg " + ValueSummary(v, false));
  for (const auto& v : m.results) out.push_back("result " + ValueSummary(v, true));
  for (const auto& mv : m.moves) {
    out.push_back("move " + mv.function + " " + Spec(mv.type) + " " + mv.from_kind + "->" + mv.to_kind + " " +
                  mv.spelling);
  }
  for (const auto& h : m.host_compute) out.push_back("host " + h.function + " " + h.op + " " + h.callee);
  for (const auto& t : m.custom_call_targets) out.push_back("target " + t.target + " x" + std::to_string(t.count));
  for (const auto& c : m.channels) {
    out.push_back("channel " + c.function + " " + c.op + " " + std::to_string(c.handle) + " " + std::to_string(c.type));
  }
  return out;
}

// Compares the ops of a region read from bytecode (b) with those of its text (t), recursively.
void CompareRegion(const Region& b, const Region& t, size_t* ops, size_t* constants) {
  ASSERT_EQ(b.blocks.size(), t.blocks.size());
  for (size_t k = 0; k < t.blocks.size(); ++k) {
    const Block& bb = b.blocks[k];
    const Block& tb = t.blocks[k];
    ASSERT_EQ(bb.args.size(), tb.args.size());
    for (size_t a = 0; a < tb.args.size(); ++a) {
      EXPECT_EQ(TypeToString(bb.args[a].type), TypeToString(tb.args[a].type)) << "argument " << a;
    }
    ASSERT_EQ(bb.ops.size(), tb.ops.size()) << "ops of the block at line " << (tb.ops.empty() ? 0 : tb.ops[0].loc.line);
    for (size_t i = 0; i < tb.ops.size(); ++i) {
      const Operation& to = tb.ops[i];
      const Operation& bo = bb.ops[i];
      ASSERT_EQ(bo.name, to.name) << "op at line " << to.loc.line;
      EXPECT_EQ(bo.loc.line, to.loc.line) << to.name;
      EXPECT_EQ(bo.callee, to.callee) << to.name;
      EXPECT_EQ(bo.num_results, to.num_results) << to.name;
      {
        ASSERT_EQ(bo.result_types.size(), to.result_types.size()) << to.name;
        for (size_t r = 0; r < to.result_types.size(); ++r) {
          EXPECT_EQ(TypeToString(bo.result_types[r]), TypeToString(to.result_types[r])) << to.name;
        }
      }
      EXPECT_EQ(bo.operands.size(), to.operands.size()) << to.name << " at line " << to.loc.line;
      ASSERT_EQ(bo.operand_types.size(), bo.operands.size()) << to.name;
      // (the text parser gives complex's pretty `: tensor<...xcomplex<f32>>` to its f32 operands too)
      if (!to.operand_types.empty() && to.name != "stablehlo.complex") {
        ASSERT_EQ(bo.operand_types.size(), to.operand_types.size()) << to.name;
        for (size_t k = 0; k < to.operand_types.size(); ++k) {
          EXPECT_EQ(TypeToString(bo.operand_types[k]), TypeToString(to.operand_types[k]))
              << to.name << " operand " << k;
        }
      }
      ++*ops;
      if (to.name == "stablehlo.constant") {
        const Attribute* tv = Find(to.attributes, "value");
        const Attribute* bv = Find(bo.attributes, "value");
        ASSERT_TRUE(tv && bv) << "constant values at line " << to.loc.line;
        ASSERT_EQ(bv->kind, Attribute::Kind::kDense);
        if (tv->kind == Attribute::Kind::kDense && !tv->dense.empty()) {
          EXPECT_EQ(bv->splat, tv->splat) << "line " << to.loc.line;
          EXPECT_TRUE(std::vector<uint8_t>(bv->dense) == std::vector<uint8_t>(tv->dense)) << "line " << to.loc.line;
          ++*constants;
        }
      }
      ASSERT_EQ(bo.regions.size(), to.regions.size()) << to.name;
      for (size_t r = 0; r < to.regions.size(); ++r) CompareRegion(bo.regions[r], to.regions[r], ops, constants);
    }
  }
}

TEST(Bytecode, EveryArtifactReadsAsItsText) {
  SKIP_WITHOUT_ARTIFACTS();
  size_t files = 0, compared_ops = 0, compared_constants = 0;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(BytecodeDir())) {
    const std::string n = e.path().filename().string();
    if (n.size() > 8 && n.substr(n.size() - 8) == ".mlir.bc") {
      paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    SCOPED_TRACE(p.filename().string());
    const std::string file = p.filename().string();
    std::string target;
    const std::string stem = StemOf(file, &target);
    std::vector<Module> bc;
    Status s = ParseFile(p.string(), &bc);
    ASSERT_FALSE(s) << s->message;
    ASSERT_EQ(bc.size(), 1u);
    ++files;
    std::vector<Module> text;
    s = ParseFile(TextDir() + "/" + stem + ".mlir", &text);
    ASSERT_FALSE(s) << s->message;
    ASSERT_FALSE(text.empty());
    const Module& b = bc[0];
    const Module& t = text[0];
    EXPECT_EQ(b.name, t.name);
    // The text of CHLO files was lowered and inlined before serialization: only the entry's signature compares.
    const bool chlo = stem.size() > 5 && stem.substr(stem.size() - 5) == "_chlo";
    if (!chlo) {
      ASSERT_EQ(b.functions.size(), t.functions.size());
    }
    for (size_t i = 0; i < t.functions.size(); ++i) {
      const Function& tf = t.functions[i];
      if (chlo && tf.name != "main") continue;
      const Function* bf = b.FindFunction(tf.name);
      ASSERT_NE(bf, nullptr) << "function @" << tf.name;
      EXPECT_EQ(bf->visibility, tf.visibility) << tf.name;
      ASSERT_EQ(bf->args.size(), tf.args.size()) << tf.name;
      for (size_t a = 0; a < tf.args.size(); ++a) {
        EXPECT_EQ(TypeToString(bf->args[a].type), TypeToString(tf.args[a].type)) << tf.name << " arg " << a;
      }
      ASSERT_EQ(bf->result_types.size(), tf.result_types.size()) << tf.name;
      for (size_t r = 0; r < tf.result_types.size(); ++r) {
        EXPECT_EQ(TypeToString(bf->result_types[r]), TypeToString(tf.result_types[r])) << tf.name << " result " << r;
      }
      if (chlo) continue;
      CompareRegion(bf->body, tf.body, &compared_ops, &compared_constants);
      if (HasFailure()) return;
    }
    // The manifests agree on kinds, shapes and moves.
    manifest::Options o;
    o.filename = file;
    manifest::Manifest mb, mt;
    Status sb = manifest::Derive(b, o, &mb);
    Status st = manifest::Derive(t, o, &mt);
    ASSERT_EQ(!sb, !st) << (sb ? sb->message : "") << (st ? st->message : "");
    if (!sb) {
      EXPECT_EQ(Summary(mb), Summary(mt));
    }
  }
  EXPECT_EQ(files, 794u);
  EXPECT_GT(compared_ops, 10000u);
  EXPECT_GT(compared_constants, 1000u);
}

// --- The writer: text -> IR -> artifact -> IR ----------------------------------------------------------------

// An attribute as a canonical string (kind and values), to compare the IR of two artifacts.
std::string AttrKey(const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kUnit: return "unit";
    case Attribute::Kind::kBool: return a.b ? "true" : "false";
    case Attribute::Kind::kInt: return std::to_string(a.i) + ":" + TypeToString(a.type);
    case Attribute::Kind::kFloat: return std::to_string(a.f) + ":" + TypeToString(a.type);
    case Attribute::Kind::kString: return "\"" + std::string(a.str) + "\"";
    case Attribute::Kind::kSymbol: return "@" + std::string(a.str);
    case Attribute::Kind::kType: return "type " + TypeToString(a.type);
    case Attribute::Kind::kEnum: return "enum " + std::string(a.str);
    case Attribute::Kind::kDense: {
      std::string s = "dense " + TypeToString(a.type) + (a.splat ? " splat " : " ");
      for (uint8_t b : a.dense) s += std::to_string(b) + ",";
      return s;
    }
    case Attribute::Kind::kArray:
    case Attribute::Kind::kDict:
    case Attribute::Kind::kOpaque: {
      std::string s = a.kind == Attribute::Kind::kArray ? "[" : a.kind == Attribute::Kind::kDict ? "{" : "<";
      if (a.kind == Attribute::Kind::kOpaque) s += std::string(a.text) + " ";
      for (const Attribute& e : a.array) s += AttrKey(e) + ", ";
      for (const NamedAttr& kv : a.dict) s += std::string(kv.first) + "=" + AttrKey(kv.second) + ", ";
      return s + (a.kind == Attribute::Kind::kArray ? "]" : a.kind == Attribute::Kind::kDict ? "}" : ">");
    }
  }
  return "?";
}

std::string AttrsKey(NamedAttrs attrs) {
  std::vector<std::string> v;
  for (const NamedAttr& kv : attrs) v.push_back(std::string(kv.first) + "=" + AttrKey(kv.second));
  std::sort(v.begin(), v.end());
  std::string s;
  for (const std::string& x : v) s += x + "; ";
  return s;
}

// Compares every op's attributes of a region read from a written artifact (w) with those of the region read
// from the shared artifact (r): the written artifact holds what stablehlo-translate wrote, defaults included.
void CompareAttributes(const Region& w, const Region& r, std::vector<std::string>* diffs) {
  if (w.blocks.size() != r.blocks.size()) return diffs->push_back("block counts differ");
  for (size_t k = 0; k < r.blocks.size(); ++k) {
    if (w.blocks[k].ops.size() != r.blocks[k].ops.size()) return diffs->push_back("op counts differ");
    for (size_t i = 0; i < r.blocks[k].ops.size(); ++i) {
      const Operation& wo = w.blocks[k].ops[i];
      const Operation& ro = r.blocks[k].ops[i];
      const std::string wk = AttrsKey(wo.attributes), rk = AttrsKey(ro.attributes);
      if (wk != rk) diffs->push_back(std::string(ro.name) + "\n  written: " + wk + "\n  shared:  " + rk);
      for (size_t g = 0; g < ro.regions.size() && g < wo.regions.size(); ++g) {
        CompareAttributes(wo.regions[g], ro.regions[g], diffs);
      }
    }
  }
}

TEST(BytecodeWriter, EveryConformanceTextWritesAsItsArtifact) {
  SKIP_WITHOUT_ARTIFACTS();
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(BytecodeDir())) {
    const std::string n = e.path().filename().string();
    if (n.size() > 8 && n.substr(n.size() - 8) == ".mlir.bc") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  size_t written = 0, refused = 0, compared_ops = 0, compared_constants = 0;
  std::vector<std::string> diffs;
  for (const fs::path& p : paths) {
    SCOPED_TRACE(p.filename().string());
    std::string target;
    const std::string stem = StemOf(p.filename().string(), &target);
    std::vector<Module> text;
    Status s = ParseFile(TextDir() + "/" + stem + ".mlir", &text);
    ASSERT_FALSE(s) << s->message;
    BytecodeWriteOptions o;
    if (target != "current") {
      ASSERT_FALSE(ParseBytecodeTarget(target, o.target));
    }
    o.location_file = "<stdin>";
    std::string bytes;
    s = WriteBytecode(text[0], o, &bytes);
    const bool chlo = stem.size() > 5 && stem.substr(stem.size() - 5) == "_chlo";
    if (s) {
      // Only CHLO programs are refused (vhlo has no chlo ops: JAX lowers them before it serializes).
      EXPECT_TRUE(chlo) << s->message;
      EXPECT_NE(s->message.find("chlo."), std::string::npos) << s->message;
      ++refused;
      continue;
    }
    ++written;
    Module w;
    s = ParseBytecode(bytes, stem + ".written.mlir.bc", &w);
    ASSERT_FALSE(s) << s->message;
    const Module& t = text[0];
    EXPECT_EQ(w.name, t.name);
    ASSERT_EQ(w.functions.size(), t.functions.size());
    for (size_t i = 0; i < t.functions.size(); ++i) {
      const Function& tf = t.functions[i];
      const Function& wf = w.functions[i];
      EXPECT_EQ(wf.name, tf.name);
      EXPECT_EQ(wf.visibility, tf.visibility);
      ASSERT_EQ(wf.args.size(), tf.args.size());
      for (size_t a = 0; a < tf.args.size(); ++a) {
        EXPECT_EQ(TypeToString(wf.args[a].type), TypeToString(tf.args[a].type));
        EXPECT_EQ(AttrsKey(wf.args[a].attrs), AttrsKey(tf.args[a].attrs));
      }
      ASSERT_EQ(wf.result_types.size(), tf.result_types.size());
      CompareRegion(wf.body, tf.body, &compared_ops, &compared_constants);
    }
    // The shared artifact of the same text at the same target reads into the same ops and attributes.
    if (!chlo) {
      std::vector<Module> shared;
      ASSERT_FALSE(ParseFile(p.string(), &shared));
      for (size_t i = 0; i < t.functions.size(); ++i) {
        CompareAttributes(w.functions[i].body, shared[0].FindFunction(t.functions[i].name)->body, &diffs);
      }
    }
    manifest::Options mo;
    mo.filename = stem;
    manifest::Manifest mw, mt;
    Status sw = manifest::Derive(w, mo, &mw);
    Status st = manifest::Derive(t, mo, &mt);
    ASSERT_EQ(!sw, !st) << (sw ? sw->message : "") << (st ? st->message : "");
    if (!sw) {
      EXPECT_EQ(Summary(mw), Summary(mt));
    }
  }
  for (size_t i = 0; i < diffs.size() && i < 40; ++i) ADD_FAILURE() << diffs[i];
  EXPECT_EQ(diffs.size(), 0u);
  EXPECT_GT(written, 700u);
  EXPECT_GT(compared_ops, 10000u);
  std::printf("%zu written, %zu refused (chlo), %zu ops compared\n", written, refused, compared_ops);
}

// The header and the top-level section ids of an artifact: "v6 StableHLO_v1.13.8 1 3 2 4 6 5 0 8".
std::string Structure(const std::string& b) {
  size_t i = 4;
  auto varint = [&]() {
    const uint8_t first = static_cast<uint8_t>(b.at(i));
    const unsigned n = first == 0 ? 8 : static_cast<unsigned>(__builtin_ctz(first));
    uint64_t v = 0;
    for (unsigned k = 1; k <= n; ++k) v |= static_cast<uint64_t>(static_cast<uint8_t>(b.at(i + k))) << (8 * (k - 1));
    i += n + 1;
    return first == 0 ? v : (v << (8 - n - 1)) | (first >> (n + 1));
  };
  std::string s = "v" + std::to_string(varint()) + " ";
  const size_t nul = b.find('\0', i);
  s += b.substr(i, nul - i);
  i = nul + 1;
  while (i < b.size()) {
    const uint8_t id = static_cast<uint8_t>(b[i++]);
    const uint64_t len = varint();
    if (id & 0x80) return s + " (aligned section)";
    s += " " + std::to_string(id);
    i += len;
  }
  return s;
}

TEST(BytecodeWriter, WrittenArtifactsHaveTheSharedArtifactsStructure) {
  SKIP_WITHOUT_ARTIFACTS();
  for (const char* name : {"abs_int8_20_20.current.mlir.bc", "abs_float16_20_20.1.0.0.mlir.bc",
                           "abs_int16_20_20.1.5.0.mlir.bc", "add_int64_20_20_int64_20_20.1.5.0.mlir.bc"}) {
    SCOPED_TRACE(name);
    const std::string shared = ReadFile(fs::path(BytecodeDir()) / name);
    if (shared.empty()) continue;
    std::string target;
    const std::string stem = StemOf(name, &target);
    std::vector<Module> text;
    ASSERT_FALSE(ParseFile(TextDir() + "/" + stem + ".mlir", &text));
    BytecodeWriteOptions o;
    if (target != "current") {
      ASSERT_FALSE(ParseBytecodeTarget(target, o.target));
    }
    std::string written;
    ASSERT_FALSE(WriteBytecode(text[0], o, &written));
    EXPECT_EQ(Structure(written), Structure(shared));
    EXPECT_EQ(Structure(written).substr(0, 3), "v6 ");
    // Smaller or about the size of what stablehlo-translate wrote (no resources, no duplicates).
    EXPECT_LT(written.size(), shared.size() * 11 / 10) << written.size() << " vs " << shared.size();
  }
}

TEST(BytecodeWriter, OpVersionsFollowTheTarget) {
  const char* text =
      "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %0 = stablehlo.exponential %a : tensor<4xf32>\n"
      "  return %0 : tensor<4xf32>\n"
      "}\n";
  std::vector<Module> m;
  ASSERT_FALSE(ParseModules(text, "t.mlir", &m));
  std::string newest, old;
  ASSERT_FALSE(WriteBytecode(m[0], BytecodeWriteOptions(), &newest));
  BytecodeWriteOptions o;
  ASSERT_FALSE(ParseBytecodeTarget("1.0.0", o.target));
  ASSERT_FALSE(WriteBytecode(m[0], o, &old));
  EXPECT_NE(newest.find(std::string("exponential_v2\0", 15)), std::string::npos);
  EXPECT_NE(old.find(std::string("exponential_v1\0", 15)), std::string::npos);
  EXPECT_NE(old.find(std::string("StableHLO_v1.0.0\0", 17)), std::string::npos);
  for (const std::string* bytes : {&newest, &old}) {
    Module back;
    Status s = ParseBytecode(*bytes, "t.mlir.bc", &back);
    ASSERT_FALSE(s) << s->message;
    ASSERT_EQ(back.functions.size(), 1u);
    EXPECT_EQ(back.functions[0].body.blocks[0].ops[0].name, "stablehlo.exponential");
    EXPECT_EQ(TypeToString(back.functions[0].args[0].type), "tensor<4xf32>");
  }
}

// A declaration (a function without a body) keeps its arguments and their attributes through an artifact: the
// reader takes them from its function type (it had none; found by fuzz_bytecode_writer).
TEST(BytecodeWriter, ADeclarationKeepsItsArguments) {
  const char* text =
      "func.func private @f(%x: tensor<4xf32> {mhlo.memory_kind = \"pinned_host\"}, %y: tensor<i32>) -> "
      "tensor<4xf32>\n";
  std::vector<Module> m;
  ASSERT_FALSE(ParseModules(text, "d.mlir", &m));
  ASSERT_EQ(m[0].functions.size(), 1u);
  ASSERT_EQ(m[0].functions[0].args.size(), 2u);
  std::string bytes;
  ASSERT_FALSE(WriteBytecode(m[0], BytecodeWriteOptions(), &bytes));
  Module back;
  Status s = ParseBytecode(bytes, "d.mlir.bc", &back);
  ASSERT_FALSE(s) << s->message;
  ASSERT_EQ(back.functions.size(), 1u);
  const Function& f = back.functions[0];
  EXPECT_EQ(f.visibility, "private");
  EXPECT_TRUE(f.body.blocks.empty());
  ASSERT_EQ(f.args.size(), 2u);
  EXPECT_EQ(TypeToString(f.args[0].type), "tensor<4xf32>");
  EXPECT_EQ(TypeToString(f.args[1].type), "tensor<i32>");
  EXPECT_EQ(AttrsKey(f.args[0].attrs), AttrsKey(m[0].functions[0].args[0].attrs));
  ASSERT_EQ(f.result_types.size(), 1u);
}

TEST(BytecodeWriter, WhatVhloCannotHoldIsRefusedByName) {
  struct Case {
    const char* text;
    const char* target;
    const char* message;
  };
  const Case cases[] = {
      {"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = chlo.erf %a : tensor<4xf32> -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
       nullptr, "the op chlo.erf has no vhlo form"},
      {"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = stablehlo.exponential %a {result_accuracy = #stablehlo.result_accuracy<ulps = 2, mode = "
       "#stablehlo.result_accuracy_mode<TOLERANCE>>} : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
       "1.0.0", "the attribute result_accuracy does not exist in vhlo.exponential_v1"},
      {"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = \"stablehlo.broadcast_in_dim\"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
       nullptr, "requires the attribute broadcast_dimensions, which the op does not have (it has: none)"},
      {"func.func @main(%a: tensor<2x3xf32>, %i: tensor<2x1xi64>) -> tensor<2x1xf32> {\n"
       "  %0 = \"stablehlo.gather\"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], "
       "operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = "
       "1>, slice_sizes = array<i64: 1, 1>} : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<2x1xf32>\n"
       "  return %0 : tensor<2x1xf32>\n}\n",
       "1.0.0", "operand_batching_dims does not exist in vhlo.gather_v1"},
      {"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n", "1.99.0",
       "outside the versions this writer knows"},
      // Found by fuzz_bytecode_writer: what the text parser accepts but the artifact would read back otherwise.
      {"func.func @main() -> tensor<2xi64> {\n  %c = stablehlo.constant dense<1> : tensor<2xi64>\n"
       "  =eturn %c : tensor<2xi64>\n}\n",
       nullptr, "the value %c is used before its definition"},
      {"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.abs %1 : tensor<2xf32>\n"
       "  %1 = stablehlo.abs %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n",
       nullptr, "the value %1 is used before its definition"},
      {"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.abs %a : tensor<2xf32>\n"
       "  stablehlo.return %0 : tensor<2xf32>\n}\n",
       nullptr, "the op stablehlo.return at line 3 is in a function's body"},
      {"func.func @main(%a: tensor<2xf32>) -> tensor<f32> {\n  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
       "  %0 = \"stablehlo.reduce\"(%a, %z) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
       "    %s = stablehlo.add %x, %y : tensor<f32>\n    func.return %s : tensor<f32>\n"
       "  }) {dimensions = array<i64: 0>} : (tensor<2xf32>, tensor<f32>) -> tensor<f32>\n"
       "  return %0 : tensor<f32>\n}\n",
       nullptr, "the op func.return at line 6 is in an op's region"},
      {"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0:2 = stablehlo.sort %a, %a : tensor<2xf32>\n"
       "  %0 = stablehlo.abs %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n",
       nullptr, "the value %0 is defined twice"},
      {"func.func @main() -> tensor<f32> {\n^bb0(%x: tensor<f32>):\n  return %x : tensor<f32>\n}\n", nullptr,
       "a function's entry block has 1 arguments, the function 0"},
      // A result index past the op's results (it wrote a value index past the region's values, unreadable).
      {"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.abs %a : tensor<2xf32>\n"
       "  %1 = stablehlo.abs %0#4 : tensor<2xf32>\n  return %1 : tensor<2xf32>\n}\n",
       nullptr, "the value %0#4 is used, but %0 names 1 value(s)"},
      {"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0:2 = stablehlo.sort %a, %a : tensor<2xf32>\n"
       "  return %0#2 : tensor<2xf32>\n}\n",
       nullptr, "the value %0#2 is used, but %0 names 2 value(s)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    std::vector<Module> m;
    Status s = ParseModules(c.text, "t.mlir", &m);
    ASSERT_FALSE(s) << s->message;
    BytecodeWriteOptions o;
    if (c.target) {
      const char* dot = std::strchr(c.target, '.');
      o.target[0] = std::atoi(c.target);
      o.target[1] = std::atoi(dot + 1);
      o.target[2] = std::atoi(std::strchr(dot + 1, '.') + 1);
    }
    std::string bytes;
    s = WriteBytecode(m[0], o, &bytes);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(s->message.find(c.message), std::string::npos) << s->message;
    EXPECT_NE(s->message.find("cannot write the module as a StableHLO artifact"), std::string::npos);
  }
  int t[3];
  EXPECT_TRUE(ParseBytecodeTarget("1.14.0", t));
  EXPECT_TRUE(ParseBytecodeTarget("1.9", t));
  EXPECT_FALSE(ParseBytecodeTarget("1.9.0", t));
  EXPECT_EQ(t[1], 9);
}

// --- Malformed artifacts ------------------------------------------------------------------------------------

std::string Artifact(const char* name) { return ReadFile(fs::path(BytecodeDir()) / name); }

std::string Error(const std::string& bytes) {
  Module m;
  Status s = ParseBytecode(bytes, "bad.mlir.bc", &m);
  EXPECT_TRUE(s) << "expected an error";
  return s ? s->message : "";
}

// Replaces the first occurrence of `from` by `to` (same length).
std::string Patch(std::string bytes, const std::string& from, const std::string& to) {
  const size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << "pattern not found";
  if (at != std::string::npos) bytes.replace(at, from.size(), to);
  return bytes;
}

TEST(Bytecode, WrongMagicIsRefused) {
  EXPECT_NE(Error("MLIR").find("byte 0: expected the MLIR bytecode magic"), std::string::npos) << Error("MLIR");
  EXPECT_NE(Error("").find("byte 0"), std::string::npos);
  EXPECT_FALSE(IsBytecode("module {}"));
  EXPECT_TRUE(IsBytecode(std::string("ML\xefR", 4)));
}

TEST(Bytecode, NewerAndOlderVersionsAreRefusedByName) {
  SKIP_WITHOUT_ARTIFACTS();
  std::string e = Error(Patch(Artifact("abs_int8_20_20.current.mlir.bc"), "StableHLO_v1.13.8", "StableHLO_v1.14.0"));
  EXPECT_NE(e.find("1.14.0"), std::string::npos) << e;
  EXPECT_NE(e.find("1.13.8"), std::string::npos) << e;
  EXPECT_NE(e.find("newer"), std::string::npos) << e;
  e = Error(Patch(Artifact("abs_float16_20_20.1.0.0.mlir.bc"), "StableHLO_v1.0.0", "StableHLO_v0.9.0"));
  EXPECT_NE(e.find("0.9.0"), std::string::npos) << e;
  EXPECT_NE(e.find("older than 1.0.0"), std::string::npos) << e;
  e = Error(Patch(Artifact("abs_int8_20_20.current.mlir.bc"), "StableHLO_v1", "LLVMbytes_v1"));
  EXPECT_NE(e.find("byte 5: expected the producer"), std::string::npos) << e;
}

TEST(Bytecode, UnknownOpsAndOpVersionsAreRefused) {
  SKIP_WITHOUT_ARTIFACTS();
  std::string e =
      Error(Patch(Artifact("abs_int8_20_20.current.mlir.bc"), std::string("abs_v1\0", 7), std::string("abs_v9\0", 7)));
  EXPECT_NE(e.find("unknown vhlo op \"vhlo.abs_v9\""), std::string::npos) << e;
  // exponential_v2 exists from 1.9.0: an artifact of 1.5.0 that has it is malformed.
  const std::string exp = Artifact("exponential_float16_20_20.1.9.0.mlir.bc");
  if (!exp.empty()) {
    e = Error(Patch(exp, "StableHLO_v1.9.0", "StableHLO_v1.5.0"));
    EXPECT_NE(e.find("vhlo.exponential_v2 does not exist in StableHLO 1.5.0"), std::string::npos) << e;
  }
}

TEST(Bytecode, TruncationAtEveryOffsetIsAnErrorWithItsOffset) {
  SKIP_WITHOUT_ARTIFACTS();
  for (const char* name : {"abs_int8_20_20.current.mlir.bc", "iota_.1.5.0.mlir.bc"}) {
    const std::string full = Artifact(name);
    ASSERT_FALSE(full.empty()) << name;
    for (size_t n = 0; n < full.size(); ++n) {
      Module m;
      Status s = ParseBytecode(std::string_view(full.data(), n), "cut.mlir.bc", &m);
      ASSERT_TRUE(s) << name << " cut at " << n;
      EXPECT_NE(s->message.find("cut.mlir.bc: byte "), std::string::npos) << s->message;
      EXPECT_NE(s->message.find("expected"), std::string::npos) << s->message;
    }
  }
}

TEST(Bytecode, CorruptBytesNeverCrash) {
  SKIP_WITHOUT_ARTIFACTS();
  const std::string full = Artifact("iota_.1.5.0.mlir.bc");
  ASSERT_FALSE(full.empty());
  size_t errors = 0;
  for (size_t i = 4; i < full.size(); ++i) {
    for (uint8_t v : {uint8_t{0x00}, uint8_t{0xFF}, uint8_t{0x80}, uint8_t{0x01}}) {
      std::string bad = full;
      if (static_cast<uint8_t>(bad[i]) == v) continue;
      bad[i] = static_cast<char>(v);
      Module m;
      Status s = ParseBytecode(bad, "flip.mlir.bc", &m);
      if (s) {
        ++errors;
        EXPECT_NE(s->message.find("flip.mlir.bc: byte "), std::string::npos) << s->message;
      }
    }
  }
  EXPECT_GT(errors, full.size());  // most corruptions are caught (some only change a value)
}

TEST(Bytecode, SectionLengthPastTheEnd) {
  SKIP_WITHOUT_ARTIFACTS();
  std::string bytes = Artifact("abs_int8_20_20.current.mlir.bc");
  // The first section (the dialect section, id 1) follows the producer's NUL: make its length 0x7F bytes... of
  // a file that ends sooner by cutting it just after the header.
  const size_t first = bytes.find('\0') + 1;
  ASSERT_EQ(bytes[first], 1);
  bytes[first + 1] = static_cast<char>(0xFF);  // a one-byte varint: 127
  bytes.resize(first + 10);
  const std::string e = Error(bytes);
  EXPECT_NE(e.find("expected the dialect section's 127 bytes, but the file ends"), std::string::npos) << e;
}

TEST(Bytecode, OverflowingVarIntsAndCounts) {
  SKIP_WITHOUT_ARTIFACTS();
  std::string bytes = Artifact("abs_int8_20_20.current.mlir.bc");
  const size_t first = bytes.find('\0') + 1;
  // A 9-byte varint of 2^64-1 as the first section's length.
  std::string bad =
      bytes.substr(0, first + 1) + std::string(1, '\0') + std::string(8, '\xFF') + bytes.substr(first + 2);
  std::string e = Error(bad);
  EXPECT_NE(e.find("expected the dialect section's 18446744073709551615 bytes, but the file ends"), std::string::npos)
      << e;
  // A varint cut in the middle.
  e = Error(bytes.substr(0, first + 1) + "\x02");
  EXPECT_NE(e.find("expected a section length"), std::string::npos) << e;
}

TEST(Bytecode, StringIndexOutOfRangeCyclesAndShortDenseData) {
  SKIP_WITHOUT_ARTIFACTS();
  const std::string bytes = Artifact("abs_int8_20_20.current.mlir.bc");
  // Attribute #0 is the builtin StringAttr "<stdin>": code 2 (05), string 9 (13). String 63 does not exist.
  std::string e = Error(Patch(bytes, std::string("\x05\x13\x11\x01\x05", 5), std::string("\x05\x7F\x11\x01\x05", 5)));
  EXPECT_NE(e.find("a string index below 23, found 63"), std::string::npos) << e;
  // Attribute #2 is the module's dictionary {#3 = #1, #4 = #1}: make its first name itself.
  e = Error(Patch(bytes, std::string("\x03\x05\x07\x03\x09\x03", 6), std::string("\x03\x05\x05\x03\x09\x03", 6)));
  EXPECT_NE(e.find("refers to itself"), std::string::npos) << e;
  // The inputs constant's tensor<20x20xi8> holds 400 bytes: say 399 (the entry then has a byte left over).
  e = Error(Patch(bytes, std::string("\x1f\x03\x42\x06", 4), std::string("\x1f\x03\x3e\x06", 4)));
  EXPECT_NE(e.find("expected 400 bytes of dense data for tensor<20x20xi8>, found 399"), std::string::npos) << e;
}

// --- Artifacts built here: a minimal writer of the format, for what the shared artifacts cannot show ------

std::string VarInt(uint64_t v) {
  std::string out;
  for (unsigned n = 1; n <= 8; ++n) {
    if (n < 8 ? v < (uint64_t{1} << (7 * n)) : v < (uint64_t{1} << 56)) {
      const uint64_t enc = (v << n) | (uint64_t{1} << (n - 1));
      for (unsigned i = 0; i < n; ++i) out.push_back(static_cast<char>((enc >> (8 * i)) & 0xFF));
      return out;
    }
  }
  out.push_back('\0');
  for (unsigned i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return out;
}

std::string Section(int id, const std::string& data) {
  return std::string(1, static_cast<char>(id)) + VarInt(data.size()) + data;
}

// An artifact of one dialect (builtin) with the op <dialect>.module, the strings `dialect` and "module", the
// dialect's attributes `attrs` (custom encoding) and the IR section `ir`.
std::string Artifact(const std::vector<std::string>& attrs, const std::string& ir,
                     const std::string& dialect = "builtin") {
  std::string strings = VarInt(2) + VarInt(7) + VarInt(dialect.size() + 1) + dialect + std::string("\0module\0", 8);
  std::string dialects = VarInt(1) + VarInt(0 << 1) + VarInt(1) + VarInt(0) + VarInt(1) + VarInt(1 << 1 | 1);
  std::string data, offsets = VarInt(attrs.size()) + VarInt(0) + VarInt(0) + VarInt(attrs.size());
  for (const std::string& a : attrs) {
    data += a;
    offsets += VarInt(a.size() << 1 | 1);
  }
  return std::string("ML\xefR", 4) + VarInt(6) + std::string("StableHLO_v1.13.8\0", 18) + Section(0, strings) +
         Section(1, dialects) + Section(3, offsets) + Section(2, data) + Section(4, ir);
}

// attribute i = [attribute i + 1] (a builtin ArrayAttr) for i < depth, the last one UnknownLoc.
std::vector<std::string> ArrayChain(int depth) {
  std::vector<std::string> attrs;
  for (int i = 0; i < depth; ++i) attrs.push_back(VarInt(0) + VarInt(1) + VarInt(i + 1));
  attrs.push_back(VarInt(15));
  return attrs;
}

TEST(Bytecode, DeepAttributeNestingIsRefused) {
  // The only op's location is attribute #0.
  const std::string op = VarInt(0) + std::string(1, '\0') + VarInt(0);
  std::string e = Error(Artifact(ArrayChain(300), VarInt(1 << 1) + op));
  EXPECT_NE(e.find("attributes and types nest deeper than 256"), std::string::npos) << e;
  // Shallow, the same shape reads up to the location check.
  e = Error(Artifact(ArrayChain(10), VarInt(1 << 1) + op));
  EXPECT_NE(e.find("expected a location attribute"), std::string::npos) << e;
}

TEST(Bytecode, DeepRegionNestingIsRefused) {
  // builtin.module holding a module holding a module ... 300 deep (regions inline, not isolated).
  const std::vector<std::string> attrs = {VarInt(15)};  // #0: UnknownLoc
  std::string inner = VarInt(0) + std::string(1, '\0') + VarInt(0);
  for (int i = 0; i < 300; ++i) {
    inner = VarInt(0) + std::string(1, '\x10') + VarInt(0) + VarInt(1 << 1) +  // 1 region, not isolated
            VarInt(1) + VarInt(0) + VarInt(1 << 1) + inner;                    // 1 block, 0 values, 1 op
  }
  // The top-level module's region is isolated: a nested IR section.
  const std::string body = VarInt(1) + VarInt(0) + VarInt(1 << 1) + inner;
  const std::string top = VarInt(0) + std::string(1, '\x10') + VarInt(0) + VarInt(1 << 1 | 1) + Section(4, body);
  const std::string e = Error(Artifact(attrs, VarInt(1 << 1) + top));
  EXPECT_NE(e.find("regions nest deeper than 256"), std::string::npos) << e;
}

TEST(Bytecode, UnknownDialectsAreRefused) {
  // An attribute of dialect "acme" in its own encoding cannot be read.
  const std::string op = VarInt(0) + std::string(1, '\0') + VarInt(0);
  std::string e = Error(Artifact({VarInt(15)}, VarInt(1 << 1) + op, "acme"));
  EXPECT_NE(e.find("found one of dialect \"acme\" in its own encoding"), std::string::npos) << e;
}

TEST(Bytecode, ABuiltArtifactReads) {
  // The writer above makes valid artifacts: an empty module reads.
  const std::vector<std::string> attrs = {VarInt(15)};
  const std::string body = VarInt(1) + VarInt(0) + VarInt(0 << 1);  // 1 block, 0 values, no ops
  const std::string top = VarInt(0) + std::string(1, '\x10') + VarInt(0) + VarInt(1 << 1 | 1) + Section(4, body);
  Module m;
  Status s = ParseBytecode(Artifact(attrs, VarInt(1 << 1) + top), "built.mlir.bc", &m);
  EXPECT_FALSE(s) << s->message;
  EXPECT_TRUE(m.functions.empty());
}

}  // namespace
}  // namespace neuronmem::stablehlo
