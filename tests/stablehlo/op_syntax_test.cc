// The custom (pretty) syntax of particular ops decoded into what the generic form states (op_syntax.cc):
// the IR an op gets is the same whichever form it was written in, so nothing after the parser reads text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse_util.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {
namespace {

using testing::MustParse;
using testing::ParseError;

std::vector<int64_t> Ints(const Attribute* a) {
  std::vector<int64_t> v;
  if (!a || a->kind != Attribute::Kind::kArray) return {-999};
  for (const Attribute& e : a->array) v.push_back(e.kind == Attribute::Kind::kInt ? e.i : -999);
  return v;
}

int64_t Int(const Attribute* a) { return a && a->kind == Attribute::Kind::kInt ? a->i : -999; }

// The ops of @main, parsed from `body` (its arguments: %x tensor<2x3xf32>, %t a tuple).
std::vector<Module> Main(const std::string& body) {
  return MustParse("func.func @main(%x: tensor<2x3xf32>, %t: tuple<tensor<2xf32>, tensor<i32>>) {\n" + body +
                   "\n  return\n}\n");
}
const Operation& Op(const std::vector<Module>& m, size_t i) {
  return m.at(0).functions.at(0).body.blocks.at(0).ops.at(i);
}

TEST(OpSyntax, DotGeneralDimsBecomeDotDimensionNumbers) {
  auto pretty = Main(
      "  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], "
      "precision = [DEFAULT, DEFAULT] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>");
  auto generic = Main(
      "  %0 = \"stablehlo.dot_general\"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = "
      "[0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : "
      "(tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>");
  for (const auto* m : {&pretty, &generic}) {
    const Attribute* d = Find(Op(*m, 0).attributes, "dot_dimension_numbers");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(Ints(d->Get("lhs_batching_dimensions")), std::vector<int64_t>({0}));
    EXPECT_EQ(Ints(d->Get("rhs_batching_dimensions")), std::vector<int64_t>({0}));
    EXPECT_EQ(Ints(d->Get("lhs_contracting_dimensions")), std::vector<int64_t>({2}));
    EXPECT_EQ(Ints(d->Get("rhs_contracting_dimensions")), std::vector<int64_t>({1}));
  }
  const Attribute* p = Find(Op(pretty, 0).attributes, "precision");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->array.size(), 2u);
  EXPECT_EQ(p->array[0].kind, Attribute::Kind::kEnum);
  EXPECT_EQ(p->array[0].str, "DEFAULT");
  EXPECT_NE(ParseError("func.func @f() {\n  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] y [0] : "
                       "(tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>\n}\n")
                .find("expected 'x'"),
            std::string::npos);
}

TEST(OpSyntax, ConvolutionLayoutAndWindowInEveryForm) {
  auto pretty = Main(
      "  %0 = stablehlo.convolution(%a, %b) dim_numbers = [b, 1, 0, f]x[0, 1, i, o]->[b, 0, 1, f], window = "
      "{stride = [2, 1], pad = [[1, 0], [0, 2]], lhs_dilate = [1, 1], rhs_dilate = [1, 2], reverse = [false, true]} "
      "{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>) "
      "-> tensor<1x2x2x1xf32>");
  auto generic = Main(
      "  %0 = \"stablehlo.convolution\"(%a, %b) {dimension_numbers = #stablehlo.conv<[b, 1, 0, f]x[0, 1, i, "
      "o]->[b, 0, 1, f]>, feature_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>) -> "
      "tensor<1x2x2x1xf32>\n"
      "  %1 = \"stablehlo.convolution\"(%a, %b) {dimension_numbers = #stablehlo.conv<raw input_batch_dimension = 0, "
      "input_feature_dimension = 3, input_spatial_dimensions = [2, 1], kernel_input_feature_dimension = 2, "
      "kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1], output_batch_dimension = 0, "
      "output_feature_dimension = 3, output_spatial_dimensions = [1, 2]>} : (tensor<1x4x4x1xf32>, "
      "tensor<3x3x1x1xf32>) -> tensor<1x2x2x1xf32>");
  for (const Operation* op : {&Op(pretty, 0), &Op(generic, 0), &Op(generic, 1)}) {
    const Attribute* d = Find(op->attributes, "dimension_numbers");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(Int(d->Get("input_batch_dimension")), 0);
    EXPECT_EQ(Int(d->Get("input_feature_dimension")), 3);
    EXPECT_EQ(Ints(d->Get("input_spatial_dimensions")), std::vector<int64_t>({2, 1}));
    EXPECT_EQ(Int(d->Get("kernel_input_feature_dimension")), 2);
    EXPECT_EQ(Int(d->Get("kernel_output_feature_dimension")), 3);
    EXPECT_EQ(Ints(d->Get("kernel_spatial_dimensions")), std::vector<int64_t>({0, 1}));
    EXPECT_EQ(Int(d->Get("output_batch_dimension")), 0);
    EXPECT_EQ(Int(d->Get("output_feature_dimension")), 3);
    EXPECT_EQ(Ints(d->Get("output_spatial_dimensions")), std::vector<int64_t>({1, 2}));
  }
  const NamedAttrs& a = Op(pretty, 0).attributes;
  EXPECT_EQ(Ints(Find(a, "window_strides")), std::vector<int64_t>({2, 1}));
  EXPECT_EQ(Ints(Find(a, "padding")), std::vector<int64_t>({1, 0, 0, 2}));
  EXPECT_EQ(Ints(Find(a, "lhs_dilation")), std::vector<int64_t>({1, 1}));
  EXPECT_EQ(Ints(Find(a, "rhs_dilation")), std::vector<int64_t>({1, 2}));
  const Attribute* rev = Find(a, "window_reversal");
  ASSERT_NE(rev, nullptr);
  ASSERT_EQ(rev->array.size(), 2u);
  EXPECT_FALSE(rev->array[0].b);
  EXPECT_TRUE(rev->array[1].b);
  EXPECT_EQ(Int(Find(a, "feature_group_count")), 1);
  // A malformed generic layout leaves the dimension numbers empty (the compiler reports them missing).
  auto bad = Main(
      "  %0 = \"stablehlo.convolution\"(%a, %b) {dimension_numbers = #stablehlo.conv<[b, 0, 0, f]x[0, i, "
      "o]->[b, 0, f]>} : (tensor<1x4x1xf32>, tensor<3x1x1xf32>) -> tensor<1x2x1xf32>");
  EXPECT_TRUE(Find(Op(bad, 0).attributes, "dimension_numbers")->dict.empty());
  EXPECT_NE(ParseError("func.func @f() {\n  %0 = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, "
                       "o]->[b, 0, f], window = {bogus = [1]} : (tensor<1x4x1xf32>, tensor<3x1x1xf32>) -> "
                       "tensor<1x2x1xf32>\n}\n")
                .find("unknown convolution window attribute 'bogus'"),
            std::string::npos);
}

TEST(OpSyntax, SliceTupleIndexFormatAndAlgorithm) {
  auto m = Main(
      "  %0 = stablehlo.slice %x [0:2, 1:3:2] : (tensor<2x3xf32>) -> tensor<2x1xf32>\n"
      "  %1 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf32>, tensor<i32>>) -> tensor<i32>\n"
      "  %2 = stablehlo.reduce_precision %x, format = e5m10 : tensor<2x3xf32>\n"
      "  %3:2 = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, "
      "tensor<4xui32>)\n"
      "  %4 = \"stablehlo.rng_bit_generator\"(%s) {rng_algorithm = #stablehlo<rng_algorithm PHILOX>} : "
      "(tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)");
  EXPECT_EQ(Ints(Find(Op(m, 0).attributes, "start_indices")), std::vector<int64_t>({0, 1}));
  EXPECT_EQ(Ints(Find(Op(m, 0).attributes, "limit_indices")), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(Ints(Find(Op(m, 0).attributes, "strides")), std::vector<int64_t>({1, 2}));
  EXPECT_EQ(Int(Find(Op(m, 1).attributes, "index")), 1);
  EXPECT_EQ(Int(Find(Op(m, 2).attributes, "exponent_bits")), 5);
  EXPECT_EQ(Int(Find(Op(m, 2).attributes, "mantissa_bits")), 10);
  for (size_t i : {3, 4}) {
    const Attribute* alg = Find(Op(m, i).attributes, "rng_algorithm");
    ASSERT_NE(alg, nullptr);
    EXPECT_EQ(alg->kind, Attribute::Kind::kEnum);
    EXPECT_EQ(alg->str, i == 3 ? "THREE_FRY" : "PHILOX");
  }
  EXPECT_NE(ParseError("func.func @f(%x: tensor<4xf32>) {\n  %0 = stablehlo.slice %x [0:a] : (tensor<4xf32>) -> "
                       "tensor<2xf32>\n}\n")
                .find("expected an integer in the slice bounds"),
            std::string::npos);
  EXPECT_NE(ParseError("func.func @f(%x: tensor<4xf32>) {\n  %0 = stablehlo.reduce_precision %x, format = f5m2 : "
                       "tensor<4xf32>\n}\n")
                .find("malformed format"),
            std::string::npos);
}

TEST(OpSyntax, CompareDirectionsAreEnumsInBothForms) {
  auto m = Main(
      "  %0 = stablehlo.compare LT, %x, %x, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>\n"
      "  %1 = \"stablehlo.compare\"(%x, %x) {comparison_direction = #stablehlo<comparison_direction GE>} : "
      "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>\n"
      "  %2 = \"stablehlo.transpose\"(%x) {permutation = array<i64: 1, 0>, x = #stablehlo.transpose<ADJOINT>} : "
      "(tensor<2x3xf32>) -> tensor<3x2xf32>");
  const Attribute* lt = Find(Op(m, 0).attributes, "comparison_direction");
  const Attribute* ft = Find(Op(m, 0).attributes, "compare_type");
  const Attribute* ge = Find(Op(m, 1).attributes, "comparison_direction");
  const Attribute* adj = Find(Op(m, 2).attributes, "x");
  for (const Attribute* a : {lt, ft, ge, adj}) {
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->kind, Attribute::Kind::kEnum);
  }
  EXPECT_EQ(lt->str, "LT");
  EXPECT_EQ(ft->str, "FLOAT");
  EXPECT_EQ(ge->str, "GE");
  EXPECT_EQ(adj->str, "ADJOINT");
}

// The pretty reduce lists (input, init) pairs and its reducer's arguments in pairs; the IR has the generic
// order (inputs, then inits). `applies` becomes the one-op region it stands for.
TEST(OpSyntax, ReduceOperandsInGenericOrderAndAppliesAsARegion) {
  auto m = Main(
      "  %0:2 = stablehlo.reduce(%a init: %i), (%b init: %j) across dimensions = [1] : (tensor<2x3xf32>, "
      "tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)\n"
      "   reducer(%p: tensor<f32>, %q: tensor<f32>) (%r: tensor<i32>, %s: tensor<i32>) {\n"
      "    stablehlo.return %p, %r : tensor<f32>, tensor<i32>\n"
      "  }\n"
      "  %1 = stablehlo.reduce(%x init: %i) applies stablehlo.maximum across dimensions = [0] : (tensor<2x3xf32>, "
      "tensor<f32>) -> tensor<3xf32>");
  const Operation& pairs = Op(m, 0);
  ASSERT_EQ(pairs.operands.size(), 4u);
  EXPECT_EQ(pairs.operands[0].name, "a");
  EXPECT_EQ(pairs.operands[1].name, "b");
  EXPECT_EQ(pairs.operands[2].name, "i");
  EXPECT_EQ(pairs.operands[3].name, "j");
  const auto& args = pairs.regions.at(0).blocks.at(0).args;
  ASSERT_EQ(args.size(), 4u);
  EXPECT_EQ(args[0].name, "p");
  EXPECT_EQ(args[1].name, "r");
  EXPECT_EQ(args[2].name, "q");
  EXPECT_EQ(args[3].name, "s");
  EXPECT_EQ(Ints(Find(pairs.attributes, "dimensions")), std::vector<int64_t>({1}));
  const Operation& applies = Op(m, 1);
  ASSERT_EQ(applies.regions.size(), 1u);
  const Block& b = applies.regions[0].blocks.at(0);
  ASSERT_EQ(b.args.size(), 2u);
  EXPECT_EQ(TypeToString(b.args[0].type), "tensor<f32>");
  ASSERT_EQ(b.ops.size(), 2u);
  EXPECT_EQ(b.ops[0].name, "stablehlo.maximum");
  EXPECT_EQ(b.ops[0].operands.at(0).name, b.args[0].name);
  EXPECT_EQ(b.ops[0].operands.at(1).name, b.args[1].name);
  EXPECT_EQ(TypeToString(b.ops[0].result_types.at(0)), "tensor<f32>");
  EXPECT_EQ(b.ops[1].name, "stablehlo.return");
  EXPECT_EQ(b.ops[1].operands.at(0).name, b.ops[0].result_name);
}

TEST(OpSyntax, ScanSegmentsAndResultNames) {
  auto m = Main(
      "  %0, %1 = chlo.scan(%x) inits(%i) dimension=1 {\n"
      "  ^bb0(%a: tensor<2xf32>, %c: tensor<2xf32>):\n"
      "    stablehlo.return %a, %c : tensor<2xf32>, tensor<2xf32>\n"
      "  } : (tensor<2x3xf32>, tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2xf32>)\n"
      "  %2:2 = stablehlo.optimization_barrier %x, %x : tensor<2x3xf32>, tensor<2x3xf32>");
  const Operation& scan = Op(m, 0);
  EXPECT_EQ(Ints(Find(scan.attributes, "operandSegmentSizes")), std::vector<int64_t>({1, 1}));
  EXPECT_EQ(Int(Find(scan.attributes, "dimension")), 1);
  ASSERT_EQ(scan.result_names.size(), 2u);
  EXPECT_EQ(scan.result_names[0], "0");
  EXPECT_EQ(scan.result_names[1], "1");
  EXPECT_EQ(scan.result_name, "0");
  EXPECT_TRUE(Op(m, 1).result_names.empty());  // %2:2: one name for both
  EXPECT_EQ(Op(m, 1).num_results, 2u);
}

// Result types the pretty form leaves implicit, where the generic form states them.
TEST(OpSyntax, ImplicitResultTypesAreStated) {
  auto m = Main(
      "  %c = stablehlo.constant dense<1> : tensor<i32>\n"
      "  %s = stablehlo.select %p, %x, %x : tensor<2x3xi1>, tensor<2x3xf32>\n"
      "  %w:2 = stablehlo.while(%k = %c, %v = %x) : tensor<i32>, tensor<2x3xf32>\n"
      "   cond {\n"
      "    %b = stablehlo.constant dense<true> : tensor<i1>\n"
      "    stablehlo.return %b : tensor<i1>\n"
      "  } do {\n"
      "    stablehlo.return %k, %v : tensor<i32>, tensor<2x3xf32>\n"
      "  }\n"
      "  %i = stablehlo.iota dim = 0 : tensor<4xi32>\n"
      "  %g = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x3xf32>) -> tensor<i32>");
  EXPECT_EQ(TypeToString(Op(m, 0).result_types.at(0)), "tensor<i32>");
  const Operation& sel = Op(m, 1);
  ASSERT_EQ(sel.operand_types.size(), 3u);
  EXPECT_EQ(TypeToString(sel.operand_types[0]), "tensor<2x3xi1>");
  EXPECT_EQ(TypeToString(sel.operand_types[2]), "tensor<2x3xf32>");
  EXPECT_EQ(TypeToString(sel.result_types.at(0)), "tensor<2x3xf32>");
  const Operation& w = Op(m, 2);
  ASSERT_EQ(w.result_types.size(), 2u);
  EXPECT_EQ(TypeToString(w.result_types[0]), "tensor<i32>");
  EXPECT_EQ(TypeToString(w.result_types[1]), "tensor<2x3xf32>");
  const Operation& iota = Op(m, 3);
  EXPECT_EQ(TypeToString(iota.result_types.at(0)), "tensor<4xi32>");
  EXPECT_EQ(Int(Find(iota.attributes, "dim")), 0);
  EXPECT_EQ(Find(iota.attributes, "dim")->type.kind, Type::Kind::kOther);  // not typed by the signature
  const Operation& g = Op(m, 4);
  EXPECT_EQ(TypeToString(g.result_types.at(0)), "tensor<i32>");
  EXPECT_EQ(TypeToString(g.operand_types.at(0)), "tensor<2x3xf32>");
}

}  // namespace
}  // namespace neuronmem::stablehlo
