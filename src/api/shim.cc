#include "api/shim.h"

namespace neuronmem::api {

Status CheckStructSize(size_t struct_size, size_t min_size, const char* type, const char* where) {
  if (struct_size >= min_size) return Ok();
  return InvalidArgument("%s%s.struct_size is %zu, smaller than the minimum %zu; set it to sizeof(%s)", where, type,
                         struct_size, min_size, type);
}

Status ElementTypeOf(int64_t c_value, const char* where, ElementType* out) {
  *out = ElementTypeFromC(c_value);
  if (*out == ElementType::kInvalid) {
    return InvalidArgument("%selement_type %lld is not a neuronmem_element_type_t", where,
                           static_cast<long long>(c_value));
  }
  return Ok();
}

Status WaitList(neuronmem_event_t* const* events, size_t count, const char* where, Span<Event* const>* out) {
  if (count && !events) return InvalidArgument("%swait_events is NULL but num_wait_events is %zu", where, count);
  for (size_t i = 0; i < count; ++i) {
    if (!events[i]) return InvalidArgument("%swait_events[%zu] is NULL", where, i);
  }
  *out = Span<Event* const>(events, count);
  return Ok();
}

}  // namespace neuronmem::api
