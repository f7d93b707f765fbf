// The per-core queue: executions run in submission order, a queued one waits behind the head, several
// threads submit at once, and a decode-style loop chains each step on the previous one's result.
#include <thread>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

bool IsReady(neuronmem_event_t* e) {
  bool ready = false;
  EXPECT_OK(neuronmem_event_is_ready(e, &ready));
  return ready;
}

TEST_F(ExecTest, AnExecutionQueuedBehindAnotherWaitsForIt) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kIncrement, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  neuronmem_buffer_t* b = Upload({10, 20, 30, 40}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<neuronmem_buffer_t*> first, second;
  neuronmem_event_t* done1 = nullptr;
  neuronmem_event_t* done2 = nullptr;
  neuronmem_execution_t* x2 = nullptr;
  ASSERT_OK(Execute(e, {a}, &first, &done1, nullptr, {gate}));
  // The second needs nothing, but the core runs in submission order: it waits behind the first.
  ASSERT_OK(Execute(e, {b}, &second, &done2, &x2));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(IsReady(done1));
  EXPECT_FALSE(IsReady(done2));
  EXPECT_EQ(Take(neuronmem_execution_stats(x2, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_execution_stats_t st{};
  st.struct_size = sizeof st;
  EXPECT_EQ(Take(neuronmem_execution_stats(x2, &st)).code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  ASSERT_OK(neuronmem_event_wait(done2, -1));
  EXPECT_TRUE(IsReady(done1));  // finished first
  ASSERT_OK(neuronmem_event_wait(done1, -1));
  EXPECT_EQ(Read(first[0], 4), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(Read(second[0], 4), (std::vector<float>{11, 21, 31, 41}));
  EXPECT_GE(Stats(x2).queue_ns, 10'000'000u);  // it queued for at least most of the 20 ms
  neuronmem_event_destroy(gate);
  neuronmem_event_destroy(done1);
  neuronmem_event_destroy(done2);
  neuronmem_execution_destroy(x2);
}

TEST_F(ExecTest, DecodeLoopChainsStepsWithoutWaiting) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kIncrement, &e));
  neuronmem_buffer_t* x = Upload({0, 0, 0, 0}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  neuronmem_event_t* prev = gate;
  std::vector<neuronmem_event_t*> events;
  for (int step = 0; step < 50; ++step) {
    std::vector<neuronmem_buffer_t*> out;
    neuronmem_event_t* done = nullptr;
    ASSERT_OK(Execute(e, {x}, &out, &done, nullptr, {prev}));
    x = out[0];
    prev = done;
    events.push_back(done);
  }
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  ASSERT_OK(neuronmem_event_wait(prev, -1));
  EXPECT_EQ(Read(x, 4), std::vector<float>(4, 50.0f));
  for (neuronmem_event_t* ev : events) neuronmem_event_destroy(ev);
  neuronmem_event_destroy(gate);
}

TEST_F(ExecTest, ThreadsSubmitConcurrently) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kIncrement, &e));
  constexpr int kThreads = 4, kRuns = 25;
  std::vector<neuronmem_buffer_t*> inputs;
  for (int t = 0; t < kThreads; ++t)
    inputs.push_back(Upload(std::vector<float>(4, static_cast<float>(t)), {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE)));
  std::vector<std::vector<std::pair<neuronmem_buffer_t*, neuronmem_event_t*>>> runs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRuns; ++i) {
        neuronmem_execute_args_t a{};
        a.struct_size = sizeof a;
        a.executable = e;
        a.device = Device();
        a.arguments = &inputs[t];
        a.num_arguments = 1;
        neuronmem_buffer_t* out = nullptr;
        neuronmem_event_t* done = nullptr;
        EXPECT_OK(neuronmem_executable_execute(&a, &out, &done, nullptr));
        runs[t].emplace_back(out, done);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (auto& [out, done] : runs[t]) {
      EXPECT_OK(neuronmem_event_wait(done, -1));
      EXPECT_EQ(Read(out, 4), std::vector<float>(4, static_cast<float>(t + 1)));
      neuronmem_event_destroy(done);
      neuronmem_buffer_destroy(out);
    }
  }
}

TEST_F(ExecTest, ClientRefusesToGoWhileExecutionsArePending) {
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(MakeClient(8u << 20, 1, &c));
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kIncrement, &e, NEURONMEM_ARGUMENT_PLACEMENT_STRICT, c));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0, c), c);
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(c, &gate));
  neuronmem_execute_args_t args{};
  args.struct_size = sizeof args;
  args.executable = e;
  args.device = Device(0, c);
  args.arguments = &a;
  args.num_arguments = 1;
  args.wait.events = &gate;
  args.wait.num_events = 1;
  neuronmem_buffer_t* out = nullptr;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(neuronmem_executable_execute(&args, &out, &done, nullptr));
  executables_.erase(std::find(executables_.begin(), executables_.end(), e));
  buffers_.erase(std::find(buffers_.begin(), buffers_.end(), a));
  neuronmem_executable_destroy(e);  // the execution keeps what it needs
  neuronmem_buffer_destroy(out);
  neuronmem_buffer_destroy(a);
  const Result r = Take(neuronmem_client_destroy(c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("executions"), std::string::npos) << r.message;
  ASSERT_OK(neuronmem_event_complete(gate, nullptr));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  neuronmem_event_destroy(done);
  neuronmem_event_destroy(gate);
  // Finished once its event is ready: the client may go at once.
  EXPECT_OK(neuronmem_client_destroy(c));
}

}  // namespace
}  // namespace neuronmem_test
