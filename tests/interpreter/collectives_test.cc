// The ops that see the process grid, run as the processes of a ProcessGrid: replica_id, partition_id and
// the collectives (process groups in every mode of the spec), and the reference interpreter's
// interpreter.run_parallel / probe / check.expect_serialized_eq.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

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
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
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
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int64_t>(0, 0), (std::vector<int64_t>{11, 22, 33, 44}));
  EXPECT_EQ(r.Get<int64_t>(1, 0), (std::vector<int64_t>{11, 22, 33, 44}));
  EXPECT_EQ(r.Get<int64_t>(2, 0), (std::vector<int64_t>{6, 6, 6, 6}));
  EXPECT_EQ(r.Get<int64_t>(3, 0), (std::vector<int64_t>{6, 6, 6, 6}));
}

TEST(Collectives, HugeSplatReplicaGroupsAreRefusedAtCompile) {
  // A hostile file: a splat of 2^32 entries (all padding) was expanded into a 32 GiB list before anything
  // looked at it (std::bad_alloc, or the OOM killer).
  auto c = testing::CompileText(AllReduce("dense<-1> : tensor<65536x65536xi64>", ""));
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(c.status->message.find("replica_groups"), std::string::npos) << c.status->message;
}

TEST(Collectives, AllReduceFoldsInGroupOrder) {
  // subtract is not commutative: group [1, 0] computes x1 - x0 on both members.
  GridResult r = RunGrid(AllReduce("dense<[[1, 0]]> : tensor<1x2xi64>", "", "subtract"), 2, 1, Main(2),
                         {{I64({1, 2, 3, 4})}, {I64({10, 20, 30, 40})}});
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int64_t>(0, 0), (std::vector<int64_t>{9, 18, 27, 36}));
  EXPECT_EQ(r.Get<int64_t>(1, 0), (std::vector<int64_t>{9, 18, 27, 36}));
}

TEST(Collectives, AllReduceModesFollowChannelAndGlobalIds) {
  // 2 replicas x 2 partitions, process k holds [k, k, k, k].
  std::vector<std::vector<Arg>> args;
  for (int64_t k = 0; k < 4; ++k) args.push_back({I64({k, k, k, k})});
  // channel 0: cross_replica: groups {(0,p), (1,p)} per partition p: processes 0+2 and 1+3.
  GridResult cr = RunGrid(AllReduce("dense<[[0, 1]]> : tensor<1x2xi64>", ""), 2, 2, Main(4), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(cr));
  EXPECT_EQ(cr.Get<int64_t>(0, 0)[0], 2);
  EXPECT_EQ(cr.Get<int64_t>(1, 0)[0], 4);
  // channel > 0: cross_replica_and_partition: replicas 0 and 1 of every partition in one group.
  GridResult crp = RunGrid(AllReduce("dense<[[0, 1]]> : tensor<1x2xi64>",
                                     ", channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"),
                           2, 2, Main(4), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(crp));
  for (int k = 0; k < 4; ++k) EXPECT_EQ(crp.Get<int64_t>(k, 0)[0], 6);
  // use_global_device_ids: flattened ids [[0, 3], [1, 2]].
  GridResult fl = RunGrid(AllReduce("dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>",
                                    ", channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
                                    "use_global_device_ids"),
                          2, 2, Main(4), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(fl));
  EXPECT_EQ(fl.Get<int64_t>(0, 0)[0], 3);
  EXPECT_EQ(fl.Get<int64_t>(1, 0)[0], 3);
  EXPECT_EQ(fl.Get<int64_t>(3, 0)[0], 3);
  // No group at all: every replica in one group (XLA's convention).
  GridResult all = RunGrid(AllReduce("dense<> : tensor<0x0xi64>", ""), 3, 1, Main(3),
                           {{I64({1, 0, 0, 0})}, {I64({2, 0, 0, 0})}, {I64({4, 0, 0, 0})}});
  ASSERT_NO_FATAL_FAILURE(ExpectOk(all));
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
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  // Promoted to i32 before summing: 200 does not wrap as it would in i8.
  EXPECT_EQ(r.Get<int32_t>(0, 0), (std::vector<int32_t>{200, 0}));
  EXPECT_EQ(r.Get<int32_t>(1, 1), (std::vector<int32_t>{11, 22, 33}));
}

TEST(Collectives, AllReduceMovesPeerBytesThroughTheTransport) {
  CountingTransport t;
  GridResult r = RunGrid(AllReduce("dense<[[0, 1, 2]]> : tensor<1x3xi64>", ""), 3, 1, Main(3),
                         {{I64({1, 1, 1, 1})}, {I64({2, 2, 2, 2})}, {I64({3, 3, 3, 3})}}, &t);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
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

// ---- all_gather, reduce_scatter, all_to_all -------------------------------------------------------------

Arg S32(std::vector<int64_t> dims, std::vector<int32_t> v) { return Arg::Of(ElementType::kS32, std::move(dims), v); }

std::vector<int32_t> Iota(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = from + i;
  return v;
}

TEST(Collectives, AllToAllExtentThatOverflowsIsRefused) {
  // Empty tensors may have huge dims. all_to_all's result extent, 4 * 2^62, wrapped to 0 at compile, so a
  // tensor<0x0xf32> result was accepted.
  auto c = testing::CompileText(
      "func.func @main(%x: tensor<0x4xf32>) -> tensor<0x0xf32> {\n"
      "  %r = \"stablehlo.all_to_all\"(%x) {split_dimension = 0 : i64, concat_dimension = 1 : i64, "
      "split_count = 4611686018427387904 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>} : "
      "(tensor<0x4xf32>) -> tensor<0x0xf32>\n"
      "  func.return %r : tensor<0x0xf32>\n}\n");
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(c.status->message.find("overflows"), std::string::npos) << c.status->message;
}

TEST(Collectives, AllGatherExtentThatOverflowsFails) {
  // Over 8 processes, 2^61 * 8 wrapped to 0, the declared result extent, and the gather ran.
  const std::string t =
      "func.func @main(%x: tensor<0x2305843009213693952xf32>) -> tensor<0x0xf32> {\n"
      "  %r = \"stablehlo.all_gather\"(%x) {all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, "
      "7]]> : tensor<1x8xi64>} : (tensor<0x2305843009213693952xf32>) -> tensor<0x0xf32>\n"
      "  func.return %r : tensor<0x0xf32>\n}\n";
  const Arg empty = Arg::Of(ElementType::kF32, {0, int64_t{1} << 61}, std::vector<float>{});
  GridResult r = RunGrid(t, 8, 1, Main(8), std::vector<std::vector<Arg>>(8, {empty}));
  ASSERT_EQ(r.status.size(), 8u) << (r.status[0] ? r.status[0]->message : "ok");
  for (size_t k = 0; k < 8; ++k)
    EXPECT_NE(r.Message(k).find("overflows"), std::string::npos) << "process " << k << ": " << r.Message(k);
}

TEST(Collectives, AllGatherConcatenatesAlongItsDimensionInGroupOrder) {
  auto text = [](int dim, const std::string& out0, const std::string& out1,
                 const std::string& groups = "dense<[[1, 0]]> : tensor<1x2xi64>") {
    const std::string results = "(" + out0 + ", " + out1 + ")";
    return "func.func @main(%x: tensor<2x3xi32>, %y: tensor<2x1xi32>) -> " + results +
           " {\n"
           "  %r:2 = \"stablehlo.all_gather\"(%x, %y) {all_gather_dim = " +
           std::to_string(dim) + " : i64, replica_groups = " + groups + "} : (tensor<2x3xi32>, tensor<2x1xi32>) -> " +
           results + "\n  func.return %r#0, %r#1 : " + out0 + ", " + out1 + "\n}\n";
  };
  std::vector<std::vector<Arg>> args = {{S32({2, 3}, Iota(0, 6)), S32({2, 1}, {0, 1})},
                                        {S32({2, 3}, Iota(10, 6)), S32({2, 1}, {10, 11})}};
  // Dimension 1 is strided: each row of the result takes a row of each member (member 1 first).
  GridResult r = RunGrid(text(1, "tensor<2x6xi32>", "tensor<2x2xi32>"), 2, 1, Main(2), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(r.Get<int32_t>(k, 0), (std::vector<int32_t>{10, 11, 12, 0, 1, 2, 13, 14, 15, 3, 4, 5}));
    EXPECT_EQ(r.Get<int32_t>(k, 1), (std::vector<int32_t>{10, 0, 11, 1}));
  }
  GridResult r0 = RunGrid(text(0, "tensor<4x3xi32>", "tensor<4x1xi32>"), 2, 1, Main(2), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r0));
  EXPECT_EQ(r0.Get<int32_t>(0, 0), (std::vector<int32_t>{10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(r0.Get<int32_t>(1, 1), (std::vector<int32_t>{10, 11, 0, 1}));
  // The result's size must match the group: in a grid of 1, replica 1 does not exist.
  GridResult bad = RunGrid(text(0, "tensor<4x3xi32>", "tensor<4x1xi32>"), 1, 1, {"main"}, {args[0]});
  EXPECT_NE(bad.Message(0).find("names replica 1 of a grid of 1 replicas"), std::string::npos) << bad.Message(0);
  // A group of one with a result twice the operand: the sizes disagree at run time.
  GridResult one = RunGrid(text(0, "tensor<4x3xi32>", "tensor<4x1xi32>", "dense<[[0], [1]]> : tensor<2x1xi64>"), 2, 1,
                           Main(2), args);
  EXPECT_NE(one.Message(0).find("the result's all_gather_dim is 4 but the process group makes it 2"), std::string::npos)
      << one.Message(0);
}

TEST(Collectives, ReduceScatterReducesThenScattersAlongItsDimension) {
  const std::string t =
      "func.func @main(%x: tensor<2x4xi32>) -> tensor<2x2xi32> {\n"
      "  %r = \"stablehlo.reduce_scatter\"(%x) ({\n"
      "    ^bb0(%a: tensor<i32>, %b: tensor<i32>):\n"
      "      %s = stablehlo.add %a, %b : tensor<i32>\n"
      "      stablehlo.return %s : tensor<i32>\n"
      "  }) {scatter_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : "
      "(tensor<2x4xi32>) -> tensor<2x2xi32>\n"
      "  func.return %r : tensor<2x2xi32>\n}\n";
  GridResult r = RunGrid(t, 2, 1, Main(2), {{S32({2, 4}, Iota(0, 8))}, {S32({2, 4}, Iota(100, 8))}});
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  // Sum: [[100, 102, 104, 106], [108, 110, 112, 114]]; process 0 gets columns 0-1, process 1 columns 2-3.
  EXPECT_EQ(r.Get<int32_t>(0, 0), (std::vector<int32_t>{100, 102, 108, 110}));
  EXPECT_EQ(r.Get<int32_t>(1, 0), (std::vector<int32_t>{104, 106, 112, 114}));
  // Four processes cannot split a dimension of 4 into results of 2.
  GridResult bad = RunGrid(
      t, 4, 1, Main(4),
      {{S32({2, 4}, Iota(0, 8))}, {S32({2, 4}, Iota(0, 8))}, {S32({2, 4}, Iota(0, 8))}, {S32({2, 4}, Iota(0, 8))}});
  EXPECT_NE(bad.Message(2).find("process (2, 0) is in no group"), std::string::npos) << bad.Message(2);
}

TEST(Collectives, AllToAllSplitsScattersAndConcatenates) {
  // The spec's example: split_dimension 1, concat_dimension 0.
  const std::string t =
      "func.func @main(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {\n"
      "  %r = \"stablehlo.all_to_all\"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64, "
      "split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x4xf32>) -> "
      "tensor<4x2xf32>\n"
      "  func.return %r : tensor<4x2xf32>\n}\n";
  GridResult r = RunGrid(t, 2, 1, Main(2),
                         {{Arg::Of<float>(ElementType::kF32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})},
                          {Arg::Of<float>(ElementType::kF32, {2, 4}, {9, 10, 11, 12, 13, 14, 15, 16})}});
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<float>(0, 0), (std::vector<float>{1, 2, 5, 6, 9, 10, 13, 14}));
  EXPECT_EQ(r.Get<float>(1, 0), (std::vector<float>{3, 4, 7, 8, 11, 12, 15, 16}));
}

TEST(Collectives, AllToAllVariadicAcrossPartitionsWithOneDimension) {
  // channel > 0: cross_partition; split and concat along the same dimension; two operands.
  const std::string t =
      "func.func @main(%x: tensor<4xi32>, %y: tensor<2x2xi32>) -> (tensor<4xi32>, tensor<2x2xi32>) {\n"
      "  %r:2 = \"stablehlo.all_to_all\"(%x, %y) {split_dimension = 0 : i64, concat_dimension = 0 : i64, "
      "split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, "
      "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<4xi32>, tensor<2x2xi32>) -> "
      "(tensor<4xi32>, tensor<2x2xi32>)\n"
      "  func.return %r#0, %r#1 : tensor<4xi32>, tensor<2x2xi32>\n}\n";
  GridResult r = RunGrid(t, 1, 2, Main(2),
                         {{S32({4}, {0, 1, 2, 3}), S32({2, 2}, {0, 1, 2, 3})},
                          {S32({4}, {10, 11, 12, 13}), S32({2, 2}, {10, 11, 12, 13})}});
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int32_t>(0, 0), (std::vector<int32_t>{0, 1, 10, 11}));
  EXPECT_EQ(r.Get<int32_t>(1, 0), (std::vector<int32_t>{2, 3, 12, 13}));
  EXPECT_EQ(r.Get<int32_t>(0, 1), (std::vector<int32_t>{0, 1, 10, 11}));
  EXPECT_EQ(r.Get<int32_t>(1, 1), (std::vector<int32_t>{2, 3, 12, 13}));
  // split_count must be the group's size.
  auto c = testing::CompileText(
      "func.func @main(%x: tensor<3xi32>) -> tensor<3xi32> {\n"
      "  %r = \"stablehlo.all_to_all\"(%x) {split_dimension = 0 : i64, concat_dimension = 0 : i64, "
      "split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<3xi32>) -> "
      "tensor<3xi32>\n  func.return %r : tensor<3xi32>\n}\n");
  ASSERT_TRUE(c.status);
  EXPECT_NE(c.status->message.find("split dimension is no multiple of split_count"), std::string::npos);
}

// ---- collective_permute, collective_broadcast, collective_reduce -----------------------------------------

std::string Permute(const std::string& pairs, const std::string& extra = "") {
  return "func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {\n"
         "  %r = \"stablehlo.collective_permute\"(%x) {source_target_pairs = " +
         pairs + extra + "} : (tensor<2xi32>) -> tensor<2xi32>\n  func.return %r : tensor<2xi32>\n}\n";
}

TEST(Collectives, CollectivePermuteSendsAlongPairsAndNonTargetsGetZeros) {
  std::vector<std::vector<Arg>> args;
  for (int32_t k = 0; k < 4; ++k) args.push_back({S32({2}, {k, 10 * k})});
  // 0 -> 1 -> 2 -> 0; replica 3 is in no pair.
  GridResult r = RunGrid(Permute("dense<[[0, 1], [1, 2], [2, 0]]> : tensor<3x2xi64>"), 4, 1, Main(4), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int32_t>(0, 0), (std::vector<int32_t>{2, 20}));
  EXPECT_EQ(r.Get<int32_t>(1, 0), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(r.Get<int32_t>(2, 0), (std::vector<int32_t>{1, 10}));
  EXPECT_EQ(r.Get<int32_t>(3, 0), (std::vector<int32_t>{0, 0}));
  // With a channel the pairs name partitions, within each replica (2 replicas x 2 partitions).
  GridResult p = RunGrid(Permute("dense<[[0, 1]]> : tensor<1x2xi64>",
                                 ", channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"),
                         2, 2, Main(4), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(p));
  EXPECT_EQ(p.Get<int32_t>(1, 0), (std::vector<int32_t>{0, 0}));   // (0, 1) gets (0, 0)'s
  EXPECT_EQ(p.Get<int32_t>(3, 0), (std::vector<int32_t>{2, 20}));  // (1, 1) gets (1, 0)'s
  EXPECT_EQ(p.Get<int32_t>(2, 0), (std::vector<int32_t>{0, 0}));   // non-target
  // A source named twice (C2).
  auto c = testing::CompileText(Permute("dense<[[0, 1], [0, 2]]> : tensor<2x2xi64>"));
  ASSERT_TRUE(c.status);
  EXPECT_NE(c.status->message.find("names a source twice"), std::string::npos);
}

TEST(Collectives, CollectivePermuteOfQuantizedValuesGivesNonTargetsTheZeroPoint) {
  const std::string t =
      "func.func @main(%x: tensor<2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:3>> {\n"
      "  %r = \"stablehlo.collective_permute\"(%x) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : "
      "(tensor<2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:3>>\n"
      "  func.return %r : tensor<2x!quant.uniform<i8:f32, 0.5:3>>\n}\n";
  GridResult r =
      RunGrid(t, 2, 1, Main(2),
              {{Arg::Of<int8_t>(ElementType::kS8, {2}, {7, 9})}, {Arg::Of<int8_t>(ElementType::kS8, {2}, {1, 1})}});
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int8_t>(0, 0), (std::vector<int8_t>{3, 3}));
  EXPECT_EQ(r.Get<int8_t>(1, 0), (std::vector<int8_t>{7, 9}));
}

TEST(Collectives, CollectiveBroadcastFromTheFirstOrTheDynamicRoot) {
  const std::string t =
      "func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {\n"
      "  %r = \"stablehlo.collective_broadcast\"(%x) {replica_groups = dense<[[2, 1]]> : tensor<1x2xi64>} : "
      "(tensor<2xi32>) -> tensor<2xi32>\n  func.return %r : tensor<2xi32>\n}\n";
  std::vector<std::vector<Arg>> args;
  for (int32_t k = 0; k < 4; ++k) args.push_back({S32({2}, {k, k})});
  GridResult r = RunGrid(t, 4, 1, Main(4), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int32_t>(0, 0), (std::vector<int32_t>{0, 0}));  // in no group: zeros
  EXPECT_EQ(r.Get<int32_t>(1, 0), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(r.Get<int32_t>(2, 0), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(r.Get<int32_t>(3, 0), (std::vector<int32_t>{0, 0}));
  const std::string dyn =
      "func.func @main(%x: tensor<2xi32>, %root: tensor<1xi32>) -> tensor<2xi32> {\n"
      "  %r = \"stablehlo.collective_broadcast\"(%x, %root) {replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>, "
      "has_dynamic_root} : (tensor<2xi32>, tensor<1xi32>) -> tensor<2xi32>\n"
      "  func.return %r : tensor<2xi32>\n}\n";
  std::vector<std::vector<Arg>> dargs;
  for (int32_t k = 0; k < 3; ++k) dargs.push_back({S32({2}, {k, 5 * k}), S32({1}, {2})});
  GridResult d = RunGrid(dyn, 3, 1, Main(3), dargs);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(d));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(d.Get<int32_t>(k, 0), (std::vector<int32_t>{2, 10}));
  dargs[1][1] = S32({1}, {3});
  GridResult bad = RunGrid(dyn, 3, 1, Main(3), dargs);
  EXPECT_NE(bad.Message(1).find("root 3 of value 0 is not an index into its group of 3"), std::string::npos)
      << bad.Message(1);
}

TEST(Collectives, CollectiveReduceGivesTheRootTheReductionAndZerosElsewhere) {
  const std::string t =
      "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %r = \"stablehlo.collective_reduce\"(%x) ({\n"
      "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
      "      %s = stablehlo.maximum %a, %b : tensor<f32>\n"
      "      stablehlo.return %s : tensor<f32>\n"
      "  }) {replica_groups = dense<[[1, 0, 2]]> : tensor<1x3xi64>} : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return %r : tensor<2xf32>\n}\n";
  GridResult r = RunGrid(t, 3, 1, Main(3),
                         {{Arg::Of<float>(ElementType::kF32, {2}, {1, 9})},
                          {Arg::Of<float>(ElementType::kF32, {2}, {5, 2})},
                          {Arg::Of<float>(ElementType::kF32, {2}, {3, 3})}});
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<float>(1, 0), (std::vector<float>{5, 9}));  // replica 1 is the group's first
  EXPECT_EQ(r.Get<float>(0, 0), (std::vector<float>{0, 0}));
  EXPECT_EQ(r.Get<float>(2, 0), (std::vector<float>{0, 0}));
}

// ---- send / recv, infeed / outfeed -----------------------------------------------------------------------

const char* kSendRecv =
    "func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {\n"
    "  %t = stablehlo.after_all : !stablehlo.token\n"
    "  %s = \"stablehlo.send\"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
    "source_target_pairs = PAIRS} : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token\n"
    "  %r:2 = \"stablehlo.recv\"(%t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
    "source_target_pairs = PAIRS} : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)\n"
    "  func.return %r#0 : tensor<2xi32>\n}\n";

std::string WithPairs(const std::string& pairs) {
  std::string s = kSendRecv;
  for (size_t at; (at = s.find("PAIRS")) != std::string::npos;) s.replace(at, 5, pairs);
  return s;
}

TEST(Collectives, SendRecvAlongPairsInARingCompletes) {
  CountingTransport tr;
  std::vector<std::vector<Arg>> args;
  for (int32_t k = 0; k < 3; ++k) args.push_back({S32({2}, {k, 100 + k})});
  GridResult r = RunGrid(WithPairs("dense<[[0, 1], [1, 2], [2, 0]]> : tensor<3x2xi64>"), 3, 1, Main(3), args, &tr);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int32_t>(0, 0), (std::vector<int32_t>{2, 102}));
  EXPECT_EQ(r.Get<int32_t>(1, 0), (std::vector<int32_t>{0, 100}));
  EXPECT_EQ(r.Get<int32_t>(2, 0), (std::vector<int32_t>{1, 101}));
  // One transfer per message, from its sender to its receiver.
  EXPECT_EQ(tr.copies.load(), 3u);
  EXPECT_EQ((tr.bytes[{0, 1}]), 8u);
  EXPECT_EQ((tr.bytes[{2, 0}]), 8u);
  // Process 2 receives from no one: zeros.
  GridResult z = RunGrid(WithPairs("dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>"), 3, 1, Main(3), args);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(z));
  EXPECT_EQ(z.Get<int32_t>(2, 0), (std::vector<int32_t>{0, 0}));
}

TEST(Collectives, SendRecvPairsAsXlaFrontendAttributes) {
  // JAX's pipelining spells the pairs as XLA's frontend attribute; here on a grid of one replica and two
  // partitions, where they name partitions.
  const std::string t =
      "func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {\n"
      "  %t = stablehlo.after_all : !stablehlo.token\n"
      "  %s = \"stablehlo.send\"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
      "mhlo.frontend_attributes = {_xla_send_recv_source_target_pairs = \"{{0,1},{1,0}}\"}} : "
      "(tensor<2xi32>, !stablehlo.token) -> !stablehlo.token\n"
      "  %r:2 = \"stablehlo.recv\"(%t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
      "mhlo.frontend_attributes = {_xla_send_recv_source_target_pairs = \"{{0,1},{1,0}}\"}} : "
      "(!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)\n"
      "  func.return %r#0 : tensor<2xi32>\n}\n";
  GridResult r = RunGrid(t, 1, 2, Main(2), {{S32({2}, {1, 2})}, {S32({2}, {3, 4})}});
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int32_t>(0, 0), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(r.Get<int32_t>(1, 0), (std::vector<int32_t>{1, 2}));
  std::string bad = t;
  bad.replace(bad.find("{{0,1},{1,0}}"), 13, "{{0,1},{2,1}}");
  auto c = testing::CompileText(bad);
  ASSERT_TRUE(c.status);
  EXPECT_NE(c.status->message.find("names a target twice"), std::string::npos) << c.status->message;
}

TEST(Collectives, FrontendPairIdsThatOverflowAreRefused) {
  // 2^64 + 1 wrapped to 1 while the string was read: the pair {0, 1} ran as if it had been written.
  const std::string t =
      "func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {\n"
      "  %t = stablehlo.after_all : !stablehlo.token\n"
      "  %s = \"stablehlo.send\"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
      "mhlo.frontend_attributes = {_xla_send_recv_source_target_pairs = \"{{0,18446744073709551617}}\"}} : "
      "(tensor<2xi32>, !stablehlo.token) -> !stablehlo.token\n"
      "  func.return %x : tensor<2xi32>\n}\n";
  auto c = testing::CompileText(t);
  ASSERT_TRUE(c.status);
  EXPECT_EQ(c.status->code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(c.status->message.find("18446744073709551617"), std::string::npos) << c.status->message;
}

TEST(Collectives, RecvWithNoMatchingSendFailsNamingChannelAndSender) {
  const std::string t =
      "func.func @recv() -> tensor<2xi32> {\n"
      "  %t = stablehlo.after_all : !stablehlo.token\n"
      "  %r:2 = \"stablehlo.recv\"(%t) {channel_handle = #stablehlo.channel_handle<handle = 8, type = 1>, "
      "source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (!stablehlo.token) -> (tensor<2xi32>, "
      "!stablehlo.token)\n"
      "  func.return %r#0 : tensor<2xi32>\n}\n";
  GridResult r = RunGrid(t, 2, 1, {"recv", "recv"});
  EXPECT_FALSE(r.status[0]);  // process 0 is no target: zeros
  EXPECT_NE(r.Message(1).find("test.mlir:3:3: 'stablehlo.recv' on channel 8: process (1, 0) waits for data from "
                              "(0, 0), which finished without sending it"),
            std::string::npos)
      << r.Message(1);
}

// A host that records what it is sent and answers receives and infeeds with a counter.
class RecordingHost : public HostTransfers {
 public:
  Status Send(const HostCall& call, const TensorView* data, size_t n) override {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < n; ++i) sent.emplace_back(call.site.channel, static_cast<const int32_t*>(data[i].data)[0]);
    return Status();
  }
  Status Recv(const HostCall& call, const TensorView* results, size_t n) override {
    for (size_t i = 0; i < n; ++i) static_cast<int32_t*>(results[i].data)[0] = static_cast<int32_t>(call.site.channel);
    return Status();
  }
  Status Infeed(const HostCall& call, const TensorView* results, size_t n) override {
    if (call.config != "cfg")
      return InvalidArgument("config %.*s", static_cast<int>(call.config.size()), call.config.data());
    for (size_t i = 0; i < n; ++i) static_cast<int32_t*>(results[i].data)[0] = 40 + static_cast<int32_t>(call.process);
    return Status();
  }
  std::mutex mu;
  std::vector<std::pair<int64_t, int32_t>> sent;
};

TEST(Collectives, HostTransfersGoThroughTheHook) {
  const std::string t =
      "func.func @main(%x: tensor<1xi32>) -> (tensor<1xi32>, tensor<1xi32>) {\n"
      "  %t = stablehlo.after_all : !stablehlo.token\n"
      "  %s = \"stablehlo.send\"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>, "
      "is_host_transfer = true} : (tensor<1xi32>, !stablehlo.token) -> !stablehlo.token\n"
      "  %r:2 = \"stablehlo.recv\"(%s) {channel_handle = #stablehlo.channel_handle<handle = 6, type = 3>, "
      "is_host_transfer = true} : (!stablehlo.token) -> (tensor<1xi32>, !stablehlo.token)\n"
      "  %i:2 = \"stablehlo.infeed\"(%r#1) {infeed_config = \"cfg\"} : (!stablehlo.token) -> (tensor<1xi32>, "
      "!stablehlo.token)\n"
      "  func.return %r#0, %i#0 : tensor<1xi32>, tensor<1xi32>\n}\n";
  RecordingHost host;
  GridResult r = RunGrid(t, 2, 1, Main(2), {{S32({1}, {7})}, {S32({1}, {8})}}, nullptr, &host);
  ASSERT_NO_FATAL_FAILURE(ExpectOk(r));
  EXPECT_EQ(r.Get<int32_t>(1, 0), std::vector<int32_t>{6});
  EXPECT_EQ(r.Get<int32_t>(1, 1), std::vector<int32_t>{41});
  std::sort(host.sent.begin(), host.sent.end());
  EXPECT_EQ(host.sent, (std::vector<std::pair<int64_t, int32_t>>{{5, 7}, {5, 8}}));
  // Without a hook the op fails, naming what it is.
  GridResult none = RunGrid(t, 1, 1, Main(1), {{S32({1}, {7})}});
  EXPECT_NE(none.Message(0).find("'stablehlo.send': a host transfer on channel 5: the process has no host hook for it"),
            std::string::npos)
      << none.Message(0);
  // The channel type must agree with is_host_transfer (C5).
  std::string bad = t;
  bad.replace(bad.find("type = 2>"), 9, "type = 1>");
  auto c = testing::CompileText(bad);
  ASSERT_TRUE(c.status);
  EXPECT_NE(c.status->message.find("disagrees with is_host_transfer"), std::string::npos) << c.status->message;
}

// ---- The reference interpreter's test ops ----------------------------------------------------------

testing::RunResult RunReference(const std::string& text) {
  testing::RunResult r;
  std::vector<stablehlo::Module> modules;
  r.status = stablehlo::ParseModules(text, "test.mlir", &modules);
  if (r.status) return r;
  CompileOptions o;
  o.filename = "test.mlir";
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

TEST(ReferenceOps, RunParallelHostTransfersTravelOnTheChannelAndInfeedRunsOut) {
  // As in the reference interpreter: a host send on channel 1 reaches the process receiving on channel 1.
  const std::string t =
      "func.func @send(%x: tensor<2xi64>, %t: !stablehlo.token) -> !stablehlo.token {\n"
      "  %s = \"stablehlo.send\"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>, "
      "is_host_transfer = true} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token\n"
      "  func.return %s : !stablehlo.token\n}\n"
      "func.func @recv(%t: !stablehlo.token) -> tensor<2xi64> {\n"
      "  %r:2 = \"stablehlo.recv\"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>, "
      "is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)\n"
      "  %i:2 = \"stablehlo.infeed\"(%t) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)\n"
      "  %sum = stablehlo.add %r#0, %i#0 : tensor<2xi64>\n"
      "  func.return %sum : tensor<2xi64>\n}\n"
      "func.func @feed() -> tensor<2xi64> {\n"
      "  %c = stablehlo.constant dense<[100, 200]> : tensor<2xi64>\n"
      "  func.return %c : tensor<2xi64>\n}\n"
      "func.func @main() {\n"
      "  %x = stablehlo.constant dense<[1, 2]> : tensor<2xi64>\n"
      "  %t = stablehlo.after_all : !stablehlo.token\n"
      "  %r:2 = \"interpreter.run_parallel\"(%x, %t, %t) {infeed = [@feed], programs = [[@send], [@recv]]} : "
      "(tensor<2xi64>, !stablehlo.token, !stablehlo.token) -> (!stablehlo.token, tensor<2xi64>)\n"
      "  check.expect_eq_const %r#1, dense<[101, 202]> : tensor<2xi64>\n"
      "  func.return\n}\n";
  auto r = RunReference(t);
  EXPECT_FALSE(r.status) << r.status->message;
  // Two infeeds, but the list has one entry.
  auto f = RunReference(
      "func.func @feed() -> tensor<2xi64> {\n"
      "  %c = stablehlo.constant dense<[100, 200]> : tensor<2xi64>\n"
      "  func.return %c : tensor<2xi64>\n}\n"
      "func.func @twice(%t: !stablehlo.token) -> tensor<2xi64> {\n"
      "  %a:2 = \"stablehlo.infeed\"(%t) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)\n"
      "  %b:2 = \"stablehlo.infeed\"(%t) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)\n"
      "  func.return %b#0 : tensor<2xi64>\n}\n"
      "func.func @main() {\n"
      "  %t = stablehlo.after_all : !stablehlo.token\n"
      "  %r = \"interpreter.run_parallel\"(%t) {infeed = [@feed], programs = [[@twice]]} : (!stablehlo.token) -> "
      "tensor<2xi64>\n"
      "  func.return\n}\n");
  ASSERT_TRUE(f.status);
  EXPECT_NE(f.status->message.find("test.mlir:7:3: 'stablehlo.infeed': process (0, 0) reads infeed entry 2, but "
                                   "run_parallel's infeed lists 1"),
            std::string::npos)
      << f.status->message;
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
