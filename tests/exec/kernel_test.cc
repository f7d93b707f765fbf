// Custom kernels through the C API: a kernel called by its custom-call target, an NKI
// kernel (AwsNeuronCustomNativeKernel) found by its backend_config's func_name and run once per grid point in
// parallel, a pinned_host operand read in place, errors of a kernel, and unregistered kernels at compile.
#include <tbb/task_arena.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

struct Seen {
  std::atomic<int> calls{0};
  std::mutex mu;
  std::set<int64_t> points;
  std::set<int> arenas;  // the max_concurrency of the oneTBB arena each grid point ran in
  neuronmem_memory_kind_t input_kind = NEURONMEM_MEMORY_KIND_DEVICE;
  std::string backend_config;
};

// out = 2 * in, for one f32 operand.
neuronmem_status_t* Scale2(const neuronmem_kernel_call_t* call, void* user_data) {
  auto* seen = static_cast<Seen*>(user_data);
  seen->calls++;
  {
    std::lock_guard<std::mutex> lock(seen->mu);
    seen->input_kind = call->inputs[0].memory_kind;
    seen->backend_config.assign(call->backend_config.data, call->backend_config.size);
  }
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->inputs[0].element_type != NEURONMEM_ELEMENT_TYPE_F32)
    return neuronmem_status_create(NEURONMEM_STATUS_INVALID_ARGUMENT, "scale2 takes one f32 operand", 28);
  const auto* in = static_cast<const float*>(call->inputs[0].data);
  auto* out = static_cast<float*>(call->outputs[0].data);
  int64_t n = 1;
  for (size_t d = 0; d < call->inputs[0].num_dims; ++d) n *= call->inputs[0].dims[d];
  for (int64_t i = 0; i < n; ++i) out[i] = 2 * in[i];
  return nullptr;
}

// The NKI tensor add ({"func_name":"nki_add","grid":[4]}): grid point p adds elements [2p, 2p+2).
neuronmem_status_t* NkiAdd(const neuronmem_kernel_call_t* call, void* user_data) {
  auto* seen = static_cast<Seen*>(user_data);
  seen->calls++;
  if (call->grid_rank != 1 || call->grid[0] != 4)
    return neuronmem_status_create(NEURONMEM_STATUS_INTERNAL, "expected a grid of [4]", 22);
  const int64_t p = call->grid_index[0];
  {
    std::lock_guard<std::mutex> lock(seen->mu);
    seen->points.insert(p);
    seen->arenas.insert(tbb::this_task_arena::max_concurrency());
  }
  if (p == 3 && seen->backend_config == "fail")
    return neuronmem_status_create(NEURONMEM_STATUS_DATA_LOSS, "the tile was corrupt", 20);
  const auto* a = static_cast<const float*>(call->inputs[0].data);
  const auto* b = static_cast<const float*>(call->inputs[1].data);
  auto* c = static_cast<float*>(call->outputs[0].data);
  for (int64_t i = 2 * p; i < 2 * p + 2; ++i) c[i] = a[i] + b[i];
  return nullptr;
}

class KernelTest : public ExecTest {};

const char kScale[] = R"(
func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my.scale2(%a) {backend_config = "opaque-config"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.add %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)";

constexpr const char* kNki = kNkiAdd;

TEST_F(KernelTest, KernelByTargetReadsPinnedHostInPlace) {
  Seen seen;
  RegisterKernel("my.scale2", Scale2, &seen);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kScale, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{4, 8, 12, 16}));
  EXPECT_EQ(seen.calls.load(), 1);
  EXPECT_EQ(seen.input_kind, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  EXPECT_EQ(seen.backend_config, "opaque-config");
  EXPECT_EQ(Stats(x).implicit_transfers + Stats(x).explicit_transfers, 0u);
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

TEST_F(KernelTest, NkiKernelRunsEveryGridPoint) {
  Seen seen;
  RegisterKernel("nki_add", NkiAdd, &seen);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kNki, &e));
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4, 5, 6, 7, 8}, {8}, dev);
  neuronmem_buffer_t* b = Upload({10, 20, 30, 40, 50, 60, 70, 80}, {8}, dev);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a, b}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 8), (std::vector<float>{11, 22, 33, 44, 55, 66, 77, 88}));
  EXPECT_EQ(seen.calls.load(), 4);
  EXPECT_EQ(seen.points, (std::set<int64_t>{0, 1, 2, 3}));
  neuronmem_event_destroy(done);
}

// Grid points run on the library's oneTBB arena, never in the arena of the thread that submitted the
// execution (a good guest: a caller that limits its own arena to one thread does not limit the kernels, and
// the library's work does not run in the caller's arena). The submission below runs inline on the caller's
// thread (the core is idle), inside a task_arena of concurrency 1.
TEST_F(KernelTest, GridPointsRunOnTheLibrarysArena) {
  Seen seen;
  RegisterKernel("nki_add", NkiAdd, &seen);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kNki, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4, 5, 6, 7, 8}, {8}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  tbb::task_arena one(1);
  one.execute([&] { EXPECT_OK(Execute(e, {a, a}, &results, &done)); });
  ASSERT_NE(done, nullptr);
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 8), (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
  neuronmem_event_destroy(done);
  EXPECT_EQ(seen.points, (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(seen.arenas.count(1), 0u) << "a grid point ran in the caller's arena of concurrency 1";
}

TEST_F(KernelTest, AKernelErrorFailsTheExecution) {
  Seen seen;
  seen.backend_config = "fail";
  RegisterKernel("nki_add", NkiAdd, &seen);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kNki, &e));
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_buffer_t* a = Upload(std::vector<float>(8, 1.0f), {8}, dev);
  const auto held = Held(1);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a, a}, &results, &done));
  const Result r = Take(neuronmem_event_wait(done, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_DATA_LOSS);
  EXPECT_NE(r.message.find("test.mlir:3:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("kernel 'nki_add' at grid point [3]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("the tile was corrupt"), std::string::npos) << r.message;
  // The failed result's content carries the error.
  float out[8];
  neuronmem_buffer_read_args_t ra{};
  ra.struct_size = sizeof ra;
  ra.buffer = results[0];
  ra.size = sizeof out;
  ra.dst = out;
  EXPECT_EQ(Take(neuronmem_buffer_read(&ra, nullptr)).code, NEURONMEM_STATUS_DATA_LOSS);
  neuronmem_event_destroy(done);
  // Nothing stays allocated once the result is dropped (the workspace went back with the failure).
  Drop(results);
  EXPECT_EQ(Held(1), held);
  // The client stays usable: the argument is intact and the same executable runs once the kernel succeeds.
  EXPECT_EQ(Read(a, 8), std::vector<float>(8, 1.0f));
  seen.backend_config.clear();
  ASSERT_OK(Execute(e, {a, a}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 8), std::vector<float>(8, 2.0f));
  neuronmem_event_destroy(done);
}

// Kernels belong to the client they were registered with; registration is thread-safe while other threads
// register and compile; an executable keeps the kernel it was compiled with when the name is registered again.
neuronmem_status_t* Scale3(const neuronmem_kernel_call_t* call, void*) {
  const auto* in = static_cast<const float*>(call->inputs[0].data);
  auto* out = static_cast<float*>(call->outputs[0].data);
  for (int64_t i = 0; i < call->inputs[0].dims[0]; ++i) out[i] = 3 * in[i];
  return nullptr;
}

TEST_F(KernelTest, KernelsArePerClientThreadSafeAndTakenAtCompile) {
  Seen seen;
  RegisterKernel("my.scale2", Scale2, &seen);
  neuronmem_client_t* other = nullptr;
  ASSERT_OK(MakeClient(16u << 20, 1, &other));
  neuronmem_executable_t* e = nullptr;
  Result r = Take(Compile(kScale, &e, NEURONMEM_ARGUMENT_PLACEMENT_STRICT, other));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED) << r.message;  // client_'s kernel is not other's
  EXPECT_NE(r.message.find("my.scale2"), std::string::npos) << r.message;
  EXPECT_OK(neuronmem_client_destroy(other));

  // Four threads each register 20 names and re-register my.scale2 (the same function) while compiling.
  constexpr int kThreads = 4, kNames = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kNames; ++i) {
        const std::string name = "k" + std::to_string(t) + "." + std::to_string(i);
        for (const char* n : {name.c_str(), "my.scale2"}) {
          if (neuronmem_status_t* s = TryRegisterKernel(n, Scale2, &seen)) {
            neuronmem_status_free(s);
            failures++;
          }
        }
        neuronmem_compile_options_t o{};
        o.struct_size = sizeof o;
        neuronmem_executable_t* x = nullptr;
        if (neuronmem_status_t* s = neuronmem_executable_compile_text(client_, kScale, sizeof kScale - 1, &o, &x)) {
          neuronmem_status_free(s);
          failures++;
        }
        neuronmem_executable_destroy(x);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  // Every name registered by every thread is there.
  std::string every =
      "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %v0 = stablehlo.add %a, %a : tensor<4xf32>\n";
  int v = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kNames; ++i, ++v) {
      every += "  %v" + std::to_string(v + 1) + " = stablehlo.custom_call @k" + std::to_string(t) + "." +
               std::to_string(i) + "(%v" + std::to_string(v) + ") : (tensor<4xf32>) -> tensor<4xf32>\n";
    }
  }
  every += "  return %v" + std::to_string(v) + " : tensor<4xf32>\n}\n";
  neuronmem_executable_t* all = nullptr;
  ASSERT_OK(Compile(every, &all));

  // An executable keeps the kernel it was compiled with: my.scale2 registered again as x3 changes only
  // executables compiled afterwards.
  neuronmem_executable_t* before = nullptr;
  ASSERT_OK(Compile(kScale, &before));
  RegisterKernel("my.scale2", Scale3, nullptr);
  neuronmem_executable_t* after = nullptr;
  ASSERT_OK(Compile(kScale, &after));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
  const std::vector<std::pair<neuronmem_executable_t*, std::vector<float>>> runs = {{before, {4, 8, 12, 16}},
                                                                                    {after, {6, 12, 18, 24}}};
  for (const auto& [x, want] : runs) {
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    ASSERT_OK(Execute(x, {a}, &results, &done));
    ASSERT_OK(neuronmem_event_wait(done, -1));
    EXPECT_EQ(Read(results[0], 4), want);
    neuronmem_event_destroy(done);
  }
  // 2^81 (the add, then x2 eighty times) of 1 overflows f32 to inf only past 2^128: exact powers of two.
  neuronmem_buffer_t* one = Upload({1, 0.5f, 0.25f, 0}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(all, {one}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  const float p81 = std::ldexp(1.0f, 81);
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{p81, p81 / 2, p81 / 4, 0}));
  neuronmem_event_destroy(done);
}

// What a kernel that calls back into the library gets: the blocking calls are refused, a query works.
struct Reentry {
  neuronmem_client_t* client = nullptr;
  neuronmem_event_t* never = nullptr;  // a user event nobody completes
  neuronmem_buffer_t* buffer = nullptr;
  neuronmem_status_code_t wait_code = NEURONMEM_STATUS_OK, read_code = NEURONMEM_STATUS_OK,
                          destroy_code = NEURONMEM_STATUS_OK, ready_code = NEURONMEM_STATUS_UNKNOWN;
  std::string wait_message;
  Seen seen;
};

neuronmem_status_t* CallsBack(const neuronmem_kernel_call_t* call, void* user_data) {
  auto* r = static_cast<Reentry*>(user_data);
  const Result wait = Take(neuronmem_event_wait(r->never, -1));
  r->wait_code = wait.code;
  r->wait_message = wait.message;
  float dst[4];
  neuronmem_buffer_read_args_t a{};
  a.struct_size = sizeof a;
  a.buffer = r->buffer;
  a.size = sizeof dst;
  a.dst = dst;
  r->read_code = Take(neuronmem_buffer_read(&a, nullptr)).code;
  r->destroy_code = Take(neuronmem_client_destroy(r->client)).code;
  bool ready = true;
  r->ready_code = Take(neuronmem_event_is_ready(r->never, &ready)).code;  // not blocking: allowed
  return Scale2(call, &r->seen);
}

TEST_F(KernelTest, AKernelCallingABlockingFunctionGetsFailedPrecondition) {
  Reentry r;
  r.client = client_;
  ASSERT_OK(neuronmem_event_create(client_, &r.never));
  r.buffer = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
  RegisterKernel("my.scale2", CallsBack, &r);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kScale, &e));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {r.buffer}, &results, &done));
  ASSERT_OK(neuronmem_event_wait(done, -1));  // the core did not hang
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{4, 8, 12, 16}));
  EXPECT_EQ(r.wait_code, NEURONMEM_STATUS_FAILED_PRECONDITION) << r.wait_message;
  EXPECT_NE(r.wait_message.find("inside a kernel"), std::string::npos) << r.wait_message;
  EXPECT_EQ(r.read_code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(r.destroy_code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(r.ready_code, NEURONMEM_STATUS_OK);
  // Outside the kernel the same calls work again.
  ASSERT_OK(neuronmem_event_complete(r.never, nullptr));
  EXPECT_OK(neuronmem_event_wait(r.never, -1));
  neuronmem_event_destroy(r.never);
  neuronmem_event_destroy(done);
}

TEST_F(KernelTest, AGridOfTooManyPointsIsRefusedAtCompile) {
  // {"func_name":"nki_add","grid":[4294967296,4294967296]}: 2^64 points wrapped to 0, so the execution
  // succeeded without calling the kernel once, its result never written.
  const std::string text = R"(
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.custom_call @AwsNeuronCustomNativeKernel(%a, %b)
      {backend_config = "eyJmdW5jX25hbWUiOiJua2lfYWRkIiwiZ3JpZCI6WzQyOTQ5NjcyOTYsNDI5NDk2NzI5Nl19"}
      : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";
  Seen seen;
  RegisterKernel("nki_add", NkiAdd, &seen);
  neuronmem_executable_t* e = nullptr;
  const Result r = Take(Compile(text, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << r.message;
  EXPECT_NE(r.message.find("test.mlir:3:3: 'stablehlo.custom_call' @AwsNeuronCustomNativeKernel: the grid [4294967296, "
                           "4294967296] has more than"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(seen.calls.load(), 0);
}

TEST_F(KernelTest, UnregisteredKernelsFailAtCompile) {
  neuronmem_executable_t* e = nullptr;
  Result r = Take(Compile(kNki, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(r.message.find("test.mlir:3:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("nki_add"), std::string::npos) << r.message;
  r = Take(Compile(kScale, &e));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNIMPLEMENTED);
  EXPECT_NE(r.message.find("my.scale2"), std::string::npos) << r.message;
  // Bad registrations.
  neuronmem_kernel_registration_t reg{};
  reg.struct_size = sizeof reg;
  reg.name = "x";
  EXPECT_EQ(Take(neuronmem_client_register_kernel(client_, &reg)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  reg.fn = Scale2;
  reg.name = "";
  EXPECT_EQ(Take(neuronmem_client_register_kernel(client_, &reg)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  // Statuses a kernel builds.
  EXPECT_EQ(neuronmem_status_create(NEURONMEM_STATUS_OK, "x", 1), nullptr);
  r = Take(neuronmem_status_create(static_cast<neuronmem_status_code_t>(999), "odd", 3));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNKNOWN);
  EXPECT_EQ(r.message, "odd");
}

// A kernel cannot take a target the executor runs itself: the placement moves (they move and count the
// bytes), the checks, the NKI dispatch. The refusal names the target and keeps the built-in: a graph's
// MoveToHost still moves its bytes into pinned_host and counts them.
TEST_F(KernelTest, BuiltInTargetsCannotBeRegistered) {
  Seen seen;
  for (const char* name : {"annotate_device_placement", "MoveToHost", "MoveToDevice", "AwsNeuronMemoryPlacement",
                           "AwsNeuronCustomNativeKernel", "check.expect_eq", "check.expect_close", "check.anything"}) {
    const Result res = Take(TryRegisterKernel(name, Scale2, &seen));
    EXPECT_EQ(res.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << name;
    EXPECT_NE(res.message.find(std::string("'") + name + "'"), std::string::npos) << res.message;
  }
  // Names that only look like them are ordinary targets.
  RegisterKernel("MoveToHostTiled", Scale2, &seen);
  RegisterKernel("checkpoint.save", Scale2, &seen);
  const char kMove[] = R"(
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) {
  %0 = stablehlo.custom_call @MoveToHost(%a) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kMove, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* x = nullptr;
  ASSERT_OK(Execute(e, {a}, &results, &done, &x));
  ASSERT_OK(neuronmem_event_wait(done, -1));
  EXPECT_EQ(Read(results[0], 4), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(seen.calls.load(), 0);
  const neuronmem_transfer_counts_t moved = Pair(x, NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST);
  EXPECT_EQ(moved.explicit_transfers, 1u);
  EXPECT_EQ(moved.explicit_bytes, 16u);
  neuronmem_event_destroy(done);
  neuronmem_execution_destroy(x);
}

std::string Base64(const std::string& in) {
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buf = 0;
  int bits = 0;
  for (unsigned char c : in) {
    buf = (buf << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kChars[(buf >> bits) & 63]);
    }
  }
  if (bits) out.push_back(kChars[(buf << (6 - bits)) & 63]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

// Issue 23, class 11: an NKI backend_config is checked against its schema at compile. Each bad field is
// INVALID_ARGUMENT naming it (before: a grid of floats, strings, nested arrays or 1e300 compiled and the kernel
// ran once; a non-string func_name leaked a JSON library exception as INTERNAL).
TEST_F(KernelTest, NkiBackendConfigSchemaIsChecked) {
  Seen seen;
  RegisterKernel("nki_add", NkiAdd, &seen);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"func_name":7,"grid":[4]})", "func_name is 7, not a non-empty string"},
      {R"({"func_name":["nki_add"],"grid":[4]})", "func_name is [\"nki_add\"]"},
      {R"({"func_name":null})", "func_name is null"},
      {R"({"func_name":""})", "func_name is \"\""},
      {R"({"grid":[4]})", "has no func_name"},
      {R"({"func_name":"nki_add","grid":[4.0]})", "grid[0] is 4.0, not a positive integer"},
      {R"({"func_name":"nki_add","grid":[1e300]})", "grid[0] is 1e+300"},
      {R"({"func_name":"nki_add","grid":["4"]})", "grid[0] is \"4\""},
      {R"({"func_name":"nki_add","grid":[[4]]})", "grid[0] is [4]"},
      {R"({"func_name":"nki_add","grid":[4,0]})", "grid[1] is 0"},
      {R"({"func_name":"nki_add","grid":[-4]})", "grid[0] is -4"},
      {R"({"func_name":"nki_add","grid":[18446744073709551615]})", "grid[0] is 18446744073709551615"},
      {R"({"func_name":"nki_add","grid":4})", "grid is 4, not an array"},
      {R"({"func_name":"nki_add","grid":[4],"klir_binary":"x"})", "klir_binary is \"x\", not an object"},
      {R"({"func_name":"nki_add","grid":[4],"klir_binary":{"binary":1}})", "klir_binary.binary is 1"},
      {R"({"func_name":"nki_add","grid":[4],"klir_binary":{"input_names":[1]}})", "klir_binary.input_names[0] is 1"},
      {R"({"func_name":"nki_add","grid":[4],"klir_binary":{"output_names":"o"}})", "klir_binary.output_names is"},
  };
  for (const auto& [json, want] : cases) {
    const std::string text = R"(
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.custom_call @AwsNeuronCustomNativeKernel(%a, %b)
      {backend_config = ")" + Base64(json) +
                             R"("} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";
    neuronmem_executable_t* e = nullptr;
    const Result r = Take(Compile(text, &e));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << json << ": " << r.message;
    EXPECT_NE(r.message.find("test.mlir:3:3: AwsNeuronCustomNativeKernel backend_config"), std::string::npos)
        << json << ": " << r.message;
    EXPECT_NE(r.message.find(want), std::string::npos) << json << ": " << r.message;
  }
  EXPECT_EQ(seen.calls.load(), 0);
  // The same schema accepts a well-formed config.
  neuronmem_executable_t* e = nullptr;
  const std::string good = R"({"func_name":"nki_add","grid":[4],"klir_binary":{"binary":"b","input_names":["a","b"]}})";
  ASSERT_OK(Compile(std::string(kNki).replace(std::string(kNki).find("eyJ"), 48, Base64(good)), &e));
}

// A composite (jax.lax.composite) runs its decomposition until a kernel of its name is registered; an executable
// compiled after that runs the kernel instead, seeing the composite_attributes as its backend_config.
const char kComposite[] = R"(
func.func public @main(%a: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "result"}) {
  %0 = stablehlo.composite "my.scale2" %a {composite_attributes = {factor = 2 : i64}, decomposition = @my.scale2,
      version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @my.scale2(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  %1 = stablehlo.add %0, %a : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)";

TEST_F(KernelTest, ARegisteredKernelTakesOverACompositeOfItsName) {
  for (bool registered : {false, true}) {
    Seen seen;
    if (registered) RegisterKernel("my.scale2", Scale2, &seen);
    neuronmem_executable_t* e = nullptr;
    ASSERT_OK(Compile(kComposite, &e));
    neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    neuronmem_execution_t* x = nullptr;
    ASSERT_OK(Execute(e, {a}, &results, &done, &x));
    ASSERT_OK(neuronmem_event_wait(done, -1));
    // The decomposition triples; the kernel doubles.
    EXPECT_EQ(Read(results[0], 4), registered ? (std::vector<float>{2, 4, 6, 8}) : (std::vector<float>{3, 6, 9, 12}));
    EXPECT_EQ(seen.calls.load(), registered ? 1 : 0);
    if (registered) {
      EXPECT_EQ(seen.backend_config, "{factor = 2 : i64}");
    }
    neuronmem_event_destroy(done);
    neuronmem_execution_destroy(x);
  }
}

}  // namespace
}  // namespace neuronmem_test
