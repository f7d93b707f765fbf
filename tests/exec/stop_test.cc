// Stopping executions (issue 23, class 5): neuronmem_execution_cancel, a deadline per execute and as the
// client's default, an endless stablehlo.while never run on the submitting thread. Each stopped execution
// fails its event with CANCELLED or DEADLINE_EXCEEDED, gives its workspace back, and lets the client go.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

// A loop whose condition never turns false: the body adds 1 forever; `donated`: %a donated into the result.
std::string Endless(bool donated = false) {
  return std::string("func.func @main(%a: tensor<4xf32>") + (donated ? " {tf.aliasing_output = 0 : i32}" : "") +
         R"() -> tensor<4xf32> {
  %0 = stablehlo.while(%v = %a) : tensor<4xf32>
    cond {
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1.0> : tensor<4xf32>
      %n = stablehlo.add %v, %one : tensor<4xf32>
      stablehlo.return %n : tensor<4xf32>
    }
  return %0 : tensor<4xf32>
}
)";
}
const std::string kEndless = Endless();

constexpr int64_t kSecond = 1000000000;

bool Ready(neuronmem_event_t* e) {
  bool ready = false;
  EXPECT_OK(neuronmem_event_is_ready(e, &ready));
  return ready;
}

class StopTest : public ExecTest {
 protected:
  // Submits `e` with `timeout_ns` on a thread of the test and returns what execute returned; fails (instead
  // of hanging the test) when execute does not return within 5 s.
  Result ExecuteTimed(neuronmem_executable_t* e, neuronmem_buffer_t* arg, uint64_t timeout_ns,
                      std::vector<neuronmem_buffer_t*>* results, neuronmem_event_t** done,
                      neuronmem_execution_t** execution, std::vector<neuronmem_event_t*> waits = {}) {
    results->assign(1, nullptr);
    neuronmem_execute_args_t a{};
    a.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
    a.executable = e;
    a.device = Device(0);
    a.arguments = &arg;
    a.num_arguments = 1;
    a.wait.events = waits.data();
    a.wait.num_events = waits.size();
    a.timeout_ns = timeout_ns;
    auto submitted = std::async(
        std::launch::async, [&] { return Take(neuronmem_executable_execute(&a, results->data(), done, execution)); });
    if (submitted.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      ADD_FAILURE() << "neuronmem_executable_execute did not return within 5 s";
      std::abort();  // the submission runs the endless loop: nothing else can end the test
    }
    Result r = submitted.get();
    if (r.code == NEURONMEM_STATUS_OK) buffers_.push_back((*results)[0]);
    return r;
  }
  static Result WaitResult(neuronmem_event_t* e, int64_t timeout_ns = 10 * kSecond) {
    Result w = Take(neuronmem_event_wait(e, timeout_ns));
    if (w.code != NEURONMEM_STATUS_OK) return w;
    neuronmem_status_t* err = nullptr;
    EXPECT_OK(neuronmem_event_error(e, &err));
    return Take(err);
  }
};

TEST_F(StopTest, EndlessLoopNeverRunsOnTheCallerAndCancelStopsIt) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kEndless, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  const auto before = Held(1);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  // The core is idle: before the fix, execute ran the loop right here and never returned.
  Result r = ExecuteTimed(e, a, 0, &results, &done, &x);
  ASSERT_EQ(r.code, NEURONMEM_STATUS_OK) << r.message;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(Ready(done));
  // The client cannot go while it runs.
  Result busy = Take(neuronmem_client_destroy(client_));
  EXPECT_EQ(busy.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << busy.message;
  ASSERT_OK(neuronmem_execution_cancel(x));
  Result w = WaitResult(done);
  EXPECT_EQ(w.code, NEURONMEM_STATUS_CANCELLED) << w.message;
  EXPECT_NE(w.message.find("cancelled before test.mlir:"), std::string::npos) << w.message;
  // The result is never defined; the argument is intact (not donated).
  neuronmem_event_t* rr = nullptr;
  ASSERT_OK(neuronmem_buffer_ready_event(results[0], &rr));
  EXPECT_EQ(WaitResult(rr).code, NEURONMEM_STATUS_CANCELLED);
  neuronmem_event_destroy(rr);
  EXPECT_EQ(Read(a, 4), (std::vector<float>{1, 2, 3, 4}));
  // A second cancel, and one after the end, change nothing.
  ASSERT_OK(neuronmem_execution_cancel(x));
  EXPECT_EQ(WaitResult(done).code, NEURONMEM_STATUS_CANCELLED);
  neuronmem_execution_destroy(x);
  neuronmem_event_destroy(done);
  Drop(results);
  // Its workspace went back: the memories hold what they held before.
  EXPECT_EQ(Held(1), before);
  // The core runs the next execution.
  neuronmem_executable_t* inc = nullptr;
  ASSERT_OK(Compile(kIncrement, &inc));
  ASSERT_OK(Execute(inc, {a}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  neuronmem_event_destroy(done);
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{2, 3, 4, 5}));
}

TEST_F(StopTest, CancelOfNullIsInvalidArgument) {
  EXPECT_EQ(Take(neuronmem_execution_cancel(nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
}

TEST_F(StopTest, CancelAfterTheEndChangesNothing) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kIncrement, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  ASSERT_OK(neuronmem_execution_cancel(x));
  EXPECT_EQ(WaitResult(done).code, NEURONMEM_STATUS_OK);
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{2, 3, 4, 5}));
  neuronmem_execution_destroy(x);
  neuronmem_event_destroy(done);
}

TEST_F(StopTest, DeadlineStopsARunningLoop) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kEndless, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  const auto before = Held(1);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  Result r = ExecuteTimed(e, a, 50000000, &results, &done, nullptr);  // 50 ms, no handle needed
  ASSERT_EQ(r.code, NEURONMEM_STATUS_OK) << r.message;
  Result w = WaitResult(done);
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(w.code, NEURONMEM_STATUS_DEADLINE_EXCEEDED) << w.message;
  EXPECT_NE(w.message.find("deadline passed before test.mlir:"), std::string::npos) << w.message;
  EXPECT_GE(elapsed, std::chrono::milliseconds(50));
  neuronmem_event_destroy(done);
  Drop(results);
  EXPECT_EQ(Held(1), before);
}

TEST_F(StopTest, ClientDefaultDeadlineAndItsOptOut) {
  neuronmem_client_t* c = nullptr;
  neuronmem_client_options_t o{};
  o.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  o.num_cores = 1;
  o.device_bytes_per_core = 64u << 20;
  o.pinned_host_bytes = 32u << 20;
  o.execution_timeout_ns = 30000000;  // 30 ms
  ASSERT_OK(neuronmem_client_create(&o, &c));
  Swap(&c);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kEndless, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_EQ(ExecuteTimed(e, a, 0, &results, &done, nullptr).code, NEURONMEM_STATUS_OK);
  EXPECT_EQ(WaitResult(done).code, NEURONMEM_STATUS_DEADLINE_EXCEEDED);
  neuronmem_event_destroy(done);
  // UINT64_MAX: no deadline even though the client sets one.
  neuronmem_execution_t* x = nullptr;
  ASSERT_EQ(ExecuteTimed(e, a, UINT64_MAX, &results, &done, &x).code, NEURONMEM_STATUS_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(Ready(done));
  ASSERT_OK(neuronmem_execution_cancel(x));
  EXPECT_EQ(WaitResult(done).code, NEURONMEM_STATUS_CANCELLED);
  neuronmem_execution_destroy(x);
  neuronmem_event_destroy(done);
  DestroySwapped(&c);
}

TEST_F(StopTest, QueuedExecutionFailsAtOnceWithoutItsWaits) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kIncrement, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  neuronmem_event_t* never = nullptr;  // a caller event nobody completes
  ASSERT_OK(neuronmem_event_create(client_, &never));
  std::vector<neuronmem_buffer_t*> r1, r2;
  neuronmem_event_t *d1 = nullptr, *d2 = nullptr;
  neuronmem_execution_t* x1 = nullptr;
  ASSERT_OK(Execute(e, {a}, &r1, &d1, &x1, {never}));
  ASSERT_OK(Execute(e, {a}, &r2, &d2));  // queued behind it on the same core
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(Ready(d1));
  EXPECT_FALSE(Ready(d2));
  ASSERT_OK(neuronmem_execution_cancel(x1));
  Result w = WaitResult(d1);
  EXPECT_EQ(w.code, NEURONMEM_STATUS_CANCELLED) << w.message;
  EXPECT_NE(w.message.find("before it started"), std::string::npos) << w.message;
  // The queue goes on with the next one.
  EXPECT_EQ(WaitResult(d2).code, NEURONMEM_STATUS_OK);
  EXPECT_EQ(Read(r2[0], 4), (std::vector<float>{2, 3, 4, 5}));
  // The event it did not wait for completes later without effect.
  ASSERT_OK(neuronmem_event_complete(never, nullptr));
  neuronmem_event_destroy(never);
  neuronmem_execution_destroy(x1);
  neuronmem_event_destroy(d1);
  neuronmem_event_destroy(d2);
}

TEST_F(StopTest, DeadlineOfAQueuedExecution) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kIncrement, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  neuronmem_event_t* never = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &never));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_EQ(ExecuteTimed(e, a, 20000000, &results, &done, nullptr, {never}).code, NEURONMEM_STATUS_OK);
  Result w = WaitResult(done);
  EXPECT_EQ(w.code, NEURONMEM_STATUS_DEADLINE_EXCEEDED) << w.message;
  ASSERT_OK(neuronmem_event_complete(never, nullptr));
  neuronmem_event_destroy(never);
  neuronmem_event_destroy(done);
}

TEST_F(StopTest, CancelStopsTheRunawayAndTheQueueBehindItRuns) {
  neuronmem_executable_t* endless = nullptr;
  neuronmem_executable_t* inc = nullptr;
  ASSERT_OK(Compile(kEndless, &endless));
  ASSERT_OK(Compile(kIncrement, &inc));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> r1, r2;
  neuronmem_event_t *d1 = nullptr, *d2 = nullptr;
  neuronmem_execution_t* x1 = nullptr;
  ASSERT_EQ(ExecuteTimed(endless, a, 0, &r1, &d1, &x1).code, NEURONMEM_STATUS_OK);
  ASSERT_OK(Execute(inc, {a}, &r2, &d2));  // must not run on the caller behind the loop either
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(Ready(d2));
  ASSERT_OK(neuronmem_execution_cancel(x1));
  EXPECT_EQ(WaitResult(d1).code, NEURONMEM_STATUS_CANCELLED);
  EXPECT_EQ(WaitResult(d2).code, NEURONMEM_STATUS_OK);
  EXPECT_EQ(Read(r2[0], 4), (std::vector<float>{2, 3, 4, 5}));
  neuronmem_execution_destroy(x1);
  neuronmem_event_destroy(d1);
  neuronmem_event_destroy(d2);
}

TEST_F(StopTest, CancelledDonationLeavesTheArgumentDonated) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(Endless(/*donated=*/true), &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_EQ(ExecuteTimed(e, a, 0, &results, &done, &x).code, NEURONMEM_STATUS_OK);
  ASSERT_OK(neuronmem_execution_cancel(x));
  EXPECT_EQ(WaitResult(done).code, NEURONMEM_STATUS_CANCELLED);
  // Donated at submission, as the contract says: the argument is deleted, its memory the failed result's.
  float out[4];
  neuronmem_buffer_read_args_t ra{};
  ra.struct_size = sizeof ra;
  ra.buffer = a;
  ra.size = sizeof out;
  ra.dst = out;
  EXPECT_EQ(Take(neuronmem_buffer_read(&ra, nullptr)).code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  ra.buffer = results[0];
  EXPECT_EQ(Take(neuronmem_buffer_read(&ra, nullptr)).code, NEURONMEM_STATUS_CANCELLED);
  neuronmem_execution_destroy(x);
  neuronmem_event_destroy(done);
}

TEST_F(StopTest, LaunchDeadlineStopsEveryDevice) {
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(MakeClient(64u << 20, 2, &c));
  Swap(&c);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileReplicas(kEndless, "test.mlir", 2, &e));
  neuronmem_buffer_t* a0 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0));
  neuronmem_buffer_t* a1 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1));
  const auto before = Held(2);
  neuronmem_device_t* devs[2] = {Device(0), Device(1)};
  neuronmem_buffer_t* args[2] = {a0, a1};
  neuronmem_buffer_t* out[2] = {};
  neuronmem_event_t* done[2] = {};
  neuronmem_execute_devices_args_t la{};
  la.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
  la.executable = e;
  la.devices = devs;
  la.num_devices = 2;
  la.arguments = args;
  la.num_arguments = 1;
  la.timeout_ns = 30000000;
  ASSERT_OK(neuronmem_executable_execute_devices(&la, out, done, nullptr));
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(WaitResult(done[d]).code, NEURONMEM_STATUS_DEADLINE_EXCEEDED);
    neuronmem_event_destroy(done[d]);
    neuronmem_buffer_destroy(out[d]);
  }
  EXPECT_EQ(Held(2), before);
  DestroySwapped(&c);
}

// Many executions cancelled at random points while queued and running, from another thread: every event
// ends, each either succeeded or CANCELLED, and the client goes afterwards.
TEST_F(StopTest, CancelRacesSubmission) {
  neuronmem_executable_t* endless = nullptr;
  neuronmem_executable_t* inc = nullptr;
  ASSERT_OK(Compile(kEndless, &endless));
  ASSERT_OK(Compile(kIncrement, &inc));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_event_t*> dones;
  std::vector<neuronmem_execution_t*> xs;
  for (int i = 0; i < 40; ++i) {
    std::vector<neuronmem_buffer_t*> r;
    neuronmem_event_t* d = nullptr;
    neuronmem_execution_t* x = nullptr;
    ASSERT_OK(Execute(i % 3 == 0 ? endless : inc, {a}, &r, &d, &x));
    dones.push_back(d);
    xs.push_back(x);
  }
  std::thread canceller([&] {
    for (size_t i = xs.size(); i-- > 0;) EXPECT_OK(neuronmem_execution_cancel(xs[i]));
  });
  canceller.join();
  for (size_t i = 0; i < dones.size(); ++i) {
    const Result w = WaitResult(dones[i]);
    if (i % 3 == 0)
      EXPECT_EQ(w.code, NEURONMEM_STATUS_CANCELLED) << w.message;
    else
      EXPECT_TRUE(w.code == NEURONMEM_STATUS_OK || w.code == NEURONMEM_STATUS_CANCELLED) << w.message;
    neuronmem_event_destroy(dones[i]);
    neuronmem_execution_destroy(xs[i]);
  }
}

}  // namespace
}  // namespace neuronmem_test
