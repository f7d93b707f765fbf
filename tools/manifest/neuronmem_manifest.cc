// neuronmem-manifest FILE.mlir[.bc] [--json] [--entry NAME | --all] [--policy device|torch-neuronx] [--cores N]
// Prints the placement manifest of a compiled StableHLO file as a table, or as JSON; with --all, the manifest
// of every public function (tables one after another, or a JSON array). Errors go to stderr as
// file:line:column: message, with a non-zero exit. Built on the public C API only.
#include <neuronmem/neuronmem.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string S(neuronmem_string_t s) { return std::string(s.data, s.size); }

const char* KindName(uint32_t k) {
  return k == NEURONMEM_MEMORY_KIND_PINNED_HOST     ? "pinned_host"
         : k == NEURONMEM_MEMORY_KIND_UNPINNED_HOST ? "unpinned_host"
                                                    : "device";
}

std::string Shape(const std::string& elem, const int64_t* dims, size_t n) {
  std::string s = "tensor<";
  for (size_t i = 0; i < n; ++i) s += (dims[i] < 0 ? std::string("?") : std::to_string(dims[i])) + "x";
  return s + elem + ">";
}

int Usage(FILE* f) {
  std::fprintf(
      f,
      "usage: neuronmem-manifest FILE.mlir[.bc] [--json] [--entry NAME | --all] [--policy device|torch-neuronx] "
      "[--cores N]\n"
      "Prints where every argument, result and intermediate of the entry function (@main unless --entry\n"
      "names another) lives; --all prints it for every public function.\n");
  return f == stdout ? 0 : 2;
}

// A core count: decimal digits only, 1..64 (what a client may have).
bool ParseCores(const char* s, uint32_t* out) {
  if (!*s || std::strlen(s) > 2) return false;
  uint32_t v = 0;
  for (const char* p = s; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + static_cast<uint32_t>(*p - '0');
  }
  if (v < 1 || v > 64) return false;
  *out = v;
  return true;
}

bool Fail(neuronmem_status_t* s) {
  if (!s) return false;
  neuronmem_string_t m = neuronmem_status_message(s);
  std::fprintf(stderr, "%.*s\n", static_cast<int>(m.size), m.data);
  neuronmem_status_free(s);
  return true;
}

void PrintValues(const neuronmem_manifest_t* m, bool results, size_t n) {
  std::printf("%s:\n", results ? "results" : "arguments");
  for (size_t i = 0; i < n; ++i) {
    neuronmem_manifest_value_t v{};
    v.struct_size = sizeof v;
    if (Fail(results ? neuronmem_manifest_result(m, i, &v) : neuronmem_manifest_argument(m, i, &v))) return;
    std::string extra;
    if (!v.kind_explicit) extra += " (default)";
    if (v.aliasing_output >= 0) extra += " aliases output " + std::to_string(v.aliasing_output);
    if (v.buffer_donor) extra += " donated";
    std::printf("  %-3zu %-14s %-26s %-14s%s\n", i, S(v.name).c_str(),
                Shape(S(v.element_type), v.dims, v.num_dims).c_str(), KindName(v.memory_kind), extra.c_str());
  }
}

// The manifest as a table; false (after printing the error) if a query fails.
bool PrintTable(const neuronmem_manifest_t* m, const char* path) {
  neuronmem_string_t module, entry;
  neuronmem_manifest_counts_t c{};
  c.struct_size = sizeof c;
  if (Fail(neuronmem_manifest_entry(m, &module, &entry)) || Fail(neuronmem_manifest_counts(m, &c))) return false;
  std::printf("module %s, entry @%s\n", module.size ? S(module).c_str() : "(unnamed)", S(entry).c_str());
  PrintValues(m, false, c.num_arguments);
  PrintValues(m, true, c.num_results);
  std::printf("moves:\n");
  for (size_t i = 0; i < c.num_moves; ++i) {
    neuronmem_manifest_move_t mv{};
    mv.struct_size = sizeof mv;
    if (Fail(neuronmem_manifest_move(m, i, &mv))) return false;
    std::printf("  %s:%u:%u  %-6s %-26s %s -> %s  via %s\n", path, mv.line, mv.column, S(mv.value).c_str(),
                Shape(S(mv.element_type), mv.dims, mv.num_dims).c_str(), S(mv.from_kind).c_str(), S(mv.to_kind).c_str(),
                S(mv.spelling).c_str());
  }
  if (c.num_host_compute) std::printf("host compute:\n");
  for (size_t i = 0; i < c.num_host_compute; ++i) {
    neuronmem_string_t op, fn;
    uint32_t line, col;
    if (Fail(neuronmem_manifest_host_compute(m, i, &op, &fn, &line, &col))) return false;
    std::printf("  %s:%u:%u  %s in @%s\n", path, line, col, S(op).c_str(), S(fn).c_str());
  }
  if (c.num_kernels) std::printf("kernels:\n");
  for (size_t i = 0; i < c.num_kernels; ++i) {
    neuronmem_manifest_kernel_t k{};
    k.struct_size = sizeof k;
    if (Fail(neuronmem_manifest_kernel(m, i, &k))) return false;
    std::string grid;
    for (size_t g = 0; g < k.grid_rank; ++g) grid += (g ? "," : "") + std::to_string(k.grid[g]);
    std::printf("  %s:%u:%u  %s grid [%s], %zu inputs, %zu outputs\n", path, k.line, k.column, S(k.func_name).c_str(),
                grid.c_str(), k.num_input_names, k.num_output_names);
  }
  if (c.num_channels) std::printf("channels:\n");
  for (size_t i = 0; i < c.num_channels; ++i) {
    neuronmem_manifest_channel_t ch{};
    ch.struct_size = sizeof ch;
    if (Fail(neuronmem_manifest_channel(m, i, &ch))) return false;
    std::string pairs;
    for (size_t p = 0; p < ch.num_pairs; ++p) {
      pairs += (p ? " " : "") + std::to_string(ch.source_target_pairs[2 * p]) + "->" +
               std::to_string(ch.source_target_pairs[2 * p + 1]);
    }
    std::printf("  %s:%u:%u  %s handle %lld type %d%s pairs [%s]\n", path, ch.line, ch.column, S(ch.op).c_str(),
                static_cast<long long>(ch.handle), ch.type, ch.is_host_transfer ? " host" : "", pairs.c_str());
  }
  std::printf("custom-call targets:");
  for (size_t i = 0; i < c.num_custom_call_targets; ++i) {
    neuronmem_string_t t;
    uint64_t n;
    if (Fail(neuronmem_manifest_custom_call_target(m, i, &t, &n))) return false;
    std::printf(" %s(x%llu)", S(t).c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("\n");
  return true;
}

// The public functions of the file, in source order (neuronmem_manifest_list_entries); false on an error.
bool ListEntries(const char* path, std::vector<std::string>* names) {
  // Only a regular file: a FIFO would block the open below, a device (/dev/zero) would never end.
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    std::fprintf(stderr, "neuronmem-manifest: '%s' is not a regular file; only regular files can be read\n", path);
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "neuronmem-manifest: cannot read '%s'\n", path);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  auto add = [](neuronmem_string_t name, void* user) {
    static_cast<std::vector<std::string>*>(user)->push_back(S(name));
  };
  return !Fail(neuronmem_manifest_list_entries(text.data(), text.size(), path, add, names));
}

// Prints the manifest's warnings not printed yet to stderr ("warning: file:line:col: message").
void PrintWarnings(const neuronmem_manifest_t* m, std::set<std::string>* printed) {
  neuronmem_manifest_counts_t c{};
  c.struct_size = sizeof c;
  if (Fail(neuronmem_manifest_counts(m, &c))) return;
  for (size_t i = 0; i < c.num_warnings; ++i) {
    neuronmem_string_t w;
    if (Fail(neuronmem_manifest_warning(m, i, &w))) return;
    if (!printed->insert(S(w)).second) continue;
    std::fprintf(stderr, "warning: %.*s\n", static_cast<int>(w.size), w.data);
  }
}

// Loads the manifest of o.entry from `path` and prints it (JSON when `json`) and its warnings (each once:
// with --all, the entries of one module share them); the exit code.
int PrintManifest(const char* path, const neuronmem_manifest_options_t& o, bool json, std::set<std::string>* printed) {
  neuronmem_manifest_t* m = nullptr;
  if (Fail(neuronmem_manifest_load_file(path, &o, &m))) return 1;
  PrintWarnings(m, printed);
  bool ok = true;
  if (json) {
    neuronmem_string_t j;
    ok = !Fail(neuronmem_manifest_to_json(m, &j));
    if (ok) std::printf("%.*s", static_cast<int>(j.size), j.data);
  } else {
    ok = PrintTable(m, path);
  }
  neuronmem_manifest_destroy(m);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = nullptr;
  bool json = false;
  bool all = false;
  neuronmem_manifest_options_t o{};
  o.struct_size = sizeof o;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) return Usage(stdout);
    if (!std::strcmp(a, "--json")) {
      json = true;
    } else if (!std::strcmp(a, "--all")) {
      all = true;
    } else if (!std::strcmp(a, "--entry") && next) {
      o.entry = next;
      ++i;
    } else if (!std::strcmp(a, "--policy") && next) {
      if (!std::strcmp(next, "device"))
        o.policy = NEURONMEM_PLACEMENT_POLICY_DEVICE;
      else if (!std::strcmp(next, "torch-neuronx"))
        o.policy = NEURONMEM_PLACEMENT_POLICY_TORCH_NEURONX;
      else
        return Usage(stderr);
      ++i;
    } else if (!std::strcmp(a, "--cores") && next) {
      if (!ParseCores(next, &o.num_cores)) {
        std::fprintf(stderr, "neuronmem-manifest: --cores takes a number of cores from 1 to 64, not '%s'\n", next);
        return 2;
      }
      ++i;
    } else if (a[0] != '-' && !path) {
      path = a;
    } else {
      return Usage(stderr);
    }
  }
  if (!path) return Usage(stderr);
  std::set<std::string> printed;  // warnings
  if (!all) {
    const int rc = PrintManifest(path, o, json, &printed);
    if (rc == 0 && json) std::printf("\n");
    return rc;
  }
  if (o.entry) return Usage(stderr);  // --all and --entry exclude each other
  std::vector<std::string> names;
  if (!ListEntries(path, &names)) return 1;
  if (names.empty()) {
    std::fprintf(stderr, "%s: no public function: nothing to print\n", path);
    return 1;
  }
  if (json) std::printf("[");
  for (size_t i = 0; i < names.size(); ++i) {
    o.entry = names[i].c_str();
    if (i) std::printf(json ? ",\n" : "\n");
    if (const int rc = PrintManifest(path, o, json, &printed)) return rc;
  }
  if (json) std::printf("]\n");
  return 0;
}
