// Launches as process grids: the executions of one neuronmem_executable_execute_devices call are
// the processes of one grid, so replica_id / partition_id answer per core and collectives move data core to
// core through the copy engine, counted as peer transfers device -> device with no host bytes; SPMD modules
// (mhlo.num_partitions) run on as many cores with no option; a launch that cannot finish (a device left out,
// a peer whose wait event fails) fails its waiters with a status naming the op and processes, never hangs,
// and the client stays usable. Threaded: also in suite 'concurrency'.
#include <algorithm>
#include <string>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

// Every core contributes its operand; every core gets the sum (cross-replica).
const char kAllReduce[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.all_reduce"(%a) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %s = stablehlo.add %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

// A JAX-style SPMD module: 4 partitions, each adds its partition id, then a sum across the partitions.
const char kSpmd[] = R"(
module @jit_step attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%a: tensor<2xi32>) -> (tensor<2xi32>, tensor<ui32>) {
    %p = stablehlo.partition_id : tensor<ui32>
    %pi = stablehlo.convert %p : (tensor<ui32>) -> tensor<i32>
    %pb = stablehlo.broadcast_in_dim %pi, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %x = stablehlo.add %a, %pb : tensor<2xi32>
    %0 = "stablehlo.all_reduce"(%x) ({
      ^bb0(%l: tensor<i32>, %r: tensor<i32>):
        %s = stablehlo.add %l, %r : tensor<i32>
        stablehlo.return %s : tensor<i32>
    }) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}
        : (tensor<2xi32>) -> tensor<2xi32>
    return %0, %p : tensor<2xi32>, tensor<ui32>
  }
}
)";

const char kReplicaId[] = R"(
func.func @main() -> tensor<ui32> {
  %0 = stablehlo.replica_id : tensor<ui32>
  return %0 : tensor<ui32>
}
)";

class GridTest : public ExecTest {
 protected:
  static constexpr size_t kCores = 4;
  void SetUp() override { ASSERT_OK(MakeClient(16u << 20, kCores, &client_)); }

  neuronmem_status_t* CompileText(const std::string& text, neuronmem_executable_t** out) { return Compile(text, out); }

  // One argument per device 0..n-1: f32[4] ones in its device memory.
  std::vector<std::vector<neuronmem_buffer_t*>> Ones(size_t n) {
    std::vector<std::vector<neuronmem_buffer_t*>> args;
    for (size_t d = 0; d < n; ++d) args.push_back({Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
    return args;
  }

  static void Release(std::vector<neuronmem_event_t*>* done, std::vector<neuronmem_execution_t*>* executions) {
    for (neuronmem_event_t* ev : *done) neuronmem_event_destroy(ev);
    for (neuronmem_execution_t* x : *executions) neuronmem_execution_destroy(x);
  }

  std::vector<int32_t> ReadI32(neuronmem_buffer_t* b, size_t n) {
    std::vector<int32_t> out(n);
    neuronmem_buffer_read_args_t a{};
    a.struct_size = sizeof a;
    a.buffer = b;
    a.size = n * sizeof(int32_t);
    a.dst = out.data();
    EXPECT_OK(neuronmem_buffer_read(&a, nullptr));
    return out;
  }
};

TEST_F(GridTest, AllReduceMovesDeviceToDeviceAndCountsPeerBytes) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileText(kAllReduce, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < kCores; ++d) {
    const float v = static_cast<float>(d + 1);
    args.push_back({Upload({v, v, v, v}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
  }
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  std::vector<neuronmem_execution_t*> runs;
  ASSERT_OK(Launch(e, {0, 1, 2, 3}, args, &results, &done, &runs));
  for (size_t d = 0; d < kCores; ++d) {
    ASSERT_OK(neuronmem_event_wait(done[d], -1));
    EXPECT_EQ(Read(results[d][0], 4), std::vector<float>(4, 10.0f));  // 1 + 2 + 3 + 4
    // Each core received the operand of each of its 3 peers: device memory to device memory.
    const neuronmem_execution_stats_t st = Stats(runs[d]);
    EXPECT_EQ(st.peer_transfers, 3u);
    EXPECT_EQ(st.peer_bytes, 3u * 16u);
    const neuronmem_transfer_counts_t dd = Pair(runs[d], NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_DEVICE);
    EXPECT_EQ(dd.peer_transfers, 3u);
    EXPECT_EQ(dd.peer_bytes, 48u);
    // No byte went to or came from a host kind.
    for (neuronmem_memory_kind_t host : {NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_UNPINNED_HOST}) {
      for (neuronmem_memory_kind_t k : {NEURONMEM_MEMORY_KIND_DEVICE, host}) {
        const neuronmem_transfer_counts_t a = Pair(runs[d], k, host);
        const neuronmem_transfer_counts_t b = Pair(runs[d], host, k);
        EXPECT_EQ(
            a.peer_bytes + a.explicit_bytes + a.implicit_bytes + b.peer_bytes + b.explicit_bytes + b.implicit_bytes,
            0u);
      }
    }
    EXPECT_EQ(st.explicit_transfers + st.implicit_transfers, 0u);
  }
  Release(&done, &runs);
}

TEST_F(GridTest, SpmdModuleRunsOneDevicePerPartitionWithNoOption) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileText(kSpmd, &e));
  neuronmem_executable_properties_t p{};
  p.struct_size = sizeof p;
  ASSERT_OK(neuronmem_executable_properties(e, &p));
  EXPECT_EQ(p.num_partitions, 4u);
  EXPECT_EQ(p.num_replicas, 1u);
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < kCores; ++d) {
    const int32_t v[2] = {10, 100};
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = sizeof a;
    a.data = v;
    a.element_type = NEURONMEM_ELEMENT_TYPE_S32;
    const int64_t dims[1] = {2};
    a.dims = dims;
    a.num_dims = 1;
    a.memory = Memory(NEURONMEM_MEMORY_KIND_DEVICE, d);
    neuronmem_buffer_t* b = nullptr;
    ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, nullptr, nullptr));
    buffers_.push_back(b);
    args.push_back({b});
  }
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  std::vector<neuronmem_execution_t*> runs;
  ASSERT_OK(Launch(e, {0, 1, 2, 3}, args, &results, &done, &runs));
  for (size_t d = 0; d < kCores; ++d) {
    ASSERT_OK(neuronmem_event_wait(done[d], -1));
    // (10 + 0) + (10 + 1) + (10 + 2) + (10 + 3) = 46; (100 + ...) = 406.
    EXPECT_EQ(ReadI32(results[d][0], 2), (std::vector<int32_t>{46, 406}));
    EXPECT_EQ(ReadI32(results[d][1], 1), (std::vector<int32_t>{static_cast<int32_t>(d)}));
    EXPECT_EQ(Stats(runs[d]).peer_bytes, 3u * 8u);
  }
  Release(&done, &runs);
}

TEST_F(GridTest, PlainExecuteAnswersTheDevicesReplicaId) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileText(kReplicaId, &e));
  for (size_t d = 0; d < kCores; ++d) {
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    ASSERT_OK(Execute(e, {}, &results, &done, nullptr, {}, d));
    ASSERT_OK(neuronmem_event_wait(done, -1));
    EXPECT_EQ(ReadI32(results[0], 1), (std::vector<int32_t>{static_cast<int32_t>(d)}));
    neuronmem_event_destroy(done);
  }
}

TEST_F(GridTest, ACollectiveWaitingForADeviceLeftOutFailsNamingIt) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileText(kAllReduce, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args = Ones(2);
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  std::vector<neuronmem_execution_t*> runs;
  ASSERT_OK(Launch(e, {0, 1}, args, &results, &done, &runs));  // devices 2 and 3 never join
  for (size_t d = 0; d < 2; ++d) {
    const Result r = Take(neuronmem_event_wait(done[d], -1));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.message;
    EXPECT_NE(r.message.find("stablehlo.all_reduce"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("test.mlir:3:"), std::string::npos) << r.message;
    // Devices 2 and 3 did not fail: they are not part of the launch, and the message says so. (The other
    // device may have given up first: it then "failed without reaching it" too.)
    EXPECT_NE(r.message.find("(2, 0), (3, 0) of its group [(0, 0), (1, 0), (2, 0), (3, 0)]: "), std::string::npos)
        << r.message;
    EXPECT_NE(r.message.find("(2, 0) never runs (device 2 is not part of this launch, which runs devices 0, 1); (3, 0) "
                             "never runs (device 3 is not part of this launch, which runs devices 0, 1)"),
              std::string::npos)
        << r.message;
    EXPECT_EQ(r.message.find("(2, 0) failed"), std::string::npos) << r.message;
    EXPECT_EQ(r.message.find("(3, 0) failed"), std::string::npos) << r.message;
  }
  Release(&done, &runs);
  // The client stays usable: the same executable on every core.
  args = Ones(kCores);
  ASSERT_OK(Launch(e, {0, 1, 2, 3}, args, &results, &done, &runs));
  for (size_t d = 0; d < kCores; ++d) {
    ASSERT_OK(neuronmem_event_wait(done[d], -1));
    EXPECT_EQ(Read(results[d][0], 4), std::vector<float>(4, 4.0f));
  }
  Release(&done, &runs);
}

TEST_F(GridTest, ARecvFromADeviceLeftOutSaysItIsNotPartOfTheLaunch) {
  // Device 1 receives from device 3; a plain execute of device 1 leaves every other device out.
  const char text[] = R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %r:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>,
      source_target_pairs = dense<[[3, 1]]> : tensor<1x2xi64>} : (!stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)
  return %r#0 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileText(text, &e));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1))}, &results, &done, nullptr,
                    {}, 1));
  const Result r = Take(neuronmem_event_wait(done, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.message;
  EXPECT_NE(r.message.find("test.mlir:4:3: 'stablehlo.recv' on channel 2: process (1, 0) waits for data from (3, 0), "
                           "which never runs (device 3 is not part of this launch, which runs device 1)"),
            std::string::npos)
      << r.message;
  neuronmem_event_destroy(done);
}

TEST_F(GridTest, APeerThatFailsBeforeRunningFailsItsWaitersNeverHangs) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileText(kAllReduce, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args = Ones(kCores);
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  // Device 3 waits for the gate; devices 0..2 start and block in the all_reduce until it fails.
  std::vector<neuronmem_event_list_t> waits = {{nullptr, 0}, {nullptr, 0}, {nullptr, 0}, {&gate, 1}};
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  std::vector<neuronmem_execution_t*> runs;
  ASSERT_OK(Launch(e, {0, 1, 2, 3}, args, &results, &done, &runs, waits));
  neuronmem_status_t* cause = neuronmem_status_create(NEURONMEM_STATUS_DATA_LOSS, "the input never came", 20);
  ASSERT_OK(neuronmem_event_complete(gate, cause));
  neuronmem_status_free(cause);
  const Result r3 = Take(neuronmem_event_wait(done[3], -1));
  EXPECT_EQ(r3.code, NEURONMEM_STATUS_DATA_LOSS) << r3.message;
  EXPECT_NE(r3.message.find("wait.events[0] failed"), std::string::npos) << r3.message;
  for (size_t d = 0; d < 3; ++d) {
    const Result r = Take(neuronmem_event_wait(done[d], -1));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.message;
    EXPECT_NE(r.message.find("stablehlo.all_reduce"), std::string::npos) << r.message;
  }
  Release(&done, &runs);
  neuronmem_event_destroy(gate);
}

}  // namespace
}  // namespace neuronmem_test
