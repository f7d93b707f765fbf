// The executable C API: compile, queries, execute, placement (strict, auto_copy, pinned_host in place,
// intra-graph moves), results in their declared kinds, donation, statistics, out of memory, bad input.
#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

const char kAdd[] = R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

// A pinned_host argument, a device result.
const char kPinnedArg[] = R"(
func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

// Offloading: a value moved to pinned_host and back, a result declared in pinned_host.
const char kMoves[] = R"(
func.func @main(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.add %a, %a : tensor<8xf32>
  %1 = stablehlo.custom_call @annotate_device_placement(%0) {has_side_effect = true,
      mhlo.frontend_attributes = {_xla_buffer_placement = "pinned_host"}} : (tensor<8xf32>) -> tensor<8xf32>
  %2 = stablehlo.custom_call @MoveToDevice(%1) {backend_config = ""} : (tensor<8xf32>) -> tensor<8xf32>
  %3 = stablehlo.multiply %2, %a : tensor<8xf32>
  %4 = stablehlo.custom_call @MoveToHost(%3) {backend_config = ""} : (tensor<8xf32>) -> tensor<8xf32>
  return %2, %4 : tensor<8xf32>, tensor<8xf32>
}
)";

const char kDonate[] = R"(
func.func @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

TEST_F(ExecTest, CompileAndQueries) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kPinnedArg, &e));
  neuronmem_executable_properties_t p{};
  p.struct_size = sizeof p;
  ASSERT_OK(neuronmem_executable_properties(e, &p));
  EXPECT_EQ(p.num_parameters, 2u);
  EXPECT_EQ(p.num_outputs, 1u);
  EXPECT_EQ(p.num_replicas, 1u);
  EXPECT_GT(p.peak_device_bytes, 0u);
  EXPECT_EQ(p.num_explicit_moves, 0u);
  neuronmem_executable_value_t v{};
  v.struct_size = sizeof v;
  ASSERT_OK(neuronmem_executable_parameter(e, 0, &v));
  EXPECT_EQ(v.element_type, NEURONMEM_ELEMENT_TYPE_F32);
  ASSERT_EQ(v.num_dims, 1u);
  EXPECT_EQ(v.dims[0], 4);
  EXPECT_EQ(v.memory_kind, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  EXPECT_EQ(v.bytes, 16u);
  EXPECT_EQ(v.donation, -1);
  ASSERT_OK(neuronmem_executable_output(e, 0, &v));
  EXPECT_EQ(v.memory_kind, NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_memory_t* m = nullptr;
  ASSERT_OK(neuronmem_executable_parameter_memory(e, Device(), 0, &m));
  EXPECT_EQ(m, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
  ASSERT_OK(neuronmem_executable_output_memory(e, Device(), 0, &m));
  EXPECT_EQ(m, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  EXPECT_EQ(Take(neuronmem_executable_parameter(e, 2, &v)).code, NEURONMEM_STATUS_OUT_OF_RANGE);
  v.struct_size = 8;
  EXPECT_EQ(Take(neuronmem_executable_output(e, 0, &v)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
}

TEST_F(ExecTest, ExecuteAddsWithoutTransfers) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kAdd, &e));
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, dev);
  neuronmem_buffer_t* b = Upload({10, 20, 30, 40}, {4}, dev);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a, b}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(KindOf(results[0]), NEURONMEM_MEMORY_KIND_DEVICE);
  const neuronmem_execution_stats_t st = Stats(x);
  EXPECT_EQ(st.explicit_transfers, 0u);
  EXPECT_EQ(st.implicit_transfers, 0u);
  EXPECT_EQ(st.implicit_bytes, 0u);
  // The arguments are intact and can run again.
  EXPECT_EQ(Read(a, 4), (std::vector<float>{1, 2, 3, 4}));
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

TEST_F(ExecTest, StrictRefusesAnArgumentInAnotherKind) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kAdd, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
  neuronmem_buffer_t* b = Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  const Result r = Take(Execute(e, {a, b}, &results, &done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("argument 0"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("must live in device"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("lives in pinned_host"), std::string::npos) << r.message;
  EXPECT_EQ(done, nullptr);
  EXPECT_EQ(results[0], nullptr);
  EXPECT_EQ(Read(a, 4), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(ExecTest, AutoCopyMovesAndCountsImplicit) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kAdd, &e, NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
  neuronmem_buffer_t* b = Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_UNPINNED_HOST));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a, b}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{2, 3, 4, 5}));
  const neuronmem_execution_stats_t st = Stats(x);
  EXPECT_EQ(st.implicit_transfers, 2u);
  EXPECT_EQ(st.implicit_bytes, 32u);
  EXPECT_EQ(st.explicit_transfers, 0u);
  const neuronmem_transfer_counts_t c = Pair(x, NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE);
  EXPECT_EQ(c.implicit_transfers, 1u);
  EXPECT_EQ(c.implicit_bytes, 16u);
  EXPECT_EQ(Pair(x, NEURONMEM_MEMORY_KIND_UNPINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE).implicit_bytes, 16u);
  EXPECT_EQ(Pair(x, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST).implicit_bytes, 0u);
  EXPECT_EQ(KindOf(a), NEURONMEM_MEMORY_KIND_PINNED_HOST);  // the argument stays where it was
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

// An implicit copy that fails moved nothing: the failed execution's statistics count no implicit transfer.
TEST_F(ExecTest, AFailedImplicitCopyIsNotCounted) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kAdd, &e, NEURONMEM_ARGUMENT_PLACEMENT_AUTO_COPY));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  // %b's upload waits for a gate that fails, so its content fails after the execution was submitted.
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  const std::vector<float> data{1, 1, 1, 1};
  const int64_t dims[1] = {4};
  neuronmem_buffer_from_host_args_t up{};
  up.struct_size = sizeof up;
  up.data = data.data();
  up.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  up.dims = dims;
  up.num_dims = 1;
  up.memory = Memory(NEURONMEM_MEMORY_KIND_UNPINNED_HOST);
  up.wait.events = &gate;
  up.wait.num_events = 1;
  neuronmem_buffer_t* b = nullptr;
  neuronmem_event_t* b_ready = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &up, &b, &b_ready, nullptr));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a, b}, &results, &done, &x));
  neuronmem_status_t* why = neuronmem_buffer_delete(nullptr);  // any status will do
  ASSERT_OK(neuronmem_event_complete(gate, why));
  neuronmem_status_free(why);
  const Result r = Take(neuronmem_event_wait(done, -1));
  EXPECT_NE(r.code, NEURONMEM_STATUS_OK);
  EXPECT_NE(r.message.find("implicit copy"), std::string::npos) << r.message;
  const neuronmem_execution_stats_t st = Stats(x);
  EXPECT_EQ(st.implicit_transfers, 0u);
  EXPECT_EQ(st.implicit_bytes, 0u);
  EXPECT_EQ(Pair(x, NEURONMEM_MEMORY_KIND_UNPINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE).implicit_bytes, 0u);
  neuronmem_buffer_destroy(b);
  neuronmem_event_destroy(b_ready);
  neuronmem_event_destroy(gate);
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

TEST_F(ExecTest, PinnedHostArgumentIsReadInPlace) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kPinnedArg, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
  neuronmem_buffer_t* b = Upload({2, 2, 2, 2}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a, b}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{2, 4, 6, 8}));
  const neuronmem_execution_stats_t st = Stats(x);
  EXPECT_EQ(st.explicit_bytes + st.implicit_bytes, 0u);
  EXPECT_EQ(st.explicit_transfers + st.implicit_transfers, 0u);
  // Given in device memory instead, strict refuses it.
  neuronmem_buffer_t* d = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> r2;
  neuronmem_event_t* done2 = nullptr;
  const Result r = Take(Execute(e, {d, b}, &r2, &done2));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("must live in pinned_host"), std::string::npos) << r.message;
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

TEST_F(ExecTest, IntraGraphMovesAreRealAndExplicit) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kMoves, &e));
  neuronmem_executable_properties_t p{};
  p.struct_size = sizeof p;
  ASSERT_OK(neuronmem_executable_properties(e, &p));
  EXPECT_EQ(p.num_explicit_moves, 3u);
  EXPECT_GE(p.peak_host_bytes, 32u);  // the moved values live in pinned_host memory
  neuronmem_executable_value_t v{};
  v.struct_size = sizeof v;
  ASSERT_OK(neuronmem_executable_output(e, 1, &v));
  EXPECT_EQ(v.memory_kind, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8};
  neuronmem_buffer_t* a = Upload(in, {8}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  std::vector<float> twice, cube;
  for (float f : in) {
    twice.push_back(2 * f);
    cube.push_back(2 * f * f);
  }
  EXPECT_EQ(Read(results[0], 8), twice);
  EXPECT_EQ(Read(results[1], 8), cube);
  EXPECT_EQ(KindOf(results[0]), NEURONMEM_MEMORY_KIND_DEVICE);
  EXPECT_EQ(KindOf(results[1]), NEURONMEM_MEMORY_KIND_PINNED_HOST);
  const neuronmem_execution_stats_t st = Stats(x);
  EXPECT_EQ(st.implicit_transfers, 0u);
  EXPECT_EQ(st.explicit_transfers, 3u);
  EXPECT_EQ(st.explicit_bytes, 96u);
  EXPECT_EQ(Pair(x, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST).explicit_transfers, 2u);
  EXPECT_EQ(Pair(x, NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE).explicit_transfers, 1u);
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

TEST_F(ExecTest, DonationReusesTheArgumentAndDeletesIt) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kDonate, &e));
  neuronmem_executable_value_t v{};
  v.struct_size = sizeof v;
  ASSERT_OK(neuronmem_executable_parameter(e, 0, &v));
  EXPECT_EQ(v.donation, 0);
  ASSERT_OK(neuronmem_executable_output(e, 0, &v));
  EXPECT_EQ(v.donation, 0);
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_memory_stats_t before{};
  before.struct_size = sizeof before;
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, dev);
  neuronmem_buffer_t* b = Upload({1, 1, 1, 1}, {4}, dev);
  ASSERT_OK(neuronmem_memory_stats(dev, &before));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a, b}, &results, &done));
  bool deleted = false;
  ASSERT_OK(neuronmem_buffer_is_deleted(a, &deleted));
  EXPECT_TRUE(deleted);
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{2, 3, 4, 5}));
  neuronmem_memory_stats_t after{};
  after.struct_size = sizeof after;
  ASSERT_OK(neuronmem_memory_stats(dev, &after));
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);  // the result took the argument's memory
  // The donated buffer cannot be used again; the other argument can.
  std::vector<neuronmem_buffer_t*> r2;
  neuronmem_event_t* done2 = nullptr;
  const Result r = Take(Execute(e, {a, b}, &r2, &done2));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("argument 0"), std::string::npos) << r.message;
  // non_donatable keeps it.
  neuronmem_buffer_t* c = Upload({5, 5, 5, 5}, {4}, dev);
  std::vector<neuronmem_buffer_t*> r3;
  neuronmem_event_t* done3 = nullptr;
  ASSERT_OK(Execute(e, {c, b}, &r3, &done3, nullptr, {}, 0, {0}));
  ASSERT_OK(neuronmem_event_wait(done3, -1));
  ASSERT_OK(neuronmem_buffer_is_deleted(c, &deleted));
  EXPECT_FALSE(deleted);
  EXPECT_EQ(Read(r3[0], 4), (std::vector<float>{6, 6, 6, 6}));
  neuronmem_event_destroy(done);
  neuronmem_event_destroy(done3);
}

// A KV-cache-like update: two scatters into a donated argument. Donated, it is updated where it lies (no
// workspace for it, no copy, the result is the argument's memory); kept (non_donatable), the argument is
// untouched and the result is bit-identical.
TEST_F(ExecTest, DonatedArgumentIsUpdatedInPlaceAndAKeptOneIsNot) {
  const std::string body = R"(
  %i = stablehlo.constant dense<[[1], [3]]> : tensor<2x1xi32>
  %s1 = "stablehlo.scatter"(%c, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [],
      inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%p: tensor<f32>, %q: tensor<f32>):
    %x = stablehlo.add %p, %q : tensor<f32>
    stablehlo.return %x : tensor<f32>
  }) : (tensor<8xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<8xf32>
  %s2 = "stablehlo.scatter"(%s1, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [],
      inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%p: tensor<f32>, %q: tensor<f32>):
    %x = stablehlo.multiply %p, %q : tensor<f32>
    stablehlo.return %x : tensor<f32>
  }) : (tensor<8xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<8xf32>
  return %s2 : tensor<8xf32>
}
)";
  neuronmem_executable_t* donating = nullptr;
  neuronmem_executable_t* plain = nullptr;
  ASSERT_OK(
      Compile("func.func @main(%c: tensor<8xf32> {tf.aliasing_output = 0 : i32}, %u: tensor<2xf32>) -> "
              "tensor<8xf32> {" +
                  body,
              &donating));
  ASSERT_OK(Compile("func.func @main(%c: tensor<8xf32>, %u: tensor<2xf32>) -> tensor<8xf32> {" + body, &plain));
  neuronmem_executable_properties_t pd{}, pp{};
  pd.struct_size = pp.struct_size = sizeof pd;
  ASSERT_OK(neuronmem_executable_properties(donating, &pd));
  ASSERT_OK(neuronmem_executable_properties(plain, &pp));
  EXPECT_LT(pd.peak_device_bytes, pp.peak_device_bytes);  // the updates need no workspace of their own
  const std::vector<float> cache = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> expect = {1, 2.5f * 0.5f, 3, 6 * 2, 5, 6, 7, 8};
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_buffer_t* u = Upload({0.5f, 2}, {2}, dev);
  // Kept: the argument stays, the result is new memory.
  neuronmem_buffer_t* kept = Upload(cache, {8}, dev);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(donating, {kept, u}, &results, &done, nullptr, {}, 0, {0}));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  neuronmem_event_destroy(done);
  EXPECT_EQ(Read(kept, 8), cache);
  const std::vector<float> kept_result = Read(results[0], 8);
  EXPECT_EQ(kept_result, expect);
  // Donated: the result is the argument's memory, updated there.
  neuronmem_buffer_t* given = Upload(cache, {8}, dev);
  neuronmem_memory_stats_t before{}, after{};
  before.struct_size = after.struct_size = sizeof before;
  ASSERT_OK(neuronmem_memory_stats(dev, &before));
  ASSERT_OK(Execute(donating, {given, u}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  neuronmem_event_destroy(done);
  ASSERT_OK(neuronmem_memory_stats(dev, &after));
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  const std::vector<float> donated_result = Read(results[0], 8);
  EXPECT_EQ(std::memcmp(donated_result.data(), kept_result.data(), 8 * sizeof(float)), 0);
  // And the graph without donation computes the same bits.
  ASSERT_OK(Execute(plain, {Upload(cache, {8}, dev), u}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  neuronmem_event_destroy(done);
  const std::vector<float> plain_result = Read(results[0], 8);
  EXPECT_EQ(std::memcmp(plain_result.data(), kept_result.data(), 8 * sizeof(float)), 0);
}

// PJRT's usage events: a read of %a queued behind a caller event (the gate) is still pending when an
// execution that donates %a is submitted; the execution must wait for the read, which sees the old bytes.
// A failed gate fails the read; that orders the execution but is not its error.
class DonationTest : public ExecTest {
 protected:
  void DonateBehindAGatedRead(bool fail_gate);
};

void DonationTest::DonateBehindAGatedRead(bool fail_gate) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kDonate, &e));
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, dev);
  neuronmem_buffer_t* b = Upload({10, 10, 10, 10}, {4}, dev);
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<float> seen(4, -1.0f);
  neuronmem_buffer_read_args_t rd{};
  rd.struct_size = sizeof rd;
  rd.buffer = a;
  rd.size = sizeof(float) * 4;
  rd.dst = seen.data();
  rd.wait.events = &gate;
  rd.wait.num_events = 1;
  neuronmem_event_t* read_done = nullptr;
  ASSERT_OK(neuronmem_buffer_read(&rd, &read_done));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a, b}, &results, &done));
  bool ready = true;
  ASSERT_OK(neuronmem_event_is_ready(done, &ready));
  EXPECT_FALSE(ready) << "the execution must wait for the read queued on its donated argument";
  neuronmem_status_t* why = fail_gate ? neuronmem_buffer_delete(nullptr) : nullptr;  // any status will do
  ASSERT_OK(neuronmem_event_complete(gate, why));
  neuronmem_status_free(why);
  const Result read = Take(neuronmem_event_wait(read_done, -1));
  EXPECT_EQ(read.code == NEURONMEM_STATUS_OK, !fail_gate) << read.message;
  ASSERT_OK(neuronmem_event_wait(done, -1));
  if (!fail_gate) {
    EXPECT_EQ(seen, (std::vector<float>{1, 2, 3, 4}));
  }
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{11, 12, 13, 14}));
  neuronmem_event_destroy(gate);
  neuronmem_event_destroy(read_done);
  neuronmem_event_destroy(done);
}

TEST_F(DonationTest, WaitsForOperationsStillUsingTheBuffer) { DonateBehindAGatedRead(false); }

TEST_F(DonationTest, AFailedUsageOfTheBufferDoesNotFailTheExecution) { DonateBehindAGatedRead(true); }

// The same across cores: an execution on core 0 that reads %h (pinned_host, one arena for every core) waits
// behind a gate; core 1, idle, is handed %h donated. The queued execution is recorded as a usage of %h's bytes
// (execute records it only for an execution that did not run at once), so the donation waits for it.
class TwoCoreDonationTest : public ExecTest {
 protected:
  void SetUp() override { ASSERT_OK(MakeClient(16u << 20, 2, &client_)); }
};

TEST_F(TwoCoreDonationTest, WaitsForAQueuedExecutionOnAnotherCoreThatReadsTheBuffer) {
  neuronmem_executable_t* reader = nullptr;
  ASSERT_OK(Compile(R"(
func.func @main(%h: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<4xf32> {
  %0 = stablehlo.add %h, %h : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)",
                    &reader));
  neuronmem_executable_t* donor = nullptr;
  ASSERT_OK(Compile(R"(
func.func @main(%h: tensor<4xf32> {mhlo.memory_kind = "pinned_host", tf.aliasing_output = 0 : i32})
    -> (tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.negate %h : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)",
                    &donor));
  neuronmem_buffer_t* h = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<neuronmem_buffer_t*> read, negated;
  neuronmem_event_t* read_done = nullptr;
  neuronmem_event_t* negated_done = nullptr;
  ASSERT_OK(Execute(reader, {h}, &read, &read_done, nullptr, {gate}, /*device=*/0));
  ASSERT_OK(Execute(donor, {h}, &negated, &negated_done, nullptr, {}, /*device=*/1));
  bool ready = true;
  ASSERT_OK(neuronmem_event_is_ready(negated_done, &ready));
  EXPECT_FALSE(ready) << "the donation must wait for the queued execution that reads the buffer";
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  ASSERT_OK(neuronmem_event_wait(read_done, -1));
  ASSERT_OK(neuronmem_event_wait(negated_done, -1));
  EXPECT_EQ(Read(read[0], 4), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(Read(negated[0], 4), (std::vector<float>{-1, -2, -3, -4}));
  neuronmem_event_destroy(gate);
  neuronmem_event_destroy(read_done);
  neuronmem_event_destroy(negated_done);
}

// Output 0 takes the donated %a's memory while output 1 returns %a itself, and two donated arguments swap
// places: every output holds what the graph returns, whatever order the results are written in.
TEST_F(ExecTest, OutputsThatReturnADonatedArgumentKeepItsValue) {
  const char kAlias[] = R"(
func.func @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32},
                %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0, %a : tensor<4xf32>, tensor<4xf32>
}
)";
  const char kSwap[] = R"(
func.func @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32},
                %b: tensor<4xf32> {tf.aliasing_output = 1 : i32}) -> (tensor<4xf32>, tensor<4xf32>) {
  return %b, %a : tensor<4xf32>, tensor<4xf32>
}
)";
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kAlias, &e));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {Upload({1, 2, 3, 4}, {4}, dev), Upload({10, 20, 30, 40}, {4}, dev)}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(Read(results[1], 4), (std::vector<float>{1, 2, 3, 4}));
  neuronmem_event_destroy(done);
  neuronmem_executable_t* swap = nullptr;
  ASSERT_OK(Compile(kSwap, &swap));
  ASSERT_OK(Execute(swap, {Upload({1, 2, 3, 4}, {4}, dev), Upload({5, 6, 7, 8}, {4}, dev)}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(Read(results[1], 4), (std::vector<float>{1, 2, 3, 4}));
  neuronmem_event_destroy(done);
}

TEST_F(ExecTest, UnsupportedOpFailsAtCompileWithItsLocation) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @no_such_kernel(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  const Result r = Take(Compile(text, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(r.message.find("test.mlir:3:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("stablehlo.custom_call"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("no_such_kernel"), std::string::npos) << r.message;
  EXPECT_EQ(e, nullptr);
}

TEST_F(ExecTest, InfeedAndOutfeedFailAtCompileWithTheirLocation) {
  // In the entry.
  const char infeed[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %0:2 = "stablehlo.infeed"(%t) {infeed_config = ""} : (!stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)
  %1 = stablehlo.add %a, %0#0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  Result r = Take(Compile(infeed, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_EQ(r.message.rfind("test.mlir:4:", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("'stablehlo.infeed': the executor has no infeed queue"), std::string::npos) << r.message;
  EXPECT_EQ(e, nullptr);
  // In a function the entry calls, inside a region.
  const char outfeed[] = R"(
func.func private @log(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<true> : tensor<i1>
  %r = "stablehlo.if"(%c) ({
    %t = stablehlo.after_all : !stablehlo.token
    %o = "stablehlo.outfeed"(%a, %t) {outfeed_config = ""} : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
    stablehlo.return %a : tensor<4xf32>
  }, {
    stablehlo.return %a : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @log(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  r = Take(Compile(outfeed, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_EQ(r.message.rfind("test.mlir:6:", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("'stablehlo.outfeed': the executor has no outfeed queue"), std::string::npos) << r.message;
  EXPECT_EQ(e, nullptr);
}

TEST_F(ExecTest, BadArgumentsLeaveEverythingIntact) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kAdd, &e));
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, dev);
  neuronmem_buffer_t* wrong = Upload({1, 2, 3, 4, 5, 6}, {6}, dev);
  neuronmem_buffer_t* gone = Upload({1, 2, 3, 4}, {4}, dev);
  ASSERT_OK(neuronmem_buffer_delete(gone));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  // Every refused call leaves the device memory as it was (nothing allocated stays behind).
  neuronmem_memory_stats_t before{};
  before.struct_size = sizeof before;
  ASSERT_OK(neuronmem_memory_stats(dev, &before));
  const auto unchanged = [&] {
    neuronmem_memory_stats_t now{};
    now.struct_size = sizeof now;
    EXPECT_OK(neuronmem_memory_stats(dev, &now));
    return now.bytes_in_use == before.bytes_in_use && now.live_allocations == before.live_allocations;
  };
  // Shape mismatch.
  Result r = Take(Execute(e, {a, wrong}, &results, &done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("argument 1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("f32[6]"), std::string::npos) << r.message;
  EXPECT_TRUE(unchanged());
  // Argument count.
  r = Take(Execute(e, {a}, &results, &done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(unchanged());
  // A deleted buffer.
  r = Take(Execute(e, {a, gone}, &results, &done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("argument 1"), std::string::npos) << r.message;
  EXPECT_TRUE(unchanged());
  // A buffer of another client.
  neuronmem_client_t* other = nullptr;
  ASSERT_OK(MakeClient(8u << 20, 1, &other));
  {
    std::vector<float> data = {1, 2, 3, 4};
    neuronmem_buffer_from_host_args_t u{};
    u.struct_size = sizeof u;
    u.data = data.data();
    u.element_type = NEURONMEM_ELEMENT_TYPE_F32;
    const int64_t dims[] = {4};
    u.dims = dims;
    u.num_dims = 1;
    u.memory = Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0, other);
    neuronmem_buffer_t* foreign = nullptr;
    ASSERT_OK(neuronmem_buffer_from_host(other, &u, &foreign, nullptr, nullptr));
    r = Take(Execute(e, {a, foreign}, &results, &done));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(r.message.find("argument 1"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("another client"), std::string::npos) << r.message;
    neuronmem_buffer_destroy(foreign);
  }
  EXPECT_OK(neuronmem_client_destroy(other));
  // A wait event that already failed.
  neuronmem_event_t* failed = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &failed));
  neuronmem_status_t* why = nullptr;
  {
    // Any status will do as the failure: take one from a bad call.
    why = neuronmem_buffer_delete(nullptr);
  }
  ASSERT_OK(neuronmem_event_complete(failed, why));
  neuronmem_status_free(why);
  r = Take(Execute(e, {a, a}, &results, &done, nullptr, {failed}));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("wait.events[0] failed"), std::string::npos) << r.message;
  neuronmem_event_destroy(failed);
  EXPECT_TRUE(unchanged());
  EXPECT_EQ(Read(a, 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(Read(wrong, 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Nothing leaked into the device memory and the executable still runs.
  ASSERT_OK(Execute(e, {a, a}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{2, 4, 6, 8}));
  neuronmem_event_destroy(done);
}

TEST_F(ExecTest, WaitEventFailingLaterFailsTheExecution) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kAdd, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a, a}, &results, &done, nullptr, {gate}));
  bool ready = true;
  ASSERT_OK(neuronmem_event_is_ready(done, &ready));
  EXPECT_FALSE(ready);
  neuronmem_status_t* why = neuronmem_buffer_delete(nullptr);
  ASSERT_OK(neuronmem_event_complete(gate, why));
  neuronmem_status_free(why);
  const Result r = Take(neuronmem_event_wait(done, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("wait.events[0] failed"), std::string::npos) << r.message;
  // The result's content failed with it; the argument is intact.
  std::vector<float> out(4);
  neuronmem_buffer_read_args_t rd{};
  rd.struct_size = sizeof rd;
  rd.buffer = results[0];
  rd.size = 16;
  rd.dst = out.data();
  EXPECT_NE(Take(neuronmem_buffer_read(&rd, nullptr)).code, NEURONMEM_STATUS_OK);
  EXPECT_EQ(Read(a, 4), (std::vector<float>{1, 2, 3, 4}));
  neuronmem_event_destroy(gate);
  neuronmem_event_destroy(done);
}

TEST_F(ExecTest, AFailingOpFailsTheEventWithItsLocation) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  stablehlo.custom_call @check.expect_eq(%0, %a) : (tensor<4xf32>, tensor<4xf32>) -> ()
  return %0 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(text, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a}, &results, &done));
  const Result r = Take(neuronmem_event_wait(done, -1));
  EXPECT_NE(r.code, NEURONMEM_STATUS_OK);
  EXPECT_NE(r.message.find("test.mlir:4:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("check.expect_eq"), std::string::npos) << r.message;
  neuronmem_event_destroy(done);
}

TEST_F(ExecTest, OutOfDeviceMemoryDuringARunNamesTheCore) {
  // 1 MiB of device memory: the argument lies in pinned_host; the 1 MiB intermediates do not fit.
  neuronmem_client_t* small = nullptr;
  ASSERT_OK(MakeClient(1u << 20, 1, &small));
  const char text[] = R"(
func.func @main(%a: tensor<262144xf32> {mhlo.memory_kind = "pinned_host"})
    -> (tensor<f32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.multiply %a, %a : tensor<262144xf32>
  %1 = stablehlo.add %0, %a : tensor<262144xf32>
  %2 = stablehlo.multiply %1, %0 : tensor<262144xf32>
  %3 = stablehlo.add %2, %1 : tensor<262144xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %4 = stablehlo.reduce(%3 init: %z) applies stablehlo.add across dimensions = [0]
      : (tensor<262144xf32>, tensor<f32>) -> tensor<f32>
  return %4 : tensor<f32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(text, &e, NEURONMEM_ARGUMENT_PLACEMENT_STRICT, small));
  neuronmem_executable_properties_t p{};
  p.struct_size = sizeof p;
  ASSERT_OK(neuronmem_executable_properties(e, &p));
  EXPECT_GT(p.peak_device_bytes, 1u << 20);
  std::vector<float> data(262144, 1.0f);
  neuronmem_buffer_t* a = Upload(data, {262144}, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST, 0, small), small);
  neuronmem_execute_args_t args{};
  args.struct_size = sizeof args;
  args.executable = e;
  args.device = Device(0, small);
  args.arguments = &a;
  args.num_arguments = 1;
  neuronmem_buffer_t* out = nullptr;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(neuronmem_executable_execute(&args, &out, &done, nullptr));
  const Result r = Take(neuronmem_event_wait(done, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_NE(r.message.find("core 0"), std::string::npos) << r.message;
  neuronmem_event_destroy(done);
  neuronmem_buffer_destroy(out);
  // The client stays usable: nothing of the run is left in its device memory.
  neuronmem_memory_stats_t st{};
  st.struct_size = sizeof st;
  ASSERT_OK(neuronmem_memory_stats(Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0, small), &st));
  EXPECT_EQ(st.bytes_in_use, 0u);
  neuronmem_executable_destroy(e);
  executables_.erase(std::find(executables_.begin(), executables_.end(), e));
  buffers_.erase(std::find(buffers_.begin(), buffers_.end(), a));
  neuronmem_buffer_destroy(a);
  EXPECT_OK(neuronmem_client_destroy(small));
}

TEST_F(ExecTest, ClientRefusesToGoWhileExecutablesLive) {
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(MakeClient(8u << 20, 1, &c));
  neuronmem_executable_t* e = nullptr;
  neuronmem_compile_options_t o{};
  o.struct_size = sizeof o;
  ASSERT_OK(neuronmem_executable_compile_text(c, kAdd, sizeof kAdd - 1, &o, &e));
  const Result r = Take(neuronmem_client_destroy(c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("executables"), std::string::npos) << r.message;
  neuronmem_executable_destroy(e);
  EXPECT_OK(neuronmem_client_destroy(c));
}

TEST_F(ExecTest, CompileFromAManifest) {
  neuronmem_manifest_t* m = nullptr;
  ASSERT_OK(neuronmem_manifest_load_text(kMoves, sizeof kMoves - 1, nullptr, &m));
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(neuronmem_executable_compile_manifest(client_, m, nullptr, &e));
  executables_.push_back(e);
  neuronmem_manifest_destroy(m);  // the executable keeps what it needs
  neuronmem_buffer_t* a = Upload({1, 1, 1, 1, 1, 1, 1, 1}, {8}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[1], 8), std::vector<float>(8, 2.0f));
  neuronmem_event_destroy(done);
  // A manifest from JSON has no graph.
  neuronmem_manifest_t* j = nullptr;
  ASSERT_OK(neuronmem_manifest_load_text(kAdd, sizeof kAdd - 1, nullptr, &m));
  neuronmem_string_t json{};
  ASSERT_OK(neuronmem_manifest_to_json(m, &json));
  ASSERT_OK(neuronmem_manifest_load_json(json.data, json.size, &j));
  neuronmem_executable_t* none = nullptr;
  EXPECT_EQ(Take(neuronmem_executable_compile_manifest(client_, j, nullptr, &none)).code,
            NEURONMEM_STATUS_FAILED_PRECONDITION);
  neuronmem_manifest_destroy(j);
  neuronmem_manifest_destroy(m);
}

// Tokens are empty pred[0] buffers: queried, passed and returned like any value.
TEST_F(ExecTest, TokensAreEmptyPredBuffers) {
  const char text[] = R"(
func.func @main(%t: !stablehlo.token, %a: tensor<4xf32>) -> (!stablehlo.token, tensor<4xf32>) {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  %1 = stablehlo.after_all %t : !stablehlo.token
  return %1, %0 : !stablehlo.token, tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(text, &e));
  neuronmem_executable_value_t v{};
  v.struct_size = sizeof v;
  for (int output = 0; output < 2; ++output) {
    ASSERT_OK(output ? neuronmem_executable_output(e, 0, &v) : neuronmem_executable_parameter(e, 0, &v));
    EXPECT_EQ(v.element_type, NEURONMEM_ELEMENT_TYPE_PRED);
    ASSERT_EQ(v.num_dims, 1u);
    EXPECT_EQ(v.dims[0], 0);
    EXPECT_EQ(v.bytes, 0u);
  }
  neuronmem_buffer_allocate_args_t al{};
  al.struct_size = sizeof al;
  al.client = client_;
  al.memory = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  al.element_type = NEURONMEM_ELEMENT_TYPE_PRED;
  const int64_t zero[] = {0};
  al.dims = zero;
  al.num_dims = 1;
  neuronmem_buffer_t* token = nullptr;
  ASSERT_OK(neuronmem_buffer_allocate(&al, &token));
  buffers_.push_back(token);
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {token, a}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  neuronmem_element_type_t type;
  ASSERT_OK(neuronmem_buffer_element_type(results[0], &type));
  EXPECT_EQ(type, NEURONMEM_ELEMENT_TYPE_PRED);
  const int64_t* dims = nullptr;
  size_t rank = 0;
  ASSERT_OK(neuronmem_buffer_dims(results[0], &dims, &rank));
  ASSERT_EQ(rank, 1u);
  EXPECT_EQ(dims[0], 0);
  EXPECT_EQ(Read(results[1], 4), (std::vector<float>{2, 4, 6, 8}));
  neuronmem_event_destroy(done);
  // A token parameter takes only an empty pred buffer.
  const Result r = Take(Execute(e, {a, a}, &results, &done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("argument 0 (t)"), std::string::npos) << r.message;
}

TEST_F(ExecTest, TupleParametersAndResultsAreRefusedNamingTheValue) {
  const char param[] = R"(
func.func @main(%a: tensor<4xf32>, %p: tuple<tensor<4xf32>, tensor<2xi32>>) -> tensor<4xf32> {
  %0 = stablehlo.get_tuple_element %p[0] : (tuple<tensor<4xf32>, tensor<2xi32>>) -> tensor<4xf32>
  %1 = stablehlo.add %a, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  Result r = Take(Compile(param, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(r.message.find("test.mlir:2:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("argument 1 (p): tuple values are not supported"), std::string::npos) << r.message;
  const char result[] = R"(
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tuple<tensor<4xf32>>) {
  %0 = stablehlo.tuple %a : tuple<tensor<4xf32>>
  return %a, %0 : tensor<4xf32>, tuple<tensor<4xf32>>
}
)";
  r = Take(Compile(result, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(r.message.find("result 1: tuple values are not supported"), std::string::npos) << r.message;
  EXPECT_EQ(e, nullptr);
}

// A value a callee moves to pinned_host and returns comes back into the call's device result: a transfer the
// graph caused, counted as explicit (device -> pinned_host by the move, pinned_host -> device by the return).
TEST_F(ExecTest, AValueMovedToHostInACalleeComesBackAsACountedMove) {
  const char text[] = R"(
func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = func.call @offload(%a) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = stablehlo.add %0, %a : tensor<8xf32>
  return %1 : tensor<8xf32>
}
func.func private @offload(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<8xf32>
  %1 = stablehlo.custom_call @MoveToHost(%0) {backend_config = ""} : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(text, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4, 5, 6, 7, 8}, {8}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 8), (std::vector<float>{2, 6, 12, 20, 30, 42, 56, 72}));
  EXPECT_EQ(Stats(x).implicit_transfers, 0u);
  const neuronmem_transfer_counts_t out = Pair(x, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  const neuronmem_transfer_counts_t back = Pair(x, NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE);
  EXPECT_EQ(out.explicit_transfers, 1u);
  EXPECT_EQ(back.explicit_transfers, 1u);
  EXPECT_EQ(back.explicit_bytes, 32u);
  EXPECT_EQ(Stats(x).explicit_transfers, 2u);
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

// The same through if (only the branch that runs moves) and while (every iteration of the body moves its
// value out and the loop copies it back into its device buffer).
TEST_F(ExecTest, MovesInsideIfAndWhileBodiesComeBackAsCountedMoves) {
  const char text[] = R"(
func.func @main(%p: tensor<i1>, %a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "stablehlo.if"(%p) ({
    %h = stablehlo.custom_call @MoveToHost(%a) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
    stablehlo.return %h : tensor<4xf32>
  }, {
    stablehlo.return %a : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %1:2 = stablehlo.while(%i = %c0, %v = %a) : tensor<i32>, tensor<4xf32>
    cond {
      %c3 = stablehlo.constant dense<3> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %d = stablehlo.add %v, %v : tensor<4xf32>
      %h = stablehlo.custom_call @MoveToHost(%d) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %n, %h : tensor<i32>, tensor<4xf32>
    }
  return %0, %1#1 : tensor<4xf32>, tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(text, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  for (bool take : {true, false}) {
    neuronmem_buffer_from_host_args_t u{};
    u.struct_size = sizeof u;
    u.data = &take;
    u.element_type = NEURONMEM_ELEMENT_TYPE_PRED;
    u.memory = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
    neuronmem_buffer_t* p = nullptr;
    neuronmem_event_t* ready = nullptr;
    ASSERT_OK(neuronmem_buffer_from_host(client_, &u, &p, &ready, nullptr));
    buffers_.push_back(p);
    if (ready) {
      ASSERT_OK(neuronmem_event_wait(ready, -1));
      neuronmem_event_destroy(ready);
    }
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    neuronmem_execution_t* x = nullptr;
    ASSERT_OK(Execute(e, {p, a}, &results, &done, &x));
    ASSERT_OK(neuronmem_event_wait(done, -1));
    EXPECT_EQ(Read(results[0], 4), (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ(Read(results[1], 4), (std::vector<float>{8, 16, 24, 32}));
    // while: 3 moves out, 3 copies back; if: one each way when its first branch runs.
    const uint64_t n = take ? 4 : 3;
    EXPECT_EQ(Pair(x, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST).explicit_transfers, n) << take;
    EXPECT_EQ(Pair(x, NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE).explicit_transfers, n) << take;
    EXPECT_EQ(Stats(x).implicit_transfers, 0u);
    neuronmem_event_destroy(done);
    neuronmem_execution_destroy(x);
  }
}

// chlo.scan as while does: an input and an init moved to pinned_host before the scan come back into the scan's
// device buffers (each slice, the init once), and the outputs and carries its body moves come back every step;
// every copy back is counted as explicit.
TEST_F(ExecTest, MovesAroundAndInsideAScanComeBackAsCountedMoves) {
  const char text[] = R"(
func.func @main(%a: tensor<4xf32>, %z: tensor<f32>) -> (tensor<4xf32>, tensor<f32>) {
  %ha = stablehlo.custom_call @MoveToHost(%a) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
  %hz = stablehlo.custom_call @MoveToHost(%z) {backend_config = ""} : (tensor<f32>) -> tensor<f32>
  %0:2 = chlo.scan(%ha) inits(%hz) dimension=0 {
  ^bb0(%x: tensor<f32>, %c: tensor<f32>):
    %s = stablehlo.add %x, %c : tensor<f32>
    %h = stablehlo.custom_call @MoveToHost(%s) {backend_config = ""} : (tensor<f32>) -> tensor<f32>
    stablehlo.return %h, %h : tensor<f32>, tensor<f32>
  } : (tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<f32>)
  return %0#0, %0#1 : tensor<4xf32>, tensor<f32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(text, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  neuronmem_buffer_t* z = Upload({10}, {}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a, z}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{11, 13, 16, 20}));
  EXPECT_EQ(Read(results[1], 1), (std::vector<float>{20}));
  // Out: the two moves before the scan and one per step. Back: 4 slices of the input, the init, then per step
  // the output slice and the carry.
  const neuronmem_transfer_counts_t out = Pair(x, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  const neuronmem_transfer_counts_t back = Pair(x, NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE);
  EXPECT_EQ(out.explicit_transfers, 6u);
  EXPECT_EQ(back.explicit_transfers, 13u);
  EXPECT_EQ(back.explicit_bytes, 13u * 4);
  EXPECT_EQ(Stats(x).implicit_transfers, 0u);
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

// A shape that depends on an argument's value fails at compile naming the op, its location and why; nothing
// is left behind and the client compiles and runs the next executable.
TEST_F(ExecTest, AShapeThatDependsOnAnArgumentFailsAtCompile) {
  const char text[] = R"(
func.func @main(%a: tensor<6xf32>, %shape: tensor<2xi32>) -> tensor<2x3xf32> {
  %0 = stablehlo.dynamic_reshape %a, %shape : (tensor<6xf32>, tensor<2xi32>) -> tensor<?x?xf32>
  %1 = stablehlo.add %0, %0 : tensor<?x?xf32>
  return %1 : tensor<2x3xf32>
}
)";
  neuronmem_memory_stats_t before{}, after{};
  before.struct_size = after.struct_size = sizeof before;
  ASSERT_OK(neuronmem_memory_stats(Memory(NEURONMEM_MEMORY_KIND_DEVICE), &before));
  neuronmem_executable_t* e = nullptr;
  const Result r = Take(Compile(text, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(r.message.find("test.mlir:3:3: 'stablehlo.dynamic_reshape': output_shape depends on the value of an "
                           "argument"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(e, nullptr);
  ASSERT_OK(neuronmem_memory_stats(Memory(NEURONMEM_MEMORY_KIND_DEVICE), &after));
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  ASSERT_OK(Compile(kAdd, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a, a}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{2, 4, 6, 8}));
  neuronmem_event_destroy(done);
}

// Issue 23, classes 3 and 4 through the C API: 3,000 nested calls (the manifest, the executor's own walk
// over called functions and the interpreter's compile) and a call declared larger than its callee's result
// fail to compile with INVALID_ARGUMENT; nothing overflows the stack.
TEST_F(ExecTest, DeepCallChainsAndMismatchedCallsFailToCompile) {
  std::string chain =
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %r = func.call @f1(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  return %r : tensor<2xf32>\n}\n";
  for (int i = 1; i <= 3000; ++i) {
    chain += "func.func private @f" + std::to_string(i) + "(%a: tensor<2xf32>) -> tensor<2xf32> {\n";
    chain += i < 3000 ? "  %r = func.call @f" + std::to_string(i + 1) + "(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
                      : "  %r = stablehlo.negate %a : tensor<2xf32>\n";
    chain += "  return %r : tensor<2xf32>\n}\n";
  }
  neuronmem_executable_t* e = nullptr;
  neuronmem_status_t* s = Compile(chain, &e);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(neuronmem_status_code(s), NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(neuronmem_status_message(s).data).find("nested deeper than"), std::string::npos);
  neuronmem_status_free(s);
  s = Compile(
      "func.func @main(%a: tensor<4xf32>) -> tensor<1024xf32> {\n"
      "  %r = func.call @f(%a) : (tensor<4xf32>) -> tensor<1024xf32>\n"
      "  return %r : tensor<1024xf32>\n}\n"
      "func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  return %a : tensor<4xf32>\n}\n",
      &e);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(neuronmem_status_code(s), NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_status_free(s);
}

}  // namespace
}  // namespace neuronmem_test
