#include "linalg/tensor_ref.h"

#include <limits>

namespace neuronmem::linalg {

int64_t NumElements(Span<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> RowMajorStrides(Span<int64_t> dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= dims[i];
  }
  return strides;
}

std::string DimsToString(Span<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

Status CheckTensor(const char* what, const void* data, Span<int64_t> dims) {
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) return InvalidArgument("%s: negative dimension in %s", what, DimsToString(dims).c_str());
    if (d == 0) empty = true;
  }
  if (empty) return Ok();
  // Bytes must fit in int64 for the widest element (16 bytes).
  const int64_t max_elements = std::numeric_limits<int64_t>::max() / 16;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (n > max_elements / d) return InvalidArgument("%s: %s has too many elements", what, DimsToString(dims).c_str());
    n *= d;
  }
  if (data == nullptr) return InvalidArgument("%s: null data for %s", what, DimsToString(dims).c_str());
  return Ok();
}

}  // namespace neuronmem::linalg
