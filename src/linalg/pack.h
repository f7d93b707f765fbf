// Internal to src/linalg: gathering a permuted, strided view of a tensor into a contiguous row-major array,
// converting each element to the destination type on the way.
#pragma once

#include <cstdint>
#include <vector>

#include "linalg/element_traits.h"

namespace neuronmem::linalg::detail {

// out[row-major index over `sizes`] = convert(src[sum idx[d] * strides[d]]). sizes/strides have equal length
// (rank 0 copies one element). Writes NumElements(sizes) elements.
template <typename To, typename From>
void PackPermuted(const From* src, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, To* out) {
  const size_t r = sizes.size();
  if (r == 0) {
    *out = ConvertElement<To>(*src);
    return;
  }
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  const int64_t inner = sizes[r - 1];
  const int64_t inner_stride = strides[r - 1];
  std::vector<int64_t> idx(r - 1, 0);
  int64_t offset = 0;
  while (true) {
    const From* p = src + offset;
    if (inner_stride == 1) {
      for (int64_t j = 0; j < inner; ++j) *out++ = ConvertElement<To>(p[j]);
    } else {
      for (int64_t j = 0; j < inner; ++j) *out++ = ConvertElement<To>(p[j * inner_stride]);
    }
    size_t d = r - 1;
    while (d > 0) {
      --d;
      offset += strides[d];
      if (++idx[d] < sizes[d]) break;
      offset -= strides[d] * sizes[d];
      idx[d] = 0;
      if (d == 0) return;
    }
    if (r == 1) return;
  }
}

// The same with the source element type chosen at run time (only OperandConvertible pairs).
template <typename To>
void PackPermutedFrom(ElementType from, const void* src, const std::vector<int64_t>& sizes,
                      const std::vector<int64_t>& strides, To* out) {
  Dispatch(from, [&](auto tag) {
    using From = typename decltype(tag)::type;
    if constexpr ((kIsPred<To> && kIsPred<From>) || (kIsInt<To> && kIsInt<From>) || (kIsFloat<To> && kIsFloat<From>) ||
                  (kIsComplex<To> && (kIsFloat<From> || kIsComplex<From>))) {
      PackPermuted<To, From>(static_cast<const From*>(src), sizes, strides, out);
    }
  });
}

}  // namespace neuronmem::linalg::detail
