// Callbacks failing (issue 23): every caller's function the library calls that returns a status (a kernel, a
// send or recv callback of a launch, the job's kv_get and kv_put) fails through the test-only fault site
// fault::Site::kCallback after it ran, and on its own. Each failure gives the status its header documents, on
// the right event, with nothing left allocated, and the library stays usable. Links the internal libraries (the
// fault switch is hidden in libneuronmem.so).
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/fault.h"
#include "exec/exec_test_util.h"

namespace neuronmem_test {
namespace {

using neuronmem::fault::Site;

// out = 2 * in, for one f32 operand; counts its calls.
neuronmem_status_t* Double(const neuronmem_kernel_call_t* call, void* user_data) {
  ++*static_cast<int*>(user_data);
  const auto* in = static_cast<const float*>(call->inputs[0].data);
  auto* out = static_cast<float*>(call->outputs[0].data);
  for (int64_t i = 0; i < call->inputs[0].dims[0]; ++i) out[i] = 2 * in[i];
  return nullptr;
}

// c[2p .. 2p+2) = a + b at grid point p of [4].
neuronmem_status_t* GridAdd(const neuronmem_kernel_call_t* call, void* user_data) {
  ++*static_cast<int*>(user_data);
  const int64_t p = call->grid_index[0];
  const auto* a = static_cast<const float*>(call->inputs[0].data);
  const auto* b = static_cast<const float*>(call->inputs[1].data);
  auto* c = static_cast<float*>(call->outputs[0].data);
  for (int64_t i = 2 * p; i < 2 * p + 2; ++i) c[i] = a[i] + b[i];
  return nullptr;
}

const char kDouble[] = R"(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my.double(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

neuronmem_status_t* SendOk(const neuronmem_host_transfer_t*, void*) { return nullptr; }
neuronmem_status_t* RecvOnes(const neuronmem_host_transfer_t* t, void*) {
  auto* p = static_cast<float*>(t->tensors[0].data);
  p[0] = p[1] = 1.0f;
  return nullptr;
}

class CallbackFaultTest : public ExecTest {
 protected:
  void TearDown() override {
    neuronmem::fault::DisarmAll();
    ExecTest::TearDown();
  }
  // Runs `e` on `args`; returns its done event's result, and its first result's values (n floats) when it
  // succeeded. The results are dropped.
  Result Run(neuronmem_executable_t* e, const std::vector<neuronmem_buffer_t*>& args, size_t n,
             std::vector<float>* values) {
    std::vector<neuronmem_buffer_t*> results;
    neuronmem_event_t* done = nullptr;
    EXPECT_OK(Execute(e, args, &results, &done));
    const Result r = Take(neuronmem_event_wait(done, -1));
    neuronmem_event_destroy(done);
    if (r.code == NEURONMEM_STATUS_OK) {
      *values = Read(results[0], n);
    } else {
      // The failed result carries the error instead of content.
      std::vector<float> out(n);
      neuronmem_buffer_read_args_t ra{};
      ra.struct_size = sizeof ra;
      ra.buffer = results[0];
      ra.size = n * sizeof(float);
      ra.dst = out.data();
      EXPECT_EQ(Take(neuronmem_buffer_read(&ra, nullptr)).code, r.code);
    }
    Drop(results);
    return r;
  }
};

TEST_F(CallbackFaultTest, AKernelThatFailsFailsItsExecutionAndNothingStays) {
  int calls = 0;
  RegisterKernel("my.double", Double, &calls);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kDouble, &e));
  neuronmem_buffer_t* a = Upload({1, 2, 3, 4}, {4}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  const auto held = Held(1);
  std::vector<float> values;
  neuronmem::fault::Arm(Site::kCallback, 1);
  const Result r = Run(e, {a}, 4, &values);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_ABORTED) << r.message;
  EXPECT_NE(r.message.find("test.mlir:3:"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("kernel 'my.double'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("injected fault: the kernel failed"), std::string::npos) << r.message;
  EXPECT_EQ(calls, 1);  // it ran, then failed
  EXPECT_EQ(neuronmem::fault::Hits(Site::kCallback), 1u);
  EXPECT_EQ(Held(1), held);  // the workspace and the failed result went back
  // The argument is intact and the next execution runs.
  EXPECT_EQ(Read(a, 4), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_EQ(Run(e, {a}, 4, &values).code, NEURONMEM_STATUS_OK);
  EXPECT_EQ(values, (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(CallbackFaultTest, AGridPointThatFailsFailsTheLaunchOfItsKernel) {
  int calls = 0;
  RegisterKernel("nki_add", GridAdd, &calls);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kNkiAdd, &e));
  neuronmem_buffer_t* a = Upload(std::vector<float>(8, 1.0f), {8}, Memory(NEURONMEM_MEMORY_KIND_DEVICE));
  const auto held = Held(1);
  std::vector<float> values;
  for (uint64_t nth = 1; nth <= 4; ++nth) {  // each of the four grid points in turn
    calls = 0;
    neuronmem::fault::Arm(Site::kCallback, nth);
    const Result r = Run(e, {a, a}, 8, &values);
    EXPECT_EQ(r.code, NEURONMEM_STATUS_ABORTED) << nth << ": " << r.message;
    EXPECT_NE(r.message.find("kernel 'nki_add' at grid point ["), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("injected fault: the kernel failed"), std::string::npos) << r.message;
    EXPECT_GE(calls, static_cast<int>(nth));
    EXPECT_EQ(Held(1), held) << nth;
  }
  neuronmem::fault::DisarmAll();
  ASSERT_EQ(Run(e, {a, a}, 8, &values).code, NEURONMEM_STATUS_OK);
  EXPECT_EQ(values, std::vector<float>(8, 2.0f));
}

TEST_F(CallbackFaultTest, ASendOrRecvCallbackThatFailsFailsItsDeviceOnly) {
  neuronmem_client_t* two = nullptr;
  ASSERT_OK(MakeClient(16u << 20, 2, &two));
  Swap(&two);
  neuronmem_executable_t* e = nullptr;
  ASSERT_OK(Compile(kHostRoundTrip, &e));
  std::vector<std::vector<neuronmem_buffer_t*>> args;
  for (size_t d = 0; d < 2; ++d) args.push_back({Upload({1, 2}, {2}, Memory(NEURONMEM_MEMORY_KIND_DEVICE, d))});
  const auto held = Held(2);
  const neuronmem_host_callback_t sends[] = {{5, SendOk, nullptr}};
  const neuronmem_host_callback_t recvs[] = {{6, RecvOnes, nullptr}};
  // The launch makes four callback calls (a send and a recv per device): fail each in turn.
  for (uint64_t nth = 1; nth <= 5; ++nth) {
    neuronmem::fault::Arm(Site::kCallback, nth);
    std::vector<neuronmem_device_t*> devs = {Device(0), Device(1)};
    std::vector<neuronmem_buffer_t*> flat = {args[0][0], args[1][0]};
    neuronmem_buffer_t* out[2] = {nullptr, nullptr};
    neuronmem_event_t* done[2] = {nullptr, nullptr};
    neuronmem_execute_devices_args_t a{};
    a.struct_size = NEURONMEM_EXECUTE_DEVICES_ARGS_STRUCT_SIZE;
    a.executable = e;
    a.devices = devs.data();
    a.num_devices = 2;
    a.arguments = flat.data();
    a.num_arguments = 1;
    a.send_callbacks = sends;
    a.num_send_callbacks = 1;
    a.recv_callbacks = recvs;
    a.num_recv_callbacks = 1;
    ASSERT_OK(neuronmem_executable_execute_devices(&a, out, done, nullptr));
    int failed = 0;
    for (size_t d = 0; d < 2; ++d) {
      const Result r = Take(neuronmem_event_wait(done[d], -1));
      neuronmem_event_destroy(done[d]);
      if (r.code == NEURONMEM_STATUS_OK) {
        EXPECT_EQ(Read(out[d], 2), (std::vector<float>{2, 3})) << nth;
      } else {
        ++failed;
        EXPECT_EQ(r.code, NEURONMEM_STATUS_ABORTED) << r.message;
        EXPECT_NE(r.message.find("callback of channel "), std::string::npos) << r.message;
        EXPECT_NE(r.message.find("injected fault: the host-transfer callback failed"), std::string::npos) << r.message;
      }
      neuronmem_buffer_destroy(out[d]);
    }
    // The fifth arming is never reached: four calls, none fails.
    EXPECT_EQ(failed, nth <= 4 ? 1 : 0) << nth;
    EXPECT_EQ(Held(2), held) << nth;
  }
  DestroySwapped(&two);
}

// An in-memory store of the job's keys; `fail_get` / `fail_put` make the callbacks fail on their own.
struct Store {
  std::mutex mu;
  std::map<std::string, std::string> keys;
  neuronmem_status_code_t fail_get = NEURONMEM_STATUS_OK;
  bool get_value_on_failure = false;  // a failing get that also hands over a value (the library frees it)
  bool get_null_value = false;        // a get that succeeds with a size but no value
  neuronmem_status_code_t fail_put = NEURONMEM_STATUS_OK;
};

neuronmem_status_t* StoreGet(void* user, const char* key, size_t key_size, uint64_t, char** value, size_t* size) {
  auto* s = static_cast<Store*>(user);
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->get_null_value) {
    *size = 5;
    return nullptr;
  }
  const auto it = s->keys.find(std::string(key, key_size));
  if (s->fail_get != NEURONMEM_STATUS_OK || it == s->keys.end()) {
    if (s->get_value_on_failure) *value = strdup("left behind");
    return neuronmem_status_create(s->fail_get != NEURONMEM_STATUS_OK ? s->fail_get : NEURONMEM_STATUS_NOT_FOUND,
                                   "the store says no", 17);
  }
  *value = static_cast<char*>(malloc(it->second.size() + 1));
  memcpy(*value, it->second.data(), it->second.size());
  *size = it->second.size();
  return nullptr;
}

neuronmem_status_t* StorePut(void* user, const char* key, size_t key_size, const char* value, size_t size) {
  auto* s = static_cast<Store*>(user);
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->fail_put != NEURONMEM_STATUS_OK) return neuronmem_status_create(s->fail_put, "the store is read-only", 22);
  s->keys[std::string(key, key_size)] = std::string(value, size);
  return nullptr;
}

// Creates process `index` of a job of 2 whose peer never comes (the store answers at once).
Result CreateJobClient(Store* store, uint32_t index) {
  neuronmem_client_options_t o{};
  o.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  o.num_cores = 1;
  o.device_bytes_per_core = 1 << 20;
  o.pinned_host_bytes = 32 << 20;
  o.mlock_mode = NEURONMEM_MLOCK_DISABLED;
  o.process_index = index;
  o.num_processes = 2;
  o.kv_get = StoreGet;
  o.kv_put = StorePut;
  o.kv_user_data = store;
  o.bootstrap_timeout_ns = 200ull * 1000 * 1000;
  neuronmem_client_t* client = nullptr;
  const Result r = Take(neuronmem_client_create(&o, &client));
  EXPECT_EQ(client, nullptr);  // never a client: the peer never comes
  if (client) neuronmem_client_destroy(client);
  return r;
}

TEST(KvCallbackFaultTest, AFailingKvPutOrGetFailsClientCreateWithItsStatus) {
  // Process 0 puts the job token (hit 1) and its endpoint (hit 2), then gets process 1's endpoint (hit 3).
  struct Case {
    uint64_t nth;
    const char* message;
  };
  for (const Case c : {Case{1,
                            "bootstrap: publishing the job token: kv_put('neuronmem/token'): injected fault: "
                            "kv_put failed"},
                       Case{2, "bootstrap: publishing the endpoint: kv_put('neuronmem/ep/0'): injected fault"},
                       Case{3,
                            "bootstrap: reading process 1's endpoint: kv_get('neuronmem/ep/1'): injected fault: "
                            "kv_get failed"}}) {
    Store store;
    store.keys["neuronmem/ep/1"] = "v1 not an endpoint";  // a value the failed get hands over: freed
    neuronmem::fault::Arm(Site::kCallback, c.nth);
    const Result r = CreateJobClient(&store, 0);
    EXPECT_EQ(r.code, NEURONMEM_STATUS_ABORTED) << r.message;
    EXPECT_NE(r.message.find(c.message), std::string::npos) << r.message;
    EXPECT_EQ(neuronmem::fault::Hits(Site::kCallback), c.nth);
    neuronmem::fault::DisarmAll();
  }
  // Process 1 first gets the job token: a fault there.
  Store store;
  store.keys["neuronmem/token"] = std::string(32, 'a');  // 16 bytes in hex
  neuronmem::fault::Arm(Site::kCallback, 1);
  Result r = CreateJobClient(&store, 1);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_ABORTED) << r.message;
  EXPECT_NE(r.message.find("bootstrap: reading the job token: kv_get('neuronmem/token')"), std::string::npos)
      << r.message;
  neuronmem::fault::DisarmAll();

  // The callbacks failing on their own: their code, the call and key named.
  Store put_fails;
  put_fails.fail_put = NEURONMEM_STATUS_PERMISSION_DENIED;
  r = CreateJobClient(&put_fails, 0);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_PERMISSION_DENIED) << r.message;
  EXPECT_NE(r.message.find("kv_put('neuronmem/token'): the store is read-only"), std::string::npos) << r.message;
  Store get_fails;
  get_fails.fail_get = NEURONMEM_STATUS_UNAVAILABLE;
  get_fails.get_value_on_failure = true;  // freed by the library
  r = CreateJobClient(&get_fails, 0);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_UNAVAILABLE) << r.message;
  EXPECT_NE(r.message.find("kv_get('neuronmem/ep/1'): the store says no"), std::string::npos) << r.message;
  Store absent;  // NOT_FOUND until the deadline: DEADLINE_EXCEEDED naming the missing process
  absent.get_value_on_failure = true;
  r = CreateJobClient(&absent, 0);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_DEADLINE_EXCEEDED) << r.message;
  EXPECT_NE(r.message.find("process(es) 1"), std::string::npos) << r.message;
  Store null_value;
  null_value.get_null_value = true;
  r = CreateJobClient(&null_value, 0);
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT) << r.message;
  EXPECT_NE(r.message.find("succeeded without a value"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace neuronmem_test
