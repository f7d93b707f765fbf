/* neuronmem-info --pjrt PLUGIN: the same listing as the C API path (platform, version, extensions, devices
 * with their memories), read through a PJRT plugin's function table only (dlopen + GetPjrtApi), as a
 * frontend sees it; then each device's memory statistics (PJRT_Device_MemoryStats). */
#include "pjrt_listing.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "xla/pjrt/c/pjrt_c_api.h"
#include "xla/pjrt/c/pjrt_c_api_memory_descriptions_extension.h"

static const PJRT_Api* api;

/* Prints and destroys an error; returns 1 for an error, 0 for none. */
static int failed(PJRT_Error* e, const char* what) {
  if (!e) return 0;
  PJRT_Error_Message_Args m;
  memset(&m, 0, sizeof m);
  m.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  m.error = e;
  api->PJRT_Error_Message(&m);
  fprintf(stderr, "neuronmem-info: %s: %.*s\n", what, (int)m.message_size, m.message);
  PJRT_Error_Destroy_Args d;
  memset(&d, 0, sizeof d);
  d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  d.error = e;
  api->PJRT_Error_Destroy(&d);
  return 1;
}

static const char* extension_name(PJRT_Extension_Type t) {
  switch (t) {
    case PJRT_Extension_Type_MemoryDescriptions: return "memory_descriptions";
    case PJRT_Extension_Type_Layouts: return "layouts";
    case PJRT_Extension_Type_FFI: return "ffi";
    case PJRT_Extension_Type_Profiler: return "profiler";
    default: return "other";
  }
}

static void add_option(PJRT_NamedValue* v, const char* name, int64_t value) {
  memset(v, 0, sizeof *v);
  v->struct_size = PJRT_NamedValue_STRUCT_SIZE;
  v->name = name;
  v->name_size = strlen(name);
  v->type = PJRT_NamedValue_kInt64;
  v->int64_value = value;
  v->value_size = 1;
}

static int list(PJRT_Client* client, int stats) {
  PJRT_Client_PlatformName_Args pn;
  memset(&pn, 0, sizeof pn);
  pn.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE;
  pn.client = client;
  PJRT_Client_PlatformVersion_Args pv;
  memset(&pv, 0, sizeof pv);
  pv.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE;
  pv.client = client;
  PJRT_Client_AddressableDevices_Args ds;
  memset(&ds, 0, sizeof ds);
  ds.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
  ds.client = client;
  if (failed(api->PJRT_Client_PlatformName(&pn), "platform name") ||
      failed(api->PJRT_Client_PlatformVersion(&pv), "platform version") ||
      failed(api->PJRT_Client_AddressableDevices(&ds), "devices"))
    return 1;
  printf("platform: %.*s\n", (int)pn.platform_name_size, pn.platform_name);
  printf("version: %.*s\n", (int)pv.platform_version_size, pv.platform_version);
  printf("pjrt api: %d.%d\n", api->pjrt_api_version.major_version, api->pjrt_api_version.minor_version);
  printf("extensions:\n");
  for (const PJRT_Extension_Base* e = api->extension_start; e; e = e->next) printf("%s\n", extension_name(e->type));
  printf("devices:\n");
  for (size_t d = 0; d < ds.num_addressable_devices; ++d) {
    PJRT_Device* dev = ds.addressable_devices[d];
    PJRT_Device_GetDescription_Args gd;
    memset(&gd, 0, sizeof gd);
    gd.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE;
    gd.device = dev;
    PJRT_DeviceDescription_DebugString_Args dbg;
    memset(&dbg, 0, sizeof dbg);
    dbg.struct_size = PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE;
    PJRT_Device_AddressableMemories_Args am;
    memset(&am, 0, sizeof am);
    am.struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE;
    am.device = dev;
    if (failed(api->PJRT_Device_GetDescription(&gd), "device description")) return 1;
    dbg.device_description = gd.device_description;
    if (failed(api->PJRT_DeviceDescription_DebugString(&dbg), "device debug string") ||
        failed(api->PJRT_Device_AddressableMemories(&am), "device memories"))
      return 1;
    printf("%.*s\n", (int)dbg.debug_string_size, dbg.debug_string);
    printf("memories:\n");
    for (size_t m = 0; m < am.num_memories; ++m) {
      PJRT_Memory_ToString_Args ts;
      memset(&ts, 0, sizeof ts);
      ts.struct_size = PJRT_Memory_ToString_Args_STRUCT_SIZE;
      ts.memory = am.memories[m];
      if (failed(api->PJRT_Memory_ToString(&ts), "memory string")) return 1;
      printf("%.*s\n", (int)ts.to_string_size, ts.to_string);
    }
  }
  if (!stats) return 0;
  printf("device memory statistics:\n");
  for (size_t d = 0; d < ds.num_addressable_devices; ++d) {
    PJRT_Device_MemoryStats_Args ms;
    memset(&ms, 0, sizeof ms);
    ms.struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE;
    ms.device = ds.addressable_devices[d];
    if (failed(api->PJRT_Device_MemoryStats(&ms), "memory statistics")) return 1;
    printf("device %zu: bytes_in_use %" PRId64, d, ms.bytes_in_use);
    if (ms.bytes_limit_is_set) printf(", bytes_limit %" PRId64, ms.bytes_limit);
    if (ms.peak_bytes_in_use_is_set) printf(", peak_bytes_in_use %" PRId64, ms.peak_bytes_in_use);
    printf("\n");
  }
  return 0;
}

int neuronmem_info_pjrt(const char* path, uint32_t cores, uint64_t device_bytes, uint64_t pinned_bytes, int stats) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "neuronmem-info: dlopen(%s): %s\n", path, dlerror());
    return 1;
  }
  const PJRT_Api* (*get)(void) = (const PJRT_Api* (*)(void))dlsym(h, "GetPjrtApi");
  if (!get || !(api = get())) {
    fprintf(stderr, "neuronmem-info: %s is no PJRT plugin (no GetPjrtApi)\n", path);
    dlclose(h);
    return 1;
  }
  PJRT_Plugin_Initialize_Args init;
  memset(&init, 0, sizeof init);
  init.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE;
  if (failed(api->PJRT_Plugin_Initialize(&init), "initializing the plugin")) return 1;
  PJRT_NamedValue options[3];
  size_t n = 0;
  if (cores) add_option(&options[n++], "num_cores", cores);
  if (device_bytes) add_option(&options[n++], "device_bytes_per_core", (int64_t)device_bytes);
  if (pinned_bytes) add_option(&options[n++], "pinned_host_bytes", (int64_t)pinned_bytes);
  PJRT_Client_Create_Args cc;
  memset(&cc, 0, sizeof cc);
  cc.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  cc.create_options = n ? options : NULL;
  cc.num_options = n;
  if (failed(api->PJRT_Client_Create(&cc), "creating the client")) return 1;
  int rc = list(cc.client, stats);
  PJRT_Client_Destroy_Args cd;
  memset(&cd, 0, sizeof cd);
  cd.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
  cd.client = cc.client;
  if (failed(api->PJRT_Client_Destroy(&cd), "destroying the client")) rc = 1;
  /* The plugin stays loaded: its worker threads may still be unwinding. */
  return rc;
}
