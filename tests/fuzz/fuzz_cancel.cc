// libFuzzer target for stopping executions (issue 23, class 5): a program that compiles through the C API runs on
// zero-filled arguments while it is cancelled (neuronmem_execution_cancel) at a random point, right after
// submission or from another thread after a delay, or stopped by a random deadline (timeout_ns), sometimes with
// a second execution queued behind it. Every execution must end (the client's default deadline bounds the
// ones nobody stops), its done event must carry OK, CANCELLED, DEADLINE_EXCEEDED or the program's own error
// status, and once every result and argument is gone the device memory must be back where it was: a stopped
// execution gives its workspace back. Anything else aborts.
//
// Input: byte 0 the mode (bits 0-1: 0 none, 1 cancel at once, 2 cancel from a thread after byte 1 x 20 us,
// 3 a deadline of 1 + byte 1^2 x 100 ns; bit 2: a second execution queued behind the first, cancelled too),
// byte 1 the delay, the rest StableHLO text (entry @main).
// A program's own failure (a check op, a bad index) may have any code but CANCELLED.
#include <neuronmem/neuronmem.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr uint64_t kMaxArgumentBytes = uint64_t{1} << 20;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_cancel: %s\n", what);
    std::abort();
  }
}

// The status's code (and frees it).
neuronmem_status_code_t Code(neuronmem_status_t* s) {
  if (!s) return NEURONMEM_STATUS_OK;
  const neuronmem_status_code_t c = neuronmem_status_code(s);
  neuronmem_status_free(s);
  return c;
}

neuronmem_client_t* Client() {
  static neuronmem_client_t* client = [] {
    neuronmem_client_options_t o{};
    o.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
    o.num_cores = 1;
    o.device_bytes_per_core = 16u << 20;
    o.pinned_host_bytes = 32u << 20;
    o.mlock_mode = NEURONMEM_MLOCK_DISABLED;
    o.execution_timeout_ns = 20ull * 1000 * 1000;  // nothing the input leaves running runs longer
    neuronmem_client_t* c = nullptr;
    Check(Code(neuronmem_client_create(&o, &c)) == NEURONMEM_STATUS_OK, "client_create failed");
    return c;
  }();
  return client;
}

neuronmem_device_t* Device() {
  neuronmem_device_t* const* devices = nullptr;
  size_t n = 0;
  Check(Code(neuronmem_client_devices(Client(), &devices, &n)) == NEURONMEM_STATUS_OK && n == 1, "devices");
  return devices[0];
}

// Bytes in use in the device's memories (device, pinned_host, unpinned_host).
uint64_t InUse() {
  uint64_t total = 0;
  for (neuronmem_memory_kind_t k :
       {NEURONMEM_MEMORY_KIND_DEVICE, NEURONMEM_MEMORY_KIND_PINNED_HOST, NEURONMEM_MEMORY_KIND_UNPINNED_HOST}) {
    neuronmem_memory_t* m = nullptr;
    Check(Code(neuronmem_device_memory_of_kind(Device(), k, &m)) == NEURONMEM_STATUS_OK, "memory_of_kind");
    neuronmem_memory_stats_t s{};
    s.struct_size = NEURONMEM_MEMORY_STATS_STRUCT_SIZE;
    Check(Code(neuronmem_memory_stats(m, &s)) == NEURONMEM_STATUS_OK, "memory_stats");
    total += s.bytes_in_use;
  }
  return total;
}

struct Submitted {
  std::vector<neuronmem_buffer_t*> results;
  neuronmem_event_t* done = nullptr;
  neuronmem_execution_t* execution = nullptr;
};

bool Submit(neuronmem_executable_t* e, const std::vector<neuronmem_buffer_t*>& args, size_t num_outputs,
            uint64_t timeout_ns, Submitted* out) {
  out->results.assign(num_outputs, nullptr);
  neuronmem_execute_args_t a{};
  a.struct_size = NEURONMEM_EXECUTE_ARGS_STRUCT_SIZE;
  a.executable = e;
  a.device = Device();
  a.arguments = args.data();
  a.num_arguments = args.size();
  a.timeout_ns = timeout_ns;
  return Code(neuronmem_executable_execute(&a, out->results.data(), &out->done, &out->execution)) ==
         NEURONMEM_STATUS_OK;
}

// Waits for the execution's end and drops it; its code must be one a stopped or failing execution has.
void Finish(Submitted* s, bool stopped) {
  const neuronmem_status_code_t c = Code(neuronmem_event_wait(s->done, -1));
  // Cancelling one that ended changes nothing.
  Check(Code(neuronmem_execution_cancel(s->execution)) == NEURONMEM_STATUS_OK, "cancel after the end");
  Check(c != NEURONMEM_STATUS_CANCELLED || stopped, "CANCELLED without a cancel");
  neuronmem_event_destroy(s->done);
  neuronmem_execution_destroy(s->execution);
  for (neuronmem_buffer_t* r : s->results) neuronmem_buffer_destroy(r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t mode = data[0] & 3, delay = data[1];
  const bool queue_second = data[0] & 4;
  const uint64_t before = InUse();
  neuronmem_compile_options_t o{};
  o.struct_size = NEURONMEM_COMPILE_OPTIONS_STRUCT_SIZE;
  o.filename = "fuzz.mlir";
  neuronmem_executable_t* e = nullptr;
  if (neuronmem_status_t* s =
          neuronmem_executable_compile_text(Client(), reinterpret_cast<const char*>(data + 2), size - 2, &o, &e)) {
    neuronmem_status_free(s);
    return 0;
  }
  neuronmem_executable_properties_t p{};
  p.struct_size = NEURONMEM_EXECUTABLE_PROPERTIES_STRUCT_SIZE;
  Check(Code(neuronmem_executable_properties(e, &p)) == NEURONMEM_STATUS_OK, "properties");
  std::vector<neuronmem_buffer_t*> args;
  uint64_t total = 0;
  bool ok = p.num_replicas * std::max<uint32_t>(p.num_partitions, 1) == 1;
  for (size_t i = 0; ok && i < p.num_parameters; ++i) {
    neuronmem_executable_value_t v{};
    v.struct_size = NEURONMEM_EXECUTABLE_VALUE_STRUCT_SIZE;
    neuronmem_memory_t* m = nullptr;
    ok = Code(neuronmem_executable_parameter(e, i, &v)) == NEURONMEM_STATUS_OK &&
         Code(neuronmem_executable_parameter_memory(e, Device(), i, &m)) == NEURONMEM_STATUS_OK;
    total += ok ? v.bytes : 0;
    if (!ok || total > kMaxArgumentBytes) {
      ok = false;
      break;
    }
    std::vector<uint8_t> zeros(v.bytes + 1);
    neuronmem_buffer_from_host_args_t a{};
    a.struct_size = NEURONMEM_BUFFER_FROM_HOST_ARGS_STRUCT_SIZE;
    a.data = zeros.data();
    a.element_type = v.element_type;
    a.dims = v.dims;
    a.num_dims = v.num_dims;
    a.memory = m;
    neuronmem_buffer_t* b = nullptr;
    neuronmem_event_t* ready = nullptr;
    ok = Code(neuronmem_buffer_from_host(Client(), &a, &b, &ready, nullptr)) == NEURONMEM_STATUS_OK;
    if (ready) {
      Code(neuronmem_event_wait(ready, -1));
      neuronmem_event_destroy(ready);
    }
    if (b) args.push_back(b);
  }
  if (ok && p.peak_device_bytes <= kMaxArgumentBytes) {
    // 0: the client's deadline (20 ms) bounds what nobody stops.
    const uint64_t timeout = mode == 3 ? 1 + uint64_t{delay} * delay * 100 : 0;
    Submitted first, second;
    if (Submit(e, args, p.num_outputs, timeout, &first)) {
      const bool has_second = queue_second && Submit(e, args, p.num_outputs, timeout, &second);
      std::thread canceller;
      if (mode == 1) {
        Check(Code(neuronmem_execution_cancel(first.execution)) == NEURONMEM_STATUS_OK, "cancel");
      } else if (mode == 2) {
        canceller = std::thread([&] {
          std::this_thread::sleep_for(std::chrono::microseconds(20 * delay));
          Check(Code(neuronmem_execution_cancel(first.execution)) == NEURONMEM_STATUS_OK, "cancel from a thread");
        });
      }
      if (has_second && (mode == 1 || mode == 2))
        Check(Code(neuronmem_execution_cancel(second.execution)) == NEURONMEM_STATUS_OK, "cancel the queued one");
      if (canceller.joinable()) canceller.join();
      Finish(&first, mode == 1 || mode == 2);
      if (has_second) Finish(&second, mode == 1 || mode == 2);
    }
  }
  for (neuronmem_buffer_t* b : args) neuronmem_buffer_destroy(b);
  neuronmem_executable_destroy(e);
  // Everything is gone: the device's memories are where they were (a stopped execution's workspace went back).
  uint64_t now = InUse();
  for (int i = 0; i < 1000 && now != before; ++i) {  // a released workspace may take a moment to return
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    now = InUse();
  }
  Check(now == before, "memory in use after every execution, result and argument is gone");
  return 0;
}
