// Helpers for the linalg kernel tests: random tensors of any element type kept as doubles (real, imag)
// and materialized into storage, status checks, and element comparison.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "linalg/element_traits.h"
#include "linalg/gemm.h"
#include "linalg/tensor_ref.h"

namespace linalg_test {

using neuronmem::ElementType;
using neuronmem::linalg::Span;
namespace detail = neuronmem::linalg::detail;

inline std::string StatusText(const neuronmem::Status& s) { return s ? s->message : std::string("OK"); }

#define EXPECT_LINALG_OK(expr)                         \
  do {                                                 \
    ::neuronmem::Status _s = (expr);                   \
    EXPECT_FALSE(_s) << ::linalg_test::StatusText(_s); \
  } while (0)
#define ASSERT_LINALG_OK(expr)                         \
  do {                                                 \
    ::neuronmem::Status _s = (expr);                   \
    ASSERT_FALSE(_s) << ::linalg_test::StatusText(_s); \
  } while (0)
#define EXPECT_LINALG_CODE(expr, want_code)        \
  do {                                             \
    ::neuronmem::Status _s = (expr);               \
    ASSERT_TRUE(_s) << "expected an error";        \
    EXPECT_EQ(_s->code, want_code) << _s->message; \
  } while (0)

// A tensor: its element type, dims, and raw bytes.
struct Tensor {
  ElementType type;
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;

  Tensor(ElementType t, std::vector<int64_t> d) : type(t), dims(std::move(d)) {
    bytes.assign(static_cast<size_t>(neuronmem::linalg::NumElements(dims)) * neuronmem::ElementByteSize(t) + 1, 0);
  }
  int64_t size() const { return neuronmem::linalg::NumElements(dims); }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  neuronmem::linalg::TensorRef ref() const { return {type, bytes.data(), dims}; }
  neuronmem::linalg::MutableTensorRef mut() { return {type, bytes.data(), dims}; }

  // Element i as (real, imag) doubles.
  std::complex<double> Get(int64_t i) const {
    std::complex<double> v;
    detail::Dispatch(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T x = as<T>()[i];
      if constexpr (detail::kIsPred<T>)
        v = x.v ? 1.0 : 0.0;
      else if constexpr (detail::kIsComplex<T>)
        v = {double(x.real()), double(x.imag())};
      else if constexpr (detail::kIsHalfLike<T>)
        v = double(float(x));
      else
        v = double(x);
    });
    return v;
  }
  void Set(int64_t i, std::complex<double> v) {
    detail::Dispatch(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T& x = as<T>()[i];
      if constexpr (detail::kIsPred<T>)
        x.v = v.real() != 0;
      else if constexpr (detail::kIsComplex<T>)
        x = T(typename T::value_type(v.real()), typename T::value_type(v.imag()));
      else if constexpr (detail::kIsHalfLike<T>)
        x = T(float(v.real()));
      else
        x = static_cast<T>(v.real());
    });
  }
};

// Small integers (exact in every type), signed unless the type is unsigned; complex gets an imaginary part.
inline Tensor Random(ElementType t, std::vector<int64_t> dims, std::mt19937& rng, int range = 8) {
  Tensor x(t, std::move(dims));
  std::uniform_int_distribution<int> dist(neuronmem::IsUnsignedInt(t) ? 0 : -range, range);
  std::uniform_int_distribution<int> bit(0, 1);
  for (int64_t i = 0; i < x.size(); ++i) {
    if (t == ElementType::kPred) {
      x.Set(i, bit(rng));
    } else if (neuronmem::IsFloat(t) || neuronmem::IsComplex(t)) {
      // Quarter steps: exact in f16/bf16, products and short sums still exercise rounding.
      x.Set(i, {dist(rng) / 4.0 + dist(rng) / 64.0, neuronmem::IsComplex(t) ? dist(rng) / 4.0 : 0.0});
    } else {
      x.Set(i, dist(rng));
    }
  }
  return x;
}

// Row-major multi-index of a linear index.
inline std::vector<int64_t> Unravel(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = dims[d] ? i % dims[d] : 0;
    if (dims[d]) i /= dims[d];
  }
  return idx;
}
inline int64_t Ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t i = 0;
  for (size_t d = 0; d < dims.size(); ++d) i = i * dims[d] + idx[d];
  return i;
}

// Bitwise equality of two tensors (same type and dims), with a message at the first difference.
inline ::testing::AssertionResult BitEqual(const Tensor& a, const Tensor& b) {
  if (a.type != b.type || a.dims != b.dims) return ::testing::AssertionFailure() << "type or dims differ";
  const size_t w = neuronmem::ElementByteSize(a.type);
  for (int64_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(a.bytes.data() + i * w, b.bytes.data() + i * w, w) != 0) {
      return ::testing::AssertionFailure() << "element " << i << ": " << a.Get(i) << " vs " << b.Get(i);
    }
  }
  return ::testing::AssertionSuccess();
}

// |a - b| <= tol * scale[i] element-wise (scale: a magnitude bound of each exact value), NaN == NaN.
inline ::testing::AssertionResult Close(const Tensor& got, const std::vector<std::complex<double>>& want,
                                        const std::vector<double>& scale, double tol) {
  if (static_cast<size_t>(got.size()) != want.size()) return ::testing::AssertionFailure() << "size differs";
  for (int64_t i = 0; i < got.size(); ++i) {
    const auto g = got.Get(i), w = want[i];
    const bool gnan = std::isnan(g.real()) || std::isnan(g.imag()), wnan = std::isnan(w.real()) || std::isnan(w.imag());
    if (gnan || wnan) {
      if (gnan != wnan) return ::testing::AssertionFailure() << "element " << i << ": " << g << " vs " << w;
      continue;
    }
    if (std::abs(g - w) > tol * std::max(1.0, scale[i])) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
    }
  }
  return ::testing::AssertionSuccess();
}

// Every matrix-product backend Gemm can run on.
inline const detail::GemmBackend kAllGemmBackends[] = {detail::GemmBackend::kBlis, detail::GemmBackend::kOpenBlas,
                                                       detail::GemmBackend::kEigen};

inline const char* GemmBackendName(detail::GemmBackend b) {
  switch (b) {
    case detail::GemmBackend::kBlis: return "blis";
    case detail::GemmBackend::kOpenBlas: return "openblas";
    case detail::GemmBackend::kEigen: return "eigen";
  }
  return "?";
}

// Tests parameterized by (element type, matrix-product backend); skipped when that library is not installed.
class TypeAndBackendTest : public ::testing::TestWithParam<std::tuple<ElementType, detail::GemmBackend>> {
 protected:
  void SetUp() override {
    if (!detail::ForceGemmBackend(std::get<1>(GetParam()))) GTEST_SKIP() << "not installed";
  }
  void TearDown() override { detail::ResetGemmBackend(); }
};

// Test-name suffix for those parameters: "f32_blis", "complexf64_eigen".
inline std::string TypeAndBackendName(
    const ::testing::TestParamInfo<std::tuple<ElementType, detail::GemmBackend>>& info) {
  std::string name(neuronmem::ElementTypeName(std::get<0>(info.param)));
  name.erase(std::remove_if(name.begin(), name.end(), [](char c) { return !isalnum(static_cast<unsigned char>(c)); }),
             name.end());
  return name + "_" + GemmBackendName(std::get<1>(info.param));
}

}  // namespace linalg_test
