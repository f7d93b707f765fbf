// The manifest subsystem in C++: typed values (memory kind and element type enums), the parsed module kept
// for the executor, the upload plan with overflow-checked sizes, the core-count range, and the JSON reader
// accepting exactly what the writer produces (each rejected document is a regression test).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "manifest/upload_plan.h"

namespace neuronmem::manifest {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Manifest DecodeStep() {
  Manifest m;
  Options o;
  o.filename = "decode_step.mlir";
  Status s = LoadFromText(ReadFile(std::string(NEURONMEM_TEST_DATA_DIR) + "/decode_step.mlir"), o, &m);
  EXPECT_FALSE(s) << s->message;
  return m;
}

Manifest FromText(const std::string& text, Status* status = nullptr) {
  Manifest m;
  Status s = LoadFromText(text, Options(), &m);
  if (status)
    *status = std::move(s);
  else
    EXPECT_FALSE(s) << s->message;
  return m;
}

TEST(ManifestValues, CarryKindAndElementTypeEnums) {
  const Manifest m = DecodeStep();
  ASSERT_EQ(m.arguments.size(), 4u);
  EXPECT_EQ(m.arguments[0].memory_kind, MemoryKind::kPinnedHost);
  EXPECT_EQ(m.arguments[0].type.element, ElementType::kS32);
  EXPECT_EQ(m.arguments[2].memory_kind, MemoryKind::kDevice);
  EXPECT_EQ(m.arguments[2].type.element, ElementType::kBF16);
  EXPECT_EQ(m.results[1].memory_kind, MemoryKind::kPinnedHost);
  ASSERT_EQ(m.moves.size(), 3u);
  EXPECT_EQ(m.moves[0].from_memory_kind, MemoryKind::kPinnedHost);
  EXPECT_EQ(m.moves[0].to_memory_kind, MemoryKind::kDevice);
  EXPECT_EQ(m.moves[2].to_memory_kind, MemoryKind::kUnpinnedHost);
  // Tuples, tokens and written-out types have no element enum.
  const Manifest t = FromText(
      "func.func @main(%a: tuple<tensor<2xf32>>, %b: !stablehlo.token, %c: tensor<2xindex>) -> () {\n  return\n}\n");
  EXPECT_EQ(t.arguments[0].type.element, ElementType::kInvalid);
  EXPECT_EQ(t.arguments[1].type.element, ElementType::kInvalid);
  EXPECT_EQ(t.arguments[2].type.element, ElementType::kInvalid);
  EXPECT_EQ(t.arguments[2].type.element_type, "tensor<2xindex>");
}

TEST(ManifestValues, VmemMovesArePlacedOnTheDevice) {
  const Manifest m = FromText(R"(func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) -> () {
  %0 = stablehlo.custom_call @annotate_device_placement(%a) {mhlo.frontend_attributes = {_xla_buffer_placement =
      "vmem"}} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.custom_call @MoveToHost(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return
})");
  ASSERT_EQ(m.moves.size(), 2u);
  EXPECT_EQ(m.moves[0].to_kind, "vmem");
  EXPECT_EQ(m.moves[0].to_memory_kind, MemoryKind::kDevice);
  EXPECT_EQ(m.moves[1].from_kind, "vmem");
  EXPECT_EQ(m.moves[1].from_memory_kind, MemoryKind::kDevice);
}

TEST(ManifestIr, TheParsedModuleIsKept) {
  const Manifest m = DecodeStep();
  ASSERT_NE(m.ir, nullptr);
  EXPECT_EQ(m.ir->name, "jit_decode_step");
  const stablehlo::Function* f = m.ir->FindFunction("main");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->body.blocks.at(0).ops.size(), 11u);
  EXPECT_NE(m.ir->FindFunction("host_fn"), nullptr);
  // Copies share the IR; it outlives the manifest it came from.
  std::shared_ptr<const stablehlo::Module> ir;
  {
    Manifest copy = m;
    EXPECT_EQ(copy.ir.get(), m.ir.get());
    ir = copy.ir;
  }
  EXPECT_EQ(ir->FindFunction("main")->args.at(0).name, "arg0");
  Manifest from_json;
  ASSERT_FALSE(FromJson(ToJson(m), &from_json));
  EXPECT_EQ(from_json.ir, nullptr);
}

// The executor finds what the manifest derived by op identity: each move, host-compute op, kernel and
// channel points at its op in Manifest::ir (not at a line and column to match); none from JSON.
TEST(ManifestIr, EntriesPointAtTheirOps) {
  const Manifest m = FromText(R"(func.func @main(%a: tensor<4xf32>) -> () {
  %0 = stablehlo.custom_call @MoveToHost(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.custom_call @MoveToHost(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = stablehlo.exponential %0 {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : tensor<4xf32>
  %t = stablehlo.create_token : !stablehlo.token
  %3 = "stablehlo.send"(%a, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>,
      is_host_transfer = true} : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
  return
})");
  ASSERT_NE(m.ir, nullptr);
  const auto& ops = m.ir->FindFunction("main")->body.blocks.at(0).ops;
  ASSERT_EQ(m.moves.size(), 2u);
  EXPECT_EQ(m.moves[0].ir_op, &ops[0]);
  EXPECT_EQ(m.moves[1].ir_op, &ops[1]);
  ASSERT_EQ(m.host_compute.size(), 1u);
  EXPECT_EQ(m.host_compute[0].ir_op, &ops[2]);
  ASSERT_EQ(m.channels.size(), 1u);
  EXPECT_EQ(m.channels[0].ir_op, &ops[4]);
  Manifest from_json;
  ASSERT_FALSE(FromJson(ToJson(m), &from_json));
  EXPECT_EQ(from_json.moves.at(0).ir_op, nullptr);
}

// Issue 12 item 5: a value keeps its kind through ops that only re-annotate or re-view it, so each move
// reports where the data really comes from. Every move below takes a pinned_host value to the device; the
// ops between the argument and the move change no bytes.
TEST(ManifestKinds, ThroughOpsThatMoveNoData) {
  const Manifest m = FromText(R"(module @passthrough {
  func.func public @main(%arg0: tensor<4x4xf32> {mhlo.memory_kind = "pinned_host"}, %arg1: tensor<4x4xf32>)
      -> tensor<4x4xf32> {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {}]> : tensor<4x4xf32>
    %1 = stablehlo.custom_call @annotate_device_placement(%0) {has_side_effect = true,
        mhlo.frontend_attributes = {_xla_buffer_placement = "device"}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = sdy.reshard %arg0 <@mesh, [{}, {"a"}]> : tensor<4x4xf32>
    %3 = sdy.propagation_barrier %2 allowed_direction=NONE : tensor<4x4xf32>
    %4 = stablehlo.custom_call @MoveToDevice(%3) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{devices=[2,1]<=[2]}"}
        : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = stablehlo.custom_call @SPMDFullToShardShape(%5) {mhlo.sharding = "{manual}"}
        : (tensor<4x4xf32>) -> tensor<2x4xf32>
    %7 = stablehlo.custom_call @SPMDShardToFullShape(%6) {mhlo.sharding = "{devices=[2,1]<=[2]}"}
        : (tensor<2x4xf32>) -> tensor<4x4xf32>
    %8 = stablehlo.custom_call @MoveToDevice(%7) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %9:2 = stablehlo.optimization_barrier %arg1, %arg0 : tensor<4x4xf32>, tensor<4x4xf32>
    %10 = stablehlo.reshape %9#1 : (tensor<4x4xf32>) -> tensor<16xf32>
    %11 = stablehlo.bitcast_convert %10 : (tensor<16xf32>) -> tensor<16xi32>
    %12 = stablehlo.custom_call @MoveToDevice(%11) : (tensor<16xi32>) -> tensor<16xi32>
    %13 = stablehlo.custom_call @MoveToDevice(%9#0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %14 = stablehlo.tuple %arg1, %arg0 : tuple<tensor<4x4xf32>, tensor<4x4xf32>>
    %15 = stablehlo.get_tuple_element %14[1] : (tuple<tensor<4x4xf32>, tensor<4x4xf32>>) -> tensor<4x4xf32>
    %16 = "stablehlo.get_tuple_element"(%14) {index = 0 : i32} : (tuple<tensor<4x4xf32>,
        tensor<4x4xf32>>) -> tensor<4x4xf32>
    %17 = stablehlo.custom_call @MoveToDevice(%15) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %18 = stablehlo.custom_call @MoveToDevice(%16) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %19 = stablehlo.add %arg0, %arg0 : tensor<4x4xf32>
    %20 = stablehlo.custom_call @MoveToDevice(%19) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %20 : tensor<4x4xf32>
  }
}
)");
  // value moved -> the kind the move reports it comes from
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"%0", "pinned_host"},   // sharding_constraint
      {"%3", "pinned_host"},   // reshard, then propagation_barrier
      {"%7", "pinned_host"},   // Sharding, SPMDFullToShardShape, SPMDShardToFullShape
      {"%11", "pinned_host"},  // optimization_barrier's second result, reshape, bitcast_convert
      {"%9", "device"},        // optimization_barrier's first result (%9#0): %arg1
      {"%15", "pinned_host"},  // tuple element 1, pretty get_tuple_element
      {"%16", "device"},       // tuple element 0, generic get_tuple_element
      {"%19", "device"},       // an add computes a new value on the device
  };
  ASSERT_EQ(m.moves.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(m.moves[i].value, expected[i].first) << i;
    EXPECT_EQ(m.moves[i].from_kind, expected[i].second) << m.moves[i].value;
  }
  EXPECT_EQ(m.moves[0].from_memory_kind, MemoryKind::kPinnedHost);
}

// Kinds cross call boundaries (the callee's arguments have the caller's operand kinds, the call's results
// the kinds the callee returns) and the region arguments of while, if and case.
TEST(ManifestKinds, ThroughCallsAndControlFlow) {
  const Manifest m = FromText(R"(module @control {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %arg1: tensor<i1>,
      %arg2: tensor<i32>) -> tensor<4xf32> {
    %0 = call @offload(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.custom_call @MoveToDevice(%0) : (tensor<4xf32>) -> tensor<4xf32>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %2:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<4xf32>
     cond {
      %c_1 = stablehlo.constant dense<3> : tensor<i64>
      %5 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %5 : tensor<i1>
    } do {
      %5 = stablehlo.custom_call @MoveToDevice(%iterArg_0) : (tensor<4xf32>) -> tensor<4xf32>
      %6 = stablehlo.custom_call @MoveToHost(%5) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %iterArg, %6 : tensor<i64>, tensor<4xf32>
    }
    %3 = "stablehlo.while"(%arg0) ({
    ^bb0(%x: tensor<4xf32>):
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    }, {
    ^bb0(%x: tensor<4xf32>):
      %y = stablehlo.custom_call @MoveToDevice(%x) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %x : tensor<4xf32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %4 = stablehlo.custom_call @MoveToDevice(%2#1) : (tensor<4xf32>) -> tensor<4xf32>
    %7 = "stablehlo.if"(%arg1) ({
      stablehlo.return %arg0 : tensor<4xf32>
    }, {
      %8 = stablehlo.custom_call @MoveToHost(%1) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %8 : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %9 = stablehlo.custom_call @MoveToDevice(%7) : (tensor<4xf32>) -> tensor<4xf32>
    %10 = "stablehlo.case"(%arg2) ({
      stablehlo.return %arg0 : tensor<4xf32>
    }, {
      stablehlo.return %1 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    %11 = stablehlo.custom_call @MoveToDevice(%10) : (tensor<4xf32>) -> tensor<4xf32>
    return %11 : tensor<4xf32>
  }
  func.func private @offload(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @MoveToDevice(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.custom_call @MoveToHost(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
)");
  struct Expected {
    const char* function;
    const char* value;
    const char* from;
  };
  const std::vector<Expected> expected = {
      {"offload", "%arg0", "pinned_host"},  // the callee's argument has the caller's operand kind
      {"offload", "%0", "device"},
      {"main", "%0", "pinned_host"},          // the call's result: what the callee returns
      {"main", "%iterArg_0", "pinned_host"},  // pretty while: the loop value's kind inside the body
      {"main", "%5", "device"},
      {"main", "%x", "pinned_host"},    // generic while: the block argument's
      {"main", "%2#1", "pinned_host"},  // the loop's result
      {"main", "%1", "device"},         // if's second branch
      {"main", "%7", "pinned_host"},    // both branches return pinned_host
      {"main", "%10", "device"},        // case's branches disagree: device
  };
  ASSERT_EQ(m.moves.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(m.moves[i].function, expected[i].function) << i;
    EXPECT_EQ(m.moves[i].value, expected[i].value) << i;
    EXPECT_EQ(m.moves[i].from_kind, expected[i].from) << i << " " << m.moves[i].value;
  }
}

// Issue 12 item 1: placement annotations inside Shardy's regions are seen, with the kinds the region's
// operands have; what a region returns is what its op yields; values inside a region isolated from above
// (numbered afresh) do not change the kinds of the values of the same name outside it.
TEST(ManifestKinds, InsideShardyRegions) {
  const Manifest m = FromText(R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["a"=2]>
  func.func public @main(%arg0: tensor<4x4xf32> {mhlo.memory_kind = "pinned_host",
      sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>},
      %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) {
    %0 = stablehlo.custom_call @MoveToHost(%arg1) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = sdy.manual_computation(%arg0, %0) in_shardings=[<@mesh, [{"a"}, {}]>, <@mesh, [{"a"},
        {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg2: tensor<2x4xf32>, %arg3: tensor<2x4xf32>) {
      %0 = stablehlo.custom_call @annotate_device_placement(%arg2) {has_side_effect = true,
          mhlo.frontend_attributes = {_xla_buffer_placement = "device"}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
      %1 = stablehlo.add %0, %0 : tensor<2x4xf32>
      %2 = stablehlo.custom_call @annotate_device_placement(%1) {has_side_effect = true,
          mhlo.frontend_attributes = {_xla_buffer_placement = "pinned_host"}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
      sdy.return %2 : tensor<2x4xf32>
    } : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = stablehlo.custom_call @MoveToDevice(%0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = sdy.named_computation<"stage">(%1) (%arg2: tensor<4x4xf32>) {
      %4 = stablehlo.custom_call @MoveToDevice(%arg2) : (tensor<4x4xf32>) -> tensor<4x4xf32>
      sdy.return %arg2 : tensor<4x4xf32>
    } : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = stablehlo.custom_call @MoveToDevice(%3) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %5 : tensor<4x4xf32>
  }
}
)");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"%arg1", "device"},      {"%arg2", "pinned_host"},  // manual_computation's block argument: %arg0's kind
      {"%1", "device"},         {"%0", "pinned_host"},     // the outer %0 (MoveToHost), not the region's
      {"%arg2", "pinned_host"},  // named_computation's block argument: what manual_computation returned
      {"%3", "pinned_host"},     // named_computation's result
  };
  ASSERT_EQ(m.moves.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(m.moves[i].value, expected[i].first) << i;
    EXPECT_EQ(m.moves[i].from_kind, expected[i].second) << i << " " << m.moves[i].value;
  }
  ASSERT_TRUE(m.ir);
  const stablehlo::Operation& named = m.ir->FindFunction("main")->body.blocks.at(0).ops.at(3);
  EXPECT_EQ(named.name, "sdy.named_computation");
  ASSERT_FALSE(named.attributes.empty());
  EXPECT_EQ(named.attributes[0].second.text, "<\"stage\">");
}

// Kinds follow calls at the call, so a long call chain must not exhaust the stack: calls nested deeper than
// the parser's nesting limit are walked afterwards (with device arguments), and their moves still reported.
TEST(ManifestKinds, LongCallChainsAreWalkedWithoutDeepRecursion) {
  std::string text =
      "func.func @main(%a: tensor<2xf32> {mhlo.memory_kind = \"pinned_host\"}) -> tensor<2xf32> {\n"
      "  %0 = call @f1(%a) : (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n";
  const int n = 2000;
  for (int i = 1; i < n; ++i) {
    text += "func.func private @f" + std::to_string(i) + "(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = call @f" +
            std::to_string(i + 1) + "(%a) : (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n";
  }
  text += "func.func private @f" + std::to_string(n) +
          "(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
          "  %0 = stablehlo.custom_call @MoveToDevice(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
          "  return %0 : tensor<2xf32>\n}\n";
  const Manifest m = FromText(text);
  ASSERT_EQ(m.moves.size(), 1u);
  EXPECT_EQ(m.moves[0].function, "f" + std::to_string(n));
  EXPECT_EQ(m.moves[0].from_kind, "device");  // beyond the limit, arguments are taken as device
  // Within the limit the kind is followed.
  const Manifest short_chain =
      FromText(R"(func.func @main(%a: tensor<2xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<2xf32> {
  %0 = call @f1(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @f1(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = call @f2(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @f2(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.custom_call @MoveToDevice(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = call @f1(%0) : (tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
)");
  ASSERT_EQ(short_chain.moves.size(), 1u);  // f1 is walked once, though called twice (recursively)
  EXPECT_EQ(short_chain.moves[0].from_kind, "pinned_host");
}

// Issue 12 item 3: a skipped op is reported as a warning and does not fail the load, unless a placed value
// flows into it or its result (of unknown kind) is moved.
TEST(ManifestKinds, SkippedOpsWarnAndFailOnlyWhenPlacementFlowsThroughThem) {
  const std::string head =
      R"(func.func @main(%arg0: tensor<4xf32> {mhlo.memory_kind = "pinned_host"},
    %arg1: tensor<4xf32>) -> tensor<4xf32> {
)";
  Manifest m;
  Options o;
  o.filename = "graph.mlir";
  Status s = LoadFromText(head + R"(  %0 = acme.pack %arg1 into {1, 2} : tensor<4xf32>
  %1 = stablehlo.add %0, %0 : tensor<4xf32>
  %2 = stablehlo.custom_call @MoveToHost(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
)",
                          o, &m);
  ASSERT_FALSE(s) << s->message;
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0].rfind("graph.mlir:3:3: skipped 'acme.pack'", 0), 0u) << m.warnings[0];
  ASSERT_EQ(m.moves.size(), 1u);
  EXPECT_EQ(m.moves[0].from_kind, "device");
  // JSON keeps the warnings.
  Manifest back;
  ASSERT_FALSE(FromJson(ToJson(m), &back));
  EXPECT_EQ(back.warnings, m.warnings);

  s = LoadFromText(head + "  %0 = acme.pack %arg1, %arg0 into {1, 2} : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
                   o, &m);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_EQ(s->message.rfind("graph.mlir:3:25: a pinned_host value (%arg0) flows into 'acme.pack'", 0), 0u)
      << s->message;

  s = LoadFromText(head + R"(  %0 = acme.pack %arg1 into {1, 2} : tensor<4xf32>
  %1 = sdy.sharding_constraint %0 <@mesh, [{}]> : tensor<4xf32>
  %2 = stablehlo.custom_call @MoveToHost(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
)",
                   o, &m);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_EQ(s->message.rfind("graph.mlir:5:3: @MoveToHost moves %1, which comes from an op of a dialect", 0), 0u)
      << s->message;
}

TEST(ManifestOptions, CoreCountIsRangeChecked) {
  const std::string text = "func.func @main() -> () {\n  return\n}\n";
  for (uint32_t cores : {0u, 65u, 4000000000u}) {
    Options o;
    o.num_cores = cores;
    Manifest m;
    Status s = LoadFromText(text, o, &m);
    ASSERT_TRUE(s) << cores;
    EXPECT_EQ(s->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(s->message.find("num_cores is " + std::to_string(cores)), std::string::npos) << s->message;
  }
  Options o;
  o.num_cores = kMaxCores;
  Manifest m;
  EXPECT_FALSE(LoadFromText(text, o, &m));
}

class Plan : public ::testing::Test {
 protected:
  Status PlanFor(
      const std::string& text, std::vector<const void*> data, std::vector<ArgumentUpload>* out,
      InPinnedArena pinned = [](const void*, uint64_t) { return false; }) {
    m_ = FromText(text);
    return PlanArgumentUploads(m_, data.data(), data.size(), pinned, out);
  }
  Manifest m_;
  char buf_[64] = {};
};

TEST_F(Plan, SizesKindsAndZeroCopy) {
  std::vector<ArgumentUpload> plan;
  const char* text = R"(func.func @main(%a: tensor<2x3xbf16> {mhlo.memory_kind = "pinned_host"},
    %b: tensor<4xi64> {mhlo.memory_kind = "unpinned_host"}, %c: tensor<f32>, %d: tensor<0x5xf32>) -> () {
  return
})";
  const void* seen = nullptr;
  auto pinned = [&](const void* p, uint64_t n) {
    seen = p;
    return p == buf_ && n == 12;
  };
  ASSERT_FALSE(PlanFor(text, {buf_, buf_ + 16, buf_ + 48, nullptr}, &plan, pinned));
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].bytes, 12u);
  EXPECT_EQ(plan[0].element_type, ElementType::kBF16);
  EXPECT_EQ(plan[0].memory_kind, MemoryKind::kPinnedHost);
  EXPECT_TRUE(plan[0].zero_copy);
  EXPECT_EQ(seen, buf_) << "only the pinned_host argument asks the arena";
  EXPECT_EQ(plan[1].bytes, 32u);
  EXPECT_EQ(plan[1].memory_kind, MemoryKind::kUnpinnedHost);
  EXPECT_FALSE(plan[1].zero_copy);
  EXPECT_EQ(plan[2].bytes, 4u);
  EXPECT_EQ(*plan[2].dims, std::vector<int64_t>());
  EXPECT_EQ(plan[3].bytes, 0u) << "an empty tensor may come with NULL data";
}

TEST_F(Plan, ByteSizesThatOverflowAreRejected) {
  std::vector<ArgumentUpload> plan;
  Status s = PlanFor("func.func @main(%a: tensor<4000000000x4000000000x4000000000xf32>) -> () {\n  return\n}\n", {buf_},
                     &plan);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s->message.find("more than 2^64 bytes"), std::string::npos) << s->message;
  EXPECT_TRUE(plan.empty());
  // The element size alone can tip it over: 2^61 elements of 8 bytes.
  s = PlanFor("func.func @main(%a: tensor<2305843009213693952xf64>) -> () {\n  return\n}\n", {buf_}, &plan);
  ASSERT_TRUE(s);
  EXPECT_NE(s->message.find("more than 2^64 bytes"), std::string::npos) << s->message;
}

TEST_F(Plan, WhatBuffersCannotHoldAndBadCalls) {
  std::vector<ArgumentUpload> plan;
  Status s = PlanFor("func.func @main(%a: tensor<?x4xf32>) -> () {\n  return\n}\n", {buf_}, &plan);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(s->message.find("dynamic"), std::string::npos) << s->message;
  for (const char* type : {"tuple<tensor<2xf32>>", "!stablehlo.token", "tensor<2xindex>"}) {
    s = PlanFor(std::string("func.func @main(%a: ") + type + ") -> () {\n  return\n}\n", {buf_}, &plan);
    ASSERT_TRUE(s) << type;
    EXPECT_EQ(s->code, NEURONMEM_STATUS_UNIMPLEMENTED) << type;
    EXPECT_NE(s->message.find("buffers cannot hold"), std::string::npos) << s->message;
  }
  s = PlanFor("func.func @main(%a: tensor<2xf32>) -> () {\n  return\n}\n", {nullptr}, &plan);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s->message.find("host_data[0] is NULL"), std::string::npos) << s->message;
  s = PlanFor("func.func @main(%a: tensor<2xf32>) -> () {\n  return\n}\n", {buf_, buf_}, &plan);
  ASSERT_TRUE(s);
  EXPECT_NE(s->message.find("takes 1 arguments, 2 were given"), std::string::npos) << s->message;
  EXPECT_TRUE(plan.empty());
}

// ---- the JSON reader ----

using json = nlohmann::json;

std::string ErrorFor(const json& doc) {
  Manifest m;
  Status s = FromJson(doc.dump(), &m);
  EXPECT_TRUE(s) << "accepted: " << doc.dump().substr(0, 300);
  if (!s) return "";
  EXPECT_EQ(s->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  return s->message;
}

TEST(ManifestJson, WhatTheWriterProducesReadsBackIdentically) {
  const std::string text = ToJson(DecodeStep());
  Manifest back;
  ASSERT_FALSE(FromJson(text, &back));
  EXPECT_EQ(ToJson(back), text);
  EXPECT_EQ(back.arguments[0].memory_kind, MemoryKind::kPinnedHost);
  EXPECT_EQ(back.arguments[0].type.element, ElementType::kS32);
  EXPECT_EQ(back.moves[0].from_memory_kind, MemoryKind::kPinnedHost);
  // Unknown fields are ignored (a minor version may add fields).
  json doc = json::parse(text);
  doc["added_later"] = 1;
  doc["arguments"][0]["added_later"] = "x";
  EXPECT_FALSE(FromJson(doc.dump(), &back));
}

TEST(ManifestJson, RejectsWhatTheTextLoaderCannotProduce) {
  const json good = json::parse(ToJson(DecodeStep()));
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    const char* message;
  };
  const Case cases[] = {
      {"arguments null", [](json& d) { d["arguments"] = nullptr; }, "arguments: must be an array, found null"},
      {"fractional schema version", [](json& d) { d["schema_version"] = 1.0; }, "schema_version: must be an integer"},
      {"schema version 1.5", [](json& d) { d["schema_version"] = 1.5; }, "schema_version: must be an integer"},
      {"schema version as a string", [](json& d) { d["schema_version"] = "1"; }, "schema_version"},
      {"negative index", [](json& d) { d["arguments"][0]["index"] = -1; }, "arguments[0].index: -1 is outside"},
      {"duplicate index", [](json& d) { d["arguments"][1]["index"] = 0; }, "arguments[1].index: 0 must equal"},
      {"index out of order", [](json& d) { d["results"][0]["index"] = 2; }, "results[0].index: 2 must equal"},
      {"negative dim", [](json& d) { d["arguments"][0]["dims"][0] = -2; }, "arguments[0].dims[0]: -2 is outside"},
      {"fractional dim", [](json& d) { d["arguments"][0]["dims"][0] = 8.5; }, "arguments[0].dims[0]: must be an"},
      {"index 1e300", [](json& d) { d["arguments"][0]["index"] = 1e300; }, "arguments[0].index: must be an integer"},
      {"line 1e300", [](json& d) { d["moves"][0]["location"]["line"] = 1e300; }, "moves[0].location.line"},
      {"handle 1e300", [](json& d) { d["channels"][0]["handle"] = 1e300; }, "channels[0].handle"},
      {"line above 2^32", [](json& d) { d["results"][0]["location"]["line"] = 4294967296ull; }, "is above"},
      {"count 2^64-1", [](json& d) { d["custom_call_targets"][0]["count"] = UINT64_MAX; }, "is above"},
      {"a pair of three numbers",
       [](json& d) {
         d["channels"][0]["source_target_pairs"][0] = {0, 1, 2};
       },
       "source_target_pairs[0]: must be a pair"},
      {"a pair of one number", [](json& d) { d["channels"][0]["source_target_pairs"][1] = {1}; }, "must be a pair"},
      {"a negative core",
       [](json& d) {
         d["channels"][0]["source_target_pairs"][0] = {-1, 1};
       },
       "is outside"},
      {"a repeated source",
       [](json& d) {
         d["channels"][0]["source_target_pairs"][1] = {0, 0};
       },
       "repeats source 0"},
      {"channel type 4", [](json& d) { d["channels"][0]["type"] = 4; }, "channels[0].type: 4 is above 3"},
      {"op neither send nor recv", [](json& d) { d["channels"][0]["op"] = "all_reduce"; }, "\"send\" or \"recv\""},
      {"unknown memory kind", [](json& d) { d["results"][0]["memory_kind"] = "hbm"; }, "unknown memory_kind \"hbm\""},
      {"vmem as a value's kind", [](json& d) { d["arguments"][0]["memory_kind"] = "vmem"; }, "unknown memory_kind"},
      {"unknown move kind", [](json& d) { d["moves"][0]["to_kind"] = "sram"; }, "unknown kind \"sram\""},
      {"unknown spelling", [](json& d) { d["moves"][0]["spelling"] = "Move"; }, "unknown move spelling"},
      {"unknown policy", [](json& d) { d["policy"] = "host"; }, "policy: must be"},
      {"attribute of three strings",
       [](json& d) {
         d["arguments"][0]["attributes"][0] = {"a", "b", "c"};
       },
       "must be a pair of strings"},
      {"aliasing_output negative", [](json& d) { d["arguments"][2]["aliasing_output"] = -1; }, "is outside"},
      {"aliasing_output missing", [](json& d) { d["arguments"][2].erase("aliasing_output"); }, "missing"},
      {"kind_explicit 1", [](json& d) { d["arguments"][0]["kind_explicit"] = 1; }, "must be true or false"},
      {"count 0", [](json& d) { d["custom_call_targets"][0]["count"] = 0; }, "is outside [1,"},
      {"a target twice", [](json& d) { d["custom_call_targets"][1]["target"] = d["custom_call_targets"][0]["target"]; },
       "is listed twice"},
      {"empty element type", [](json& d) { d["arguments"][0]["element_type"] = ""; }, "must not be empty"},
      {"payload not an object", [](json& d) { d["channels"][0]["payload"][0] = 3; }, "must be an object"},
  };
  for (const Case& c : cases) {
    json doc = good;
    c.mutate(doc);
    const std::string m = ErrorFor(doc);
    EXPECT_NE(m.find(c.message), std::string::npos) << c.what << ": " << m;
  }
  // Not JSON, or not an object.
  Manifest m;
  EXPECT_TRUE(FromJson("[1,", &m));
  EXPECT_TRUE(FromJson("[]", &m));
  EXPECT_TRUE(FromJson("", &m));
}

// A composite keeps its name, decomposition, version and attributes (as written) in the manifest and in its JSON;
// its decomposition is walked like a called function (a custom call there is listed among the targets).
TEST(ManifestComposite, KeepsNameAttributesAndWalksTheDecomposition) {
  const std::string text = R"(module @jit_f {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.composite "my.op" %arg0 {composite_attributes = {scale = 2.000000e+00 : f32, mode = "fast"},
        decomposition = @my.op, version = 3 : i32} : (tensor<4xf32>) -> tensor<4xf32> loc(#loc3)
    %1 = "stablehlo.composite"(%0) {decomposition = @my.op, name = "other.op"} : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @my.op(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @my.helper(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
#loc3 = loc("x")
)";
  Manifest m = FromText(text);
  ASSERT_EQ(m.composites.size(), 2u);
  const Composite& c = m.composites[0];
  EXPECT_EQ(c.function, "main");
  EXPECT_EQ(c.name, "my.op");
  EXPECT_EQ(c.decomposition, "my.op");
  EXPECT_EQ(c.version, 3);
  ASSERT_EQ(c.attributes.size(), 2u);
  EXPECT_EQ(c.attributes[0], (std::pair<std::string, std::string>{"scale", "2.000000e+00 : f32"}));
  EXPECT_EQ(c.attributes[1], (std::pair<std::string, std::string>{"mode", "fast"}));
  EXPECT_EQ(c.loc.line, 3u);
  EXPECT_EQ(m.composites[1].name, "other.op");
  EXPECT_EQ(m.composites[1].version, 0);
  ASSERT_EQ(m.custom_call_targets.size(), 1u);
  EXPECT_EQ(m.custom_call_targets[0].target, "my.helper");
  Manifest back;
  ASSERT_FALSE(FromJson(ToJson(m), &back));
  ASSERT_EQ(back.composites.size(), 2u);
  EXPECT_EQ(back.composites[0].name, "my.op");
  EXPECT_EQ(back.composites[0].attributes, c.attributes);
  EXPECT_EQ(back.composites[0].version, 3);
  EXPECT_EQ(back.composites[0].loc.column, c.loc.column);
  // Written before composites existed: still read.
  nlohmann::json doc = nlohmann::json::parse(ToJson(m));
  doc.erase("composites");
  ASSERT_FALSE(FromJson(doc.dump(), &back));
  EXPECT_TRUE(back.composites.empty());
  doc["composites"] = {{{"function", "main"},
                        {"name", "x.y"},
                        {"decomposition", "f"},
                        {"version", 0},
                        {"attributes", {{"k"}}},
                        {"location", {{"line", 1}, {"column", 1}}}}};
  Status s = FromJson(doc.dump(), &back);
  ASSERT_TRUE(s);
  EXPECT_NE(s->message.find("composites[0].attributes[0]"), std::string::npos) << s->message;
}

}  // namespace
}  // namespace neuronmem::manifest
