#include "linalg/convolution.h"

#include <algorithm>
#include <string>

#include "base/checked.h"
#include "linalg/element_traits.h"
#include "linalg/gemm.h"
#include "linalg/pack.h"

namespace neuronmem::linalg {
namespace {

using detail::Arith;
using detail::Dispatch;
using detail::ElementTypeOf;

Status CheckDimNumbers(const char* operand, size_t rank, std::initializer_list<std::pair<const char*, int64_t>> one,
                       const char* spatial_name, const std::vector<int64_t>& spatial) {
  std::vector<bool> used(rank);
  auto use = [&](const char* name, int64_t d) -> Status {
    if (d < 0 || static_cast<size_t>(d) >= rank) {
      return InvalidArgument("convolution: %s = %lld is out of range for %s rank %zu", name, static_cast<long long>(d),
                             operand, rank);
    }
    if (used[d])
      return InvalidArgument("convolution: %s = %lld repeats a %s dimension", name, static_cast<long long>(d), operand);
    used[d] = true;
    return Ok();
  };
  for (const auto& [name, d] : one) NEURONMEM_RETURN_IF_ERROR(use(name, d));
  if (spatial.size() + 2 != rank) {
    return InvalidArgument("convolution: %s has %zu entries, expected %zu", spatial_name, spatial.size(), rank - 2);
  }
  for (int64_t d : spatial) NEURONMEM_RETURN_IF_ERROR(use(spatial_name, d));
  return Ok();
}

template <typename V>
Status CheckListSize(const char* name, const V& v, size_t spatial) {
  if (!v.empty() && v.size() != spatial) {
    return InvalidArgument("convolution: %s has %zu entries, expected %zu", name, v.size(), spatial);
  }
  return Ok();
}

int64_t At(const std::vector<int64_t>& v, size_t i, int64_t dflt) { return v.empty() ? dflt : v[i]; }

// Everything the routines need, derived once from checked dims and attributes.
struct Geometry {
  size_t spatial = 0;
  int64_t groups = 1;  // G * B (one of them is 1)
  int64_t g_count = 1, b_count = 1;
  int64_t batch_out = 0;  // result batch size = lhs batch / B
  int64_t cg = 0;         // kernel input features (lhs features per feature group)
  int64_t og = 0;         // output features per group
  std::vector<int64_t> out_size, k_size;
  int64_t out_count = 1, k_count = 1;
  int64_t lb = 0, lf = 0, ki = 0, ko = 0, rb = 0, rf = 0;  // strides of the non-spatial dims
  std::vector<int64_t> ls, ks, rs;                         // strides of the spatial dims
  // tab[i][s * K_i + k] = lhs index along spatial dim i for output position s and kernel position k, or -1
  // where the product reads a padding or dilation zero.
  std::vector<std::vector<int64_t>> tab;
};

Geometry MakeGeometry(Span<int64_t> lhs_dims, Span<int64_t> rhs_dims, Span<int64_t> res_dims,
                      const ConvolutionParams& p) {
  Geometry g;
  g.spatial = p.input_spatial_dimensions.size();
  g.g_count = p.feature_group_count;
  g.b_count = p.batch_group_count;
  g.groups = g.g_count * g.b_count;
  g.batch_out = res_dims[p.output_batch_dimension];
  g.cg = rhs_dims[p.kernel_input_feature_dimension];
  g.og = rhs_dims[p.kernel_output_feature_dimension] / g.groups;
  const auto lst = RowMajorStrides(lhs_dims), kst = RowMajorStrides(rhs_dims), rst = RowMajorStrides(res_dims);
  g.lb = lst[p.input_batch_dimension];
  g.lf = lst[p.input_feature_dimension];
  g.ki = kst[p.kernel_input_feature_dimension];
  g.ko = kst[p.kernel_output_feature_dimension];
  g.rb = rst[p.output_batch_dimension];
  g.rf = rst[p.output_feature_dimension];
  for (size_t i = 0; i < g.spatial; ++i) {
    const int64_t in = lhs_dims[p.input_spatial_dimensions[i]];
    const int64_t k = rhs_dims[p.kernel_spatial_dimensions[i]];
    const int64_t out = res_dims[p.output_spatial_dimensions[i]];
    const int64_t stride = At(p.window_strides, i, 1), ldil = At(p.lhs_dilation, i, 1);
    const int64_t rdil = At(p.rhs_dilation, i, 1);
    const int64_t lo = p.padding.empty() ? 0 : p.padding[i].first;
    const bool rev = !p.window_reversal.empty() && p.window_reversal[i];
    g.out_size.push_back(out);
    g.k_size.push_back(k);
    g.out_count *= out;
    g.k_count *= k;
    g.ls.push_back(lst[p.input_spatial_dimensions[i]]);
    g.ks.push_back(kst[p.kernel_spatial_dimensions[i]]);
    g.rs.push_back(rst[p.output_spatial_dimensions[i]]);
    std::vector<int64_t> t(static_cast<size_t>(out * k));
    for (int64_t s = 0; s < out; ++s) {
      for (int64_t kk = 0; kk < k; ++kk) {
        const int64_t q = s * stride + (rev ? k - 1 - kk : kk) * rdil - lo;  // position in the dilated input
        t[s * k + kk] = (q >= 0 && q % ldil == 0 && q / ldil < in) ? q / ldil : -1;
      }
    }
    g.tab.push_back(std::move(t));
  }
  return g;
}

// Row-major decomposition of a linear index over `sizes` into `idx`.
void Unravel(int64_t i, const std::vector<int64_t>& sizes, std::vector<int64_t>* idx) {
  for (size_t d = sizes.size(); d-- > 0;) {
    (*idx)[d] = i % sizes[d];
    i /= sizes[d];
  }
}

// For each kernel position (linear over the spatial dims) at output position `os`: the lhs spatial offset,
// or -1 when it reads a zero. Also the rhs spatial offsets (independent of `os`).
void LhsOffsets(const Geometry& g, const std::vector<int64_t>& os, std::vector<int64_t>* offsets) {
  std::vector<int64_t> k(g.spatial, 0);
  for (int64_t kidx = 0; kidx < g.k_count; ++kidx) {
    Unravel(kidx, g.k_size, &k);
    int64_t off = 0;
    for (size_t i = 0; i < g.spatial; ++i) {
      const int64_t x = g.tab[i][os[i] * g.k_size[i] + k[i]];
      if (x < 0) {
        off = -1;
        break;
      }
      off += x * g.ls[i];
    }
    (*offsets)[kidx] = off;
  }
}

std::vector<int64_t> RhsOffsets(const Geometry& g) {
  std::vector<int64_t> offsets(static_cast<size_t>(g.k_count)), k(g.spatial, 0);
  for (int64_t kidx = 0; kidx < g.k_count; ++kidx) {
    Unravel(kidx, g.k_size, &k);
    int64_t off = 0;
    for (size_t i = 0; i < g.spatial; ++i) off += k[i] * g.ks[i];
    offsets[kidx] = off;
  }
  return offsets;
}

template <typename T>
T Zero() {
  if constexpr (detail::kIsPred<T>) {
    return T{0};
  } else {
    return T(0);
  }
}

// The operand as an array of T: in place when it already is one, else converted into `storage`.
template <typename T>
const T* AsType(const TensorRef& t, std::vector<T>* storage) {
  if (t.type == ElementTypeOf<T>()) return static_cast<const T*>(t.data);
  std::vector<int64_t> sizes(t.dims.begin(), t.dims.end());
  storage->resize(static_cast<size_t>(NumElements(t.dims)));
  detail::PackPermutedFrom<T>(t.type, t.data, sizes, RowMajorStrides(t.dims), storage->data());
  return storage->data();
}

// The group's lhs batch and feature offsets and its first output feature.
struct GroupBase {
  int64_t lhs_batch0, lhs_feature0, out_feature0;
};
GroupBase GroupOf(const Geometry& g, int64_t q) {
  return {(g.b_count > 1 ? q : 0) * g.batch_out, (g.g_count > 1 ? q : 0) * g.cg, q * g.og};
}

template <typename T>
void ExactConvolution(const Geometry& g, const T* lhs, const T* rhs, T* out) {
  using A = Arith<T>;
  const std::vector<int64_t> rhs_off = RhsOffsets(g);
  std::vector<int64_t> os(g.spatial, 0), lhs_off(static_cast<size_t>(g.k_count));
  const T zero = Zero<T>();
  for (int64_t s = 0; s < g.out_count; ++s) {
    Unravel(s, g.out_size, &os);
    LhsOffsets(g, os, &lhs_off);
    int64_t res_s = 0;
    for (size_t i = 0; i < g.spatial; ++i) res_s += os[i] * g.rs[i];
    for (int64_t q = 0; q < g.groups; ++q) {
      const GroupBase base = GroupOf(g, q);
      for (int64_t b = 0; b < g.batch_out; ++b) {
        const T* lb = lhs + (base.lhs_batch0 + b) * g.lb + base.lhs_feature0 * g.lf;
        for (int64_t j = 0; j < g.og; ++j) {
          const int64_t o = base.out_feature0 + j;
          typename A::Acc acc = A::Zero();
          for (int64_t kidx = 0; kidx < g.k_count; ++kidx) {
            const T* rk = rhs + rhs_off[kidx] + o * g.ko;
            const int64_t lo = lhs_off[kidx];
            for (int64_t c = 0; c < g.cg; ++c) {
              acc = A::MulAdd(acc, lo < 0 ? zero : lb[lo + c * g.lf], rk[c * g.ki]);
            }
          }
          out[b * g.rb + o * g.rf + res_s] = A::Store(acc);
        }
      }
    }
  }
}

// im2col + matrix product, per group: rows are (batch, output position), columns (kernel position, input
// feature); blocks of rows keep the patch matrix near 4 MiB.
template <typename T>
void GemmConvolution(const Geometry& g, const T* lhs, const T* rhs, T* out) {
  const int64_t kc = g.k_count * g.cg;
  const int64_t rows = g.batch_out * g.out_count;
  const int64_t block =
      std::max<int64_t>(1, std::min<int64_t>(rows, (int64_t(4) << 20) / int64_t(sizeof(T)) / std::max<int64_t>(1, kc)));
  const std::vector<int64_t> rhs_off = RhsOffsets(g);
  std::vector<T> w(static_cast<size_t>(kc * g.og)), patches(static_cast<size_t>(block * kc));
  std::vector<T> prod(static_cast<size_t>(block * g.og));
  std::vector<int64_t> os(g.spatial, 0), lhs_off(static_cast<size_t>(g.k_count)), res_s(static_cast<size_t>(block));
  for (int64_t q = 0; q < g.groups; ++q) {
    const GroupBase base = GroupOf(g, q);
    for (int64_t kidx = 0; kidx < g.k_count; ++kidx) {
      for (int64_t c = 0; c < g.cg; ++c) {
        T* wrow = w.data() + (kidx * g.cg + c) * g.og;
        const T* r = rhs + rhs_off[kidx] + c * g.ki + base.out_feature0 * g.ko;
        for (int64_t j = 0; j < g.og; ++j) wrow[j] = r[j * g.ko];
      }
    }
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t n = std::min(block, rows - r0);
      for (int64_t r = 0; r < n; ++r) {
        const int64_t b = (r0 + r) / g.out_count, s = (r0 + r) % g.out_count;
        Unravel(s, g.out_size, &os);
        LhsOffsets(g, os, &lhs_off);
        int64_t rs = b * g.rb;
        for (size_t i = 0; i < g.spatial; ++i) rs += os[i] * g.rs[i];
        res_s[r] = rs;
        const T* lb = lhs + (base.lhs_batch0 + b) * g.lb + base.lhs_feature0 * g.lf;
        T* prow = patches.data() + r * kc;
        for (int64_t kidx = 0; kidx < g.k_count; ++kidx) {
          const int64_t lo = lhs_off[kidx];
          T* dst = prow + kidx * g.cg;
          if (lo < 0) {
            std::fill(dst, dst + g.cg, T(0));
          } else {
            for (int64_t c = 0; c < g.cg; ++c) dst[c] = lb[lo + c * g.lf];
          }
        }
      }
      detail::Gemm<T>(n, g.og, kc, {patches.data(), std::max<int64_t>(1, kc), false},
                      {w.data(), std::max<int64_t>(1, g.og), false}, prod.data(), std::max<int64_t>(1, g.og));
      for (int64_t r = 0; r < n; ++r) {
        T* dst = out + res_s[r] + base.out_feature0 * g.rf;
        const T* src = prod.data() + r * g.og;
        for (int64_t j = 0; j < g.og; ++j) dst[j * g.rf] = src[j];
      }
    }
  }
}

Status Run(const TensorRef& lhs, const TensorRef& rhs, const ConvolutionParams& p, const MutableTensorRef& result,
           bool allow_gemm) {
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("convolution lhs", lhs.data, lhs.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("convolution rhs", rhs.data, rhs.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("convolution result", result.data, result.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckConvolution(lhs.type, lhs.dims, rhs.type, rhs.dims, p, result.type, result.dims));
  if (NumElements(result.dims) == 0) return Ok();
  const Geometry g = MakeGeometry(lhs.dims, rhs.dims, result.dims, p);
  Dispatch(result.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> lstore, rstore;
    const T* l = AsType<T>(lhs, &lstore);
    const T* r = AsType<T>(rhs, &rstore);
    T* out = static_cast<T*>(result.data);
    if constexpr (detail::kIsGemmType<T>) {
      if (allow_gemm) {
        GemmConvolution<T>(g, l, r, out);
        return;
      }
    }
    ExactConvolution<T>(g, l, r, out);
  });
  return Ok();
}

}  // namespace

Status ConvolutionShape(Span<int64_t> lhs_dims, Span<int64_t> rhs_dims, const ConvolutionParams& p,
                        std::vector<int64_t>* result_dims) {
  const size_t rank = lhs_dims.size();
  if (rank < 2) return InvalidArgument("convolution: lhs rank %zu is below 2", rank);
  if (rhs_dims.size() != rank) {
    return InvalidArgument("convolution: lhs rank %zu and rhs rank %zu differ", rank, rhs_dims.size());
  }
  const size_t spatial = rank - 2;
  NEURONMEM_RETURN_IF_ERROR(CheckListSize("window_strides", p.window_strides, spatial));
  NEURONMEM_RETURN_IF_ERROR(CheckListSize("padding", p.padding, spatial));
  NEURONMEM_RETURN_IF_ERROR(CheckListSize("lhs_dilation", p.lhs_dilation, spatial));
  NEURONMEM_RETURN_IF_ERROR(CheckListSize("rhs_dilation", p.rhs_dilation, spatial));
  NEURONMEM_RETURN_IF_ERROR(CheckListSize("window_reversal", p.window_reversal, spatial));
  for (const auto* list : {&p.window_strides, &p.lhs_dilation, &p.rhs_dilation}) {
    for (size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i] <= 0) {
        const char* name = list == &p.window_strides ? "window_strides"
                           : list == &p.lhs_dilation ? "lhs_dilation"
                                                     : "rhs_dilation";
        return InvalidArgument("convolution: %s[%zu] = %lld is not positive", name, i,
                               static_cast<long long>((*list)[i]));
      }
    }
  }
  NEURONMEM_RETURN_IF_ERROR(CheckDimNumbers(
      "lhs", rank,
      {{"input_batch_dimension", p.input_batch_dimension}, {"input_feature_dimension", p.input_feature_dimension}},
      "input_spatial_dimensions", p.input_spatial_dimensions));
  NEURONMEM_RETURN_IF_ERROR(CheckDimNumbers("rhs", rank,
                                            {{"kernel_input_feature_dimension", p.kernel_input_feature_dimension},
                                             {"kernel_output_feature_dimension", p.kernel_output_feature_dimension}},
                                            "kernel_spatial_dimensions", p.kernel_spatial_dimensions));
  NEURONMEM_RETURN_IF_ERROR(CheckDimNumbers(
      "result", rank,
      {{"output_batch_dimension", p.output_batch_dimension}, {"output_feature_dimension", p.output_feature_dimension}},
      "output_spatial_dimensions", p.output_spatial_dimensions));
  const int64_t fg = p.feature_group_count, bg = p.batch_group_count;
  if (fg <= 0)
    return InvalidArgument("convolution: feature_group_count = %lld is not positive", static_cast<long long>(fg));
  if (bg <= 0)
    return InvalidArgument("convolution: batch_group_count = %lld is not positive", static_cast<long long>(bg));
  if (fg > 1 && bg > 1)
    return InvalidArgument("convolution: feature_group_count and batch_group_count are both above 1");
  const int64_t in_batch = lhs_dims[p.input_batch_dimension], in_feat = lhs_dims[p.input_feature_dimension];
  const int64_t k_in = rhs_dims[p.kernel_input_feature_dimension], k_out = rhs_dims[p.kernel_output_feature_dimension];
  if (in_batch % bg != 0) {
    return InvalidArgument("convolution: input batch size %lld is not divisible by batch_group_count %lld",
                           static_cast<long long>(in_batch), static_cast<long long>(bg));
  }
  if (in_feat % fg != 0) {
    return InvalidArgument("convolution: input feature size %lld is not divisible by feature_group_count %lld",
                           static_cast<long long>(in_feat), static_cast<long long>(fg));
  }
  if (k_in != in_feat / fg) {
    return InvalidArgument(
        "convolution: kernel input feature size %lld is not input features / feature_group_count = %lld",
        static_cast<long long>(k_in), static_cast<long long>(in_feat / fg));
  }
  if (k_out % (fg * bg) != 0) {
    return InvalidArgument("convolution: kernel output feature size %lld is not divisible by the group count %lld",
                           static_cast<long long>(k_out), static_cast<long long>(fg * bg));
  }
  std::vector<int64_t> dims(rank);
  dims[p.output_batch_dimension] = in_batch / bg;
  dims[p.output_feature_dimension] = k_out;
  for (size_t i = 0; i < spatial; ++i) {
    // Checked (base/checked.h): strides, dilations and padding near INT64_MAX overflow the formula.
    if (!WindowedSize(lhs_dims[p.input_spatial_dimensions[i]], rhs_dims[p.kernel_spatial_dimensions[i]],
                      At(p.window_strides, i, 1), p.padding.empty() ? 0 : p.padding[i].first,
                      p.padding.empty() ? 0 : p.padding[i].second, At(p.lhs_dilation, i, 1), At(p.rhs_dilation, i, 1),
                      &dims[p.output_spatial_dimensions[i]]))
      return InvalidArgument(
          "convolution: the window's extent in spatial dimension %zu overflows (or is beyond 2^48 elements)", i);
  }
  *result_dims = std::move(dims);
  return Ok();
}

Status CheckConvolution(ElementType lhs_type, Span<int64_t> lhs_dims, ElementType rhs_type, Span<int64_t> rhs_dims,
                        const ConvolutionParams& params, ElementType result_type, Span<int64_t> result_dims) {
  return CheckBinaryOperands(
      "convolution", lhs_type, lhs_dims, rhs_type, rhs_dims, result_type, result_dims,
      [&](std::vector<int64_t>* expected) { return ConvolutionShape(lhs_dims, rhs_dims, params, expected); });
}

Status Convolution(const TensorRef& lhs, const TensorRef& rhs, const ConvolutionParams& params,
                   const MutableTensorRef& result) {
  return Run(lhs, rhs, params, result, /*allow_gemm=*/true);
}

Status ConvolutionExact(const TensorRef& lhs, const TensorRef& rhs, const ConvolutionParams& params,
                        const MutableTensorRef& result) {
  return Run(lhs, rhs, params, result, /*allow_gemm=*/false);
}

}  // namespace neuronmem::linalg
