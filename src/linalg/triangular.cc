// stablehlo.triangular_solve and stablehlo.cholesky with Eigen, in double or complex<double>.
#include "linalg/triangular.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <complex>
#include <limits>
#include <string>
#include <vector>

#include "linalg/element_traits.h"
#include "linalg/scalar_io.h"

namespace neuronmem::linalg {
namespace {

template <typename S>
using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

bool Supported(ElementType t) {
  switch (t) {
    case ElementType::kF16:
    case ElementType::kBF16:
    case ElementType::kF32:
    case ElementType::kF64:
    case ElementType::kC64:
    case ElementType::kC128: return true;
    default: return false;
  }
}

Status CheckType(const char* op, ElementType t) {
  if (Supported(t)) return Ok();
  return Unimplemented("%s: element type %s is not supported (f16, bf16, f32, f64, complex64, complex128)", op,
                       std::string(ElementTypeName(t)).c_str());
}

// Computes in S = double for real storage types, complex<double> for complex ones.
template <typename T>
using ComputeOf = std::conditional_t<detail::kIsComplex<T>, detail::c128, double>;

template <typename T>
Matrix<ComputeOf<T>> Load(const T* data, int64_t rows, int64_t cols) {
  Matrix<ComputeOf<T>> m(rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const detail::c128 v = detail::ToC128(data[r * cols + c]);
      if constexpr (detail::kIsComplex<T>) {
        m(r, c) = v;
      } else {
        m(r, c) = v.real();
      }
    }
  }
  return m;
}

template <typename T, typename M>
void Store(const M& m, T* data) {
  for (int64_t r = 0; r < m.rows(); ++r) {
    for (int64_t c = 0; c < m.cols(); ++c) data[r * m.cols() + c] = detail::FromC128<T>(detail::c128(m(r, c)));
  }
}

// op(tri) X = B or X op(tri) = B, in place in x.
template <typename Tri, typename M>
void SolveWith(const Tri& tri, const TriangularSolveParams& p, M* x) {
  switch (p.transpose_a) {
    case TransposeA::kNoTranspose:
      if (p.left_side) {
        tri.template solveInPlace<Eigen::OnTheLeft>(*x);
      } else {
        tri.template solveInPlace<Eigen::OnTheRight>(*x);
      }
      break;
    case TransposeA::kTranspose:
      if (p.left_side) {
        tri.transpose().template solveInPlace<Eigen::OnTheLeft>(*x);
      } else {
        tri.transpose().template solveInPlace<Eigen::OnTheRight>(*x);
      }
      break;
    case TransposeA::kAdjoint:
      if (p.left_side) {
        tri.adjoint().template solveInPlace<Eigen::OnTheLeft>(*x);
      } else {
        tri.adjoint().template solveInPlace<Eigen::OnTheRight>(*x);
      }
      break;
  }
}

template <typename T>
void SolveBatches(const TensorRef& a, const TensorRef& b, const TriangularSolveParams& p, const MutableTensorRef& r) {
  const size_t rank = a.dims.size();
  const int64_t m = a.dims[rank - 1];
  const int64_t b_rows = b.dims[rank - 2], b_cols = b.dims[rank - 1];
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batches *= a.dims[d];
  const T* a_data = static_cast<const T*>(a.data);
  const T* b_data = static_cast<const T*>(b.data);
  T* out = static_cast<T*>(r.data);
  for (int64_t i = 0; i < batches; ++i) {
    const auto am = Load(a_data + i * m * m, m, m);
    auto x = Load(b_data + i * b_rows * b_cols, b_rows, b_cols);
    if (p.lower) {
      if (p.unit_diagonal) {
        SolveWith(am.template triangularView<Eigen::UnitLower>(), p, &x);
      } else {
        SolveWith(am.template triangularView<Eigen::Lower>(), p, &x);
      }
    } else if (p.unit_diagonal) {
      SolveWith(am.template triangularView<Eigen::UnitUpper>(), p, &x);
    } else {
      SolveWith(am.template triangularView<Eigen::Upper>(), p, &x);
    }
    Store(x, out + i * b_rows * b_cols);
  }
}

template <typename T>
void CholeskyBatches(const TensorRef& a, bool lower, const MutableTensorRef& r) {
  using S = ComputeOf<T>;
  const size_t rank = a.dims.size();
  const int64_t n = a.dims[rank - 1];
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batches *= a.dims[d];
  const T* a_data = static_cast<const T*>(a.data);
  T* out = static_cast<T*>(r.data);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t i = 0; i < batches; ++i) {
    const Matrix<S> am = Load(a_data + i * n * n, n, n);
    Matrix<S> factor;
    bool ok;
    if (lower) {
      Eigen::LLT<Matrix<S>, Eigen::Lower> llt(am);
      ok = llt.info() == Eigen::Success;
      factor = llt.matrixL();
    } else {
      Eigen::LLT<Matrix<S>, Eigen::Upper> llt(am);
      ok = llt.info() == Eigen::Success;
      factor = llt.matrixU();
    }
    // Eigen stops at the first non-positive pivot without a NaN; a NaN input can pass as "success".
    for (int64_t e = 0; ok && e < n * n; ++e) ok = !std::isnan(std::abs(factor.data()[e]));
    if (!ok) factor = Matrix<S>::Constant(n, n, S(nan));
    Store(factor, out + i * n * n);
  }
}

template <typename F>
void DispatchFloat(ElementType t, F&& f) {
  switch (t) {
    case ElementType::kF16: f(detail::Tag<detail::half>{}); break;
    case ElementType::kBF16: f(detail::Tag<detail::bfloat16>{}); break;
    case ElementType::kF32: f(detail::Tag<float>{}); break;
    case ElementType::kF64: f(detail::Tag<double>{}); break;
    case ElementType::kC64: f(detail::Tag<detail::c64>{}); break;
    default: f(detail::Tag<detail::c128>{}); break;
  }
}

}  // namespace

bool TransposeAFromName(const std::string& name, TransposeA* t) {
  if (name == "NO_TRANSPOSE") {
    *t = TransposeA::kNoTranspose;
  } else if (name == "TRANSPOSE") {
    *t = TransposeA::kTranspose;
  } else if (name == "ADJOINT") {
    *t = TransposeA::kAdjoint;
  } else {
    return false;
  }
  return true;
}

Status CheckTriangularSolve(ElementType a_type, Span<int64_t> a_dims, ElementType b_type, Span<int64_t> b_dims,
                            const TriangularSolveParams& params, ElementType result_type, Span<int64_t> result_dims) {
  NEURONMEM_RETURN_IF_ERROR(CheckNonNegative("triangular_solve", a_dims, b_dims));
  const size_t rank = a_dims.size();
  if (rank < 2) return InvalidArgument("triangular_solve: a has rank %zu; at least 2 is required", rank);
  if (a_dims[rank - 1] != a_dims[rank - 2]) {
    return InvalidArgument("triangular_solve: a must be square in its last two dims, not %s",
                           DimsToString(a_dims).c_str());
  }
  if (b_dims.size() != rank) {
    return InvalidArgument("triangular_solve: b has rank %zu; a has rank %zu", b_dims.size(), rank);
  }
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (a_dims[d] != b_dims[d]) {
      return InvalidArgument("triangular_solve: batch dim %zu of a (%lld) and b (%lld) differ", d,
                             static_cast<long long>(a_dims[d]), static_cast<long long>(b_dims[d]));
    }
  }
  const size_t solved = params.left_side ? rank - 2 : rank - 1;
  if (b_dims[solved] != a_dims[rank - 1]) {
    return InvalidArgument("triangular_solve: b dim %zu is %lld; with left_side = %s it must be a's %lld", solved,
                           static_cast<long long>(b_dims[solved]), params.left_side ? "true" : "false",
                           static_cast<long long>(a_dims[rank - 1]));
  }
  if (a_type != b_type || a_type != result_type) {
    return InvalidArgument("triangular_solve: a, b and the result must have one element type (%s, %s, %s)",
                           std::string(ElementTypeName(a_type)).c_str(), std::string(ElementTypeName(b_type)).c_str(),
                           std::string(ElementTypeName(result_type)).c_str());
  }
  NEURONMEM_RETURN_IF_ERROR(CheckType("triangular_solve", a_type));
  return CheckResultDims("triangular_solve", std::vector<int64_t>(b_dims.begin(), b_dims.end()), result_dims);
}

Status TriangularSolve(const TensorRef& a, const TensorRef& b, const TriangularSolveParams& params,
                       const MutableTensorRef& result) {
  NEURONMEM_RETURN_IF_ERROR(CheckTriangularSolve(a.type, a.dims, b.type, b.dims, params, result.type, result.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("triangular_solve a", a.data, a.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("triangular_solve b", b.data, b.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("triangular_solve result", result.data, result.dims));
  DispatchFloat(a.type, [&](auto tag) { SolveBatches<typename decltype(tag)::type>(a, b, params, result); });
  return Ok();
}

Status CheckCholesky(ElementType a_type, Span<int64_t> a_dims, ElementType result_type, Span<int64_t> result_dims) {
  NEURONMEM_RETURN_IF_ERROR(CheckNonNegative("cholesky", a_dims, a_dims));
  const size_t rank = a_dims.size();
  if (rank < 2) return InvalidArgument("cholesky: a has rank %zu; at least 2 is required", rank);
  if (a_dims[rank - 1] != a_dims[rank - 2]) {
    return InvalidArgument("cholesky: a must be square in its last two dims, not %s", DimsToString(a_dims).c_str());
  }
  if (a_type != result_type) {
    return InvalidArgument("cholesky: the result type %s differs from a's %s",
                           std::string(ElementTypeName(result_type)).c_str(),
                           std::string(ElementTypeName(a_type)).c_str());
  }
  NEURONMEM_RETURN_IF_ERROR(CheckType("cholesky", a_type));
  return CheckResultDims("cholesky", std::vector<int64_t>(a_dims.begin(), a_dims.end()), result_dims);
}

Status Cholesky(const TensorRef& a, bool lower, const MutableTensorRef& result) {
  NEURONMEM_RETURN_IF_ERROR(CheckCholesky(a.type, a.dims, result.type, result.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("cholesky a", a.data, a.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("cholesky result", result.data, result.dims));
  DispatchFloat(a.type, [&](auto tag) { CholeskyBatches<typename decltype(tag)::type>(a, lower, result); });
  return Ok();
}

}  // namespace neuronmem::linalg
