// Helpers for the executor's tests (public C API): a client, uploads, reads, compile and one execution.
#pragma once

#include <neuronmem/neuronmem.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/status_helpers.h"

namespace neuronmem_test {

// a + 1 on f32[4]: the smallest executable the queue and launch tests run.
inline constexpr char kIncrement[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %0 = stablehlo.add %a, %one : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

// An NKI kernel call (AwsNeuronCustomNativeKernel) of func_name "nki_add" on a grid of [4] (the backend_config is
// base64 of {"func_name":"nki_add","grid":[4]}): c = a + b on f32[8].
inline constexpr char kNkiAdd[] = R"(
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.custom_call @AwsNeuronCustomNativeKernel(%a, %b)
      {backend_config = "eyJmdW5jX25hbWUiOiJua2lfYWRkIiwiZ3JpZCI6WzRdfQ=="}
      : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";

// Sends its operand to the host on channel 5, receives a value from the host on channel 6, adds them.
inline constexpr char kHostRoundTrip[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.after_all : !stablehlo.token
  %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>,
      is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 6, type = 3>,
      is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %y = stablehlo.add %x, %r#0 : tensor<2xf32>
  return %y : tensor<2xf32>
}
)";

class ExecTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(MakeClient(64u << 20, 1, &client_)); }
  void TearDown() override {
    DropAll();
    if (client_) EXPECT_OK(neuronmem_client_destroy(client_));
  }
  // Destroys the executables and buffers the fixture holds (its client's).
  void DropAll() {
    for (neuronmem_executable_t* e : executables_) neuronmem_executable_destroy(e);
    executables_.clear();
    for (neuronmem_buffer_t* b : buffers_) neuronmem_buffer_destroy(b);
    buffers_.clear();
  }
  // A test on a client of its own: `c` becomes the fixture's client (the helpers use it) until
  // DestroySwapped(c) drops what the fixture made with it, destroys it and gives the fixture its own back.
  void Swap(neuronmem_client_t** c) { std::swap(*c, client_); }
  void DestroySwapped(neuronmem_client_t** c) {
    DropAll();
    std::swap(*c, client_);
    EXPECT_OK(neuronmem_client_destroy(*c));
  }

  static neuronmem_status_t* MakeClient(uint64_t device_bytes, uint32_t cores, neuronmem_client_t** out) {
    neuronmem_client_options_t o{};
    o.struct_size = sizeof o;
    o.num_cores = cores;
    o.device_bytes_per_core = device_bytes;
    o.pinned_host_bytes = 32u << 20;
    return neuronmem_client_create(&o, out);
  }

  neuronmem_device_t* Device(size_t i = 0, neuronmem_client_t* client = nullptr) {
    neuronmem_device_t* const* devices = nullptr;
    size_t n = 0;
    EXPECT_OK(neuronmem_client_devices(client ? client : client_, &devices, &n));
    return i < n ? devices[i] : nullptr;
  }
  neuronmem_memory_t* Memory(neuronmem_memory_kind_t kind, size_t device = 0, neuronmem_client_t* client = nullptr) {
    neuronmem_memory_t* m = nullptr;
    EXPECT_OK(neuronmem_device_memory_of_kind(Device(device, client), kind, &m));
    return m;
  }
  static neuronmem_memory_kind_t KindOf(neuronmem_buffer_t* b) {
    neuronmem_memory_t* m = nullptr;
    neuronmem_memory_kind_t k = NEURONMEM_MEMORY_KIND_FORCE_32;
    EXPECT_OK(neuronmem_buffer_memory(b, &m));
    EXPECT_OK(neuronmem_memory_kind(m, &k));
    return k;
  }

  // Registers kernel `fn` as custom-call target `name` of the fixture's client, with `user_data`; returns the
  // status (owned by the caller): RegisterKernel for a registration that must succeed, this for one that may not.
  neuronmem_status_t* TryRegisterKernel(const char* name, neuronmem_kernel_fn_t fn, void* user_data) {
    neuronmem_kernel_registration_t r{};
    r.struct_size = NEURONMEM_KERNEL_REGISTRATION_STRUCT_SIZE;
    r.name = name;
    r.fn = fn;
    r.user_data = user_data;
    return neuronmem_client_register_kernel(client_, &r);
  }
  void RegisterKernel(const char* name, neuronmem_kernel_fn_t fn, void* user_data) {
    ASSERT_OK(TryRegisterKernel(name, fn, user_data));
  }

  // Compiles `text`; the fixture destroys the executable. Returns the status (owned by the caller).
  neuronmem_status_t* Compile(const std::string& text, neuronmem_executable_t** out,
                              neuronmem_argument_placement_t placement = NEURONMEM_ARGUMENT_PLACEMENT_STRICT,
                              neuronmem_client_t* client = nullptr) {
    neuronmem_compile_options_t o{};
    o.struct_size = sizeof o;
    o.filename = "test.mlir";
    o.argument_placement = placement;
    neuronmem_status_t* s =
        neuronmem_executable_compile_text(client ? client : client_, text.data(), text.size(), &o, out);
    if (!s) executables_.push_back(*out);
    return s;
  }

  // Compiles `text` as `filename` for `replicas` replicas (one per core of a launch); the fixture destroys it.
  neuronmem_status_t* CompileReplicas(const std::string& text, const char* filename, uint32_t replicas,
                                      neuronmem_executable_t** out) {
    neuronmem_compile_options_t o{};
    o.struct_size = sizeof o;
    o.filename = filename;
    o.num_replicas = replicas;
    neuronmem_status_t* s = neuronmem_executable_compile_text(client_, text.data(), text.size(), &o, out);
    if (!s) executables_.push_back(*out);
    return s;
  }

  neuronmem_buffer_t* Upload(const std::vector<float>& data, std::vector<int64_t> dims, neuronmem_memory_t* memory,
                             neuronmem_client_t* client = nullptr) {
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = sizeof a;
    a.data = data.data();
    a.element_type = NEURONMEM_ELEMENT_TYPE_F32;
    a.dims = dims.data();
    a.num_dims = dims.size();
    a.memory = memory;
    neuronmem_buffer_t* b = nullptr;
    neuronmem_event_t* ready = nullptr;
    EXPECT_OK(neuronmem_buffer_from_host(client ? client : client_, &a, &b, &ready, nullptr));
    if (ready) {
      EXPECT_OK(neuronmem_event_wait(ready, -1));
      neuronmem_event_destroy(ready);
    }
    if (b) buffers_.push_back(b);
    return b;
  }

  static std::vector<float> Read(neuronmem_buffer_t* b, size_t n) {
    std::vector<float> out(n);
    neuronmem_buffer_read_args_t a{};
    a.struct_size = sizeof a;
    a.buffer = b;
    a.size = n * sizeof(float);
    a.dst = out.data();
    EXPECT_OK(neuronmem_buffer_read(&a, nullptr));
    return out;
  }

  // Submits one execution (keeping the arguments `non_donatable` names); results go to the fixture's buffers. Returns
  // the status (owned by the caller).
  neuronmem_status_t* Execute(neuronmem_executable_t* e, std::vector<neuronmem_buffer_t*> args,
                              std::vector<neuronmem_buffer_t*>* results, neuronmem_event_t** done,
                              neuronmem_execution_t** execution = nullptr, std::vector<neuronmem_event_t*> waits = {},
                              size_t device = 0, std::vector<size_t> non_donatable = {}) {
    neuronmem_executable_properties_t p{};
    p.struct_size = sizeof p;
    EXPECT_OK(neuronmem_executable_properties(e, &p));
    results->assign(p.num_outputs, nullptr);
    neuronmem_execute_args_t a{};
    a.struct_size = sizeof a;
    a.executable = e;
    a.device = Device(device);
    a.arguments = args.data();
    a.num_arguments = args.size();
    a.wait.events = waits.data();
    a.wait.num_events = waits.size();
    a.non_donatable = non_donatable.data();
    a.num_non_donatable = non_donatable.size();
    neuronmem_status_t* s = neuronmem_executable_execute(&a, results->data(), done, execution);
    if (!s)
      for (neuronmem_buffer_t* r : *results) buffers_.push_back(r);
    return s;
  }

  // One launch (neuronmem_executable_execute_devices) of `e` on `devices` (indices) with args[d] for device d;
  // fills results[d], done[d], executions[d] (nullable); the fixture destroys the result buffers.
  neuronmem_status_t* Launch(neuronmem_executable_t* e, const std::vector<size_t>& devices,
                             const std::vector<std::vector<neuronmem_buffer_t*>>& args,
                             std::vector<std::vector<neuronmem_buffer_t*>>* results,
                             std::vector<neuronmem_event_t*>* done, std::vector<neuronmem_execution_t*>* executions,
                             const std::vector<neuronmem_event_list_t>& waits = {},
                             std::vector<size_t> non_donatable = {}) {
    neuronmem_executable_properties_t p{};
    p.struct_size = sizeof p;
    EXPECT_OK(neuronmem_executable_properties(e, &p));
    std::vector<neuronmem_device_t*> devs;
    for (size_t d : devices) devs.push_back(Device(d));
    std::vector<neuronmem_buffer_t*> flat;
    for (const auto& a : args) flat.insert(flat.end(), a.begin(), a.end());
    const size_t n = devs.size();
    // At least one slot each: no devices must still reach the library's own check.
    std::vector<neuronmem_buffer_t*> out(std::max<size_t>(n * p.num_outputs, 1),
                                         reinterpret_cast<neuronmem_buffer_t*>(1));
    done->assign(std::max<size_t>(n, 1), reinterpret_cast<neuronmem_event_t*>(1));
    if (executions) executions->assign(std::max<size_t>(n, 1), reinterpret_cast<neuronmem_execution_t*>(1));
    neuronmem_execute_devices_args_t a{};
    a.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
    a.executable = e;
    a.devices = devs.data();
    a.num_devices = n;
    a.arguments = flat.data();
    a.num_arguments = args.empty() ? 0 : args[0].size();
    a.waits = waits.empty() ? nullptr : waits.data();
    a.non_donatable = non_donatable.data();
    a.num_non_donatable = non_donatable.size();
    neuronmem_status_t* s =
        neuronmem_executable_execute_devices(&a, out.data(), done->data(), executions ? executions->data() : nullptr);
    done->resize(n);
    if (executions) executions->resize(n);
    results->assign(n, {});
    for (size_t d = 0; d < n; ++d) {
      for (size_t k = 0; k < p.num_outputs; ++k) {
        neuronmem_buffer_t* r = out[d * p.num_outputs + k];
        (*results)[d].push_back(r);
        if (r) buffers_.push_back(r);
      }
    }
    return s;
  }

  static neuronmem_execution_stats_t Stats(neuronmem_execution_t* x) {
    neuronmem_execution_stats_t st{};
    st.struct_size = sizeof st;
    EXPECT_OK(neuronmem_execution_stats(x, &st));
    return st;
  }
  static neuronmem_transfer_counts_t Pair(neuronmem_execution_t* x, neuronmem_memory_kind_t from,
                                          neuronmem_memory_kind_t to) {
    neuronmem_transfer_counts_t c{};
    c.struct_size = sizeof c;
    EXPECT_OK(neuronmem_execution_transfers(x, from, to, &c));
    return c;
  }

  // What the client's memories hold (bytes in use and live allocations of each core's device memory, then
  // pinned_host and unpinned_host): equal before a failed execution and after its results are dropped when
  // it left nothing behind.
  std::vector<std::pair<uint64_t, uint64_t>> Held(size_t num_cores) {
    std::vector<neuronmem_memory_t*> memories;
    for (size_t d = 0; d < num_cores; ++d) memories.push_back(Memory(NEURONMEM_MEMORY_KIND_DEVICE, d));
    memories.push_back(Memory(NEURONMEM_MEMORY_KIND_PINNED_HOST));
    memories.push_back(Memory(NEURONMEM_MEMORY_KIND_UNPINNED_HOST));
    std::vector<std::pair<uint64_t, uint64_t>> held;
    for (neuronmem_memory_t* m : memories) {
      neuronmem_memory_stats_t s{};
      s.struct_size = NEURONMEM_MEMORY_STATS_STRUCT_SIZE;
      EXPECT_OK(neuronmem_memory_stats(m, &s));
      held.push_back({s.bytes_in_use, s.live_allocations});
    }
    return held;
  }
  // Destroys buffers the fixture holds (results the test is done with; Drop(buffers_): all of them).
  void Drop(std::vector<neuronmem_buffer_t*> buffers) {
    for (neuronmem_buffer_t* b : buffers) {
      auto it = std::find(buffers_.begin(), buffers_.end(), b);
      if (it == buffers_.end()) continue;
      buffers_.erase(it);
      neuronmem_buffer_destroy(b);
    }
  }

  neuronmem_client_t* client_ = nullptr;
  std::vector<neuronmem_executable_t*> executables_;
  std::vector<neuronmem_buffer_t*> buffers_;
};

}  // namespace neuronmem_test
