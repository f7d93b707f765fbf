// The upload plan: for each argument of a manifest's entry function, the buffer to create (element type,
// shape, memory kind, byte size) and whether the host data can be aliased instead of copied. The C API's
// neuronmem_manifest_upload_arguments converts the plan into one batched upload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/element_type.h"
#include "base/memory_kind.h"
#include "base/status.h"
#include "manifest/manifest.h"

namespace neuronmem::manifest {

struct ArgumentUpload {
  ElementType element_type = ElementType::kInvalid;  // a type buffers hold (ElementTypeToC(t) >= 0)
  const std::vector<int64_t>* dims = nullptr;        // the manifest's (static: no -1)
  MemoryKind memory_kind = MemoryKind::kDevice;
  uint64_t bytes = 0;      // element size times every dimension, checked for overflow
  bool zero_copy = false;  // pinned_host, and the host data already lies in the pinned-host arena
};

// True when [data, data + bytes) lies inside the client's pinned-host arena.
using InPinnedArena = std::function<bool(const void* data, uint64_t bytes)>;

// Plans the upload of every argument of `m` from host_data[0..num_arguments). INVALID_ARGUMENT when
// num_arguments differs from the manifest's, when host_data[i] is NULL for an argument of a nonzero size,
// or when an argument's byte size overflows 64 bits; UNIMPLEMENTED for an argument buffers cannot hold (a
// tuple, a token, an element type without a neuronmem_element_type_t, a dynamic dimension). On failure
// `out` is left empty.
Status PlanArgumentUploads(const Manifest& m, const void* const* host_data, size_t num_arguments,
                           const InPinnedArena& in_pinned_arena, std::vector<ArgumentUpload>* out);

}  // namespace neuronmem::manifest
