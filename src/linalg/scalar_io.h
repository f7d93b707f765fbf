// Internal to src/linalg: reading any float or complex element as std::complex<double> and writing it back,
// for the routines that compute in double whatever the storage type (fft, triangular_solve, cholesky).
#pragma once

#include <complex>

#include "linalg/element_traits.h"

namespace neuronmem::linalg::detail {

template <typename T>
inline c128 ToC128(const T& x) {
  if constexpr (kIsComplex<T>) {
    return c128(static_cast<double>(x.real()), static_cast<double>(x.imag()));
  } else {
    return c128(static_cast<double>(static_cast<float>(x)), 0.0);
  }
}
template <>
inline c128 ToC128<double>(const double& x) {
  return c128(x, 0.0);
}

// The nearest T (one rounding, ties to even); real types keep the real part.
template <typename T>
inline T FromC128(c128 c) {
  if constexpr (std::is_same_v<T, c128>) {
    return c;
  } else if constexpr (std::is_same_v<T, c64>) {
    return c64(static_cast<float>(c.real()), static_cast<float>(c.imag()));
  } else if constexpr (std::is_same_v<T, double>) {
    return c.real();
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(c.real());
  } else {
    return RoundFromDouble<T>(c.real());
  }
}

}  // namespace neuronmem::linalg::detail
