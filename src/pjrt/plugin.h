// The PJRT plugin's handles: thin shells around the same C++ objects as the C API (an exec::Session per
// client, core devices and memories, copy::Buffer, exec::Executable), and the helpers every entry point
// uses: argument checks (NULL args, too small struct_size) and PJRT_Error objects. Only src/pjrt sees these.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/element_type.h"
#include "base/event.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "copy/buffer.h"
#include "copy/storage.h"
#include "core/client.h"
#include "dist/fabric.h"
#include "exec/executable.h"
#include "exec/runtime.h"
#include "exec/session.h"
#include "xla/pjrt/c/pjrt_c_api.h"
#include "xla/pjrt/c/pjrt_c_api_layouts_extension.h"
#include "xla/pjrt/c/pjrt_c_api_memory_descriptions_extension.h"

struct PJRT_Error {
  PJRT_Error_Code code = PJRT_Error_Code_UNKNOWN;
  std::string message;
};

// A PJRT event over a library event (one reference).
struct PJRT_Event {
  neuronmem::EventRef event;
  bool user_created = false;  // PJRT_Event_Create: PJRT_Event_Set completes it
};

struct PJRT_MemoryDescription {
  neuronmem::MemoryKind kind = neuronmem::MemoryKind::kDevice;
  std::string kind_name;
};

// A device's description: what PJRT_DeviceDescription_* answer, held by value so that a topology without a
// client (PJRT_TopologyDescription_Create) describes devices that do not exist.
struct PJRT_DeviceDescription {
  int32_t id = 0;             // global: process_index * num_cores + local_id
  int32_t process_index = 0;  // the process of the job that owns it
  int64_t local_id = 0;       // backs the attribute
  std::string kind = "NC_v2";
  std::string to_string;     // "NeuronCore(id=0, process_index=0, local_id=0)"
  std::string debug_string;  // "NC_v2 (NeuronCore(...))"
  std::vector<PJRT_NamedValue> attributes;
  std::vector<PJRT_MemoryDescription> memory_descriptions;  // device, pinned_host (ids in kind order)
  std::vector<const PJRT_MemoryDescription*> memory_description_ptrs;
};

struct PJRT_Memory {
  neuronmem::core::Memory* memory = nullptr;
  PJRT_Client* client = nullptr;
  std::string kind;                   // "device", "pinned_host", "unpinned_host"
  std::vector<PJRT_Device*> devices;  // addressable by
};

// A NeuronCore of the job: this process's (addressable: `device` is the core) or another process's (device
// NULL, no memories; described only).
struct PJRT_Device {
  neuronmem::core::Device* device = nullptr;
  PJRT_Client* client = nullptr;
  PJRT_DeviceDescription description;
  std::vector<PJRT_Memory*> memories;  // id order
  PJRT_Memory* by_kind[neuronmem::kNumMemoryKinds] = {};
};

// A topology: the NeuronCores of a job of num_processes processes with num_cores each. A client's
// (PJRT_Client_TopologyDescription) is owned by the client and points at its devices' descriptions; one made by
// PJRT_TopologyDescription_Create or _Deserialize owns its descriptions and is the caller's to destroy.
struct PJRT_TopologyDescription {
  PJRT_Client* client = nullptr;  // NULL: a topology without a client
  uint32_t num_cores = 0, num_processes = 1;
  std::vector<PJRT_DeviceDescription*> descriptions;
  std::vector<std::unique_ptr<PJRT_DeviceDescription>> owned;
  std::vector<PJRT_NamedValue> attributes;  // num_cores, num_processes
};

struct PJRT_Client {
  std::unique_ptr<neuronmem::exec::Session> session;
  neuronmem::core::Client* core = nullptr;  // session->client()
  neuronmem::exec::ArgumentPlacement placement = neuronmem::exec::ArgumentPlacement::kStrict;
  std::vector<std::unique_ptr<PJRT_Device>> device_storage;
  std::vector<std::unique_ptr<PJRT_Memory>> memory_storage;
  std::vector<PJRT_Device*> devices;      // this process's (addressable), local id order
  std::vector<PJRT_Device*> all_devices;  // the job's, global id order (process p's local l is p * cores + l)
  std::vector<PJRT_Memory*> memories;     // id order
  uint32_t process_index = 0, num_processes = 1;
  std::unique_ptr<neuronmem::dist::Fabric> fabric;  // a job of several processes: the endpoint its bootstrap opened
  PJRT_TopologyDescription topology;

  PJRT_Memory* shell(const neuronmem::copy::MemoryView& view) const { return memories[static_cast<size_t>(view.id)]; }
};

struct PJRT_Buffer {
  neuronmem::copy::Buffer buffer;
  PJRT_Client* client = nullptr;
  // External references (IncreaseExternalReferenceCount): each holds a use of the bytes, so that they stay
  // where they are (a later Delete or donation does not free them) until it is released or the handle goes.
  std::mutex external_mu;
  std::vector<neuronmem::copy::StorageUse> external_uses;
  // The dense major-to-minor layout (GetMemoryLayout), made on first use.
  std::once_flag layout_once;
  std::vector<int64_t> minor_to_major;
};

namespace neuronmem::stablehlo {
struct Module;
}  // namespace neuronmem::stablehlo

namespace neuronmem::pjrt {

// What a compiled program is, shared by the loaded executable and every PJRT_Executable handed out for it
// (PJRT_LoadedExecutable_GetExecutable returns a new handle the caller destroys).
struct Program {
  std::shared_ptr<const exec::Executable> exe;
  bool portable = false;  // one device, no process grid: compiled for every core, runs on any (execute_device)
  size_t num_replicas = 1, num_partitions = 1;  // as PJRT sees them
  std::string name;                             // the module's name, else the entry's
  std::string source;                           // the StableHLO text it was compiled from (OptimizedProgram, Serialize)
  std::string options;                          // the serialized CompileOptionsProto it was compiled with
  std::string fingerprint;
  std::vector<PJRT_Buffer_Type> output_types;
  std::vector<int64_t> output_dims;  // flattened
  std::vector<size_t> output_ranks;
  std::vector<const char*> output_kinds, parameter_kinds;
  std::vector<size_t> output_kind_sizes, parameter_kind_sizes;
};

}  // namespace neuronmem::pjrt

// A layout of the layouts extension: always dense major-to-minor (layouts.cc).
struct PJRT_Layouts_MemoryLayout {
  std::vector<int64_t> minor_to_major;
  bool owned_by_executable = false;  // an output layout: PJRT_Layouts_MemoryLayout_Destroy leaves it
};

struct PJRT_Executable {
  std::shared_ptr<const neuronmem::pjrt::Program> program;
  // The output layouts (PJRT_Layouts_PJRT_Executable_GetOutputLayouts), made on first use, owned by the handle.
  std::once_flag layouts_once;
  std::vector<PJRT_Layouts_MemoryLayout> output_layouts;
  std::vector<PJRT_Layouts_MemoryLayout*> output_layout_ptrs;
};

struct PJRT_LoadedExecutable {
  PJRT_Client* client = nullptr;
  std::shared_ptr<const neuronmem::pjrt::Program> program;
  neuronmem::exec::ExecutableLease lease;          // counted by the client's session until destroyed
  std::vector<PJRT_Device*> addressable_devices;   // devices 0..num_devices-1 (device d: replica d/P, partition d%P)
  std::vector<PJRT_LogicalDeviceIds> logical_ids;  // of each addressable device
  std::atomic<bool> deleted{false};
};

// An execute context (PJRT_ExecuteContext_Create): it carries FFI user data to XLA's FFI handlers; the
// NeuronCore runs none, so PJRT_ExecuteOptions.context is accepted and holds nothing.
struct PJRT_ExecuteContext {};

namespace neuronmem::pjrt {

// A new PJRT_Error (never NULL: on out-of-memory, a static one that PJRT_Error_Destroy never frees).
PJRT_Error* MakeError(PJRT_Error_Code code, std::string message) noexcept;
void DestroyError(PJRT_Error* e) noexcept;  // what PJRT_Error_Destroy does
PJRT_Error* ErrorF(PJRT_Error_Code code, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));
// A library status as a PJRT_Error (NULL for OK); the message is "<fn>: <status message>" when `fn` (the entry
// point, __func__, or the one a helper is given) is not NULL.
PJRT_Error* FromStatus(Status s, const char* fn = nullptr) noexcept;
PJRT_Error_Code CodeOf(const neuronmem_status_t* s) noexcept;

// The value of a C enum field read as an integer, never as the enum: a caller may pass any 32-bit value, and a
// C++ load of one outside the enum's range is undefined (UBSan aborts). Validate this value instead.
template <typename E>
int64_t EnumValue(const E& e) {
  static_assert(sizeof(E) == sizeof(int32_t), "PJRT's C enums are 32-bit");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// INVALID_ARGUMENT "<fn>: args is NULL" / "<fn>: args->struct_size is N, below the M bytes ... needs".
PJRT_Error* CheckArgs(const void* args, size_t struct_size, size_t min_size, const char* fn) noexcept;

// A PJRT event adopting `e` (one reference). The immortal ready event maps to one static PJRT_Event that
// PJRT_Event_Destroy never frees, so the small-transfer path allocates no event.
PJRT_Event* NewPjrtEvent(Event* adopt);

// Element types: PJRT_Buffer_Type <-> the library's (kInvalid for a PJRT type the library has no type for).
ElementType FromPjrtType(int64_t t);
PJRT_Buffer_Type ToPjrtType(ElementType t);
// The library type of an upload's or a bitcast's PJRT type: INVALID_ARGUMENT for no PJRT_Buffer_Type,
// UNIMPLEMENTED for a type buffers cannot hold yet (complex, f8/f6/f4, sub-byte integers, token).
PJRT_Error* BufferTypeOf(int64_t pjrt_type, const char* fn, ElementType* out);

// The element type and dims of an upload, an allocation, a bitcast or a layout query (BufferTypeOf for the type;
// INVALID_ARGUMENT "<fn>: <prefix>dims is NULL but <prefix>num_dims is N" for NULL dims of a rank above 0).
PJRT_Error* ShapeOf(int64_t pjrt_type, const int64_t* dims, size_t num_dims, const char* fn, const char* prefix,
                    ElementType* type);

// The types narrower than a byte (not PRED): s2, s4, u2, u4, f4E2M1FN and the f6 types. Buffers hold one element
// per byte, canonical (signed integers sign-extended, the others zero-extended); uploads make them so.
bool IsSubByte(ElementType t);

// Hands `bytes` out as PJRT's serialized-bytes outputs: the data and size, an opaque owner (a std::string the
// caller sees as `Opaque`) and its deleter (PJRT_Executable_Serialize, _GetCompileOptions,
// PJRT_LoadedExecutable_GetDeviceAssignment, PJRT_TopologyDescription_Serialize, PJRT_Layouts_MemoryLayout_Serialize).
template <typename Opaque>
void HandOutBytes(std::string bytes, const char** data, size_t* size, Opaque** owner, void (**deleter)(Opaque*)) {
  auto* s = new std::string(std::move(bytes));
  *data = s->data();
  *size = s->size();
  *owner = reinterpret_cast<Opaque*>(s);
  *deleter = [](Opaque* o) { delete reinterpret_cast<std::string*>(o); };
}

// An int64 PJRT_NamedValue (`name` must outlive it: a literal).
PJRT_NamedValue IntValue(const char* name, int64_t v);

// Fills a device description (strings, the local_id attribute, the memory descriptions).
void InitDescription(int32_t id, int32_t process_index, int64_t local_id, PJRT_DeviceDescription* d);
// Fills a topology's attributes and, unless it is a client's, its own descriptions.
void InitTopology(uint32_t num_cores, uint32_t num_processes, PJRT_TopologyDescription* t);

// Whether a PJRT device layout is the dense major-to-minor one (NULL is); `fn` names the caller in errors.
PJRT_Error* CheckDenseLayout(const PJRT_Buffer_MemoryLayout* layout, size_t rank, const char* fn, const char* what);

// A client's place in a job (create options process_index / node_id, num_processes / num_nodes,
// fabric_interface).
struct JobOptions {
  uint32_t process_index = 0, num_processes = 1;
  std::string fabric_interface;  // "" = loopback
};
// Joins the job through the create args' kv_get / kv_put (nothing for one process): INVALID_ARGUMENT for an
// index out of range or missing callbacks; the bootstrap's failures with their codes (job.cc).
PJRT_Error* JoinJob(const PJRT_Client_Create_Args* args, const JobOptions& job, uint32_t num_cores,
                    std::unique_ptr<dist::Fabric>* out);
// INVALID_ARGUMENT "<fn>: <what> NeuronCore(...) belongs to process p: not addressable" for another process's
// device, else NULL.
PJRT_Error* CheckAddressable(const PJRT_Device* d, const char* fn, const char* what);

// The function table's parts, filled by each file (api.cc assembles them).
void FillErrorsAndEvents(PJRT_Api* api);
void FillClient(PJRT_Api* api);
void FillBuffers(PJRT_Api* api);
void FillExecutables(PJRT_Api* api);
void FillHostTransfers(PJRT_Api* api);
// The launch's host-transfer callbacks from PJRT_ExecuteOptions' send/recv lists (one list per device of
// `cores`, in order); NULL when there are none. INVALID_ARGUMENT for NULL lists or callbacks.
PJRT_Error* HostCallbacksOf(const PJRT_ExecuteOptions* o, const std::vector<uint32_t>& cores,
                            std::shared_ptr<const exec::HostCallbacks>* out);
PJRT_MemoryDescriptions_Extension* MemoryDescriptionsExtension();
PJRT_Layouts_Extension* LayoutsExtension();  // chained after the memory descriptions
// UNIMPLEMENTED naming the value when an argument or result of the entry asks for an mhlo.layout_mode other than
// the dense major-to-minor one ("default", "auto", "{rank-1,...,0}"): what JAX sends once the layouts extension
// is there.
PJRT_Error* CheckLayoutModes(const stablehlo::Module& ir, std::string_view entry, const char* fn);

}  // namespace neuronmem::pjrt

// Checks args (non-NULL, struct_size covering `last`, a field this function reads or writes) in a PJRT
// entry point named `fn`, returning the error.
#define NM_PJRT_ARGS(args, Type, last)                                                                                \
  if (PJRT_Error* _nm_err = ::neuronmem::pjrt::CheckArgs(                                                             \
          (args), (args) ? (args)->struct_size : 0, offsetof(Type, last) + sizeof(((Type*)nullptr)->last), __func__)) \
  return _nm_err

// Whether a caller's args struct holds `field` (fields appended after the first version).
#define NM_PJRT_HAS(args, Type, field) ((args)->struct_size >= offsetof(Type, field) + sizeof(((Type*)nullptr)->field))

// Returns INVALID_ARGUMENT from a PJRT entry point when a handle argument is NULL.
#define NM_PJRT_REQUIRE(ptr) \
  if (!(ptr))                \
  return ::neuronmem::pjrt::ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: %s must not be NULL", __func__, #ptr)

// Wraps an entry point's body: no exception crosses the ABI.
#define NM_PJRT_BEGIN try {
#define NM_PJRT_END                                                                                                 \
  }                                                                                                                 \
  catch (const std::bad_alloc&) {                                                                                   \
    return ::neuronmem::pjrt::ErrorF(PJRT_Error_Code_RESOURCE_EXHAUSTED, "%s: out of host memory", __func__);       \
  }                                                                                                                 \
  catch (const std::exception& e) {                                                                                 \
    return ::neuronmem::pjrt::ErrorF(PJRT_Error_Code_INTERNAL, "%s: unexpected exception: %s", __func__, e.what()); \
  }                                                                                                                 \
  catch (...) {                                                                                                     \
    return ::neuronmem::pjrt::ErrorF(PJRT_Error_Code_INTERNAL, "%s: unexpected exception", __func__);               \
  }
