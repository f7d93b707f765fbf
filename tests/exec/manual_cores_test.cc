// sdy.manual_computation bodies that communicate, run through the C API: on a client of more than one core their
// devices run on its cores (exec/core_workers.h; docs/executor.md, "Shardy"), on a client of one a thread each.
// The results agree with the one-core client's (the interpreter's own path) and with the math; the executable's
// num_manual_devices and the execution's manual_cores / manual_threads say what ran where; a device that fails
// or is cancelled fails the execution naming it, without a hang.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "exec_test_util.h"

namespace neuronmem_test {
namespace {

std::string AddRegion() {
  return "({\n        ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n          %s = stablehlo.add %x, %y : tensor<f32>\n"
         "          stablehlo.return %s : tensor<f32>\n      })";
}

// psum over "x" of n devices (jax.lax.psum in a shard_map) of f32[2n, 3] split along dim 0, then each device's
// block minus the sum times its partition id, gathered back: out[d] = in[d] - d * sum_k in[k] (per 2x3 block).
// `body_extra` goes before the all_reduce (the cancel test's loop on one device).
std::string PsumProgram(int n, const std::string& body_extra = "", const std::string& reduced = "%a") {
  const std::string g = "tensor<" + std::to_string(2 * n) + "x3xf32>", l = "tensor<2x3xf32>";
  std::string groups = "[[";
  for (int d = 0; d < n; ++d) groups += (d ? ", " : "") + std::to_string(d);
  groups += "]]";
  return "module @m {\n  sdy.mesh @mesh = <[\"x\"=" + std::to_string(n) + "]>\n  func.func @main(%arg0: " + g +
         ") -> " + g + " {\n    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"x\"}, {}]>]\n" +
         "        out_shardings=[<@mesh, [{\"x\"}, {}]>] manual_axes={\"x\"} (%a: " + l + ") {\n" + body_extra +
         "      %s = \"stablehlo.all_reduce\"(" + reduced + ") " + AddRegion() + " {replica_groups = dense<" + groups +
         "> : tensor<1x" + std::to_string(n) +
         "xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids} : (" + l +
         ") -> " + l +
         "\n      %p = stablehlo.partition_id : tensor<ui32>\n"
         "      %pf = stablehlo.convert %p : (tensor<ui32>) -> tensor<f32>\n"
         "      %pb = stablehlo.broadcast_in_dim %pf, dims = [] : (tensor<f32>) -> " +
         l + "\n      %m = stablehlo.multiply %s, %pb : " + l + "\n      %r = stablehlo.subtract %a, %m : " + l +
         "\n      sdy.return %r : " + l + "\n    } : (" + g + ") -> " + g + "\n    return %1 : " + g + "\n  }\n}\n";
}

std::vector<float> Expected(int n, const std::vector<float>& in) {
  std::vector<float> sum(6, 0.0f), out(in.size());
  for (int d = 0; d < n; ++d)
    for (int i = 0; i < 6; ++i) sum[static_cast<size_t>(i)] += in[static_cast<size_t>(d * 6 + i)];
  for (int d = 0; d < n; ++d)
    for (int i = 0; i < 6; ++i) {
      const size_t at = static_cast<size_t>(d * 6 + i);
      out[at] = in[at] - static_cast<float>(d) * sum[static_cast<size_t>(i)];
    }
  return out;
}

// A body prologue: %b is `first` on device 0 (partition 0) and `others` elsewhere (region bodies returning a
// tensor<2x3xf32>).
std::string OnDeviceZero(const std::string& first, const std::string& others) {
  return "      %p0 = stablehlo.partition_id : tensor<ui32>\n"
         "      %zero = stablehlo.constant dense<0> : tensor<ui32>\n"
         "      %first = stablehlo.compare EQ, %p0, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>\n"
         "      %b = \"stablehlo.if\"(%first) ({\n" +
         first + "      }, {\n" + others + "      }) : (tensor<i1>) -> tensor<2x3xf32>\n";
}

class ManualCoresTest : public ExecTest {
 protected:
  // Runs PsumProgram(n) on core `core` of the fixture's client; returns the result and the execution's stats.
  std::vector<float> Run(int n, size_t core, neuronmem_execution_stats_t* stats) {
    neuronmem_executable_t* e = nullptr;
    EXPECT_OK(Compile(PsumProgram(n), &e));
    if (!e) return {};
    neuronmem_executable_properties_t p{};
    p.struct_size = NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE;
    EXPECT_OK(neuronmem_executable_properties(e, &p));
    EXPECT_EQ(p.num_manual_devices, static_cast<uint64_t>(n));
    std::vector<float> in(static_cast<size_t>(6 * n));
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) + 0.5f * static_cast<float>(i);
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    neuronmem_execution_t* x = nullptr;
    EXPECT_OK(Execute(e, {Upload(in, {2 * n, 3}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, core))}, &results, &done, &x, {},
                      core));
    if (!done) return {};
    EXPECT_OK(neuronmem_event_wait(done, -1));
    neuronmem_event_destroy(done);
    *stats = Stats(x);
    neuronmem_execution_destroy(x);
    const std::vector<float> out = Read(results[0], in.size());
    EXPECT_EQ(out, Expected(n, in));
    return out;
  }
};

// The tests on a client of two cores (the fixture's own of one kept aside).
class TwoCores : public ManualCoresTest {
 protected:
  void SetUp() override {
    ManualCoresTest::SetUp();
    ASSERT_OK(MakeClient(64u << 20, 2, &one_));
    Swap(&one_);  // one_ now holds the fixture's 1-core client
  }
  void TearDown() override {
    DestroySwapped(&one_);
    ManualCoresTest::TearDown();
  }
  neuronmem_client_t* one_ = nullptr;
};

// 2 and 4 devices on a 2-core client, from either core: the same results as on a 1-core client (a thread per
// device, the interpreter's own path) and the math; 2 devices take both cores, 4 take both and 2 threads.
TEST_F(ManualCoresTest, CollectivesOverTwoAndFourDevicesAgreeWithOneCore) {
  neuronmem_execution_stats_t st{};
  std::vector<float> alone2 = Run(2, 0, &st), alone4 = Run(4, 0, &st);
  EXPECT_EQ(st.manual_cores, 0u);  // one core: a thread per device
  EXPECT_EQ(st.manual_threads, 0u);
  neuronmem_client_t* two = nullptr;
  ASSERT_OK(MakeClient(64u << 20, 2, &two));
  Swap(&two);
  for (size_t core = 0; core < 2; ++core) {
    for (int rep = 0; rep < 3; ++rep) {  // the workers are reused run after run
      EXPECT_EQ(Run(2, core, &st), alone2);
      EXPECT_EQ(st.manual_cores, 2u) << "core " << core;
      EXPECT_EQ(st.manual_threads, 0u) << "core " << core;
      EXPECT_EQ(Run(4, core, &st), alone4);
      EXPECT_EQ(st.manual_cores, 2u) << "core " << core;
      EXPECT_EQ(st.manual_threads, 2u) << "core " << core;
    }
  }
  DestroySwapped(&two);
}

// Executions on both cores at once, each a computation of 2 devices: whichever finds the other core's worker busy
// runs that device on a thread instead; none waits for the other, all agree.
TEST_F(TwoCores, ComputationsOnBothCoresAtOnceDoNotWaitForEachOther) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(PsumProgram(2), &e));
  std::vector<float> in(12);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  neuronmem_buffer_t* a0 = Upload(in, {4, 3}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0));
  neuronmem_buffer_t* a1 = Upload(in, {4, 3}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1));
  // Straight through the C API (the fixture's helpers keep lists that two threads must not grow at once).
  auto execute = [&](neuronmem_buffer_t* arg, neuronmem_device_t* device, neuronmem_execution_stats_t* st) {
    neuronmem_execute_args_t a{};
    a.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
    a.executable = e;
    a.device = device;
    a.arguments = &arg;
    a.num_arguments = 1;
    neuronmem_buffer_t* result = nullptr;
    neuronmem_event_t* done = nullptr;
    neuronmem_execution_t* x = nullptr;
    EXPECT_OK(neuronmem_executable_execute(&a, &result, &done, &x));
    if (!done) return std::vector<float>();
    EXPECT_OK(neuronmem_event_wait(done, -1));
    *st = Stats(x);
    const std::vector<float> out = Read(result, in.size());
    neuronmem_event_destroy(done);
    neuronmem_execution_destroy(x);
    neuronmem_buffer_destroy(result);
    return out;
  };
  neuronmem_device_t *dev0 = Device(0), *dev1 = Device(1);
  ASSERT_NE(dev1, nullptr);
  for (int rep = 0; rep < 20; ++rep) {
    neuronmem_execution_stats_t st0{}, st1{};
    std::vector<float> out1;
    std::thread other([&] { out1 = execute(a1, dev1, &st1); });
    const std::vector<float> out0 = execute(a0, dev0, &st0);
    other.join();
    EXPECT_EQ(out0, Expected(2, in));
    EXPECT_EQ(out1, Expected(2, in));
    // Each ran its device 1 on the other core's worker, or on a thread when that worker was busy.
    for (const neuronmem_execution_stats_t& st : {st0, st1}) {
      EXPECT_GE(st.manual_cores, 1u);
      EXPECT_EQ(st.manual_cores + st.manual_threads, 2u);
    }
  }
}

// A launch on both cores (2 replicas), each core's execution a computation of 2 devices: both complete, each
// with the right result, each ran its two devices on the cores or a thread.
TEST_F(TwoCores, ALaunchOnBothCoresRunsEachCoresComputation) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileReplicas(PsumProgram(2), "test.mlir", 2, &e));
  std::vector<std::vector<float>> in(2, std::vector<float>(12));
  for (size_t i = 0; i < 12; ++i) {
    in[0][i] = static_cast<float>(i);
    in[1][i] = static_cast<float>(3 * i) - 5.0f;
  }
  std::vector<std::vector<neuronmem_buffer_t*>> args = {
      {Upload(in[0], {4, 3}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0))},
      {Upload(in[1], {4, 3}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1))}};
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<std::vector<neuronmem_buffer_t*>> results;
    std::vector<neuronmem_event_t*> done;
    std::vector<neuronmem_execution_t*> runs;
    ASSERT_OK(Launch(e, {0, 1}, args, &results, &done, &runs));
    for (size_t d = 0; d < 2; ++d) {
      EXPECT_OK(neuronmem_event_wait(done[d], -1));
      EXPECT_EQ(Read(results[d][0], 12), Expected(2, in[d])) << "core " << d;
      const neuronmem_execution_stats_t st = Stats(runs[d]);
      EXPECT_GE(st.manual_cores, 1u);
      EXPECT_EQ(st.manual_cores + st.manual_threads, 2u);
      neuronmem_event_destroy(done[d]);
      neuronmem_execution_destroy(runs[d]);
    }
  }
}

// `trips` round trips of the device's block to pinned_host and back (annotate_device_placement, MoveToDevice)
// before the all_reduce, whose operand is then %v<trips>.
std::string PinnedHostTrips(int trips) {
  const std::string l = "tensor<2x3xf32>";
  std::string body, prev = "%a";
  for (int t = 1; t <= trips; ++t) {
    const std::string h = "%h" + std::to_string(t), v = "%v" + std::to_string(t);
    body += "      " + h + " = stablehlo.custom_call @annotate_device_placement(" + prev +
            ") {has_side_effect = true, mhlo.frontend_attributes = {_xla_buffer_placement = \"pinned_host\"}} : (" + l +
            ") -> " + l + "\n      " + v + " = stablehlo.custom_call @MoveToDevice(" + h +
            ") {backend_config = \"\"} : (" + l + ") -> " + l + "\n";
    prev = v;
  }
  return body;
}

// Every device of a computation moves its block to pinned_host and back at the same time as the others: each move
// is counted once, device by device (the execution's statistics are written from every device's thread at once;
// ThreadSanitizer, which runs this suite, reports a write that is not atomic). On a client of one core (a thread
// per device) and of two (the cores, and threads beyond them), 2 and 4 devices, run after run.
TEST_F(ManualCoresTest, MovesOfEveryDeviceAreCountedOnceEach) {
  constexpr int kTrips = 16;
  const uint64_t block = 2 * 3 * sizeof(float);
  auto check = [&](int n, size_t core) {
    neuronmem_executable_t* e = nullptr;
    ASSERT_OK(Compile(PsumProgram(n, PinnedHostTrips(kTrips), "%v" + std::to_string(kTrips)), &e));
    std::vector<float> in(static_cast<size_t>(6 * n));
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 5) - 1.5f;
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    neuronmem_execution_t* x = nullptr;
    ASSERT_OK(Execute(e, {Upload(in, {2 * n, 3}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, core))}, &results, &done, &x, {},
                      core));
    ASSERT_OK(neuronmem_event_wait(done, -1));
    neuronmem_event_destroy(done);
    EXPECT_EQ(Read(results[0], in.size()), Expected(n, in)) << n << " devices, core " << core;
    const uint64_t moves = static_cast<uint64_t>(kTrips * n);
    const neuronmem_execution_stats_t st = Stats(x);
    EXPECT_EQ(st.explicit_transfers, 2 * moves) << n << " devices, core " << core;
    EXPECT_EQ(st.explicit_bytes, 2 * moves * block) << n << " devices, core " << core;
    EXPECT_EQ(st.implicit_transfers, 0u);
    const neuronmem_transfer_counts_t out = Pair(x, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST);
    const neuronmem_transfer_counts_t back = Pair(x, NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_DEVICE);
    EXPECT_EQ(out.explicit_transfers, moves) << n << " devices, core " << core;
    EXPECT_EQ(out.explicit_bytes, moves * block) << n << " devices, core " << core;
    EXPECT_EQ(back.explicit_transfers, moves) << n << " devices, core " << core;
    EXPECT_EQ(back.explicit_bytes, moves * block) << n << " devices, core " << core;
    neuronmem_execution_destroy(x);
  };
  for (int rep = 0; rep < 3; ++rep) {
    check(2, 0);
    check(4, 0);
  }
  neuronmem_client_t* two = nullptr;
  ASSERT_OK(MakeClient(64u << 20, 2, &two));
  Swap(&two);
  for (int rep = 0; rep < 3; ++rep) {
    for (size_t core = 0; core < 2; ++core) {
      check(2, core);
      check(4, core);
    }
  }
  DestroySwapped(&two);
}

// A device that never reaches the all_reduce (device 1 skips it) fails the execution naming the op and device 0,
// which waited for it: no hang on the cores.
TEST_F(TwoCores, ADeviceThatNeverJoinsFailsTheExecutionNamingTheDevice) {
  const std::string skip =
      OnDeviceZero("        %t = \"stablehlo.all_reduce\"(%a) " + AddRegion() +
                       " {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = "
                       "#stablehlo.channel_handle<handle = 2, type = 1>, use_global_device_ids} : (tensor<2x3xf32>) -> "
                       "tensor<2x3xf32>\n"
                       "        stablehlo.return %t : tensor<2x3xf32>\n",
                   "        stablehlo.return %a : tensor<2x3xf32>\n");
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(PsumProgram(2, skip, "%b"), &e));
  std::vector<float> in(12, 1.0f);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {Upload(in, {4, 3}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0))}, &results, &done));
  const Result r = Take(neuronmem_event_wait(done, -1));
  neuronmem_event_destroy(done);
  EXPECT_NE(r.code, NEURONMEM_STATUS_OK);
  EXPECT_NE(r.message.find("'sdy.manual_computation' on device 0"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("'stablehlo.all_reduce'"), std::string::npos) << r.message;
}

// Device 1 loops for ever before the all_reduce device 0 waits in: cancelling the execution stops device 1 before
// its next op and device 0 with it; the execution fails CANCELLED naming the device.
TEST_F(TwoCores, CancelStopsEveryDevice) {
  const std::string loop = OnDeviceZero("        stablehlo.return %a : tensor<2x3xf32>\n",
                                        "        %w = \"stablehlo.while\"(%a) ({\n"
                                        "        ^bb0(%i: tensor<2x3xf32>):\n"
                                        "          %go = stablehlo.constant dense<true> : tensor<i1>\n"
                                        "          stablehlo.return %go : tensor<i1>\n"
                                        "        }, {\n"
                                        "        ^bb0(%i: tensor<2x3xf32>):\n"
                                        "          %n = stablehlo.add %i, %i : tensor<2x3xf32>\n"
                                        "          stablehlo.return %n : tensor<2x3xf32>\n"
                                        "        }) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
                                        "        stablehlo.return %w : tensor<2x3xf32>\n");
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(PsumProgram(2, loop, "%b"), &e));
  std::vector<float> in(12, 1.0f);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {Upload(in, {4, 3}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0))}, &results, &done, &x));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_OK(neuronmem_execution_cancel(x));
  const Result r = Take(neuronmem_event_wait(done, 10'000'000'000));  // a hang fails here
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_CANCELLED) << r.message;
  EXPECT_NE(r.message.find("'sdy.manual_computation' on device 1"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace neuronmem_test
