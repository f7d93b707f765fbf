#include "base/memory_kind.h"

namespace neuronmem {
namespace {

constexpr std::string_view kNames[kNumMemoryKinds] = {"device", "pinned_host", "unpinned_host"};

}  // namespace

std::string_view MemoryKindName(MemoryKind kind) {
  const auto k = static_cast<size_t>(kind);
  return k < kNumMemoryKinds ? kNames[k] : std::string_view("unknown");
}

bool MemoryKindFromName(std::string_view name, MemoryKind* out) {
  for (int k = 0; k < kNumMemoryKinds; ++k) {
    if (name == kNames[k]) {
      *out = static_cast<MemoryKind>(k);
      return true;
    }
  }
  return false;
}

bool MemoryKindFromC(int64_t c_value, MemoryKind* out) {
  if (c_value < 0 || c_value >= kNumMemoryKinds) return false;
  *out = static_cast<MemoryKind>(c_value);
  return true;
}

}  // namespace neuronmem
