// Memory kinds: the one table of their names for the whole library (the client, the manifest, the C API).
#pragma once

#include <cstdint>
#include <string_view>

namespace neuronmem {

// The numeric values are the public neuronmem_memory_kind_t values (include/neuronmem/client.h).
enum class MemoryKind : uint8_t {
  kDevice = 0,        // "device": one NeuronCore's HBM arena
  kPinnedHost = 1,    // "pinned_host": the client's page-locked host arena
  kUnpinnedHost = 2,  // "unpinned_host": ordinary pageable host memory
};
constexpr int kNumMemoryKinds = 3;

// "device", "pinned_host", "unpinned_host".
std::string_view MemoryKindName(MemoryKind kind);
// Name -> kind; false for any other string.
bool MemoryKindFromName(std::string_view name, MemoryKind* out);
// The public C value -> kind; false for values that are no neuronmem_memory_kind_t.
bool MemoryKindFromC(int64_t c_value, MemoryKind* out);

}  // namespace neuronmem
