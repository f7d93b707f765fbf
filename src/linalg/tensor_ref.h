// Views of dense row-major tensors for the linear-algebra routines (dot_general, convolution, fft,
// triangular_solve, cholesky). A view is an element type, a data pointer and the dims; the last dim is
// contiguous (row-major, no padding). The routines never allocate their results: the caller owns every
// buffer, sizes it from the dims, and keeps it alive for the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/element_type.h"
#include "base/status.h"

namespace neuronmem::linalg {

// A borrowed (pointer, size) array, like C++20's std::span. Built from a vector, a pointer and a size,
// or a braced list (which lives until the end of the full expression: fine for call arguments).
template <typename T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(const T* data, size_t size) : data_(data), size_(size) {}
  Span(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT: implicit on purpose
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // the list outlives the call it is an argument of
#endif
  constexpr Span(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

// An input tensor: read only.
struct TensorRef {
  ElementType type = ElementType::kInvalid;
  const void* data = nullptr;  // may be null only when the tensor has no elements
  Span<int64_t> dims;
};

// An output tensor: the routine writes every element.
struct MutableTensorRef {
  ElementType type = ElementType::kInvalid;
  void* data = nullptr;  // may be null only when the tensor has no elements
  Span<int64_t> dims;
};

// Number of elements of a shape (1 for rank 0). Dims must be non-negative (checked by CheckShape).
int64_t NumElements(Span<int64_t> dims);

// Row-major strides in elements.
std::vector<int64_t> RowMajorStrides(Span<int64_t> dims);

// "[2,3,4]" for messages.
std::string DimsToString(Span<int64_t> dims);

// INVALID_ARGUMENT naming `what` when a dim is negative, the byte count could overflow int64, or the
// data pointer is null while the tensor has elements.
Status CheckTensor(const char* what, const void* data, Span<int64_t> dims);

// The element-type rules of dot_general and convolution: UNIMPLEMENTED (naming `op`) when a type is not one
// of pred, s8-s64, u8-u64, f16, bf16, f32, f64, complex64, complex128, or an operand type cannot be converted
// to the result type (allowed: pred->pred, integer->integer, float->float, float or complex->complex).
Status CheckOperandTypes(const char* op, ElementType lhs, ElementType rhs, ElementType result);

// For the routines' Check functions: INVALID_ARGUMENT when a dim of lhs or rhs is negative.
Status CheckNonNegative(const char* op, Span<int64_t> lhs_dims, Span<int64_t> rhs_dims);

// INVALID_ARGUMENT naming `op` when the result dims are not the expected ones.
Status CheckResultDims(const char* op, const std::vector<int64_t>& expected, Span<int64_t> result_dims);

// The common checks of a two-operand routine: operand dims, `shape(&expected)` (the op's own attribute checks),
// the result dims, and CheckOperandTypes.
template <typename ShapeFn>
Status CheckBinaryOperands(const char* op, ElementType lhs_type, Span<int64_t> lhs_dims, ElementType rhs_type,
                           Span<int64_t> rhs_dims, ElementType result_type, Span<int64_t> result_dims,
                           ShapeFn&& shape) {
  NEURONMEM_RETURN_IF_ERROR(CheckNonNegative(op, lhs_dims, rhs_dims));
  std::vector<int64_t> expected;
  NEURONMEM_RETURN_IF_ERROR(shape(&expected));
  NEURONMEM_RETURN_IF_ERROR(CheckResultDims(op, expected, result_dims));
  return CheckOperandTypes(op, lhs_type, rhs_type, result_type);
}

}  // namespace neuronmem::linalg
