#include "interpreter/reduce_vector.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "interpreter/elementwise_functors.h"
#include "interpreter/numeric.h"

// The lane loops below are written to be vectorized: GCC's -O2 cheap cost model leaves most of them scalar
// (clang's -O2 vectorizes them as it is).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

namespace neuronmem::interp {
namespace {

using Op = VectorReduce::Op;

// op(a, b) with the element-wise op's numerics (elementwise_functors.h); float maximum / minimum written without
// branches so that the lanes vectorize, with the same results: NaN wins (a's first), and of +0 and -0 the
// maximum is +0, the minimum -0.
template <typename T, Op O>
[[gnu::always_inline]] inline T Apply(T a, T b) {
  if constexpr (std::is_floating_point_v<T> && (O == Op::kMax || O == Op::kMin)) {
    bool pick_a;
    if constexpr (O == Op::kMax) {
      pick_a = a > b || (a == b && !std::signbit(a));
    } else {
      pick_a = a < b || (a == b && std::signbit(a));
    }
    T r = pick_a ? a : b;
    r = b != b ? b : r;
    return a != a ? a : r;
  } else if constexpr (O == Op::kAdd) {
    return elementwise::Add::Apply<T>(a, b);
  } else if constexpr (O == Op::kMul) {
    return elementwise::Mul::Apply<T>(a, b);
  } else if constexpr (O == Op::kMax) {
    return elementwise::Max::Apply<T>(a, b);
  } else {
    return elementwise::Min::Apply<T>(a, b);
  }
}

// The partial results of a row fold: 256 bytes of lanes.
template <typename T>
constexpr int64_t kLanes = 256 / static_cast<int64_t>(sizeof(T));

// acc folded with the n elements at x (the order of reduce_vector.h).
template <typename T, Op O>
[[gnu::always_inline]] inline T FoldRow(T acc, const T* __restrict x, int64_t n) {
  constexpr int64_t W = kLanes<T>;
  if (n < W) {
    for (int64_t i = 0; i < n; ++i) acc = Apply<T, O>(acc, x[i]);
    return acc;
  }
  T p[W];
  for (int64_t j = 0; j < W; ++j) p[j] = x[j];
  int64_t i = W;
  for (; i + W <= n; i += W) {
    for (int64_t j = 0; j < W; ++j) p[j] = Apply<T, O>(p[j], x[i + j]);
  }
  for (int64_t j = 0; i + j < n; ++j) p[j] = Apply<T, O>(p[j], x[i + j]);
  for (int64_t h = W / 2; h >= 1; h /= 2) {
    for (int64_t j = 0; j < h; ++j) p[j] = Apply<T, O>(p[j], p[j + h]);
  }
  return Apply<T, O>(acc, p[0]);
}

// Float maximum and minimum of a row by integer keys that sort as the floats do (-0 below +0): one integer
// max/min per lane. Without a NaN in the row the result is the fold's above, bit for bit (the maximum of a
// total order is one value whatever the order); a row with a NaN takes the fold above (NaN wins, the first).
template <typename T>
using KeyOf = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
template <typename T>
[[gnu::always_inline]] inline KeyOf<T> SortKey(T v) {  // its own inverse
  using K = KeyOf<T>;
  K b;
  std::memcpy(&b, &v, sizeof b);
  return b ^ ((b >> (8 * sizeof(K) - 1)) & std::numeric_limits<K>::max());
}
template <typename T>
[[gnu::always_inline]] inline T FromSortKey(KeyOf<T> k) {
  const KeyOf<T> b = k ^ ((k >> (8 * sizeof(k) - 1)) & std::numeric_limits<KeyOf<T>>::max());
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
template <typename T, Op O>
[[gnu::always_inline]] inline KeyOf<T> PickKey(KeyOf<T> a, KeyOf<T> b) {
  if constexpr (O == Op::kMax) {
    return a > b ? a : b;
  } else {
    return a < b ? a : b;
  }
}
template <typename T, Op O>
[[gnu::always_inline]] inline T FoldRowByKeys(T acc, const T* __restrict x, int64_t n) {
  using K = KeyOf<T>;
  constexpr int64_t W = kLanes<T>;
  K p[W];
  K nan = 0;
  for (int64_t j = 0; j < W; ++j) {
    p[j] = SortKey(x[j]);
    nan |= static_cast<K>(x[j] != x[j]);
  }
  int64_t i = W;
  for (; i + W <= n; i += W) {
    for (int64_t j = 0; j < W; ++j) {
      p[j] = PickKey<T, O>(p[j], SortKey(x[i + j]));
      nan |= static_cast<K>(x[i + j] != x[i + j]);
    }
  }
  for (int64_t j = 0; i + j < n; ++j) {
    p[j] = PickKey<T, O>(p[j], SortKey(x[i + j]));
    nan |= static_cast<K>(x[i + j] != x[i + j]);
  }
  if (nan) return FoldRow<T, O>(acc, x, n);
  for (int64_t h = W / 2; h >= 1; h /= 2) {
    for (int64_t j = 0; j < h; ++j) p[j] = PickKey<T, O>(p[j], p[j + h]);
  }
  return Apply<T, O>(acc, FromSortKey<T>(p[0]));
}

// acc[i] = op(acc[i], x[i]) for i < n.
template <typename T, Op O>
[[gnu::always_inline]] inline void AccumulateColumn(T* __restrict acc, const T* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = Apply<T, O>(acc[i], x[i]);
}

struct Layout {
  const int64_t* dims;
  const int64_t* rstrides;
  size_t rank;
  int64_t block;
  bool block_reduced;
  int64_t out_count;
};

template <typename T, Op O>
[[gnu::always_inline]] inline void RunImpl(const Layout& l, const void* init, const void* xv, void* outv) {
  T* out = static_cast<T*>(outv);
  const T* x = static_cast<const T*>(xv);
  T iv;
  std::memcpy(static_cast<void*>(&iv), init, sizeof(T));
  for (int64_t o = 0; o < l.out_count; ++o) out[o] = iv;
  int64_t blocks = 1;
  for (size_t d = 0; d < l.rank; ++d) blocks *= l.dims[d];
  std::vector<int64_t> idx(l.rank, 0);
  int64_t roff = 0;
  for (int64_t b = 0; b < blocks; ++b, x += l.block) {
    if (l.block_reduced) {
      if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>)&&(O == Op::kMax || O == Op::kMin)) {
        out[roff] =
            l.block < kLanes<T> ? FoldRow<T, O>(out[roff], x, l.block) : FoldRowByKeys<T, O>(out[roff], x, l.block);
      } else {
        out[roff] = FoldRow<T, O>(out[roff], x, l.block);
      }
    } else {
      AccumulateColumn<T, O>(out + roff, x, l.block);
    }
    for (size_t d = l.rank; d-- > 0;) {
      roff += l.rstrides[d];
      if (++idx[d] < l.dims[d]) break;
      roff -= l.rstrides[d] * l.dims[d];
      idx[d] = 0;
    }
  }
}

struct WindowLayout {
  size_t rank;
  const int64_t *in_dims, *out_dims, *window, *strides, *window_dilations, *pad_lo;
};

template <typename T, Op O>
[[gnu::always_inline]] inline void RunWindowImpl(const WindowLayout& l, const void* init, const void* xv, void* outv) {
  T* out = static_cast<T*>(outv);
  const T* x = static_cast<const T*>(xv);
  T iv;
  std::memcpy(static_cast<void*>(&iv), init, sizeof(T));
  const size_t last = l.rank - 1;
  int64_t out_count = 1, rows = 1, win_count = 1;
  for (size_t d = 0; d < l.rank; ++d) {
    out_count *= l.out_dims[d];
    win_count *= l.window[d];
    if (d < last) rows *= l.out_dims[d];
  }
  for (int64_t o = 0; o < out_count; ++o) out[o] = iv;
  std::vector<int64_t> in_str(l.rank, 1), w(l.rank, 0), oo(l.rank, 0);
  for (size_t d = last; d-- > 0;) in_str[d] = in_str[d + 1] * l.in_dims[d + 1];
  const int64_t n = l.out_dims[last], s = l.strides[last], in_n = l.in_dims[last];
  for (int64_t wi = 0; wi < win_count; ++wi) {
    // The run of results along the last dim reading the input at j * s + c, in bounds for j in [j0, j1).
    const int64_t c = w[last] * l.window_dilations[last] - l.pad_lo[last];
    int64_t j0 = c >= 0 ? 0 : (-c + s - 1) / s;
    int64_t j1 = in_n - 1 - c < 0 ? 0 : (in_n - 1 - c) / s + 1;
    j0 = std::min(j0, n);
    j1 = std::max(j0, std::min(j1, n));
    std::fill(oo.begin(), oo.end(), 0);
    for (int64_t r = 0; r < rows; ++r) {
      T* acc = out + r * n;
      int64_t off = 0;
      bool in_bounds = true;
      for (size_t d = 0; d < last; ++d) {
        const int64_t p = oo[d] * l.strides[d] + w[d] * l.window_dilations[d] - l.pad_lo[d];
        if (p < 0 || p >= l.in_dims[d]) in_bounds = false;
        off += p * in_str[d];
      }
      const int64_t a = in_bounds ? j0 : n, b = in_bounds ? j1 : n;
      for (int64_t j = 0; j < a; ++j) acc[j] = Apply<T, O>(acc[j], iv);
      if (a < b) {
        const T* xr = x + (off + c + a * s);  // element j >= a at xr[(j - a) * s]
        if (s == 1) {
          for (int64_t j = a; j < b; ++j) acc[j] = Apply<T, O>(acc[j], xr[j - a]);
        } else {
          for (int64_t j = a; j < b; ++j) acc[j] = Apply<T, O>(acc[j], xr[(j - a) * s]);
        }
      }
      for (int64_t j = b; j < n; ++j) acc[j] = Apply<T, O>(acc[j], iv);
      for (size_t d = last; d-- > 0;) {
        if (++oo[d] < l.out_dims[d]) break;
        oo[d] = 0;
      }
    }
    for (size_t d = l.rank; d-- > 0;) {
      if (++w[d] < l.window[d]) break;
      w[d] = 0;
    }
  }
}

// The same loops built for AVX-512 and for the baseline; their results are the same (IEEE operations in the
// same order).
template <typename T, Op O>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2"))) void RunAvx512(const Layout& l, const void* init,
                                                                                  const void* x, void* out) {
  RunImpl<T, O>(l, init, x, out);
}
template <typename T, Op O>
void RunBaseline(const Layout& l, const void* init, const void* x, void* out) {
  RunImpl<T, O>(l, init, x, out);
}
template <typename T, Op O>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2"))) void RunWindowAvx512(const WindowLayout& l,
                                                                                        const void* init, const void* x,
                                                                                        void* out) {
  RunWindowImpl<T, O>(l, init, x, out);
}
template <typename T, Op O>
void RunWindowBaseline(const WindowLayout& l, const void* init, const void* x, void* out) {
  RunWindowImpl<T, O>(l, init, x, out);
}

using RunFn = void (*)(const Layout&, const void*, const void*, void*);
using RunWindowFn = void (*)(const WindowLayout&, const void*, const void*, void*);
struct RunFns {
  RunFn avx512 = nullptr, baseline = nullptr;
  RunWindowFn window_avx512 = nullptr, window_baseline = nullptr;
};

template <typename T, Op O>
RunFns FnsForOp() {
  return {&RunAvx512<T, O>, &RunBaseline<T, O>, &RunWindowAvx512<T, O>, &RunWindowBaseline<T, O>};
}

template <typename T>
RunFns FnsFor(Op op) {
  switch (op) {
    case Op::kAdd: return FnsForOp<T, Op::kAdd>();
    case Op::kMul: return FnsForOp<T, Op::kMul>();
    case Op::kMax: return FnsForOp<T, Op::kMax>();
    case Op::kMin: return FnsForOp<T, Op::kMin>();
  }
  return {};
}

RunFns Find(ElementType t, Op op) {
  if (SubByteBits(t) != 0) return {};
  return Dispatch(t, [&](auto tag) -> RunFns {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> || kIsHalfLike<T> || kIsInt<T>) {
      return FnsFor<T>(op);
    } else {
      return {};
    }
  });
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx2");
  return has;
}

std::atomic<bool> g_force_baseline{false};
std::atomic<bool> g_enabled{true};

}  // namespace

bool VectorReduce::FindOp(ScalarBinaryFn body, ElementType t, Op* op) {
  static constexpr std::pair<std::string_view, Op> kOps[] = {{"stablehlo.add", Op::kAdd},
                                                             {"stablehlo.multiply", Op::kMul},
                                                             {"stablehlo.maximum", Op::kMax},
                                                             {"stablehlo.minimum", Op::kMin}};
  if (body == nullptr || !g_enabled.load(std::memory_order_relaxed)) return false;
  for (const auto& [name, o] : kOps) {
    if (FindScalarBinary(name, t) == body) {
      *op = o;
      return Find(t, o).baseline != nullptr;
    }
  }
  return false;
}

bool VectorReduce::Plan(ScalarBinaryFn body, ElementType t, const std::vector<int64_t>& in_dims,
                        const std::vector<bool>& reduced, VectorReduce* plan) {
  if (in_dims.size() != reduced.size()) return false;
  if (!FindOp(body, t, &plan->op_)) return false;
  // Drop size-1 dims, merge neighbours of one kind; an empty input has nothing to walk.
  std::vector<int64_t> dims;
  std::vector<bool> red;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (in_dims[d] == 0) return false;
    if (in_dims[d] == 1) continue;
    if (!red.empty() && red.back() == reduced[d]) {
      dims.back() *= in_dims[d];
    } else {
      dims.push_back(in_dims[d]);
      red.push_back(reduced[d]);
    }
  }
  plan->type_ = t;
  plan->out_count_ = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    if (!red[d]) plan->out_count_ *= dims[d];
  if (dims.empty()) {  // one element: a block of one kept element
    dims.push_back(1);
    red.push_back(false);
  }
  plan->block_ = dims.back();
  plan->block_reduced_ = red.back();
  // Result strides of the outer dims (0 for reduced ones); the block's kept elements are innermost.
  plan->outer_dims_.assign(dims.begin(), dims.end() - 1);
  plan->outer_rstrides_.assign(plan->outer_dims_.size(), 0);
  int64_t stride = plan->block_reduced_ ? 1 : plan->block_;
  for (size_t d = plan->outer_dims_.size(); d-- > 0;) {
    if (red[d]) continue;
    plan->outer_rstrides_[d] = stride;
    stride *= dims[d];
  }
  return true;
}

void VectorReduce::Run(const void* init, const void* x, void* out) const {
  const RunFns fns = Find(type_, op_);
  const Layout l{outer_dims_.data(), outer_rstrides_.data(), outer_dims_.size(), block_, block_reduced_, out_count_};
  const bool avx512 = HasAvx512() && !g_force_baseline.load(std::memory_order_relaxed);
  (avx512 ? fns.avx512 : fns.baseline)(l, init, x, out);
}

void VectorReduce::ForceBaseline(bool force) { g_force_baseline.store(force, std::memory_order_relaxed); }

void VectorReduce::SetEnabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

bool VectorReduceWindow::Plan(ScalarBinaryFn body, ElementType t, const std::vector<int64_t>& in_dims,
                              const std::vector<int64_t>& out_dims, const std::vector<int64_t>& window,
                              const std::vector<int64_t>& strides, const std::vector<int64_t>& base_dilations,
                              const std::vector<int64_t>& window_dilations, const std::vector<int64_t>& pad_lo,
                              VectorReduceWindow* plan) {
  const size_t rank = in_dims.size();
  if (rank == 0 || out_dims.size() != rank || window.size() != rank || strides.size() != rank ||
      base_dilations.size() != rank || window_dilations.size() != rank || pad_lo.size() != rank)
    return false;
  for (size_t d = 0; d < rank; ++d)
    if (base_dilations[d] != 1 || out_dims[d] == 0 || in_dims[d] == 0 || strides[d] < 1) return false;
  if (!VectorReduce::FindOp(body, t, &plan->op_)) return false;
  plan->type_ = t;
  plan->in_dims_ = in_dims;
  plan->out_dims_ = out_dims;
  plan->window_ = window;
  plan->strides_ = strides;
  plan->window_dilations_ = window_dilations;
  plan->pad_lo_ = pad_lo;
  return true;
}

void VectorReduceWindow::Run(const void* init, const void* x, void* out) const {
  const RunFns fns = Find(type_, op_);
  const WindowLayout l{in_dims_.size(), in_dims_.data(),          out_dims_.data(), window_.data(),
                       strides_.data(), window_dilations_.data(), pad_lo_.data()};
  const bool avx512 = HasAvx512() && !g_force_baseline.load(std::memory_order_relaxed);
  (avx512 ? fns.window_avx512 : fns.window_baseline)(l, init, x, out);
}

}  // namespace neuronmem::interp
