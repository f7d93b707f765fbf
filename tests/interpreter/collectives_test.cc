// The ops that see the process grid, run as the processes of a ProcessGrid: replica_id, partition_id and
// the collectives (process groups in every mode of the spec), and the reference interpreter's
// interpreter.run_parallel / probe / check.expect_serialized_eq.
#include <gtest/gtest.h>

#include "grid_util.h"

namespace neuronmem::interp {
namespace {

using testing::Arg;
using testing::CountingTransport;
using testing::GridResult;
using testing::RunGrid;

Arg I64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Arg::Of(ElementType::kS64, {n}, v);
}

void ExpectOk(const GridResult& r) {
  ASSERT_FALSE(r.status.empty());
  for (size_t k = 0; k < r.status.size(); ++k) ASSERT_FALSE(r.status[k]) << "process " << k << ": " << r.Message(k);
}

std::string AllReduce(const std::string& groups, const std::string& extra, const std::string& body_op = "add") {
  return "func.func @main(%x: tensor<4xi64>) -> tensor<4xi64> {\n"
         "  %r = \"stablehlo.all_reduce\"(%x) ({\n"
         "    ^bb0(%a: tensor<i64>, %b: tensor<i64>):\n"
         "      %s = stablehlo." +
         body_op +
         " %a, %b : tensor<i64>\n"
         "      stablehlo.return %s : tensor<i64>\n"
         "  }) {replica_groups = " +
         groups + extra +
         "} : (tensor<4xi64>) -> tensor<4xi64>\n"
         "  func.return %r : tensor<4xi64>\n}\n";
}

std::vector<std::string> Main(size_t n) { return std::vector<std::string>(n, "main"); }

TEST(Collectives, ReplicaAndPartitionIdsAnswerPerProcess) {
  const std::string t =
      "func.func @main() -> (tensor<ui32>, tensor<ui32>) {\n"
      "  %r = stablehlo.replica_id : tensor<ui32>\n"
      "  %p = stablehlo.partition_id : tensor<ui32>\n"
      "  func.return %r, %p : tensor<ui32>, tensor<ui32>\n}\n";
  GridResult r = RunGrid(t, 2, 3, Main(6));
  ExpectOk(r);
  for (uint32_t k = 0; k < 6; ++k) {
    EXPECT_EQ(r.Get<uint32_t>(k, 0), std::vector<uint32_t>{k / 3});
    EXPECT_EQ(r.Get<uint32_t>(k, 1), std::vector<uint32_t>{k % 3});
  }
  // Without a grid, a run is process (0, 0).
  auto solo = testing::RunText(t);
  ASSERT_FALSE(solo.status) << solo.status->message;
  EXPECT_EQ(solo.Get<uint32_t>(0), std::vector<uint32_t>{0});
}

TEST(Collectives, AllReduceCrossReplicaSumsEachGroup) {
  GridResult r = RunGrid(AllReduce("dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>", ""), 4, 1, Main(4),
                         {{I64({1, 2, 3, 4})}, {I64({10, 20, 30, 40})}, {I64({5, 5, 5, 5})}, {I64({1, 1, 1, 1})}});
  ExpectOk(r);
  EXPECT_EQ(r.Get<int64_t>(0, 0), (std::vector<int64_t>{11, 22, 33, 44}));
  EXPECT_EQ(r.Get<int64_t>(1, 0), (std::vector<int64_t>{11, 22, 33, 44}));
  EXPECT_EQ(r.Get<int64_t>(2, 0), (std::vector<int64_t>{6, 6, 6, 6}));
  EXPECT_EQ(r.Get<int64_t>(3, 0), (std::vector<int64_t>{6, 6, 6, 6}));
}

TEST(Collectives, AllReduceFoldsInGroupOrder) {
  // subtract is not commutative: group [1, 0] computes x1 - x0 on both members.
  GridResult r = RunGrid(AllReduce("dense<[[1, 0]]> : tensor<1x2xi64>", "", "subtract"), 2, 1, Main(2),
                         {{I64({1, 2, 3, 4})}, {I64({10, 20, 30, 40})}});
  ExpectOk(r);
  EXPECT_EQ(r.Get<int64_t>(0, 0), (std::vector<int64_t>{9, 18, 27, 36}));
  EXPECT_EQ(r.Get<int64_t>(1, 0), (std::vector<int64_t>{9, 18, 27, 36}));
}

TEST(Collectives, AllReduceModesFollowChannelAndGlobalIds) {
  // 2 replicas x 2 partitions, process k holds [k, k, k, k].
  std::vector<std::vector<Arg>> args;
  for (int64_t k = 0; k < 4; ++k) args.push_back({I64({k, k, k, k})});
  // channel 0: cross_replica: groups {(0,p), (1,p)} per partition p: processes 0+2 and 1+3.
  GridResult cr = RunGrid(AllReduce("dense<[[0, 1]]> : tensor<1x2xi64>", ""), 2, 2, Main(4), args);
  ExpectOk(cr);
  EXPECT_EQ(cr.Get<int64_t>(0, 0)[0], 2);
  EXPECT_EQ(cr.Get<int64_t>(1, 0)[0], 4);
  // channel > 0: cross_replica_and_partition: replicas 0 and 1 of every partition in one group.
  GridResult crp = RunGrid(AllReduce("dense<[[0, 1]]> : tensor<1x2xi64>",
                                     ", channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"),
                           2, 2, Main(4), args);
  ExpectOk(crp);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(crp.Get<int64_t>(k, 0)[0], 6);
  // use_global_device_ids: flattened ids [[0, 3], [1, 2]].
  GridResult fl = RunGrid(AllReduce("dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>",
                                    ", channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
                                    "use_global_device_ids"),
                          2, 2, Main(4), args);
  ExpectOk(fl);
  EXPECT_EQ(fl.Get<int64_t>(0, 0)[0], 3);
  EXPECT_EQ(fl.Get<int64_t>(1, 0)[0], 3);
  EXPECT_EQ(fl.Get<int64_t>(3, 0)[0], 3);
  // No group at all: every replica in one group (XLA's convention).
  GridResult all = RunGrid(AllReduce("dense<> : tensor<0x0xi64>", ""), 3, 1, Main(3),
                           {{I64({1, 0, 0, 0})}, {I64({2, 0, 0, 0})}, {I64({4, 0, 0, 0})}});
  ExpectOk(all);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(all.Get<int64_t>(k, 0)[0], 7);
}

TEST(Collectives, AllReduceVariadicAndPromoted) {
  const std::string t =
      "func.func @main(%x: tensor<2xi8>, %y: tensor<3xf32>) -> (tensor<2xi32>, tensor<3xf32>) {\n"
      "  %r:2 = \"stablehlo.all_reduce\"(%x, %y) ({\n"
      "    ^bb0(%a: tensor<i32>, %b: tensor<i32>):\n"
      "      %s = stablehlo.add %a, %b : tensor<i32>\n"
      "      stablehlo.return %s : tensor<i32>\n"
      "  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi8>, tensor<3xf32>) -> "
      "(tensor<2xi32>, tensor<3xf32>)\n"
      "  func.return %r#0, %r#1 : tensor<2xi32>, tensor<3xf32>\n}\n";
  // The computation takes i32 scalars: the f32 operand does not match it.
  GridResult bad = RunGrid(t, 2, 1, Main(2));
  ASSERT_EQ(bad.status.size(), 1u);
  EXPECT_NE(bad.Message(0).find("region argument 0 must be a tensor<f32>"), std::string::npos) << bad.Message(0);

  const std::string ok =
      "func.func @main(%x: tensor<2xi8>, %y: tensor<3xi32>) -> (tensor<2xi32>, tensor<3xi32>) {\n"
      "  %r:2 = \"stablehlo.all_reduce\"(%x, %y) ({\n"
      "    ^bb0(%a: tensor<i32>, %b: tensor<i32>):\n"
      "      %s = stablehlo.add %a, %b : tensor<i32>\n"
      "      stablehlo.return %s : tensor<i32>\n"
      "  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi8>, tensor<3xi32>) -> "
      "(tensor<2xi32>, tensor<3xi32>)\n"
      "  func.return %r#0, %r#1 : tensor<2xi32>, tensor<3xi32>\n}\n";
  GridResult r = RunGrid(
      ok, 2, 1, Main(2),
      {{Arg::Of<int8_t>(ElementType::kS8, {2}, {100, 100}), Arg::Of<int32_t>(ElementType::kS32, {3}, {1, 2, 3})},
       {Arg::Of<int8_t>(ElementType::kS8, {2}, {100, -100}), Arg::Of<int32_t>(ElementType::kS32, {3}, {10, 20, 30})}});
  ExpectOk(r);
  // Promoted to i32 before summing: 200 does not wrap as it would in i8.
  EXPECT_EQ(r.Get<int32_t>(0, 0), (std::vector<int32_t>{200, 0}));
  EXPECT_EQ(r.Get<int32_t>(1, 1), (std::vector<int32_t>{11, 22, 33}));
}

TEST(Collectives, AllReduceMovesPeerBytesThroughTheTransport) {
  CountingTransport t;
  GridResult r = RunGrid(AllReduce("dense<[[0, 1, 2]]> : tensor<1x3xi64>", ""), 3, 1, Main(3),
                         {{I64({1, 1, 1, 1})}, {I64({2, 2, 2, 2})}, {I64({3, 3, 3, 3})}}, &t);
  ExpectOk(r);
  EXPECT_EQ(r.Get<int64_t>(2, 0), (std::vector<int64_t>{6, 6, 6, 6}));
  // Every process reads the two others' 32 bytes; its own stay local.
  EXPECT_EQ(t.copies.load(), 6u);
  for (uint32_t a = 0; a < 3; ++a)
    for (uint32_t b = 0; b < 3; ++b) EXPECT_EQ((t.bytes[{a, b}]), a == b ? 0u : 32u);
}

TEST(Collectives, AllReduceOnOneProcessWithoutAGrid) {
  auto r = testing::RunText(
      "func.func @main() -> tensor<4xi64> {\n"
      "  %x = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi64>\n" +
      AllReduce("dense<[[0]]> : tensor<1x1xi64>", "").substr(AllReduce("", "").find("  %r =")));
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int64_t>(0), (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(Collectives, GroupErrorsNameTheOpAndTheProcess) {
  // Replica 2 of a grid of 2 does not exist.
  GridResult r = RunGrid(AllReduce("dense<[[0, 2]]> : tensor<1x2xi64>", ""), 2, 1, Main(2),
                         {{I64({1, 2, 3, 4})}, {I64({1, 2, 3, 4})}});
  ASSERT_TRUE(r.status[0]);
  EXPECT_NE(r.Message(0).find("test.mlir:2:3: 'stablehlo.all_reduce': replica_groups (cross_replica) names replica 2 "
                              "of a grid of 2 replicas x 1 partitions"),
            std::string::npos)
      << r.Message(0);
  // Process (1, 0) is in no group.
  GridResult none = RunGrid(AllReduce("dense<[[0]]> : tensor<1x1xi64>", ""), 2, 1, Main(2),
                            {{I64({1, 2, 3, 4})}, {I64({1, 2, 3, 4})}});
  EXPECT_FALSE(none.status[0]);
  EXPECT_NE(none.Message(1).find("process (1, 0) is in no group of replica_groups"), std::string::npos)
      << none.Message(1);
  // use_global_device_ids needs a channel (C5): a compile-time error.
  auto c = testing::CompileText(AllReduce("dense<[[0, 1]]> : tensor<1x2xi64>", ", use_global_device_ids"));
  ASSERT_TRUE(c.status);
  EXPECT_NE(c.status->message.find("use_global_device_ids needs a channel_handle"), std::string::npos);
  // A value named twice (C1).
  auto twice = testing::CompileText(AllReduce("dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>", ""));
  ASSERT_TRUE(twice.status);
  EXPECT_NE(twice.status->message.find("names a process twice"), std::string::npos);
}

TEST(Collectives, AllReduceAPeerNeverReachesFailsInsteadOfHanging) {
  const std::string t = AllReduce("dense<[[0, 1]]> : tensor<1x2xi64>", "") +
                        "func.func @other(%x: tensor<4xi64>) -> tensor<4xi64> {\n  func.return %x : tensor<4xi64>\n}\n";
  GridResult r = RunGrid(t, 2, 1, {"main", "other"}, {{I64({1, 2, 3, 4})}, {I64({1, 2, 3, 4})}});
  EXPECT_FALSE(r.status[1]);
  EXPECT_NE(r.Message(0).find("test.mlir:2:3: 'stablehlo.all_reduce' on channel 0: process (0, 0) waits for (1, 0) "
                              "of its group [(0, 0), (1, 0)]: (1, 0) finished without reaching it"),
            std::string::npos)
      << r.Message(0);
}

// ---- The reference interpreter's test ops ----------------------------------------------------------

testing::RunResult RunReference(const std::string& text) {
  testing::RunResult r;
  std::vector<stablehlo::Module> modules;
  r.status = stablehlo::ParseModules(text, "test.mlir", &modules);
  if (r.status) return r;
  CompileOptions o;
  o.filename = "test.mlir";
  o.source = text;
  o.reference_test_ops = true;
  std::unique_ptr<Program> p;
  r.status = Compile(modules[0], o, &p);
  if (r.status) return r;
  HostResultAllocator alloc;
  std::vector<TensorView> results;
  r.status = p->Run(nullptr, 0, &alloc, &results);
  return r;
}

const char* kRunParallel =
    "func.func @ids() -> (tensor<ui32>, tensor<ui32>) {\n"
    "  %r = stablehlo.replica_id : tensor<ui32>\n"
    "  %p = stablehlo.partition_id : tensor<ui32>\n"
    "  func.return %r, %p : tensor<ui32>, tensor<ui32>\n}\n"
    "func.func @main() {\n"
    "  %r:4 = \"interpreter.run_parallel\"() {programs = [[@ids], [@ids]]} : () -> (tensor<ui32>, tensor<ui32>, "
    "tensor<ui32>, tensor<ui32>)\n"
    "  check.expect_eq_const %r#2, dense<1> : tensor<ui32>\n"
    "  check.expect_eq_const %r#3, dense<EXPECTED> : tensor<ui32>\n"
    "  func.return\n}\n";

TEST(ReferenceOps, RunParallelRunsEachProgramAsAProcess) {
  std::string ok = kRunParallel;
  ok.replace(ok.find("EXPECTED"), 8, "0");
  auto r = RunReference(ok);
  ASSERT_FALSE(r.status) << r.status->message;
  std::string bad = kRunParallel;
  bad.replace(bad.find("EXPECTED"), 8, "1");
  auto f = RunReference(bad);
  ASSERT_TRUE(f.status);
  EXPECT_NE(f.status->message.find("test.mlir:9:3: 'check.expect_eq_const'"), std::string::npos) << f.status->message;
}

TEST(ReferenceOps, OnlyTheConformanceRunnerAcceptsThem) {
  std::string ok = kRunParallel;
  ok.replace(ok.find("EXPECTED"), 8, "0");
  auto c = testing::CompileText(ok);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(c.status->message.find("'interpreter.run_parallel': a test op of StableHLO's reference interpreter"),
            std::string::npos)
      << c.status->message;
}

TEST(ReferenceOps, RunParallelNamesTheFailingProcess) {
  auto r = RunReference(
      "func.func @ok() {\n  func.return\n}\n"
      "func.func @fails() {\n"
      "  %a = stablehlo.constant dense<1> : tensor<i32>\n"
      "  check.expect_eq_const %a, dense<2> : tensor<i32>\n"
      "  func.return\n}\n"
      "func.func @main() {\n"
      "  \"interpreter.run_parallel\"() {programs = [[@ok, @fails]]} : () -> ()\n"
      "  func.return\n}\n");
  ASSERT_TRUE(r.status);
  EXPECT_NE(r.status->message.find("'interpreter.run_parallel': process (0, 1) (@fails): test.mlir:6:3"),
            std::string::npos)
      << r.status->message;
}

TEST(ReferenceOps, ProbeValuesAreCheckedPerIteration) {
  const std::string t =
      "func.func @main() {\n"
      "  %one = stablehlo.constant dense<1> : tensor<i64>\n"
      "  %zero = stablehlo.constant dense<0> : tensor<i64>\n"
      "  %three = stablehlo.constant dense<3> : tensor<i64>\n"
      "  %i, %s = stablehlo.while(%a = %zero, %b = %zero) : tensor<i64>, tensor<i64>\n"
      "  cond {\n"
      "    %c = stablehlo.compare LT, %a, %three : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
      "    stablehlo.return %c : tensor<i1>\n"
      "  } do {\n"
      "    %n = stablehlo.add %b, %one : tensor<i64>\n"
      "    %p = interpreter.probe %n, probe_id = \"sum\" : tensor<i64>\n"
      "    %m = stablehlo.add %a, %one : tensor<i64>\n"
      "    stablehlo.return %m, %p : tensor<i64>, tensor<i64>\n"
      "  }\n"
      "  check.expect_serialized_eq %three, probe_id = \"sum\", iter = ITER : tensor<i64>\n"
      "  func.return\n}\n";
  auto at = [&](const std::string& iter) {
    std::string s = t;
    s.replace(s.find("ITER"), 4, iter);
    return RunReference(s);
  };
  auto ok = at("2");
  EXPECT_FALSE(ok.status) << ok.status->message;
  auto wrong = at("1");
  ASSERT_TRUE(wrong.status);
  EXPECT_NE(wrong.status->message.find("probe 'sum' iteration 1"), std::string::npos) << wrong.status->message;
  auto missing = at("3");
  ASSERT_TRUE(missing.status);
  EXPECT_NE(missing.status->message.find("probe 'sum' has no iteration 3 (it recorded 3 values)"), std::string::npos)
      << missing.status->message;
}

}  // namespace
}  // namespace neuronmem::interp
