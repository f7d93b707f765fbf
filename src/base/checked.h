// Checked shape arithmetic (issue 23, class 2): every element count, byte size and dim the interpreter's
// compiler (and src/linalg's shape functions) derive from types or attributes goes through these, so a shape near
// INT64_MAX is refused at compile time instead of wrapping (undefined behaviour) and making a kernel compute on a
// wrapped count, or loop for ever.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/element_type.h"

namespace neuronmem {

// The largest value the interpreter makes: a program whose values (or a window's work, see kMaxSteps) exceed
// it cannot run on any host it serves, and compile says so instead.
constexpr int64_t kMaxValueBytes = int64_t{1} << 40;
// The most inner steps one op may take (a window's or a reduction's element visits): above it an op would run
// for days.
constexpr int64_t kMaxSteps = int64_t{1} << 48;

// Accumulates int64 arithmetic; `ok` turns false on the first overflow and stays false (the values computed
// after it are meaningless, callers test ok once at the end).
class Checked {
 public:
  int64_t Add(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) ok_ = false;
    return r;
  }
  int64_t Sub(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) ok_ = false;
    return r;
  }
  int64_t Mul(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) ok_ = false;
    return r;
  }
  // Product of n dims (negative dims make it not ok).
  int64_t Product(const int64_t* dims, size_t n) {
    int64_t r = 1;
    for (size_t i = 0; i < n; ++i) {
      if (dims[i] < 0) ok_ = false;
      r = Mul(r, dims[i]);
    }
    return r;
  }
  // Fails unless 0 <= v <= max.
  int64_t Bound(int64_t v, int64_t max) {
    if (v < 0 || v > max) ok_ = false;
    return v;
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = true;
};

// The element count and byte size of a value of `type` with `dims`: false if a dim is negative, the count
// overflows, or the bytes exceed kMaxValueBytes (then *count and *bytes are left 0).
inline bool ValueSize(const int64_t* dims, size_t rank, ElementType type, int64_t* count, size_t* bytes) {
  Checked c;
  const int64_t n = c.Product(dims, rank);
  const int64_t b = c.Bound(c.Mul(n, static_cast<int64_t>(ElementByteSize(type))), kMaxValueBytes);
  if (!c.ok()) {
    *count = 0;
    *bytes = 0;
    return false;
  }
  *count = n;
  *bytes = static_cast<size_t>(b);
  return true;
}

// The largest padding, padded extent and dilated window a windowed op takes (2^48 elements, beyond any tensor), so
// that the kernels' index arithmetic (a position is out * stride + win * dilation - pad) cannot overflow.
constexpr int64_t kMaxWindowExtent = int64_t{1} << 48;

// The size of a windowed dimension (reduce_window, select_and_scatter, convolution: the spec's formula): the
// input of size `in` dilated by `base_dil` and padded by lo and hi, a window of `win` elements dilated by
// `win_dil`, moved by `stride` (positive). 0 when the window does not fit. False on overflow, or where the padding,
// the padded extent or the dilated window is beyond kMaxWindowExtent.
inline bool WindowedSize(int64_t in, int64_t win, int64_t stride, int64_t lo, int64_t hi, int64_t base_dil,
                         int64_t win_dil, int64_t* out) {
  Checked c;
  const int64_t dilated = in == 0 ? 0 : c.Add(c.Mul(in - 1, base_dil), 1);
  const int64_t padded = c.Add(c.Add(dilated, lo), hi);
  const int64_t window = win == 0 ? 0 : c.Add(c.Mul(win - 1, win_dil), 1);
  if (!c.ok() || stride <= 0) return false;
  const auto beyond = [](int64_t v) { return v > kMaxWindowExtent || v < -kMaxWindowExtent; };
  if (beyond(lo) || beyond(hi) || beyond(padded) || beyond(window)) return false;
  *out = padded <= 0 || window > padded ? 0 : (padded - window) / stride + 1;
  return true;
}

}  // namespace neuronmem
