// Hostile arguments (issue 23): counts whose products wrap (class 8), strides whose extent overflows, and the
// donation of caller memory given as MUTABLE_ZERO_COPY (class 6). Each gets a clear status or the documented
// result, never a crash, an INTERNAL or a write outside the call's memory.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

class MisuseTest : public ExecTest {
 protected:
  void SetUp() override { ASSERT_OK(MakeClient(64u << 20, 2, &client_)); }
};

TEST_F(MisuseTest, ExecuteWithSizeMaxArgumentsIsInvalidArgument) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kIncrement, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  neuronmem_buffer_t* args[1] = {a};
  neuronmem_buffer_t* out[1] = {reinterpret_cast<neuronmem_buffer_t*>(1)};
  neuronmem_event_t* done = nullptr;
  neuronmem_execute_args_t x{};
  x.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
  x.executable = e;
  x.device = Device(0);
  x.arguments = args;
  for (size_t n : {SIZE_MAX, SIZE_MAX / 2 + 2, size_t{2}}) {
    x.num_arguments = n;
    const Result r = Take(neuronmem_executable_execute(&x, out, &done, nullptr));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << n << ": " << r.message;
    EXPECT_NE(r.message.find("the executable takes 1"), std::string::npos) << r.message;
    EXPECT_EQ(out[0], nullptr);
    EXPECT_EQ(done, nullptr);
  }
}

TEST_F(MisuseTest, LaunchWhoseArgumentCountTimesDevicesWrapsIsRefused) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileReplicas(kIncrement, "test.mlir", 2, &e));
  neuronmem_buffer_t* a0 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0));
  neuronmem_buffer_t* a1 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1));
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
  // (2^63 + 1) * 2 wraps to 2: before the fix the launch was submitted with one argument per device.
  for (size_t n : {(size_t{1} << 63) + 1, SIZE_MAX, size_t{0}}) {
    la.num_arguments = n;
    const Result r = Take(neuronmem_executable_execute_devices(&la, out, done, nullptr));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << n << ": " << r.message;
    EXPECT_NE(r.message.find("per device, the executable takes 1"), std::string::npos) << r.message;
    EXPECT_EQ(done[0], nullptr);
    EXPECT_EQ(out[1], nullptr);
  }
}

TEST_F(MisuseTest, LaunchWithMoreDevicesThanTheClientTouchesNoSlot) {
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileReplicas(kIncrement, "test.mlir", 2, &e));
  neuronmem_device_t* devs[2] = {Device(0), Device(1)};
  // One slot each: a launch that cleared num_devices slots before checking the count wrote past them.
  neuronmem_buffer_t* out[1] = {reinterpret_cast<neuronmem_buffer_t*>(1)};
  neuronmem_event_t* done[1] = {reinterpret_cast<neuronmem_event_t*>(1)};
  neuronmem_execution_t* xs[1] = {reinterpret_cast<neuronmem_execution_t*>(1)};
  neuronmem_execute_devices_args_t la{};
  la.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
  la.devices = devs;
  la.num_arguments = 1;
  for (neuronmem_executable_t* exe : {e, static_cast<neuronmem_executable_t*>(nullptr)}) {
    la.executable = exe;
    for (size_t n : {SIZE_MAX, size_t{1} << 62, size_t{65}, size_t{3}}) {
      if (exe == nullptr && n == 3) continue;  // 3 <= 64 devices: a NULL executable is reported as such
      la.num_devices = n;
      const Result r = Take(neuronmem_executable_execute_devices(&la, out, done, xs));
      EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << n << ": " << r.message;
      EXPECT_NE(r.message.find("num_devices"), std::string::npos) << r.message;
      EXPECT_EQ(out[0], reinterpret_cast<neuronmem_buffer_t*>(1));
      EXPECT_EQ(done[0], reinterpret_cast<neuronmem_event_t*>(1));
      EXPECT_EQ(xs[0], reinterpret_cast<neuronmem_execution_t*>(1));
    }
  }
}

TEST_F(MisuseTest, FromHostStridesWhoseExtentOverflowsAreInvalidArgument) {
  std::vector<float> host(64, 1.0f);
  neuronmem_buffer_from_host_args_t a{};
  a.struct_size = sizeof a;
  a.data = host.data();
  a.element_type = NEURONMEM_ELEMENT_TYPE_F32;
  a.memory = Memory(NEURONMEM_MEMORY_KIND_DEVICE);
  struct Case {
    std::vector<int64_t> dims, strides;
  };
  const std::vector<Case> cases = {
      {{2, 2}, {INT64_MAX, 4}},                        // (2-1) * (2^63-1) + 4 bytes
      {{3, 2}, {INT64_MAX / 2 + 1, 4}},                // 2 * 2^62 wraps int64
      {{1 << 20, 2}, {int64_t{1} << 44, 4}},           // 2^64
      {{2, 2}, {int64_t{1} << 62, int64_t{1} << 62}},  // each fits, the sum does not
  };
  for (const Case& c : cases) {
    a.dims = c.dims.data();
    a.num_dims = c.dims.size();
    a.byte_strides = c.strides.data();
    neuronmem_buffer_t* b = nullptr;
    neuronmem_event_t* ready = nullptr;
    const Result r = Take(neuronmem_buffer_from_host(client_, &a, &b, &ready, nullptr));
    EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << c.dims[0] << " x " << c.strides[0] << ": " << r.message;
    EXPECT_NE(r.message.find("byte_strides"), std::string::npos) << r.message;
    EXPECT_EQ(b, nullptr);
  }
  // Strides that fit still gather: every other element of 8.
  const std::vector<int64_t> dims = {4}, strides = {8};
  for (int i = 0; i < 8; ++i) host[i] = static_cast<float>(i);
  a.dims = dims.data();
  a.num_dims = 1;
  a.byte_strides = strides.data();
  neuronmem_buffer_t* b = nullptr;
  neuronmem_event_t* ready = nullptr;
  ASSERT_OK(neuronmem_buffer_from_host(client_, &a, &b, &ready, nullptr));
  buffers_.push_back(b);
  ASSERT_OK(neuronmem_event_wait(ready, -1));
  neuronmem_event_destroy(ready);
  EXPECT_EQ(Read(b, 4), (std::vector<float>{0, 2, 4, 6}));
}

// Class 6: a donated argument that aliases caller memory given as MUTABLE_ZERO_COPY. The result takes that
// memory, as donation promises: the execution writes its result into the caller's bytes (before the fix the
// argument was deleted and the execution failed with a bogus RESOURCE_EXHAUSTED).
TEST_F(MisuseTest, DonatedMutableZeroCopyArgumentBecomesTheResultInPlace) {
  for (neuronmem_memory_kind_t kind : {NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_UNPINNED_HOST}) {
    const std::string k = kind == NEURONMEM_MEMORY_KIND_PINNED_HOST ? "pinned_host" : "unpinned_host";
    const std::string text = "func.func @main(%a: tensor<4xf32> {mhlo.memory_kind = \"" + k +
                             "\", tf.aliasing_output = 0 : i32}) -> (tensor<4xf32> {mhlo.memory_kind = \"" + k +
                             "\"}) {\n  %one = stablehlo.constant dense<1.0> : tensor<4xf32>\n"
                             "  %0 = stablehlo.add %a, %one : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n";
    neuronmem_executable_t* e = nullptr;
    ASSERT_OK(Compile(text, &e));
    // pinned_host: zero-copy needs memory of the client's pinned-host arena; unpinned_host: any host memory.
    void* mem = nullptr;
    std::vector<float> heap(4);
    if (kind == NEURONMEM_MEMORY_KIND_PINNED_HOST) {
      ASSERT_OK(neuronmem_client_host_allocate(client_, 4 * sizeof(float), 0, &mem));
    } else {
      mem = heap.data();
    }
    float* caller = static_cast<float*>(mem);
    for (int i = 0; i < 4; ++i) caller[i] = static_cast<float>(i + 1);
    const int64_t dims[] = {4};
    neuronmem_buffer_from_host_args_t u{};
    u.struct_size = sizeof u;
    u.data = caller;
    u.element_type = NEURONMEM_ELEMENT_TYPE_F32;
    u.host_buffer_semantics = NEURONMEM_HOST_BUFFER_MUTABLE_ZERO_COPY;
    u.dims = dims;
    u.num_dims = 1;
    u.memory = Memory(kind);
    neuronmem_buffer_t* z = nullptr;
    neuronmem_event_t* ready = nullptr;
    neuronmem_event_t* done_with_host = nullptr;
    ASSERT_OK(neuronmem_buffer_from_host(client_, &u, &z, &ready, &done_with_host));
    buffers_.push_back(z);
    ASSERT_OK(neuronmem_event_wait(ready, -1));
    neuronmem_event_destroy(ready);
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    ASSERT_OK(Execute(e, {z}, &results, &done));
    const Result w = Take(neuronmem_event_wait(done, 10000000000));
    ASSERT_EQ(w.code, NEURONMEM_STATUS_OK) << k << ": " << w.message;
    neuronmem_status_t* err = nullptr;
    ASSERT_OK(neuronmem_event_error(done, &err));
    const Result run = Take(err);
    EXPECT_EQ(run.code, NEURONMEM_STATUS_OK) << k << ": " << run.message;
    neuronmem_event_destroy(done);
    bool deleted = false;
    EXPECT_OK(neuronmem_buffer_is_deleted(z, &deleted));
    EXPECT_TRUE(deleted) << k << ": a donated argument is deleted";
    EXPECT_EQ(Read(results[0], 4), (std::vector<float>{2, 3, 4, 5})) << k;
    // The result is the caller's memory: the execution wrote it there.
    EXPECT_EQ(std::vector<float>(caller, caller + 4), (std::vector<float>{2, 3, 4, 5})) << k;
    // The caller's memory is released (done_with_host) only once the result that now aliases it goes.
    bool released = true;
    ASSERT_OK(neuronmem_event_is_ready(done_with_host, &released));
    EXPECT_FALSE(released) << k;
    Drop(results);
    Drop({z});
    ASSERT_OK(neuronmem_event_wait(done_with_host, 10000000000));
    neuronmem_event_destroy(done_with_host);
    if (kind == NEURONMEM_MEMORY_KIND_PINNED_HOST) ASSERT_OK(neuronmem_client_host_free(client_, mem));
  }
}

// Class 10: after fragmentation, largest_free_block of each core's device memory is the largest request that
// succeeds now (one of it is allocated, 64 bytes more is RESOURCE_EXHAUSTED), on clients of 1 and 2 cores.
TEST_F(MisuseTest, LargestFreeBlockIsAllocatableAfterFragmentation) {
  for (uint32_t cores : {1u, 2u}) {
    neuronmem_client_t* c = nullptr;
    ASSERT_OK(MakeClient(4u << 20, cores, &c));
    for (uint32_t d = 0; d < cores; ++d) {
      neuronmem_memory_t* hbm = Memory(NEURONMEM_MEMORY_KIND_DEVICE, d, c);
      const auto allocate = [&](uint64_t bytes, neuronmem_buffer_t** out) {
        const int64_t dims[] = {static_cast<int64_t>(bytes)};
        neuronmem_buffer_allocate_args_t a{};
        a.struct_size = NEURONMEM_BUFFER_ALLOCATE_ARGS_STRUCT_SIZE;
        a.client = c;
        a.memory = hbm;
        a.element_type = NEURONMEM_ELEMENT_TYPE_U8;
        a.dims = dims;
        a.num_dims = 1;
        return Take(neuronmem_buffer_allocate(&a, out));
      };
      // Blocks of uneven sizes, every other one freed: free blocks that are not their size class's smallest.
      std::vector<neuronmem_buffer_t*> held;
      for (int i = 0; i < 40; ++i) {
        neuronmem_buffer_t* b = nullptr;
        const Result r = allocate(20000 + 4096 * static_cast<uint64_t>(i) + 1344 * (i % 7), &b);
        if (r.code != NEURONMEM_STATUS_OK) break;
        held.push_back(b);
      }
      ASSERT_GT(held.size(), 10u);
      for (size_t i = 0; i < held.size(); i += 2) {
        neuronmem_buffer_destroy(held[i]);
        held[i] = nullptr;
      }
      neuronmem_memory_stats_t st{};
      st.struct_size = NEURONMEM_MEMORY_STATS_STRUCT_SIZE;
      ASSERT_OK(neuronmem_memory_stats(hbm, &st));
      ASSERT_GT(st.largest_free_block, 0u);
      neuronmem_buffer_t* big = nullptr;
      Result r = allocate(st.largest_free_block + 64, &big);
      EXPECT_EQ(r.code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED)
          << cores << " cores, device " << d << ": " << st.largest_free_block << " + 64: " << r.message;
      if (big) neuronmem_buffer_destroy(big);
      big = nullptr;
      r = allocate(st.largest_free_block, &big);
      EXPECT_EQ(r.code, NEURONMEM_STATUS_OK)
          << cores << " cores, device " << d << ": largest_free_block " << st.largest_free_block << ": " << r.message;
      if (big) neuronmem_buffer_destroy(big);
      for (neuronmem_buffer_t* b : held)
        if (b) neuronmem_buffer_destroy(b);
    }
    EXPECT_OK(neuronmem_client_destroy(c));
  }
}

// Class 12: a launch names a device once ("device 1: device 1: result 0 ..." before).
TEST_F(MisuseTest, LaunchNamesTheFailingDeviceOnce) {
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(MakeClient(1u << 20, 2, &c));
  Swap(&c);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(CompileReplicas(kIncrement, "test.mlir", 2, &e));
  neuronmem_buffer_t* a0 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 0));
  neuronmem_buffer_t* a1 = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1));
  // Fill device 1's memory: its result cannot be allocated.
  std::vector<neuronmem_buffer_t*> fill;
  for (uint64_t bytes = 1u << 19; bytes >= 16;) {
    const int64_t dims[] = {static_cast<int64_t>(bytes)};
    neuronmem_buffer_allocate_args_t aa{};
    aa.struct_size = NEURONMEM_BUFFER_ALLOCATE_ARGS_STRUCT_SIZE;
    aa.client = client_;
    aa.memory = Memory(NEURONMEM_MEMORY_KIND_DEVICE, 1);
    aa.element_type = NEURONMEM_ELEMENT_TYPE_U8;
    aa.dims = dims;
    aa.num_dims = 1;
    neuronmem_buffer_t* b = nullptr;
    if (Take(neuronmem_buffer_allocate(&aa, &b)).code == NEURONMEM_STATUS_OK)
      fill.push_back(b);
    else
      bytes /= 2;
  }
  std::vector<std::vector<neuronmem_buffer_t*>> results;
  std::vector<neuronmem_event_t*> done;
  const Result r = Take(Launch(e, {0, 1}, {{a0}, {a1}}, &results, &done, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED) << r.message;
  EXPECT_EQ(r.message.rfind("device 1: result 0", 0), 0u) << r.message;
  EXPECT_EQ(r.message.find("device 1: device 1"), std::string::npos) << r.message;
  for (neuronmem_buffer_t* b : fill) neuronmem_buffer_destroy(b);
  DestroySwapped(&c);
}

}  // namespace
}  // namespace neuronmem_test
