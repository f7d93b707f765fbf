// The placement manifest through the public C API: derivation from a decode step that uses every
// spelling, validation errors with locations, the unannotated-graph policies, JSON round trips, the
// memories per device, and the upload plan.
#include <neuronmem/neuronmem.h>

#include <gtest/gtest.h>

#include "common/status_helpers.h"
#include "common/transfer_helpers.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using neuronmem_test::Result;
using neuronmem_test::Take;

std::string S(neuronmem_string_t s) { return std::string(s.data, s.size); }

std::string DataFile(const char* name) { return std::string(NEURONMEM_TEST_DATA_DIR) + "/" + name; }

// neuronmem_manifest_upload_arguments with its args struct filled from plain arguments.
neuronmem_status_t* Upload(const neuronmem_manifest_t* m, neuronmem_device_t* dev, const void* const* data, size_t n,
                           neuronmem_host_buffer_semantics_t semantics, neuronmem_buffer_t** bufs,
                           neuronmem_event_t** ready) {
  neuronmem_manifest_upload_args_t a{};
  a.struct_size = NEURONMEM_MANIFEST_UPLOAD_ARGS_STRUCT_SIZE;
  a.manifest = m;
  a.device = dev;
  a.host_data = data;
  a.num_arguments = n;
  a.host_buffer_semantics = semantics;
  return neuronmem_manifest_upload_arguments(&a, bufs, ready);
}

neuronmem_manifest_t* Load(const std::string& text,
                           neuronmem_placement_policy_t policy = NEURONMEM_PLACEMENT_POLICY_DEVICE,
                           Result* error = nullptr) {
  neuronmem_manifest_options_t o{};
  o.struct_size = sizeof o;
  o.policy = policy;
  o.filename = "graph.mlir";
  neuronmem_manifest_t* m = nullptr;
  Result r = Take(neuronmem_manifest_load_text(text.data(), text.size(), &o, &m));
  if (error)
    *error = r;
  else
    EXPECT_EQ(r.code, NEURONMEM_STATUS_OK) << r.message;
  return m;
}

Result LoadError(const std::string& text) {
  Result r;
  neuronmem_manifest_t* m = Load(text, NEURONMEM_PLACEMENT_POLICY_DEVICE, &r);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(r.code, NEURONMEM_STATUS_OK) << "expected an error for:\n" << text;
  return r;
}

neuronmem_manifest_value_t Arg(const neuronmem_manifest_t* m, size_t i) {
  neuronmem_manifest_value_t v{};
  v.struct_size = sizeof v;
  EXPECT_OK(neuronmem_manifest_argument(m, i, &v));
  return v;
}
neuronmem_manifest_value_t Res(const neuronmem_manifest_t* m, size_t i) {
  neuronmem_manifest_value_t v{};
  v.struct_size = sizeof v;
  EXPECT_OK(neuronmem_manifest_result(m, i, &v));
  return v;
}

TEST(Manifest, DecodeStepUsesEverySpelling) {
  neuronmem_manifest_t* m = nullptr;
  ASSERT_OK(neuronmem_manifest_load_file(DataFile("decode_step.mlir").c_str(), nullptr, &m));
  neuronmem_string_t module, entry;
  ASSERT_OK(neuronmem_manifest_entry(m, &module, &entry));
  EXPECT_EQ(S(module), "jit_decode_step");
  EXPECT_EQ(S(entry), "main");
  neuronmem_manifest_counts_t c{};
  c.struct_size = sizeof c;
  ASSERT_OK(neuronmem_manifest_counts(m, &c));
  EXPECT_EQ(c.num_arguments, 4u);
  EXPECT_EQ(c.num_results, 3u);
  EXPECT_EQ(c.num_moves, 3u);
  EXPECT_EQ(c.num_host_compute, 1u);
  EXPECT_EQ(c.num_kernels, 1u);
  EXPECT_EQ(c.num_channels, 2u);

  auto a0 = Arg(m, 0);
  EXPECT_EQ(a0.memory_kind, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  EXPECT_EQ(a0.kind_explicit, 1);
  EXPECT_EQ(S(a0.name), "arg0");
  EXPECT_EQ(S(a0.element_type), "i32");
  EXPECT_EQ(a0.buffer_element_type, NEURONMEM_ELEMENT_TYPE_S32);
  ASSERT_EQ(a0.num_dims, 2u);
  EXPECT_EQ(a0.dims[0], 8);
  EXPECT_EQ(a0.dims[1], 16);
  EXPECT_EQ(a0.line, 4u);
  ASSERT_EQ(a0.num_attributes, 1u);
  neuronmem_string_t k, v;
  ASSERT_OK(neuronmem_manifest_value_attribute(m, 0, 0, 0, &k, &v));
  EXPECT_EQ(S(k), "mhlo.sharding");
  EXPECT_EQ(S(v), "{replicated}");
  auto a2 = Arg(m, 2);
  EXPECT_EQ(a2.memory_kind, NEURONMEM_MEMORY_KIND_DEVICE);  // absent = device
  EXPECT_EQ(a2.kind_explicit, 0);
  EXPECT_EQ(a2.aliasing_output, 0);
  EXPECT_EQ(a2.buffer_donor, 1);
  EXPECT_EQ(S(a2.element_type), "bf16");
  EXPECT_EQ(Arg(m, 3).aliasing_output, -1);

  auto r0 = Res(m, 0);
  EXPECT_EQ(S(r0.name), "hidden");
  EXPECT_EQ(r0.memory_kind, NEURONMEM_MEMORY_KIND_DEVICE);
  auto r1 = Res(m, 1);
  EXPECT_EQ(S(r1.name), "offloaded");
  EXPECT_EQ(r1.memory_kind, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  EXPECT_EQ(Res(m, 2).memory_kind, NEURONMEM_MEMORY_KIND_DEVICE);  // unannotated, policy device

  const struct {
    const char* spelling;
    const char* value;
    const char* from;
    const char* to;
  } moves[] = {{"annotate_device_placement", "%arg1", "pinned_host", "device"},
               {"MoveToHost", "%1", "device", "pinned_host"},
               {"AwsNeuronMemoryPlacement", "%0", "device", "unpinned_host"}};
  for (size_t i = 0; i < 3; ++i) {
    neuronmem_manifest_move_t mv{};
    mv.struct_size = sizeof mv;
    ASSERT_OK(neuronmem_manifest_move(m, i, &mv));
    EXPECT_EQ(S(mv.spelling), moves[i].spelling);
    EXPECT_EQ(S(mv.value), moves[i].value);
    EXPECT_EQ(S(mv.from_kind), moves[i].from);
    EXPECT_EQ(S(mv.to_kind), moves[i].to);
    EXPECT_EQ(S(mv.function), "main");
    EXPECT_GT(mv.line, 9u);
  }
  neuronmem_string_t op, fn;
  uint32_t line, col;
  ASSERT_OK(neuronmem_manifest_host_compute(m, 0, &op, &fn, &line, &col));
  EXPECT_EQ(S(op), "func.call");
  EXPECT_EQ(line, 16u);

  neuronmem_manifest_kernel_t kern{};
  kern.struct_size = sizeof kern;
  ASSERT_OK(neuronmem_manifest_kernel(m, 0, &kern));
  EXPECT_EQ(S(kern.func_name), "nki_tensor_add");
  ASSERT_EQ(kern.grid_rank, 2u);
  EXPECT_EQ(kern.grid[0], 2);
  EXPECT_EQ(kern.num_input_names, 2u);
  EXPECT_EQ(kern.num_operands, 2u);
  neuronmem_string_t name;
  ASSERT_OK(neuronmem_manifest_kernel_io_name(m, 0, 1, 0, &name));
  EXPECT_EQ(S(name), "c_output");

  bool saw_quoted = false;
  for (size_t i = 0; i < c.num_custom_call_targets; ++i) {
    neuronmem_string_t t;
    uint64_t n;
    ASSERT_OK(neuronmem_manifest_custom_call_target(m, i, &t, &n));
    if (S(t) == "my-target.v2") saw_quoted = true;
    EXPECT_GE(n, 1u);
  }
  EXPECT_TRUE(saw_quoted);

  neuronmem_manifest_channel_t ch{};
  ch.struct_size = sizeof ch;
  ASSERT_OK(neuronmem_manifest_channel(m, 0, &ch));
  EXPECT_EQ(S(ch.op), "send");
  EXPECT_EQ(ch.handle, 1);
  EXPECT_EQ(ch.type, 1);
  EXPECT_EQ(ch.is_host_transfer, 0);
  ASSERT_EQ(ch.num_pairs, 2u);
  EXPECT_EQ(ch.source_target_pairs[0], 0);
  EXPECT_EQ(ch.source_target_pairs[1], 1);
  EXPECT_EQ(ch.num_payloads, 1u);
  ASSERT_OK(neuronmem_manifest_channel(m, 1, &ch));
  EXPECT_EQ(S(ch.op), "recv");
  EXPECT_EQ(ch.num_payloads, 1u);
  EXPECT_EQ(Take(neuronmem_manifest_channel(m, 2, &ch)).code, NEURONMEM_STATUS_OUT_OF_RANGE);
  neuronmem_manifest_destroy(m);
}

TEST(Manifest, JsonRoundTripIsLossless) {
  neuronmem_manifest_t* m = nullptr;
  ASSERT_OK(neuronmem_manifest_load_file(DataFile("decode_step.mlir").c_str(), nullptr, &m));
  neuronmem_string_t json;
  ASSERT_OK(neuronmem_manifest_to_json(m, &json));
  const std::string first = S(json);
  EXPECT_NE(first.find("\"schema_version\": 1"), std::string::npos);
  neuronmem_manifest_t* back = nullptr;
  ASSERT_OK(neuronmem_manifest_load_json(first.data(), first.size(), &back));
  neuronmem_string_t json2;
  ASSERT_OK(neuronmem_manifest_to_json(back, &json2));
  EXPECT_EQ(S(json2), first);
  EXPECT_EQ(Arg(back, 0).memory_kind, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  neuronmem_manifest_destroy(back);
  // Wrong schema version and a malformed document are rejected.
  std::string wrong = first;
  wrong.replace(wrong.find("\"schema_version\": 1"), 19, "\"schema_version\": 9");
  Result r = Take(neuronmem_manifest_load_json(wrong.data(), wrong.size(), &back));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("schema_version 9"), std::string::npos) << r.message;
  r = Take(neuronmem_manifest_load_json("{\"schema_version\": 1}", 21, &back));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_manifest_load_json("[1,", 3, &back)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  // Regression (issue 13): a document the writer never produces is rejected, not half-read.
  std::string null_args = first;
  const size_t at = null_args.find("\"arguments\": [");
  ASSERT_NE(at, std::string::npos);
  null_args.replace(at, 14, "\"arguments\": null, \"unused\": [");
  r = Take(neuronmem_manifest_load_json(null_args.data(), null_args.size(), &back));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("arguments: must be an array, found null"), std::string::npos) << r.message;
  EXPECT_EQ(back, nullptr);
  neuronmem_manifest_destroy(m);
}

TEST(Manifest, JsonFormIsBuiltOnceEvenFromManyThreads) {
  // The JSON form is built lazily on the first to_json call; concurrent first calls must all get the one
  // string (same pointer), and later calls too (also run under ThreadSanitizer: suite 'concurrency').
  neuronmem_manifest_t* m = nullptr;
  ASSERT_OK(neuronmem_manifest_load_file(DataFile("decode_step.mlir").c_str(), nullptr, &m));
  constexpr int kThreads = 4;
  neuronmem_string_t got[kThreads] = {};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([m, &got, i] { EXPECT_OK(neuronmem_manifest_to_json(m, &got[i])); });
  }
  for (auto& t : threads) t.join();
  ASSERT_NE(got[0].data, nullptr);
  EXPECT_GT(got[0].size, 100u);
  for (int i = 1; i < kThreads; ++i) {
    EXPECT_EQ(got[i].data, got[0].data);
    EXPECT_EQ(got[i].size, got[0].size);
  }
  neuronmem_string_t again{};
  ASSERT_OK(neuronmem_manifest_to_json(m, &again));
  EXPECT_EQ(again.data, got[0].data);
  neuronmem_manifest_destroy(m);
}

TEST(Manifest, EveryConformanceFileHasAManifest) {
  // The folder comes from the environment (meson sets it; tests/meson.build), so a run can point it elsewhere.
  const char* dir = std::getenv("NEURONMEM_CONFORMANCE_DIR");
  ASSERT_NE(dir, nullptr) << "meson passes NEURONMEM_CONFORMANCE_DIR";
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << "the conformance folder " << dir << " is absent (it is ../shared/conformance/stablehlo-testdata)";
  }
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".mlir") continue;
    neuronmem_manifest_t* m = nullptr;
    Result r = Take(neuronmem_manifest_load_file(e.path().c_str(), nullptr, &m));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_OK) << e.path() << ": " << r.message;
    neuronmem_manifest_counts_t c{};
    c.struct_size = sizeof c;
    if (m) {
      ASSERT_OK(neuronmem_manifest_counts(m, &c));
      EXPECT_EQ(c.num_arguments, 0u);  // the interpreter tests take no arguments
      EXPECT_GE(c.num_results, 1u);
      EXPECT_GE(c.num_custom_call_targets, 1u);  // @check.expect_*
    }
    neuronmem_manifest_destroy(m);
    ++n;
  }
  EXPECT_GE(n, 37u);
}

TEST(Manifest, UnannotatedPolicies) {
  const std::string text = R"(
func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %b: tensor<4xf32>) -> (tensor<4xf32>,
    tensor<4xf32> {mhlo.memory_kind = "device"}) {
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
)";
  neuronmem_manifest_t* m = Load(text, NEURONMEM_PLACEMENT_POLICY_DEVICE);
  EXPECT_EQ(Res(m, 0).memory_kind, NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_manifest_destroy(m);
  m = Load(text, NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX);
  EXPECT_EQ(Res(m, 0).memory_kind, NEURONMEM_MEMORY_KIND_UNPINNED_HOST);  // a host input sends outputs to host
  EXPECT_EQ(Res(m, 1).memory_kind, NEURONMEM_MEMORY_KIND_DEVICE);         // explicit kinds win
  neuronmem_manifest_destroy(m);
  const std::string all_device = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
})";
  m = Load(all_device, NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX);
  EXPECT_EQ(Res(m, 0).memory_kind, NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_manifest_destroy(m);
}

TEST(Manifest, ValidationErrorsCarryLocations) {
  Result r = LoadError(R"(func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = "hbm"}) -> tensor<4xf32> {
  return %a : tensor<4xf32>
})");
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("graph.mlir:1:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("unknown memory kind \"hbm\""), std::string::npos) << r.message;

  r = LoadError(R"(func.func @main(%a: tuple<tensor<4xf32>> {mhlo.memory_kind = "pinned_host"}) -> () {
  return
})");
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(r.message.find("tuple"), std::string::npos) << r.message;

  r = LoadError(R"(func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> () {
  %0 = stablehlo.custom_call @annotate_device_placement(%a,
      %b) {mhlo.frontend_attributes = {_xla_buffer_placement = "pinned_host"}} : (tensor<4xf32>,
          tensor<4xf32>) -> tensor<4xf32>
  return
})");
  EXPECT_NE(r.message.find("graph.mlir:2:3"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("exactly one operand"), std::string::npos) << r.message;

  r = LoadError(R"(func.func @main(%a: tensor<4xf32>) -> () {
  %0 = stablehlo.custom_call @annotate_device_placement(%a) {mhlo.frontend_attributes = {_xla_buffer_placement =
      "sram"}} : (tensor<4xf32>) -> tensor<4xf32>
  return
})");
  EXPECT_NE(r.message.find("unknown _xla_buffer_placement \"sram\""), std::string::npos) << r.message;

  r = LoadError(R"(func.func @main(%a: tensor<4xf32>) -> () {
  %0 = stablehlo.custom_call @AwsNeuronMemoryPlacement(%a) {backend_config = "vmem"} : (tensor<4xf32>) -> tensor<4xf32>
  return
})");
  EXPECT_NE(r.message.find("AwsNeuronMemoryPlacement needs backend_config"), std::string::npos) << r.message;

  const char* send_template = R"(func.func @main(%a: tensor<4xf32>, %t: !stablehlo.token) -> () {
  %0 = "stablehlo.send"(%a, %t) {source_target_pairs = dense<PAIRS> : tensor<NPx2xi64>, is_host_transfer = HOST,
      channel_handle = #stablehlo.channel_handle<handle = 5, type = TYPE>}
      : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
  return
})";
  auto send = [&](const char* type, const char* host, const char* pairs, const char* np) {
    std::string s = send_template;
    s.replace(s.find("TYPE"), 4, type);
    s.replace(s.find("HOST"), 4, host);
    s.replace(s.find("PAIRS"), 5, pairs);
    s.replace(s.find("NP"), 2, np);
    return s;
  };
  r = LoadError(send("1", "false", "[[0, 1], [0, 0]]", "2"));
  EXPECT_NE(r.message.find("repeats source 0"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("graph.mlir:2:"), std::string::npos) << r.message;
  r = LoadError(send("1", "false", "[[0, 1], [1, 1]]", "2"));
  EXPECT_NE(r.message.find("repeats target 1"), std::string::npos) << r.message;
  r = LoadError(send("1", "false", "[[0, 7]]", "1"));
  EXPECT_NE(r.message.find("core 7"), std::string::npos) << r.message;
  r = LoadError(send("1", "true", "[[0, 1]]", "1"));
  EXPECT_NE(r.message.find("cannot be a host transfer"), std::string::npos) << r.message;
  r = LoadError(send("3", "true", "[[0, 1]]", "1"));
  EXPECT_NE(r.message.find("host-to-device channel (type 3) must be a recv"), std::string::npos) << r.message;
  neuronmem_manifest_t* ok = Load(send("2", "true", "[[0, 1]]", "1"));
  EXPECT_NE(ok, nullptr);
  neuronmem_manifest_destroy(ok);

  r = LoadError("func.func @other() -> () {\n  return\n}\n");
  EXPECT_EQ(r.code, NEURONMEM_STATUS_NOT_FOUND);
  r = LoadError("func.func @main(%a: tensor<4xf32>) -> () {\n  %0 = stablehlo.add %a, %a : tensor<4xf32>\n");
  EXPECT_NE(r.message.find("graph.mlir:1:"), std::string::npos) << r.message;  // syntax error surfaces too
}

TEST(Manifest, EntryByNameAndBadOptions) {
  const std::string text =
      "func.func @step(%a: tensor<2xi32> {mhlo.memory_kind = \"unpinned_host\"}) -> () {\n  return\n}\n";
  neuronmem_manifest_options_t o{};
  o.struct_size = sizeof o;
  o.entry = "step";
  neuronmem_manifest_t* m = nullptr;
  ASSERT_OK(neuronmem_manifest_load_text(text.data(), text.size(), &o, &m));
  EXPECT_EQ(Arg(m, 0).memory_kind, NEURONMEM_MEMORY_KIND_UNPINNED_HOST);
  neuronmem_manifest_destroy(m);
  o.struct_size = 4;
  EXPECT_EQ(Take(neuronmem_manifest_load_text(text.data(), text.size(), &o, &m)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  o.struct_size = sizeof o;
  o.num_cores = 65;  // a client has at most 64 cores
  Result cores = Take(neuronmem_manifest_load_text(text.data(), text.size(), &o, &m));
  EXPECT_EQ(cores.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(cores.message.find("num_cores is 65"), std::string::npos) << cores.message;
  o.num_cores = 0;  // the default
  o.policy = static_cast<neuronmem_placement_policy_t>(9);
  EXPECT_EQ(Take(neuronmem_manifest_load_text(text.data(), text.size(), &o, &m)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_manifest_load_text(text.data(), text.size(), nullptr, nullptr)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_manifest_load_file("/nonexistent.mlir", nullptr, &m)).code, NEURONMEM_STATUS_NOT_FOUND);
  neuronmem_manifest_destroy(nullptr);
}

// Issue 12 item 7: a module without @main. The error names the public functions and how to choose one;
// neuronmem_manifest_list_entries lists them (every module, source order, each once, private ones left out).
TEST(Manifest, WithoutMainTheErrorListsTheEntriesAndTheyCanBeListed) {
  const std::string text = R"(module @m {
  func.func @prefill(%a: tensor<2xf32>) -> tensor<2xf32> {
    return %a : tensor<2xf32>
  }
  func.func private @helper(%a: tensor<2xf32>) -> tensor<2xf32> {
    return %a : tensor<2xf32>
  }
  "func.func"() <{function_type = (tensor<2xi32>) -> (), sym_name = "decode"}> ({
  ^bb0(%arg0: tensor<2xi32>):
    "func.return"() : () -> ()
  }) : () -> ()
}
// -----
func.func public @prefill(%a: tensor<3xf32>) -> tensor<3xf32> {
  return %a : tensor<3xf32>
}
func.func @score(%a: tensor<3xf32>) -> tensor<3xf32> {
  return %a : tensor<3xf32>
}
)";
  Result r = LoadError(text);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_NOT_FOUND);
  EXPECT_NE(r.message.find("no function @main"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("its public functions are @prefill, @decode, @score;"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("neuronmem_manifest_options_t.entry"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("--entry NAME"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("helper"), std::string::npos) << r.message;

  std::vector<std::string> names;
  auto add = [](neuronmem_string_t name, void* user) {
    static_cast<std::vector<std::string>*>(user)->push_back(S(name));
  };
  ASSERT_OK(neuronmem_manifest_list_entries(text.data(), text.size(), "graph.mlir", add, &names));
  EXPECT_EQ(names, (std::vector<std::string>{"prefill", "decode", "score"}));

  // Each listed name is an entry; the first module that defines it is the one used.
  for (const std::string& name : names) {
    neuronmem_manifest_options_t o{};
    o.struct_size = sizeof o;
    o.entry = name.c_str();
    neuronmem_manifest_t* m = nullptr;
    ASSERT_OK(neuronmem_manifest_load_text(text.data(), text.size(), &o, &m));
    if (name == "prefill") {
      EXPECT_EQ(Arg(m, 0).dims[0], 2);
    }
    neuronmem_manifest_destroy(m);
  }

  names.clear();
  const std::string bad = "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2x>\n}\n";
  Result parse = Take(neuronmem_manifest_list_entries(bad.data(), bad.size(), "bad.mlir", add, &names));
  EXPECT_EQ(parse.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(parse.message.rfind("bad.mlir:2:", 0), 0u) << parse.message;
  EXPECT_TRUE(names.empty());
  EXPECT_EQ(Take(neuronmem_manifest_list_entries(text.data(), text.size(), nullptr, nullptr, nullptr)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  const std::string none = "func.func private @f() {\n  return\n}\n";
  Result empty = LoadError(none);
  EXPECT_NE(empty.message.find("it has no public function to use as the entry"), std::string::npos) << empty.message;
  ASSERT_OK(neuronmem_manifest_list_entries(none.data(), none.size(), nullptr, add, &names));
  EXPECT_TRUE(names.empty());
}

// Issue 12 item 3: the warnings of a load (an op of an unknown dialect skipped) through the C API; a counts
// struct of the first published size still works (num_warnings is left alone).
TEST(Manifest, WarningsOfSkippedOps) {
  neuronmem_manifest_t* m = Load(R"(func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = acme.pack %a into {1, 2} : tensor<2xf32>
  return %0 : tensor<2xf32>
}
)");
  ASSERT_NE(m, nullptr);
  neuronmem_manifest_counts_t c{};
  c.struct_size = sizeof c;
  ASSERT_OK(neuronmem_manifest_counts(m, &c));
  ASSERT_EQ(c.num_warnings, 1u);
  neuronmem_string_t w{};
  ASSERT_OK(neuronmem_manifest_warning(m, 0, &w));
  EXPECT_EQ(S(w).rfind("graph.mlir:2:3: skipped 'acme.pack'", 0), 0u) << S(w);
  EXPECT_EQ(Take(neuronmem_manifest_warning(m, 1, &w)).code, NEURONMEM_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(Take(neuronmem_manifest_warning(m, 0, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_manifest_counts_t old{};
  old.struct_size = offsetof(neuronmem_manifest_counts_t, num_warnings);
  old.num_warnings = 77;
  ASSERT_OK(neuronmem_manifest_counts(m, &old));
  EXPECT_EQ(old.num_channels, 0u);
  EXPECT_EQ(old.num_warnings, 77u);
  neuronmem_manifest_destroy(m);
}

// Regression (issue 13 item 1): 20,000 nested modules crashed the loader with a stack overflow.
TEST(Manifest, DeeplyNestedModulesAreAnErrorNotACrash) {
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += "module {";
  Result r = LoadError(deep);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("graph.mlir:1:"), std::string::npos) << r.message.substr(0, 200);
  EXPECT_NE(r.message.find("nesting deeper than 256 levels"), std::string::npos) << r.message.substr(0, 200);
}

class UploadPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    neuronmem_client_options_t o{};
    o.struct_size = sizeof o;
    o.num_cores = 2;
    o.device_bytes_per_core = 16u << 20;
    o.pinned_host_bytes = 32u << 20;
    ASSERT_OK(neuronmem_client_create(&o, &client_));
    ASSERT_OK(neuronmem_manifest_load_file(DataFile("decode_step.mlir").c_str(), nullptr, &m_));
  }
  void TearDown() override {
    neuronmem_manifest_destroy(m_);
    EXPECT_OK(neuronmem_client_destroy(client_));
  }
  neuronmem_client_t* client_ = nullptr;
  neuronmem_manifest_t* m_ = nullptr;
};

TEST_F(UploadPlan, EveryBufferLandsInTheManifestsKindZeroCopyWherePinned) {
  for (int32_t core = 0; core < 2; ++core) {
    neuronmem_device_t* dev = nullptr;
    ASSERT_OK(neuronmem_client_lookup_device(client_, core, &dev));
    // Argument 0 (block table) is written straight into the pinned arena; the others are ordinary memory.
    void* table = nullptr;
    ASSERT_OK(neuronmem_client_host_allocate(client_, 8 * 16 * 4, 0, &table));
    for (int i = 0; i < 8 * 16; ++i) static_cast<int32_t*>(table)[i] = i + core;
    std::vector<int32_t> lens(8, 5);
    std::vector<uint16_t> hidden(8 * 128, 0x3F80);
    std::vector<float> state(8 * 128, 2.5f);
    const void* data[4] = {table, lens.data(), hidden.data(), state.data()};
    neuronmem_buffer_t* bufs[4] = {};
    neuronmem_event_t* ready = nullptr;
    ASSERT_OK(Upload(m_, dev, data, 4, NEURONMEM_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES, bufs, &ready));
    ASSERT_OK(neuronmem_event_wait(ready, -1));
    neuronmem_event_destroy(ready);
    for (size_t i = 0; i < 4; ++i) {
      neuronmem_memory_t* expected = nullptr;
      ASSERT_OK(neuronmem_manifest_argument_memory(m_, dev, i, &expected));
      neuronmem_memory_t* got = nullptr;
      ASSERT_OK(neuronmem_buffer_memory(bufs[i], &got));
      EXPECT_EQ(got, expected) << i;
      neuronmem_memory_kind_t kind;
      ASSERT_OK(neuronmem_memory_kind(got, &kind));
      EXPECT_EQ(static_cast<uint32_t>(kind), Arg(m_, i).memory_kind) << i;
      neuronmem_device_t* owner = nullptr;
      ASSERT_OK(neuronmem_buffer_device(bufs[i], &owner));
      EXPECT_EQ(owner, dev);
    }
    bool zc = false;
    ASSERT_OK(neuronmem_buffer_is_zero_copy(bufs[0], &zc));
    EXPECT_TRUE(zc) << "the block table lies in the pinned arena: no bytes move";
    ASSERT_OK(neuronmem_buffer_is_zero_copy(bufs[1], &zc));
    EXPECT_FALSE(zc) << "seq_lens is pinned_host but lives in ordinary memory: copied";
    std::vector<float> back(8 * 128);
    ASSERT_OK(neuronmem_test::Read(bufs[3], 0, back.data(), back.size() * 4, nullptr, 0, nullptr));
    EXPECT_EQ(back, state);
    int32_t row[16];
    ASSERT_OK(neuronmem_test::Read(bufs[0], 64, row, 64, nullptr, 0, nullptr));
    EXPECT_EQ(row[0], 16 + core);
    // Results live where the manifest says.
    neuronmem_memory_t* r1 = nullptr;
    ASSERT_OK(neuronmem_manifest_result_memory(m_, dev, 1, &r1));
    neuronmem_memory_kind_t rk;
    ASSERT_OK(neuronmem_memory_kind(r1, &rk));
    EXPECT_EQ(rk, NEURONMEM_MEMORY_KIND_PINNED_HOST);
    for (auto* b : bufs) neuronmem_buffer_destroy(b);
    EXPECT_OK(neuronmem_client_host_free(client_, table));
  }
}

TEST_F(UploadPlan, WrongArgumentCountOrNullDataFailsAndCreatesNothing) {
  neuronmem_device_t* dev = nullptr;
  ASSERT_OK(neuronmem_client_lookup_device(client_, 0, &dev));
  neuronmem_buffer_t* bufs[4] = {};
  const void* data[4] = {nullptr, nullptr, nullptr, nullptr};
  const auto copy = NEURONMEM_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL;
  // A wrong count is found before any slot is written: the caller's array may be that short.
  neuronmem_buffer_t* sentinel = reinterpret_cast<neuronmem_buffer_t*>(&dev);
  neuronmem_buffer_t* short_bufs[2] = {sentinel, sentinel};
  Result r = Take(Upload(m_, dev, data, 2, copy, short_bufs, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("takes 4 arguments, 2 were given"), std::string::npos) << r.message;
  EXPECT_EQ(short_bufs[0], sentinel);
  EXPECT_EQ(short_bufs[1], sentinel);
  r = Take(Upload(m_, dev, data, 3, copy, bufs, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("takes 4 arguments, 3 were given"), std::string::npos) << r.message;
  r = Take(Upload(m_, dev, data, 4, copy, bufs, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  r = Take(Upload(m_, dev, data, 4, static_cast<neuronmem_host_buffer_semantics_t>(9), bufs, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("host_buffer_semantics 9"), std::string::npos) << r.message;
  neuronmem_manifest_upload_args_t small{};
  small.struct_size = NEURONMEM_MANIFEST_UPLOAD_ARGS_STRUCT_SIZE - 1;
  r = Take(neuronmem_manifest_upload_arguments(&small, bufs, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("struct_size"), std::string::npos) << r.message;
  for (auto* b : bufs) EXPECT_EQ(b, nullptr);
  neuronmem_memory_t* mem = nullptr;
  EXPECT_EQ(Take(neuronmem_manifest_argument_memory(m_, dev, 9, &mem)).code, NEURONMEM_STATUS_OUT_OF_RANGE);
}

}  // namespace
