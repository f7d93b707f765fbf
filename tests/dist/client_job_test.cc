// The job topology through the public C API: clients of a 2-process job bootstrap through the directory
// store's callbacks (forked processes, FI_PROVIDER=tcp), see global device ids, and address only their own
// devices.
#include <gtest/gtest.h>
#include <neuronmem/neuronmem.h>

#include <string>

#include "dist_test_util.h"
#include "job_test_util.h"
#include "provider_offered.h"
#include "shm_check.h"

namespace {

const auto* const kProviderOffered = ::testing::AddGlobalTestEnvironment(new neuronmem::dist::testing::ProviderOffered);

using neuronmem::dist::testing::Code;
using neuronmem::dist::testing::RunProcesses;
using neuronmem::dist::testing::TempDir;

// Options of process `index` of `n` with the directory store in `dir`; kv_user_data points into `dir`, which must
// outlive every use of the options.
neuronmem_client_options_t JobOptions(const std::string& dir, uint32_t index, uint32_t n) {
  neuronmem_client_options_t o = {};
  o.struct_size = NEURONMEM_CLIENT_OPTIONS_STRUCT_SIZE;
  o.num_cores = 2;
  o.device_bytes_per_core = 1 << 20;
  o.pinned_host_bytes = 32 << 20;
  o.mlock_mode = NEURONMEM_MLOCK_DISABLED;
  o.process_index = index;
  o.num_processes = n;
  o.kv_get = neuronmem_directory_store_get;
  o.kv_put = neuronmem_directory_store_put;
  o.kv_user_data = const_cast<char*>(dir.c_str());
  o.bootstrap_timeout_ns = 60ull * 1000 * 1000 * 1000;
  return o;
}

TEST(ClientJob, TwoProcessesSeeGlobalDeviceIdsAndAddressOnlyTheirOwn) {
  TempDir dir;
  auto codes = RunProcesses(2, [&](int i) {
    neuronmem_client_options_t o = JobOptions(dir.path(), i, 2);
    neuronmem_client_t* client = nullptr;
    CHILD_CHECK(Code(neuronmem_client_create(&o, &client)) == NEURONMEM_STATUS_OK, 1);
    uint32_t index = 9, n = 9;
    CHILD_CHECK(Code(neuronmem_client_process(client, &index, &n)) == NEURONMEM_STATUS_OK, 2);
    CHILD_CHECK(index == static_cast<uint32_t>(i) && n == 2, 3);
    neuronmem_device_t* const* devices = nullptr;
    size_t count = 0;
    CHILD_CHECK(Code(neuronmem_client_devices(client, &devices, &count)) == NEURONMEM_STATUS_OK && count == 2, 4);
    for (size_t l = 0; l < count; ++l) {
      neuronmem_device_description_t d = {};
      d.struct_size = NEURONMEM_DEVICE_DESCRIPTION_STRUCT_SIZE;
      CHILD_CHECK(Code(neuronmem_device_describe(devices[l], &d)) == NEURONMEM_STATUS_OK, 5);
      CHILD_CHECK(d.id == 2 * i + static_cast<int32_t>(l) && d.process_index == i && d.local_id == (int32_t)l, 6);
      const std::string want = "NeuronCore(id=" + std::to_string(d.id) + ", process_index=" + std::to_string(i) +
                               ", local_id=" + std::to_string(l) + ")";
      CHILD_CHECK(std::string(d.debug_string.data, d.debug_string.size) == want, 7);
      neuronmem_device_t* found = nullptr;
      CHILD_CHECK(Code(neuronmem_client_lookup_device(client, d.id, &found)) == NEURONMEM_STATUS_OK, 8);
      CHILD_CHECK(found == devices[l], 9);
    }
    // The other process's devices: described, not addressable.
    const int32_t other = 2 * (1 - i) + 1;
    neuronmem_device_description_t d = {};
    d.struct_size = NEURONMEM_DEVICE_DESCRIPTION_STRUCT_SIZE;
    CHILD_CHECK(Code(neuronmem_client_describe_device_id(client, other, &d)) == NEURONMEM_STATUS_OK, 10);
    CHILD_CHECK(d.id == other && d.process_index == 1 - i && d.local_id == 1, 11);
    const std::string want =
        "NeuronCore(id=" + std::to_string(other) + ", process_index=" + std::to_string(1 - i) + ", local_id=1)";
    CHILD_CHECK(std::string(d.debug_string.data, d.debug_string.size) == want, 12);
    neuronmem_device_t* found = nullptr;
    std::string message;
    CHILD_CHECK(Code(neuronmem_client_lookup_device(client, other, &found), &message) == NEURONMEM_STATUS_NOT_FOUND,
                13);
    CHILD_CHECK(found == nullptr && message.find("belongs to process " + std::to_string(1 - i)) != std::string::npos,
                14);
    CHILD_CHECK(Code(neuronmem_client_describe_device_id(client, 4, &d)) == NEURONMEM_STATUS_NOT_FOUND, 15);
    CHILD_CHECK(Code(neuronmem_client_describe_device_id(client, -1, &d)) == NEURONMEM_STATUS_NOT_FOUND, 16);
    CHILD_CHECK(Code(neuronmem_client_destroy(client)) == NEURONMEM_STATUS_OK, 17);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

TEST(ClientJob, BadJobOptions) {
  TempDir dir;
  auto codes = RunProcesses(1, [&](int) {
    neuronmem_client_t* client = nullptr;
    neuronmem_client_options_t o = JobOptions(dir.path(), 2, 2);  // index out of range
    CHILD_CHECK(Code(neuronmem_client_create(&o, &client)) == NEURONMEM_STATUS_INVALID_ARGUMENT && !client, 1);
    o = JobOptions(dir.path(), 0, 2);
    o.kv_put = nullptr;
    CHILD_CHECK(Code(neuronmem_client_create(&o, &client)) == NEURONMEM_STATUS_INVALID_ARGUMENT && !client, 2);
    o = JobOptions(dir.path(), 1, 1);  // one process, index 1
    CHILD_CHECK(Code(neuronmem_client_create(&o, &client)) == NEURONMEM_STATUS_INVALID_ARGUMENT && !client, 3);
    o = JobOptions(dir.path(), 0, 2);  // an older struct_size cannot ask for a job
    o.struct_size = offsetof(neuronmem_client_options_t, kv_get);
    CHILD_CHECK(Code(neuronmem_client_create(&o, &client)) == NEURONMEM_STATUS_INVALID_ARGUMENT && !client, 4);
    const std::string absent = dir.path() + "/absent";  // kv_user_data points into it: it outlives the call
    o = JobOptions(absent, 0, 2);                       // the store's directory does not exist
    CHILD_CHECK(Code(neuronmem_client_create(&o, &client)) == NEURONMEM_STATUS_INVALID_ARGUMENT && !client, 5);
    // Peer 1 never comes: the bootstrap times out naming it.
    o = JobOptions(dir.path(), 0, 2);
    o.bootstrap_timeout_ns = 1000ull * 1000 * 1000;
    std::string message;
    CHILD_CHECK(Code(neuronmem_client_create(&o, &client), &message) == NEURONMEM_STATUS_DEADLINE_EXCEEDED, 6);
    CHILD_CHECK(!client && message.find("process(es) 1") != std::string::npos, 7);
    // A client of one process is as before: process 0 of 1, device ids from 0.
    CHILD_CHECK(Code(neuronmem_client_create(nullptr, &client)) == NEURONMEM_STATUS_OK, 8);
    uint32_t index = 9, n = 9;
    CHILD_CHECK(Code(neuronmem_client_process(client, &index, &n)) == NEURONMEM_STATUS_OK && index == 0 && n == 1, 9);
    neuronmem_device_t* found = nullptr;
    CHILD_CHECK(Code(neuronmem_client_lookup_device(client, 1, &found)) == NEURONMEM_STATUS_OK && found, 10);
    CHILD_CHECK(Code(neuronmem_client_lookup_device(client, 2, &found)) == NEURONMEM_STATUS_NOT_FOUND, 11);
    CHILD_CHECK(Code(neuronmem_client_destroy(client)) == NEURONMEM_STATUS_OK, 12);
    // The directory store's callbacks on their own.
    char* value = nullptr;
    size_t size = 0;
    void* d = const_cast<char*>(dir.path().c_str());
    CHILD_CHECK(Code(neuronmem_directory_store_put(d, "k/1", 3, "abc", 3)) == NEURONMEM_STATUS_OK, 13);
    CHILD_CHECK(Code(neuronmem_directory_store_get(d, "k/1", 3, 0, &value, &size)) == NEURONMEM_STATUS_OK, 14);
    CHILD_CHECK(size == 3 && std::string(value, size) == "abc", 15);
    free(value);
    CHILD_CHECK(
        Code(neuronmem_directory_store_get(d, "k/2", 3, 1000000, &value, &size)) == NEURONMEM_STATUS_DEADLINE_EXCEEDED,
        16);
    CHILD_CHECK(value == nullptr && size == 0, 17);
    CHILD_CHECK(
        Code(neuronmem_directory_store_get(nullptr, "k", 1, 0, &value, &size)) == NEURONMEM_STATUS_INVALID_ARGUMENT,
        18);
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0}));
}

}  // namespace
