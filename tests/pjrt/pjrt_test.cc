// libneuronmem_pjrt.so driven only through its PJRT_Api table, as a frontend does: the table, the plugin,
// client, devices, memories, buffers (the four host-buffer semantics, byte_strides, copies), compile (pretty
// and generic StableHLO inside `module @name`, CompileOptionsProto), executables, execute (donation,
// several devices), the memory-kind contract end to end, events, and what bad input gets.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#ifdef NEURONMEM_PJRT_FAULTS
#include "base/fault.h"
#endif
#include "pjrt/pjrt_helpers.h"
#include "xla/pjrt/c/pjrt_c_api_layouts_extension.h"
#include "xla/pjrt/c/pjrt_c_api_memory_descriptions_extension.h"

namespace neuronmem_pjrt_test {
namespace {

const PJRT_Api* g_api = nullptr;

#define ASSERT_PJRT_OK(expr)                              \
  do {                                                    \
    Outcome _o = Take(g_api, (expr));                     \
    ASSERT_EQ(_o.code, PJRT_Error_Code_OK) << _o.message; \
  } while (0)
#define EXPECT_PJRT_OK(expr)                              \
  do {                                                    \
    Outcome _o = Take(g_api, (expr));                     \
    EXPECT_EQ(_o.code, PJRT_Error_Code_OK) << _o.message; \
  } while (0)

std::string Str(const char* p, size_t n) { return std::string(p, n); }

const char kAddPretty[] = R"(module @add_pretty {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.add %a, %b : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
})";

// The generic form a frontend's MLIR printer emits.
const char kAddGeneric[] =
    R"(module @add_generic attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  "func.func"() <{function_type = (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>):
    %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "stablehlo.return"(%0) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
})";

// The generic form as MLIR's printer writes a whole module: func.return, locations, a public entry.
const char kAddGenericFuncReturn[] = R"(#loc = loc(unknown)
"builtin.module"() <{sym_name = "add_func_return"}> ({
  "func.func"() <{function_type = (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>, sym_name = "main",
                  sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<2x3xf32> loc(unknown), %arg1: tensor<2x3xf32> loc(unknown)):
    %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc(#loc)
    "func.return"(%0) : (tensor<2x3xf32>) -> () loc(#loc)
  }) : () -> () loc(#loc)
}) : () -> () loc(#loc)
)";

// The memory-kind contract: a pinned_host parameter, a pinned_host result.
const char kPinned[] = R"(module @offload {
  func.func @main(%h: tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, %d: tensor<4xf32>)
      -> (tensor<4xf32> {mhlo.memory_kind = "pinned_host"}, tensor<4xf32>) {
    %0 = stablehlo.multiply %h, %d : tensor<4xf32>
    %1 = stablehlo.add %h, %d : tensor<4xf32>
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
})";

const char kDonate[] = R"(module @donate {
  func.func @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
})";

const char kReplica[] = R"(module @replicas {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
})";

// CompileOptionsProto { executable_build_options (3) { num_replicas (4): r, num_partitions (5): p } }.
std::string Options(int r, int p) {
  return std::string{0x1a, 4, 0x20, static_cast<char>(r), 0x28, static_cast<char>(p)};
}

// Uploads `data` of `type` and `dims` (one element per byte for the types narrower than a byte, as PJRT clients
// send them) to `device` or `memory` with `semantics`; waits until the host data is released.
PJRT_Buffer* UploadData(PJRT_Client* client, const void* data, PJRT_Buffer_Type type, const std::vector<int64_t>& dims,
                        PJRT_Device* device, PJRT_Memory* memory, PJRT_HostBufferSemantics semantics,
                        const int64_t* byte_strides) {
  auto a = NM_ARGS(PJRT_Client_BufferFromHostBuffer_Args);
  a.client = client;
  a.data = data;
  a.type = type;
  a.dims = dims.data();
  a.num_dims = dims.size();
  a.byte_strides = byte_strides;
  a.num_byte_strides = byte_strides ? dims.size() : 0;
  a.host_buffer_semantics = semantics;
  a.device = device;
  a.memory = memory;
  Outcome o = Take(g_api, g_api->PJRT_Client_BufferFromHostBuffer(&a));
  EXPECT_EQ(o.code, PJRT_Error_Code_OK) << o.message;
  if (a.done_with_host_buffer) {
    EXPECT_EQ(AwaitAndDestroy(g_api, a.done_with_host_buffer).code, PJRT_Error_Code_OK);
  }
  return a.buffer;
}

// Uploads `bytes` (one element per byte, as PJRT clients send the types narrower than a byte) of `type`.
PJRT_Buffer* UploadBytes(PJRT_Client* client, PJRT_Device* device, PJRT_Buffer_Type type,
                         const std::vector<uint8_t>& bytes, const std::vector<int64_t>& dims,
                         const int64_t* byte_strides = nullptr,
                         PJRT_HostBufferSemantics semantics = PJRT_HostBufferSemantics_kImmutableZeroCopy) {
  return UploadData(client, bytes.data(), type, dims, device, nullptr, semantics, byte_strides);
}

// The bytes ToHostBuffer writes (its size query first).
std::vector<uint8_t> ReadBytes(PJRT_Buffer* b) {
  auto a = NM_ARGS(PJRT_Buffer_ToHostBuffer_Args);
  a.src = b;
  EXPECT_PJRT_OK(g_api->PJRT_Buffer_ToHostBuffer(&a));
  std::vector<uint8_t> out(a.dst_size);
  a.dst = out.data();
  EXPECT_PJRT_OK(g_api->PJRT_Buffer_ToHostBuffer(&a));
  if (a.event) {
    EXPECT_EQ(AwaitAndDestroy(g_api, a.event).code, PJRT_Error_Code_OK);
  }
  return out;
}

std::vector<float> AsFloats(const std::vector<uint8_t>& bytes) {
  std::vector<float> f(bytes.size() / 4);
  std::memcpy(f.data(), bytes.data(), f.size() * 4);
  return f;
}

// Executes with one argument list per device (`options`, if given, with the non-donatable indices set); returns
// the outputs per device, awaited: the launch's outcome, else the first failed device's.
Outcome Execute(PJRT_LoadedExecutable* le, const std::vector<std::vector<PJRT_Buffer*>>& args, size_t num_outputs,
                std::vector<std::vector<PJRT_Buffer*>>* outputs, const std::vector<int64_t>& non_donatable = {},
                PJRT_Device* execute_device = nullptr, const PJRT_ExecuteOptions* options = nullptr) {
  const size_t n = args.size();
  std::vector<PJRT_Buffer* const*> lists(n);
  for (size_t d = 0; d < n; ++d) lists[d] = args[d].data();
  outputs->assign(n, std::vector<PJRT_Buffer*>(num_outputs, nullptr));
  std::vector<PJRT_Buffer**> out_lists(n);
  for (size_t d = 0; d < n; ++d) out_lists[d] = (*outputs)[d].data();
  std::vector<PJRT_Event*> done(n, nullptr);
  PJRT_ExecuteOptions o = options ? *options : NM_ARGS(PJRT_ExecuteOptions);
  o.non_donatable_input_indices = non_donatable.data();
  o.num_non_donatable_input_indices = non_donatable.size();
  auto a = NM_ARGS(PJRT_LoadedExecutable_Execute_Args);
  a.executable = le;
  a.options = &o;
  a.argument_lists = lists.data();
  a.num_devices = n;
  a.num_args = n ? args[0].size() : 0;
  a.output_lists = out_lists.data();
  a.device_complete_events = done.data();
  a.execute_device = execute_device;
  Outcome r = Take(g_api, g_api->PJRT_LoadedExecutable_Execute(&a));
  if (r.code != PJRT_Error_Code_OK) return r;
  for (PJRT_Event* e : done) {
    Outcome x = AwaitAndDestroy(g_api, e);
    if (x.code != PJRT_Error_Code_OK) r = x;
  }
  return r;
}

class PjrtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(g_api, nullptr);
    client_ = NewClient(2);
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    if (client_) ASSERT_PJRT_OK(DestroyClient(client_));
  }

  PJRT_Client* NewClient(int64_t cores) {
    const PJRT_NamedValue opts[2] = {IntOption("num_cores", cores), IntOption("device_bytes_per_core", 16 << 20)};
    auto a = NM_ARGS(PJRT_Client_Create_Args);
    a.create_options = opts;
    a.num_options = 2;
    Outcome o = Take(g_api, g_api->PJRT_Client_Create(&a));
    EXPECT_EQ(o.code, PJRT_Error_Code_OK) << o.message;
    return a.client;
  }
  PJRT_Error* DestroyClient(PJRT_Client* c) {
    auto a = NM_ARGS(PJRT_Client_Destroy_Args);
    a.client = c;
    return g_api->PJRT_Client_Destroy(&a);
  }

  std::vector<PJRT_Device*> Devices(PJRT_Client* c) {
    auto a = NM_ARGS(PJRT_Client_AddressableDevices_Args);
    a.client = c;
    EXPECT_PJRT_OK(g_api->PJRT_Client_AddressableDevices(&a));
    return {a.addressable_devices, a.addressable_devices + a.num_addressable_devices};
  }
  PJRT_Memory* MemoryOfKind(PJRT_Device* d, const std::string& kind) {
    auto a = NM_ARGS(PJRT_Device_AddressableMemories_Args);
    a.device = d;
    EXPECT_PJRT_OK(g_api->PJRT_Device_AddressableMemories(&a));
    for (size_t i = 0; i < a.num_memories; ++i)
      if (Kind(a.memories[i]) == kind) return a.memories[i];
    return nullptr;
  }
  std::string Kind(PJRT_Memory* m) {
    auto a = NM_ARGS(PJRT_Memory_Kind_Args);
    a.memory = m;
    EXPECT_PJRT_OK(g_api->PJRT_Memory_Kind(&a));
    return Str(a.kind, a.kind_size);
  }

  void Await(PJRT_Event* e) {
    Outcome o = AwaitAndDestroy(g_api, e);
    EXPECT_EQ(o.code, PJRT_Error_Code_OK) << o.message;
  }
  void DestroyEvent(PJRT_Event* e) {
    auto a = NM_ARGS(PJRT_Event_Destroy_Args);
    a.event = e;
    EXPECT_PJRT_OK(g_api->PJRT_Event_Destroy(&a));
  }

  // Uploads floats (dims) to `device` or `memory` with `semantics` (UploadData).
  PJRT_Buffer* Upload(const std::vector<float>& v, const std::vector<int64_t>& dims, PJRT_Device* device,
                      PJRT_Memory* memory = nullptr,
                      PJRT_HostBufferSemantics semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
                      const int64_t* byte_strides = nullptr, PJRT_Client* client = nullptr) {
    return UploadData(client ? client : client_, v.data(), PJRT_Buffer_Type_F32, dims, device, memory, semantics,
                      byte_strides);
  }
  std::vector<float> Read(PJRT_Buffer* b) { return AsFloats(ReadBytes(b)); }
  void DestroyBuffer(PJRT_Buffer* b) {
    auto a = NM_ARGS(PJRT_Buffer_Destroy_Args);
    a.buffer = b;
    EXPECT_PJRT_OK(g_api->PJRT_Buffer_Destroy(&a));
  }
  PJRT_Memory* MemoryOf(PJRT_Buffer* b) {
    auto a = NM_ARGS(PJRT_Buffer_Memory_Args);
    a.buffer = b;
    EXPECT_PJRT_OK(g_api->PJRT_Buffer_Memory(&a));
    return a.memory;
  }
  bool IsDeleted(PJRT_Buffer* b) {
    auto a = NM_ARGS(PJRT_Buffer_IsDeleted_Args);
    a.buffer = b;
    EXPECT_PJRT_OK(g_api->PJRT_Buffer_IsDeleted(&a));
    return a.is_deleted;
  }

  Outcome Compile(const std::string& code, const std::string& options, PJRT_LoadedExecutable** out,
                  const char* format = "mlir", PJRT_Client* client = nullptr) {
    auto p = NM_ARGS(PJRT_Program);
    std::string text = code;
    p.code = text.data();
    p.code_size = text.size();
    p.format = format;
    p.format_size = std::strlen(format);
    auto a = NM_ARGS(PJRT_Client_Compile_Args);
    a.client = client ? client : client_;
    a.program = &p;
    a.compile_options = options.data();
    a.compile_options_size = options.size();
    Outcome o = Take(g_api, g_api->PJRT_Client_Compile(&a));
    *out = a.executable;
    return o;
  }
  // Compiles a program that must compile (Compile); NULL, and a failed expectation, if it does not.
  PJRT_LoadedExecutable* CompileOk(const std::string& code, const std::string& options = "") {
    PJRT_LoadedExecutable* le = nullptr;
    Outcome o = Compile(code, options, &le);
    EXPECT_EQ(o.code, PJRT_Error_Code_OK) << o.message;
    return le;
  }
  // Executes on one device (Execute) with one output, reads it back and destroys it; {} (a failed expectation)
  // when the execution fails.
  std::vector<float> ExecuteAndRead(PJRT_LoadedExecutable* le, const std::vector<PJRT_Buffer*>& args,
                                    const std::vector<int64_t>& non_donatable = {},
                                    PJRT_Device* execute_device = nullptr,
                                    const PJRT_ExecuteOptions* options = nullptr) {
    std::vector<std::vector<PJRT_Buffer*>> out;
    Outcome o = Execute(le, {args}, 1, &out, non_donatable, execute_device, options);
    EXPECT_EQ(o.code, PJRT_Error_Code_OK) << o.message;
    if (o.code != PJRT_Error_Code_OK) return {};
    std::vector<float> values = Read(out[0][0]);
    DestroyBuffer(out[0][0]);
    return values;
  }
  void DestroyExecutable(PJRT_LoadedExecutable* e) {
    auto a = NM_ARGS(PJRT_LoadedExecutable_Destroy_Args);
    a.executable = e;
    EXPECT_PJRT_OK(g_api->PJRT_LoadedExecutable_Destroy(&a));
  }
  PJRT_Executable* GetExecutable(PJRT_LoadedExecutable* le) {
    auto a = NM_ARGS(PJRT_LoadedExecutable_GetExecutable_Args);
    a.loaded_executable = le;
    EXPECT_PJRT_OK(g_api->PJRT_LoadedExecutable_GetExecutable(&a));
    return a.executable;
  }
  void DestroyExe(PJRT_Executable* e) {
    auto a = NM_ARGS(PJRT_Executable_Destroy_Args);
    a.executable = e;
    EXPECT_PJRT_OK(g_api->PJRT_Executable_Destroy(&a));
  }

  PJRT_Client* client_ = nullptr;
};

// ---- the table

TEST_F(PjrtTest, EverySlotIsFilledAndUnsupportedOnesSayUnimplemented) {
  EXPECT_EQ(g_api->pjrt_api_version.major_version, PJRT_API_MAJOR);
  EXPECT_EQ(g_api->pjrt_api_version.minor_version, PJRT_API_MINOR);
  EXPECT_GE(g_api->struct_size, static_cast<size_t>(PJRT_Api_STRUCT_SIZE));
  const size_t first = offsetof(PJRT_Api, PJRT_Error_Destroy);
  size_t slots = 0;
  for (size_t off = first; off + sizeof(void*) <= PJRT_Api_STRUCT_SIZE; off += sizeof(void*), ++slots) {
    void* fn = nullptr;
    std::memcpy(&fn, reinterpret_cast<const char*>(g_api) + off, sizeof fn);
    EXPECT_NE(fn, nullptr) << "slot at offset " << off;
  }
  EXPECT_GE(slots, 130u);
  auto a = NM_ARGS(PJRT_Client_CreateViewOfDeviceBuffer_Args);
  Outcome o = Take(g_api, g_api->PJRT_Client_CreateViewOfDeviceBuffer(&a));
  EXPECT_EQ(o.code, PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_NE(o.message.find("PJRT_Client_CreateViewOfDeviceBuffer"), std::string::npos) << o.message;
  auto t = NM_ARGS(PJRT_Client_CreateBuffersForAsyncHostToDevice_Args);
  o = Take(g_api, g_api->PJRT_Client_CreateBuffersForAsyncHostToDevice(&t));
  EXPECT_EQ(o.code, PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_NE(o.message.find("PJRT_Client_CreateBuffersForAsyncHostToDevice"), std::string::npos) << o.message;
}

void CountPayload(const char*, size_t, const char*, size_t, void* arg) { ++*static_cast<int*>(arg); }

// Slots a frontend calls in passing: device attributes, error payloads (none), an execute context.
TEST_F(PjrtTest, DeviceAttributesErrorPayloadsAndExecuteContext) {
  auto ga = NM_ARGS(PJRT_Device_GetAttributes_Args);
  ga.device = Devices(client_)[1];
  ASSERT_PJRT_OK(g_api->PJRT_Device_GetAttributes(&ga));
  ASSERT_EQ(ga.num_attributes, 1u);
  EXPECT_EQ(Str(ga.attributes[0].name, ga.attributes[0].name_size), "local_id");
  EXPECT_EQ(ga.attributes[0].int64_value, 1);
  ASSERT_NE(ga.attributes_deleter, nullptr);
  ga.attributes_deleter(ga.device_attributes);

  auto bad = NM_ARGS(PJRT_Client_LookupDevice_Args);
  bad.client = client_;
  bad.id = 99;
  PJRT_Error* err = g_api->PJRT_Client_LookupDevice(&bad);
  ASSERT_NE(err, nullptr);
  int payloads = 0;
  auto fp = NM_ARGS(PJRT_Error_ForEachPayload_Args);
  fp.error = err;
  fp.visitor = CountPayload;
  fp.user_arg = &payloads;
  EXPECT_PJRT_OK(g_api->PJRT_Error_ForEachPayload(&fp));
  EXPECT_EQ(payloads, 0);
  Take(g_api, err);

  auto cc = NM_ARGS(PJRT_ExecuteContext_Create_Args);
  ASSERT_PJRT_OK(g_api->PJRT_ExecuteContext_Create(&cc));
  ASSERT_NE(cc.context, nullptr);
  PJRT_LoadedExecutable* le = CompileOk(
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %a, %a : "
      "tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n");
  ASSERT_NE(le, nullptr);
  PJRT_Buffer* arg = Upload({1, 2}, {2}, Devices(client_)[0]);
  auto eo = NM_ARGS(PJRT_ExecuteOptions);
  eo.context = cc.context;  // accepted, unused
  EXPECT_EQ(ExecuteAndRead(le, {arg}, {}, nullptr, &eo), (std::vector<float>{2, 4}));
  DestroyBuffer(arg);
  DestroyExecutable(le);
  auto cd = NM_ARGS(PJRT_ExecuteContext_Destroy_Args);
  cd.context = cc.context;
  EXPECT_PJRT_OK(g_api->PJRT_ExecuteContext_Destroy(&cd));
}

TEST_F(PjrtTest, PluginInitializeAndAttributes) {
  auto i = NM_ARGS(PJRT_Plugin_Initialize_Args);
  EXPECT_PJRT_OK(g_api->PJRT_Plugin_Initialize(&i));
  auto a = NM_ARGS(PJRT_Plugin_Attributes_Args);
  ASSERT_PJRT_OK(g_api->PJRT_Plugin_Attributes(&a));
  bool current = false, xla = false;
  for (size_t k = 0; k < a.num_attributes; ++k) {
    const std::string name = Str(a.attributes[k].name, a.attributes[k].name_size);
    if (name == "stablehlo_current_version") {
      current = a.attributes[k].type == PJRT_NamedValue_kInt64List && a.attributes[k].value_size == 3;
    }
    xla |= name == "xla_version";
  }
  EXPECT_TRUE(current);
  EXPECT_TRUE(xla);
}

// ---- client, devices, memories

TEST_F(PjrtTest, ClientDevicesAndMemories) {
  auto pn = NM_ARGS(PJRT_Client_PlatformName_Args);
  pn.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_PlatformName(&pn));
  EXPECT_EQ(Str(pn.platform_name, pn.platform_name_size), "neuron");
  auto pv = NM_ARGS(PJRT_Client_PlatformVersion_Args);
  pv.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_PlatformVersion(&pv));
  EXPECT_GT(pv.platform_version_size, 0u);
  auto pi = NM_ARGS(PJRT_Client_ProcessIndex_Args);
  pi.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_ProcessIndex(&pi));
  EXPECT_EQ(pi.process_index, 0);

  auto ds = NM_ARGS(PJRT_Client_Devices_Args);
  ds.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_Devices(&ds));
  ASSERT_EQ(ds.num_devices, 2u);
  std::vector<PJRT_Device*> devices = Devices(client_);
  ASSERT_EQ(devices.size(), 2u);
  auto ld = NM_ARGS(PJRT_Client_LookupDevice_Args);
  ld.client = client_;
  ld.id = 1;
  ASSERT_PJRT_OK(g_api->PJRT_Client_LookupDevice(&ld));
  EXPECT_EQ(ld.device, devices[1]);
  ld.id = 7;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_LookupDevice(&ld)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  auto la = NM_ARGS(PJRT_Client_LookupAddressableDevice_Args);
  la.client = client_;
  la.local_hardware_id = 0;
  ASSERT_PJRT_OK(g_api->PJRT_Client_LookupAddressableDevice(&la));
  EXPECT_EQ(la.addressable_device, devices[0]);

  auto gd = NM_ARGS(PJRT_Device_GetDescription_Args);
  gd.device = devices[0];
  ASSERT_PJRT_OK(g_api->PJRT_Device_GetDescription(&gd));
  auto id = NM_ARGS(PJRT_DeviceDescription_Id_Args);
  id.device_description = gd.device_description;
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_Id(&id));
  EXPECT_EQ(id.id, 0);
  auto kind = NM_ARGS(PJRT_DeviceDescription_Kind_Args);
  kind.device_description = gd.device_description;
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_Kind(&kind));
  EXPECT_EQ(Str(kind.device_kind, kind.device_kind_size), "NC_v2");
  auto ts = NM_ARGS(PJRT_DeviceDescription_ToString_Args);
  ts.device_description = gd.device_description;
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_ToString(&ts));
  EXPECT_EQ(Str(ts.to_string, ts.to_string_size), "NeuronCore(id=0, process_index=0, local_id=0)");
  auto dbg = NM_ARGS(PJRT_DeviceDescription_DebugString_Args);
  dbg.device_description = gd.device_description;
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_DebugString(&dbg));
  EXPECT_NE(Str(dbg.debug_string, dbg.debug_string_size).find("NC_v2"), std::string::npos);
  auto dpi = NM_ARGS(PJRT_DeviceDescription_ProcessIndex_Args);
  dpi.device_description = gd.device_description;
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_ProcessIndex(&dpi));
  EXPECT_EQ(dpi.process_index, 0);
  auto attrs = NM_ARGS(PJRT_DeviceDescription_Attributes_Args);
  attrs.device_description = gd.device_description;
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_Attributes(&attrs));
  auto addr = NM_ARGS(PJRT_Device_IsAddressable_Args);
  addr.device = devices[1];
  ASSERT_PJRT_OK(g_api->PJRT_Device_IsAddressable(&addr));
  EXPECT_TRUE(addr.is_addressable);
  auto hw = NM_ARGS(PJRT_Device_LocalHardwareId_Args);
  hw.device = devices[1];
  ASSERT_PJRT_OK(g_api->PJRT_Device_LocalHardwareId(&hw));
  EXPECT_EQ(hw.local_hardware_id, 1);

  auto dm = NM_ARGS(PJRT_Device_DefaultMemory_Args);
  dm.device = devices[0];
  ASSERT_PJRT_OK(g_api->PJRT_Device_DefaultMemory(&dm));
  EXPECT_EQ(Kind(dm.memory), "device");
  auto mts = NM_ARGS(PJRT_Memory_ToString_Args);
  mts.memory = dm.memory;
  ASSERT_PJRT_OK(g_api->PJRT_Memory_ToString(&mts));
  EXPECT_EQ(Str(mts.to_string, mts.to_string_size), "NeuronMemory(id=0, kind=device)");
  auto mds = NM_ARGS(PJRT_Memory_DebugString_Args);
  mds.memory = dm.memory;
  ASSERT_PJRT_OK(g_api->PJRT_Memory_DebugString(&mds));
  auto mid = NM_ARGS(PJRT_Memory_Id_Args);
  mid.memory = dm.memory;
  ASSERT_PJRT_OK(g_api->PJRT_Memory_Id(&mid));
  EXPECT_EQ(mid.id, 0);
  auto kid = NM_ARGS(PJRT_Memory_Kind_Id_Args);
  kid.memory = MemoryOfKind(devices[0], "pinned_host");
  ASSERT_NE(kid.memory, nullptr);
  ASSERT_PJRT_OK(g_api->PJRT_Memory_Kind_Id(&kid));
  EXPECT_EQ(kid.kind_id, 1);
  EXPECT_NE(MemoryOfKind(devices[0], "unpinned_host"), nullptr);
  auto by = NM_ARGS(PJRT_Memory_AddressableByDevices_Args);
  by.memory = dm.memory;
  ASSERT_PJRT_OK(g_api->PJRT_Memory_AddressableByDevices(&by));
  ASSERT_EQ(by.num_devices, 1u);
  EXPECT_EQ(by.devices[0], devices[0]);
  auto am = NM_ARGS(PJRT_Client_AddressableMemories_Args);
  am.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_AddressableMemories(&am));
  EXPECT_GE(am.num_addressable_memories, 4u);

  auto ms = NM_ARGS(PJRT_Device_MemoryStats_Args);
  ms.device = devices[0];
  ASSERT_PJRT_OK(g_api->PJRT_Device_MemoryStats(&ms));
  EXPECT_TRUE(ms.bytes_limit_is_set);
  EXPECT_EQ(ms.bytes_limit, 16 << 20);

  int assignment[2] = {-1, -1};
  auto da = NM_ARGS(PJRT_Client_DefaultDeviceAssignment_Args);
  da.client = client_;
  da.num_replicas = 2;
  da.num_partitions = 1;
  da.default_assignment_size = 2;
  da.default_assignment = assignment;
  ASSERT_PJRT_OK(g_api->PJRT_Client_DefaultDeviceAssignment(&da));
  EXPECT_EQ(assignment[0], 0);
  EXPECT_EQ(assignment[1], 1);
  da.num_replicas = 3;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_DefaultDeviceAssignment(&da)).code, PJRT_Error_Code_INVALID_ARGUMENT);
}

TEST_F(PjrtTest, ClientTopology) {
  auto t = NM_ARGS(PJRT_Client_TopologyDescription_Args);
  t.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_TopologyDescription(&t));
  auto pn = NM_ARGS(PJRT_TopologyDescription_PlatformName_Args);
  pn.topology = t.topology;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_PlatformName(&pn));
  EXPECT_EQ(Str(pn.platform_name, pn.platform_name_size), "neuron");
  auto dd = NM_ARGS(PJRT_TopologyDescription_GetDeviceDescriptions_Args);
  dd.topology = t.topology;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_GetDeviceDescriptions(&dd));
  ASSERT_EQ(dd.num_descriptions, 2u);
  auto id = NM_ARGS(PJRT_DeviceDescription_Id_Args);
  id.device_description = dd.descriptions[1];
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_Id(&id));
  EXPECT_EQ(id.id, 1);
  auto d = NM_ARGS(PJRT_TopologyDescription_Destroy_Args);
  d.topology = t.topology;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Destroy(&d));  // the client's: it stays
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_PlatformName(&pn));
}

std::string DescriptionString(PJRT_DeviceDescription* d) {
  auto s = NM_ARGS(PJRT_DeviceDescription_ToString_Args);
  s.device_description = d;
  EXPECT_PJRT_OK(g_api->PJRT_DeviceDescription_ToString(&s));
  return Str(s.to_string, s.to_string_size);
}

// A topology without a client: Create with options, its getters, Serialize / Deserialize, Fingerprint.
TEST_F(PjrtTest, TopologyWithoutAClient) {
  const PJRT_NamedValue opts[2] = {IntOption("num_cores", 3), IntOption("num_processes", 2)};
  auto c = NM_ARGS(PJRT_TopologyDescription_Create_Args);
  c.topology_name = "neuron";
  c.topology_name_size = 6;
  c.create_options = opts;
  c.num_options = 2;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Create(&c));
  PJRT_TopologyDescription* t = c.topology;
  ASSERT_NE(t, nullptr);
  auto pn = NM_ARGS(PJRT_TopologyDescription_PlatformName_Args);
  pn.topology = t;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_PlatformName(&pn));
  EXPECT_EQ(Str(pn.platform_name, pn.platform_name_size), "neuron");
  auto pv = NM_ARGS(PJRT_TopologyDescription_PlatformVersion_Args);
  pv.topology = t;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_PlatformVersion(&pv));
  auto cv = NM_ARGS(PJRT_Client_PlatformVersion_Args);
  cv.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_PlatformVersion(&cv));
  EXPECT_EQ(Str(pv.platform_version, pv.platform_version_size), Str(cv.platform_version, cv.platform_version_size));
  // Six NeuronCores: process p, local l has id 3p + l.
  auto dd = NM_ARGS(PJRT_TopologyDescription_GetDeviceDescriptions_Args);
  dd.topology = t;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_GetDeviceDescriptions(&dd));
  ASSERT_EQ(dd.num_descriptions, 6u);
  EXPECT_EQ(DescriptionString(dd.descriptions[4]), "NeuronCore(id=4, process_index=1, local_id=1)");
  auto pi = NM_ARGS(PJRT_DeviceDescription_ProcessIndex_Args);
  pi.device_description = dd.descriptions[5];
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_ProcessIndex(&pi));
  EXPECT_EQ(pi.process_index, 1);
  auto kind = NM_ARGS(PJRT_DeviceDescription_Kind_Args);
  kind.device_description = dd.descriptions[0];
  ASSERT_PJRT_OK(g_api->PJRT_DeviceDescription_Kind(&kind));
  EXPECT_EQ(Str(kind.device_kind, kind.device_kind_size), "NC_v2");
  auto at = NM_ARGS(PJRT_TopologyDescription_Attributes_Args);
  at.topology = t;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Attributes(&at));
  ASSERT_EQ(at.num_attributes, 2u);
  EXPECT_EQ(Str(at.attributes[0].name, at.attributes[0].name_size), "num_cores");
  EXPECT_EQ(at.attributes[0].int64_value, 3);
  EXPECT_EQ(at.attributes[1].int64_value, 2);

  // Serialize -> Deserialize: the same topology, the same fingerprint.
  auto s = NM_ARGS(PJRT_TopologyDescription_Serialize_Args);
  s.topology = t;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Serialize(&s));
  const std::string bytes(s.serialized_bytes, s.serialized_bytes_size);
  s.serialized_topology_deleter(s.serialized_topology);
  auto ds = NM_ARGS(PJRT_TopologyDescription_Deserialize_Args);
  ds.serialized_topology = bytes.data();
  ds.serialized_topology_size = bytes.size();
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Deserialize(&ds));
  auto f1 = NM_ARGS(PJRT_TopologyDescription_Fingerprint_Args);
  f1.topology = t;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Fingerprint(&f1));
  auto f2 = NM_ARGS(PJRT_TopologyDescription_Fingerprint_Args);
  f2.topology = ds.topology;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Fingerprint(&f2));
  EXPECT_EQ(f1.fingerprint, f2.fingerprint);
  dd.topology = ds.topology;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_GetDeviceDescriptions(&dd));
  EXPECT_EQ(dd.num_descriptions, 6u);
  // The client's topology (two cores, one process) differs.
  auto ct = NM_ARGS(PJRT_Client_TopologyDescription_Args);
  ct.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_TopologyDescription(&ct));
  f2.topology = ct.topology;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Fingerprint(&f2));
  EXPECT_NE(f1.fingerprint, f2.fingerprint);
  for (PJRT_TopologyDescription* x : {t, ds.topology}) {
    auto d = NM_ARGS(PJRT_TopologyDescription_Destroy_Args);
    d.topology = x;
    ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Destroy(&d));
  }

  // Defaults (no options: two cores, one process); bad names, options and bytes.
  c = NM_ARGS(PJRT_TopologyDescription_Create_Args);
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Create(&c));
  dd.topology = c.topology;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_GetDeviceDescriptions(&dd));
  EXPECT_EQ(dd.num_descriptions, 2u);
  auto d = NM_ARGS(PJRT_TopologyDescription_Destroy_Args);
  d.topology = c.topology;
  ASSERT_PJRT_OK(g_api->PJRT_TopologyDescription_Destroy(&d));
  c.topology_name = "tpu_v5";
  c.topology_name_size = 6;
  Outcome o = Take(g_api, g_api->PJRT_TopologyDescription_Create(&c));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("tpu_v5"), std::string::npos) << o.message;
  EXPECT_EQ(c.topology, nullptr);
  c.topology_name = nullptr;
  c.topology_name_size = 0;
  const PJRT_NamedValue bad[3] = {IntOption("num_cores", 0), IntOption("num_processes", 70000),
                                  IntOption("num_chips", 1)};
  for (const PJRT_NamedValue& b : bad) {
    c.create_options = &b;
    c.num_options = 1;
    o = Take(g_api, g_api->PJRT_TopologyDescription_Create(&c));
    EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << Str(b.name, b.name_size);
    EXPECT_NE(o.message.find(Str(b.name, b.name_size)), std::string::npos) << o.message;
  }
  for (const std::string& junk : {std::string("neuron-topology num_cores=2"), std::string("garbage"),
                                  std::string("neuron-topology num_cores=2 num_processes=1 extra"),
                                  std::string("neuron-topology num_cores=0 num_processes=1")}) {
    ds.serialized_topology = junk.data();
    ds.serialized_topology_size = junk.size();
    o = Take(g_api, g_api->PJRT_TopologyDescription_Deserialize(&ds));
    EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << junk;
    EXPECT_EQ(ds.topology, nullptr);
  }
}

// argument_placement = "auto_copy": an argument outside its parameter's kind is copied there.
TEST_F(PjrtTest, AutoCopyPlacementOption) {
  PJRT_NamedValue o{};
  o.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  o.name = "argument_placement";
  o.name_size = std::strlen(o.name);
  o.type = PJRT_NamedValue_kString;
  o.string_value = "auto_copy";
  o.value_size = std::strlen(o.string_value);
  auto cc = NM_ARGS(PJRT_Client_Create_Args);
  cc.create_options = &o;
  cc.num_options = 1;
  ASSERT_PJRT_OK(g_api->PJRT_Client_Create(&cc));
  PJRT_Client* c = cc.client;
  PJRT_LoadedExecutable* le = nullptr;
  Outcome r = Compile(kPinned, "", &le, "mlir", c);
  ASSERT_EQ(r.code, PJRT_Error_Code_OK) << r.message;
  PJRT_Device* d0 = Devices(c)[0];
  PJRT_Buffer* d =
      Upload({1, 2, 3, 4}, {4}, d0, nullptr, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, nullptr, c);
  std::vector<std::vector<PJRT_Buffer*>> out;
  r = Execute(le, {{d, d}}, 2, &out);  // the first parameter is pinned_host: copied there
  ASSERT_EQ(r.code, PJRT_Error_Code_OK) << r.message;
  EXPECT_EQ(Read(out[0][0]), (std::vector<float>{1, 4, 9, 16}));
  EXPECT_EQ(Kind(MemoryOf(out[0][0])), "pinned_host");
  for (PJRT_Buffer* b : {d, out[0][0], out[0][1]}) DestroyBuffer(b);
  DestroyExecutable(le);
  ASSERT_PJRT_OK(DestroyClient(c));
  o.string_value = "sometimes";
  o.value_size = std::strlen(o.string_value);
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_Create(&cc)).code, PJRT_Error_Code_INVALID_ARGUMENT);
}

TEST_F(PjrtTest, MemoryDescriptionsExtension) {
  const PJRT_MemoryDescriptions_Extension* ext = nullptr;
  for (const PJRT_Extension_Base* e = g_api->extension_start; e; e = e->next)
    if (e->type == PJRT_Extension_Type_MemoryDescriptions)
      ext = reinterpret_cast<const PJRT_MemoryDescriptions_Extension*>(e);
  ASSERT_NE(ext, nullptr);
  auto gd = NM_ARGS(PJRT_Device_GetDescription_Args);
  gd.device = Devices(client_)[1];
  ASSERT_PJRT_OK(g_api->PJRT_Device_GetDescription(&gd));
  auto md = NM_ARGS(PJRT_DeviceDescription_MemoryDescriptions_Args);
  md.device_description = gd.device_description;
  ASSERT_PJRT_OK(ext->PJRT_DeviceDescription_MemoryDescriptions(&md));
  ASSERT_EQ(md.num_memory_descriptions, 2u);
  EXPECT_EQ(md.default_memory_index, 0u);
  std::vector<std::string> kinds;
  for (size_t i = 0; i < md.num_memory_descriptions; ++i) {
    auto k = NM_ARGS(PJRT_MemoryDescription_Kind_Args);
    k.memory_description = md.memory_descriptions[i];
    ASSERT_PJRT_OK(ext->PJRT_MemoryDescription_Kind(&k));
    kinds.push_back(Str(k.kind, k.kind_size));
    EXPECT_EQ(k.kind_id, static_cast<int>(i));
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"device", "pinned_host"}));
}

// ---- buffers

TEST_F(PjrtTest, UploadsWithEverySemanticsReadBack) {
  PJRT_Device* d0 = Devices(client_)[0];
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  for (PJRT_HostBufferSemantics s :
       {PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
        PJRT_HostBufferSemantics_kImmutableZeroCopy, PJRT_HostBufferSemantics_kMutableZeroCopy}) {
    PJRT_Buffer* b = Upload(v, {2, 3}, d0, nullptr, s);
    ASSERT_NE(b, nullptr) << s;
    EXPECT_EQ(Read(b), v) << s;
    DestroyBuffer(b);
  }
}

TEST_F(PjrtTest, BufferQueriesCopiesAndDelete) {
  std::vector<PJRT_Device*> devices = Devices(client_);
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  PJRT_Buffer* b = Upload(v, {2, 3}, devices[0]);
  ASSERT_NE(b, nullptr);
  auto et = NM_ARGS(PJRT_Buffer_ElementType_Args);
  et.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_ElementType(&et));
  EXPECT_EQ(et.type, PJRT_Buffer_Type_F32);
  auto dims = NM_ARGS(PJRT_Buffer_Dimensions_Args);
  dims.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Dimensions(&dims));
  ASSERT_EQ(dims.num_dims, 2u);
  EXPECT_EQ(dims.dims[0], 2);
  EXPECT_EQ(dims.dims[1], 3);
  auto ud = NM_ARGS(PJRT_Buffer_UnpaddedDimensions_Args);
  ud.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_UnpaddedDimensions(&ud));
  EXPECT_EQ(ud.num_dims, 2u);
  auto dd = NM_ARGS(PJRT_Buffer_DynamicDimensionIndices_Args);
  dd.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_DynamicDimensionIndices(&dd));
  EXPECT_EQ(dd.num_dynamic_dims, 0u);
  auto sz = NM_ARGS(PJRT_Buffer_OnDeviceSizeInBytes_Args);
  sz.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_OnDeviceSizeInBytes(&sz));
  EXPECT_EQ(sz.on_device_size_in_bytes, 24u);
  auto dev = NM_ARGS(PJRT_Buffer_Device_Args);
  dev.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Device(&dev));
  EXPECT_EQ(dev.device, devices[0]);
  EXPECT_EQ(Kind(MemoryOf(b)), "device");
  auto cpu = NM_ARGS(PJRT_Buffer_IsOnCpu_Args);
  cpu.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_IsOnCpu(&cpu));
  EXPECT_FALSE(cpu.is_on_cpu);
  auto lay = NM_ARGS(PJRT_Buffer_GetMemoryLayout_Args);
  lay.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_GetMemoryLayout(&lay));
  ASSERT_EQ(lay.layout.type, PJRT_Buffer_MemoryLayout_Type_Tiled);
  ASSERT_EQ(lay.layout.tiled.minor_to_major_size, 2u);
  EXPECT_EQ(lay.layout.tiled.minor_to_major[0], 1);
  auto ready = NM_ARGS(PJRT_Buffer_ReadyEvent_Args);
  ready.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_ReadyEvent(&ready));
  Await(ready.event);
  // The bytes' address: the software NeuronCore's memories are host memory, so it reads as the data.
  auto ptr = NM_ARGS(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args);
  ptr.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&ptr));
  ASSERT_NE(ptr.device_memory_ptr, nullptr);
  EXPECT_EQ(
      std::vector<float>(static_cast<float*>(ptr.device_memory_ptr), static_cast<float*>(ptr.device_memory_ptr) + 6),
      v);
  auto up = NM_ARGS(PJRT_Buffer_UnsafePointer_Args);
  up.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_UnsafePointer(&up));
  EXPECT_EQ(up.buffer_pointer, reinterpret_cast<uintptr_t>(ptr.device_memory_ptr));
  auto inc = NM_ARGS(PJRT_Buffer_IncreaseExternalReferenceCount_Args);
  inc.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_IncreaseExternalReferenceCount(&inc));
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_IncreaseExternalReferenceCount(&inc));
  auto dec = NM_ARGS(PJRT_Buffer_DecreaseExternalReferenceCount_Args);
  dec.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_DecreaseExternalReferenceCount(&dec));
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_DecreaseExternalReferenceCount(&dec));
  EXPECT_EQ(Take(g_api, g_api->PJRT_Buffer_DecreaseExternalReferenceCount(&dec)).code,
            PJRT_Error_Code_FAILED_PRECONDITION);

  auto cd = NM_ARGS(PJRT_Buffer_CopyToDevice_Args);
  cd.buffer = b;
  cd.dst_device = devices[1];
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_CopyToDevice(&cd));
  dev.buffer = cd.dst_buffer;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Device(&dev));
  EXPECT_EQ(dev.device, devices[1]);
  EXPECT_EQ(Read(cd.dst_buffer), v);
  DestroyBuffer(cd.dst_buffer);

  // A too small destination; then delete.
  float small[2];
  auto th = NM_ARGS(PJRT_Buffer_ToHostBuffer_Args);
  th.src = b;
  th.dst = small;
  th.dst_size = sizeof small;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Buffer_ToHostBuffer(&th)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_FALSE(IsDeleted(b));
  auto del = NM_ARGS(PJRT_Buffer_Delete_Args);
  del.buffer = b;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Delete(&del));
  EXPECT_TRUE(IsDeleted(b));
  EXPECT_EQ(Take(g_api, g_api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&ptr)).code,
            PJRT_Error_Code_FAILED_PRECONDITION);
  EXPECT_EQ(Take(g_api, g_api->PJRT_Buffer_IncreaseExternalReferenceCount(&inc)).code,
            PJRT_Error_Code_FAILED_PRECONDITION);
  float all[6];
  th.dst = all;
  th.dst_size = sizeof all;
  Outcome o = Take(g_api, g_api->PJRT_Buffer_ToHostBuffer(&th));
  EXPECT_NE(o.code, PJRT_Error_Code_OK);
  DestroyBuffer(b);
}

TEST_F(PjrtTest, UninitializedBufferInAMemory) {
  PJRT_Memory* pinned = MemoryOfKind(Devices(client_)[1], "pinned_host");
  const int64_t dims[1] = {8};
  auto a = NM_ARGS(PJRT_Client_CreateUninitializedBuffer_Args);
  a.client = client_;
  a.shape_dims = dims;
  a.shape_num_dims = 1;
  a.shape_element_type = PJRT_Buffer_Type_S32;
  a.memory = pinned;
  ASSERT_PJRT_OK(g_api->PJRT_Client_CreateUninitializedBuffer(&a));
  EXPECT_EQ(MemoryOf(a.buffer), pinned);
  auto sz = NM_ARGS(PJRT_Buffer_OnDeviceSizeInBytes_Args);
  sz.buffer = a.buffer;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_OnDeviceSizeInBytes(&sz));
  EXPECT_EQ(sz.on_device_size_in_bytes, 32u);
  DestroyBuffer(a.buffer);
  a.memory = nullptr;  // no target
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_CreateUninitializedBuffer(&a)).code, PJRT_Error_Code_INVALID_ARGUMENT);
}

TEST_F(PjrtTest, ByteStridesUploadATransposedHostArray) {
  // Host memory holds the 3x2 transpose; byte_strides read it as the 2x3 array {1,2,3},{4,5,6}.
  const std::vector<float> host = {1, 4, 2, 5, 3, 6};
  const int64_t strides[2] = {4, 8};
  PJRT_Buffer* b =
      Upload(host, {2, 3}, Devices(client_)[0], nullptr, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, strides);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Read(b), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  DestroyBuffer(b);
}

TEST_F(PjrtTest, SubByteTypesUploadExecuteAndReadBack) {
  PJRT_Device* d0 = Devices(client_)[0];
  // Unpacked host bytes, the value in the low bits; the high bits are ignored (as PJRT's packing ignores them).
  // s4 {-1, 7, -8, 3, 2, -2}; ByteStrides read the 2x3 array from its 3x2 transpose.
  const std::vector<uint8_t> s4_t = {0x0f, 0x13, 0x07, 0x02, 0xf8, 0x1e};
  const int64_t s4_strides[2] = {1, 2};
  PJRT_Buffer* a = UploadBytes(client_, d0, PJRT_Buffer_Type_S4, s4_t, {2, 3}, s4_strides);
  // f4E2M1FN {1.0, 6.0, -0.5, -6.0}: 0x2, 0x7, 0x9, 0xf.
  PJRT_Buffer* b = UploadBytes(client_, d0, PJRT_Buffer_Type_F4E2M1FN, {0xf2, 0x07, 0x09, 0x6f}, {4});
  // u2 {3, 1}.
  PJRT_Buffer* c = UploadBytes(client_, d0, PJRT_Buffer_Type_U2, {0x07, 0xfd}, {2});
  ASSERT_TRUE(a && b && c);

  // Queries: the type, one byte per element on the device, the canonical bytes (s4 sign-extended).
  auto et = NM_ARGS(PJRT_Buffer_ElementType_Args);
  et.buffer = a;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_ElementType(&et));
  EXPECT_EQ(et.type, PJRT_Buffer_Type_S4);
  auto sz = NM_ARGS(PJRT_Buffer_OnDeviceSizeInBytes_Args);
  sz.buffer = a;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_OnDeviceSizeInBytes(&sz));
  EXPECT_EQ(sz.on_device_size_in_bytes, 6u);
  EXPECT_EQ(ReadBytes(a), (std::vector<uint8_t>{0xff, 0x07, 0xf8, 0x03, 0x02, 0xfe}));
  EXPECT_EQ(ReadBytes(b), (std::vector<uint8_t>{0x2, 0x7, 0x9, 0xf}));
  EXPECT_EQ(ReadBytes(c), (std::vector<uint8_t>{3, 1}));

  const std::string program = R"(module @sub_byte {
  func.func @main(%a: tensor<2x3xi4>, %b: tensor<4xf4E2M1FN>, %c: tensor<2xui2>)
      -> (tensor<2x3xi4>, tensor<4xf32>, tensor<2xui2>, tensor<2xf4E2M1FN>) {
    %0 = stablehlo.add %a, %a : tensor<2x3xi4>
    %1 = stablehlo.convert %b : (tensor<4xf4E2M1FN>) -> tensor<4xf32>
    %2 = stablehlo.add %c, %c : tensor<2xui2>
    %3 = stablehlo.slice %b [0:2] : (tensor<4xf4E2M1FN>) -> tensor<2xf4E2M1FN>
    return %0, %1, %2, %3 : tensor<2x3xi4>, tensor<4xf32>, tensor<2xui2>, tensor<2xf4E2M1FN>
  }
})";
  PJRT_LoadedExecutable* le = CompileOk(program);
  ASSERT_NE(le, nullptr);
  PJRT_Executable* exe = GetExecutable(le);
  auto types = NM_ARGS(PJRT_Executable_OutputElementTypes_Args);
  types.executable = exe;
  ASSERT_PJRT_OK(g_api->PJRT_Executable_OutputElementTypes(&types));
  ASSERT_EQ(types.num_output_types, 4u);
  EXPECT_EQ(types.output_types[0], PJRT_Buffer_Type_S4);
  EXPECT_EQ(types.output_types[2], PJRT_Buffer_Type_U2);
  EXPECT_EQ(types.output_types[3], PJRT_Buffer_Type_F4E2M1FN);
  DestroyExe(exe);
  std::vector<std::vector<PJRT_Buffer*>> out;
  Outcome o = Execute(le, {{a, b, c}}, 4, &out, {}, d0);
  ASSERT_EQ(o.code, PJRT_Error_Code_OK) << o.message;
  // s4: {-2, 14, -16, 6, 4, -4} wrapped to 4 bits = {-2, -2, 0, 6, 4, -4}; u2: {6, 2} wrapped = {2, 2}.
  EXPECT_EQ(ReadBytes(out[0][0]), (std::vector<uint8_t>{0xfe, 0xfe, 0x00, 0x06, 0x04, 0xfc}));
  EXPECT_EQ(AsFloats(ReadBytes(out[0][1])), (std::vector<float>{1.0f, 6.0f, -0.5f, -6.0f}));
  EXPECT_EQ(ReadBytes(out[0][2]), (std::vector<uint8_t>{2, 2}));
  EXPECT_EQ(ReadBytes(out[0][3]), (std::vector<uint8_t>{0x2, 0x7}));
  for (PJRT_Buffer* r : out[0]) DestroyBuffer(r);
  DestroyExecutable(le);

  // Every sub-byte type uploads (with each semantics) and read back canonical.
  struct Case {
    PJRT_Buffer_Type type;
    std::vector<uint8_t> in, canonical;
  };
  const Case cases[] = {
      {PJRT_Buffer_Type_S2, {0x03, 0x02, 0x41}, {0xff, 0xfe, 0x01}},
      {PJRT_Buffer_Type_U4, {0xff, 0x10, 0x0a}, {0x0f, 0x00, 0x0a}},
      {PJRT_Buffer_Type_S4, {0x08, 0x17, 0xf0}, {0xf8, 0x07, 0x00}},
      {PJRT_Buffer_Type_U2, {0x04, 0x07, 0x02}, {0x00, 0x03, 0x02}},
      {PJRT_Buffer_Type_F4E2M1FN, {0x1f, 0xf0, 0x08}, {0x0f, 0x00, 0x08}},
  };
  for (const Case& k : cases) {
    for (PJRT_HostBufferSemantics s :
         {PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, PJRT_HostBufferSemantics_kImmutableZeroCopy,
          PJRT_HostBufferSemantics_kMutableZeroCopy}) {
      PJRT_Buffer* x = UploadBytes(client_, d0, k.type, k.in, {3}, nullptr, s);
      ASSERT_NE(x, nullptr) << k.type;
      EXPECT_EQ(ReadBytes(x), k.canonical) << k.type << " semantics " << s;
      DestroyBuffer(x);
    }
  }
  DestroyBuffer(a);
  DestroyBuffer(b);
  DestroyBuffer(c);
}

TEST_F(PjrtTest, BitcastAndCopyRawToHost) {
  PJRT_Device* d0 = Devices(client_)[0];
  PJRT_Buffer* f = Upload({1.0f, -2.0f, 0.5f, 3.0f, 0.0f, 8.0f}, {2, 3}, d0);
  ASSERT_NE(f, nullptr);

  // CopyRawToHost: the device bytes from an offset (f32 1 .. -2 .. 0.5 as written).
  std::vector<float> raw(2);
  auto r = NM_ARGS(PJRT_Buffer_CopyRawToHost_Args);
  r.buffer = f;
  r.dst = raw.data();
  r.offset = 4;
  r.transfer_size = 8;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_CopyRawToHost(&r));
  Await(r.event);
  EXPECT_EQ(raw, (std::vector<float>{-2.0f, 0.5f}));
  r.offset = 20;  // past the end
  Outcome o = Take(g_api, g_api->PJRT_Buffer_CopyRawToHost(&r));
  EXPECT_EQ(o.code, PJRT_Error_Code_OUT_OF_RANGE) << o.message;

  // f32[2,3] -> u32[3,2]: the same bytes, the source deleted; the new buffer reads the bit patterns.
  const int64_t u_dims[2] = {3, 2};
  auto bc = NM_ARGS(PJRT_Buffer_Bitcast_Args);
  bc.buffer = f;
  bc.element_type = PJRT_Buffer_Type_U32;
  bc.dims = u_dims;
  bc.num_dims = 2;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Bitcast(&bc));
  PJRT_Buffer* u = bc.out_buffer;
  ASSERT_NE(u, nullptr);
  EXPECT_TRUE(IsDeleted(f));
  EXPECT_FALSE(IsDeleted(u));
  auto dims = NM_ARGS(PJRT_Buffer_Dimensions_Args);
  dims.buffer = u;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Dimensions(&dims));
  ASSERT_EQ(dims.num_dims, 2u);
  EXPECT_EQ(dims.dims[0], 3);
  EXPECT_EQ(dims.dims[1], 2);
  const std::vector<uint8_t> bits = ReadBytes(u);
  uint32_t first = 0;
  std::memcpy(&first, bits.data(), 4);
  EXPECT_EQ(first, 0x3f800000u);                     // 1.0f
  o = Take(g_api, g_api->PJRT_Buffer_Bitcast(&bc));  // the source is gone
  EXPECT_EQ(o.code, PJRT_Error_Code_FAILED_PRECONDITION) << o.message;

  // Refused: another size, PRED or a sub-byte type from other bytes, a tiled layout, no type. u stays usable.
  bc.buffer = u;
  const int64_t five[1] = {5};
  bc.dims = five;
  bc.num_dims = 1;
  o = Take(g_api, g_api->PJRT_Buffer_Bitcast(&bc));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("bytes"), std::string::npos) << o.message;
  const int64_t n24[1] = {24};
  bc.dims = n24;
  bc.element_type = PJRT_Buffer_Type_S4;
  o = Take(g_api, g_api->PJRT_Buffer_Bitcast(&bc));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("canonical"), std::string::npos) << o.message;
  bc.element_type = PJRT_Buffer_Type_PRED;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Buffer_Bitcast(&bc)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  bc.element_type = PJRT_Buffer_Type_U8;
  const int64_t m2t[1] = {0};
  auto tiled = NM_ARGS(PJRT_Buffer_MemoryLayout);
  tiled.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  tiled.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  tiled.tiled.minor_to_major = m2t;
  tiled.tiled.minor_to_major_size = 1;
  const int64_t tile[1] = {8};
  const size_t tile_sizes[1] = {1};
  tiled.tiled.tile_dims = tile;
  tiled.tiled.tile_dim_sizes = tile_sizes;
  tiled.tiled.num_tiles = 1;
  bc.device_layout = &tiled;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Buffer_Bitcast(&bc)).code, PJRT_Error_Code_UNIMPLEMENTED);
  bc.device_layout = nullptr;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Bitcast(&bc));  // u32[3,2] -> u8[24]: fine
  PJRT_Buffer* bytes = bc.out_buffer;
  EXPECT_EQ(ReadBytes(bytes), bits);
  EXPECT_TRUE(IsDeleted(u));

  // A sub-byte buffer reshapes.
  PJRT_Buffer* s4 = UploadBytes(client_, d0, PJRT_Buffer_Type_S4, {1, 2, 3, 4}, {2, 2});
  bc.buffer = s4;
  bc.element_type = PJRT_Buffer_Type_S4;
  const int64_t four[1] = {4};
  bc.dims = four;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Bitcast(&bc));
  EXPECT_EQ(ReadBytes(bc.out_buffer), (std::vector<uint8_t>{1, 2, 3, 4}));
  DestroyBuffer(bc.out_buffer);
  DestroyBuffer(s4);
  DestroyBuffer(bytes);
  DestroyBuffer(u);
  DestroyBuffer(f);
}

const PJRT_Layouts_Extension* Layouts() {
  for (const PJRT_Extension_Base* e = g_api->extension_start; e; e = e->next)
    if (e->type == PJRT_Extension_Type_Layouts) return reinterpret_cast<const PJRT_Layouts_Extension*>(e);
  return nullptr;
}

// The serialized form of a layout (an xla.LayoutProto), the layout destroyed unless `keep`.
std::string Serialized(const PJRT_Layouts_Extension* ext, PJRT_Layouts_MemoryLayout* layout, bool keep = false) {
  auto s = NM_ARGS(PJRT_Layouts_MemoryLayout_Serialize_Args);
  s.layout = layout;
  EXPECT_PJRT_OK(ext->PJRT_Layouts_MemoryLayout_Serialize(&s));
  std::string bytes(s.serialized_bytes, s.serialized_bytes_size);
  if (s.serialized_layout_deleter) s.serialized_layout_deleter(s.serialized_layout);
  if (!keep) {
    auto d = NM_ARGS(PJRT_Layouts_MemoryLayout_Destroy_Args);
    d.layout = layout;
    EXPECT_PJRT_OK(ext->PJRT_Layouts_MemoryLayout_Destroy(&d));
  }
  return bytes;
}

TEST_F(PjrtTest, LayoutsExtension) {
  const PJRT_Layouts_Extension* ext = Layouts();
  ASSERT_NE(ext, nullptr);
  EXPECT_GE(ext->base.struct_size, static_cast<size_t>(PJRT_Layouts_Extension_STRUCT_SIZE));
  // The client's default layout: dense major-to-minor, an xla.LayoutProto {minor_to_major: [2, 1, 0]}.
  const int64_t dims[3] = {2, 3, 4};
  auto g = NM_ARGS(PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args);
  g.client = client_;
  g.type = PJRT_Buffer_Type_F32;
  g.dims = dims;
  g.num_dims = 3;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&g));
  EXPECT_EQ(Serialized(ext, g.layout), std::string("\x0a\x03\x02\x01\x00", 5));
  g.num_dims = 0;  // a scalar: the empty message
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&g));
  EXPECT_EQ(Serialized(ext, g.layout), "");
  g.type = PJRT_Buffer_Type_S4;  // sub-byte types too (one element per byte)
  g.num_dims = 1;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&g));
  EXPECT_EQ(Serialized(ext, g.layout), std::string("\x0a\x01\x00", 3));
  // Bad input: no type, a negative dimension, NULL client.
  const int32_t no_type = 999;
  std::memcpy(&g.type, &no_type, sizeof no_type);
  Outcome o = Take(g_api, ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&g));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(g.layout, nullptr);
  g.type = PJRT_Buffer_Type_F32;
  const int64_t negative[1] = {-3};
  g.dims = negative;
  EXPECT_EQ(Take(g_api, ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&g)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  g.client = nullptr;
  EXPECT_EQ(Take(g_api, ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&g)).code, PJRT_Error_Code_INVALID_ARGUMENT);

  // The topology's default layout is the client's.
  auto tp = NM_ARGS(PJRT_Client_TopologyDescription_Args);
  tp.client = client_;
  ASSERT_PJRT_OK(g_api->PJRT_Client_TopologyDescription(&tp));
  auto t = NM_ARGS(PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args);
  t.topology_description = tp.topology;
  t.type = PJRT_Buffer_Type_BF16;
  t.dims = dims;
  t.num_dims = 2;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Topology_GetDefaultLayout(&t));
  EXPECT_EQ(Serialized(ext, t.layout), std::string("\x0a\x02\x01\x00", 4));

  // A buffer's layout.
  PJRT_Buffer* b = Upload({1, 2, 3, 4, 5, 6}, {2, 3}, Devices(client_)[0]);
  auto bl = NM_ARGS(PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args);
  bl.buffer = b;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Buffer_MemoryLayout(&bl));
  EXPECT_EQ(Serialized(ext, bl.layout), std::string("\x0a\x02\x01\x00", 4));

  // A tiled host layout is refused with a status, not followed.
  const int64_t m2t[2] = {1, 0};
  const int64_t tile[2] = {8, 128};
  const size_t tile_sizes[1] = {2};
  auto tiled = NM_ARGS(PJRT_Buffer_MemoryLayout);
  tiled.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  tiled.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  tiled.tiled.minor_to_major = m2t;
  tiled.tiled.minor_to_major_size = 2;
  tiled.tiled.tile_dims = tile;
  tiled.tiled.tile_dim_sizes = tile_sizes;
  tiled.tiled.num_tiles = 1;
  std::vector<float> host(6);
  auto th = NM_ARGS(PJRT_Buffer_ToHostBuffer_Args);
  th.src = b;
  th.host_layout = &tiled;
  th.dst = host.data();
  th.dst_size = 24;
  o = Take(g_api, g_api->PJRT_Buffer_ToHostBuffer(&th));
  EXPECT_EQ(o.code, PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_NE(o.message.find("dense major-to-minor"), std::string::npos) << o.message;
  DestroyBuffer(b);

  // An executable's output layouts, owned by the executable (Destroy on one leaves it).
  PJRT_LoadedExecutable* le = nullptr;
  o = Compile(R"(module @layouts {
  func.func @main(%a: tensor<2x3xf32> {mhlo.layout_mode = "default"})
      -> (tensor<2x3xf32> {mhlo.layout_mode = "{1,0}"}, tensor<f32>) {
    %c = stablehlo.constant dense<1.0> : tensor<f32>
    return %a, %c : tensor<2x3xf32>, tensor<f32>
  }
})",
              "", &le);
  ASSERT_EQ(o.code, PJRT_Error_Code_OK) << o.message;
  PJRT_Executable* exe = GetExecutable(le);
  auto ol = NM_ARGS(PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args);
  ol.executable = exe;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Executable_GetOutputLayouts(&ol));
  ASSERT_EQ(ol.num_outputs, 2u);
  EXPECT_EQ(Serialized(ext, ol.layouts[0]), std::string("\x0a\x02\x01\x00", 4));  // Destroy leaves it
  EXPECT_EQ(Serialized(ext, ol.layouts[1], true), "");
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Executable_GetOutputLayouts(&ol));  // the same objects again
  EXPECT_EQ(Serialized(ext, ol.layouts[0], true), std::string("\x0a\x02\x01\x00", 4));
  DestroyExe(exe);
  DestroyExecutable(le);

  // A program asking for another layout (column-major, or a tiled one) is refused at compile.
  for (const char* mode : {"{0,1}", "{1,0:T(8,128)}"}) {
    o = Compile(std::string(R"(func.func @main(%a: tensor<2x3xf32> {mhlo.layout_mode = ")") + mode +
                    R"("}) -> tensor<2x3xf32> {
  return %a : tensor<2x3xf32>
})",
                "", &le);
    EXPECT_EQ(o.code, PJRT_Error_Code_UNIMPLEMENTED) << mode;
    EXPECT_NE(o.message.find("layout_mode"), std::string::npos) << o.message;
    EXPECT_EQ(le, nullptr);
  }
}

// ---- compile and execute

TEST_F(PjrtTest, PrettyAndGenericFormsCompileAndRun) {
  PJRT_Device* d0 = Devices(client_)[0];
  for (const char* text : {kAddPretty, kAddGeneric, kAddGenericFuncReturn}) {
    PJRT_LoadedExecutable* le = CompileOk(text);
    ASSERT_NE(le, nullptr);
    PJRT_Executable* e = GetExecutable(le);
    auto name = NM_ARGS(PJRT_Executable_Name_Args);
    name.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_Name(&name));
    EXPECT_EQ(Str(name.executable_name, name.executable_name_size), text == kAddPretty    ? "add_pretty"
                                                                    : text == kAddGeneric ? "add_generic"
                                                                                          : "add_func_return");
    auto no = NM_ARGS(PJRT_Executable_NumOutputs_Args);
    no.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_NumOutputs(&no));
    EXPECT_EQ(no.num_outputs, 1u);
    auto types = NM_ARGS(PJRT_Executable_OutputElementTypes_Args);
    types.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_OutputElementTypes(&types));
    ASSERT_EQ(types.num_output_types, 1u);
    EXPECT_EQ(types.output_types[0], PJRT_Buffer_Type_F32);
    auto od = NM_ARGS(PJRT_Executable_OutputDimensions_Args);
    od.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_OutputDimensions(&od));
    ASSERT_EQ(od.num_outputs, 1u);
    ASSERT_EQ(od.dim_sizes[0], 2u);
    EXPECT_EQ(od.dims[0], 2);
    EXPECT_EQ(od.dims[1], 3);
    auto nr = NM_ARGS(PJRT_Executable_NumReplicas_Args);
    nr.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_NumReplicas(&nr));
    EXPECT_EQ(nr.num_replicas, 1u);
    auto np = NM_ARGS(PJRT_Executable_NumPartitions_Args);
    np.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_NumPartitions(&np));
    EXPECT_EQ(np.num_partitions, 1u);
    auto fp = NM_ARGS(PJRT_Executable_Fingerprint_Args);
    fp.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_Fingerprint(&fp));
    EXPECT_EQ(fp.executable_fingerprint_size, 16u);
    auto lfp = NM_ARGS(PJRT_LoadedExecutable_Fingerprint_Args);
    lfp.executable = le;
    ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_Fingerprint(&lfp));
    EXPECT_EQ(Str(lfp.executable_fingerprint, lfp.executable_fingerprint_size),
              Str(fp.executable_fingerprint, fp.executable_fingerprint_size));
    auto ms = NM_ARGS(PJRT_Executable_GetCompiledMemoryStats_Args);
    ms.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_GetCompiledMemoryStats(&ms));
    EXPECT_EQ(ms.argument_size_in_bytes, 48);
    EXPECT_EQ(ms.output_size_in_bytes, 24);
    auto code = NM_ARGS(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args);
    code.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_SizeOfGeneratedCodeInBytes(&code));
    auto ca = NM_ARGS(PJRT_Executable_GetCostAnalysis_Args);
    ca.executable = e;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_GetCostAnalysis(&ca));
    auto prog = NM_ARGS(PJRT_Program);
    auto op = NM_ARGS(PJRT_Executable_OptimizedProgram_Args);
    op.executable = e;
    op.program = &prog;
    ASSERT_PJRT_OK(g_api->PJRT_Executable_OptimizedProgram(&op));
    std::string got(prog.code_size, '\0');
    prog.code = got.data();
    ASSERT_PJRT_OK(g_api->PJRT_Executable_OptimizedProgram(&op));
    EXPECT_EQ(got, text);
    EXPECT_EQ(Str(prog.format, prog.format_size), "mlir");
    auto ad = NM_ARGS(PJRT_LoadedExecutable_AddressableDevices_Args);
    ad.executable = le;
    ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_AddressableDevices(&ad));
    ASSERT_EQ(ad.num_addressable_devices, 1u);
    EXPECT_EQ(ad.addressable_devices[0], d0);
    DestroyExe(e);

    PJRT_Buffer* a = Upload({1, 2, 3, 4, 5, 6}, {2, 3}, d0);
    PJRT_Buffer* b = Upload({10, 20, 30, 40, 50, 60}, {2, 3}, d0);
    EXPECT_EQ(ExecuteAndRead(le, {a, b}), (std::vector<float>{11, 22, 33, 44, 55, 66}));
    // The same executable on the other device (execute_device: a portable execution).
    std::vector<std::vector<PJRT_Buffer*>> out1;
    PJRT_Device* d1 = Devices(client_)[1];
    PJRT_Buffer* a1 = Upload({1, 1, 1, 1, 1, 1}, {2, 3}, d1);
    Outcome x = Execute(le, {{a1, a1}}, 1, &out1, {}, d1);
    ASSERT_EQ(x.code, PJRT_Error_Code_OK) << x.message;
    EXPECT_EQ(Read(out1[0][0]), (std::vector<float>(6, 2.0f)));
    auto dev = NM_ARGS(PJRT_Buffer_Device_Args);
    dev.buffer = out1[0][0];
    ASSERT_PJRT_OK(g_api->PJRT_Buffer_Device(&dev));
    EXPECT_EQ(dev.device, d1);
    for (PJRT_Buffer* x2 : {a, b, a1, out1[0][0]}) DestroyBuffer(x2);
    auto del = NM_ARGS(PJRT_LoadedExecutable_Delete_Args);
    del.executable = le;
    ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_Delete(&del));
    auto isd = NM_ARGS(PJRT_LoadedExecutable_IsDeleted_Args);
    isd.executable = le;
    ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_IsDeleted(&isd));
    EXPECT_TRUE(isd.is_deleted);
    DestroyExecutable(le);
  }
}

// Upload into pinned_host through BufferFromHostBuffer with a memory; the graph's parameter and result kinds
// (ParameterMemoryKinds / OutputMemoryKinds); the result materialized in pinned_host; CopyToMemory; read back.
TEST_F(PjrtTest, MemoryKindContractEndToEnd) {
  PJRT_Device* d0 = Devices(client_)[0];
  PJRT_Memory* pinned = MemoryOfKind(d0, "pinned_host");
  PJRT_Memory* device = MemoryOfKind(d0, "device");
  ASSERT_NE(pinned, nullptr);
  PJRT_LoadedExecutable* le = CompileOk(kPinned);
  ASSERT_NE(le, nullptr);
  PJRT_Executable* e = GetExecutable(le);
  auto pk = NM_ARGS(PJRT_Executable_ParameterMemoryKinds_Args);
  pk.executable = e;
  ASSERT_PJRT_OK(g_api->PJRT_Executable_ParameterMemoryKinds(&pk));
  ASSERT_EQ(pk.num_parameters, 2u);
  EXPECT_EQ(Str(pk.memory_kinds[0], pk.memory_kind_sizes[0]), "pinned_host");
  EXPECT_EQ(Str(pk.memory_kinds[1], pk.memory_kind_sizes[1]), "device");
  auto ok = NM_ARGS(PJRT_Executable_OutputMemoryKinds_Args);
  ok.executable = e;
  ASSERT_PJRT_OK(g_api->PJRT_Executable_OutputMemoryKinds(&ok));
  ASSERT_EQ(ok.num_outputs, 2u);
  EXPECT_EQ(Str(ok.memory_kinds[0], ok.memory_kind_sizes[0]), "pinned_host");
  EXPECT_EQ(Str(ok.memory_kinds[1], ok.memory_kind_sizes[1]), "device");
  auto ms = NM_ARGS(PJRT_Executable_GetCompiledMemoryStats_Args);
  ms.executable = e;
  ASSERT_PJRT_OK(g_api->PJRT_Executable_GetCompiledMemoryStats(&ms));
  EXPECT_EQ(ms.host_argument_size_in_bytes, 16);
  EXPECT_EQ(ms.host_output_size_in_bytes, 16);
  DestroyExe(e);

  // Each upload where the graph says: the pinned_host one through the memory, the device one through the device.
  PJRT_Buffer* h = Upload({1, 2, 3, 4}, {4}, d0, pinned);
  PJRT_Buffer* d = Upload({10, 10, 10, 10}, {4}, d0);
  ASSERT_EQ(MemoryOf(h), pinned);
  auto cpu = NM_ARGS(PJRT_Buffer_IsOnCpu_Args);
  cpu.buffer = h;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_IsOnCpu(&cpu));
  EXPECT_TRUE(cpu.is_on_cpu);
  std::vector<std::vector<PJRT_Buffer*>> out;
  Outcome x = Execute(le, {{h, d}}, 2, &out);
  ASSERT_EQ(x.code, PJRT_Error_Code_OK) << x.message;
  EXPECT_EQ(Kind(MemoryOf(out[0][0])), "pinned_host");
  EXPECT_EQ(Kind(MemoryOf(out[0][1])), "device");
  EXPECT_EQ(Read(out[0][0]), (std::vector<float>{10, 20, 30, 40}));
  EXPECT_EQ(Read(out[0][1]), (std::vector<float>{11, 12, 13, 14}));
  auto cm = NM_ARGS(PJRT_Buffer_CopyToMemory_Args);
  cm.buffer = out[0][0];
  cm.dst_memory = device;
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_CopyToMemory(&cm));
  EXPECT_EQ(MemoryOf(cm.dst_buffer), device);
  EXPECT_EQ(Read(cm.dst_buffer), (std::vector<float>{10, 20, 30, 40}));

  // Strict placement (the default): a pinned_host parameter given a device buffer is refused, nothing runs.
  std::vector<std::vector<PJRT_Buffer*>> wrong;
  Outcome refused = Execute(le, {{d, d}}, 2, &wrong);
  EXPECT_NE(refused.code, PJRT_Error_Code_OK);
  EXPECT_NE(refused.message.find("pinned_host"), std::string::npos) << refused.message;
  for (PJRT_Buffer* b : {h, d, out[0][0], out[0][1], cm.dst_buffer}) DestroyBuffer(b);
  DestroyExecutable(le);
}

TEST_F(PjrtTest, DonationAndNonDonatableInputs) {
  PJRT_Device* d0 = Devices(client_)[0];
  PJRT_LoadedExecutable* le = CompileOk(kDonate);
  ASSERT_NE(le, nullptr);
  PJRT_Buffer* a = Upload({1, 2, 3, 4}, {4}, d0);
  PJRT_Buffer* b = Upload({1, 1, 1, 1}, {4}, d0);
  // Opted out: the argument survives.
  EXPECT_EQ(ExecuteAndRead(le, {a, b}, {0}), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_FALSE(IsDeleted(a));
  // Donated: the argument's memory becomes the result's, the argument is deleted.
  EXPECT_EQ(ExecuteAndRead(le, {a, b}), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_TRUE(IsDeleted(a));
  for (PJRT_Buffer* buf : {a, b}) DestroyBuffer(buf);
  DestroyExecutable(le);
}

TEST_F(PjrtTest, MultiDeviceExecuteWithReplicas) {
  std::vector<PJRT_Device*> devices = Devices(client_);
  PJRT_LoadedExecutable* le = CompileOk(kReplica, Options(2, 1));
  ASSERT_NE(le, nullptr);
  auto ad = NM_ARGS(PJRT_LoadedExecutable_AddressableDevices_Args);
  ad.executable = le;
  ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_AddressableDevices(&ad));
  ASSERT_EQ(ad.num_addressable_devices, 2u);
  auto ids = NM_ARGS(PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args);
  ids.executable = le;
  ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_AddressableDeviceLogicalIds(&ids));
  ASSERT_EQ(ids.num_addressable_device_logical_ids, 2u);
  EXPECT_EQ(ids.addressable_device_logical_ids[1].replica, 1);
  EXPECT_EQ(ids.addressable_device_logical_ids[1].partition, 0);
  PJRT_Executable* exe = GetExecutable(le);
  auto co = NM_ARGS(PJRT_Executable_GetCompileOptions_Args);
  co.executable = exe;
  ASSERT_PJRT_OK(g_api->PJRT_Executable_GetCompileOptions(&co));
  EXPECT_EQ(std::string(co.serialized_bytes, co.serialized_bytes_size), Options(2, 1));
  co.serialized_compile_options_deleter(co.serialized_compile_options);
  DestroyExe(exe);
  auto da = NM_ARGS(PJRT_LoadedExecutable_GetDeviceAssignment_Args);
  da.executable = le;
  ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_GetDeviceAssignment(&da));
  // { replica_count: 2, computation_count: 1, computation_devices { replica_device_ids: [0, 1] } }
  EXPECT_EQ(std::string(da.serialized_bytes, da.serialized_bytes_size),
            (std::string{0x08, 2, 0x10, 1, 0x1a, 4, 0x0a, 2, 0, 1}));
  da.serialized_device_assignment_deleter(da.serialized_device_assignment);
  PJRT_Buffer* a0 = Upload({1, 2, 3, 4}, {4}, devices[0]);
  PJRT_Buffer* a1 = Upload({5, 6, 7, 8}, {4}, devices[1]);
  std::vector<std::vector<PJRT_Buffer*>> out;
  Outcome x = Execute(le, {{a0}, {a1}}, 1, &out);
  ASSERT_EQ(x.code, PJRT_Error_Code_OK) << x.message;
  EXPECT_EQ(Read(out[0][0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(Read(out[1][0]), (std::vector<float>{10, 12, 14, 16}));
  auto dev = NM_ARGS(PJRT_Buffer_Device_Args);
  dev.buffer = out[1][0];
  ASSERT_PJRT_OK(g_api->PJRT_Buffer_Device(&dev));
  EXPECT_EQ(dev.device, devices[1]);
  // One device for an executable of two: refused.
  std::vector<std::vector<PJRT_Buffer*>> bad;
  EXPECT_EQ(Execute(le, {{a0}}, 1, &bad).code, PJRT_Error_Code_INVALID_ARGUMENT);
  for (PJRT_Buffer* b : {a0, a1, out[0][0], out[1][0]}) DestroyBuffer(b);
  DestroyExecutable(le);
}

TEST_F(PjrtTest, DeviceAssignmentInCompileOptions) {
  // { executable_build_options { num_replicas: 2, device_assignment { replica_count: 2, computation_count: 1,
  //   computation_devices { replica_device_ids: [0, 1] } } } }
  const std::string identity = {0x1a, 16, 0x20, 2, 0x28, 1, 0x4a, 10, 0x08, 2, 0x10, 1, 0x1a, 4, 0x0a, 2, 0, 1};
  PJRT_LoadedExecutable* le = nullptr;
  Outcome c = Compile(kReplica, identity, &le);
  ASSERT_EQ(c.code, PJRT_Error_Code_OK) << c.message;
  DestroyExecutable(le);
  const std::string swapped = {0x1a, 16, 0x20, 2, 0x28, 1, 0x4a, 10, 0x08, 2, 0x10, 1, 0x1a, 4, 0x0a, 2, 1, 0};
  c = Compile(kReplica, swapped, &le);
  EXPECT_EQ(c.code, PJRT_Error_Code_UNIMPLEMENTED) << c.message;
  EXPECT_EQ(le, nullptr);
  // One device, device 1 (what a frontend sends for a computation placed there): it runs there.
  const std::string on_one = {0x1a, 14, 0x20, 1, 0x28, 1, 0x4a, 8, 0x08, 1, 0x10, 1, 0x1a, 2, 0x08, 1};
  c = Compile(kReplica, on_one, &le);
  ASSERT_EQ(c.code, PJRT_Error_Code_OK) << c.message;
  PJRT_Device* d1 = Devices(client_)[1];
  auto ad = NM_ARGS(PJRT_LoadedExecutable_AddressableDevices_Args);
  ad.executable = le;
  ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_AddressableDevices(&ad));
  ASSERT_EQ(ad.num_addressable_devices, 1u);
  EXPECT_EQ(ad.addressable_devices[0], d1);
  auto da = NM_ARGS(PJRT_LoadedExecutable_GetDeviceAssignment_Args);
  da.executable = le;
  ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_GetDeviceAssignment(&da));
  EXPECT_EQ(std::string(da.serialized_bytes, da.serialized_bytes_size),
            (std::string{0x08, 1, 0x10, 1, 0x1a, 3, 0x0a, 1, 1}));
  da.serialized_device_assignment_deleter(da.serialized_device_assignment);
  PJRT_Buffer* a = Upload({1, 2, 3, 4}, {4}, d1);
  EXPECT_EQ(ExecuteAndRead(le, {a}), (std::vector<float>{2, 4, 6, 8}));
  DestroyBuffer(a);
  DestroyExecutable(le);
}

// A module that asks for two partitions (mhlo.num_partitions) and options that do not say: it runs on both
// devices, one partition each, although no op reads the partition id.
TEST_F(PjrtTest, ModulePartitionsWithoutOptions) {
  const char kPartitions[] = R"(module @parts attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    %r = stablehlo.add %a, %a : tensor<2xf32>
    return %r : tensor<2xf32>
  }
})";
  PJRT_LoadedExecutable* le = CompileOk(kPartitions);
  ASSERT_NE(le, nullptr);
  PJRT_Executable* e = GetExecutable(le);
  auto np = NM_ARGS(PJRT_Executable_NumPartitions_Args);
  np.executable = e;
  ASSERT_PJRT_OK(g_api->PJRT_Executable_NumPartitions(&np));
  EXPECT_EQ(np.num_partitions, 2u);
  DestroyExe(e);
  auto ad = NM_ARGS(PJRT_LoadedExecutable_AddressableDevices_Args);
  ad.executable = le;
  ASSERT_PJRT_OK(g_api->PJRT_LoadedExecutable_AddressableDevices(&ad));
  EXPECT_EQ(ad.num_addressable_devices, 2u);
  std::vector<PJRT_Device*> devices = Devices(client_);
  PJRT_Buffer* a0 = Upload({1, 2}, {2}, devices[0]);
  PJRT_Buffer* a1 = Upload({3, 4}, {2}, devices[1]);
  std::vector<std::vector<PJRT_Buffer*>> out;
  Outcome x = Execute(le, {{a0}, {a1}}, 1, &out);
  ASSERT_EQ(x.code, PJRT_Error_Code_OK) << x.message;
  EXPECT_EQ(Read(out[1][0]), (std::vector<float>{6, 8}));
  for (PJRT_Buffer* b : {a0, a1, out[0][0], out[1][0]}) DestroyBuffer(b);
  DestroyExecutable(le);
}

TEST_F(PjrtTest, SerializeAndDeserializeAndLoad) {
  PJRT_LoadedExecutable* le = nullptr;
  ASSERT_EQ(Compile(kAddPretty, "", &le).code, PJRT_Error_Code_OK);
  PJRT_Executable* e = GetExecutable(le);
  auto s = NM_ARGS(PJRT_Executable_Serialize_Args);
  s.executable = e;
  ASSERT_PJRT_OK(g_api->PJRT_Executable_Serialize(&s));
  const std::string bytes(s.serialized_bytes, s.serialized_bytes_size);
  s.serialized_executable_deleter(s.serialized_executable);
  DestroyExe(e);
  DestroyExecutable(le);
  auto d = NM_ARGS(PJRT_Executable_DeserializeAndLoad_Args);
  d.client = client_;
  d.serialized_executable = bytes.data();
  d.serialized_executable_size = bytes.size();
  ASSERT_PJRT_OK(g_api->PJRT_Executable_DeserializeAndLoad(&d));
  PJRT_Device* d0 = Devices(client_)[0];
  PJRT_Buffer* a = Upload({1, 2, 3, 4, 5, 6}, {2, 3}, d0);
  EXPECT_EQ(ExecuteAndRead(d.loaded_executable, {a, a}), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  DestroyBuffer(a);
  DestroyExecutable(d.loaded_executable);
  d.serialized_executable = "garbage";
  d.serialized_executable_size = 7;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Executable_DeserializeAndLoad(&d)).code, PJRT_Error_Code_INVALID_ARGUMENT);
}

// ---- send/recv host transfers through PJRT's callbacks

const char kHostTransfers[] = R"(module @host_transfers {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %t = stablehlo.after_all : !stablehlo.token
    %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 2>,
        is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 6, type = 3>,
        is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
    %y = stablehlo.add %x, %r#0 : tensor<2xf32>
    return %y : tensor<2xf32>
  }
})";

struct HostSide {
  std::vector<float> sent;
  size_t total = 0;
  bool fail_send = false;
  int64_t stream_total = 0;
};

PJRT_Error* OnSend(PJRT_Chunk* chunk, PJRT_CallbackError* make_error, size_t total, bool done, void* arg) {
  auto* h = static_cast<HostSide*>(arg);
  const float* f = static_cast<const float*>(chunk->data);
  h->sent.assign(f, f + chunk->size / sizeof(float));
  h->total = total;
  chunk->deleter(chunk->data, chunk->deleter_arg);
  if (h->fail_send) return (*make_error)(PJRT_Error_Code_ABORTED, "host refused", 13);
  (void)done;
  return nullptr;
}

// Answers {100, 200} in two chunks of one float each, then destroys the stream.
void OnRecv(PJRT_CopyToDeviceStream* stream, void* arg) {
  auto* h = static_cast<HostSide*>(arg);
  auto tb = NM_ARGS(PJRT_CopyToDeviceStream_TotalBytes_Args);
  tb.stream = stream;
  Take(g_api, g_api->PJRT_CopyToDeviceStream_TotalBytes(&tb));
  h->stream_total = tb.total_bytes;
  for (float v : {100.0f, 200.0f}) {
    auto* data = new float(v);
    PJRT_Chunk chunk{data, sizeof(float), [](void* p, void*) { delete static_cast<float*>(p); }, nullptr};
    auto add = NM_ARGS(PJRT_CopyToDeviceStream_AddChunk_Args);
    add.stream = stream;
    add.chunk = &chunk;
    EXPECT_EQ(Take(g_api, g_api->PJRT_CopyToDeviceStream_AddChunk(&add)).code, PJRT_Error_Code_OK);
    auto w = NM_ARGS(PJRT_Event_Await_Args);
    w.event = add.transfer_complete;
    EXPECT_EQ(Take(g_api, g_api->PJRT_Event_Await(&w)).code, PJRT_Error_Code_OK);
    auto d = NM_ARGS(PJRT_Event_Destroy_Args);
    d.event = add.transfer_complete;
    Take(g_api, g_api->PJRT_Event_Destroy(&d));
  }
  auto d = NM_ARGS(PJRT_CopyToDeviceStream_Destroy_Args);
  d.stream = stream;
  Take(g_api, g_api->PJRT_CopyToDeviceStream_Destroy(&d));
}

// Runs kHostTransfers' executable on `x` (device 0) with `host`'s send and recv callbacks; returns the launch's
// done event's outcome and its result in *out.
Outcome ExecuteHostTransfers(PJRT_LoadedExecutable* le, PJRT_Buffer* x, HostSide* host, PJRT_Buffer** out) {
  PJRT_SendCallbackInfo send{5, host, OnSend};
  PJRT_RecvCallbackInfo recv{6, host, OnRecv};
  PJRT_SendCallbackInfo* sends[1] = {&send};
  PJRT_RecvCallbackInfo* recvs[1] = {&recv};
  auto o = NM_ARGS(PJRT_ExecuteOptions);
  o.send_callbacks = sends;
  o.recv_callbacks = recvs;
  o.num_send_ops = 1;
  o.num_recv_ops = 1;
  std::vector<std::vector<PJRT_Buffer*>> outputs;
  Outcome r = Execute(le, {{x}}, 1, &outputs, {}, nullptr, &o);
  *out = outputs[0][0];
  return r;
}

TEST_F(PjrtTest, SendAndRecvCallbacks) {
  PJRT_LoadedExecutable* le = CompileOk(kHostTransfers);
  ASSERT_NE(le, nullptr);
  PJRT_Buffer* x = Upload({1, 2}, {2}, Devices(client_)[0]);
  for (bool fail : {false, true}) {
    HostSide host;
    host.fail_send = fail;
    PJRT_Buffer* out[1] = {nullptr};
    Outcome r = ExecuteHostTransfers(le, x, &host, out);
    EXPECT_EQ(host.sent, (std::vector<float>{1, 2}));
    EXPECT_EQ(host.total, 8u);
    if (fail) {
      EXPECT_EQ(r.code, PJRT_Error_Code_ABORTED);
      EXPECT_NE(r.message.find("host refused"), std::string::npos) << r.message;
    } else {
      ASSERT_EQ(r.code, PJRT_Error_Code_OK) << r.message;
      EXPECT_EQ(host.stream_total, 8);
      EXPECT_EQ(Read(out[0]), (std::vector<float>{101, 202}));
    }
    DestroyBuffer(out[0]);
  }
  DestroyBuffer(x);
  DestroyExecutable(le);
}

#ifdef NEURONMEM_PJRT_FAULTS
// A send or recv callback that ran and succeeded fails through the fault site every caller's callback goes
// through (fault::Site::kCallback, as tests/exec/callback_fault_test.cc does for the C API's): the launch's
// done event gets ABORTED naming the callback and its channel, the device memory in use goes back to what it
// was, and the next launch runs. Only in pjrt_fault_test, which links the plugin's layers statically (the fault
// switch is hidden in libneuronmem_pjrt.so).
TEST_F(PjrtTest, AnInjectedSendOrRecvCallbackFailureFailsTheLaunchAndNothingStays) {
  PJRT_LoadedExecutable* le = CompileOk(kHostTransfers);
  ASSERT_NE(le, nullptr);
  PJRT_Device* dev = Devices(client_)[0];
  PJRT_Buffer* x = Upload({1, 2}, {2}, dev);
  auto in_use = [&] {
    auto ms = NM_ARGS(PJRT_Device_MemoryStats_Args);
    ms.device = dev;
    EXPECT_PJRT_OK(g_api->PJRT_Device_MemoryStats(&ms));
    return ms.bytes_in_use;
  };
  const int64_t before = in_use();
  // The send runs first, then the recv: fail each in turn; the third arming is never reached.
  const char* const failing[] = {"send callback of channel 5: injected fault: the PJRT send callback failed",
                                 "recv callback of channel 6: injected fault: the PJRT recv callback failed", nullptr};
  for (uint64_t nth = 1; nth <= 3; ++nth) {
    neuronmem::fault::Arm(neuronmem::fault::Site::kCallback, nth);
    HostSide host;
    PJRT_Buffer* out[1] = {nullptr};
    Outcome r = ExecuteHostTransfers(le, x, &host, out);
    neuronmem::fault::DisarmAll();
    EXPECT_EQ(host.sent, (std::vector<float>{1, 2})) << nth;  // the send ran; the recv only after it succeeded
    EXPECT_EQ(host.stream_total, nth == 1 ? 0 : 8) << nth;
    if (const char* want = failing[nth - 1]) {
      EXPECT_EQ(r.code, PJRT_Error_Code_ABORTED) << nth << ": " << r.message;
      EXPECT_NE(r.message.find(want), std::string::npos) << r.message;
    } else {
      ASSERT_EQ(r.code, PJRT_Error_Code_OK) << r.message;
      EXPECT_EQ(Read(out[0]), (std::vector<float>{101, 202}));
    }
    DestroyBuffer(out[0]);
    EXPECT_EQ(in_use(), before) << nth;
  }
  DestroyBuffer(x);
  DestroyExecutable(le);
}
#endif

// ---- events

TEST_F(PjrtTest, EventsCreateSetOnReadyAndError) {
  auto c = NM_ARGS(PJRT_Event_Create_Args);
  ASSERT_PJRT_OK(g_api->PJRT_Event_Create(&c));
  auto r = NM_ARGS(PJRT_Event_IsReady_Args);
  r.event = c.event;
  ASSERT_PJRT_OK(g_api->PJRT_Event_IsReady(&r));
  EXPECT_FALSE(r.is_ready);
  auto er = NM_ARGS(PJRT_Event_Error_Args);
  er.event = c.event;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Event_Error(&er)).code, PJRT_Error_Code_FAILED_PRECONDITION);
  struct Seen {
    bool called = false;
    PJRT_Error_Code code = PJRT_Error_Code_OK;
  } seen;
  auto on = NM_ARGS(PJRT_Event_OnReady_Args);
  on.event = c.event;
  on.user_arg = &seen;
  on.callback = [](PJRT_Error* e, void* arg) {
    auto* s = static_cast<Seen*>(arg);
    s->called = true;
    s->code = Take(g_api, e).code;
  };
  ASSERT_PJRT_OK(g_api->PJRT_Event_OnReady(&on));
  EXPECT_FALSE(seen.called);
  auto set = NM_ARGS(PJRT_Event_Set_Args);
  set.event = c.event;
  set.error_code = PJRT_Error_Code_ABORTED;
  set.error_message = "stop";
  set.error_message_size = 4;
  ASSERT_PJRT_OK(g_api->PJRT_Event_Set(&set));
  EXPECT_TRUE(seen.called);
  EXPECT_EQ(seen.code, PJRT_Error_Code_ABORTED);
  Outcome o = Take(g_api, g_api->PJRT_Event_Error(&er));
  EXPECT_EQ(o.code, PJRT_Error_Code_ABORTED);
  EXPECT_EQ(o.message, "stop");
  EXPECT_EQ(Take(g_api, g_api->PJRT_Event_Set(&set)).code, PJRT_Error_Code_FAILED_PRECONDITION);
  DestroyEvent(c.event);
}

// ---- bad input: an error with the right code, nothing leaks, the client stays usable

TEST_F(PjrtTest, BadInputGetsErrorsAndTheClientStaysUsable) {
  PJRT_Device* d0 = Devices(client_)[0];
  // NULL args, too small struct_size.
  Outcome o = Take(g_api, g_api->PJRT_Client_Compile(nullptr));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("PJRT_Client_Compile"), std::string::npos) << o.message;
  auto small = Args<PJRT_Client_PlatformName_Args>(8);
  small.client = client_;
  o = Take(g_api, g_api->PJRT_Client_PlatformName(&small));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("struct_size"), std::string::npos) << o.message;
  auto nullclient = NM_ARGS(PJRT_Client_Devices_Args);
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_Devices(&nullclient)).code, PJRT_Error_Code_INVALID_ARGUMENT);

  // Formats and programs.
  PJRT_LoadedExecutable* le = nullptr;
  o = Compile(kAddPretty, "", &le, "hlo");
  EXPECT_EQ(o.code, PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_NE(o.message.find("StableHLO"), std::string::npos) << o.message;
  o = Compile(kAddPretty, "", &le, "spirv");
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  o = Compile(std::string("ML\xEFR\x01\x02", 6), "", &le);  // a truncated portable artifact
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << o.message;
  EXPECT_NE(o.message.find("byte "), std::string::npos) << o.message;
  o = Compile("func.func @main( {", "", &le);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << o.message;
  o = Compile(kAddPretty, std::string{0x1a, 0x10, 0x20}, &le);  // a length past the end
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("CompileOptionsProto"), std::string::npos) << o.message;
  o = Compile(kAddPretty, Options(3, 1), &le);  // more replicas than cores
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(le, nullptr);
  // Unknown fields of the options are skipped.
  o = Compile(kAddPretty, std::string{0x08, 0x01, 0x1a, 2, 0x08, 5, 0x2a, 0}, &le);
  ASSERT_EQ(o.code, PJRT_Error_Code_OK) << o.message;

  // Uploads: unknown type, a type buffers cannot hold yet, no target, a memory of another client.
  auto up = NM_ARGS(PJRT_Client_BufferFromHostBuffer_Args);
  float v[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3};
  up.client = client_;
  up.data = v;
  up.dims = dims;
  up.num_dims = 2;
  up.device = d0;
  const int32_t no_type = 999;  // set as the integer: a C++ enum may not hold it
  std::memcpy(&up.type, &no_type, sizeof no_type);
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_BufferFromHostBuffer(&up)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  up.type = PJRT_Buffer_Type_TOKEN;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_BufferFromHostBuffer(&up)).code, PJRT_Error_Code_UNIMPLEMENTED);
  up.type = PJRT_Buffer_Type_F32;
  up.device = nullptr;
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_BufferFromHostBuffer(&up)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  PJRT_Client* other = NewClient(1);
  ASSERT_NE(other, nullptr);
  up.memory = MemoryOfKind(Devices(other)[0], "device");
  EXPECT_EQ(Take(g_api, g_api->PJRT_Client_BufferFromHostBuffer(&up)).code, PJRT_Error_Code_INVALID_ARGUMENT);

  // Execute: a buffer of another client, the wrong number of arguments, NULL options.
  PJRT_Buffer* mine = Upload({1, 2, 3, 4, 5, 6}, {2, 3}, d0);
  PJRT_Buffer* theirs = Upload({1, 2, 3, 4, 5, 6}, {2, 3}, Devices(other)[0], nullptr,
                               PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, nullptr, other);
  std::vector<std::vector<PJRT_Buffer*>> out;
  o = Execute(le, {{mine, theirs}}, 1, &out);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("another client"), std::string::npos) << o.message;
  o = Execute(le, {{mine}}, 1, &out);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("num_args"), std::string::npos) << o.message;
  o = Execute(le, {{mine, mine}, {mine, mine}}, 1, &out);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  auto ex = NM_ARGS(PJRT_LoadedExecutable_Execute_Args);
  ex.executable = le;
  EXPECT_EQ(Take(g_api, g_api->PJRT_LoadedExecutable_Execute(&ex)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  // A buffer of another client to CopyToMemory.
  auto cm = NM_ARGS(PJRT_Buffer_CopyToMemory_Args);
  cm.buffer = mine;
  cm.dst_memory = MemoryOfKind(Devices(other)[0], "device");
  EXPECT_EQ(Take(g_api, g_api->PJRT_Buffer_CopyToMemory(&cm)).code, PJRT_Error_Code_INVALID_ARGUMENT);

  // A client with live buffers refuses to go, and stays usable.
  o = Take(g_api, DestroyClient(other));
  EXPECT_EQ(o.code, PJRT_Error_Code_FAILED_PRECONDITION) << o.message;
  DestroyBuffer(theirs);
  ASSERT_PJRT_OK(DestroyClient(other));

  // Still usable: the same executable runs.
  o = Execute(le, {{mine, mine}}, 1, &out);
  ASSERT_EQ(o.code, PJRT_Error_Code_OK) << o.message;
  EXPECT_EQ(Read(out[0][0]), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  DestroyBuffer(out[0][0]);
  DestroyBuffer(mine);
  DestroyExecutable(le);

  // Unknown create options.
  PJRT_NamedValue bad{};
  bad.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  bad.name = "no_such_option";
  bad.name_size = std::strlen(bad.name);
  bad.type = PJRT_NamedValue_kInt64;
  auto cc = NM_ARGS(PJRT_Client_Create_Args);
  cc.create_options = &bad;
  cc.num_options = 1;
  o = Take(g_api, g_api->PJRT_Client_Create(&cc));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("no_such_option"), std::string::npos) << o.message;
  EXPECT_EQ(cc.client, nullptr);
}

}  // namespace
}  // namespace neuronmem_pjrt_test

#ifdef NEURONMEM_PJRT_FAULTS
extern "C" const PJRT_Api* GetPjrtApi();
#endif

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
#ifdef NEURONMEM_PJRT_FAULTS
  neuronmem_pjrt_test::g_api = GetPjrtApi();  // linked in statically
#else
  neuronmem_pjrt_test::g_api = neuronmem_pjrt_test::LoadPlugin(argc > 1 ? argv[1] : nullptr);
#endif
  if (!neuronmem_pjrt_test::g_api) return 1;
  return RUN_ALL_TESTS();
}
