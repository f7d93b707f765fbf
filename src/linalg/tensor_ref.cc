#include "linalg/tensor_ref.h"

#include <algorithm>
#include <limits>

#include "linalg/element_traits.h"

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

Status CheckNonNegative(const char* op, Span<int64_t> lhs_dims, Span<int64_t> rhs_dims) {
  for (auto [name, dims] : {std::pair{"lhs", lhs_dims}, std::pair{"rhs", rhs_dims}}) {
    for (int64_t d : dims) {
      if (d < 0) return InvalidArgument("%s: %s has a negative dimension in %s", op, name, DimsToString(dims).c_str());
    }
  }
  return Ok();
}

Status CheckResultDims(const char* op, const std::vector<int64_t>& expected, Span<int64_t> result_dims) {
  if (!std::equal(expected.begin(), expected.end(), result_dims.begin(), result_dims.end())) {
    return InvalidArgument("%s: result dims %s, expected %s", op, DimsToString(result_dims).c_str(),
                           DimsToString(expected).c_str());
  }
  return Ok();
}

Status CheckOperandTypes(const char* op, ElementType lhs, ElementType rhs, ElementType result) {
  for (ElementType t : {lhs, rhs, result}) {
    if (!detail::Dispatch(t, [](auto) {})) {
      return Unimplemented("%s: element type %s is not supported", op, std::string(ElementTypeName(t)).c_str());
    }
  }
  for (ElementType t : {lhs, rhs}) {
    if (!detail::OperandConvertible(t, result)) {
      return Unimplemented("%s: operand type %s with result type %s is not supported", op,
                           std::string(ElementTypeName(t)).c_str(), std::string(ElementTypeName(result)).c_str());
    }
  }
  return Ok();
}

}  // namespace neuronmem::linalg
