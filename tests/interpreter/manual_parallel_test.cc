// Program::RunOptions::parallel: where the devices of an sdy.manual_computation whose body communicates run when
// the embedder gives its cores (the executor's CoreWorkers; here a hook of the test's on threads it starts). The
// results agree with the run without a hook (a std::thread per device), the hook is called once per computation
// with every device and scratch for each, a device the hook cannot start fails the run naming it (the others do
// not hang), and a body that does not communicate never calls it. Program::RunOptions::space_memory: the frames of
// the other memory spaces of each device's body come from it, one allocation per device given back after the
// run; one it refuses fails the run naming the device.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "interp_test_util.h"

namespace neuronmem::interp {
namespace {

using testing::CompileText;

// psum over "x"=4 of i32[8, 3] split along dim 0 (`body` from %a to %r of tensor<2x3xi32>), gathered back.
std::string Psum4(const std::string& body) {
  return "module @m {\n  sdy.mesh @mesh = <[\"x\"=4]>\n  func.func @main(%arg0: tensor<8x3xi32>) -> tensor<8x3xi32> "
         "{\n    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"x\"}, {}]>]\n"
         "        out_shardings=[<@mesh, [{\"x\"}, {}]>] manual_axes={\"x\"} (%a: tensor<2x3xi32>) {\n" +
         body +
         "      sdy.return %r : tensor<2x3xi32>\n    } : (tensor<8x3xi32>) -> tensor<8x3xi32>\n"
         "    return %1 : tensor<8x3xi32>\n  }\n}\n";
}

const char* kAllReduce =
    "      %s = \"stablehlo.all_reduce\"(%a) ({\n"
    "        ^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
    "          %t = stablehlo.add %x, %y : tensor<i32>\n"
    "          stablehlo.return %t : tensor<i32>\n"
    "      }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, channel_handle = "
    "#stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids} : (tensor<2x3xi32>) -> tensor<2x3xi32>\n"
    "      %p = stablehlo.partition_id : tensor<ui32>\n"
    "      %pi = stablehlo.convert %p : (tensor<ui32>) -> tensor<i32>\n"
    "      %pb = stablehlo.broadcast_in_dim %pi, dims = [] : (tensor<i32>) -> tensor<2x3xi32>\n"
    "      %m = stablehlo.multiply %s, %pb : tensor<2x3xi32>\n"
    "      %r = stablehlo.subtract %a, %m : tensor<2x3xi32>\n";

// The test's hook: every device on a thread of its own (device 0 on the caller), its scratch from the heap.
struct Hook {
  std::atomic<int> calls{0};
  size_t n = 0, bytes = 0;
  size_t refuse = SIZE_MAX;  // the device it cannot start
  bool aligned = true;

  static void Run(void* ctx, size_t n, size_t bytes, Program::RunOptions::Parallel::Task task, void* arg) {
    Hook& h = *static_cast<Hook*>(ctx);
    ++h.calls;
    h.n = n;
    h.bytes = bytes;
    std::vector<char*> scratch(n);
    std::vector<std::thread> threads;
    for (size_t k = 0; k < n; ++k) {
      scratch[k] = static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
      if (reinterpret_cast<uintptr_t>(scratch[k]) % 64) h.aligned = false;
      if (k == h.refuse) {
        task(arg, k, nullptr, ResourceExhausted("the test refuses device %zu", k));
        continue;
      }
      if (k > 0) threads.emplace_back([=] { task(arg, k, scratch[k], Status()); });
    }
    if (n && h.refuse != 0) task(arg, 0, scratch[0], Status());
    for (std::thread& t : threads) t.join();
    for (char* p : scratch) std::free(p);
  }
};

std::vector<int32_t> RunWith(const Program& p, const Program::RunOptions& options, Status* status) {
  std::vector<int32_t> in(24);
  for (int i = 0; i < 24; ++i) in[static_cast<size_t>(i)] = i * 3 - 7;
  const std::vector<int64_t> dims = {8, 3};
  TensorView arg{in.data(), ElementType::kS32, dims.data(), dims.size()};
  HostResultAllocator alloc;
  std::vector<TensorView> out;
  *status = p.Run(&arg, 1, &alloc, &out, options);
  if (*status) return {};
  const auto* r = static_cast<const int32_t*>(out[0].data);
  return std::vector<int32_t>(r, r + 24);
}

TEST(ManualParallel, TheHookRunsEveryDeviceWithTheSameResultsAsThreads) {
  auto c = CompileText(Psum4(kAllReduce));
  ASSERT_FALSE(c.status) << c.status->message;
  Status s;
  const std::vector<int32_t> threads = RunWith(*c.program, {}, &s);
  ASSERT_FALSE(s) << s->message;
  Hook hook;
  const Program::RunOptions::Parallel parallel{&Hook::Run, &hook};
  Program::RunOptions options;
  options.parallel = &parallel;
  for (int rep = 0; rep < 3; ++rep) {
    EXPECT_EQ(RunWith(*c.program, options, &s), threads);
    ASSERT_FALSE(s) << s->message;
  }
  EXPECT_EQ(hook.calls.load(), 3);
  EXPECT_EQ(hook.n, 4u);
  EXPECT_GT(hook.bytes, 0u);  // each device's frames (and results) in the hook's scratch
  EXPECT_TRUE(hook.aligned);
  // And the math: device d's block is its own minus d times the sum of the four.
  std::vector<int32_t> want(24);
  for (int i = 0; i < 24; ++i) {
    int32_t sum = 0;
    for (int d = 0; d < 4; ++d) sum += (d * 6 + i % 6) * 3 - 7;
    want[static_cast<size_t>(i)] = (i * 3 - 7) - (i / 6) * sum;
  }
  EXPECT_EQ(threads, want);
}

TEST(ManualParallel, ADeviceTheHookCannotStartFailsTheRunNamingIt) {
  auto c = CompileText(Psum4(kAllReduce));
  ASSERT_FALSE(c.status) << c.status->message;
  for (size_t refuse : {size_t{0}, size_t{2}}) {
    Hook hook;
    hook.refuse = refuse;
    const Program::RunOptions::Parallel parallel{&Hook::Run, &hook};
    Program::RunOptions options;
    options.parallel = &parallel;
    Status s;
    RunWith(*c.program, options, &s);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED) << s->message;
    EXPECT_NE(s->message.find("'sdy.manual_computation' on device " + std::to_string(refuse)), std::string::npos)
        << s->message;
    EXPECT_NE(s->message.find("the test refuses device " + std::to_string(refuse)), std::string::npos) << s->message;
  }
}

TEST(ManualParallel, ABodyThatDoesNotCommunicateNeverCallsTheHook) {
  auto c = CompileText(Psum4("      %r = stablehlo.add %a, %a : tensor<2x3xi32>\n"));
  ASSERT_FALSE(c.status) << c.status->message;
  Hook hook;
  const Program::RunOptions::Parallel parallel{&Hook::Run, &hook};
  Program::RunOptions options;
  options.parallel = &parallel;
  Status s;
  const std::vector<int32_t> out = RunWith(*c.program, options, &s);
  ASSERT_FALSE(s) << s->message;
  EXPECT_EQ(hook.calls.load(), 0);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], 2 * (i * 3 - 7));
}

// Program::RunOptions::space_memory of the test: 64-byte aligned heap memory, counted per space; refuses every
// allocation once `refuse` allocations were made.
struct Spaces {
  std::mutex mu;
  size_t allocated[kMaxSpaces] = {}, released[kMaxSpaces] = {}, live = 0, bytes = 0;
  size_t refuse = SIZE_MAX;
  std::vector<std::pair<char*, char*>> held;  // [begin, end) of each live allocation

  static void* Allocate(void* ctx, size_t space, size_t bytes) {
    Spaces& s = *static_cast<Spaces*>(ctx);
    std::lock_guard<std::mutex> lock(s.mu);
    size_t made = 0;
    for (size_t n : s.allocated) made += n;
    if (made >= s.refuse) return nullptr;
    char* p = static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    ++s.allocated[space];
    ++s.live;
    s.bytes = bytes;
    s.held.emplace_back(p, p + bytes);
    return p;
  }
  static void Release(void* ctx, size_t space, void* p, size_t) {
    Spaces& s = *static_cast<Spaces*>(ctx);
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.released[space];
    --s.live;
    for (size_t i = 0; i < s.held.size(); ++i)
      if (s.held[i].first == p) s.held.erase(s.held.begin() + static_cast<std::ptrdiff_t>(i));
    std::free(p);
  }
};

// Psum4's body with its negations in memory space 1 (CompileOptions::result_space), a device's frames of space 1
// then apart from the hook's scratch.
std::unique_ptr<Program> CompileWithSpace1(const std::string& body, std::vector<stablehlo::Module>* modules) {
  EXPECT_FALSE(stablehlo::ParseModules(Psum4(body), "test.mlir", modules));
  CompileOptions o;
  o.filename = "test.mlir";
  o.result_space = [](const stablehlo::Operation& op) -> uint8_t { return op.name == "stablehlo.negate" ? 1 : 0; };
  std::unique_ptr<Program> p;
  Status s = Compile((*modules)[0], o, &p);
  EXPECT_FALSE(s) << s->message;
  return p;
}

const char* kNegateTwice =
    "      %n = stablehlo.negate %a : tensor<2x3xi32>\n"
    "      %a2 = stablehlo.negate %n : tensor<2x3xi32>\n";

TEST(ManualParallel, EachDevicesFramesOfOtherSpacesComeFromTheSpaceMemory) {
  std::string body = std::string(kNegateTwice) + kAllReduce;
  // The all_reduce and the rest read %a2 (the block negated twice, through space 1).
  for (const char* use : {"(%a)", "%a, %m"}) {
    const std::string from = use, to = from == "(%a)" ? "(%a2)" : "%a2, %m";
    body.replace(body.find(from), from.size(), to);
  }
  std::vector<stablehlo::Module> modules;
  std::unique_ptr<Program> p = CompileWithSpace1(body, &modules);
  ASSERT_NE(p, nullptr);
  auto plain = CompileText(Psum4(kAllReduce));
  ASSERT_FALSE(plain.status) << plain.status->message;
  Status s;
  const std::vector<int32_t> want = RunWith(*plain.program, {}, &s);
  ASSERT_FALSE(s) << s->message;
  for (bool cores : {false, true}) {  // a thread per device, and the embedder's hook given too
    Spaces spaces;
    const Program::RunOptions::SpaceMemory memory{&Spaces::Allocate, &Spaces::Release, &spaces};
    Hook hook;
    const Program::RunOptions::Parallel parallel{&Hook::Run, &hook};
    Program::RunOptions options;
    options.space_memory = &memory;
    if (cores) options.parallel = &parallel;
    EXPECT_EQ(RunWith(*p, options, &s), want);
    ASSERT_FALSE(s) << s->message;
    EXPECT_EQ(spaces.allocated[1], 4u);  // one frame set per device
    EXPECT_EQ(spaces.released[1], 4u);
    EXPECT_EQ(spaces.allocated[2] + spaces.allocated[3] + spaces.allocated[0], 0u);
    EXPECT_EQ(spaces.live, 0u);
    EXPECT_GE(spaces.bytes, 2u * 3u * sizeof(int32_t));
  }
  // Without one, the frames are host memory of the run's own: the same results.
  EXPECT_EQ(RunWith(*p, {}, &s), want);
  ASSERT_FALSE(s) << s->message;
}

TEST(ManualParallel, ASpaceMemoryThatRefusesFailsTheRunNamingTheDevice) {
  std::string body = std::string(kNegateTwice) + kAllReduce;
  std::vector<stablehlo::Module> modules;
  std::unique_ptr<Program> p = CompileWithSpace1(body, &modules);
  ASSERT_NE(p, nullptr);
  for (size_t refuse : {size_t{0}, size_t{2}}) {
    Spaces spaces;
    spaces.refuse = refuse;
    const Program::RunOptions::SpaceMemory memory{&Spaces::Allocate, &Spaces::Release, &spaces};
    Program::RunOptions options;
    options.space_memory = &memory;
    Status s;
    RunWith(*p, options, &s);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED) << s->message;
    EXPECT_NE(s->message.find("'sdy.manual_computation' on device"), std::string::npos) << s->message;
    EXPECT_NE(s->message.find("no memory of space 1"), std::string::npos) << s->message;
    EXPECT_EQ(spaces.live, 0u);  // what it gave was given back
  }
}

}  // namespace
}  // namespace neuronmem::interp
