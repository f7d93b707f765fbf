// The upload plan (see upload_plan.h).
#include "manifest/upload_plan.h"

namespace neuronmem::manifest {
namespace {

Status PlanOne(const Value& v, size_t i, const void* data, const InPinnedArena& in_pinned_arena, ArgumentUpload* out) {
  if (v.type.is_tuple || v.type.is_token || ElementTypeToC(v.type.element) < 0) {
    return Unimplemented("argument %zu has type %s, which buffers cannot hold", i, v.type.element_type.c_str());
  }
  uint64_t bytes = ElementByteSize(v.type.element);
  for (int64_t d : v.type.dims) {
    if (d < 0) return Unimplemented("argument %zu has a dynamic shape", i);
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
      return InvalidArgument("argument %zu (%zu dimensions of %s) takes more than 2^64 bytes", i, v.type.dims.size(),
                             v.type.element_type.c_str());
    }
  }
  if (!data && bytes > 0)
    return InvalidArgument("host_data[%zu] is NULL for an argument of %llu bytes", i,
                           static_cast<unsigned long long>(bytes));
  out->element_type = v.type.element;
  out->dims = &v.type.dims;
  out->memory_kind = v.memory_kind;
  out->bytes = bytes;
  out->zero_copy = v.memory_kind == MemoryKind::kPinnedHost && data && in_pinned_arena(data, bytes);
  return Ok();
}

}  // namespace

Status PlanArgumentUploads(const Manifest& m, const void* const* host_data, size_t num_arguments,
                           const InPinnedArena& in_pinned_arena, std::vector<ArgumentUpload>* out) {
  out->clear();
  if (num_arguments != m.arguments.size()) {
    return InvalidArgument("the entry function @%s takes %zu arguments, %zu were given", m.entry.c_str(),
                           m.arguments.size(), num_arguments);
  }
  if (num_arguments > 0 && !host_data) return InvalidArgument("host_data is NULL for %zu arguments", num_arguments);
  std::vector<ArgumentUpload> plan(num_arguments);
  for (size_t i = 0; i < num_arguments; ++i) {
    NEURONMEM_RETURN_IF_ERROR(PlanOne(m.arguments[i], i, host_data[i], in_pinned_arena, &plan[i]));
  }
  *out = std::move(plan);
  return Ok();
}

}  // namespace neuronmem::manifest
