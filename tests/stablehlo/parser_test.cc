// The StableHLO parser on the real interpreter tests and on hand-written inputs covering every form in
// ../shared/reference/contract-facts.md section 6, plus malformed input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "parse_util.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {
namespace {

using testing::MustParse;
using testing::ParseError;

const Operation& Op(const Module& m, const char* fn, size_t i) { return m.FindFunction(fn)->body.blocks[0].ops.at(i); }

TEST(Conformance, EveryInterpreterTestFileParses) {
  const char* dir = std::getenv("NEURONMEM_CONFORMANCE_DIR");
  ASSERT_NE(dir, nullptr) << "meson passes NEURONMEM_CONFORMANCE_DIR";
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << "the conformance folder " << dir << " is absent (it is ../shared/conformance/stablehlo-testdata)";
  }
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".mlir") continue;
    std::vector<Module> mods;
    Status s = ParseFile(entry.path().string(), &mods);
    EXPECT_FALSE(s) << entry.path() << ": " << (s ? s->message : "");
    ASSERT_FALSE(mods.empty()) << entry.path();
    // The testdata files have @main; the interpreter tests under interpret/ name theirs after the op.
    const bool interpret = entry.path().string().find("/interpret/") != std::string::npos;
    size_t ops = 0;
    const Function* main = nullptr;
    for (const auto& m : mods) {
      if (!main) main = m.FindFunction("main");
      for (const auto& f : m.functions) {
        for (const auto& b : f.body.blocks) ops += b.ops.size();
      }
    }
    if (!interpret) {
      EXPECT_NE(main, nullptr) << entry.path();
    }
    EXPECT_GT(ops, 2u) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 38u);
}

TEST(Parser, QuantizedElementTypes) {
  auto mods = MustParse(R"(func.func @main(%a: tensor<2x3x!quant.uniform<i8:f32, 0.0039172410964965817:-128>>,
    %b: tensor<4x!quant.uniform<i8<-127:127>:f32:0, {0.5:-3, 2.5E-2, -1.0:7, 1e-3:0}>>,
    %c: tensor<!quant.uniform<u8:bf16, 1.5377370458777768E-5>>,
    %d: tensor<3x!quant.uniform<i4:f16, 0.25:1>>) -> tensor<2x3xf32> {
  %0 = stablehlo.uniform_dequantize %a : (tensor<2x3x!quant.uniform<i8:f32,
      0.0039172410964965817:-128>>) -> tensor<2x3xf32>
  %1 = stablehlo.constant dense<[1, -8, 7]> : tensor<3xi4>
  return %0 : tensor<2x3xf32>
})");
  ASSERT_EQ(mods.size(), 1u);
  const Function& f = mods[0].functions.at(0);
  const Type& a = f.args.at(0).type;
  ASSERT_NE(a.quant, nullptr);
  EXPECT_EQ(a.element, ElementType::kS8);
  EXPECT_EQ(a.quant->expressed, ElementType::kF32);
  EXPECT_EQ(a.quant->axis, -1);
  EXPECT_EQ(a.quant->storage_min, -128);
  EXPECT_EQ(a.quant->storage_max, 127);
  ASSERT_EQ(a.quant->scales.size(), 1u);
  EXPECT_DOUBLE_EQ(a.quant->scales[0], 0.0039172410964965817);
  EXPECT_EQ(a.quant->zero_points[0], -128);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(TypeToString(a), "tensor<2x3x!quant.uniform<i8:f32, 0.0039172410964965817:-128>>");
  const Type& b = f.args.at(1).type;
  ASSERT_NE(b.quant, nullptr);
  EXPECT_EQ(b.quant->axis, 0);
  EXPECT_EQ(b.quant->storage_min, -127);
  EXPECT_EQ(b.quant->storage_max, 127);
  EXPECT_EQ(b.quant->scales, (std::vector<double>{0.5, 2.5e-2, -1.0, 1e-3}));
  EXPECT_EQ(b.quant->zero_points, (std::vector<int64_t>{-3, 0, 7, 0}));
  const Type& c = f.args.at(2).type;
  ASSERT_NE(c.quant, nullptr);
  EXPECT_EQ(c.element, ElementType::kU8);
  EXPECT_EQ(c.quant->expressed, ElementType::kBF16);
  EXPECT_EQ(c.quant->storage_max, 255);
  EXPECT_EQ(c.quant->zero_points[0], 0);
  EXPECT_TRUE(c.dims.empty());
  const Type& d = f.args.at(3).type;
  EXPECT_EQ(d.element, ElementType::kS4);
  EXPECT_EQ(d.quant->storage_min, -8);
  EXPECT_EQ(d.quant->storage_max, 7);
  // i4 literals take one byte per element, sign-extended.
  const Attribute* v = Find(Op(mods[0], "main", 1).attributes, "value");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->dense, (std::vector<uint8_t>{1, 0xf8, 7}));

  std::string m = ParseError("func.func @main(%a: tensor<2x!quant.uniform<i8:f32>>) -> () {\n}\n");
  EXPECT_NE(m.find("malformed quantized type"), std::string::npos) << m;
  m = ParseError("func.func @main(%a: tensor<2x!quant.uniform<i8:f32:1, 0.5>>) -> () {\n}\n");
  EXPECT_NE(m.find("per-axis scales"), std::string::npos) << m;
  m = ParseError("func.func @main(%a: tensor<2x!quant.uniform<i8<5:1>:f32, 0.5>>) -> () {\n}\n");
  EXPECT_NE(m.find("min > max"), std::string::npos) << m;
  m = ParseError("func.func @main(%a: tensor<2x!quant.any<i8:f32>>) -> () {\n}\n");
  EXPECT_NE(m.find("only !quant.uniform"), std::string::npos) << m;
  m = ParseError("func.func @main(%a: tensor<2x!quant.uniform<i8:i32, 0.5>>) -> () {\n}\n");
  EXPECT_NE(m.find("not a float type"), std::string::npos) << m;
}

// Quantized types are read on the lexer's tokens, as element types of tensors and as types of their own.
TEST(Parser, QuantizedTypeForms) {
  auto mods = MustParse(R"(func.func @main(%a: !quant.uniform<i8:f32, 0.5:-3>,
    %b: !quant.uniform<u8<1:200>:bf16:2, {1.0:1,2.0:2, 3e-1}>,
    %c: tensor<2x!quant.uniform<i16 : f16 , +0.125 : +4 >>,
    %d: tensor<5x!quant.uniform<i32:f32:0, {-2.5E-3:-7}>, #enc>,
    %e: tensor<!quant.uniform<ui4:f32,
           0.75>>) -> () {
  return
})");
  ASSERT_EQ(mods.size(), 1u);
  const Function& f = mods[0].functions.at(0);
  const Type& a = f.args.at(0).type;
  EXPECT_EQ(a.kind, Type::Kind::kScalar);
  ASSERT_NE(a.quant, nullptr);
  EXPECT_EQ(a.element, ElementType::kS8);
  EXPECT_EQ(a.quant->scales, (std::vector<double>{0.5}));
  EXPECT_EQ(a.quant->zero_points, (std::vector<int64_t>{-3}));
  EXPECT_EQ(a.text, "!quant.uniform<i8:f32, 0.5:-3>");
  const Type& b = f.args.at(1).type;
  ASSERT_NE(b.quant, nullptr);
  EXPECT_EQ(b.element, ElementType::kU8);
  EXPECT_EQ(b.quant->expressed, ElementType::kBF16);
  EXPECT_EQ(b.quant->storage_min, 1);
  EXPECT_EQ(b.quant->storage_max, 200);
  EXPECT_EQ(b.quant->axis, 2);
  EXPECT_EQ(b.quant->scales, (std::vector<double>{1.0, 2.0, 0.3}));
  EXPECT_EQ(b.quant->zero_points, (std::vector<int64_t>{1, 2, 0}));
  const Type& c = f.args.at(2).type;
  ASSERT_NE(c.quant, nullptr);
  EXPECT_EQ(c.kind, Type::Kind::kTensor);
  EXPECT_EQ(c.element, ElementType::kS16);
  EXPECT_EQ(c.quant->expressed, ElementType::kF16);
  EXPECT_EQ(c.quant->scales, (std::vector<double>{0.125}));
  EXPECT_EQ(c.quant->zero_points, (std::vector<int64_t>{4}));
  EXPECT_EQ(c.dims, (std::vector<int64_t>{2}));
  const Type& d = f.args.at(3).type;
  ASSERT_NE(d.quant, nullptr);
  EXPECT_EQ(d.element, ElementType::kS32);
  EXPECT_EQ(d.quant->axis, 0);
  EXPECT_EQ(d.quant->scales, (std::vector<double>{-2.5e-3}));
  EXPECT_EQ(d.quant->zero_points, (std::vector<int64_t>{-7}));
  EXPECT_EQ(d.quant->storage_min, INT32_MIN);
  const Type& e = f.args.at(4).type;
  ASSERT_NE(e.quant, nullptr);
  EXPECT_EQ(e.element, ElementType::kU4);
  EXPECT_EQ(e.quant->storage_max, 15);
  EXPECT_TRUE(e.dims.empty());
}

// A malformed quantized type is a parse error at the token that is wrong (line:column), inside tensor<...>
// too, and the parser goes on with the right locations after a quantized type that spans lines.
TEST(Parser, MalformedQuantizedTypesNameTheirLocation) {
  struct Case {
    const char* type;     // the type of %a, on line 2 from column 9
    const char* message;  // in the error
    const char* at;       // the error's column is where this first occurs in `type` (NULL: line 3, column 9)
  };
  const Case cases[] = {
      {"tensor<2x!quant.uniform<i8:f32>>", "expected ',' before the scale, at '>'", ">>"},
      {"tensor<2x!quant.uniform<i8:f32:1, 0.5>>", "per-axis scales need {...}", "0.5"},
      {"tensor<2x!quant.uniform<i8<5:1>:f32, 0.5>>", "min > max", "5:"},
      {"tensor<2x!quant.any<i8:f32>>", "only !quant.uniform", "!"},
      {"tensor<2x!quant.uniform<i8:i32, 0.5>>", "not a float type, at 'i32'", "i32"},
      {"tensor<2x!quant.uniform<f32x:f32, 0.5>>", "expected a storage type", "f32x"},
      {"tensor<2x!quant.uniform<i8:f32, abc>>", "expected a number (the scale)", "abc"},
      {"tensor<2x!quant.uniform<i8:f32, 0.5:1.5>>", "expected an integer (the zero point)", "1.5"},
      {"tensor<2x!quant.uniform<i8:f32, 0.5:99999999999999999999>>", "expected an integer", "999"},
      {"tensor<2x!quant.uniform<i8:f32:{1:2}, {0.5}>>", "sub-channel", "{"},
      {"tensor<2x!quant.uniform<i8:f32:65, {0.5}>>", "quantized dimension out of range", "65"},
      {"tensor<2x!quant.uniform<i8:f32:0, {0.5, 0.25>>", "expected '}'", ">>"},
      {"tensor<2x!quant.uniform<i8:f32, 0.5> x>", "unexpected 'x' after the quantized type", "x>"},
      {"!quant.uniform<i8<1:2:f32, 0.5>", "expected '>' to close the storage range", ":f32"},
      {"!quant.uniform<i8:f32, {0.5}>", "without a quantized dimension", "{"},
      {"!quant.uniform<i8:f32, 0.5 -> ()", "expected '>' to close !quant.uniform", "->"},
      {"!quant.uniform i8", "expected '<'", "i8"},
      {"tensor<2x!quant.uniform<i8:f32,\n    0.5:x>>", "expected an integer (the zero point)", nullptr},
  };
  for (const Case& c : cases) {
    const std::string type = c.type;
    const std::string m = ParseError("func.func @main(\n    %a: " + type + ") -> () {\n}\n");
    EXPECT_NE(m.find(c.message), std::string::npos) << type << ": " << m;
    const std::string where =
        c.at ? "bad.mlir:2:" + std::to_string(9 + type.find(c.at)) + ": " : std::string("bad.mlir:3:9: ");
    EXPECT_EQ(m.rfind(where, 0), 0u) << type << ": " << m;
  }
  // After a quantized tensor type over two lines, locations are still the source's.
  const std::string m =
      ParseError("func.func @main(%a: tensor<2x!quant.uniform<i8:f32,\n 0.5>>) -> () {\n  %0 = stablehlo.bogus(\n}\n");
  EXPECT_EQ(m.rfind("bad.mlir:3:", 0), 0u) << m;
}

TEST(Parser, ReduceSumFileStructure) {
  auto mods = MustParse(R"(
module @jit_main attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main() -> (tensor<3xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = call @inputs() : () -> tensor<2x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<2x3xf32>,
        tensor<f32>) -> tensor<3xf32>
    stablehlo.custom_call @check.expect_close(%2, %2) {has_side_effect = true} : (tensor<3xf32>, tensor<3xf32>) -> ()
    return %2 : tensor<3xf32>
  }
  func.func private @inputs() -> (tensor<2x3xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[[1.0, 3.005660e+00, 1.5], [-0.5, -4.25, 2.0]]> : tensor<2x3xf32>
    return %cst : tensor<2x3xf32>
  }
})");
  ASSERT_EQ(mods.size(), 1u);
  const Module& m = mods[0];
  EXPECT_EQ(m.name, "jit_main");
  ASSERT_EQ(m.functions.size(), 2u);
  const Function& f = *m.FindFunction("main");
  ASSERT_EQ(f.result_types.size(), 1u);
  EXPECT_EQ(f.result_types[0].dims, std::vector<int64_t>({3}));
  EXPECT_EQ(f.result_types[0].element, ElementType::kF32);
  const auto& ops = f.body.blocks[0].ops;
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[0].name, "func.call");
  EXPECT_EQ(ops[0].callee, "inputs");
  EXPECT_EQ(ops[2].name, "stablehlo.reduce");
  ASSERT_EQ(ops[2].operands.size(), 2u);
  EXPECT_EQ(ops[2].operands[0].name, "0");
  EXPECT_EQ(ops[2].operands[1].name, "cst");
  ASSERT_NE(Find(ops[2].attributes, "dimensions"), nullptr);
  EXPECT_EQ(Find(ops[2].attributes, "dimensions")->array.at(0).i, 0);
  EXPECT_EQ(ops[2].result_types.at(0).dims, std::vector<int64_t>({3}));
  EXPECT_EQ(ops[3].callee, "check.expect_close");
  EXPECT_EQ(ops[4].name, "func.return");
  const Operation& cst = Op(m, "inputs", 0);
  const Attribute* v = Find(cst.attributes, "value");
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->dense.size(), 24u);
  float vals[6];
  std::memcpy(vals, v->dense.data(), 24);
  EXPECT_FLOAT_EQ(vals[1], 3.00566f);
  EXPECT_FLOAT_EQ(vals[4], -4.25f);
}

TEST(Parser, LocationsAliasesAndNoModuleWrapper) {
  auto mods = MustParse(R"(#loc = loc("a.py":1:2)
#loc1 = loc(fused[#loc, "b"])
func.func @main(%arg0: tensor<2xf32> loc("x"), %arg1: tensor<2xf32> loc(#loc)) -> tensor<2xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<2xf32> loc(callsite(#loc at #loc1))
  return %0 : tensor<2xf32> loc(#loc)
} loc(#loc1)
#loc2 = loc("c.py":3:4)
)");
  ASSERT_EQ(mods.size(), 1u);
  const Function* f = mods[0].FindFunction("main");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->args.size(), 2u);
  ASSERT_EQ(f->result_types.size(), 1u);  // a single result printed without parentheses
  EXPECT_EQ(f->body.blocks[0].ops.size(), 2u);
  EXPECT_EQ(f->body.blocks[0].ops[0].loc.line, 4u);
  EXPECT_EQ(f->body.blocks[0].ops[0].loc.column, 3u);
}

TEST(Parser, SplitModulesAndForeignDialects) {
  auto mods = MustParse(R"(
module @a {
  sdy.mesh @mesh = <["x"=2, "y"=1]>
  func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}]> : tensor<8xf32>
    %1 = mpmd.named_computation<"stage1"> (%0) (%a: tensor<8xf32>) {
      mpmd.return %a : tensor<8xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
    return %1 : tensor<8xf32>
  }
}
// -----
func.func @main(%arg0: tensor<i1>) -> tensor<i1> {
  return %arg0 : tensor<i1>
}
)");
  ASSERT_EQ(mods.size(), 2u);
  EXPECT_EQ(mods[0].other_ops.size(), 1u);
  EXPECT_EQ(mods[0].other_ops[0].name, "sdy.mesh");
  const auto& ops = mods[0].FindFunction("main")->body.blocks[0].ops;
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].name, "sdy.sharding_constraint");
  EXPECT_EQ(ops[1].name, "mpmd.named_computation");
  EXPECT_EQ(ops[1].regions.size(), 1u);
  EXPECT_EQ(ops[2].operands.at(0).name, "1");
  EXPECT_EQ(mods[1].functions.at(0).args.at(0).type.element, ElementType::kPred);
}

TEST(Parser, SignatureAttributesMultiLineAndGenericFunc) {
  auto mods = MustParse(R"(module {
  func.func public @main(%arg0: tensor<8x2xi32> {mhlo.sharding = "{replicated}",
        mhlo.memory_kind = "pinned_host"} loc("x"), %arg1: tensor<f32>)
      -> (tensor<8x2xi32> {jax.result_info = "result", mhlo.memory_kind = "device"}, tensor<f32>) {
    return %arg0, %arg1 : tensor<8x2xi32>, tensor<f32>
  }
}
// -----
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main",
     arg_attrs = [{mhlo.memory_kind = "unpinned_host"}], res_attrs = [{mhlo.memory_kind = "pinned_host"}]}> ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "stablehlo.abs"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%0) : (tensor<4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
)");
  ASSERT_EQ(mods.size(), 2u);
  const Function& f = mods[0].functions.at(0);
  EXPECT_EQ(Find(f.args[0].attrs, "mhlo.memory_kind")->str, "pinned_host");
  EXPECT_EQ(Find(f.result_attrs[0], "jax.result_info")->str, "result");
  EXPECT_TRUE(f.result_attrs[1].empty());
  // A generic module is a module like any other, and its generic func.func a function (issue 12 item 4).
  EXPECT_TRUE(mods[1].other_ops.empty());
  const Function* g = mods[1].FindFunction("main");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->args.at(0).name, "arg0");
  EXPECT_EQ(Find(g->args[0].attrs, "mhlo.memory_kind")->str, "unpinned_host");
  EXPECT_EQ(Find(g->result_attrs.at(0), "mhlo.memory_kind")->str, "pinned_host");
  EXPECT_EQ(g->body.blocks.at(0).ops.size(), 2u);
}

// Issue 12 item 4: the whole module in MLIR's generic form, with properties <{...}> or an attribute
// dictionary {...}, named or not, nested, and mixed with a pretty module.
TEST(Parser, GenericModules) {
  auto mods = MustParse(R"("builtin.module"() <{sym_name = "jit_f"}> ({
  "func.func"() <{function_type = (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, sym_name = "main",
      arg_attrs = [{mhlo.memory_kind = "pinned_host"}, {}]}> ({
  ^bb0(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>):
    %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%0) : (tensor<4xf32>) -> ()
  }) : () -> ()
  "func.func"() ({
  ^bb0(%x: tensor<i1>):
    "func.return"(%x) : (tensor<i1>) -> ()
  }) {function_type = (tensor<i1>) -> tensor<i1>, sym_name = "helper", sym_visibility = "private"} : () -> ()
  "builtin.module"() ({
    "func.func"() <{function_type = () -> (), sym_name = "inner"}> ({
      "func.return"() : () -> ()
    }) : () -> ()
  }) : () -> ()
  "sdy.mesh"() <{mesh = #sdy.mesh<["a"=2]>, sym_name = "mesh"}> : () -> ()
}) : () -> ()
// -----
"builtin.module"() ({
}) : () -> ()
// -----
module @pretty {
  "func.func"() <{function_type = () -> (), sym_name = "g"}> ({
    "func.return"() : () -> ()
  }) : () -> ()
}
)");
  ASSERT_EQ(mods.size(), 3u);
  const Module& m = mods[0];
  EXPECT_EQ(m.name, "jit_f");
  ASSERT_EQ(m.functions.size(), 3u);
  const Function* f = m.FindFunction("main");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->args.size(), 2u);
  EXPECT_EQ(Find(f->args[0].attrs, "mhlo.memory_kind")->str, "pinned_host");
  EXPECT_EQ(f->result_types.at(0).dims, std::vector<int64_t>({4}));
  EXPECT_EQ(m.FindFunction("helper")->visibility, "private");
  EXPECT_NE(m.FindFunction("inner"), nullptr);
  ASSERT_EQ(m.other_ops.size(), 1u);
  EXPECT_EQ(m.other_ops[0].name, "sdy.mesh");
  EXPECT_TRUE(mods[1].functions.empty());
  EXPECT_NE(mods[2].FindFunction("g"), nullptr);
}

// Issue 12 item 2: type and attribute aliases, defined at the top of the file, used later.
TEST(Parser, TypeAndAttributeAliases) {
  auto mods = MustParse(R"(!t4 = tensor<4xf32>
!mesh_tensor = !mpmd.mesh_tensor<"m1", tensor<8xf32>>
#kind = {mhlo.memory_kind = "pinned_host"}
#map = affine_map<(d0, d1) -> (d1, d0)>
#sharding = #sdy.sharding<@mesh, [{"a"}]>
#fa = {_xla_buffer_placement = "device"}
#loc3 = loc("x.py":3:1)
module {
  func.func @main(%a: !t4 {mhlo.sharding = #sharding}, %b: !mesh_tensor loc(#loc3)) -> !t4 {
    %0 = stablehlo.custom_call @annotate_device_placement(%a) {mhlo.frontend_attributes = #fa} : (!t4) -> !t4
    %1 = "foo.transpose"(%0) {map = #map, undefined = #nothing} : (!t4) -> !t4
    return %1 : !t4
  }
}
#loc4 = loc("x.py":4:1)
)");
  const Function* f = mods.at(0).FindFunction("main");
  ASSERT_NE(f, nullptr);
  const Type& a = f->args.at(0).type;
  EXPECT_EQ(a.kind, Type::Kind::kTensor);
  EXPECT_EQ(a.element, ElementType::kF32);
  EXPECT_EQ(a.dims, std::vector<int64_t>({4}));
  EXPECT_EQ(f->args[1].type.kind, Type::Kind::kOther);
  EXPECT_EQ(f->args[1].type.text, "!mpmd.mesh_tensor<\"m1\", tensor<8xf32>>");
  EXPECT_EQ(f->result_types.at(0).dims, std::vector<int64_t>({4}));
  EXPECT_EQ(Find(f->args[0].attrs, "mhlo.sharding")->text, "#sdy.sharding<@mesh, [{\"a\"}]>");
  const auto& ops = f->body.blocks.at(0).ops;
  const Attribute* fa = Find(ops.at(0).attributes, "mhlo.frontend_attributes");
  ASSERT_NE(fa, nullptr);
  EXPECT_EQ(fa->kind, Attribute::Kind::kDict);
  EXPECT_EQ(fa->Get("_xla_buffer_placement")->str, "device");
  EXPECT_EQ(ops[0].result_types.at(0).element, ElementType::kF32);
  EXPECT_EQ(Find(ops.at(1).attributes, "map")->text, "affine_map<(d0, d1) -> (d1, d0)>");
  EXPECT_EQ(Find(ops.at(1).attributes, "undefined")->str, "#nothing");
}

// Issue 12 item 1: Shardy ops in their custom form, with their regions kept.
TEST(Parser, ShardyOps) {
  auto mods = MustParse(
      R"(module @jit_f attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\"a\"=2]>}"}} {
  sdy.mesh @mesh = <["a"=2, "b"=4]>
  sdy.mesh @empty_mesh = <[]>
  func.func public @main(%arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>},
      %arg1: tensor<8x2xi32>) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {}]> : tensor<4x4xf32>
    %1 = sdy.reshard %0 <@mesh, [{}, {"b"}]> : tensor<4x4xf32>
    %2 = sdy.manual_computation(%1) in_shardings=[<@mesh, [{"a"}, {}]>] out_shardings=[<@mesh, [{"a"},
        {}]>] manual_axes={"a"} (%arg2: tensor<2x4xf32> loc("x.py":1:1)) {
      %5 = stablehlo.add %arg2, %arg2 : tensor<2x4xf32>
      sdy.return %5 : tensor<2x4xf32>
    } : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = sdy.named_computation<"stage">(%arg1) in_shardings=[<@mesh, [{}, {}]>] (%arg3: tensor<8x2xi32>) {
      sdy.return %arg3 : tensor<8x2xi32>
    } : (tensor<8x2xi32>) -> tensor<8x2xi32>
    %4 = sdy.propagation_barrier %2 allowed_direction=BACKWARD : tensor<4x4xf32>
    %6 = stablehlo.negate %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {?}]>]>} : tensor<4x4xf32>
    return %6 : tensor<4x4xf32>
  }
}
)");
  const Module& m = mods.at(0);
  ASSERT_EQ(m.other_ops.size(), 2u);
  EXPECT_EQ(m.other_ops[0].name, "sdy.mesh");
  EXPECT_EQ(m.other_ops[0].callee, "mesh");
  const auto& ops = m.FindFunction("main")->body.blocks.at(0).ops;
  ASSERT_EQ(ops.size(), 7u);
  EXPECT_EQ(ops[0].name, "sdy.sharding_constraint");
  EXPECT_EQ(ops[0].operands.at(0).name, "arg0");
  EXPECT_EQ(ops[1].name, "sdy.reshard");
  const Operation& mc = ops[2];
  EXPECT_EQ(mc.name, "sdy.manual_computation");
  ASSERT_EQ(mc.operands.size(), 1u);
  EXPECT_EQ(mc.operands[0].name, "1");
  ASSERT_EQ(mc.regions.size(), 1u);
  const Block& body = mc.regions[0].blocks.at(0);
  ASSERT_EQ(body.args.size(), 1u);
  EXPECT_EQ(body.args[0].name, "arg2");
  EXPECT_EQ(body.args[0].type.dims, std::vector<int64_t>({2, 4}));
  ASSERT_EQ(body.ops.size(), 2u);
  EXPECT_EQ(body.ops[1].name, "sdy.return");
  EXPECT_EQ(Find(mc.attributes, "in_shardings")->array.size(), 1u);
  EXPECT_EQ(Find(mc.attributes, "manual_axes")->dict.at(0).first, "a");
  EXPECT_EQ(mc.result_types.at(0).dims, std::vector<int64_t>({4, 4}));
  EXPECT_EQ(ops[3].name, "sdy.named_computation");
  EXPECT_EQ(ops[3].operands.at(0).name, "arg1");
  EXPECT_EQ(ops[3].regions.at(0).blocks.at(0).args.at(0).name, "arg3");
  EXPECT_EQ(ops[4].name, "sdy.propagation_barrier");
  EXPECT_EQ(Find(ops[4].attributes, "allowed_direction")->str, "BACKWARD");
}

// The pretty while form names its loop values `%iter = %init`: both regions get them as entry arguments,
// typed by the signature (the generic form declares them itself). Custom syntax in `<...>` after an op
// name (named_computation's <"name">) is kept as an unnamed opaque attribute.
TEST(Parser, PrettyWhileRegionsHaveTheLoopValuesAsArguments) {
  auto mods = MustParse(R"(func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i64>
  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<4xf32>
   cond {
    %c_1 = stablehlo.constant dense<3> : tensor<i64>
    %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    stablehlo.return %iterArg, %iterArg_0 : tensor<i64>, tensor<4xf32>
  }
  %2 = sdy.named_computation<"stage">(%0#1) (%a: tensor<4xf32>) {
    sdy.return %a : tensor<4xf32>
  } : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
)");
  const auto& ops = mods.at(0).FindFunction("main")->body.blocks.at(0).ops;
  const Operation& w = ops.at(1);
  ASSERT_EQ(w.operands.size(), 2u);
  EXPECT_EQ(w.operands[0].name, "c");
  ASSERT_EQ(w.regions.size(), 2u);
  for (const Region& r : w.regions) {
    const Block& b = r.blocks.at(0);
    ASSERT_EQ(b.args.size(), 2u);
    EXPECT_EQ(b.args[0].name, "iterArg");
    EXPECT_EQ(b.args[0].type.kind, Type::Kind::kTensor);
    EXPECT_TRUE(b.args[0].type.dims.empty());
    EXPECT_EQ(b.args[1].name, "iterArg_0");
    EXPECT_EQ(b.args[1].type.dims, std::vector<int64_t>({4}));
  }
  const Operation& named = ops.at(2);
  ASSERT_EQ(named.attributes.size(), 1u);
  EXPECT_EQ(named.attributes[0].first, "");
  EXPECT_EQ(named.attributes[0].second.kind, Attribute::Kind::kOpaque);
  EXPECT_EQ(named.attributes[0].second.str, "<\"stage\">");
  EXPECT_EQ(named.regions.at(0).blocks.at(0).args.at(0).name, "a");
}

// Issue 12 item 3: an op of an unknown dialect whose custom form the generic reader cannot read is skipped
// as one balanced unit (operands, attributes, regions, trailing type), with a warning; one it can read is
// kept; a known dialect's unreadable op still fails, and so does the nesting limit.
TEST(Parser, UnknownDialectOpsInCustomFormAreSkippedWithAWarning) {
  auto mods = MustParse(R"(module @m {
  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
    %0 = acme.pack %arg0, %arg1 into {1, 2} : tensor<4xf32>
    %1:2 = acme.scan(%0) lanes {0: "x", 1: "y"} (%a: tensor<4xf32>) {
      %9 = stablehlo.add %a, %a : tensor<4xf32>
      acme.yield %9 {3} : tensor<4xf32>
    } : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %2 = acme.named<"stage">(%1#1) (%b: tensor<4xf32>) {
      acme.return %b : tensor<4xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    %3 = stablehlo.add %1#0, %2 : tensor<4xf32>
    return %3 : tensor<4xf32>
  }
}
// -----
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = acme.pack %arg0 into {7} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)");
  ASSERT_EQ(mods.size(), 2u);
  const Module& m = mods[0];
  const auto& ops = m.FindFunction("main")->body.blocks.at(0).ops;
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[0].name, "acme.pack");
  EXPECT_TRUE(ops[0].skipped);
  EXPECT_EQ(ops[0].result_name, "0");
  ASSERT_EQ(ops[0].operands.size(), 2u);
  EXPECT_EQ(ops[0].operands[1].name, "arg1");
  EXPECT_TRUE(ops[0].regions.empty());
  EXPECT_TRUE(ops[1].skipped);  // its region's content cannot be read: {0: "x", ...} and {3}
  EXPECT_EQ(ops[1].num_results, 2u);
  ASSERT_EQ(ops[1].operands.size(), 1u);  // %0; not %a (declared), not the region's values
  EXPECT_EQ(ops[1].operands[0].name, "0");
  EXPECT_FALSE(ops[2].skipped);  // read generically: kept with its region
  EXPECT_EQ(ops[2].regions.size(), 1u);
  EXPECT_EQ(ops[3].name, "stablehlo.add");
  EXPECT_EQ(ops[3].operands.at(0).index, 0u);
  EXPECT_EQ(ops[4].name, "func.return");
  ASSERT_EQ(m.warnings.size(), 2u);
  EXPECT_EQ(m.warnings[0].loc.line, 3u);
  EXPECT_EQ(m.warnings[0].loc.column, 5u);
  EXPECT_NE(m.warnings[0].message.find("skipped 'acme.pack'"), std::string::npos) << m.warnings[0].message;
  EXPECT_NE(m.warnings[0].message.find("3:"), std::string::npos) << m.warnings[0].message;  // why, where
  EXPECT_EQ(m.warnings[1].loc.line, 4u);
  ASSERT_EQ(mods[1].warnings.size(), 1u);  // each module has its own
  EXPECT_EQ(mods[1].warnings[0].loc.line, 17u);

  // A known dialect's op that cannot be read is an error, and so is an unbalanced unknown op.
  EXPECT_NE(ParseError("func.func @f(%a: tensor<4xf32>) {\n  %0 = stablehlo.add %a into {1} : tensor<4xf32>\n}\n")
                .find("bad.mlir:2:"),
            std::string::npos);
  EXPECT_NE(ParseError("func.func @f(%a: tensor<4xf32>) {\n  %0 = acme.pack %a {1 : tensor<4xf32>\n").find("bad.mlir:"),
            std::string::npos);
  // The nesting limit is not skipped over.
  std::string deep = "func.func @f(%a: tensor<4xf32>) {\n  %0 = acme.pack %a ";
  for (int i = 0; i < 300; ++i) deep += "[";
  deep += "{1}";
  for (int i = 0; i < 300; ++i) deep += "]";
  deep += " : tensor<4xf32>\n}\n";
  EXPECT_NE(ParseError(deep).find("nesting deeper than 256 levels"), std::string::npos);
}

// Types are interned once per parse (the IR's memory per byte of text): equal tensor types share their
// dims, equal function-type signatures their element arrays, and pretty-form signatures with one type for
// every operand and result share one array per type and count. Equal types stay equal; different ones
// stay apart.
TEST(Parser, TypesAreInternedOncePerParse) {
  auto mods = MustParse(R"(func.func @main(%a: tensor<8x128xf32>, %b: tensor<8x128xf32>, %i: tensor<8x128xi32>) -> () {
  %0 = stablehlo.add %a, %b : tensor<8x128xf32>
  %1 = stablehlo.multiply %0, %b : tensor<8x128xf32>
  %2 = stablehlo.add %i, %i : tensor<8x128xi32>
  %3 = stablehlo.negate %a : tensor<8x128xf32>
  %4 = "stablehlo.add"(%0, %1) : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>
  %5 = "stablehlo.add"(%0, %1) : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>
  %6 = "stablehlo.add"(%2, %2) : (tensor<8x128xi32>, tensor<8x128xi32>) -> tensor<8x128xi32>
  return
}
// -----
func.func @other(%a: tensor<8x128xf32>) -> () {
  %0 = stablehlo.add %a, %a : tensor<8x128xf32>
  return
}
)");
  const Function& f = *mods.at(0).FindFunction("main");
  const auto& ops = f.body.blocks.at(0).ops;
  EXPECT_EQ(f.args[0].type.dims.data(), f.args[1].type.dims.data());
  EXPECT_NE(f.args[0].type.dims.data(), f.args[2].type.dims.data());    // same text but another element type
  EXPECT_EQ(ops[0].operand_types.data(), ops[1].operand_types.data());  // 2 operands of tensor<8x128xf32>
  EXPECT_EQ(ops[0].operand_types.size(), 2u);
  EXPECT_NE(ops[0].operand_types.data(), ops[2].operand_types.data());  // i32
  EXPECT_NE(ops[0].operand_types.data(), ops[3].operand_types.data());  // one operand
  EXPECT_EQ(ops[3].operand_types.size(), 1u);
  EXPECT_EQ(ops[2].operand_types[1].element, ElementType::kS32);
  EXPECT_EQ(ops[4].operand_types.data(), ops[5].operand_types.data());  // the same function type
  EXPECT_NE(ops[4].operand_types.data(), ops[6].operand_types.data());
  EXPECT_EQ(ops[6].result_types.at(0).element, ElementType::kS32);
  EXPECT_EQ(ops[5].result_types.at(0).dims, std::vector<int64_t>({8, 128}));
  // The modules of one parse share one arena, and so their interned types.
  const Operation& other = mods.at(1).FindFunction("other")->body.blocks.at(0).ops.at(0);
  EXPECT_EQ(other.operand_types.data(), ops[0].operand_types.data());
}

TEST(Parser, GenericFuncAtTopLevelBecomesAFunction) {
  auto mods = MustParse(R"(
"func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main",
   arg_attrs = [{mhlo.memory_kind = "unpinned_host"}], res_attrs = [{mhlo.memory_kind = "pinned_host"}]}> ({
^bb0(%x: tensor<4xf32>):
  "func.return"(%x) : (tensor<4xf32>) -> ()
}) : () -> ()
)");
  const Function* f = mods.at(0).FindFunction("main");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->args.at(0).name, "x");
  EXPECT_EQ(Find(f->args[0].attrs, "mhlo.memory_kind")->str, "unpinned_host");
  EXPECT_EQ(Find(f->result_attrs.at(0), "mhlo.memory_kind")->str, "pinned_host");
}

TEST(Parser, CustomCallTargetsAndBackendConfigForms) {
  auto mods = MustParse(R"(
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.custom_call @"foo-not-id"(%arg0) {backend_config = "{\22key\22: 1, \22raw\22: \41\0A}"}
      : (tensor<2xf32>) -> tensor<2xf32>
  %1 = stablehlo.custom_call @a.b$c(%0) {backend_config = {kind = "pinned_host", level = 3 : i32}}
      : (tensor<2xf32>) -> tensor<2xf32>
  %2 = stablehlo.custom_call @tgt(%1) {mhlo.backend_config = {x = 1 : i64}, api_version = 4 : i32}
      : (tensor<2xf32>) -> tensor<2xf32>
  %3 = stablehlo.custom_call @none(%2) : (tensor<2xf32>) -> tensor<2xf32>
  %4:3 = stablehlo.custom_call @multi(%3) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<i32>)
  %5 = stablehlo.add %4#0, %4#1 : tensor<2xf32>
  return %5 : tensor<2xf32>
}
)");
  const auto& ops = mods.at(0).functions.at(0).body.blocks.at(0).ops;
  EXPECT_EQ(ops[0].callee, "foo-not-id");
  EXPECT_EQ(Find(ops[0].attributes, "backend_config")->str, "{\"key\": 1, \"raw\": A\n}");
  EXPECT_EQ(ops[1].callee, "a.b$c");
  EXPECT_EQ(Find(ops[1].attributes, "backend_config")->Get("kind")->str, "pinned_host");
  EXPECT_EQ(Find(ops[2].attributes, "mhlo.backend_config")->Get("x")->i, 1);
  EXPECT_EQ(ops[3].callee, "none");
  EXPECT_EQ(ops[4].num_results, 3u);
  EXPECT_EQ(ops[4].result_types.size(), 3u);
  ASSERT_EQ(ops[5].operands.size(), 2u);
  EXPECT_EQ(ops[5].operands[0].name, "4");
  EXPECT_EQ(ops[5].operands[0].index, 0u);
  EXPECT_EQ(ops[5].operands[1].index, 1u);
}

TEST(Parser, ComparePrettyFormAndRegions) {
  auto mods = MustParse(R"(
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xi1> {
  %0 = stablehlo.compare  EQ, %a, %b,  FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  %1 = "stablehlo.reduce"(%a, %b) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  %2 = stablehlo.reduce(%a init: %b) across dimensions = [0] : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
   reducer(%p: tensor<f32>, %q: tensor<f32>)  {
    %m = stablehlo.maximum %p, %q : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }
  return %0 : tensor<2xi1>
}
)");
  const auto& ops = mods.at(0).functions.at(0).body.blocks.at(0).ops;
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(Find(ops[0].attributes, "comparison_direction")->str, "EQ");
  EXPECT_EQ(Find(ops[0].attributes, "compare_type")->str, "FLOAT");
  EXPECT_EQ(ops[0].operands.size(), 2u);
  ASSERT_EQ(ops[1].regions.size(), 1u);
  EXPECT_EQ(ops[1].regions[0].blocks[0].args.size(), 2u);
  EXPECT_EQ(ops[1].regions[0].blocks[0].ops.size(), 2u);
  EXPECT_EQ(Find(ops[1].attributes, "dimensions")->array.at(0).i, 0);
  ASSERT_EQ(ops[2].regions.size(), 1u);
  EXPECT_EQ(ops[2].regions[0].blocks[0].args.at(1).name, "q");
  EXPECT_EQ(ops[2].operands.size(), 2u);
}

TEST(Parser, PrettySignatureWithAnUnparenthesizedInput) {
  // chlo.top_k prints `: tensor<5x3xf32> -> (tensor<5x2xf32>, tensor<5x2xi32>)`.
  auto mods = MustParse(R"(
func.func @main(%a: tensor<5x3xf32>) -> tensor<5x2xi32> {
  %v, %i = chlo.top_k(%a, k = 2) : tensor<5x3xf32> -> (tensor<5x2xf32>, tensor<5x2xi32>)
  %n = chlo.erf %v : tensor<5x2xf32> -> tensor<5x2xf32>
  return %i : tensor<5x2xi32>
}
)");
  const auto& ops = mods.at(0).functions.at(0).body.blocks.at(0).ops;
  ASSERT_EQ(ops.at(0).operand_types.size(), 1u);
  EXPECT_EQ(TypeToString(ops[0].operand_types[0]), "tensor<5x3xf32>");
  ASSERT_EQ(ops[0].result_types.size(), 2u);
  EXPECT_EQ(TypeToString(ops[0].result_types[0]), "tensor<5x2xf32>");
  EXPECT_EQ(TypeToString(ops[0].result_types[1]), "tensor<5x2xi32>");
  ASSERT_EQ(ops.at(1).result_types.size(), 1u);
  EXPECT_EQ(TypeToString(ops[1].result_types[0]), "tensor<5x2xf32>");
}

TEST(Parser, DenseArrayAttributesOfEveryElementKind) {
  auto mods = MustParse(R"(
func.func @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "stablehlo.transpose"(%a) {permutation = array<i64: 1, -2 ,3>, flags = array<i1: true, false>,
      scales = array<f32: 1.5, 2.5e1>, none = array<i64>, blank = array<i64: >} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
)");
  const Operation& op = mods.at(0).functions.at(0).body.blocks.at(0).ops.at(0);
  const Attribute* perm = Find(op.attributes, "permutation");
  ASSERT_NE(perm, nullptr);
  ASSERT_EQ(perm->array.size(), 3u);
  EXPECT_EQ(perm->array[0].i, 1);
  EXPECT_EQ(perm->array[1].i, -2);
  EXPECT_EQ(perm->array[2].i, 3);
  const Attribute* flags = Find(op.attributes, "flags");
  ASSERT_EQ(flags->array.size(), 2u);
  EXPECT_EQ(flags->array[0].kind, Attribute::Kind::kBool);
  EXPECT_TRUE(flags->array[0].b);
  EXPECT_FALSE(flags->array[1].b);
  const Attribute* scales = Find(op.attributes, "scales");
  ASSERT_EQ(scales->array.size(), 2u);
  EXPECT_EQ(scales->array[1].kind, Attribute::Kind::kFloat);
  EXPECT_DOUBLE_EQ(scales->array[1].f, 25.0);
  EXPECT_TRUE(Find(op.attributes, "none")->array.empty());
  EXPECT_TRUE(Find(op.attributes, "blank")->array.empty()) << "whitespace is not an element";
}

template <typename T>
std::vector<T> Values(const Attribute& a) {
  std::vector<T> out(a.dense.size() / sizeof(T));
  std::memcpy(out.data(), a.dense.data(), a.dense.size());
  return out;
}

const Attribute& ConstantValue(const std::string& literal) {
  static std::vector<Module> keep;
  keep = MustParse("func.func @main() -> () {\n  %0 = stablehlo.constant " + literal + "\n  return\n}\n");
  return *Find(keep.at(0).functions.at(0).body.blocks.at(0).ops.at(0).attributes, "value");
}

TEST(Dense, EveryLiteralForm) {
  // Splat.
  {
    const Attribute& a = ConstantValue("dense<7> : tensor<4xi32>");
    EXPECT_TRUE(a.splat);
    EXPECT_EQ(Values<int32_t>(a), std::vector<int32_t>({7}));
  }
  // Nested lists.
  EXPECT_EQ(Values<int64_t>(ConstantValue("dense<[[1, -2], [3, 4]]> : tensor<2x2xi64>")),
            std::vector<int64_t>({1, -2, 3, 4}));
  // Whole-tensor hex, little-endian; i1 one byte per element.
  EXPECT_EQ(Values<int32_t>(ConstantValue("dense<\"0x0100000002000000\"> : tensor<2xi32>")),
            std::vector<int32_t>({1, 2}));
  EXPECT_EQ(ConstantValue("dense<\"0x0100\"> : tensor<2xi1>").dense, std::vector<uint8_t>({1, 0}));
  EXPECT_EQ(ConstantValue("dense<[true, false, true]> : tensor<3xi1>").dense, std::vector<uint8_t>({1, 0, 1}));
  // Per-element hex for NaN/Inf.
  {
    auto v = Values<float>(ConstantValue("dense<[0x7FC00000, 0x7F800000, 1.0]> : tensor<3xf32>"));
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_TRUE(std::isinf(v[1]));
    EXPECT_EQ(v[2], 1.0f);
    auto b = Values<uint16_t>(ConstantValue("dense<[0x7FC0, 1.000000e+00]> : tensor<2xbf16>"));
    EXPECT_EQ(b, std::vector<uint16_t>({0x7FC0, 0x3F80}));
  }
  // bf16 printed with ~6 digits rounds to nearest even: 1.00390625 is halfway between 0x3F80 and 0x3F81.
  EXPECT_EQ(Values<uint16_t>(ConstantValue("dense<[1.00390625, 1.01171875, -2.5]> : tensor<3xbf16>")),
            std::vector<uint16_t>({0x3F80, 0x3F82, 0xC020}));
  EXPECT_EQ(Values<uint16_t>(ConstantValue("dense<[1.0, -2.0, 6.5504e+04]> : tensor<3xf16>")),
            std::vector<uint16_t>({0x3C00, 0xC000, 0x7BFF}));
  // Complex (re, im).
  EXPECT_EQ(Values<float>(ConstantValue("dense<[(1.0, 2.0), (3.0, -4.0)]> : tensor<2xcomplex<f32>>")),
            std::vector<float>({1, 2, 3, -4}));
  // Empty.
  EXPECT_TRUE(ConstantValue("dense<> : tensor<0xf32>").dense.empty());
  // Unsigned and scalars.
  EXPECT_EQ(Values<uint8_t>(ConstantValue("dense<255> : tensor<ui8>")), std::vector<uint8_t>({255}));
}

// Decimal numbers read by std::from_chars (plain decimals) and by the C library (the rest: '+', hex floats,
// inf, nan, out of range) give what strtod / strtoll / strtoull give.
TEST(Dense, DecimalNumbersReadAsTheCLibraryReadsThem) {
  const char* doubles[] = {"0",
                           "-0",
                           "1.5",
                           "-4.4153416464793395E-18",
                           "4.9406564584124654E-324",
                           "1e-400",
                           "1e400",
                           "-1e400",
                           "+2.5",
                           "1.",
                           "123456789012345678901234567890",
                           "0.1e-5",
                           "-0x1.8p1"};
  for (const char* d : doubles) {
    const double want = std::strtod(d, nullptr);
    const std::vector<double> got = Values<double>(ConstantValue(std::string("dense<") + d + "> : tensor<f64>"));
    ASSERT_EQ(got.size(), 1u) << d;
    EXPECT_EQ(std::memcmp(&got[0], &want, 8), 0) << d << ": " << got[0] << " vs " << want;
    const float wantf = static_cast<float>(want);
    const std::vector<float> gotf = Values<float>(ConstantValue(std::string("dense<") + d + "> : tensor<f32>"));
    EXPECT_EQ(std::memcmp(&gotf[0], &wantf, 4), 0) << d;
  }
  EXPECT_EQ(Values<int64_t>(ConstantValue("dense<[-9223372036854775808, 9223372036854775807, -0, 7]> : tensor<4xi64>")),
            std::vector<int64_t>({INT64_MIN, INT64_MAX, 0, 7}));
  EXPECT_EQ(Values<uint64_t>(ConstantValue("dense<[18446744073709551615, 0]> : tensor<2xui64>")),
            std::vector<uint64_t>({UINT64_MAX, 0}));
  EXPECT_EQ(Values<int32_t>(ConstantValue("dense<[+5, true, 0x10]> : tensor<3xi32>")),
            std::vector<int32_t>({5, 1, 16}));
  EXPECT_EQ(Values<uint16_t>(ConstantValue("dense<[1.5, -2.0]> : tensor<2xbf16>")),
            std::vector<uint16_t>({0x3FC0, 0xC000}));
  for (const char* bad :
       {"dense<[1, 18446744073709551616]> : tensor<2xui64>", "dense<[-9223372036854775809, 1]> : tensor<2xi64>",
        "dense<[1.5, 2]> : tensor<2xi32>", "dense<[1e, 2.0]> : tensor<2xf32>"}) {
    const std::string m =
        ParseError(std::string("func.func @main() -> () {\n  %0 = stablehlo.constant ") + bad + "\n}\n");
    EXPECT_NE(m.find("is not a valid"), std::string::npos) << bad << ": " << m;
  }
}

// Whole-tensor hex literals: either case of digit, every byte value; anything else is refused.
TEST(Dense, HexLiteralsOfEveryByte) {
  std::string hex = "0x";
  std::vector<uint8_t> want;
  for (int b = 0; b < 256; ++b) {
    const char* digits = b % 2 ? "0123456789abcdef" : "0123456789ABCDEF";
    hex += digits[b >> 4];
    hex += digits[b & 15];
    want.push_back(static_cast<uint8_t>(b));
  }
  EXPECT_EQ(ConstantValue("dense<\"" + hex + "\"> : tensor<256xui8>").dense, want);
  for (const char* bad : {"0x0g", "0xg0", "0x:0", "0x0/", "0x@0", "0x0G", "0x`0"}) {
    const std::string m = ParseError(std::string("func.func @main() -> () {\n  %0 = stablehlo.constant dense<\"") +
                                     bad + "\"> : tensor<ui8>\n}\n");
    EXPECT_NE(m.find("bad hex digit"), std::string::npos) << bad << ": " << m;
  }
}

// A '>' or an escaped quote inside a string of an angle-bracketed attribute does not end it.
TEST(Parser, AngleBracketsSkipStringsWithEscapes) {
  const std::vector<Module> m = MustParse(
      "func.func @main() -> () {\n"
      "  stablehlo.custom_call @t() {k = #x.y<\"a\\\"b>c\\\\\", \"d>e\">, n = 3 : i32} : () -> ()\n"
      "  return\n}\n");
  const auto& attrs = m.at(0).functions.at(0).body.blocks.at(0).ops.at(0).attributes;
  const Attribute* k = Find(attrs, "k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->text, "#x.y<\"a\\\"b>c\\\\\", \"d>e\">");
  const Attribute* n = Find(attrs, "n");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->i, 3);
}

// Decimal literals of the f8/f6/f4 types round once from the double, as MLIR's parser (APFloat) does;
// f16/bf16 too (never through float).
TEST(Dense, SmallFloatDecimals) {
  EXPECT_EQ(ConstantValue("dense<[1.0, -4.480000e+02, 4.640000e+02, 5.0e+02, 0.001953125]> : tensor<5xf8E4M3FN>").dense,
            std::vector<uint8_t>({0x38, 0xFE, 0x7E, 0x7F, 0x01}));
  EXPECT_EQ(ConstantValue("dense<[-0.0, 2.400000e+02]> : tensor<2xf8E4M3FNUZ>").dense,
            std::vector<uint8_t>({0x00, 0x7F}));
  EXPECT_EQ(ConstantValue("dense<[5.734400e+04, 1.0e+05, -inf]> : tensor<3xf8E5M2>").dense,
            std::vector<uint8_t>({0x7B, 0x7C, 0xFC}));
  EXPECT_EQ(ConstantValue("dense<[1.0, 1.5, 0.25]> : tensor<3xf8E8M0FNU>").dense,
            std::vector<uint8_t>({0x7F, 0x80, 0x7D}));
  EXPECT_EQ(ConstantValue("dense<[6.0, 7.0, -0.5]> : tensor<3xf4E2M1FN>").dense,
            std::vector<uint8_t>({0x07, 0x07, 0x09}));
  EXPECT_EQ(ConstantValue("dense<[7.5, 2.8e+01]> : tensor<2xf6E2M3FN>").dense, std::vector<uint8_t>({0x1F, 0x1F}));
  EXPECT_EQ(ConstantValue("dense<2.8e+01> : tensor<4xf6E3M2FN>").dense, std::vector<uint8_t>({0x1F}));
  EXPECT_EQ(ConstantValue("dense<[1.0, 1.5e+01]> : tensor<2xf8E3M4>").dense, std::vector<uint8_t>({0x30, 0x6E}));
  EXPECT_EQ(ConstantValue("dense<[1.0, 3.0e+01]> : tensor<2xf8E4M3B11FNUZ>").dense, std::vector<uint8_t>({0x58, 0x7F}));
  EXPECT_EQ(ConstantValue("dense<[1.0, 2.4e+02]> : tensor<2xf8E4M3>").dense, std::vector<uint8_t>({0x38, 0x77}));
  EXPECT_EQ(ConstantValue("dense<[1.0, -0.0]> : tensor<2xf8E5M2FNUZ>").dense, std::vector<uint8_t>({0x40, 0x00}));
  // 1 + 2^-8 + 2^-30: above the bf16 tie; through float it would be the tie and round down to 0x3F80.
  EXPECT_EQ(Values<uint16_t>(ConstantValue("dense<1.003906250931322574615478515625> : tensor<bf16>")),
            std::vector<uint16_t>({0x3F81}));
  const std::string m =
      ParseError("func.func @main() -> () {\n  %0 = stablehlo.constant dense<[1.0, 1.0q]> : tensor<2xf8E4M3FN>\n}\n");
  EXPECT_NE(m.find("not a valid f8E4M3FN value"), std::string::npos) << m;
}

TEST(Malformed, EveryErrorHasALocationAndNothingCrashes) {
  const std::string good = R"(func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.custom_call @t(%arg0) {backend_config = "x"} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
)";
  // Every truncation of a valid file either parses or fails with file:line:col.
  for (size_t n = 0; n < good.size(); n += 3) {
    std::vector<Module> mods;
    Status s = ParseModules(good.substr(0, n), "t.mlir", &mods);
    if (s) {
      EXPECT_EQ(s->message.rfind("t.mlir:", 0), 0u) << s->message;
    }
  }
  std::string m = ParseError("func.func @main() -> () {\n  %0 = stablehlo.add %a, %b : tensor<2xf32>\n");
  EXPECT_NE(m.find("bad.mlir:1:"), std::string::npos) << m;
  EXPECT_NE(m.find("not closed"), std::string::npos) << m;
  m = ParseError("module {\n  func.func @main(%a: tensor<2xf32>) -> () {\n    return\n  }\n}\n}\n");
  EXPECT_NE(m.find("bad.mlir:6:1"), std::string::npos) << m;
  m = ParseError(
      "func.func @main() -> () {\n  %0 = stablehlo.custom_call @t() {backend_config = \"\\q\"} : () -> ()\n}\n");
  EXPECT_NE(m.find("bad escape"), std::string::npos) << m;
  m = ParseError("func.func @main(%a: tensor<99999999999999999999999x2xf32>) -> () {\n}\n");
  EXPECT_NE(m.find("too large"), std::string::npos) << m;
  m = ParseError("func.func @main(%a: tensor<2xfoo>) -> () {\n}\n");
  EXPECT_NE(m.find("unknown tensor element type"), std::string::npos) << m;
  m = ParseError(std::string("\x01\x02\xff\xfe garbage", 12));
  EXPECT_NE(m.find("bad.mlir:1:1"), std::string::npos) << m;
  m = ParseError("func.func @main() -> () {\n  %0 = stablehlo.constant dense<[1, 2, 3]> : tensor<2xi32>\n}\n");
  EXPECT_NE(m.find("needs 2"), std::string::npos) << m;
  m = ParseError(std::string(2000, '(') + "\n");
  EXPECT_FALSE(m.empty());
  m = ParseError("func.func @main() -> () {\n  %0 = stablehlo.foo " + std::string(2000, '[') + "\n}\n");
  EXPECT_NE(m.find("nesting deeper"), std::string::npos) << m;
}

// Regression (issue 13 item 1): a nested module restarted the depth count, so 20,000 nested modules
// overflowed the stack instead of meeting the 256-level limit.
TEST(Malformed, NestedModulesMeetTheDepthLimit) {
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += "module {";
  std::string m = ParseError(deep);
  EXPECT_NE(m.find("nesting deeper than 256 levels"), std::string::npos) << m.substr(0, 200);
  EXPECT_EQ(m.rfind("bad.mlir:1:", 0), 0u) << m.substr(0, 200);
  // Modules inside generic modules, and module-level ops mixed in, count too.
  deep.clear();
  for (int i = 0; i < 300; ++i) deep += "module {\n  \"builtin.module\"() ({\n";
  m = ParseError(deep);
  EXPECT_NE(m.find("nesting deeper"), std::string::npos) << m.substr(0, 200);
  // A depth within the limit still parses, functions flattened into the outer module.
  std::string ok;
  for (int i = 0; i < 100; ++i) ok += "module {\n";
  ok += "func.func @main() -> () {\n  return\n}\n";
  for (int i = 0; i < 100; ++i) ok += "}\n";
  auto mods = MustParse(ok);
  ASSERT_EQ(mods.size(), 1u);
  EXPECT_NE(mods[0].FindFunction("main"), nullptr);
}

}  // namespace
}  // namespace neuronmem::stablehlo
