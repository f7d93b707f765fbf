// send/recv and collectives between cores, and host transfers, through neuronmem_executable_execute_devices:
// send/recv on 2 and 4 cores and collective_permute (non-targets get zeros), all_gather,
// all_to_all, reduce_scatter and collective_broadcast, each message counted once by its receiver as a peer
// transfer device -> device; host transfers through the launch's send/recv callbacks by channel id (counted as
// explicit transfers between the core's memory and unpinned_host; a
// missing one refused at submission naming the channel, a callback's error failing its device, a blocking
// call from a callback refused); a recv whose send never comes fails, never hangs. Threaded: also in suite
// 'concurrency'.
#include <algorithm>
#include <mutex>
#include <string>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

std::string SendRecv(const std::string& pairs) {
  return R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      source_target_pairs = )" +
         pairs + R"(} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      source_target_pairs = )" +
         pairs + R"(} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  return %r#0 : tensor<2xf32>
}
)";
}

// One op on f32[2] operands per device, the result of type `result`.
std::string Collective(const std::string& op, const std::string& attrs, const std::string& result,
                       const std::string& body = "") {
  return "func.func @main(%x: tensor<2xf32>) -> " + result + " {\n  %r = \"stablehlo." + op + "\"(%x) " + body + "{" +
         attrs + "} : (tensor<2xf32>) -> " + result + "\n  return %r : " + result + "\n}\n";
}

const char kAdd[] = R"(({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) )";

constexpr const char* kHost = kHostRoundTrip;

class PeerTest : public ExecTest {
 protected:
  static constexpr size_t kCores = 4;
  void SetUp() override { ASSERT_OK(MakeClient(16u << 20, kCores, &client_)); }

  // Device d's argument: {10 d + 1, 10 d + 2}.
  std::vector<std::vector<neuronmem_buffer_t*>> Args(size_t n) {
    std::vector<std::vector<neuronmem_buffer_t*>> args;
    for (size_t d = 0; d < n; ++d) {
      const float b = 10.0f * static_cast<float>(d);
      args.push_back({Upload({b + 1, b + 2}, {2}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
    }
    return args;
  }

  // Compiles `text` for `n` replicas, launches it on devices 0..n-1 with Args(n), waits; expects success.
  // Returns each device's result (its first output) as floats; runs_out (nullable) keeps the executions.
  std::vector<std::vector<float>> Run(const std::string& text, size_t n, size_t out_elems,
                                      std::vector<neuronmem_execution_t*>* runs_out = nullptr) {
    neuronmem_compile_options_t o{};
    o.struct_size = sizeof o;
    o.filename = "peer.mlir";
    o.num_replicas = static_cast<uint32_t>(n);
    neuronmem_executable_t* e = nullptr;
    EXPECT_OK(neuronmem_executable_compile_text(client_, text.data(), text.size(), &o, &e));
    if (!e) return {};
    executables_.push_back(e);
    std::vector<size_t> devices;
    for (size_t d = 0; d < n; ++d) devices.push_back(d);
    std::vector<std::vector<neuronmem_buffer_t*>> results;
    std::vector<neuronmem_event_t*> done;
    std::vector<neuronmem_execution_t*> runs;
    EXPECT_OK(Launch(e, devices, Args(n), &results, &done, &runs));
    std::vector<std::vector<float>> out;
    for (size_t d = 0; d < done.size(); ++d) {
      EXPECT_OK(neuronmem_event_wait(done[d], -1));
      out.push_back(Read(results[d][0], out_elems));
      neuronmem_event_destroy(done[d]);
    }
    if (runs_out) {
      *runs_out = runs;
    } else {
      for (neuronmem_execution_t* x : runs) neuronmem_execution_destroy(x);
    }
    return out;
  }
};

TEST_F(PeerTest, SendRecvOnTwoCoresMovesDeviceToDevice) {
  std::vector<neuronmem_execution_t*> runs;
  const auto out = Run(SendRecv("dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>"), 2, 2, &runs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (std::vector<float>{11, 12}));
  EXPECT_EQ(out[1], (std::vector<float>{1, 2}));
  for (neuronmem_execution_t* x : runs) {
    // One message of 8 bytes, counted once, by its receiver; no byte to or from a host kind.
    const neuronmem_transfer_counts_t dd = Pair(x, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_DEVICE);
    EXPECT_EQ(dd.peer_transfers, 1u);
    EXPECT_EQ(dd.peer_bytes, 8u);
    const neuronmem_execution_stats_t st = Stats(x);
    EXPECT_EQ(st.peer_bytes, 8u);
    EXPECT_EQ(st.explicit_bytes + st.implicit_bytes, 0u);
    neuronmem_execution_destroy(x);
  }
}

TEST_F(PeerTest, SendRecvRingOnFourCores) {
  const auto out = Run(SendRecv("dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>"), 4, 2);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0], (std::vector<float>{31, 32}));
  EXPECT_EQ(out[1], (std::vector<float>{1, 2}));
  EXPECT_EQ(out[2], (std::vector<float>{11, 12}));
  EXPECT_EQ(out[3], (std::vector<float>{21, 22}));
}

TEST_F(PeerTest, CollectivePermuteGivesNonTargetsZeros) {
  const auto out = Run(Collective("collective_permute",
                                  "source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>", "tensor<2xf32>"),
                       4, 2);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0], (std::vector<float>{0, 0}));
  EXPECT_EQ(out[1], (std::vector<float>{1, 2}));
  EXPECT_EQ(out[2], (std::vector<float>{11, 12}));
  EXPECT_EQ(out[3], (std::vector<float>{0, 0}));
}

TEST_F(PeerTest, AllGatherAllToAllReduceScatterAndBroadcastAcrossCores) {
  std::vector<neuronmem_execution_t*> runs;
  const std::string groups = "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>";
  auto gather = Run(Collective("all_gather", "all_gather_dim = 0 : i64, " + groups, "tensor<4xf32>"), 2, 4, &runs);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(gather[d], (std::vector<float>{1, 2, 11, 12})) << d;
    EXPECT_EQ(Stats(runs[d]).peer_bytes, 8u);
    neuronmem_execution_destroy(runs[d]);
  }
  auto a2a = Run(Collective("all_to_all",
                            "split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = 2 : i64, " + groups,
                            "tensor<2xf32>"),
                 2, 2);
  EXPECT_EQ(a2a[0], (std::vector<float>{1, 11}));
  EXPECT_EQ(a2a[1], (std::vector<float>{2, 12}));
  auto rs = Run(Collective("reduce_scatter", "scatter_dimension = 0 : i64, " + groups, "tensor<1xf32>", kAdd), 2, 1);
  EXPECT_EQ(rs[0], (std::vector<float>{12}));
  EXPECT_EQ(rs[1], (std::vector<float>{14}));
  auto bc = Run(Collective("collective_broadcast", groups, "tensor<2xf32>"), 2, 2);
  EXPECT_EQ(bc[0], (std::vector<float>{1, 2}));
  EXPECT_EQ(bc[1], (std::vector<float>{1, 2}));
}

// Host callbacks: the send callback records each device's payload, the recv callback fills 100 * (device+1).
struct HostLog {
  std::mutex mu;
  std::vector<std::pair<int32_t, std::vector<float>>> sent;
  neuronmem_event_t* never = nullptr;  // a pending event a callback may try to wait for
  neuronmem_status_code_t wait_code = NEURONMEM_STATUS_OK;
  std::string wait_message;
  bool fail = false;
};

neuronmem_status_t* OnSend(const neuronmem_host_transfer_t* t, void* user_data) {
  auto* log = static_cast<HostLog*>(user_data);
  if (t->channel_id != 5 || t->num_tensors != 1 || t->tensors[0].num_dims != 1 ||
      t->tensors[0].memory_kind != NEURONMEM_MEMORY_KIND_DEVICE)
    return neuronmem_status_create(NEURONMEM_STATUS_INTERNAL, "unexpected send", 15);
  const auto* p = static_cast<const float*>(t->tensors[0].data);
  std::lock_guard<std::mutex> lock(log->mu);
  log->sent.push_back({t->device, {p[0], p[1]}});
  if (log->never) {
    const Result r = Take(neuronmem_event_wait(log->never, -1));
    log->wait_code = r.code;
    log->wait_message = r.message;
  }
  if (log->fail && t->device == 1) return neuronmem_status_create(NEURONMEM_STATUS_DATA_LOSS, "the host is gone", 16);
  return nullptr;
}

neuronmem_status_t* OnRecv(const neuronmem_host_transfer_t* t, void*) {
  auto* p = static_cast<float*>(t->tensors[0].data);
  p[0] = p[1] = 100.0f * static_cast<float>(t->device + 1);
  return nullptr;
}

class HostTest : public PeerTest {
 protected:
  neuronmem_status_t* LaunchHost(neuronmem_executable_t* e, size_t n,
                                 const std::vector<neuronmem_host_callback_t>& sends,
                                 const std::vector<neuronmem_host_callback_t>& recvs,
                                 std::vector<std::vector<neuronmem_buffer_t*>>* results,
                                 std::vector<neuronmem_event_t*>* done,
                                 std::vector<neuronmem_execution_t*>* executions = nullptr) {
    std::vector<neuronmem_device_t*> devs;
    std::vector<neuronmem_buffer_t*> flat;
    const auto args = Args(n);
    for (size_t d = 0; d < n; ++d) {
      devs.push_back(Device(d));
      flat.push_back(args[d][0]);
    }
    std::vector<neuronmem_buffer_t*> out(n, nullptr);
    done->assign(n, nullptr);
    neuronmem_execute_devices_args_t a{};
    a.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
    a.executable = e;
    a.devices = devs.data();
    a.num_devices = n;
    a.arguments = flat.data();
    a.num_arguments = 1;
    a.send_callbacks = sends.data();
    a.num_send_callbacks = sends.size();
    a.recv_callbacks = recvs.data();
    a.num_recv_callbacks = recvs.size();
    if (executions) executions->assign(n, nullptr);
    neuronmem_status_t* s =
        neuronmem_executable_execute_devices(&a, out.data(), done->data(), executions ? executions->data() : nullptr);
    results->assign(n, {});
    for (size_t d = 0; d < n; ++d) {
      (*results)[d].push_back(out[d]);
      if (out[d]) buffers_.push_back(out[d]);
    }
    return s;
  }
};

TEST_F(HostTest, HostTransfersGoThroughTheLaunchsCallbacks) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kHost, &e));
  HostLog log;
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  std::vector<neuronmem_execution_t*> runs;
  ASSERT_OK(LaunchHost(e, kCores, {{5, OnSend, &log}}, {{6, OnRecv, nullptr}}, &results, &done, &runs));
  for (size_t d = 0; d < kCores; ++d) {
    ASSERT_OK(neuronmem_event_wait(done[d], -1));
    const float b = 10.0f * static_cast<float>(d), h = 100.0f * static_cast<float>(d + 1);
    EXPECT_EQ(Read(results[d][0], 2), (std::vector<float>{b + 1 + h, b + 2 + h}));
    // Each callback moved its tensor (f32[2], 8 bytes) between the core's device memory and the frontend's
    // host memory: one explicit transfer device -> unpinned_host (the send), one back (the recv).
    const neuronmem_execution_stats_t st = Stats(runs[d]);
    EXPECT_EQ(st.explicit_transfers, 2u);
    EXPECT_EQ(st.explicit_bytes, 16u);
    EXPECT_EQ(st.implicit_transfers + st.peer_transfers, 0u);
    const neuronmem_transfer_counts_t out =
        Pair(runs[d], NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_UNPINNED_HOST);
    const neuronmem_transfer_counts_t in =
        Pair(runs[d], NEURONMEM_MEMORY_KIND_UNPINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE);
    EXPECT_EQ(out.explicit_transfers, 1u);
    EXPECT_EQ(out.explicit_bytes, 8u);
    EXPECT_EQ(in.explicit_transfers, 1u);
    EXPECT_EQ(in.explicit_bytes, 8u);
    EXPECT_EQ(Pair(runs[d], NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST).explicit_bytes, 0u);
    neuronmem_event_destroy(done[d]);
    neuronmem_execution_destroy(runs[d]);
  }
  std::sort(log.sent.begin(), log.sent.end());
  ASSERT_EQ(log.sent.size(), kCores);
  for (size_t d = 0; d < kCores; ++d) {
    EXPECT_EQ(log.sent[d].first, static_cast<int32_t>(d));
    EXPECT_EQ(log.sent[d].second, (std::vector<float>{10.0f * d + 1, 10.0f * d + 2}));
  }
}

// The devices of an sdy.manual_computation (2, whose body communicates) each send their block to the host from
// their own thread: each send is its execution's, on the launch device the execution runs on (the callback sees
// that device; the execution counts the transfer), whichever device of the computation sends it.
TEST_F(HostTest, HostTransfersOfAManualComputationsDevicesAreTheirExecutions) {
  const std::string text = R"(module @m {
  sdy.mesh @mesh = <["x"=2]>
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %1 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{}]>] out_shardings=[<@mesh, [{}]>]
        manual_axes={"x"} (%a: tensor<2xf32>) {
      %t = stablehlo.after_all : !stablehlo.token
      %s = "stablehlo.send"(%a, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>,
          is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
      %r = "stablehlo.all_reduce"(%a) )" +
                           std::string(kAdd) +
                           R"({replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
          channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}
          : (tensor<2xf32>) -> tensor<2xf32>
      sdy.return %r : tensor<2xf32>
    } : (tensor<2xf32>) -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(text, &e));
  for (size_t n : {size_t{1}, size_t{2}}) {
    HostLog log;
    std::vector<std::vector<neuronmem_buffer_t*>> results;
    std::vector<neuronmem_event_t*> done;
    std::vector<neuronmem_execution_t*> runs;
    ASSERT_OK(LaunchHost(e, n, {{5, OnSend, &log}}, {}, &results, &done, &runs));
    for (size_t d = 0; d < n; ++d) {
      ASSERT_OK(neuronmem_event_wait(done[d], -1));
      const float b = 10.0f * static_cast<float>(d);
      EXPECT_EQ(Read(results[d][0], 2), (std::vector<float>{2 * (b + 1), 2 * (b + 2)})) << n << " devices";
      // Both of its computation's devices sent f32[2] (8 bytes) device -> unpinned_host.
      const neuronmem_transfer_counts_t out =
          Pair(runs[d], NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_UNPINNED_HOST);
      EXPECT_EQ(out.explicit_transfers, 2u) << "launch device " << d << " of " << n;
      EXPECT_EQ(out.explicit_bytes, 16u) << "launch device " << d << " of " << n;
      neuronmem_event_destroy(done[d]);
      neuronmem_execution_destroy(runs[d]);
    }
    std::sort(log.sent.begin(), log.sent.end());
    ASSERT_EQ(log.sent.size(), 2 * n);
    for (size_t i = 0; i < 2 * n; ++i) {
      const size_t d = i / 2;
      EXPECT_EQ(log.sent[i].first, static_cast<int32_t>(d)) << n << " devices";
      EXPECT_EQ(log.sent[i].second, (std::vector<float>{10.0f * d + 1, 10.0f * d + 2})) << n << " devices";
    }
  }
}

TEST_F(HostTest, AMissingCallbackIsRefusedAtSubmissionNamingTheChannel) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kHost, &e));
  HostLog log;
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  const auto held = Held(kCores);  // no buffers yet
  Result r = Take(LaunchHost(e, 2, {{5, OnSend, &log}}, {}, &results, &done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("test.mlir:6:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("'stablehlo.recv'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("channel 6 has no recv callback"), std::string::npos) << r.message;
  EXPECT_EQ(done[0], nullptr);
  EXPECT_EQ(results[0][0], nullptr);
  EXPECT_TRUE(log.sent.empty());  // nothing ran
  // A channel listed twice, a NULL function.
  r = Take(LaunchHost(e, 2, {{5, OnSend, &log}, {5, OnSend, &log}}, {{6, OnRecv, nullptr}}, &results, &done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("lists channel 5 twice"), std::string::npos) << r.message;
  r = Take(LaunchHost(e, 2, {{5, nullptr, &log}}, {{6, OnRecv, nullptr}}, &results, &done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  // Plain execute has no callbacks: refused the same way.
  std::vector<neuronmem_buffer_t*> plain;
  neuronmem_event_t* plain_done = nullptr;
  r = Take(Execute(e, {Args(1)[0][0]}, &plain, &plain_done));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("channel 5 has no send callback"), std::string::npos) << r.message;
  EXPECT_EQ(plain_done, nullptr);
  // The refused launches allocated nothing: with the arguments they were given dropped, all is as before.
  Drop(buffers_);
  EXPECT_EQ(Held(kCores), held);
  // The client stays usable: with both callbacks the launch runs.
  ASSERT_OK(LaunchHost(e, 2, {{5, OnSend, &log}}, {{6, OnRecv, nullptr}}, &results, &done));
  for (neuronmem_event_t* ev : done) {
    EXPECT_OK(neuronmem_event_wait(ev, -1));
    neuronmem_event_destroy(ev);
  }
  EXPECT_EQ(Read(results[1][0], 2), (std::vector<float>{211, 212}));
}

TEST_F(HostTest, ACallbacksErrorFailsItsDeviceAndABlockingCallIsRefused) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kHost, &e));
  HostLog log;
  log.fail = true;
  ASSERT_OK(neuronmem_event_create(client_, &log.never));
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  const auto held = Held(kCores);  // no buffers yet
  ASSERT_OK(LaunchHost(e, 2, {{5, OnSend, &log}}, {{6, OnRecv, nullptr}}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done[0], -1));  // the core did not hang in the callback
  const Result r = Take(neuronmem_event_wait(done[1], -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_DATA_LOSS) << r.message;
  EXPECT_NE(r.message.find("test.mlir:4:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("the send callback of channel 5: the host is gone"), std::string::npos) << r.message;
  EXPECT_EQ(log.wait_code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(log.wait_message.find("inside a host-transfer callback"), std::string::npos) << log.wait_message;
  for (neuronmem_event_t* ev : done) neuronmem_event_destroy(ev);
  ASSERT_OK(neuronmem_event_complete(log.never, nullptr));
  neuronmem_event_destroy(log.never);
  log.never = nullptr;
  // Nothing stays allocated once the arguments and results are dropped, and the next launch succeeds.
  Drop(buffers_);
  EXPECT_EQ(Held(kCores), held);
  log.fail = false;
  ASSERT_OK(LaunchHost(e, 2, {{5, OnSend, &log}}, {{6, OnRecv, nullptr}}, &results, &done));
  for (neuronmem_event_t* ev : done) {
    EXPECT_OK(neuronmem_event_wait(ev, -1));
    neuronmem_event_destroy(ev);
  }
  EXPECT_EQ(Read(results[1][0], 2), (std::vector<float>{211, 212}));
}

TEST_F(PeerTest, ARecvWhoseSendNeverComesFailsNeverHangs) {
  // Device 1 receives from device 0, which never sends on that channel.
  const char text[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %r:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 9, type = 1>,
      source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  return %r#0 : tensor<2xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileReplicas(text, "stuck.mlir", 2, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  std::vector<neuronmem_execution_t*> runs;
  const auto args = Args(2);
  const auto held = Held(kCores);
  ASSERT_OK(Launch(e, {0, 1}, args, &results, &done, &runs));
  ASSERT_OK(neuronmem_event_wait(done[0], -1));  // device 0 is no target: zeros
  EXPECT_EQ(Read(results[0][0], 2), (std::vector<float>{0, 0}));
  const Result r = Take(neuronmem_event_wait(done[1], -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.message;
  EXPECT_NE(r.message.find("stuck.mlir:4:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("stablehlo.recv"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("channel 9"), std::string::npos) << r.message;
  for (neuronmem_event_t* ev : done) neuronmem_event_destroy(ev);
  for (neuronmem_execution_t* x : runs) neuronmem_execution_destroy(x);
  // Nothing stays allocated once the results are dropped (both executions' workspaces went back).
  Drop({results[0][0], results[1][0]});
  EXPECT_EQ(Held(kCores), held);
  // The client stays usable.
  const auto out = Run(SendRecv("dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>"), 2, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1], (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace neuronmem_test
