// Chaining: the outputs of one executable feed the next without leaving the device, as
// torch-neuronx's move_trace_to_device promises for two models in a pipeline. Each execution is queued before
// the one it reads has finished (the queue's workers run them when the gate opens), so these tests also run in
// the `concurrency` suite under ThreadSanitizer.
#include <thread>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

// Stage one: a small layer, y = x * w + b.
const char kLayer[] = R"(
func.func @main(%x: tensor<256xf32>, %w: tensor<256xf32>, %b: tensor<256xf32>) -> tensor<256xf32> {
  %0 = stablehlo.multiply %x, %w : tensor<256xf32>
  %1 = stablehlo.add %0, %b : tensor<256xf32>
  return %1 : tensor<256xf32>
}
)";

// Stage two: an activation and a reduction, max(y, 0) and its sum.
const char kHead[] = R"(
func.func @main(%y: tensor<256xf32>) -> (tensor<256xf32>, tensor<f32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<256xf32>
  %0 = stablehlo.maximum %y, %zero : tensor<256xf32>
  %i = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%0 init: %i) applies stablehlo.add across dimensions = [0]
      : (tensor<256xf32>, tensor<f32>) -> tensor<f32>
  return %0, %1 : tensor<256xf32>, tensor<f32>
}
)";

// Pipeline stages that donate their input: x * 2 and x - 3.
const char kDouble[] = R"(
func.func @main(%x: tensor<1024xf32> {tf.aliasing_output = 0 : i32}) -> tensor<1024xf32> {
  %0 = stablehlo.add %x, %x : tensor<1024xf32>
  return %0 : tensor<1024xf32>
}
)";
const char kMinus3[] = R"(
func.func @main(%x: tensor<1024xf32> {jax.buffer_donor = true}) -> tensor<1024xf32> {
  %three = stablehlo.constant dense<3.0> : tensor<1024xf32>
  %0 = stablehlo.subtract %x, %three : tensor<1024xf32>
  return %0 : tensor<1024xf32>
}
)";

// Checks its input against 1.0 everywhere (a failed check fails the execution), then adds 1.
const char kChecked[] = R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %ones = stablehlo.constant dense<1.0> : tensor<4xf32>
  stablehlo.custom_call @check.expect_eq(%x, %ones) : (tensor<4xf32>, tensor<4xf32>) -> ()
  %0 = stablehlo.add %x, %ones : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

constexpr neuronmem_memory_kind_t kKinds[] = {NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST,
                                              NEURONMEM_MEMORY_KIND_UNPINNED_HOST};

class ChainTest : public ExecTest {
 protected:
  bool IsReady(neuronmem_event_t* e) {
    bool ready = false;
    EXPECT_OK(neuronmem_event_is_ready(e, &ready));
    return ready;
  }
  neuronmem_memory_stats_t MemoryStats(neuronmem_memory_kind_t kind) {
    neuronmem_memory_stats_t s{};
    s.struct_size = NEURONMEM_MEMORY_STATS_STRUCT_SIZE;
    EXPECT_OK(neuronmem_memory_stats(Memory(kind), &s));
    return s;
  }
  // Every byte the execution moved, and that none went to or came from a host kind.
  void ExpectNothingCrossedToTheHost(neuronmem_execution_t* x) {
    const neuronmem_execution_stats_t st = Stats(x);
    EXPECT_EQ(st.explicit_transfers, 0u);
    EXPECT_EQ(st.explicit_bytes, 0u);
    EXPECT_EQ(st.implicit_transfers, 0u);
    EXPECT_EQ(st.implicit_bytes, 0u);
    for (neuronmem_memory_kind_t from : kKinds) {
      for (neuronmem_memory_kind_t to : kKinds) {
        if (from == NEURONMEM_MEMORY_KIND_DEVICE && to == NEURONMEM_MEMORY_KIND_DEVICE) continue;
        const neuronmem_transfer_counts_t c = Pair(x, from, to);
        EXPECT_EQ(c.explicit_bytes + c.implicit_bytes, 0u) << from << " -> " << to;
      }
    }
  }
};

// Two executables queued back to back before the first has started: the second reads the first's output in
// device memory; nothing is copied, staged or allocated in a host memory.
TEST_F(ChainTest, TwoExecutablesQueuedBackToBackStayOnTheDevice) {
  neuronmem_executable_t* layer = nullptr;
  neuronmem_executable_t* head = nullptr;
  ASSERT_OK(Compile(kLayer, &layer));
  ASSERT_OK(Compile(kHead, &head));
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  std::vector<float> x(256), w(256), b(256);
  for (int i = 0; i < 256; ++i) {
    x[i] = static_cast<float>(i - 128);
    w[i] = (i % 3) - 1.0f;
    b[i] = 0.5f;
  }
  neuronmem_buffer_t* bx = Upload(x, {256}, dev);
  neuronmem_buffer_t* bw = Upload(w, {256}, dev);
  neuronmem_buffer_t* bb = Upload(b, {256}, dev);
  const uint64_t pinned_before = MemoryStats(NEURONMEM_MEMORY_KIND_PINNED_HOST).total_allocations;
  const uint64_t unpinned_before = MemoryStats(NEURONMEM_MEMORY_KIND_UNPINNED_HOST).total_allocations;

  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<neuronmem_buffer_t*> hidden, out;
  neuronmem_event_t* done1 = nullptr;
  neuronmem_event_t* done2 = nullptr;
  neuronmem_execution_t* x1 = nullptr;
  neuronmem_execution_t* x2 = nullptr;
  ASSERT_OK(Execute(layer, {bx, bw, bb}, &hidden, &done1, &x1, {gate}));
  ASSERT_OK(Execute(head, {hidden[0]}, &out, &done2, &x2));  // its argument is not defined yet
  EXPECT_FALSE(IsReady(done1));
  EXPECT_FALSE(IsReady(done2));
  // The gate opens on another thread; the core's queue runs both on its workers.
  std::thread opener([&] { EXPECT_OK(neuronmem_event_complete(gate, nullptr)); });
  ASSERT_OK(neuronmem_event_wait(done2, -1));
  opener.join();
  EXPECT_TRUE(IsReady(done1));

  std::vector<float> relu(256);
  float sum = 0;
  for (int i = 0; i < 256; ++i) {
    relu[i] = std::max(x[i] * w[i] + b[i], 0.0f);
    sum += relu[i];
  }
  EXPECT_EQ(Read(out[0], 256), relu);
  EXPECT_EQ(Read(out[1], 1), std::vector<float>{sum});
  for (neuronmem_buffer_t* r : {hidden[0], out[0], out[1]}) EXPECT_EQ(KindOf(r), NEURONMEM_MEMORY_KIND_DEVICE);
  ExpectNothingCrossedToTheHost(x1);
  ExpectNothingCrossedToTheHost(x2);
  // No staging buffer either: the host memories allocated nothing while the chain ran.
  EXPECT_EQ(MemoryStats(NEURONMEM_MEMORY_KIND_PINNED_HOST).total_allocations, pinned_before);
  EXPECT_EQ(MemoryStats(NEURONMEM_MEMORY_KIND_UNPINNED_HOST).total_allocations, unpinned_before);
  for (neuronmem_event_t* e : {gate, done1, done2}) neuronmem_event_destroy(e);
  neuronmem_execution_destroy(x1);
  neuronmem_execution_destroy(x2);
}

// Eight steps of two alternating executables, each donating its input to its output, all queued before the
// first runs: every step reuses the one device buffer the chain started with, and no byte reaches the host.
TEST_F(ChainTest, DonatedPipelineOfEightStepsQueuedAtOnce) {
  neuronmem_executable_t* twice = nullptr;
  neuronmem_executable_t* minus3 = nullptr;
  ASSERT_OK(Compile(kDouble, &twice));
  ASSERT_OK(Compile(kMinus3, &minus3));
  std::vector<float> x(1024);
  for (int i = 0; i < 1024; ++i) x[i] = static_cast<float>(i % 17);
  neuronmem_buffer_t* cur = Upload(x, {1024}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  const neuronmem_memory_stats_t dev_before = MemoryStats(NEURONMEM_MEMORY_KIND_DEVICE);
  const uint64_t pinned_before = MemoryStats(NEURONMEM_MEMORY_KIND_PINNED_HOST).total_allocations;
  const uint64_t unpinned_before = MemoryStats(NEURONMEM_MEMORY_KIND_UNPINNED_HOST).total_allocations;

  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<neuronmem_event_t*> dones;
  std::vector<neuronmem_execution_t*> executions;
  for (int step = 0; step < 8; ++step) {
    std::vector<neuronmem_buffer_t*> out;
    neuronmem_event_t* done = nullptr;
    neuronmem_execution_t* ex = nullptr;
    std::vector<neuronmem_event_t*> waits;
    if (step == 0) waits.push_back(gate);
    ASSERT_OK(Execute(step % 2 ? minus3 : twice, {cur}, &out, &done, &ex, waits));
    bool deleted = false;
    ASSERT_OK(neuronmem_buffer_is_deleted(cur, &deleted));
    EXPECT_TRUE(deleted) << "step " << step << ": the donated input stays live";
    cur = out[0];
    dones.push_back(done);
    executions.push_back(ex);
  }
  for (neuronmem_event_t* d : dones) EXPECT_FALSE(IsReady(d));
  // While queued, the donated buffers hold no device memory of their own: one buffer's worth in use.
  EXPECT_EQ(MemoryStats(NEURONMEM_MEMORY_KIND_DEVICE).bytes_in_use, dev_before.bytes_in_use);
  std::thread opener([&] { EXPECT_OK(neuronmem_event_complete(gate, nullptr)); });
  ASSERT_OK(neuronmem_event_wait(dones.back(), -1));
  opener.join();

  for (int step = 0; step < 8; ++step)
    for (float& v : x) v = step % 2 ? v - 3.0f : v + v;
  EXPECT_EQ(Read(cur, 1024), x);
  EXPECT_EQ(KindOf(cur), NEURONMEM_MEMORY_KIND_DEVICE);
  for (neuronmem_execution_t* ex : executions) ExpectNothingCrossedToTheHost(ex);
  EXPECT_EQ(MemoryStats(NEURONMEM_MEMORY_KIND_DEVICE).bytes_in_use, dev_before.bytes_in_use);
  EXPECT_EQ(MemoryStats(NEURONMEM_MEMORY_KIND_PINNED_HOST).total_allocations, pinned_before);
  EXPECT_EQ(MemoryStats(NEURONMEM_MEMORY_KIND_UNPINNED_HOST).total_allocations, unpinned_before);
  for (neuronmem_event_t* d : dones) neuronmem_event_destroy(d);
  for (neuronmem_execution_t* ex : executions) neuronmem_execution_destroy(ex);
  neuronmem_event_destroy(gate);
}

// The first execution of a chain fails (its check fails on the input): the second, queued on the first's
// output, fails too, naming its argument and the first's cause; its results are never defined, and the
// client stays usable.
TEST_F(ChainTest, AFailingFirstExecutionFailsTheSecond) {
  neuronmem_executable_t* checked = nullptr;
  ASSERT_OK(Compile(kChecked, &checked));
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_buffer_t* bad = Upload({1, 1, 7, 1}, {4}, dev);
  neuronmem_event_t* gate = nullptr;
  ASSERT_OK(neuronmem_event_create(client_, &gate));
  std::vector<neuronmem_buffer_t*> first, second;
  neuronmem_event_t* done1 = nullptr;
  neuronmem_event_t* done2 = nullptr;
  ASSERT_OK(Execute(checked, {bad}, &first, &done1, nullptr, {gate}));
  ASSERT_OK(Execute(checked, {first[0]}, &second, &done2));
  std::thread opener([&] { EXPECT_OK(neuronmem_event_complete(gate, nullptr)); });
  const Result r2 = Take(neuronmem_event_wait(done2, -1));
  opener.join();
  const Result r1 = Take(neuronmem_event_wait(done1, -1));
  EXPECT_EQ(r1.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << r1.message;
  EXPECT_NE(r1.message.find("test.mlir:4:"), std::string::npos) << r1.message;
  EXPECT_NE(r1.message.find("@check.expect_eq"), std::string::npos) << r1.message;
  EXPECT_NE(r1.message.find("at index [2]"), std::string::npos) << r1.message;
  EXPECT_EQ(r2.code, r1.code);
  EXPECT_NE(r2.message.find("argument 0 (x) failed: "), std::string::npos) << r2.message;
  EXPECT_NE(r2.message.find(r1.message), std::string::npos) << r2.message;
  // The failed results are not readable; the client runs the chain again with a good input.
  neuronmem_event_t* ready = nullptr;
  ASSERT_OK(neuronmem_buffer_ready_event(second[0], &ready));
  EXPECT_EQ(Take(neuronmem_event_wait(ready, -1)).code, r1.code);
  neuronmem_event_destroy(ready);
  neuronmem_buffer_t* good = Upload({1, 1, 1, 1}, {4}, dev);
  std::vector<neuronmem_buffer_t*> again;
  neuronmem_event_t* done3 = nullptr;
  ASSERT_OK(Execute(checked, {good}, &again, &done3));
  ASSERT_OK(neuronmem_event_wait(done3, -1));
  EXPECT_EQ(Read(again[0], 4), std::vector<float>(4, 2.0f));
  for (neuronmem_event_t* e : {gate, done1, done2, done3}) neuronmem_event_destroy(e);
}

}  // namespace
}  // namespace neuronmem_test
