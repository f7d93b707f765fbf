// chlo.ragged_dot (CHLO's RaggedDotOp, ChloOps.td / ChloOps.cpp): a dot_general over one ragged lhs
// dimension whose extent is split into groups by `group_sizes`. Three modes, by the kind of that dimension:
//   1. non-contracting (m): [b,m,k] x [g,b,k,n], group_sizes [b,g] -> [b,m,n]; row m of group j is
//      multiplied by the rhs's group j (the rhs has exactly one group dimension);
//   2. contracting (k):     [b,m,k] x [b,k,n],   group_sizes [b,g] -> [g,b,m,n]; result j contracts over the
//      k of group j only;
//   3. batch (b):           [b,m,k] x [b,k,n],   group_sizes [g]   -> [b,m,n]; dot_general's result.
// group_sizes is [b..., x..., g] (CHLO: all lhs batch dims, then in mode 1 the lhs free dims before the
// ragged one, in mode 2 the lhs contracting dims listed before it; in mode 3 only the batch dims listed
// before it), or [g] for every prefix. The result dims are [g (mode 2)] + batch + lhs free + rhs free.
//
// Groups take consecutive ranges of the ragged dimension from 0. Their sizes must be non-negative and add up
// to at most the ragged dimension (a run fails with the op, its location and the sizes otherwise); indices
// past the last group belong to none, and what they would compute is 0, as in XLA and jax.lax.ragged_dot.
//
// Operands are converted to the accumulation type (f64 for float results, complex128 for complex ones, i64
// for integer and pred ones: integer sums wrap to the result's width as dot_general's do) and the result is
// rounded once.
#include <algorithm>
#include <string>
#include <vector>

#include "interpreter/elementwise.h"
#include "interpreter/quant.h"

namespace neuronmem::interp {
namespace {

enum class Mode { kNonContracting = 1, kContracting = 2, kBatch = 3 };

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Everything the kernel needs, fixed at compile time.
struct Plan {
  Mode mode = Mode::kNonContracting;
  int64_t groups = 0;        // g
  int64_t ragged_size = 0;   // the lhs ragged dimension's extent
  int64_t num_prefixes = 1;  // product of group_sizes' leading dims (1 for [g])
  bool broadcast_sizes = false;
  std::vector<int64_t> sizes_dims;  // group_sizes' dims
  // The result, one entry per result dim: its stride in lhs and rhs (0 if the dim is not theirs), its weight
  // in the group_sizes prefix index, and whether it is the ragged (lhs free or batch) dim or mode 2's group.
  std::vector<int64_t> result_dims, res_lhs_stride, res_rhs_stride, res_prefix_weight;
  int res_ragged = -1;  // result dim holding the ragged index (modes 1 and 3)
  int res_group = -1;   // mode 2: result dim 0
  // The contraction index space, flattened: per index its lhs and rhs offsets; mode 2: its ragged index and
  // its prefix contribution.
  std::vector<int64_t> k_lhs, k_rhs, k_ragged, k_prefix;
  int64_t rhs_group_stride = 0;  // mode 1
};

template <typename A>
inline A MulAdd(A acc, A a, A b) {
  if constexpr (std::is_same_v<A, int64_t>) {
    return static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return acc + a * b;
  }
}

class RaggedDotKernel final : public Kernel {
 public:
  RaggedDotKernel(const stablehlo::Operation* at, Plan p, ElementType acc, uint32_t lhs, uint32_t rhs, uint32_t sizes,
                  uint32_t bounds, uint32_t out, std::string filename)
      : at_(at),
        p_(std::move(p)),
        acc_(acc),
        lhs_(lhs),
        rhs_(rhs),
        sizes_(sizes),
        bounds_(bounds),
        out_(out),
        filename_(std::move(filename)) {}

  Status Run(Frame& f) const override {
    NEURONMEM_RETURN_IF_ERROR(Bounds(f));
    switch (acc_) {
      case ElementType::kF64: Compute<double>(f); break;
      case ElementType::kC128: Compute<c128>(f); break;
      default: Compute<int64_t>(f); break;
    }
    return Status();
  }

 private:
  // bounds[prefix * (g + 1) + j]: where group j starts; entry g is where the last one ends.
  Status Bounds(Frame& f) const {
    const int64_t* sizes = Ptr<int64_t>(f, sizes_);
    int64_t* bounds = Ptr<int64_t>(f, bounds_);
    const int64_t g = p_.groups;
    for (int64_t pre = 0; pre < p_.num_prefixes; ++pre) {
      const int64_t* s = sizes + (p_.broadcast_sizes ? 0 : pre * g);
      int64_t* b = bounds + pre * (g + 1);
      b[0] = 0;
      for (int64_t j = 0; j < g; ++j) {
        if (s[j] < 0 || s[j] > p_.ragged_size - b[j]) return Bad(s, pre, j);
        b[j + 1] = b[j] + s[j];
      }
    }
    return Status();
  }

  Status Bad(const int64_t* s, int64_t pre, int64_t j) const {
    std::string list = "[";
    for (int64_t i = 0; i < p_.groups; ++i) list += (i ? ", " : "") + std::to_string(s[i]);
    list += "]";
    std::string where;
    if (!p_.broadcast_sizes && p_.sizes_dims.size() > 1) {
      std::vector<int64_t> prefix_dims(p_.sizes_dims.begin(), p_.sizes_dims.end() - 1);
      where = " at group_sizes" + FormatIndex(prefix_dims, pre);
    }
    const std::string why = s[j] < 0 ? "group " + std::to_string(j) + " has a negative size"
                                     : "they add up to more than the ragged dimension's " +
                                           std::to_string(p_.ragged_size) + " (from group " + std::to_string(j) + ")";
    return InvalidArgument("%s: '%.*s': group sizes %s%s do not fit the ragged dimension: %s",
                           FormatLocation(filename_, *at_).c_str(), static_cast<int>(at_->name.size()),
                           at_->name.data(), list.c_str(), where.c_str(), why.c_str());
  }

  // The group of ragged index r under prefix `pre`, or -1 past the last group.
  int64_t GroupOf(const int64_t* bounds, int64_t pre, int64_t r) const {
    const int64_t* b = bounds + pre * (p_.groups + 1);
    if (r >= b[p_.groups]) return -1;
    return static_cast<int64_t>(std::upper_bound(b + 1, b + p_.groups + 1, r) - (b + 1));
  }

  template <typename A>
  void Compute(Frame& f) const {
    const A* lhs = Ptr<const A>(f, lhs_);
    const A* rhs = Ptr<const A>(f, rhs_);
    A* out = Ptr<A>(f, out_);
    const int64_t* bounds = Ptr<const int64_t>(f, bounds_);
    const size_t rank = p_.result_dims.size();
    std::vector<int64_t> idx(rank, 0);
    int64_t count = 1;
    for (int64_t d : p_.result_dims) count *= d;
    const int64_t kn = static_cast<int64_t>(p_.k_lhs.size());
    for (int64_t e = 0; e < count; ++e) {
      int64_t lo = 0, ro = 0, pre = 0;
      for (size_t d = 0; d < rank; ++d) {
        lo += idx[d] * p_.res_lhs_stride[d];
        ro += idx[d] * p_.res_rhs_stride[d];
        pre += idx[d] * p_.res_prefix_weight[d];
      }
      A acc = A(0);
      if (p_.mode == Mode::kContracting) {
        const int64_t want = idx[p_.res_group];
        for (int64_t k = 0; k < kn; ++k) {
          if (GroupOf(bounds, pre + p_.k_prefix[k], p_.k_ragged[k]) != want) continue;
          acc = MulAdd(acc, lhs[lo + p_.k_lhs[k]], rhs[ro + p_.k_rhs[k]]);
        }
      } else {
        const int64_t group = GroupOf(bounds, pre, idx[p_.res_ragged]);
        if (group >= 0) {
          ro += group * p_.rhs_group_stride;  // 0 in mode 3
          for (int64_t k = 0; k < kn; ++k) acc = MulAdd(acc, lhs[lo + p_.k_lhs[k]], rhs[ro + p_.k_rhs[k]]);
        }
      }
      out[e] = acc;
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < p_.result_dims[d]) break;
        idx[d] = 0;
      }
    }
  }

  const stablehlo::Operation* at_;
  Plan p_;
  ElementType acc_;
  uint32_t lhs_, rhs_, sizes_, bounds_, out_;
  std::string filename_;
};

// The dimension numbers from #chlo.ragged_dot<lhs_batching_dimensions = [...], ...>.
struct Numbers {
  std::vector<int64_t> lb, rb, lc, rc, lr, rg;
};

Status ReadNumbers(CompileCtx& cx, Numbers* n) {
  const stablehlo::Attribute* a = cx.Attr("ragged_dot_dimension_numbers");
  if (!a) return cx.Invalid("missing ragged_dot_dimension_numbers");
  const auto list = [&](std::string_view key, std::vector<int64_t>* out) {
    out->clear();
    const stablehlo::Attribute* e = a->Get(key);
    return !e || CompileCtx::IntListOf(*e, out);
  };
  if (!list("lhs_batching_dimensions", &n->lb) || !list("rhs_batching_dimensions", &n->rb) ||
      !list("lhs_contracting_dimensions", &n->lc) || !list("rhs_contracting_dimensions", &n->rc) ||
      !list("lhs_ragged_dimensions", &n->lr) || !list("rhs_group_dimensions", &n->rg))
    return cx.Invalid("malformed ragged_dot_dimension_numbers");
  return Ok();
}

// dot_general's constraints on the dimension numbers, CHLO's on the ragged and group dimensions, and the plan.
Status MakePlan(CompileCtx& cx, const Numbers& n, const Slot& lhs, const Slot& rhs, const Slot& sizes, Plan* p) {
  const int64_t lrank = static_cast<int64_t>(lhs.dims.size()), rrank = static_cast<int64_t>(rhs.dims.size());
  if (n.lb.size() != n.rb.size() || n.lc.size() != n.rc.size())
    return cx.Invalid("lhs and rhs have %zu and %zu batching, %zu and %zu contracting dimensions", n.lb.size(),
                      n.rb.size(), n.lc.size(), n.rc.size());
  std::vector<int> lrole(lrank, 0), rrole(rrank, 0);  // 0 free, 1 batch, 2 contracting, 3 group
  const auto mark = [&](const std::vector<int64_t>& dims, std::vector<int>* role, int64_t rank, int r,
                        const char* what) -> Status {
    for (int64_t d : dims) {
      if (d < 0 || d >= rank)
        return cx.Invalid("%s %lld is out of range [0, %lld)", what, (long long)d, (long long)rank);
      if ((*role)[d]) return cx.Invalid("%s %lld is used twice", what, (long long)d);
      (*role)[d] = r;
    }
    return Ok();
  };
  NEURONMEM_RETURN_IF_ERROR(mark(n.lb, &lrole, lrank, 1, "lhs_batching_dimensions entry"));
  NEURONMEM_RETURN_IF_ERROR(mark(n.lc, &lrole, lrank, 2, "lhs_contracting_dimensions entry"));
  NEURONMEM_RETURN_IF_ERROR(mark(n.rb, &rrole, rrank, 1, "rhs_batching_dimensions entry"));
  NEURONMEM_RETURN_IF_ERROR(mark(n.rc, &rrole, rrank, 2, "rhs_contracting_dimensions entry"));
  NEURONMEM_RETURN_IF_ERROR(mark(n.rg, &rrole, rrank, 3, "rhs_group_dimensions entry"));
  for (size_t i = 0; i < n.lb.size(); ++i)
    if (lhs.dims[n.lb[i]] != rhs.dims[n.rb[i]])
      return cx.Invalid("batching dimensions %lld of lhs and %lld of rhs differ in size (%lld, %lld)",
                        (long long)n.lb[i], (long long)n.rb[i], (long long)lhs.dims[n.lb[i]],
                        (long long)rhs.dims[n.rb[i]]);
  for (size_t i = 0; i < n.lc.size(); ++i)
    if (lhs.dims[n.lc[i]] != rhs.dims[n.rc[i]])
      return cx.Invalid("contracting dimensions %lld of lhs and %lld of rhs differ in size (%lld, %lld)",
                        (long long)n.lc[i], (long long)n.rc[i], (long long)lhs.dims[n.lc[i]],
                        (long long)rhs.dims[n.rc[i]]);
  if (n.lr.size() != 1)
    return cx.Invalid("there must be exactly one ragged dimension in the lhs, found %zu", n.lr.size());
  const int64_t ragged = n.lr[0];
  if (ragged < 0 || ragged >= lrank)
    return cx.Invalid("lhs_ragged_dimensions entry %lld is out of range [0, %lld)", (long long)ragged,
                      (long long)lrank);
  p->mode = lrole[ragged] == 1 ? Mode::kBatch : lrole[ragged] == 2 ? Mode::kContracting : Mode::kNonContracting;
  p->ragged_size = lhs.dims[ragged];

  // group_sizes: [prefix..., g] or [g].
  std::vector<int64_t> prefix;  // lhs dims
  if (p->mode == Mode::kBatch) {
    prefix.assign(n.lb.begin(), std::find(n.lb.begin(), n.lb.end(), ragged));
  } else {
    prefix = n.lb;
    if (p->mode == Mode::kContracting) {
      prefix.insert(prefix.end(), n.lc.begin(), std::find(n.lc.begin(), n.lc.end(), ragged));
    } else {
      for (int64_t i = 0; i < ragged; ++i)
        if (lrole[i] == 0) prefix.push_back(i);
    }
  }
  p->sizes_dims = sizes.dims;
  if (sizes.dims.empty()) return cx.Invalid("group_sizes must have rank 1 or more");
  p->groups = sizes.dims.back();
  p->broadcast_sizes = sizes.dims.size() == 1;
  std::vector<int64_t> prefix_sizes;
  for (int64_t d : prefix) prefix_sizes.push_back(lhs.dims[d]);
  if (!p->broadcast_sizes) {
    std::vector<int64_t> want = prefix_sizes;
    want.push_back(p->groups);
    if (sizes.dims != want)
      return cx.Invalid("group_sizes has shape %s; expected %s%s", DimsText(sizes.dims).c_str(), DimsText(want).c_str(),
                        want.size() > 1 ? (" or [" + std::to_string(p->groups) + "]").c_str() : "");
  }
  for (int64_t d : prefix_sizes) p->num_prefixes *= d;
  std::vector<int64_t> prefix_weight(prefix.size(), 0);  // per prefix entry: its weight in the flat prefix index
  if (!p->broadcast_sizes)
    for (size_t i = prefix.size(), w = 1; i-- > 0;) {
      prefix_weight[i] = static_cast<int64_t>(w);
      w *= static_cast<size_t>(prefix_sizes[i]);
    }
  const auto prefix_weight_of = [&](int64_t lhs_dim) -> int64_t {
    auto it = std::find(prefix.begin(), prefix.end(), lhs_dim);
    return it == prefix.end() ? 0 : prefix_weight[it - prefix.begin()];
  };

  if (p->mode == Mode::kNonContracting) {
    if (n.rg.size() != 1)
      return cx.Invalid(
          "there must be exactly one group dimension in the rhs when the lhs ragged dimension is "
          "non-contracting, found %zu",
          n.rg.size());
    if (rhs.dims[n.rg[0]] != p->groups)
      return cx.Invalid("rhs group dimension %lld has size %lld; group_sizes has %lld groups", (long long)n.rg[0],
                        (long long)rhs.dims[n.rg[0]], (long long)p->groups);
  } else if (!n.rg.empty()) {
    return cx.Invalid(
        "there must be no group dimension in the rhs when the lhs ragged dimension is batch or "
        "contracting");
  }

  const std::vector<int64_t> ls = Strides(lhs.dims), rs = Strides(rhs.dims);
  const auto add = [&](int64_t size, int64_t lstride, int64_t rstride, int64_t pw) {
    p->result_dims.push_back(size);
    p->res_lhs_stride.push_back(lstride);
    p->res_rhs_stride.push_back(rstride);
    p->res_prefix_weight.push_back(pw);
  };
  if (p->mode == Mode::kContracting) {
    p->res_group = 0;
    add(p->groups, 0, 0, 0);
  }
  for (size_t i = 0; i < n.lb.size(); ++i) {
    if (n.lb[i] == ragged) p->res_ragged = static_cast<int>(p->result_dims.size());
    add(lhs.dims[n.lb[i]], ls[n.lb[i]], rs[n.rb[i]], prefix_weight_of(n.lb[i]));
  }
  for (int64_t d = 0; d < lrank; ++d) {
    if (lrole[d] != 0) continue;
    if (d == ragged) p->res_ragged = static_cast<int>(p->result_dims.size());
    add(lhs.dims[d], ls[d], 0, prefix_weight_of(d));
  }
  for (int64_t d = 0; d < rrank; ++d)
    if (rrole[d] == 0) add(rhs.dims[d], 0, rs[d], 0);
  if (p->mode == Mode::kNonContracting) p->rhs_group_stride = rs[n.rg[0]];

  // The contraction index space (row-major over the listed contracting dims).
  int64_t kn = 1;
  for (int64_t d : n.lc) kn *= lhs.dims[d];
  const int64_t ragged_pos =
      p->mode == Mode::kContracting ? std::find(n.lc.begin(), n.lc.end(), ragged) - n.lc.begin() : -1;
  std::vector<int64_t> kidx(n.lc.size(), 0);
  for (int64_t k = 0; k < kn; ++k) {
    int64_t lo = 0, ro = 0, pre = 0;
    for (size_t i = 0; i < n.lc.size(); ++i) {
      lo += kidx[i] * ls[n.lc[i]];
      ro += kidx[i] * rs[n.rc[i]];
      pre += kidx[i] * prefix_weight_of(n.lc[i]);
    }
    p->k_lhs.push_back(lo);
    p->k_rhs.push_back(ro);
    if (ragged_pos >= 0) {
      p->k_ragged.push_back(kidx[ragged_pos]);
      p->k_prefix.push_back(pre);
    }
    for (size_t i = n.lc.size(); i-- > 0;) {
      if (++kidx[i] < lhs.dims[n.lc[i]]) break;
      kidx[i] = 0;
    }
  }
  return Ok();
}

// Slot `s` as element type `acc` (a converted scratch copy unless it already is).
Status As(CompileCtx& cx, uint32_t s, ElementType acc, std::vector<std::unique_ptr<Kernel>>* ks, uint32_t* out) {
  const Slot& v = cx.slot(s);
  if (v.type == acc) {
    *out = s;
    return Ok();
  }
  *out = cx.AddScratch(acc, v.dims);
  ks->emplace_back();
  return MakeConvert(cx, s, *out, &ks->back());
}

// The op on slots `in` (lhs, rhs, group_sizes) and `out`: the op's own, or f32 copies of quantized ones.
Status Build(CompileCtx& cx, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* k) {
  const Slot &lhs = cx.slot(in[0]), &rhs = cx.slot(in[1]), &sizes = cx.slot(in[2]), &res = cx.slot(out);
  if (!IsInteger(sizes.type))
    return cx.Invalid("group_sizes must be an integer tensor, found %s",
                      std::string(ElementTypeName(sizes.type)).c_str());
  ElementType acc;
  if (IsComplex(res.type)) {
    acc = ElementType::kC128;
  } else if (IsFloat(res.type)) {
    acc = ElementType::kF64;
    if (IsComplex(lhs.type) || IsComplex(rhs.type))
      return cx.Invalid("complex operands need a complex result, found %s",
                        std::string(ElementTypeName(res.type)).c_str());
  } else {
    acc = ElementType::kS64;
    for (const Slot* s : {&lhs, &rhs})
      if (!IsInteger(s->type) && s->type != ElementType::kPred)
        return cx.Invalid("an integer or pred result needs integer or pred operands, found %s",
                          std::string(ElementTypeName(s->type)).c_str());
  }
  Numbers n;
  NEURONMEM_RETURN_IF_ERROR(ReadNumbers(cx, &n));
  Plan plan;
  NEURONMEM_RETURN_IF_ERROR(MakePlan(cx, n, lhs, rhs, sizes, &plan));
  if (plan.result_dims != res.dims)
    return cx.Invalid("the result has shape %s; the operands give %s", DimsText(res.dims).c_str(),
                      DimsText(plan.result_dims).c_str());
  std::vector<std::unique_ptr<Kernel>> ks;
  uint32_t l, r, s;
  NEURONMEM_RETURN_IF_ERROR(As(cx, in[0], acc, &ks, &l));
  NEURONMEM_RETURN_IF_ERROR(As(cx, in[1], acc, &ks, &r));
  NEURONMEM_RETURN_IF_ERROR(As(cx, in[2], ElementType::kS64, &ks, &s));
  const uint32_t bounds = cx.AddScratch(ElementType::kS64, {plan.num_prefixes * (plan.groups + 1)});
  const bool direct = res.type == acc;
  const uint32_t o = direct ? out : cx.AddScratch(acc, res.dims);
  ks.push_back(
      std::make_unique<RaggedDotKernel>(&cx.op(), std::move(plan), acc, l, r, s, bounds, o, cx.state()->filename));
  if (!direct) {
    ks.emplace_back();
    NEURONMEM_RETURN_IF_ERROR(MakeConvert(cx, o, out, &ks.back()));
  }
  *k = ks.size() == 1 ? std::move(ks[0]) : MakeSequence(std::move(ks));
  return Ok();
}

// Quantized lhs, rhs or result (mixture-of-experts layers with int8 weights): dequantized to f32, computed,
// the result quantized (CompileQuantized).
Status CompileRaggedDot(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 3 || cx.num_outputs() != 1)
    return cx.Invalid("expected three operands (lhs, rhs, group_sizes) and one result");
  if (cx.in_slot(2).quant) return cx.Invalid("group_sizes must be an integer tensor, found a quantized one");
  if (cx.in_slot(0).quant || cx.in_slot(1).quant || cx.out_slot(0).quant) return CompileQuantized(cx, k, Build);
  return Build(cx, cx.inputs(), cx.out(0), k);
}

}  // namespace

void RegisterRaggedDotOps(OpTable* r) { (*r)["chlo.ragged_dot"] = CompileRaggedDot; }

}  // namespace neuronmem::interp
