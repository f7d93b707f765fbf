#include "linalg/dot_general.h"

#include <algorithm>
#include <string>

#include "linalg/element_traits.h"
#include "linalg/gemm.h"
#include "linalg/pack.h"
#include "linalg/small_gemv.h"

namespace neuronmem::linalg {
namespace {

using detail::Arith;
using detail::Dispatch;
using detail::ElementTypeOf;
using detail::MatrixOperand;

Status CheckAxes(const char* operand, const char* list, Span<int64_t> axes, size_t rank, std::vector<bool>* used) {
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    if (a < 0 || static_cast<size_t>(a) >= rank) {
      return InvalidArgument("dot_general: %s_%s_dimensions[%zu] = %lld is out of range for rank %zu", operand, list, i,
                             static_cast<long long>(a), rank);
    }
    if ((*used)[a]) {
      return InvalidArgument("dot_general: %s_%s_dimensions[%zu] = %lld repeats a dimension", operand, list, i,
                             static_cast<long long>(a));
    }
    (*used)[a] = true;
  }
  return Ok();
}

std::vector<int64_t> FreeAxes(size_t rank, Span<int64_t> batching, Span<int64_t> contracting) {
  std::vector<int64_t> free;
  for (size_t d = 0; d < rank; ++d) {
    const auto is = [d](Span<int64_t> s) { return std::find(s.begin(), s.end(), int64_t(d)) != s.end(); };
    if (!is(batching) && !is(contracting)) free.push_back(int64_t(d));
  }
  return free;
}

// The size and stride of a group of axes merged into one, when their layout allows it (each axis's stride
// is the next one's stride times its size; axes of size 1 do not matter).
struct Group {
  int64_t size = 1;
  int64_t stride = 0;
  bool mergeable = true;
};

Group MergeAxes(const std::vector<int64_t>& axes, Span<int64_t> dims, const std::vector<int64_t>& strides) {
  Group g;
  int64_t prev = -1;
  for (int64_t a : axes) {
    g.size *= dims[a];
    if (dims[a] == 1) continue;
    if (prev >= 0 && strides[prev] != strides[a] * dims[a]) g.mergeable = false;
    prev = a;
    g.stride = strides[a];
  }
  return g;
}

// An operand seen as batch x rows x cols for the matrix product (lhs: B x M x K, rhs: B x K x N).
struct OperandPlan {
  std::vector<int64_t> perm;  // batch axes, then row axes, then column axes
  std::vector<int64_t> batch_axes;
  Group batch, rows, cols;
};

OperandPlan PlanOperand(Span<int64_t> dims, const std::vector<int64_t>& batch_axes,
                        const std::vector<int64_t>& row_axes, const std::vector<int64_t>& col_axes) {
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  OperandPlan p;
  p.perm = batch_axes;
  p.batch_axes = batch_axes;
  p.perm.insert(p.perm.end(), row_axes.begin(), row_axes.end());
  p.perm.insert(p.perm.end(), col_axes.begin(), col_axes.end());
  p.batch = MergeAxes(batch_axes, dims, strides);
  p.rows = MergeAxes(row_axes, dims, strides);
  p.cols = MergeAxes(col_axes, dims, strides);
  return p;
}

// The element offset of each batch matrix in the stored operand: batch index i walks the batch axes row-major
// in their listed order (the result's batch order), whether or not they merge into one stride (attention's
// keys [batch, tokens, heads, head_dim] have batch axes 0 and 2).
std::vector<int64_t> BatchOffsets(Span<int64_t> dims, const OperandPlan& p) {
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> offsets(static_cast<size_t>(p.batch.size));
  std::vector<int64_t> idx(p.batch_axes.size(), 0);
  int64_t off = 0;
  for (int64_t& o : offsets) {
    o = off;
    for (size_t d = idx.size(); d-- > 0;) {
      const int64_t a = p.batch_axes[d];
      off += strides[a];
      if (++idx[d] < dims[a]) break;
      off -= strides[a] * dims[a];
      idx[d] = 0;
    }
  }
  return offsets;
}

// The matrix operand for Gemm when the stored layout allows one without copying (each batch matrix at its
// BatchOffsets entry).
template <typename T>
bool DirectMatrix(const OperandPlan& p, const T* data, MatrixOperand<T>* out) {
  if (!p.rows.mergeable || !p.cols.mergeable) return false;
  const int64_t r = p.rows.size, c = p.cols.size;
  if ((p.cols.stride == 1 || c == 1) && (r == 1 || p.rows.stride >= std::max<int64_t>(1, c))) {
    *out = {data, r == 1 ? std::max<int64_t>(1, c) : p.rows.stride, false};
    return true;
  }
  if ((p.rows.stride == 1 || r == 1) && (c == 1 || p.cols.stride >= std::max<int64_t>(1, r))) {
    *out = {data, c == 1 ? std::max<int64_t>(1, r) : p.cols.stride, true};
    return true;
  }
  return false;
}

template <typename T>
std::vector<T> Pack(const TensorRef& t, const OperandPlan& p) {
  const std::vector<int64_t> strides = RowMajorStrides(t.dims);
  std::vector<int64_t> sizes, pstrides;
  for (int64_t a : p.perm) {
    sizes.push_back(t.dims[a]);
    pstrides.push_back(strides[a]);
  }
  std::vector<T> out(static_cast<size_t>(p.batch.size * p.rows.size * p.cols.size));
  detail::PackPermutedFrom<T>(t.type, t.data, sizes, pstrides, out.data());
  return out;
}

// How a run sees one operand as Gemm's batch of matrices, decided once by the plan.
struct PlannedOperand {
  bool direct = false;  // read in place; else packed (converted and permuted) into a scratch array at each run
  int64_t ld = 1;
  bool trans = false;
  // The element offset of each batch matrix in the stored operand (direct) or in the packed array; empty when
  // the batch has more than kPlannedOffsets matrices (then each run computes them, to keep plans small).
  std::vector<int64_t> offsets;
};

constexpr int64_t kPlannedOffsets = 4096;

std::vector<int64_t> OperandOffsets(const PlannedOperand& o, Span<int64_t> dims, const OperandPlan& p) {
  if (o.direct) return BatchOffsets(dims, p);
  std::vector<int64_t> offsets(static_cast<size_t>(p.batch.size));
  for (size_t i = 0; i < offsets.size(); ++i) offsets[i] = static_cast<int64_t>(i) * p.rows.size * p.cols.size;
  return offsets;
}

// The plan of one operand for Gemm on T: in place when its type is T and its layout allows (DirectMatrix), else
// packed into a row-major batch x rows x cols array of T.
template <typename T>
PlannedOperand PlanGemmOperand(ElementType type, Span<int64_t> dims, const OperandPlan& p) {
  PlannedOperand o;
  MatrixOperand<T> m{};
  if (type == ElementTypeOf<T>() && DirectMatrix(p, static_cast<const T*>(nullptr), &m)) {
    o.direct = true;
    o.ld = m.ld;
    o.trans = m.trans;
  } else {
    o.ld = std::max<int64_t>(1, p.cols.size);
  }
  if (p.batch.size <= kPlannedOffsets) o.offsets = OperandOffsets(o, dims, p);
  return o;
}

// Everything a run needs (DotGeneralPlan::Impl).
struct PlanData {
  ElementType lhs_type = ElementType::kInvalid, rhs_type = ElementType::kInvalid;
  std::vector<int64_t> lhs_dims, rhs_dims;
  OperandPlan lp, rp;
  PlannedOperand a, b;  // the Gemm path's operands
  // The run for the result type and path; null when the result has no elements (nothing to write).
  void (*run)(const PlanData&, const void*, const void*, void*) = nullptr;
};

// Operand `o` at run time: its matrix (packing into `packed` when not direct) and its batch offsets (the planned
// ones, else computed into `offsets`).
template <typename T>
MatrixOperand<T> GemmOperand(const PlannedOperand& o, ElementType type, const void* data, Span<int64_t> dims,
                             const OperandPlan& p, std::vector<T>* packed, std::vector<int64_t>* offsets,
                             const int64_t** offsets_out) {
  *offsets_out = o.offsets.data();
  if (o.offsets.empty()) {
    *offsets = OperandOffsets(o, dims, p);
    *offsets_out = offsets->data();
  }
  if (o.direct) return {static_cast<const T*>(data), o.ld, o.trans};
  *packed = Pack<T>(TensorRef{type, data, dims}, p);
  return {packed->data(), o.ld, false};
}

template <typename T>
void RunPlannedGemm(const PlanData& d, const void* lhs, const void* rhs, void* result) {
  const int64_t batch = d.lp.batch.size, m = d.lp.rows.size, k = d.lp.cols.size, n = d.rp.cols.size;
  std::vector<T> lpacked, rpacked;
  std::vector<int64_t> lhs_offsets, rhs_offsets;
  const int64_t *ao = nullptr, *bo = nullptr;
  const MatrixOperand<T> a = GemmOperand<T>(d.a, d.lhs_type, lhs, d.lhs_dims, d.lp, &lpacked, &lhs_offsets, &ao);
  const MatrixOperand<T> b = GemmOperand<T>(d.b, d.rhs_type, rhs, d.rhs_dims, d.rp, &rpacked, &rhs_offsets, &bo);
  T* out = static_cast<T*>(result);
  for (int64_t i = 0; i < batch; ++i) {
    MatrixOperand<T> ai = a, bi = b;
    ai.data += ao[i];
    bi.data += bo[i];
    detail::Gemm<T>(m, n, k, ai, bi, out + i * m * n, std::max<int64_t>(1, n));
  }
}

// The exact path: operands converted and packed to B x M x K and B x K x N, then summed in the reference's
// order (k ascending for each output element).
template <typename T>
void RunExact(const TensorRef& lhs, const TensorRef& rhs, const OperandPlan& lp, const OperandPlan& rp, T* out) {
  using A = Arith<T>;
  const int64_t batch = lp.batch.size, m = lp.rows.size, k = lp.cols.size, n = rp.cols.size;
  const std::vector<T> a = Pack<T>(lhs, lp);
  const std::vector<T> b = Pack<T>(rhs, rp);
  std::vector<typename A::Acc> acc(static_cast<size_t>(n));
  for (int64_t bi = 0; bi < batch; ++bi) {
    const T* ab = a.data() + bi * m * k;
    const T* bb = b.data() + bi * k * n;
    for (int64_t i = 0; i < m; ++i) {
      std::fill(acc.begin(), acc.end(), A::Zero());
      for (int64_t kk = 0; kk < k; ++kk) {
        const T av = ab[i * k + kk];
        const T* brow = bb + kk * n;
        for (int64_t j = 0; j < n; ++j) acc[j] = A::MulAdd(acc[j], av, brow[j]);
      }
      T* orow = out + (bi * m + i) * n;
      for (int64_t j = 0; j < n; ++j) orow[j] = A::Store(acc[j]);
    }
  }
}

// The exact path on f32 operands read in place: ExactGemm per batch matrix (the same sums, bit for bit, without
// packing), else the scalar loop.
void RunPlannedExactF32(const PlanData& d, const void* lhs, const void* rhs, void* result) {
  const int64_t batch = d.lp.batch.size, m = d.lp.rows.size, k = d.lp.cols.size, n = d.rp.cols.size;
  std::vector<int64_t> lhs_offsets, rhs_offsets;
  const int64_t *ao = d.a.offsets.data(), *bo = d.b.offsets.data();
  if (d.a.offsets.empty()) ao = (lhs_offsets = OperandOffsets(d.a, d.lhs_dims, d.lp)).data();
  if (d.b.offsets.empty()) bo = (rhs_offsets = OperandOffsets(d.b, d.rhs_dims, d.rp)).data();
  const float *a = static_cast<const float*>(lhs), *b = static_cast<const float*>(rhs);
  float* out = static_cast<float*>(result);
  for (int64_t i = 0; i < batch; ++i) {
    if (!detail::ExactGemm(m, n, k, a + ao[i], d.a.ld, d.a.trans, b + bo[i], d.b.ld, d.b.trans, out + i * m * n,
                           std::max<int64_t>(1, n))) {
      RunExact<float>(TensorRef{d.lhs_type, lhs, d.lhs_dims}, TensorRef{d.rhs_type, rhs, d.rhs_dims}, d.lp, d.rp, out);
      return;
    }
  }
}

template <typename T>
void RunPlannedExact(const PlanData& d, const void* lhs, const void* rhs, void* result) {
  RunExact<T>(TensorRef{d.lhs_type, lhs, d.lhs_dims}, TensorRef{d.rhs_type, rhs, d.rhs_dims}, d.lp, d.rp,
              static_cast<T*>(result));
}

}  // namespace

Status DotGeneralShape(Span<int64_t> lhs_dims, Span<int64_t> rhs_dims, const DotDimensionNumbers& dn,
                       std::vector<int64_t>* result_dims) {
  if (dn.lhs_batching_dimensions.size() != dn.rhs_batching_dimensions.size()) {
    return InvalidArgument("dot_general: %zu lhs batching dimensions but %zu rhs batching dimensions",
                           dn.lhs_batching_dimensions.size(), dn.rhs_batching_dimensions.size());
  }
  if (dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size()) {
    return InvalidArgument("dot_general: %zu lhs contracting dimensions but %zu rhs contracting dimensions",
                           dn.lhs_contracting_dimensions.size(), dn.rhs_contracting_dimensions.size());
  }
  std::vector<bool> lhs_used(lhs_dims.size()), rhs_used(rhs_dims.size());
  NEURONMEM_RETURN_IF_ERROR(CheckAxes("lhs", "batching", dn.lhs_batching_dimensions, lhs_dims.size(), &lhs_used));
  NEURONMEM_RETURN_IF_ERROR(CheckAxes("lhs", "contracting", dn.lhs_contracting_dimensions, lhs_dims.size(), &lhs_used));
  NEURONMEM_RETURN_IF_ERROR(CheckAxes("rhs", "batching", dn.rhs_batching_dimensions, rhs_dims.size(), &rhs_used));
  NEURONMEM_RETURN_IF_ERROR(CheckAxes("rhs", "contracting", dn.rhs_contracting_dimensions, rhs_dims.size(), &rhs_used));
  for (size_t i = 0; i < dn.lhs_batching_dimensions.size(); ++i) {
    const int64_t l = lhs_dims[dn.lhs_batching_dimensions[i]], r = rhs_dims[dn.rhs_batching_dimensions[i]];
    if (l != r) {
      return InvalidArgument("dot_general: batching dimension pair %zu has sizes %lld (lhs) and %lld (rhs)", i,
                             static_cast<long long>(l), static_cast<long long>(r));
    }
  }
  for (size_t i = 0; i < dn.lhs_contracting_dimensions.size(); ++i) {
    const int64_t l = lhs_dims[dn.lhs_contracting_dimensions[i]], r = rhs_dims[dn.rhs_contracting_dimensions[i]];
    if (l != r) {
      return InvalidArgument("dot_general: contracting dimension pair %zu has sizes %lld (lhs) and %lld (rhs)", i,
                             static_cast<long long>(l), static_cast<long long>(r));
    }
  }
  std::vector<int64_t> dims;
  for (int64_t a : dn.lhs_batching_dimensions) dims.push_back(lhs_dims[a]);
  for (int64_t a : FreeAxes(lhs_dims.size(), dn.lhs_batching_dimensions, dn.lhs_contracting_dimensions)) {
    dims.push_back(lhs_dims[a]);
  }
  for (int64_t a : FreeAxes(rhs_dims.size(), dn.rhs_batching_dimensions, dn.rhs_contracting_dimensions)) {
    dims.push_back(rhs_dims[a]);
  }
  *result_dims = std::move(dims);
  return Ok();
}

Status CheckDotGeneral(ElementType lhs_type, Span<int64_t> lhs_dims, ElementType rhs_type, Span<int64_t> rhs_dims,
                       const DotDimensionNumbers& dn, ElementType result_type, Span<int64_t> result_dims) {
  return CheckBinaryOperands(
      "dot_general", lhs_type, lhs_dims, rhs_type, rhs_dims, result_type, result_dims,
      [&](std::vector<int64_t>* expected) { return DotGeneralShape(lhs_dims, rhs_dims, dn, expected); });
}

struct DotGeneralPlan::Impl : PlanData {};

DotGeneralPlan::DotGeneralPlan() = default;
DotGeneralPlan::~DotGeneralPlan() = default;
DotGeneralPlan::DotGeneralPlan(DotGeneralPlan&&) noexcept = default;
DotGeneralPlan& DotGeneralPlan::operator=(DotGeneralPlan&&) noexcept = default;

Status DotGeneralPlan::Make(ElementType lhs_type, Span<int64_t> lhs_dims, ElementType rhs_type, Span<int64_t> rhs_dims,
                            const DotDimensionNumbers& dn, ElementType result_type, Span<int64_t> result_dims,
                            bool exact, DotGeneralPlan* out) {
  NEURONMEM_RETURN_IF_ERROR(CheckDotGeneral(lhs_type, lhs_dims, rhs_type, rhs_dims, dn, result_type, result_dims));
  auto d = std::make_unique<Impl>();
  d->lhs_type = lhs_type;
  d->rhs_type = rhs_type;
  d->lhs_dims.assign(lhs_dims.begin(), lhs_dims.end());
  d->rhs_dims.assign(rhs_dims.begin(), rhs_dims.end());
  d->lp = PlanOperand(lhs_dims, dn.lhs_batching_dimensions,
                      FreeAxes(lhs_dims.size(), dn.lhs_batching_dimensions, dn.lhs_contracting_dimensions),
                      dn.lhs_contracting_dimensions);
  d->rp = PlanOperand(rhs_dims, dn.rhs_batching_dimensions, dn.rhs_contracting_dimensions,
                      FreeAxes(rhs_dims.size(), dn.rhs_batching_dimensions, dn.rhs_contracting_dimensions));
  if (NumElements(result_dims) != 0) {
    Dispatch(result_type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (detail::kIsGemmType<T>) {
        if (!exact) {
          d->a = PlanGemmOperand<T>(lhs_type, d->lhs_dims, d->lp);
          d->b = PlanGemmOperand<T>(rhs_type, d->rhs_dims, d->rp);
          d->run = RunPlannedGemm<T>;
          return;
        }
      }
      d->run = RunPlannedExact<T>;
      if constexpr (std::is_same_v<T, float>) {
        d->a = PlanGemmOperand<T>(lhs_type, d->lhs_dims, d->lp);
        d->b = PlanGemmOperand<T>(rhs_type, d->rhs_dims, d->rp);
        if (d->a.direct && d->b.direct) d->run = RunPlannedExactF32;
      }
    });
  }
  out->impl_ = std::move(d);
  return Ok();
}

void DotGeneralPlan::Run(const void* lhs, const void* rhs, void* result) const {
  if (impl_ && impl_->run) impl_->run(*impl_, lhs, rhs, result);
}

namespace {

Status RunDotGeneral(const TensorRef& lhs, const TensorRef& rhs, const DotDimensionNumbers& dn,
                     const MutableTensorRef& result, bool exact) {
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("dot_general lhs", lhs.data, lhs.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("dot_general rhs", rhs.data, rhs.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("dot_general result", result.data, result.dims));
  DotGeneralPlan plan;
  NEURONMEM_RETURN_IF_ERROR(
      DotGeneralPlan::Make(lhs.type, lhs.dims, rhs.type, rhs.dims, dn, result.type, result.dims, exact, &plan));
  plan.Run(lhs.data, rhs.data, result.data);
  return Ok();
}

}  // namespace

Status DotGeneral(const TensorRef& lhs, const TensorRef& rhs, const DotDimensionNumbers& dn,
                  const MutableTensorRef& result) {
  return RunDotGeneral(lhs, rhs, dn, result, false);
}

Status DotGeneralExact(const TensorRef& lhs, const TensorRef& rhs, const DotDimensionNumbers& dn,
                       const MutableTensorRef& result) {
  return RunDotGeneral(lhs, rhs, dn, result, true);
}

}  // namespace neuronmem::linalg
