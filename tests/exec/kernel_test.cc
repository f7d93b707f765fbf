// Custom kernels through the C API (issue 9, first part): a kernel called by its custom-call target, an NKI
// kernel (AwsNeuronCustomNativeKernel) found by its backend_config's func_name and run once per grid point in
// parallel, a pinned_host operand read in place, errors of a kernel, and unregistered kernels at compile.
#include <atomic>
#include <mutex>
#include <set>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

struct Seen {
  std::atomic<int> calls{0};
  std::mutex mu;
  std::set<int64_t> points;
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
  }
  if (p == 3 && seen->backend_config == "fail")
    return neuronmem_status_create(NEURONMEM_STATUS_DATA_LOSS, "the tile was corrupt", 20);
  const auto* a = static_cast<const float*>(call->inputs[0].data);
  const auto* b = static_cast<const float*>(call->inputs[1].data);
  auto* c = static_cast<float*>(call->outputs[0].data);
  for (int64_t i = 2 * p; i < 2 * p + 2; ++i) c[i] = a[i] + b[i];
  return nullptr;
}

class KernelTest : public ExecTest {
 protected:
  void Register(const char* name, neuronmem_kernel_fn_t fn, void* seen) {
    neuronmem_kernel_registration_t r{};
    r.struct_size = NEURONMEM_KERNEL_REGISTRATION_STRUCT_SIZE;
    r.name = name;
    r.fn = fn;
    r.user_data = seen;
    ASSERT_OK(neuronmem_client_register_kernel(client_, &r));
  }
};

const char kScale[] = R"(
func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my.scale2(%a) {backend_config = "opaque-config"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.add %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)";

const char kNki[] = R"(
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.custom_call @AwsNeuronCustomNativeKernel(%a, %b)
      {backend_config = "eyJmdW5jX25hbWUiOiJua2lfYWRkIiwiZ3JpZCI6WzRdfQ=="}
      : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";

TEST_F(KernelTest, KernelByTargetReadsPinnedHostInPlace) {
  Seen seen;
  Register("my.scale2", Scale2, &seen);
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
  Register("nki_add", NkiAdd, &seen);
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

TEST_F(KernelTest, AKernelErrorFailsTheExecution) {
  Seen seen;
  seen.backend_config = "fail";
  Register("nki_add", NkiAdd, &seen);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kNki, &e));
  neuronmem_memory_t* dev = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  neuronmem_buffer_t* a = Upload(std::vector<float>(8, 1.0f), {8}, dev);
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  ASSERT_OK(Execute(e, {a, a}, &results, &done));
  const Result r = Take(neuronmem_event_wait(done, -1));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_DATA_LOSS);
  EXPECT_NE(r.message.find("test.mlir:3:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("kernel 'nki_add' at grid point [3]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("the tile was corrupt"), std::string::npos) << r.message;
  neuronmem_event_destroy(done);
  // The client stays usable.
  EXPECT_EQ(Read(a, 8), std::vector<float>(8, 1.0f));
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
  Register("my.scale2", CallsBack, &r);
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
    neuronmem_kernel_registration_t r{};
    r.struct_size = NEURONMEM_KERNEL_REGISTRATION_STRUCT_SIZE;
    r.name = name;
    r.fn = Scale2;
    r.user_data = &seen;
    const Result res = Take(neuronmem_client_register_kernel(client_, &r));
    EXPECT_EQ(res.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << name;
    EXPECT_NE(res.message.find(std::string("'") + name + "'"), std::string::npos) << res.message;
  }
  // Names that only look like them are ordinary targets.
  Register("MoveToHostTiled", Scale2, &seen);
  Register("checkpoint.save", Scale2, &seen);
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

}  // namespace
}  // namespace neuronmem_test
