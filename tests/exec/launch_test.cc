// Multi-core launches: neuronmem_executable_execute_devices runs one execution per device with
// distinct arguments, each on its own core's thread but the first, which the caller runs itself when its core is
// idle (a device alone runs on the caller like a plain execution), per-device results, events and statistics; SPMD
// partitions (num_partitions, logical ids); what a bad launch gets (nothing is submitted); launches from several
// threads at once. Threaded: also in suite 'concurrency'.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

// Whether this build runs under a sanitizer, which makes every run slower than a thread's hand-off.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

class LaunchTest : public ExecTest {
 protected:
  static constexpr uint32_t kCores = 4;
  void SetUp() override { ASSERT_OK(MakeClient(16u << 20, kCores, &client_)); }

  neuronmem_status_t* CompileWith(const std::string& text, uint32_t replicas, uint32_t partitions,
                                  neuronmem_executable_t** out) {
    neuronmem_compile_options_t o{};
    o.struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE;
    o.filename = "launch.mlir";
    o.num_replicas = replicas;
    o.num_partitions = partitions;
    neuronmem_status_t* s = neuronmem_executable_compile_text(client_, text.data(), text.size(), &o, out);
    if (!s) executables_.push_back(*out);
    return s;
  }
};

TEST_F(LaunchTest, DistinctArgumentsPerDeviceRunOnEveryCore) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(kIncrement, 0, 0, &e));
  neuronmem_executable_properties_t p{};
  p.struct_size = NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE;
  ASSERT_OK(neuronmem_executable_properties(e, &p));
  EXPECT_EQ(p.num_replicas, kCores);
  EXPECT_EQ(p.num_partitions, 1u);
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < kCores; ++d) {
    const float base = 10.0f * static_cast<float>(d);
    args.push_back({Upload({base, base + 1, base + 2, base + 3}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
  }
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  std::vector<neuronmem_execution_t*> executions;
  ASSERT_OK(Launch(e, {0, 1, 2, 3}, args, &results, &done, &executions));
  for (size_t d = 0; d < kCores; ++d) {
    ASSERT_OK(neuronmem_event_wait(done[d], -1));
    const float base = 10.0f * static_cast<float>(d);
    EXPECT_EQ(Read(results[d][0], 4), (std::vector<float>{base + 1, base + 2, base + 3, base + 4}));
    // Each result lives in its own device's memory.
    neuronmem_memory_t* m = nullptr;
    ASSERT_OK(neuronmem_buffer_memory(results[d][0], &m));
    EXPECT_EQ(m, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d));
    const neuronmem_execution_stats_t st = Stats(executions[d]);
    EXPECT_EQ(st.explicit_transfers + st.implicit_transfers + st.peer_transfers, 0u);
    EXPECT_EQ(Pair(executions[d], NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_DEVICE).peer_bytes, 0u);
    neuronmem_event_destroy(done[d]);
    neuronmem_execution_destroy(executions[d]);
  }
}

// A kernel that records the thread it runs on (and, with `busy`, keeps it busy that long).
struct Threads {
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::chrono::microseconds busy{0};
};
neuronmem_status_t* RecordThread(const neuronmem_kernel_call_t* call, void* user_data) {
  auto* t = static_cast<Threads*>(user_data);
  {
    std::lock_guard<std::mutex> lock(t->mu);
    t->ids.insert(std::this_thread::get_id());
  }
  const auto until = std::chrono::steady_clock::now() + t->busy;
  while (std::chrono::steady_clock::now() < until) {
  }
  std::memcpy(call->outputs[0].data, call->inputs[0].data, 4 * sizeof(float));
  return nullptr;
}

// Registers RecordThread as custom-call target "record.thread", recording into `threads`.
neuronmem_status_t* RegisterRecordThread(neuronmem_client_t* client, Threads* threads) {
  neuronmem_kernel_registration_t r{};
  r.struct_size = sizeof r;
  r.name = "record.thread";
  r.fn = RecordThread;
  r.user_data = threads;
  return neuronmem_client_register_kernel(client, &r);
}

// The program that starts `%0 = record.thread(%a)` on f32[4], then `rest` (its other ops and the return).
std::string RecordingProgram(const std::string& rest) {
  return "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %0 = stablehlo.custom_call @record.thread(%a) : (tensor<4xf32>) -> tensor<4xf32>\n" +
         rest + "}\n";
}

// The caller runs the first device's execution itself (its core is idle), instead of waking that core's thread;
// every other device of a program that runs longer than a thread's hand-off (here 2 ms) runs on its core's thread.
TEST_F(LaunchTest, EachDeviceRunsOnItsCoresThreadButTheFirstOnTheCaller) {
  Threads threads;
  threads.busy = std::chrono::milliseconds(2);
  ASSERT_OK(RegisterRecordThread(client_, &threads));
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(RecordingProgram("  return %0 : tensor<4xf32>\n"), 0, 0, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < 2; ++d) args.push_back({Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
  for (int round = 0; round < 3; ++round) {
    std::vector<std::vector<neuronmem_buffer_t*>> results;
    std::vector<neuronmem_event_t*> done;
    ASSERT_OK(Launch(e, {0, 1}, args, &results, &done, nullptr));
    for (neuronmem_event_t* ev : done) {
      ASSERT_OK(neuronmem_event_wait(ev, -1));
      neuronmem_event_destroy(ev);
    }
    EXPECT_EQ(Read(results[1][0], 4), (std::vector<float>{1, 2, 3, 4}));
  }
  // The caller, and device 1's core thread, made once and reused.
  EXPECT_EQ(threads.ids.size(), 2u);
  EXPECT_EQ(threads.ids.count(std::this_thread::get_id()), 1u);
}

// A program without a grid whose last execution took less than a thread's hand-off: the caller runs every device
// of the launch, one after the other, its events ready when the call returns. The first launch knows no run time
// yet and wakes device 1's thread; one that then runs long (its kernel kept busy 2 ms) sends the next launch's
// device 1 to its thread again.
TEST_F(LaunchTest, PartsCheaperThanAHandOffAllRunOnTheCaller) {
  Threads threads;
  ASSERT_OK(RegisterRecordThread(client_, &threads));
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(RecordingProgram("  %one = stablehlo.constant dense<1.0> : tensor<4xf32>\n"
                                         "  %1 = stablehlo.add %0, %one : tensor<4xf32>\n"
                                         "  return %1 : tensor<4xf32>\n"),
                        0, 0, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < 2; ++d) {
    const float base = 10.0f * static_cast<float>(d);
    args.push_back({Upload({base, base, base, base}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
  }
  auto launch = [&](bool* all_ready) {
    threads.ids.clear();
    std::vector<std::vector<neuronmem_buffer_t*>> results;
    std::vector<neuronmem_event_t*> done;
    ASSERT_OK(Launch(e, {0, 1}, args, &results, &done, nullptr));
    *all_ready = true;
    for (neuronmem_event_t* ev : done) {
      bool ready = false;
      ASSERT_OK(neuronmem_event_is_ready(ev, &ready));
      *all_ready = *all_ready && ready;
    }
    for (size_t d = 0; d < 2; ++d) {
      ASSERT_OK(neuronmem_event_wait(done[d], -1));
      neuronmem_event_destroy(done[d]);
      const float v = 10.0f * static_cast<float>(d) + 1;
      EXPECT_EQ(Read(results[d][0], 4), (std::vector<float>{v, v, v, v}));
    }
  };
  bool all_ready = false;
  ASSERT_NO_FATAL_FAILURE(launch(&all_ready));
  EXPECT_EQ(threads.ids.size(), 2u);  // no run time known yet: device 1 on its thread
  // A custom kernel copying 16 bytes runs in well under a microsecond; a launch that finds its last run slow
  // (the host preempted it) hands off once and measures again, so one of a few launches suffices (200 tries: a loaded
  // CI host). Under a sanitizer every run takes longer than a hand-off (ThreadSanitizer: the parts stay on their
  // threads).
  bool inline_seen = false;
  for (int round = 0; round < 200 && !inline_seen; ++round) {
    ASSERT_NO_FATAL_FAILURE(launch(&all_ready));
    if (threads.ids.size() == 1) {
      inline_seen = true;
      EXPECT_TRUE(all_ready);
      EXPECT_EQ(threads.ids.count(std::this_thread::get_id()), 1u);
    }
  }
  if (!kSanitized) EXPECT_TRUE(inline_seen);
  // Long runs: the next launches hand device 1 to its thread.
  threads.busy = std::chrono::milliseconds(2);
  ASSERT_NO_FATAL_FAILURE(launch(&all_ready));
  for (int round = 0; round < 2; ++round) {
    ASSERT_NO_FATAL_FAILURE(launch(&all_ready));
    EXPECT_EQ(threads.ids.size(), 2u);
    EXPECT_EQ(threads.ids.count(std::this_thread::get_id()), 1u);
  }
}

// A launch whose processes meet (a collective): the caller runs one of them only when every other starts at once.
// Device 1 waits for an event nobody has completed: the caller must not block in the exchange for it (the launch
// returns with nothing ready); once the event completes both finish, neither on the caller.
TEST_F(LaunchTest, TheCallerRunsNoProcessOfAGridThatMustWait) {
  Threads threads;
  ASSERT_OK(RegisterRecordThread(client_, &threads));
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @record.thread(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "stablehlo.collective_permute"(%0) {source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}
      : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
)",
                        2, 0, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args = {
      {Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0))},
      {Upload({2, 2, 2, 2}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1))}};
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<neuronmem_event_list_t> waits = {{nullptr, 0}, {&gate, 1}};
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  ASSERT_OK(Launch(e, {0, 1}, args, &results, &done, nullptr, waits));
  bool ready = true;
  ASSERT_OK(neuronmem_event_is_ready(done[0], &ready));
  EXPECT_FALSE(ready);
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  for (neuronmem_event_t* ev : done) ASSERT_OK(neuronmem_event_wait(ev, -1));
  EXPECT_EQ(Read(results[0][0], 4), std::vector<float>(4, 2.0f));
  EXPECT_EQ(Read(results[1][0], 4), std::vector<float>(4, 1.0f));
  EXPECT_EQ(threads.ids.count(std::this_thread::get_id()), 0u);
  for (neuronmem_event_t* ev : done) neuronmem_event_destroy(ev);
  // Nothing waits: the caller runs device 0's process, device 1's core thread the other.
  threads.ids.clear();
  std::vector<std::vector<neuronmem_buffer_t*>> again;
  ASSERT_OK(Launch(e, {0, 1}, args, &again, &done, nullptr));
  for (neuronmem_event_t* ev : done) {
    ASSERT_OK(neuronmem_event_wait(ev, -1));
    neuronmem_event_destroy(ev);
  }
  EXPECT_EQ(Read(again[0][0], 4), std::vector<float>(4, 2.0f));
  EXPECT_EQ(Read(again[1][0], 4), std::vector<float>(4, 1.0f));
  EXPECT_EQ(threads.ids.size(), 2u);
  EXPECT_EQ(threads.ids.count(std::this_thread::get_id()), 1u);
  neuronmem_event_destroy(gate);
}

// A launch of one device, or neuronmem_executable_execute of a program that uses the process grid, cannot block
// (the grid's other processes are absent): with its core idle it runs on the caller, as a plain execution does,
// and its event is ready when the call returns.
TEST_F(LaunchTest, OneDeviceAloneRunsOnTheCallerLikeAPlainExecution) {
  Threads threads;
  ASSERT_OK(RegisterRecordThread(client_, &threads));
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %id = stablehlo.replica_id : tensor<ui32>
  %f = stablehlo.convert %id : (tensor<ui32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %0 = stablehlo.custom_call @record.thread(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.add %0, %b : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)",
                        0, 0, &e));
  neuronmem_buffer_t* on2 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 2));
  neuronmem_buffer_t* on3 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 3));
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  ASSERT_OK(Launch(e, {2}, {{on2}}, &results, &done, nullptr));
  bool ready = false;
  ASSERT_OK(neuronmem_event_is_ready(done[0], &ready));
  EXPECT_TRUE(ready);
  ASSERT_OK(neuronmem_event_wait(done[0], -1));
  EXPECT_EQ(Read(results[0][0], 4), (std::vector<float>{3, 4, 5, 6}));  // replica 2
  neuronmem_event_destroy(done[0]);
  std::vector<neuronmem_buffer_t*> out;
  neuronmem_event_t* one = nullptr;
  ASSERT_OK(Execute(e, {on3}, &out, &one, nullptr, {}, /*device=*/3));
  ready = false;
  ASSERT_OK(neuronmem_event_is_ready(one, &ready));
  EXPECT_TRUE(ready);
  ASSERT_OK(neuronmem_event_wait(one, -1));
  EXPECT_EQ(Read(out[0], 4), (std::vector<float>{4, 5, 6, 7}));  // replica 3
  neuronmem_event_destroy(one);
  EXPECT_EQ(threads.ids, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_F(LaunchTest, EachDeviceWaitsForItsOwnEvents) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(kIncrement, 0, 0, &e));
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<std::vector<neuronmem_buffer_t*>> args = {
      {Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 2))},
      {Upload({5, 5, 5, 5}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 3))}};
  std::vector<neuronmem_event_list_t> waits = {{&gate, 1}, {nullptr, 0}};
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  ASSERT_OK(Launch(e, {2, 3}, args, &results, &done, nullptr, waits));
  ASSERT_OK(neuronmem_event_wait(done[1], -1));  // device 3 needs nothing
  bool ready = true;
  ASSERT_OK(neuronmem_event_is_ready(done[0], &ready));
  EXPECT_FALSE(ready);
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  ASSERT_OK(neuronmem_event_wait(done[0], -1));
  EXPECT_EQ(Read(results[0][0], 4), std::vector<float>(4, 2.0f));
  EXPECT_EQ(Read(results[1][0], 4), std::vector<float>(4, 6.0f));
  for (neuronmem_event_t* ev : done) neuronmem_event_destroy(ev);
  neuronmem_event_destroy(gate);
}

TEST_F(LaunchTest, LaunchesFromSeveralThreadsAllFinish) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(kIncrement, 0, 0, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < kCores; ++d)
    args.push_back({Upload({0, 0, 0, 0}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
  std::mutex mu;
  std::vector<neuronmem_event_t*> all_done;
  std::vector<std::thread> submitters;
  for (int t = 0; t < 3; ++t) {
    submitters.emplace_back([&, t] {
      // Thread t launches on the cores in its own order: the launches still reach each core in one order.
      std::vector<size_t> devices = t % 2 ? std::vector<size_t>{3, 2, 1, 0} : std::vector<size_t>{0, 1, 2, 3};
      std::vector<std::vector<neuronmem_buffer_t*>> a;
      for (size_t d : devices) a.push_back(args[d]);
      for (int i = 0; i < 10; ++i) {
        std::vector<std::vector<neuronmem_buffer_t*>> results;
        std::vector<neuronmem_event_t*> done;
        std::lock_guard<std::mutex> lock(mu);  // the fixture's buffer list is not thread-safe
        EXPECT_OK(Launch(e, devices, a, &results, &done, nullptr));
        all_done.insert(all_done.end(), done.begin(), done.end());
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  ASSERT_EQ(all_done.size(), 3u * 10u * kCores);
  for (neuronmem_event_t* ev : all_done) {
    EXPECT_OK(neuronmem_event_wait(ev, -1));
    neuronmem_event_destroy(ev);
  }
}

TEST_F(LaunchTest, PartitionsFromTheModuleOrTheOptions) {
  const char kPartitioned[] = R"(
module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    return %a : tensor<4xf32>
  }
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(kPartitioned, 0, 0, &e));
  neuronmem_executable_properties_t p{};
  p.struct_size = NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE;
  ASSERT_OK(neuronmem_executable_properties(e, &p));
  EXPECT_EQ(p.num_partitions, 2u);
  EXPECT_EQ(p.num_replicas, 2u);  // the 4 cores hold 2 replicas of 2 partitions
  uint32_t replica = 9, partition = 9;
  ASSERT_OK(neuronmem_executable_logical_ids(e, Device(3), &replica, &partition));
  EXPECT_EQ(replica, 1u);
  EXPECT_EQ(partition, 1u);
  ASSERT_OK(neuronmem_executable_logical_ids(e, Device(2), &replica, &partition));
  EXPECT_EQ(replica, 1u);
  EXPECT_EQ(partition, 0u);

  // The options override the module; a device past replicas * partitions is refused.
  neuronmem_executable_t* one = nullptr;
  ASSERT_OK(CompileWith(kPartitioned, 1, 4, &one));
  ASSERT_OK(neuronmem_executable_properties(one, &p));
  EXPECT_EQ(p.num_partitions, 4u);
  EXPECT_EQ(p.num_replicas, 1u);
  ASSERT_OK(neuronmem_executable_logical_ids(one, Device(3), &replica, &partition));
  EXPECT_EQ(replica, 0u);
  EXPECT_EQ(partition, 3u);
  neuronmem_executable_t* small = nullptr;
  ASSERT_OK(CompileWith(kPartitioned, 1, 1, &small));
  Result r = Take(neuronmem_executable_logical_ids(small, Device(1), &replica, &partition));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("runs on devices 0..0"), std::string::npos) << r.message;
  EXPECT_EQ(replica, 0u);

  // More than the client's cores.
  neuronmem_executable_t* bad = nullptr;
  r = Take(CompileWith(kPartitioned, 0, 8, &bad));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("num_partitions is 8 but the client has 4 cores"), std::string::npos) << r.message;
  r = Take(CompileWith(kPartitioned, 3, 2, &bad));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("num_replicas 3 times num_partitions 2"), std::string::npos) << r.message;
}

TEST_F(LaunchTest, OldCompileOptionsWithoutPartitionsStillWork) {
  // A caller built before num_partitions existed: its struct_size ends at num_replicas.
  neuronmem_compile_options_t o{};
  o.struct_size = offsetof(neuronmem_compile_options_t, num_replicas) + sizeof(uint32_t);
  o.num_replicas = 2;
  o.num_partitions = 77;  // beyond the caller's struct: never read
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(neuronmem_executable_compile_text(client_, kIncrement, sizeof kIncrement - 1, &o, &e));
  executables_.push_back(e);
  neuronmem_executable_properties_t p{};
  p.struct_size = offsetof(neuronmem_executable_properties_t, num_explicit_moves) + sizeof(uint64_t);
  p.num_partitions = 55;  // beyond the caller's struct: never written
  ASSERT_OK(neuronmem_executable_properties(e, &p));
  EXPECT_EQ(p.num_replicas, 2u);
  EXPECT_EQ(p.num_partitions, 55u);
}

TEST_F(LaunchTest, ABadLaunchSubmitsNothing) {
  const char kDonate[] = R"(
func.func @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(kDonate, 2, 1, &e));
  neuronmem_buffer_t* a0 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0));
  neuronmem_buffer_t* a1 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1));
  neuronmem_buffer_t* a2 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 2));
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  auto expect_refused = [&](neuronmem_status_t* s, const char* text) {
    const Result r = Take(s);
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << r.message;
    EXPECT_NE(r.message.find(text), std::string::npos) << r.message;
    for (size_t d = 0; d < done.size(); ++d) {
      EXPECT_EQ(done[d], nullptr);
      for (neuronmem_buffer_t* b : results[d]) EXPECT_EQ(b, nullptr);
    }
    bool deleted = true;
    EXPECT_OK(neuronmem_buffer_is_deleted(a0, &deleted));
    EXPECT_FALSE(deleted);  // device 0's donation did not happen
  };
  expect_refused(Launch(e, {0, 0}, {{a0}, {a0}}, &results, &done, nullptr), "device 0 is listed twice");
  expect_refused(Launch(e, {0, 2}, {{a0}, {a2}}, &results, &done, nullptr),
                 "device 2: the executable runs on devices 0..1");
  expect_refused(Launch(e, {0, 1}, {{a0}, {a0}}, &results, &done, nullptr), "is donated but also passed to device 1");
  expect_refused(Launch(e, {}, {}, &results, &done, nullptr), "at least one device");
  // A buffer of the wrong device: STRICT refuses (FAILED_PRECONDITION) naming the device; nothing donated.
  const Result r = Take(Launch(e, {0, 1}, {{a0}, {a2}}, &results, &done, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.message;
  EXPECT_EQ(r.message.rfind("device 1: argument 0", 0), 0u) << r.message;
  bool deleted = true;
  EXPECT_OK(neuronmem_buffer_is_deleted(a0, &deleted));
  EXPECT_FALSE(deleted);
  // The same launch done right donates both.
  ASSERT_OK(Launch(e, {0, 1}, {{a0}, {a1}}, &results, &done, nullptr));
  for (size_t d = 0; d < 2; ++d) {
    ASSERT_OK(neuronmem_event_wait(done[d], -1));
    EXPECT_EQ(Read(results[d][0], 4), (std::vector<float>{2, 4, 6, 8}));
    neuronmem_event_destroy(done[d]);
  }
  EXPECT_OK(neuronmem_buffer_is_deleted(a1, &deleted));
  EXPECT_TRUE(deleted);
}

TEST_F(LaunchTest, AReadOnlyDonationIsRefusedBeforeAnyDeviceCommits) {
  // Device 1's donated argument aliases IMMUTABLE_ZERO_COPY memory, which may not be written. The launch used
  // to find that out only while giving up device 1's donation, after device 0 had committed: a0 was donated
  // for nothing, and w0 kept a use by device 0's execution, which never ran, so a later donation of w0 waited
  // forever.
  const char kDonateHost[] = R"(
func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = "unpinned_host", tf.aliasing_output = 0 : i32},
                %w: tensor<4xf32>) -> (tensor<4xf32> {mhlo.memory_kind = "unpinned_host"}) {
  %0 = stablehlo.add %a, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  const char kDonateW[] = R"(
func.func @main(%w: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> tensor<4xf32> {
  %0 = stablehlo.add %w, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileWith(kDonateHost, 2, 1, &e));
  neuronmem_executable_t* donate_w = nullptr;
  ASSERT_OK(CompileWith(kDonateW, 2, 1, &donate_w));
  neuronmem_buffer_t* a0 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_UNPINNED_HOST, 0));
  neuronmem_buffer_t* w0 = Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0));
  neuronmem_buffer_t* w1 = Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1));
  alignas(64) static const float kCaller[4] = {5, 6, 7, 8};
  const int64_t dims[] = {4};
  neuronmem_buffer_from_host_args_t u{};
  u.struct_size = sizeof u;
  u.data = kCaller;
  u.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  u.host_buffer_semantics = NEURONMEM_HOST_BUFFER_IMMUTABLE_ZERO_COPY;
  u.dims = dims;
  u.num_dims = 1;
  u.memory = Memory(NEURONMEM_MEMORY_KIND_UNPINNED_HOST, 1);
  neuronmem_buffer_t* z1 = nullptr;
  neuronmem_event_t* ready = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &u, &z1, &ready, nullptr));
  buffers_.push_back(z1);
  if (ready) {
    ASSERT_OK(neuronmem_event_wait(ready, -1));
    neuronmem_event_destroy(ready);
  }
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  const Result r = Take(Launch(e, {0, 1}, {{a0, w0}, {z1, w1}}, &results, &done, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.message;
  EXPECT_EQ(r.message.rfind("device 1: argument 0", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("IMMUTABLE_ZERO_COPY"), std::string::npos) << r.message;
  for (size_t d = 0; d < done.size(); ++d) EXPECT_EQ(done[d], nullptr);
  bool deleted = true;
  EXPECT_OK(neuronmem_buffer_is_deleted(a0, &deleted));
  EXPECT_FALSE(deleted);  // nothing was donated
  // w0 carries no use of an execution that never runs: donating it now completes.
  std::vector<neuronmem_buffer_t*> out;
  neuronmem_event_t* ev = nullptr;
  ASSERT_OK(Execute(donate_w, {w0}, &out, &ev));
  EXPECT_OK(neuronmem_event_wait(ev, 10'000'000'000));
  neuronmem_event_destroy(ev);
  EXPECT_EQ(Read(out[0], 4), (std::vector<float>{2, 2, 2, 2}));
  // The launch done right runs; the zero-copy argument is passed as non-donatable.
  neuronmem_buffer_t* w0b = Upload({1, 1, 1, 1}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0));
  ASSERT_OK(Launch(e, {0, 1}, {{a0, w0b}, {z1, w1}}, &results, &done, nullptr, {}, {0}));
  for (size_t d = 0; d < 2; ++d) {
    ASSERT_OK(neuronmem_event_wait(done[d], -1));
    neuronmem_event_destroy(done[d]);
  }
  EXPECT_EQ(Read(results[1][0], 4), (std::vector<float>{6, 7, 8, 9}));
}

}  // namespace
}  // namespace neuronmem_test
