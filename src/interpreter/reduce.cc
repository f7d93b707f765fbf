// Reductions and windowed ops, each calling its body on scalars (region.h): reduce, reduce_window,
// select_and_scatter, map. Iteration orders are the reference interpreter's (row-major over the input or
// the window, the accumulator as the body's first arguments), so non-associative bodies (float sums,
// argmax with ties) give its results.
#include <algorithm>
#include <cinttypes>
#include <string>
#include <vector>

#include "base/checked.h"
#include "interpreter/kernel.h"
#include "interpreter/reduce_vector.h"
#include "interpreter/region.h"

namespace neuronmem::interp {
namespace {

// Row-major multi-index over `dims`.
struct Odometer {
  explicit Odometer(const std::vector<int64_t>& d) : dims(d), idx(d.size(), 0) {}
  // Advances; returns the lowest dim that changed (dims.size() when it wrapped around completely).
  size_t Next() {
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) return d;
      idx[d] = 0;
    }
    return dims.size();
  }
  const std::vector<int64_t>& dims;
  std::vector<int64_t> idx;
};

// Per-operand data of a variadic op: slot, element size.
struct Operand {
  uint32_t slot;
  size_t esize;
};

std::vector<Operand> Operands(CompileCtx& cx, const std::vector<uint32_t>& slots) {
  std::vector<Operand> v;
  for (uint32_t s : slots) v.push_back({s, ElementByteSize(cx.slot(s).type)});
  return v;
}

// The operands of a variadic reduction: N inputs of one shape, N 0-d init values, N results of `rdims(input
// dims)`, result k typed like init k.
// Quantized values reduce with a quantized body; when the results (and the body) have a promoted type
// (is_promotable: a wider storage type or float type), the inputs and init values are converted to it first
// (`ins`/`inits` are then scratch copies), so the body only ever sees its own types.
struct Reduction {
  std::vector<uint32_t> ins, inits, outs;
  std::vector<ScalarType> acc_types, x_types;
  std::vector<int64_t> in_dims, out_dims;
  std::vector<std::unique_ptr<Kernel>> promote;  // converts inputs / init values to the result types

  std::vector<ScalarType> ArgTypes() const {
    std::vector<ScalarType> t = acc_types;
    t.insert(t.end(), x_types.begin(), x_types.end());
    return t;
  }
};

// A slot of `to`'s element type shaped like `from`, holding `from` converted (integer widening keeps a
// quantized storage value, as promotion with equal parameters does).
Status Promote(CompileCtx& cx, uint32_t from, ElementType to, uint32_t* out, std::vector<std::unique_ptr<Kernel>>* ks) {
  *out = cx.AddScratch(to, cx.slot(from).dims);
  ks->emplace_back();
  return MakeConvert(cx, from, *out, &ks->back());
}

template <typename RDims>
Status ReadReduction(CompileCtx& cx, bool same_types, RDims rdims, Reduction* r) {
  const size_t n = cx.num_outputs();
  if (n == 0 || cx.num_inputs() != 2 * n) return cx.Invalid("expected N inputs, N init values and N results");
  for (size_t i = 0; i < n; ++i) {
    r->ins.push_back(cx.in(i));
    r->inits.push_back(cx.in(n + i));
    r->outs.push_back(cx.out(i));
  }
  r->in_dims = cx.slot(r->ins[0]).dims;
  NEURONMEM_RETURN_IF_ERROR(rdims(r->in_dims, &r->out_dims));
  for (size_t i = 0; i < n; ++i) {
    const Slot& in = cx.slot(r->ins[i]);
    const Slot& init = cx.slot(r->inits[i]);
    const Slot& out = cx.slot(r->outs[i]);
    if (in.dims != r->in_dims) return cx.Invalid("inputs have different shapes");
    if (!init.dims.empty()) return cx.Invalid("init values must be 0-d");
    if (out.dims != r->out_dims) return cx.Invalid("result %zu has the wrong shape", i);
    const ScalarType in_t = ScalarType::Of(in), init_t = ScalarType::Of(init), out_t = ScalarType::Of(out);
    if (same_types && in_t != init_t) return cx.Invalid("input %zu and its init value differ in type", i);
    if ((in.quant == nullptr) != (out.quant == nullptr))
      return cx.Invalid("input %zu and result %zu must both be quantized or both not", i, i);
    if (out_t != init_t) {
      if (!IsPromotable(init_t, out_t) || !IsPromotable(in_t, out_t))
        return cx.Invalid("result %zu has type %s, not a promotion of its input's %s", i, ScalarTypeName(out_t).c_str(),
                          ScalarTypeName(in_t).c_str());
      NEURONMEM_RETURN_IF_ERROR(Promote(cx, r->inits[i], out.type, &r->inits[i], &r->promote));
      if (in_t != out_t) NEURONMEM_RETURN_IF_ERROR(Promote(cx, r->ins[i], out.type, &r->ins[i], &r->promote));
      r->acc_types.push_back(out_t);
      r->x_types.push_back(out_t);
      continue;
    }
    r->acc_types.push_back(init_t);
    r->x_types.push_back(in_t);
  }
  return Ok();
}

// Runs the promotions of a reduction, then the reduction itself.
class PromotedKernel final : public Kernel {
 public:
  PromotedKernel(std::vector<std::unique_ptr<Kernel>> ks, std::unique_ptr<Kernel> main)
      : ks_(std::move(ks)), main_(std::move(main)) {}
  Status Run(Frame& f) const override {
    for (const auto& k : ks_) NEURONMEM_RETURN_IF_ERROR(k->Run(f));
    return main_->Run(f);
  }

 private:
  std::vector<std::unique_ptr<Kernel>> ks_;
  std::unique_ptr<Kernel> main_;
};

std::unique_ptr<Kernel> WithPromotions(Reduction* r, std::unique_ptr<Kernel> main) {
  if (r->promote.empty()) return main;
  return std::make_unique<PromotedKernel>(std::move(r->promote), std::move(main));
}

// ---- reduce --------------------------------------------------------------------------------------

class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(std::vector<Operand> in, std::vector<Operand> init, std::vector<Operand> out, std::vector<int64_t> dims,
               std::vector<int64_t> rstrides, int64_t out_count, ScalarRegion body, uint32_t stage)
      : in_(std::move(in)),
        init_(std::move(init)),
        out_(std::move(out)),
        dims_(std::move(dims)),
        rstr_(std::move(rstrides)),
        out_count_(out_count),
        body_(std::move(body)),
        stage_(stage) {
    for (const Operand& o : out_) out_esize_.push_back(o.esize);
  }

  // A reduction of the input's trailing `inner` dims (inner >= 1) by a body that is one binary op.
  void SetInner(int64_t inner) { inner_ = body_.direct() && in_.size() == 1 ? inner : 0; }

  // The body compiled for `rows` results at once (CompileRegionBatched; at most kBatchRows, so that its values
  // stay small whatever the result count) for a reduction of the input's trailing `inner` dims: args in canonical
  // order (accumulators, then elements); per input a scratch column, per result a scratch accumulator and, for
  // several results, a stage.
  static constexpr int64_t kBatchRows = 1024;
  struct Batched {
    const Body* body = nullptr;
    std::vector<uint32_t> args, columns, accs, stages;
    int64_t inner = 0, rows = 0;
  };
  void SetBatched(Batched b) { batched_ = std::move(b); }

  // The vectorized path (reduce_vector.h) for a body of add, multiply, maximum or minimum.
  void SetVector(VectorReduce v) {
    vector_ = std::move(v);
    has_vector_ = true;
  }

  Status Run(Frame& f) const override {
    const size_t n = in_.size();
    if (has_vector_) {
      vector_.Run(f.slots[init_[0].slot], f.slots[in_[0].slot], f.slots[out_[0].slot]);
      return Status();
    }
    if (inner_ > 0) return RunInner(f);
    if (batched_.body) return RunBatched(f);
    for (size_t k = 0; k < n; ++k) {
      char* r = f.slots[out_[k].slot];
      for (int64_t i = 0; i < out_count_; ++i)
        std::memcpy(r + i * out_[k].esize, f.slots[init_[k].slot], out_[k].esize);
    }
    int64_t count = 1;
    for (int64_t d : dims_) count *= d;
    if (count == 0) return Status();
    std::vector<const char*> args(2 * n);
    std::vector<char*> dst(n);
    Odometer it(dims_);
    int64_t roff = 0;
    for (int64_t i = 0; i < count; ++i) {
      for (size_t k = 0; k < n; ++k) {
        dst[k] = f.slots[out_[k].slot] + roff * out_[k].esize;
        args[k] = dst[k];
        args[n + k] = f.slots[in_[k].slot] + i * in_[k].esize;
      }
      NEURONMEM_RETURN_IF_ERROR(body_.Call(f, args.data()));
      body_.StoreResults(f, dst.data(), out_esize_.data(), stage_);
      const size_t changed = it.Next();
      if (changed == dims_.size()) break;
      roff += rstr_[changed];
      for (size_t d = changed + 1; d < dims_.size(); ++d) roff -= rstr_[d] * (dims_[d] - 1);
    }
    return Status();
  }

 private:
  // Column by column: element i of every result's run goes through one run of the batched body, so each result
  // still sees its elements in order, with the same element-wise operations as one 0-d call each.
  Status RunBatched(Frame& f) const {
    const size_t n = in_.size();
    const Body& body = *batched_.body;
    const int64_t width = batched_.rows;
    for (int64_t r0 = 0; r0 < out_count_; r0 += width) {
      const int64_t rows = std::min(width, out_count_ - r0);  // the lanes past `rows` of a last chunk are unused
      for (size_t k = 0; k < n; ++k) {
        char* acc = f.slots[batched_.accs[k]];
        for (int64_t o = 0; o < width; ++o) std::memcpy(acc + o * out_[k].esize, f.slots[init_[k].slot], out_[k].esize);
      }
      for (int64_t i = 0; i < batched_.inner; ++i) {
        for (size_t k = 0; k < n; ++k) {
          const size_t es = in_[k].esize;
          const int64_t stride = batched_.inner * static_cast<int64_t>(es);
          StridedGather(f.slots[batched_.columns[k]], f.slots[in_[k].slot] + r0 * stride + i * es, rows, stride, es);
          f.slots[batched_.args[k]] = f.slots[batched_.accs[k]];
          f.slots[batched_.args[n + k]] = f.slots[batched_.columns[k]];
        }
        NEURONMEM_RETURN_IF_ERROR(RunBody(body, f));
        // A result may be another accumulator (a body returning its arguments swapped): stage several first.
        for (size_t k = 0; k < n; ++k) {
          const char* res = f.slots[body.result_slots[k]];
          char* dst = n == 1 ? f.slots[batched_.accs[k]] : f.slots[batched_.stages[k]];
          if (dst != res) std::memmove(dst, res, static_cast<size_t>(width) * out_[k].esize);
        }
        for (size_t k = 0; k < n && n > 1; ++k)
          std::memcpy(f.slots[batched_.accs[k]], f.slots[batched_.stages[k]],
                      static_cast<size_t>(width) * out_[k].esize);
      }
      for (size_t k = 0; k < n; ++k)
        std::memcpy(f.slots[out_[k].slot] + r0 * out_[k].esize, f.slots[batched_.accs[k]],
                    static_cast<size_t>(rows) * out_[k].esize);
    }
    return Status();
  }

  // dst[j] = src[j * stride_bytes] for j < count, elements of es bytes.
  static void StridedGather(char* dst, const char* src, int64_t count, int64_t stride_bytes, size_t es) {
    const auto loop = [&](auto tag) {
      using W = decltype(tag);
      W* d = reinterpret_cast<W*>(dst);
      for (int64_t j = 0; j < count; ++j, src += stride_bytes) std::memcpy(d + j, src, sizeof(W));
    };
    switch (es) {
      case 1: loop(uint8_t{}); break;
      case 2: loop(uint16_t{}); break;
      case 4: loop(uint32_t{}); break;
      case 8: loop(uint64_t{}); break;
      default:
        for (int64_t j = 0; j < count; ++j, src += stride_bytes) std::memcpy(dst + j * es, src, es);
    }
  }

  // Each result element from its run of `inner_` consecutive input elements, folded in order: the same calls
  // in the same order as the row-major walk above (each accumulator sees only its own run), without the
  // walk's per-element bookkeeping (softmax's max and sum, RMS norm's sum of squares).
  Status RunInner(Frame& f) const {
    const ScalarBinaryFn fn = body_.direct();
    const ScalarFoldFn fold = body_.direct_fold();
    const bool swapped = body_.direct_swapped();
    const size_t es = out_[0].esize, xs = in_[0].esize;  // equal: a direct body takes one type
    const char* init = f.slots[init_[0].slot];
    const char* x = f.slots[in_[0].slot];
    char* acc = f.slots[out_[0].slot];
    for (int64_t o = 0; o < out_count_; ++o, acc += es) {
      std::memcpy(acc, init, es);
      if (fold) {
        fold(acc, x, inner_, swapped);
        x += inner_ * static_cast<int64_t>(xs);
        continue;
      }
      for (int64_t i = 0; i < inner_; ++i, x += xs) swapped ? fn(x, acc, acc) : fn(acc, x, acc);
    }
    return Status();
  }

  std::vector<Operand> in_, init_, out_;
  std::vector<size_t> out_esize_;
  std::vector<int64_t> dims_, rstr_;
  int64_t out_count_;
  ScalarRegion body_;
  uint32_t stage_;
  int64_t inner_ = 0;
  Batched batched_;
  VectorReduce vector_;
  bool has_vector_ = false;
};

Status CompileReduce(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<int64_t> dimensions;
  if (!cx.IntList("dimensions", &dimensions)) return cx.Invalid("missing dimensions");
  std::vector<bool> reduced;
  Reduction r;
  NEURONMEM_RETURN_IF_ERROR(ReadReduction(
      cx, false,
      [&](const std::vector<int64_t>& in, std::vector<int64_t>* out) {
        reduced.assign(in.size(), false);
        for (int64_t d : dimensions) {
          if (d < 0 || d >= static_cast<int64_t>(in.size()) || reduced[d]) return cx.Invalid("bad dimensions");
          reduced[d] = true;
        }
        for (size_t d = 0; d < in.size(); ++d)
          if (!reduced[d]) out->push_back(in[d]);
        return Ok();
      },
      &r));
  const size_t n = r.outs.size(), rank = r.in_dims.size();
  ScalarRegion body;
  NEURONMEM_RETURN_IF_ERROR(body.Compile(cx, 0, r.ArgTypes(), r.acc_types));
  // Result offset per input dim: the result's stride for kept dims, 0 for reduced ones.
  const std::vector<int64_t> rs = Strides(r.out_dims);
  std::vector<int64_t> rstr(rank, 0);
  for (size_t d = 0, o = 0; d < rank; ++d)
    if (!reduced[d]) rstr[d] = rs[o++];
  int64_t out_count = 1;
  for (int64_t d : r.out_dims) out_count *= d;
  const uint32_t stage = ScalarRegion::AddStage(cx, n);
  // The reduced dims a suffix of the input's: each result folds one contiguous run.
  int64_t inner = 1;
  size_t first_reduced = rank;
  while (first_reduced > 0 && reduced[first_reduced - 1]) inner *= r.in_dims[--first_reduced];
  const bool suffix = std::count(reduced.begin(), reduced.end(), true) == static_cast<long>(rank - first_reduced);
  auto kernel = std::make_unique<ReduceKernel>(Operands(cx, r.ins), Operands(cx, r.inits), Operands(cx, r.outs),
                                               r.in_dims, std::move(rstr), out_count, std::move(body), stage);
  if (suffix && first_reduced < rank && out_count > 0) kernel->SetInner(inner);
  VectorReduce vector;
  if (n == 1 && !r.acc_types[0].quant && r.acc_types[0] == r.x_types[0] &&
      VectorReduce::Plan(body.direct(), r.acc_types[0].type, r.in_dims, reduced, &vector))
    kernel->SetVector(std::move(vector));
  // A body of several ops (an argmax): once per column for every result, when it is element-wise only.
  if (suffix && first_reduced < rank && out_count > 1 && inner > 0 && !body.direct() && !cx.op().regions.empty()) {
    ReduceKernel::Batched b;
    b.rows = std::min(out_count, ReduceKernel::kBatchRows);
    if (!cx.CompileRegionBatched(0, b.rows, &b.body) && b.body->arg_slots.size() == 2 * n &&
        b.body->result_slots.size() == n) {
      for (size_t c = 0; c < 2 * n; ++c) b.args.push_back(b.body->arg_slots[c]);
      for (size_t i = 0; i < n; ++i) {
        b.columns.push_back(cx.AddScratch(cx.slot(r.ins[i]).type, {b.rows}));
        b.accs.push_back(cx.AddScratch(cx.slot(r.outs[i]).type, {b.rows}));
        if (n > 1) b.stages.push_back(cx.AddScratch(cx.slot(r.outs[i]).type, {b.rows}));
      }
      b.inner = inner;
      kernel->SetBatched(std::move(b));
    }
  }
  *k = WithPromotions(&r, std::move(kernel));
  return Ok();
}

// ---- reduce_window -------------------------------------------------------------------------------

struct Window {
  std::vector<int64_t> dims, strides, base_dilations, window_dilations;
  std::vector<int64_t> pad_lo, pad_hi;
};

// Reads window_dimensions, window_strides, base_dilations, window_dilations and padding (generic form).
Status ReadWindow(CompileCtx& cx, size_t rank, bool dilations, Window* w) {
  if (!cx.IntList("window_dimensions", &w->dims)) return cx.Invalid("missing window_dimensions");
  const auto list = [&](const char* name, std::vector<int64_t>* v, int64_t dflt) -> Status {
    if (!cx.Attr(name)) {
      v->assign(rank, dflt);
      return Ok();
    }
    if (!cx.IntList(name, v) || v->size() != rank) return cx.Invalid("%s must have %zu entries", name, rank);
    return Ok();
  };
  if (w->dims.size() != rank) return cx.Invalid("window_dimensions must have %zu entries", rank);
  NEURONMEM_RETURN_IF_ERROR(list("window_strides", &w->strides, 1));
  if (dilations) {
    NEURONMEM_RETURN_IF_ERROR(list("base_dilations", &w->base_dilations, 1));
    NEURONMEM_RETURN_IF_ERROR(list("window_dilations", &w->window_dilations, 1));
  } else {
    w->base_dilations.assign(rank, 1);
    w->window_dilations.assign(rank, 1);
  }
  w->pad_lo.assign(rank, 0);
  w->pad_hi.assign(rank, 0);
  if (cx.Attr("padding")) {
    std::vector<int64_t> flat;
    if (!cx.IntList("padding", &flat) || flat.size() != 2 * rank) return cx.Invalid("padding must be %zux2", rank);
    for (size_t d = 0; d < rank; ++d) {
      w->pad_lo[d] = flat[2 * d];
      w->pad_hi[d] = flat[2 * d + 1];
    }
  }
  for (size_t d = 0; d < rank; ++d)
    if (w->dims[d] < 1 || w->strides[d] < 1 || w->base_dilations[d] < 1 || w->window_dilations[d] < 1)
      return cx.Invalid("window sizes, strides and dilations must be positive");
  return Ok();
}

// The result dims of a window over `in` (the spec's shape of reduce_window), checked (base/checked.h): an
// overflowing window (or one beyond kMaxWindowExtent), or one whose work (result elements x window elements) no run
// could finish, fails. A dimension of at most one result takes stride 1: the stride only multiplies the result's
// index there, 0, and a stride beyond every extent would overflow the kernels' arithmetic for nothing.
Status WindowResultDims(CompileCtx& cx, const std::vector<int64_t>& in, Window& w, std::vector<int64_t>* r) {
  r->assign(in.size(), 0);
  for (size_t d = 0; d < in.size(); ++d) {
    if (!WindowedSize(in[d], w.dims[d], w.strides[d], w.pad_lo[d], w.pad_hi[d], w.base_dilations[d],
                      w.window_dilations[d], &(*r)[d]))
      return cx.Invalid("the window's extent in dimension %zu overflows (or is beyond 2^48 elements)", d);
    if ((*r)[d] <= 1) w.strides[d] = 1;
  }
  Checked c;
  const int64_t out = c.Product(r->data(), r->size());
  if (out != 0) c.Bound(c.Mul(out, c.Product(w.dims.data(), w.dims.size())), kMaxSteps);
  if (!c.ok()) return cx.Unsupported("the windows take more than %" PRId64 " steps", kMaxSteps);
  return Ok();
}

class ReduceWindowKernel final : public Kernel {
 public:
  ReduceWindowKernel(std::vector<Operand> in, std::vector<Operand> init, std::vector<Operand> out,
                     std::vector<int64_t> in_dims, std::vector<int64_t> out_dims, Window w, ScalarRegion body,
                     uint32_t stage)
      : in_(std::move(in)),
        init_(std::move(init)),
        out_(std::move(out)),
        in_dims_(std::move(in_dims)),
        out_dims_(std::move(out_dims)),
        w_(std::move(w)),
        body_(std::move(body)),
        stage_(stage) {
    for (const Operand& o : out_) out_esize_.push_back(o.esize);
  }

  // The vectorized path (reduce_vector.h), same results.
  void SetVector(VectorReduceWindow v) {
    vector_ = std::move(v);
    has_vector_ = true;
  }

  Status Run(Frame& f) const override {
    if (has_vector_) {
      vector_.Run(f.slots[init_[0].slot], f.slots[in_[0].slot], f.slots[out_[0].slot]);
      return Status();
    }
    const size_t n = in_.size(), rank = in_dims_.size();
    int64_t out_count = 1, win_count = 1;
    for (int64_t d : out_dims_) out_count *= d;
    for (int64_t d : w_.dims) win_count *= d;
    if (out_count == 0) return Status();
    const std::vector<int64_t> in_str = Strides(in_dims_);
    std::vector<const char*> args(2 * n);
    std::vector<char*> dst(n);
    Odometer out_it(out_dims_);
    for (int64_t o = 0; o < out_count; ++o, out_it.Next()) {
      for (size_t k = 0; k < n; ++k) {
        dst[k] = f.slots[out_[k].slot] + o * out_[k].esize;
        std::memcpy(dst[k], f.slots[init_[k].slot], out_[k].esize);
        args[k] = dst[k];
      }
      Odometer win_it(w_.dims);
      for (int64_t wi = 0; wi < win_count; ++wi, win_it.Next()) {
        int64_t off = 0;
        bool in_bounds = true;
        for (size_t d = 0; d < rank && in_bounds; ++d) {
          const int64_t p = out_it.idx[d] * w_.strides[d] + win_it.idx[d] * w_.window_dilations[d] - w_.pad_lo[d];
          if (p < 0 || p % w_.base_dilations[d] != 0 || p / w_.base_dilations[d] >= in_dims_[d]) {
            in_bounds = false;
          } else {
            off += p / w_.base_dilations[d] * in_str[d];
          }
        }
        for (size_t k = 0; k < n; ++k)
          args[n + k] = in_bounds ? f.slots[in_[k].slot] + off * in_[k].esize : f.slots[init_[k].slot];
        NEURONMEM_RETURN_IF_ERROR(body_.Call(f, args.data()));
        body_.StoreResults(f, dst.data(), out_esize_.data(), stage_);
      }
    }
    return Status();
  }

 private:
  std::vector<Operand> in_, init_, out_;
  std::vector<size_t> out_esize_;
  std::vector<int64_t> in_dims_, out_dims_;
  Window w_;
  ScalarRegion body_;
  uint32_t stage_;
  VectorReduceWindow vector_;
  bool has_vector_ = false;
};

Status CompileReduceWindow(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  Window w;
  Reduction r;
  NEURONMEM_RETURN_IF_ERROR(ReadReduction(
      cx, true,
      [&](const std::vector<int64_t>& in, std::vector<int64_t>* out) {
        NEURONMEM_RETURN_IF_ERROR(ReadWindow(cx, in.size(), true, &w));
        return WindowResultDims(cx, in, w, out);
      },
      &r));
  ScalarRegion body;
  NEURONMEM_RETURN_IF_ERROR(body.Compile(cx, 0, r.ArgTypes(), r.acc_types));
  const uint32_t stage = ScalarRegion::AddStage(cx, r.outs.size());
  VectorReduceWindow vector;
  const bool vectorized = r.outs.size() == 1 && !r.acc_types[0].quant && r.acc_types[0] == r.x_types[0] &&
                          VectorReduceWindow::Plan(body.direct(), r.acc_types[0].type, r.in_dims, r.out_dims, w.dims,
                                                   w.strides, w.base_dilations, w.window_dilations, w.pad_lo, &vector);
  auto kernel = std::make_unique<ReduceWindowKernel>(Operands(cx, r.ins), Operands(cx, r.inits), Operands(cx, r.outs),
                                                     r.in_dims, r.out_dims, std::move(w), std::move(body), stage);
  if (vectorized) kernel->SetVector(std::move(vector));
  *k = WithPromotions(&r, std::move(kernel));
  return Ok();
}

// ---- select_and_scatter --------------------------------------------------------------------------

class SelectAndScatterKernel final : public Kernel {
 public:
  SelectAndScatterKernel(uint32_t operand, uint32_t source, uint32_t init, uint32_t out, size_t esize,
                         std::vector<int64_t> dims, std::vector<int64_t> source_dims, Window w, ScalarRegion select,
                         ScalarRegion scatter)
      : operand_(operand),
        source_(source),
        init_(init),
        out_(out),
        esize_(esize),
        dims_(std::move(dims)),
        source_dims_(std::move(source_dims)),
        w_(std::move(w)),
        select_(std::move(select)),
        scatter_(std::move(scatter)) {}

  Status Run(Frame& f) const override {
    const size_t rank = dims_.size();
    int64_t count = 1, src_count = 1, win_count = 1;
    for (int64_t d : dims_) count *= d;
    for (int64_t d : source_dims_) src_count *= d;
    for (int64_t d : w_.dims) win_count *= d;
    char* out = f.slots[out_];
    const char* operand = f.slots[operand_];
    for (int64_t i = 0; i < count; ++i) std::memcpy(out + i * esize_, f.slots[init_], esize_);
    if (src_count == 0) return Status();
    const std::vector<int64_t> str = Strides(dims_);
    Odometer src_it(source_dims_);
    for (int64_t s = 0; s < src_count; ++s, src_it.Next()) {
      int64_t selected = -1;
      Odometer win_it(w_.dims);
      for (int64_t wi = 0; wi < win_count; ++wi, win_it.Next()) {
        int64_t off = 0;
        bool in_bounds = true;
        for (size_t d = 0; d < rank && in_bounds; ++d) {
          const int64_t p = src_it.idx[d] * w_.strides[d] + win_it.idx[d] - w_.pad_lo[d];
          if (p < 0 || p >= dims_[d]) in_bounds = false;
          off += p * str[d];
        }
        if (!in_bounds) continue;
        if (selected < 0) {
          selected = off;
          continue;
        }
        const char* args[2] = {operand + selected * esize_, operand + off * esize_};
        NEURONMEM_RETURN_IF_ERROR(select_.Call(f, args));
        if (!*reinterpret_cast<const bool*>(select_.Result(f, 0))) selected = off;
      }
      if (selected < 0) continue;
      char* dst = out + selected * esize_;
      const char* args[2] = {dst, f.slots[source_] + s * esize_};
      NEURONMEM_RETURN_IF_ERROR(scatter_.Call(f, args));
      std::memmove(dst, scatter_.Result(f, 0), esize_);
    }
    return Status();
  }

 private:
  uint32_t operand_, source_, init_, out_;
  size_t esize_;
  std::vector<int64_t> dims_, source_dims_;
  Window w_;
  ScalarRegion select_, scatter_;
};

Status CompileSelectAndScatter(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 3 || cx.num_outputs() != 1) return cx.Invalid("expected operand, source, init_value");
  const Slot operand = cx.in_slot(0), source = cx.in_slot(1), init = cx.in_slot(2), out = cx.out_slot(0);
  Window w;
  NEURONMEM_RETURN_IF_ERROR(ReadWindow(cx, operand.dims.size(), false, &w));
  std::vector<int64_t> windows;
  NEURONMEM_RETURN_IF_ERROR(WindowResultDims(cx, operand.dims, w, &windows));
  if (windows != source.dims) return cx.Invalid("source does not match the windows");
  // Quantized: select compares operand values, scatter combines source values with init/result values.
  const ScalarType t = ScalarType::Of(operand), st = ScalarType::Of(source);
  if (!init.dims.empty() || ScalarType::Of(init) != st || ScalarType::Of(out) != st || out.dims != operand.dims ||
      ElementByteSize(source.type) != ElementByteSize(operand.type))
    return cx.Invalid("source, init_value and result must share the element type");
  if ((operand.quant == nullptr) != (source.quant == nullptr) || (!operand.quant && operand.type != source.type))
    return cx.Invalid("operand and source must share the element type");
  ScalarRegion select, scatter;
  NEURONMEM_RETURN_IF_ERROR(select.Compile(cx, 0, {t, t}, {ElementType::kPred}));
  NEURONMEM_RETURN_IF_ERROR(scatter.Compile(cx, 1, {st, st}, {st}));
  *k = std::make_unique<SelectAndScatterKernel>(cx.in(0), cx.in(1), cx.in(2), cx.out(0), ElementByteSize(t.type),
                                                operand.dims, source.dims, std::move(w), std::move(select),
                                                std::move(scatter));
  return Ok();
}

// ---- map -----------------------------------------------------------------------------------------

class MapKernel final : public Kernel {
 public:
  MapKernel(std::vector<Operand> in, Operand out, int64_t count, ScalarRegion body)
      : in_(std::move(in)), out_(out), count_(count), body_(std::move(body)) {}
  Status Run(Frame& f) const override {
    std::vector<const char*> args(in_.size());
    for (int64_t i = 0; i < count_; ++i) {
      for (size_t k = 0; k < in_.size(); ++k) args[k] = f.slots[in_[k].slot] + i * in_[k].esize;
      NEURONMEM_RETURN_IF_ERROR(body_.Call(f, args.data()));
      std::memcpy(f.slots[out_.slot] + i * out_.esize, body_.Result(f, 0), out_.esize);
    }
    return Status();
  }

 private:
  std::vector<Operand> in_;
  Operand out_;
  int64_t count_;
  ScalarRegion body_;
};

Status CompileMap(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() == 0 || cx.num_outputs() != 1) return cx.Invalid("expected inputs and one result");
  const Slot out = cx.out_slot(0);
  std::vector<int64_t> dimensions;
  if (cx.IntList("dimensions", &dimensions)) {
    for (size_t i = 0; i < dimensions.size(); ++i)
      if (dimensions[i] != static_cast<int64_t>(i)) return cx.Invalid("dimensions must be [0, ..., rank - 1]");
    if (dimensions.size() != out.dims.size()) return cx.Invalid("dimensions must be [0, ..., rank - 1]");
  }
  std::vector<ScalarType> types;
  std::vector<uint32_t> ins;
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    if (cx.in_slot(i).dims != out.dims) return cx.Invalid("inputs and result must have the same shape");
    types.push_back(ScalarType::Of(cx.in_slot(i)));
    ins.push_back(cx.in(i));
  }
  ScalarRegion body;
  NEURONMEM_RETURN_IF_ERROR(body.Compile(cx, 0, types, {ScalarType::Of(out)}));
  *k = std::make_unique<MapKernel>(Operands(cx, ins), Operand{cx.out(0), ElementByteSize(out.type)}, out.count,
                                   std::move(body));
  return Ok();
}

}  // namespace

void RegisterReduceOps(OpTable* r) {
  (*r)["stablehlo.reduce"] = CompileReduce;
  (*r)["stablehlo.reduce_window"] = CompileReduceWindow;
  (*r)["stablehlo.select_and_scatter"] = CompileSelectAndScatter;
  (*r)["stablehlo.map"] = CompileMap;
}

}  // namespace neuronmem::interp
