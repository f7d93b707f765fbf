// sdy.manual_computation bodies that communicate: their devices run at once as the processes of a grid (one
// thread each), with the collectives, partition_id and send/recv JAX's shard_map lowers to (channel_handle and
// use_global_device_ids: groups of devices by their index in the mesh). Each result is checked against the same
// math written for the whole array. Also the exported round-trip form (xla.sdy.GlobalToLocalShape, a call of
// @xla.sdy.manual_computation_body, xla.sdy.LocalToGlobalShape) and the statuses of bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interp_test_util.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;
using testing::RunText;

constexpr const char* kChannel = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>";

bool Has(const Status& s, const std::string& text) { return s && s->message.find(text) != std::string::npos; }

// Whether `s` failed with `code` and a message containing `text` (what it was instead, when not).
::testing::AssertionResult Refused(const Status& s, neuronmem_status_code_t code, const std::string& text) {
  if (!s) return ::testing::AssertionFailure() << "succeeded; expected code " << code << " with \"" << text << "\"";
  if (s->code != code || !Has(s, text))
    return ::testing::AssertionFailure() << "code " << s->code << ": " << s->message << "\nexpected code " << code
                                         << " with \"" << text << "\"";
  return ::testing::AssertionSuccess();
}

std::vector<int32_t> Iota(int32_t n, int32_t from = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = from + i;
  return v;
}

// A module over mesh `mesh` whose @main(%arg0: `global`) -> `result` is one manual computation over `manual`
// with body `body` (from %a of type `local` to %r of type `local_result`).
std::string Manual(const std::string& mesh, const std::string& manual, const std::string& global,
                   const std::string& in_sharding, const std::string& local, const std::string& body,
                   const std::string& local_result, const std::string& out_sharding, const std::string& result) {
  return "module @m {\n  sdy.mesh @mesh = <[" + mesh + "]>\n  func.func @main(%arg0: " + global + ") -> " + result +
         " {\n    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, " + in_sharding +
         ">]\n        out_shardings=[<@mesh, " + out_sharding + ">] manual_axes={" + manual + "} (%a: " + local +
         ") {\n" + body + "      sdy.return %r : " + local_result + "\n    } : (" + global + ") -> " + result +
         "\n    return %1 : " + result + "\n  }\n}\n";
}

std::string AddRegion(const std::string& type) {
  return "({\n        ^bb0(%x: tensor<" + type + ">, %y: tensor<" + type +
         ">):\n          %s = stablehlo.add %x, %y : tensor<" + type + ">\n          stablehlo.return %s : tensor<" +
         type + ">\n      })";
}

// A body whose result %r (of type tensor<`local`>) is the device's partition_id everywhere.
std::string PartitionIds(const std::string& local) {
  return "      %p = stablehlo.partition_id : tensor<ui32>\n"
         "      %c = stablehlo.convert %p : (tensor<ui32>) -> tensor<i32>\n"
         "      %r = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<" +
         local + ">\n";
}

TensorView I32(std::vector<int32_t>& v, const std::vector<int64_t>& dims) {
  return TensorView{v.data(), ElementType::kS32, dims.data(), dims.size()};
}

// psum over "x" (jax.lax.psum in a shard_map): every device gets the sum of the four row blocks; the result is
// replicated over "x" (out_sharding names no axis), so it is the sum itself.
TEST(ManualComputation, AllReduceOverTheManualAxisIsTheSumOfTheBlocks) {
  const std::string body = "      %r = \"stablehlo.all_reduce\"(%a) " + AddRegion("i32") +
                           " {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, " + kChannel +
                           ", use_global_device_ids} : (tensor<2x3xi32>) -> tensor<2x3xi32>\n";
  const std::string text = Manual(R"("x"=4)", R"("x")", "tensor<8x3xi32>", R"([{"x"}, {}])", "tensor<2x3xi32>", body,
                                  "tensor<2x3xi32>", "[{}, {}]", "tensor<2x3xi32>");
  std::vector<int32_t> in = Iota(24);
  const std::vector<int64_t> dims = {8, 3};
  auto r = RunText(text, {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want(6, 0);
  for (int block = 0; block < 4; ++block)
    for (int i = 0; i < 6; ++i) want[static_cast<size_t>(i)] += in[static_cast<size_t>(block * 6 + i)];
  EXPECT_EQ(r.Get<int32_t>(0), want);
  // The program says how many devices run at once; a body that does not communicate runs on one thread.
  auto c = CompileText(text);
  ASSERT_FALSE(c.status) << c.status->message;
  EXPECT_EQ(c.program->num_manual_devices(), 4u);
  auto alone = CompileText(Manual(R"("x"=4)", R"("x")", "tensor<8x3xi32>", R"([{"x"}, {}])", "tensor<2x3xi32>",
                                  "      %r = stablehlo.add %a, %a : tensor<2x3xi32>\n", "tensor<2x3xi32>",
                                  R"([{"x"}, {}])", "tensor<8x3xi32>"));
  ASSERT_FALSE(alone.status) << alone.status->message;
  EXPECT_EQ(alone.program->num_manual_devices(), 0u);
}

// x - mean over "x" of x, sharded out again: a = a - psum(a) / 2 per device, along "x" of a 2x2 mesh whose "y"
// splits dim 1 (groups of the devices that share a "y" coordinate: [[0, 2], [1, 3]] of ids x * 2 + y).
TEST(ManualComputation, AllReduceWithinGroupsOfTwoAxes) {
  const std::string body = "      %s = \"stablehlo.all_reduce\"(%a) " + AddRegion("i32") +
                           " {replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, " + kChannel +
                           ", use_global_device_ids} : (tensor<2x2xi32>) -> tensor<2x2xi32>\n"
                           "      %two = stablehlo.constant dense<2> : tensor<2x2xi32>\n"
                           "      %m = stablehlo.divide %s, %two : tensor<2x2xi32>\n"
                           "      %r = stablehlo.subtract %a, %m : tensor<2x2xi32>\n";
  const std::string text = Manual(R"("x"=2, "y"=2)", R"("x", "y")", "tensor<4x4xi32>", R"([{"x"}, {"y"}])",
                                  "tensor<2x2xi32>", body, "tensor<2x2xi32>", R"([{"x"}, {"y"}])", "tensor<4x4xi32>");
  std::vector<int32_t> in(16);
  for (int i = 0; i < 16; ++i) in[static_cast<size_t>(i)] = i * i;
  const std::vector<int64_t> dims = {4, 4};
  auto r = RunText(text, {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  // Element (i, j) and (i ^ 2, j) (the same place in the other "x" block) share a group.
  std::vector<int32_t> want(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int32_t a = in[static_cast<size_t>(i * 4 + j)], b = in[static_cast<size_t>(((i + 2) % 4) * 4 + j)];
      want[static_cast<size_t>(i * 4 + j)] = a - (a + b) / 2;
    }
  EXPECT_EQ(r.Get<int32_t>(0), want);
}

// all_gather along dim 0 brings back the whole operand on every device; partition_id scales each device's own
// slice by (device + 1).
TEST(ManualComputation, AllGatherAndPartitionId) {
  const std::string gather = std::string("      %r = \"stablehlo.all_gather\"(%a) {all_gather_dim = 0 : i64, ") +
                             "replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>, " + kChannel +
                             ", use_global_device_ids} : (tensor<2x2xi32>) -> tensor<6x2xi32>\n";
  std::vector<int32_t> in = Iota(12, 5);
  const std::vector<int64_t> dims = {6, 2};
  auto g = RunText(Manual(R"("x"=3)", R"("x")", "tensor<6x2xi32>", R"([{"x"}, {}])", "tensor<2x2xi32>", gather,
                          "tensor<6x2xi32>", "[{}, {}]", "tensor<6x2xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(g.status) << g.status->message;
  EXPECT_EQ(g.Get<int32_t>(0), in);

  const std::string scale =
      "      %p = stablehlo.partition_id : tensor<ui32>\n"
      "      %c = stablehlo.convert %p : (tensor<ui32>) -> tensor<i32>\n"
      "      %one = stablehlo.constant dense<1> : tensor<i32>\n"
      "      %k = stablehlo.add %c, %one : tensor<i32>\n"
      "      %b = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<i32>) -> tensor<2x2xi32>\n"
      "      %r = stablehlo.multiply %a, %b : tensor<2x2xi32>\n";
  auto s = RunText(Manual(R"("x"=3)", R"("x")", "tensor<6x2xi32>", R"([{"x"}, {}])", "tensor<2x2xi32>", scale,
                          "tensor<2x2xi32>", R"([{"x"}, {}])", "tensor<6x2xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(s.status) << s.status->message;
  std::vector<int32_t> want(12);
  for (int i = 0; i < 12; ++i) want[static_cast<size_t>(i)] = in[static_cast<size_t>(i)] * (i / 4 + 1);
  EXPECT_EQ(s.Get<int32_t>(0), want);
}

// A mesh with device_ids: the shards of mesh position p live on device device_ids[p], whose partition_id that is,
// and the collectives' groups name those ids. Over <["x"=3], device_ids=[2, 0, 1]>, position 0 is partition 2.
TEST(ManualComputation, DeviceIdsGivePartitionIdsAndGroups) {
  std::vector<int32_t> in = Iota(12);
  const std::vector<int64_t> dims = {6, 2};
  const auto run = [&](const std::string& body) {
    return RunText(Manual(R"("x"=3], device_ids=[2, 0, 1)", R"("x")", "tensor<6x2xi32>", R"([{"x"}, {}])",
                          "tensor<2x2xi32>", body, "tensor<2x2xi32>", R"([{"x"}, {}])", "tensor<6x2xi32>"),
                   {I32(in, dims)});
  };
  auto s = run(PartitionIds("2x2xi32"));
  ASSERT_FALSE(s.status) << s.status->message;
  EXPECT_EQ(s.Get<int32_t>(0), (std::vector<int32_t>{2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1}));
  // Device 0 (position 1) sends to device 1 (position 2): position 2 gets rows 2-3, the others zeros.
  auto p = run(std::string("      %r = \"stablehlo.collective_permute\"(%a) {source_target_pairs = ") +
               "dense<[[0, 1]]> : tensor<1x2xi64>, " + kChannel + "} : (tensor<2x2xi32>) -> tensor<2x2xi32>\n");
  ASSERT_FALSE(p.status) << p.status->message;
  EXPECT_EQ(p.Get<int32_t>(0), (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 4, 5, 6, 7}));
  // Not a permutation: INVALID_ARGUMENT.
  auto bad = CompileText(Manual(R"("x"=3], device_ids=[2, 2, 1)", R"("x")", "tensor<6x2xi32>", R"([{"x"}, {}])",
                                "tensor<2x2xi32>", "      %r = stablehlo.add %a, %a : tensor<2x2xi32>\n",
                                "tensor<2x2xi32>", R"([{"x"}, {}])", "tensor<6x2xi32>"));
  EXPECT_TRUE(Refused(bad.status, NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "test.mlir:4:5: 'sdy.manual_computation': the device_ids of mesh @mesh are not a "
                      "permutation of its 3 devices"));
}

// reduce_scatter of a replicated operand (every device sees it whole): each device gets its rows of 2 * x,
// assembled along "x".
TEST(ManualComputation, ReduceScatterOfAReplicatedOperand) {
  const std::string body = "      %r = \"stablehlo.reduce_scatter\"(%a) " + AddRegion("i32") +
                           " {scatter_dimension = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, " +
                           kChannel + ", use_global_device_ids} : (tensor<4x3xi32>) -> tensor<2x3xi32>\n";
  std::vector<int32_t> in = Iota(12, -4);
  const std::vector<int64_t> dims = {4, 3};
  auto r = RunText(Manual(R"("x"=2)", R"("x")", "tensor<4x3xi32>", "[{}, {}]", "tensor<4x3xi32>", body,
                          "tensor<2x3xi32>", R"([{"x"}, {}])", "tensor<4x3xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want(in);
  for (int32_t& v : want) v *= 2;
  EXPECT_EQ(r.Get<int32_t>(0), want);
}

// all_to_all from rows split over "x" to columns split over "x": the array itself (a reshard).
TEST(ManualComputation, AllToAllReshardsRowsToColumns) {
  const std::string body = std::string("      %r = \"stablehlo.all_to_all\"(%a) {split_dimension = 1 : i64, ") +
                           "concat_dimension = 0 : i64, split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : "
                           "tensor<1x2xi64>, " +
                           kChannel + "} : (tensor<2x4xi32>) -> tensor<4x2xi32>\n";
  std::vector<int32_t> in = Iota(16, 100);
  const std::vector<int64_t> dims = {4, 4};
  auto r = RunText(Manual(R"("x"=2)", R"("x")", "tensor<4x4xi32>", R"([{"x"}, {}])", "tensor<2x4xi32>", body,
                          "tensor<4x2xi32>", R"([{}, {"x"}])", "tensor<4x4xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), in);
}

// collective_permute (jax.lax.ppermute) rotates the row blocks by one; collective_broadcast gives every device
// device 0's block.
TEST(ManualComputation, CollectivePermuteAndBroadcast) {
  std::vector<int32_t> in = Iota(12);
  const std::vector<int64_t> dims = {6, 2};
  const std::string permute = std::string("      %r = \"stablehlo.collective_permute\"(%a) {source_target_pairs = ") +
                              "dense<[[0, 1], [1, 2], [2, 0]]> : tensor<3x2xi64>, " + kChannel +
                              "} : (tensor<2x2xi32>) -> tensor<2x2xi32>\n";
  // The row blocks of `in` over "x"=3, each device's 2x2 block through `body`, assembled along "x" again.
  const auto run = [&](const std::string& body) {
    return RunText(Manual(R"("x"=3)", R"("x")", "tensor<6x2xi32>", R"([{"x"}, {}])", "tensor<2x2xi32>", body,
                          "tensor<2x2xi32>", R"([{"x"}, {}])", "tensor<6x2xi32>"),
                   {I32(in, dims)});
  };
  auto p = run(permute);
  ASSERT_FALSE(p.status) << p.status->message;
  EXPECT_EQ(p.Get<int32_t>(0), (std::vector<int32_t>{8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7}));

  const std::string broadcast = std::string("      %r = \"stablehlo.collective_broadcast\"(%a) {replica_groups = ") +
                                "dense<[[0, 1, 2]]> : tensor<1x3xi64>, " + kChannel +
                                "} : (tensor<2x2xi32>) -> tensor<2x2xi32>\n";
  auto b = run(broadcast);
  ASSERT_FALSE(b.status) << b.status->message;
  EXPECT_EQ(b.Get<int32_t>(0), (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
}

// ---- Bodies that communicate while a mesh axis is not manual -------------------------------------------------
//
// Over ["x"=2, "y"=2] with only "x" manual (JAX's shard_map with auto={'y'}), the body runs once per "x"
// coordinate and sees the dims "y" shards whole; its collectives name devices of the whole mesh (id x * 2 + y),
// as XLA's partitioner emits them: psum over "x" is an all_reduce over [[0, 2], [1, 3]].

// A collective op of the body: `name` with `attrs` (plus the reduction region for a reducing one) from %a of
// type `in` to %r of type `out`.
std::string Collective(const std::string& name, bool reduces, const std::string& attrs, const std::string& in,
                       const std::string& out, const std::string& result = "%r", const std::string& operand = "%a") {
  return "      " + result + " = \"stablehlo." + name + "\"(" + operand + ") " +
         (reduces ? AddRegion("i32") + " " : "") + "{" + attrs + "} : (tensor<" + in + ">) -> tensor<" + out + ">\n";
}

// `rows` as a replica_groups / source_target_pairs attribute value.
std::string Dense(const std::vector<std::vector<int>>& rows) {
  std::string t = "dense<[";
  for (size_t i = 0; i < rows.size(); ++i) {
    t += i ? ", [" : "[";
    for (size_t j = 0; j < rows[i].size(); ++j) t += (j ? ", " : "") + std::to_string(rows[i][j]);
    t += "]";
  }
  return t + "]> : tensor<" + std::to_string(rows.size()) + "x" + std::to_string(rows.empty() ? 0 : rows[0].size()) +
         "xi64>";
}

std::string Groups(const std::vector<std::vector<int>>& rows) {
  return "replica_groups = " + Dense(rows) + ", " + kChannel + ", use_global_device_ids";
}

// The whole-array math the tests check against: element (i, j) of a row-major n x m array.
int32_t At(const std::vector<int32_t>& v, int m, int i, int j) { return v[static_cast<size_t>(i * m + j)]; }

// all_reduce, all_gather and reduce_scatter over "x" with "y" free: the groups of the devices that share a "y"
// coordinate. Dim 1 is sharded on "y", which the body sees whole (tensor<2x4xi32> of a tensor<4x4xi32>).
TEST(ManualComputation, ReducingAndGatheringOverXWithYFree) {
  const std::string mesh = R"("x"=2, "y"=2)";
  std::vector<int32_t> in(16);
  for (int i = 0; i < 16; ++i) in[static_cast<size_t>(i)] = i * i - 3 * i;
  const std::vector<int64_t> dims = {4, 4};
  const std::vector<std::vector<int>> psum_x = {{0, 2}, {1, 3}};

  // psum over "x", replicated out: element (i, j) + element (i + 2, j).
  auto r = RunText(Manual(mesh, R"("x")", "tensor<4x4xi32>", R"([{"x"}, {"y"}])", "tensor<2x4xi32>",
                          Collective("all_reduce", true, Groups(psum_x), "2x4xi32", "2x4xi32"), "tensor<2x4xi32>",
                          R"([{}, {"y"}])", "tensor<2x4xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(At(in, 4, i, j) + At(in, 4, i + 2, j));
  EXPECT_EQ(r.Get<int32_t>(0), want);

  // all_gather over "x" along dim 0: the whole array on every device.
  auto g = RunText(
      Manual(mesh, R"("x")", "tensor<4x4xi32>", R"([{"x"}, {"y"}])", "tensor<2x4xi32>",
             Collective("all_gather", false, "all_gather_dim = 0 : i64, " + Groups(psum_x), "2x4xi32", "4x4xi32"),
             "tensor<4x4xi32>", "[{}, {}]", "tensor<4x4xi32>"),
      {I32(in, dims)});
  ASSERT_FALSE(g.status) << g.status->message;
  EXPECT_EQ(g.Get<int32_t>(0), in);

  // reduce_scatter over "x" of the replicated array: device x gets rows [2x, 2x + 2) of 2 * in.
  auto s = RunText(
      Manual(mesh, R"("x")", "tensor<4x4xi32>", "[{}, {}]", "tensor<4x4xi32>",
             Collective("reduce_scatter", true, "scatter_dimension = 0 : i64, " + Groups(psum_x), "4x4xi32", "2x4xi32"),
             "tensor<2x4xi32>", R"([{"x"}, {}])", "tensor<4x4xi32>"),
      {I32(in, dims)});
  ASSERT_FALSE(s.status) << s.status->message;
  want.clear();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(2 * At(in, 4, i, j));
  EXPECT_EQ(s.Get<int32_t>(0), want);
}

// all_to_all (cross_partition ids), collective_permute and collective_broadcast over "x" with "y" free, and
// partition_id: the id of the device at the process's "x" coordinate and "y" = 0 (0 and 2), from which JAX's
// axis_index("x") = (id / 2) % 2 is the "x" coordinate.
TEST(ManualComputation, AllToAllPermuteAndPartitionIdOverXWithYFree) {
  const std::string mesh = R"("x"=2, "y"=2)";
  std::vector<int32_t> in = Iota(16, 40);
  const std::vector<int64_t> dims = {4, 4};
  // Rows split over "x" to columns split over "x": the array itself.
  auto a = RunText(Manual(mesh, R"("x")", "tensor<4x4xi32>", R"([{"x"}, {}])", "tensor<2x4xi32>",
                          Collective("all_to_all", false,
                                     "split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64, "
                                     "replica_groups = " +
                                         Dense({{0, 2}, {1, 3}}) + ", " + kChannel,
                                     "2x4xi32", "4x2xi32"),
                          "tensor<4x2xi32>", R"([{}, {"x"}])", "tensor<4x4xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(a.status) << a.status->message;
  EXPECT_EQ(a.Get<int32_t>(0), in);

  // ppermute swapping the "x" blocks (at each "y"): rows [0, 2) and [2, 4) trade places.
  auto p =
      RunText(Manual(mesh, R"("x")", "tensor<4x4xi32>", R"([{"x"}, {"y"}])", "tensor<2x4xi32>",
                     Collective("collective_permute", false,
                                "source_target_pairs = " + Dense({{0, 2}, {2, 0}, {1, 3}, {3, 1}}) + ", " + kChannel,
                                "2x4xi32", "2x4xi32"),
                     "tensor<2x4xi32>", R"([{"x"}, {"y"}])", "tensor<4x4xi32>"),
              {I32(in, dims)});
  ASSERT_FALSE(p.status) << p.status->message;
  std::vector<int32_t> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(At(in, 4, (i + 2) % 4, j));
  EXPECT_EQ(p.Get<int32_t>(0), want);

  // collective_broadcast from the first of each group, listed as [2, 0] and [3, 1]: the "x" = 1 block everywhere.
  auto b =
      RunText(Manual(mesh, R"("x")", "tensor<4x4xi32>", R"([{"x"}, {"y"}])", "tensor<2x4xi32>",
                     Collective("collective_broadcast", false,
                                "replica_groups = " + Dense({{2, 0}, {3, 1}}) + ", " + kChannel, "2x4xi32", "2x4xi32"),
                     "tensor<2x4xi32>", R"([{"x"}, {"y"}])", "tensor<4x4xi32>"),
              {I32(in, dims)});
  ASSERT_FALSE(b.status) << b.status->message;
  want.clear();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(At(in, 4, 2 + i % 2, j));
  EXPECT_EQ(b.Get<int32_t>(0), want);

  // partition_id in column 0 of each block, axis_index("x") in column 1.
  const std::string ids =
      "      %p = stablehlo.partition_id : tensor<ui32>\n"
      "      %two = stablehlo.constant dense<2> : tensor<ui32>\n"
      "      %d = stablehlo.divide %p, %two : tensor<ui32>\n"
      "      %x = stablehlo.remainder %d, %two : tensor<ui32>\n"
      "      %pv = stablehlo.reshape %p : (tensor<ui32>) -> tensor<1xui32>\n"
      "      %xv = stablehlo.reshape %x : (tensor<ui32>) -> tensor<1xui32>\n"
      "      %c = stablehlo.concatenate %pv, %xv, dim = 0 : (tensor<1xui32>, tensor<1xui32>) -> tensor<2xui32>\n"
      "      %u = stablehlo.convert %c : (tensor<2xui32>) -> tensor<2xi32>\n"
      "      %b = stablehlo.broadcast_in_dim %u, dims = [1] : (tensor<2xi32>) -> tensor<2x2xi32>\n"
      "      %r = stablehlo.add %a, %b : tensor<2x2xi32>\n";
  std::vector<int32_t> zeros(8, 0);
  const std::vector<int64_t> dims42 = {4, 2};
  auto d = RunText(Manual(mesh, R"("x")", "tensor<4x2xi32>", R"([{"x"}, {}])", "tensor<2x2xi32>", ids,
                          "tensor<2x2xi32>", R"([{"x"}, {}])", "tensor<4x2xi32>"),
                   {I32(zeros, dims42)});
  ASSERT_FALSE(d.status) << d.status->message;
  EXPECT_EQ(d.Get<int32_t>(0), (std::vector<int32_t>{0, 0, 0, 0, 2, 1, 2, 1}));
}

// send/recv (pairs of partitions) over "x" with "y" free: the devices at "x" = 1 send to those at "x" = 0, each
// device adds what it receives (zeros at "x" = 1, which is no target) to its own block.
TEST(ManualComputation, SendRecvOverXWithYFree) {
  const std::string pairs = "source_target_pairs = " + Dense({{2, 0}, {3, 1}}) + ", " + kChannel;
  const std::string body =
      "      %t = stablehlo.after_all : !stablehlo.token\n"
      "      %s = \"stablehlo.send\"(%a, %t) {" +
      pairs +
      "} : (tensor<2x4xi32>, !stablehlo.token) -> !stablehlo.token\n"
      "      %v:2 = \"stablehlo.recv\"(%t) {" +
      pairs +
      "} : (!stablehlo.token) -> (tensor<2x4xi32>, !stablehlo.token)\n"
      "      %r = stablehlo.add %v#0, %a : tensor<2x4xi32>\n";
  std::vector<int32_t> in = Iota(16, -5);
  const std::vector<int64_t> dims = {4, 4};
  auto r = RunText(Manual(R"("x"=2, "y"=2)", R"("x")", "tensor<4x4xi32>", R"([{"x"}, {"y"}])", "tensor<2x4xi32>", body,
                          "tensor<2x4xi32>", R"([{"x"}, {"y"}])", "tensor<4x4xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(At(in, 4, i, j) + (i < 2 ? At(in, 4, i + 2, j) : 0));
  EXPECT_EQ(r.Get<int32_t>(0), want);
}

// "y" manual and "x" free: psum over "y" is an all_reduce over [[0, 1], [2, 3]]; partition_id is the id at
// "x" = 0: the "y" coordinate itself.
TEST(ManualComputation, AllReduceAndPartitionIdOverYWithXFree) {
  const std::string body = Collective("all_reduce", true, Groups({{0, 1}, {2, 3}}), "4x2xi32", "4x2xi32", "%s") +
                           "      %p = stablehlo.partition_id : tensor<ui32>\n"
                           "      %c = stablehlo.convert %p : (tensor<ui32>) -> tensor<i32>\n"
                           "      %k = stablehlo.constant dense<100> : tensor<i32>\n"
                           "      %m = stablehlo.multiply %c, %k : tensor<i32>\n"
                           "      %b = stablehlo.broadcast_in_dim %m, dims = [] : (tensor<i32>) -> tensor<4x2xi32>\n"
                           "      %r = stablehlo.add %s, %b : tensor<4x2xi32>\n";
  std::vector<int32_t> in(16);
  for (int i = 0; i < 16; ++i) in[static_cast<size_t>(i)] = 7 * i % 11;
  const std::vector<int64_t> dims = {4, 4};
  auto r = RunText(Manual(R"("x"=2, "y"=2)", R"("y")", "tensor<4x4xi32>", R"([{"x"}, {"y"}])", "tensor<4x2xi32>", body,
                          "tensor<4x2xi32>", R"([{}, {"y"}])", "tensor<4x4xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(At(in, 4, i, j % 2) + At(in, 4, i, j % 2 + 2) + 100 * (j / 2));
  EXPECT_EQ(r.Get<int32_t>(0), want);
}

// A permuted mesh, <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]> with "x" manual: position (x, y) is device
// 3 - (2x + y), so "x" = 0 is devices 3 and 2, "x" = 1 devices 1 and 0. Groups listed as [1, 3] and [0, 2] put
// "x" = 1 first: all_gather concatenates its block first. partition_id is the device at "y" = 0: 3 and 1.
TEST(ManualComputation, PermutedMeshWithYFreeNamesDevicesByTheirIds) {
  const std::string mesh = R"("x"=2, "y"=2], device_ids=[3, 2, 1, 0)";
  std::vector<int32_t> in = Iota(8, 1);
  const std::vector<int64_t> dims = {4, 2};
  auto g = RunText(Manual(mesh, R"("x")", "tensor<4x2xi32>", R"([{"x"}, {"y"}])", "tensor<2x2xi32>",
                          Collective("all_gather", false, "all_gather_dim = 0 : i64, " + Groups({{1, 3}, {0, 2}}),
                                     "2x2xi32", "4x2xi32"),
                          "tensor<4x2xi32>", "[{}, {}]", "tensor<4x2xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(g.status) << g.status->message;
  EXPECT_EQ(g.Get<int32_t>(0), (std::vector<int32_t>{5, 6, 7, 8, 1, 2, 3, 4}));

  auto p = RunText(Manual(mesh, R"("x")", "tensor<4x2xi32>", R"([{"x"}, {}])", "tensor<2x2xi32>",
                          PartitionIds("2x2xi32"), "tensor<2x2xi32>", R"([{"x"}, {}])", "tensor<4x2xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(p.status) << p.status->message;
  EXPECT_EQ(p.Get<int32_t>(0), (std::vector<int32_t>{3, 3, 3, 3, 1, 1, 1, 1}));
}

// A 3-axis mesh ["x"=2, "y"=2, "z"=2] (id 4x + 2y + z) with "x" and "z" manual and "y" free: psum over "x"
// ([[0, 4], [1, 5], [2, 6], [3, 7]]) then all_gather over "z" along dim 1 ([[0, 1], [2, 3], [4, 5], [6, 7]]):
// every device has the sum of the two "x" row blocks, whole. partition_id is 4x + z.
TEST(ManualComputation, ThreeAxisMeshWithTwoManualAxes) {
  const std::string mesh = R"("x"=2, "y"=2, "z"=2)";
  const std::string body =
      Collective("all_reduce", true, Groups({{0, 4}, {1, 5}, {2, 6}, {3, 7}}), "2x2xi32", "2x2xi32", "%s") +
      Collective("all_gather", false, "all_gather_dim = 1 : i64, " + Groups({{0, 1}, {2, 3}, {4, 5}, {6, 7}}),
                 "2x2xi32", "2x4xi32", "%r", "%s");
  std::vector<int32_t> in(16);
  for (int i = 0; i < 16; ++i) in[static_cast<size_t>(i)] = (i * 5) % 13 - 6;
  const std::vector<int64_t> dims = {4, 4};
  auto r = RunText(Manual(mesh, R"("x", "z")", "tensor<4x4xi32>", R"([{"x"}, {"z"}])", "tensor<2x2xi32>", body,
                          "tensor<2x4xi32>", "[{}, {}]", "tensor<2x4xi32>"),
                   {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(At(in, 4, i, j) + At(in, 4, i + 2, j));
  EXPECT_EQ(r.Get<int32_t>(0), want);
  auto c = CompileText(Manual(mesh, R"("x", "z")", "tensor<4x4xi32>", R"([{"x"}, {"z"}])", "tensor<2x2xi32>", body,
                              "tensor<2x4xi32>", "[{}, {}]", "tensor<2x4xi32>"));
  ASSERT_FALSE(c.status) << c.status->message;
  EXPECT_EQ(c.program->num_manual_devices(), 4u);  // one per ("x", "z"), not per mesh device

  std::vector<int32_t> zeros(16, 0);
  auto p = RunText(Manual(mesh, R"("x", "z")", "tensor<4x4xi32>", R"([{"x"}, {"z"}])", "tensor<2x2xi32>",
                          PartitionIds("2x2xi32"), "tensor<2x2xi32>", R"([{"x"}, {"z"}])", "tensor<4x4xi32>"),
                   {I32(zeros, dims)});
  ASSERT_FALSE(p.status) << p.status->message;
  want.clear();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(4 * (i / 2) + j / 2);
  EXPECT_EQ(p.Get<int32_t>(0), want);
}

// A manual axis of one device beside a free axis of two (["x"=1, "y"=2], "x" manual): the body still runs as a
// process (one) whose groups name the mesh's devices: psum over "x" is an all_reduce over [[0], [1]] (the value
// itself), and a group across "y" is refused as over more devices.
TEST(ManualComputation, OneManualDeviceBesideAFreeAxisStillNamesTheMesh) {
  const auto text = [](const std::vector<std::vector<int>>& groups) {
    return Manual(R"("x"=1, "y"=2)", R"("x")", "tensor<2x4xi32>", R"([{"x"}, {"y"}])", "tensor<2x4xi32>",
                  Collective("all_reduce", true, Groups(groups), "2x4xi32", "2x4xi32"), "tensor<2x4xi32>",
                  R"([{"x"}, {"y"}])", "tensor<2x4xi32>");
  };
  std::vector<int32_t> in = Iota(8, 11);
  const std::vector<int64_t> dims = {2, 4};
  auto r = RunText(text({{0}, {1}}), {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), in);
  EXPECT_TRUE(Refused(CompileText(text({{0, 1}})).status, NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "test.mlir:6:7: 'stablehlo.all_reduce': replica_groups groups device 0 (x=0, y=0) with device 1 "
                      "(x=0, y=1)"));
}

// Groups and pairs the run cannot honour: INVALID_ARGUMENT naming the op and its line (6:7). And more devices
// than threads it would start: UNIMPLEMENTED.
TEST(ManualComputation, GroupsThatDifferAcrossTheFreeAxisAreInvalidNamingTheOp) {
  const auto compile = [](const std::string& body) {
    return CompileText(Manual(R"("x"=2, "y"=2)", R"("x")", "tensor<4x4xi32>", R"([{"x"}, {}])", "tensor<2x4xi32>", body,
                              "tensor<2x4xi32>", R"([{"x"}, {}])", "tensor<4x4xi32>"))
        .status;
  };
  const auto reduce = [&](const std::vector<std::vector<int>>& rows) {
    return compile(Collective("all_reduce", true, Groups(rows), "2x4xi32", "2x4xi32"));
  };
  const auto permute = [&](const std::vector<std::vector<int>>& pairs) {
    return compile(Collective("collective_permute", false, "source_target_pairs = " + Dense(pairs) + ", " + kChannel,
                              "2x4xi32", "2x4xi32"));
  };
  const std::string at = "test.mlir:6:7: 'stablehlo.all_reduce': replica_groups ";
  // A group across "y" (psum over both axes' devices where only "x" is manual).
  EXPECT_TRUE(Refused(reduce({{0, 1}, {2, 3}}), NEURONMEM_STATUS_INVALID_ARGUMENT,
                      at + "groups device 0 (x=0, y=0) with device 1 (x=0, y=1), which is at other coordinates of "
                           "the mesh axes that are not manual"));
  EXPECT_TRUE(Refused(reduce({{0, 1, 2, 3}}), NEURONMEM_STATUS_INVALID_ARGUMENT,
                      at + "groups device 0 (x=0, y=0) with device 1 (x=0, y=1)"));
  // The "y" = 1 group in the other order.
  EXPECT_TRUE(Refused(reduce({{0, 2}, {3, 1}}), NEURONMEM_STATUS_INVALID_ARGUMENT,
                      at + "puts device 0 (x=0, y=0) in group [0, 2] and device 1 (x=0, y=1) in group [3, 1]"));
  // No group at "y" = 1.
  EXPECT_TRUE(Refused(reduce({{0, 2}}), NEURONMEM_STATUS_INVALID_ARGUMENT,
                      at + "puts device 0 (x=0, y=0) in group [0, 2] and device 1 (x=0, y=1) in none"));
  // A device the mesh does not have.
  EXPECT_TRUE(Refused(reduce({{0, 2}, {1, 7}}), NEURONMEM_STATUS_INVALID_ARGUMENT,
                      at + "names device 7, which is not a device of mesh @mesh (4 devices)"));
  // A channel without use_global_device_ids (cross_replica_and_partition): every partition, across "y".
  EXPECT_TRUE(
      Refused(compile(Collective("all_reduce", true, "replica_groups = " + Dense({{0}}) + ", " + std::string(kChannel),
                                 "2x4xi32", "2x4xi32")),
              NEURONMEM_STATUS_INVALID_ARGUMENT,
              "test.mlir:6:7: 'stablehlo.all_reduce': replica_groups (cross_replica_and_partition: every "
              "partition of the replicas) groups device 0 (x=0, y=0) with device 1 (x=0, y=1)"));
  // all_to_all's cross_partition groups likewise.
  EXPECT_TRUE(Refused(compile(Collective("all_to_all", false,
                                         "split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : "
                                         "i64, replica_groups = " +
                                             Dense({{0, 3}, {1, 2}}) + ", " + kChannel,
                                         "2x4xi32", "4x2xi32")),
                      NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "test.mlir:6:7: 'stablehlo.all_to_all': replica_groups groups device 0 (x=0, y=0) with device 3 "
                      "(x=1, y=1)"));
  // Pairs across "y", a pair without its counterpart at "y" = 1, a device outside the mesh.
  const std::string pat = "test.mlir:6:7: 'stablehlo.collective_permute': source_target_pairs ";
  EXPECT_TRUE(Refused(permute({{0, 3}, {3, 0}}), NEURONMEM_STATUS_INVALID_ARGUMENT,
                      pat + "pairs device 0 (x=0, y=0) with device 3 (x=1, y=1)"));
  EXPECT_TRUE(Refused(permute({{0, 2}, {2, 0}, {1, 3}}), NEURONMEM_STATUS_INVALID_ARGUMENT,
                      pat + "has [2, 0] (device 2 (x=1, y=0) to device 0 (x=0, y=0)) but not [3, 1] (device 3 (x=1, "
                            "y=1) to device 1 (x=0, y=1))"));
  EXPECT_TRUE(Refused(permute({{0, 9}}), NEURONMEM_STATUS_INVALID_ARGUMENT,
                      pat + "names device 9, which is not a device of mesh @mesh (4 devices)"));

  // A mesh of more devices than the groups may name (also one whose size overflows 64 bits).
  for (const char* y : {"65536", "999999999999999"}) {
    auto big =
        CompileText(Manual(std::string(R"("x"=2, "y"=)") + y, R"("x")", "tensor<4x4xi32>", R"([{"x"}, {}])",
                           "tensor<2x4xi32>", Collective("all_reduce", true, Groups({{0, 1}}), "2x4xi32", "2x4xi32"),
                           "tensor<2x4xi32>", R"([{"x"}, {}])", "tensor<4x4xi32>"));
    EXPECT_TRUE(Refused(big.status, NEURONMEM_STATUS_UNIMPLEMENTED,
                        "test.mlir:4:5: 'sdy.manual_computation': the body contains 'stablehlo.all_reduce' (line "
                        "6:7), which communicates between devices, and mesh @mesh has more than 65536 devices"));
  }
  // More devices than threads it would start.
  const std::string one = "      %r = \"stablehlo.all_reduce\"(%a) " + AddRegion("i32") +
                          " {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, " + kChannel +
                          ", use_global_device_ids} : (tensor<1xi32>) -> tensor<1xi32>\n";
  auto c = CompileText(Manual(R"("x"=8192)", R"("x")", "tensor<8192xi32>", R"([{"x"}])", "tensor<1xi32>", one,
                              "tensor<1xi32>", R"([{"x"}])", "tensor<8192xi32>"));
  EXPECT_TRUE(Refused(c.status, NEURONMEM_STATUS_UNIMPLEMENTED,
                      "the manual axes name 8192 devices: a body that communicates runs each device on a "
                      "thread of its own, at most 4096"));
}

// Bad input: a shape the axes do not divide, a manual axis or a sharding axis the mesh does not have. Each
// INVALID_ARGUMENT naming the op and its line.
TEST(ManualComputation, BadShardingsAreInvalidNamingTheOp) {
  const std::string body = "      %r = \"stablehlo.all_reduce\"(%a) " + AddRegion("i32") +
                           " {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, " + kChannel +
                           ", use_global_device_ids} : (tensor<2x4xi32>) -> tensor<2x4xi32>\n";
  // 5 rows do not split 2 ways into 2.
  auto c = CompileText(Manual(R"("x"=2)", R"("x")", "tensor<5x4xi32>", R"([{"x"}, {}])", "tensor<2x4xi32>", body,
                              "tensor<2x4xi32>", "[{}, {}]", "tensor<2x4xi32>"));
  EXPECT_TRUE(Refused(c.status, NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "test.mlir:4:5: 'sdy.manual_computation': operand 0: tensor<5x4xi32> split 2 ways along "
                      "dim 0 is not the body's tensor<2x4xi32>"));
  // A manual axis the mesh does not have.
  c = CompileText(Manual(R"("x"=2)", R"("x", "z")", "tensor<4x4xi32>", R"([{"x"}, {}])", "tensor<2x4xi32>", body,
                         "tensor<2x4xi32>", R"([{"x"}, {}])", "tensor<4x4xi32>"));
  EXPECT_TRUE(Refused(c.status, NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "test.mlir:4:5: 'sdy.manual_computation': manual axis \"z\" is not an axis of mesh @mesh"));
  // A sharding that names an axis the mesh does not have.
  c = CompileText(Manual(R"("x"=2)", R"("x")", "tensor<4x4xi32>", R"([{"x"}, {"q"}])", "tensor<2x4xi32>", body,
                         "tensor<2x4xi32>", R"([{"x"}, {}])", "tensor<4x4xi32>"));
  EXPECT_TRUE(Refused(c.status, NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "test.mlir:4:5: 'sdy.manual_computation': the sharding of operand 0 names axis \"q\", "
                      "which is not an axis of mesh @mesh"));
}

// Devices that disagree (only device 0 reaches the all_reduce, through a branch on partition_id): the run fails
// naming the op, the device and what it waits for, instead of hanging.
TEST(ManualComputation, ADeviceThatNeverJoinsFailsTheRunNamingTheOp) {
  const std::string body =
      "      %p = stablehlo.partition_id : tensor<ui32>\n"
      "      %zero = stablehlo.constant dense<0> : tensor<ui32>\n"
      "      %first = stablehlo.compare EQ, %p, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>\n"
      "      %r = \"stablehlo.if\"(%first) ({\n"
      "        %s = \"stablehlo.all_reduce\"(%a) " +
      AddRegion("i32") + " {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, " + kChannel +
      ", use_global_device_ids} : (tensor<2x2xi32>) -> tensor<2x2xi32>\n"
      "        stablehlo.return %s : tensor<2x2xi32>\n"
      "      }, {\n"
      "        stablehlo.return %a : tensor<2x2xi32>\n"
      "      }) : (tensor<i1>) -> tensor<2x2xi32>\n";
  std::vector<int32_t> in = Iota(8);
  const std::vector<int64_t> dims = {4, 2};
  auto r = RunText(Manual(R"("x"=2)", R"("x")", "tensor<4x2xi32>", R"([{"x"}, {}])", "tensor<2x2xi32>", body,
                          "tensor<2x2xi32>", R"([{"x"}, {}])", "tensor<4x2xi32>"),
                   {I32(in, dims)});
  ASSERT_TRUE(r.status);
  EXPECT_TRUE(Has(r.status, "test.mlir:4:5: 'sdy.manual_computation' on device 0")) << r.status->message;
  EXPECT_TRUE(Has(r.status, "'stablehlo.all_reduce'")) << r.status->message;
}

// ---- Shardy's exported form ---------------------------------------------------------------------------------

// What jax.export leaves of `shard_map(psum, mesh, in_specs=P("x"), out_specs=P())` under Shardy: the mesh in a
// frontend attribute, GlobalToLocalShape, a call of the body, LocalToGlobalShape. `in_sharding` is the operand's
// (escaped as the attribute is), `local` the body's type, `extra` ops after the LocalToGlobalShape.
// `mesh`: the mesh's axes (escaped), `groups` the body's all_reduce groups.
std::string Exported(const std::string& in_sharding, const std::string& local, const std::string& extra = "",
                     const std::string& mesh = R"(\22x\22=2)", const std::vector<std::vector<int>>& groups = {{0, 1}}) {
  const std::string t = "tensor<" + local + ">", g = "tensor<8x2xi32>";
  const std::string manual = R"(xla.sdy.manual_axes = "#sdy<manual_axes{\22x\22}>")";
  return "module @jit_f attributes {mhlo.frontend_attributes = {\n"
         "    xla.sdy.meshes = \"{mesh = #sdy.mesh<[" +
         mesh +
         "]>}\"}, mhlo.num_partitions = 2 : i32} {\n"
         "  func.func public @main(%arg0: " +
         g + ") -> " + t +
         " {\n"
         "    %1 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%arg0) {has_side_effect = true,\n"
         "        mhlo.frontend_attributes = {\n"
         "        xla.sdy.in_shardings = \"#sdy.sharding_per_value<[<@mesh, " +
         in_sharding + ">]>\",\n        " + manual + "}} : (" + g + ") -> " + t +
         "\n"
         "    %2 = call @xla.sdy.manual_computation_body(%1) {mhlo.frontend_attributes = {inlineable = \"false\"}}\n"
         "        : (" +
         t + ") -> " + t +
         "\n"
         "    %3 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%2) {has_side_effect = true,\n"
         "        mhlo.frontend_attributes = {" +
         manual +
         ",\n"
         "        xla.sdy.out_shardings = \"#sdy.sharding_per_value<[<@mesh, [{}, {}]>]>\"}} : (" +
         t + ") -> " + t + "\n" + extra + "    return %3 : " + t +
         "\n  }\n"
         "  func.func @xla.sdy.manual_computation_body(%arg0: " +
         t + ") -> " + t + " {\n    %0 = \"stablehlo.all_reduce\"(%arg0) " + AddRegion("i32") +
         " {replica_groups = " + Dense(groups) + ",\n        " + kChannel + ", use_global_device_ids} : (" + t +
         ") -> " + t + "\n    return %0 : " + t + "\n  }\n}\n";
}

// psum of the two row halves, replicated out: the sum of the halves, as for sdy.manual_computation.
TEST(ManualComputation, ExportedRoundTripRunsLikeTheOp) {
  std::vector<int32_t> in = Iota(16, 3);
  const std::vector<int64_t> dims = {8, 2};
  auto r = RunText(Exported(R"([{\22x\22}, {}])", "4x2xi32"), {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want(8);
  for (int i = 0; i < 8; ++i)
    want[static_cast<size_t>(i)] = in[static_cast<size_t>(i)] + in[static_cast<size_t>(i + 8)];
  EXPECT_EQ(r.Get<int32_t>(0), want);
  auto c = CompileText(Exported(R"([{\22x\22}, {}])", "4x2xi32"));
  ASSERT_FALSE(c.status) << c.status->message;
  EXPECT_EQ(c.program->num_manual_devices(), 2u);
}

// The exported form over ["x"=2, "y"=2] with "y" free: the called body's all_reduce over [[0, 2], [1, 3]] sums
// the two row halves.
TEST(ManualComputation, ExportedRoundTripWithAFreeAxis) {
  std::vector<int32_t> in = Iota(16, -7);
  const std::vector<int64_t> dims = {8, 2};
  const std::string text = Exported(R"([{\22x\22}, {}])", "4x2xi32", "", R"(\22x\22=2, \22y\22=2)", {{0, 2}, {1, 3}});
  auto r = RunText(text, {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want;
  for (int i = 0; i < 8; ++i) want.push_back(in[static_cast<size_t>(i)] + in[static_cast<size_t>(i + 8)]);
  EXPECT_EQ(r.Get<int32_t>(0), want);
  // Groups across "y" in the called body: INVALID_ARGUMENT at its all_reduce.
  auto bad = CompileText(Exported(R"([{\22x\22}, {}])", "4x2xi32", "", R"(\22x\22=2, \22y\22=2)", {{0, 1}, {2, 3}}));
  EXPECT_TRUE(Refused(bad.status, NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "'stablehlo.all_reduce': replica_groups groups device 0 (x=0, y=0) with device 1 (x=0, y=1)"));
}

// An exported round trip that splits nothing (the operand replicated over "x") but whose body communicates runs
// its two devices as well: psum of the whole array on both is twice the array.
TEST(ManualComputation, ExportedRoundTripThatSplitsNothingStillCommunicates) {
  std::vector<int32_t> in = Iota(16, 2);
  const std::vector<int64_t> dims = {8, 2};
  auto r = RunText(Exported("[{}, {}]", "8x2xi32"), {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  std::vector<int32_t> want(in);
  for (int32_t& v : want) v *= 2;
  EXPECT_EQ(r.Get<int32_t>(0), want);
}

// A function called both from @main and from a body with "y" free is compiled once for each: its partition_id
// is 0 in @main (a run of its own) and the body's device ids (0 and 2) in the body.
TEST(ManualComputation, AFunctionCalledInAndOutsideABodyIsCompiledForEach) {
  const std::string text =
      "module @m {\n"
      "  sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n"
      "  func.func private @pid() -> tensor<i32> {\n"
      "    %p = stablehlo.partition_id : tensor<ui32>\n"
      "    %c = stablehlo.convert %p : (tensor<ui32>) -> tensor<i32>\n"
      "    return %c : tensor<i32>\n"
      "  }\n"
      "  func.func @main(%arg0: tensor<2xi32>) -> tensor<2xi32> {\n"
      "    %o = func.call @pid() : () -> tensor<i32>\n"
      "    %ob = stablehlo.broadcast_in_dim %o, dims = [] : (tensor<i32>) -> tensor<2xi32>\n"
      "    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"x\"}]>] out_shardings=[<@mesh, [{\"x\"}]>]\n"
      "        manual_axes={\"x\"} (%a: tensor<1xi32>) {\n"
      "      %c = func.call @pid() : () -> tensor<i32>\n"
      "      %r = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<1xi32>\n"
      "      sdy.return %r : tensor<1xi32>\n"
      "    } : (tensor<2xi32>) -> tensor<2xi32>\n"
      "    %s = stablehlo.add %1, %ob : tensor<2xi32>\n"
      "    %o2 = func.call @pid() : () -> tensor<i32>\n"
      "    %ob2 = stablehlo.broadcast_in_dim %o2, dims = [] : (tensor<i32>) -> tensor<2xi32>\n"
      "    %t = stablehlo.add %s, %ob2 : tensor<2xi32>\n"
      "    return %t : tensor<2xi32>\n"
      "  }\n"
      "}\n";
  std::vector<int32_t> in = {0, 0};
  const std::vector<int64_t> dims = {2};
  auto r = RunText(text, {I32(in, dims)});
  ASSERT_FALSE(r.status) << r.status->message;
  EXPECT_EQ(r.Get<int32_t>(0), (std::vector<int32_t>{0, 2}));
}

TEST(ManualComputation, ExportedRoundTripBadInputNamesTheOp) {
  // A local value something else reads too: the split cannot pass through.
  auto c = CompileText(Exported(R"([{\22x\22}, {}])", "4x2xi32", "    %4 = stablehlo.add %1, %1 : tensor<4x2xi32>\n"));
  EXPECT_TRUE(Refused(c.status, NEURONMEM_STATUS_UNIMPLEMENTED,
                      "test.mlir:4:5: 'stablehlo.custom_call': @xla.sdy.GlobalToLocalShape changes value 0 "
                      "from tensor<8x2xi32> to tensor<4x2xi32> (a manual axis splits it over several devices), "
                      "and is not one end of a manual computation"));
  // 8 rows split 2 ways are not 3.
  c = CompileText(Exported(R"([{\22x\22}, {}])", "3x2xi32"));
  EXPECT_TRUE(Refused(c.status, NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "test.mlir:10:5: 'stablehlo.custom_call': operand 0: tensor<8x2xi32> split 2 ways along "
                      "dim 0 is not the body's tensor<3x2xi32>"));
  // An axis the mesh does not have.
  c = CompileText(Exported(R"([{\22w\22}, {}])", "4x2xi32"));
  EXPECT_TRUE(Refused(c.status, NEURONMEM_STATUS_INVALID_ARGUMENT,
                      "test.mlir:10:5: 'stablehlo.custom_call': the sharding of operand 0 names axis \"w\", "
                      "which is not an axis of mesh @mesh"));
}

}  // namespace
}  // namespace neuronmem::interp
