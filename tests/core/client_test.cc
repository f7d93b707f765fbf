// The client, its devices and memories through the public C API: defaults, option validation, the
// PJRT-style listing, stable memory ids, statistics, the pinned-host allocator, and bad input.
#include <neuronmem/neuronmem.h>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "common/status_helpers.h"

#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// Takes ownership of a status; returns its code and stores its message.
using neuronmem_test::Result;
using neuronmem_test::Take;

std::string Str(neuronmem_string_t s) { return std::string(s.data, s.size); }

neuronmem_client_options_t SmallOptions(uint32_t cores = 2) {
  neuronmem_client_options_t o{};
  o.struct_size = sizeof o;
  o.num_cores = cores;
  o.device_bytes_per_core = 4ull << 20;
  o.pinned_host_bytes = 32ull << 20;
  return o;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto o = SmallOptions();
    ASSERT_OK(neuronmem_client_create(&o, &client_));
  }
  void TearDown() override { EXPECT_OK(neuronmem_client_destroy(client_)); }
  neuronmem_client_t* client_ = nullptr;
};

TEST(Version, MatchesHeader) {
  EXPECT_EQ(neuronmem_version(), static_cast<uint32_t>(NEURONMEM_VERSION_NUMBER));
  std::string expected = std::to_string(NEURONMEM_VERSION_MAJOR) + "." + std::to_string(NEURONMEM_VERSION_MINOR) + "." +
                         std::to_string(NEURONMEM_VERSION_PATCH);
  EXPECT_EQ(expected, neuronmem_version_string());
}

TEST(Status, NullIsOkAndCodesHaveNames) {
  EXPECT_EQ(neuronmem_status_code(nullptr), NEURONMEM_STATUS_OK);
  EXPECT_EQ(neuronmem_status_message(nullptr).size, 0u);
  neuronmem_status_free(nullptr);
  EXPECT_STREQ(neuronmem_status_code_name(NEURONMEM_STATUS_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_STREQ(neuronmem_status_code_name(NEURONMEM_STATUS_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(neuronmem_status_code_name(NEURONMEM_STATUS_FAILED_PRECONDITION), "FAILED_PRECONDITION");
  EXPECT_STREQ(neuronmem_status_code_name(static_cast<neuronmem_status_code_t>(999)), "UNKNOWN");
}

TEST(Client, DefaultsCreateTwoCores) {
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_client_create(nullptr, &c));
  neuronmem_device_t* const* devs = nullptr;
  size_t n = 0;
  ASSERT_OK(neuronmem_client_devices(c, &devs, &n));
  EXPECT_EQ(n, 2u);
  neuronmem_memory_t* mem = nullptr;
  ASSERT_OK(neuronmem_client_lookup_memory(c, 0, &mem));
  neuronmem_memory_stats_t st{};
  st.struct_size = sizeof st;
  ASSERT_OK(neuronmem_memory_stats(mem, &st));
  EXPECT_EQ(st.capacity, 64ull << 20);
  ASSERT_OK(neuronmem_client_lookup_memory(c, 1, &mem));
  ASSERT_OK(neuronmem_memory_stats(mem, &st));
  EXPECT_EQ(st.capacity, 64ull << 20);
  EXPECT_EQ(st.is_shared, 1u);
  EXPECT_OK(neuronmem_client_destroy(c));

  // All-zero options with only struct_size set mean the same defaults.
  neuronmem_client_options_t o{};
  o.struct_size = sizeof o;
  ASSERT_OK(neuronmem_client_create(&o, &c));
  ASSERT_OK(neuronmem_client_devices(c, &devs, &n));
  EXPECT_EQ(n, 2u);
  EXPECT_OK(neuronmem_client_destroy(c));
}

TEST(Client, OptionValidation) {
  neuronmem_client_t* c = reinterpret_cast<neuronmem_client_t*>(0x1);
  auto o = SmallOptions();
  o.struct_size = 8;
  Result r = Take(neuronmem_client_create(&o, &c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("struct_size"), std::string::npos) << r.message;
  EXPECT_EQ(c, nullptr);  // outputs defined on failure

  o = SmallOptions();
  neuronmem_extension_base_t ext{};
  ext.struct_size = NEURONMEM_EXTENSION_BASE_STRUCT_SIZE;
  ext.type = static_cast<neuronmem_extension_type_t>(42);
  o.extension = &ext;
  r = Take(neuronmem_client_create(&o, &c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("type 42"), std::string::npos) << r.message;
  ext.struct_size = 1;  // a malformed entry
  r = Take(neuronmem_client_create(&o, &c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("struct_size 1"), std::string::npos) << r.message;

  o = SmallOptions(65);
  r = Take(neuronmem_client_create(&o, &c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("num_cores"), std::string::npos) << r.message;

  o = SmallOptions();
  o.device_bytes_per_core = 1000;
  r = Take(neuronmem_client_create(&o, &c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("device_bytes_per_core"), std::string::npos) << r.message;

  o = SmallOptions();
  o.pinned_host_bytes = UINT64_MAX;  // absurd
  r = Take(neuronmem_client_create(&o, &c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("pinned_host_bytes"), std::string::npos) << r.message;

  o = SmallOptions();
  o.mlock_mode = static_cast<neuronmem_mlock_mode_t>(7);
  EXPECT_EQ(Take(neuronmem_client_create(&o, &c)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);

  r = Take(neuronmem_client_create(&o, nullptr));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("out_client"), std::string::npos) << r.message;
  EXPECT_OK(neuronmem_client_destroy(nullptr));
}

TEST(Client, LargerStructSizeFromANewerCallerIsAccepted) {
  // A caller compiled against a later minor version passes a bigger struct; its extra fields are ignored.
  struct Bigger {
    neuronmem_client_options_t base;
    uint64_t future_field;
  } b{};
  b.base = SmallOptions(1);
  b.base.struct_size = sizeof b;
  b.future_field = 42;
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_client_create(&b.base, &c));
  EXPECT_OK(neuronmem_client_destroy(c));
}

TEST_F(ClientTest, PlatformAndExtensions) {
  neuronmem_string_t s;
  ASSERT_OK(neuronmem_client_platform_name(client_, &s));
  EXPECT_EQ(Str(s), "neuron");
  EXPECT_EQ(s.data[s.size], '\0');
  ASSERT_OK(neuronmem_client_platform_version(client_, &s));
  EXPECT_EQ(Str(s), std::string("libneuronmem ") + neuronmem_version_string());
  const neuronmem_string_t* ext = nullptr;
  size_t n = 0;
  ASSERT_OK(neuronmem_client_extensions(client_, &ext, &n));
  // Only extension structs are named here, and this release defines none (neuronmem_extension_type_t).
  EXPECT_EQ(n, 0u);
  EXPECT_OK(neuronmem_client_extensions(client_, &ext, &n));
  EXPECT_EQ(Take(neuronmem_client_extensions(client_, nullptr, &n)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
}

TEST_F(ClientTest, DevicesDescribeLikeNeuronPjrt) {
  neuronmem_device_t* const* devs = nullptr;
  size_t n = 0;
  ASSERT_OK(neuronmem_client_devices(client_, &devs, &n));
  ASSERT_EQ(n, 2u);
  for (size_t k = 0; k < n; ++k) {
    neuronmem_device_description_t d{};
    d.struct_size = sizeof d;
    ASSERT_OK(neuronmem_device_describe(devs[k], &d));
    EXPECT_EQ(d.id, static_cast<int32_t>(k));
    EXPECT_EQ(d.process_index, 0);
    EXPECT_EQ(d.local_id, static_cast<int32_t>(k));
    EXPECT_EQ(Str(d.kind), "NC_v2");
    std::string dbg = "NeuronCore(id=" + std::to_string(k) + ", process_index=0, local_id=" + std::to_string(k) + ")";
    EXPECT_EQ(Str(d.debug_string), dbg);
    EXPECT_EQ(Str(d.to_string), "NC_v2 (" + dbg + ")");
    neuronmem_device_t* looked = nullptr;
    ASSERT_OK(neuronmem_client_lookup_device(client_, static_cast<int32_t>(k), &looked));
    EXPECT_EQ(looked, devs[k]);
  }
  neuronmem_device_t* none = reinterpret_cast<neuronmem_device_t*>(0x1);
  Result r = Take(neuronmem_client_lookup_device(client_, 2, &none));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_NOT_FOUND);
  EXPECT_NE(r.message.find("id 2"), std::string::npos) << r.message;
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(Take(neuronmem_client_lookup_device(client_, -1, &none)).code, NEURONMEM_STATUS_NOT_FOUND);
}

TEST_F(ClientTest, MemoryIdsKindsAndAddressability) {
  // 2 cores: device 0, 2; pinned_host 1, 3; unpinned_host 4, 5.
  const struct {
    int32_t id;
    const char* kind;
    int32_t core;
  } expected[] = {{0, "device", 0},      {1, "pinned_host", 0},   {2, "device", 1},
                  {3, "pinned_host", 1}, {4, "unpinned_host", 0}, {5, "unpinned_host", 1}};
  neuronmem_memory_t* const* mems = nullptr;
  size_t n = 0;
  ASSERT_OK(neuronmem_client_memories(client_, &mems, &n));
  ASSERT_EQ(n, 6u);
  neuronmem_device_t* const* devs = nullptr;
  size_t nd = 0;
  ASSERT_OK(neuronmem_client_devices(client_, &devs, &nd));
  for (const auto& e : expected) {
    neuronmem_memory_t* m = nullptr;
    ASSERT_OK(neuronmem_client_lookup_memory(client_, e.id, &m));
    EXPECT_EQ(m, mems[e.id]);
    neuronmem_memory_description_t d{};
    d.struct_size = sizeof d;
    ASSERT_OK(neuronmem_memory_describe(m, &d));
    EXPECT_EQ(d.id, e.id);
    EXPECT_EQ(Str(d.kind), e.kind);
    EXPECT_EQ(Str(d.debug_string), "NeuronMemory(id=" + std::to_string(e.id) + ", kind=" + e.kind + ")");
    neuronmem_memory_kind_t kind;
    ASSERT_OK(neuronmem_memory_kind(m, &kind));
    EXPECT_EQ(d.kind_id, static_cast<int32_t>(kind));
    neuronmem_device_t* const* addr = nullptr;
    size_t na = 0;
    ASSERT_OK(neuronmem_memory_addressable_devices(m, &addr, &na));
    ASSERT_EQ(na, 1u);
    EXPECT_EQ(addr[0], devs[e.core]);
    neuronmem_memory_t* by_kind = nullptr;
    ASSERT_OK(neuronmem_device_memory_of_kind(devs[e.core], kind, &by_kind));
    EXPECT_EQ(by_kind, m);
    neuronmem_client_t* owner = nullptr;
    ASSERT_OK(neuronmem_memory_client(m, &owner));
    EXPECT_EQ(owner, client_);
  }
  for (size_t k = 0; k < nd; ++k) {
    neuronmem_memory_t* const* dm = nullptr;
    size_t ndm = 0;
    ASSERT_OK(neuronmem_device_addressable_memories(devs[k], &dm, &ndm));
    ASSERT_EQ(ndm, 3u);
    neuronmem_memory_t* def = nullptr;
    ASSERT_OK(neuronmem_device_default_memory(devs[k], &def));
    EXPECT_EQ(def, dm[0]);
    neuronmem_memory_kind_t kind;
    ASSERT_OK(neuronmem_memory_kind(def, &kind));
    EXPECT_EQ(kind, NEURONMEM_MEMORY_KIND_DEVICE);
  }
  neuronmem_memory_t* none = nullptr;
  EXPECT_EQ(Take(neuronmem_client_lookup_memory(client_, 6, &none)).code, NEURONMEM_STATUS_NOT_FOUND);
  EXPECT_EQ(Take(neuronmem_device_memory_of_kind(devs[0], static_cast<neuronmem_memory_kind_t>(3), &none)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
}

TEST(Client, IsAGoodGuestMimallocStaysPrivate) {
  // The pinned arena uses mimalloc, but the host process's malloc must stay its own: mimalloc's symbols
  // must not be in the global scope (Debian's libmimalloc.so would otherwise replace malloc/new).
  auto o = SmallOptions(1);
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_client_create(&o, &c));
  void* p = nullptr;
  ASSERT_OK(neuronmem_client_host_allocate(c, 64, 0, &p));  // mimalloc is loaded and in use by now
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "mi_malloc"), nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "mi_manage_os_memory_ex"), nullptr);
  EXPECT_OK(neuronmem_client_host_free(c, p));
  EXPECT_OK(neuronmem_client_destroy(c));
}

TEST(Client, MemoryIdsScaleWithCoreCount) {
  auto o = SmallOptions(4);
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_client_create(&o, &c));
  neuronmem_memory_t* m = nullptr;
  neuronmem_memory_description_t d{};
  d.struct_size = sizeof d;
  ASSERT_OK(neuronmem_client_lookup_memory(c, 7, &m));  // pinned_host of core 3
  ASSERT_OK(neuronmem_memory_describe(m, &d));
  EXPECT_EQ(Str(d.kind), "pinned_host");
  ASSERT_OK(neuronmem_client_lookup_memory(c, 11, &m));  // unpinned_host of core 3 = 2*4+3
  ASSERT_OK(neuronmem_memory_describe(m, &d));
  EXPECT_EQ(Str(d.kind), "unpinned_host");
  neuronmem_device_t* const* addr = nullptr;
  size_t na = 0;
  ASSERT_OK(neuronmem_memory_addressable_devices(m, &addr, &na));
  neuronmem_device_description_t dd{};
  dd.struct_size = sizeof dd;
  ASSERT_OK(neuronmem_device_describe(addr[0], &dd));
  EXPECT_EQ(dd.id, 3);
  EXPECT_OK(neuronmem_client_destroy(c));
}

TEST_F(ClientTest, HostAllocationsLandInThePinnedArenaAndShowInStats) {
  neuronmem_memory_t* pinned = nullptr;
  ASSERT_OK(neuronmem_client_lookup_memory(client_, 1, &pinned));
  neuronmem_memory_t* pinned1 = nullptr;
  ASSERT_OK(neuronmem_client_lookup_memory(client_, 3, &pinned1));
  std::vector<void*> ptrs;
  for (uint64_t size : {1ull, 64ull, 1000ull, 4096ull, 65536ull, 1ull << 20}) {
    void* p = nullptr;
    ASSERT_OK(neuronmem_client_host_allocate(client_, size, 0, &p));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, 0xab, size);
    bool is_pinned = false;
    ASSERT_OK(neuronmem_client_host_is_pinned(client_, p, size, &is_pinned));
    EXPECT_TRUE(is_pinned);
    ptrs.push_back(p);
  }
  void* aligned = nullptr;
  ASSERT_OK(neuronmem_client_host_allocate(client_, 100, 4096, &aligned));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 4096, 0u);
  ptrs.push_back(aligned);

  neuronmem_memory_stats_t st{}, st1{};
  st.struct_size = st1.struct_size = sizeof st;
  ASSERT_OK(neuronmem_memory_stats(pinned, &st));
  ASSERT_OK(neuronmem_memory_stats(pinned1, &st1));
  EXPECT_EQ(st.live_allocations, 7u);
  EXPECT_EQ(st.bytes_in_use, 1u + 64 + 1000 + 4096 + 65536 + (1u << 20) + 100);
  EXPECT_EQ(st.bytes_in_use, st1.bytes_in_use);  // one arena behind both ids
  EXPECT_GE(st.peak_bytes_in_use, st.bytes_in_use);
  EXPECT_GT(st.largest_free_block, 0u);
  EXPECT_LE(st.largest_free_block, st.capacity);
  for (void* p : ptrs) EXPECT_OK(neuronmem_client_host_free(client_, p));
  ASSERT_OK(neuronmem_memory_stats(pinned, &st));
  EXPECT_EQ(st.live_allocations, 0u);
  EXPECT_EQ(st.bytes_in_use, 0u);
  EXPECT_EQ(st.total_allocations, 7u);

  int local = 0;
  bool is_pinned = true;
  ASSERT_OK(neuronmem_client_host_is_pinned(client_, &local, sizeof local, &is_pinned));
  EXPECT_FALSE(is_pinned);
}

TEST_F(ClientTest, HostAllocatorRejectsBadInput) {
  void* p = reinterpret_cast<void*>(0x1);
  Result r = Take(neuronmem_client_host_allocate(client_, 0, 0, &p));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(Take(neuronmem_client_host_allocate(client_, 64, 3, &p)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  r = Take(neuronmem_client_host_allocate(client_, UINT64_MAX - 8, 0, &p));
  EXPECT_TRUE(r.code == NEURONMEM_STATUS_INVALID_ARGUMENT || r.code == NEURONMEM_STATUS_RESOURCE_EXHAUSTED)
      << r.message;
  EXPECT_EQ(Take(neuronmem_client_host_allocate(nullptr, 64, 0, &p)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_client_host_allocate(client_, 64, 0, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);

  int local = 0;
  r = Take(neuronmem_client_host_free(client_, &local));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_FALSE(r.message.empty());
  ASSERT_OK(neuronmem_client_host_allocate(client_, 256, 0, &p));
  r = Take(neuronmem_client_host_free(client_, static_cast<char*>(p) + 64));  // interior pointer
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_OK(neuronmem_client_host_free(client_, p));
  r = Take(neuronmem_client_host_free(client_, p));  // double free
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_OK(neuronmem_client_host_free(client_, nullptr));
}

TEST(Client, PinnedArenaExhaustionIsAStatusAndLeavesNothing) {
  auto o = SmallOptions(1);
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_client_create(&o, &c));
  std::vector<void*> ptrs;
  Result last{NEURONMEM_STATUS_OK, ""};
  for (int i = 0; i < 1000; ++i) {
    void* p = nullptr;
    last = Take(neuronmem_client_host_allocate(c, 1 << 20, 0, &p));
    if (last.code != NEURONMEM_STATUS_OK) {
      EXPECT_EQ(p, nullptr);
      break;
    }
    ptrs.push_back(p);
  }
  EXPECT_EQ(last.code, NEURONMEM_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_NE(last.message.find("pinned_host"), std::string::npos) << last.message;
  EXPECT_NE(last.message.find("1048576"), std::string::npos) << last.message;
  EXPECT_GT(ptrs.size(), 8u);
  for (void* p : ptrs) EXPECT_OK(neuronmem_client_host_free(c, p));
  neuronmem_memory_t* pinned = nullptr;
  ASSERT_OK(neuronmem_client_lookup_memory(c, 1, &pinned));
  neuronmem_memory_stats_t st{};
  st.struct_size = sizeof st;
  ASSERT_OK(neuronmem_memory_stats(pinned, &st));
  EXPECT_EQ(st.live_allocations, 0u);
  // After freeing everything the arena serves the same load again.
  void* p = nullptr;
  ASSERT_OK(neuronmem_client_host_allocate(c, 1 << 20, 0, &p));
  EXPECT_OK(neuronmem_client_host_free(c, p));
  EXPECT_OK(neuronmem_client_destroy(c));
}

TEST(Client, DestroyWithLiveAllocationsIsReported) {
  auto o = SmallOptions(1);
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_client_create(&o, &c));
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_OK(neuronmem_client_host_allocate(c, 100, 0, &a));
  ASSERT_OK(neuronmem_client_host_allocate(c, 28, 0, &b));
  Result r = Take(neuronmem_client_destroy(c));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("pinned_host: 2 live allocation(s), 128 bytes"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("freed: the region stays mapped in the pool"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("released"), std::string::npos) << r.message;  // it used to say so, untruly
}

TEST(Client, MlockModes) {
  for (neuronmem_mlock_mode_t mode : {NEURONMEM_MLOCK_BEST_EFFORT, NEURONMEM_MLOCK_DISABLED}) {
    auto o = SmallOptions(1);
    o.mlock_mode = mode;
    neuronmem_client_t* c = nullptr;
    ASSERT_OK(neuronmem_client_create(&o, &c));
    neuronmem_memory_t* pinned = nullptr;
    ASSERT_OK(neuronmem_client_lookup_memory(c, 1, &pinned));
    neuronmem_memory_stats_t st{};
    st.struct_size = sizeof st;
    ASSERT_OK(neuronmem_memory_stats(pinned, &st));
    if (mode == NEURONMEM_MLOCK_DISABLED) {
      EXPECT_EQ(st.is_locked, 0u);
    }
    neuronmem_memory_t* dev = nullptr;
    ASSERT_OK(neuronmem_client_lookup_memory(c, 0, &dev));
    ASSERT_OK(neuronmem_memory_stats(dev, &st));
    EXPECT_EQ(st.capacity, 4ull << 20);
    EXPECT_OK(neuronmem_client_destroy(c));
  }
  // Required: either it locks (root) and reports so, or creation fails with UNAVAILABLE.
  auto o = SmallOptions(1);
  o.mlock_mode = NEURONMEM_MLOCK_REQUIRED;
  neuronmem_client_t* c = nullptr;
  Result r = Take(neuronmem_client_create(&o, &c));
  if (r.code == NEURONMEM_STATUS_OK) {
    neuronmem_memory_t* pinned = nullptr;
    ASSERT_OK(neuronmem_client_lookup_memory(c, 1, &pinned));
    neuronmem_memory_stats_t st{};
    st.struct_size = sizeof st;
    ASSERT_OK(neuronmem_memory_stats(pinned, &st));
    EXPECT_EQ(st.is_locked, 1u);
    EXPECT_OK(neuronmem_client_destroy(c));
  } else {
    EXPECT_EQ(r.code, NEURONMEM_STATUS_UNAVAILABLE) << r.message;
    EXPECT_EQ(c, nullptr);
  }
}

TEST_F(ClientTest, NullArgumentsAndSmallStructsAreInvalidArgument) {
  neuronmem_string_t s;
  EXPECT_EQ(Take(neuronmem_client_platform_name(nullptr, &s)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_client_platform_name(client_, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_client_platform_version(nullptr, &s)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  size_t n;
  const neuronmem_string_t* names;
  EXPECT_EQ(Take(neuronmem_client_extensions(client_, &names, nullptr)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_device_t* const* devs;
  EXPECT_EQ(Take(neuronmem_client_devices(nullptr, &devs, &n)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_memory_t* const* mems;
  EXPECT_EQ(Take(neuronmem_client_memories(client_, nullptr, &n)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_memory_t* m = nullptr;
  EXPECT_EQ(Take(neuronmem_client_lookup_memory(nullptr, 0, &m)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  ASSERT_OK(neuronmem_client_lookup_memory(client_, 0, &m));
  neuronmem_memory_stats_t st{};
  st.struct_size = 16;
  Result r = Take(neuronmem_memory_stats(m, &st));
  EXPECT_EQ(r.code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("neuronmem_memory_stats_t.struct_size"), std::string::npos) << r.message;
  neuronmem_memory_description_t md{};
  EXPECT_EQ(Take(neuronmem_memory_describe(m, &md)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_memory_describe(nullptr, &md)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  neuronmem_device_description_t dd{};
  ASSERT_OK(neuronmem_client_devices(client_, &devs, &n));
  EXPECT_EQ(Take(neuronmem_device_describe(devs[0], &dd)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_device_addressable_memories(nullptr, &mems, &n)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_device_default_memory(nullptr, &m)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(m, nullptr);
  neuronmem_memory_kind_t k;
  EXPECT_EQ(Take(neuronmem_memory_kind(nullptr, &k)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
  bool pinned;
  EXPECT_EQ(Take(neuronmem_client_host_is_pinned(client_, nullptr, 0, nullptr)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_client_host_is_pinned(nullptr, nullptr, 0, &pinned)).code,
            NEURONMEM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Take(neuronmem_client_host_free(nullptr, &pinned)).code, NEURONMEM_STATUS_INVALID_ARGUMENT);
}

TEST(Client, HostAllocationsFromSeveralThreadsFreedElsewhere) {
  auto o = SmallOptions(1);
  neuronmem_client_t* c = nullptr;
  ASSERT_OK(neuronmem_client_create(&o, &c));
  constexpr int kThreads = 4, kPer = 500;
  std::vector<std::vector<void*>> out(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i) {
        void* p = nullptr;
        neuronmem_status_t* s = neuronmem_client_host_allocate(c, 16 + (i % 7) * 100, 0, &p);
        if (s) {
          neuronmem_status_free(s);
          continue;
        }
        std::memset(p, t, 16);
        out[t].push_back(p);
      }
    });
  }
  for (auto& t : ts) t.join();
  ts.clear();
  // Free every thread's allocations on a different thread.
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (void* p : out[(t + 1) % kThreads]) {
        EXPECT_EQ(static_cast<unsigned char*>(p)[0], (t + 1) % kThreads);
        EXPECT_OK(neuronmem_client_host_free(c, p));
      }
    });
  }
  for (auto& t : ts) t.join();
  size_t total = 0;
  for (auto& v : out) total += v.size();
  EXPECT_EQ(total, static_cast<size_t>(kThreads * kPer));
  EXPECT_OK(neuronmem_client_destroy(c));
}

}  // namespace
