/* neuronmem-info: prints the platform, its version, extensions, devices and memories in the layout of
 * the Neuron PJRT listing, then each memory's arena statistics. Built on the public C API only. */
#include <neuronmem/neuronmem.h>

#include "pjrt_listing.h"
#include "tool_status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int report(neuronmem_status_t* s, const char* what) { return neuronmem_tool_report("neuronmem-info", s, what); }

static void usage(FILE* f) {
  fprintf(f,
          "usage: neuronmem-info [--cores N] [--device-mib MIB] [--pinned-mib MIB]\n"
          "                      [--mlock best-effort|required|disabled] [--no-stats] [--pjrt PLUGIN]\n"
          "Prints the neuron platform, its devices and memories (PJRT layout) and arena statistics.\n"
          "--pjrt PLUGIN: the same listing through a PJRT plugin's function table (e.g. libneuronmem_pjrt.so).\n");
}

static int parse_u64(const char* s, uint64_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || !end || *end || s[0] == '-' || s[0] == '\0') return 0;
  *out = (uint64_t)v;
  return 1;
}

static void print_size(const char* label, uint64_t bytes) {
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) {
    printf("  %-20s %" PRIu64 " (%" PRIu64 " MiB)\n", label, bytes, bytes >> 20);
  } else {
    printf("  %-20s %" PRIu64 "\n", label, bytes);
  }
}

int main(int argc, char** argv) {
  neuronmem_client_options_t opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  int stats = 1;
  const char* pjrt = NULL;
  for (int i = 1; i < argc; ++i) {
    uint64_t v = 0;
    const char* a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--no-stats")) {
      stats = 0;
    } else if (!strcmp(a, "--pjrt") && next) {
      pjrt = next;
      ++i;
    } else if (!strcmp(a, "--cores") && next && parse_u64(next, &v) && v <= UINT32_MAX) {
      opts.num_cores = (uint32_t)v;
      ++i;
    } else if (!strcmp(a, "--device-mib") && next && parse_u64(next, &v) && v < (1ull << 44)) {
      opts.device_bytes_per_core = v << 20;
      ++i;
    } else if (!strcmp(a, "--pinned-mib") && next && parse_u64(next, &v) && v < (1ull << 44)) {
      opts.pinned_host_bytes = v << 20;
      ++i;
    } else if (!strcmp(a, "--mlock") && next) {
      if (!strcmp(next, "best-effort"))
        opts.mlock_mode = NEURONMEM_MLOCK_BEST_EFFORT;
      else if (!strcmp(next, "required"))
        opts.mlock_mode = NEURONMEM_MLOCK_REQUIRED;
      else if (!strcmp(next, "disabled"))
        opts.mlock_mode = NEURONMEM_MLOCK_DISABLED;
      else {
        fprintf(stderr, "neuronmem-info: unknown --mlock mode '%s'\n", next);
        return 2;
      }
      ++i;
    } else {
      fprintf(stderr, "neuronmem-info: bad argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }

  if (pjrt) return neuronmem_info_pjrt(pjrt, opts.num_cores, opts.device_bytes_per_core, opts.pinned_host_bytes, stats);

  neuronmem_client_t* client = NULL;
  if (report(neuronmem_client_create(&opts, &client), "creating the client")) return 1;

  neuronmem_string_t name, version;
  const neuronmem_string_t* exts = NULL;
  size_t n_ext = 0;
  neuronmem_device_t* const* devices = NULL;
  size_t n_dev = 0;
  int rc = report(neuronmem_client_platform_name(client, &name), "platform name") ||
           report(neuronmem_client_platform_version(client, &version), "platform version") ||
           report(neuronmem_client_extensions(client, &exts, &n_ext), "extensions") ||
           report(neuronmem_client_devices(client, &devices, &n_dev), "devices");
  if (rc) {
    report(neuronmem_client_destroy(client), "destroying the client");
    return 1;
  }
  printf("platform: %.*s\n", (int)name.size, name.data);
  printf("version: %.*s\n", (int)version.size, version.data);
  printf("extensions:\n");
  for (size_t i = 0; i < n_ext; ++i) printf("%.*s\n", (int)exts[i].size, exts[i].data);
  printf("devices:\n");
  for (size_t d = 0; d < n_dev && !rc; ++d) {
    neuronmem_device_description_t dd;
    memset(&dd, 0, sizeof dd);
    dd.struct_size = sizeof dd;
    neuronmem_memory_t* const* mems = NULL;
    size_t n_mem = 0;
    rc = report(neuronmem_device_describe(devices[d], &dd), "device description") ||
         report(neuronmem_device_addressable_memories(devices[d], &mems, &n_mem), "device memories");
    if (rc) break;
    printf("%.*s\n", (int)dd.to_string.size, dd.to_string.data);
    printf("memories:\n");
    for (size_t m = 0; m < n_mem && !rc; ++m) {
      neuronmem_memory_description_t md;
      memset(&md, 0, sizeof md);
      md.struct_size = sizeof md;
      rc = report(neuronmem_memory_describe(mems[m], &md), "memory description");
      if (!rc) printf("%.*s\n", (int)md.debug_string.size, md.debug_string.data);
    }
  }

  if (stats && !rc) {
    neuronmem_memory_t* const* mems = NULL;
    size_t n_mem = 0;
    rc = report(neuronmem_client_memories(client, &mems, &n_mem), "memories");
    printf("memory statistics:\n");
    for (size_t m = 0; m < n_mem && !rc; ++m) {
      neuronmem_memory_description_t md;
      memset(&md, 0, sizeof md);
      md.struct_size = sizeof md;
      neuronmem_memory_stats_t st;
      memset(&st, 0, sizeof st);
      st.struct_size = sizeof st;
      rc = report(neuronmem_memory_describe(mems[m], &md), "memory description") ||
           report(neuronmem_memory_stats(mems[m], &st), "memory statistics");
      if (rc) break;
      printf("%.*s%s\n", (int)md.debug_string.size, md.debug_string.data,
             st.is_shared ? "  [arena shared with the other cores' memories of this kind]" : "");
      if (st.capacity)
        print_size("capacity", st.capacity);
      else
        printf("  %-20s unbounded (system allocator)\n", "capacity");
      print_size("bytes_in_use", st.bytes_in_use);
      print_size("peak_bytes_in_use", st.peak_bytes_in_use);
      printf("  %-20s %" PRIu64 "\n", "live_allocations", st.live_allocations);
      if (st.capacity) print_size("largest_free_block", st.largest_free_block);
      printf("  %-20s %s\n", "locked", st.is_locked ? "yes (mlock)" : "no");
    }
  }
  if (report(neuronmem_client_destroy(client), "destroying the client")) rc = 1;
  return rc;
}
