// dot_general, dot and convolution: attributes decoded here, the arithmetic in src/linalg (the spec's
// general form for every element type). Quantized operands run as dequantize -> compute in f32 ->
// quantize, as the spec's interpretation of quantized dot_general/convolution.
#include <string>
#include <utility>
#include <vector>

#include "interpreter/elementwise.h"
#include "interpreter/kernel.h"
#include "interpreter/quant.h"
#include "interpreter/shape.h"
#include "linalg/convolution.h"
#include "linalg/dot_general.h"

namespace neuronmem::interp {
namespace {

linalg::TensorRef In(Frame& f, uint32_t slot, const Slot& s) {
  return linalg::TensorRef{s.type, f.slots[slot], linalg::Span<int64_t>(s.dims)};
}
linalg::MutableTensorRef Out(Frame& f, uint32_t slot, const Slot& s) {
  return linalg::MutableTensorRef{s.type, f.slots[slot], linalg::Span<int64_t>(s.dims)};
}

// The three slots of a two-operand linalg op, with their shapes copied (slots may move while compiling).
struct BinarySlots {
  uint32_t lhs, rhs, out;
  Slot lhs_s, rhs_s, out_s;
};

BinarySlots Slots3(CompileCtx& cx, const std::vector<uint32_t>& in, uint32_t out) {
  return BinarySlots{in[0], in[1], out, cx.slot(in[0]), cx.slot(in[1]), cx.slot(out)};
}

// Up to this many multiply-adds, dot_general and convolution sum in the reference interpreter's order with
// its per-step rounding (bit-identical results; a blocked product's reordering shows through cancellation,
// most visibly for complex types). Above it they take the blocked fast path (OpenBLAS/Eigen).
constexpr int64_t kExactMacs = int64_t{1} << 16;

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// A linalg check's status as the op's compile error.
Status FromLinalg(CompileCtx& cx, const Status& st) {
  if (!st) return Ok();
  return st->code == NEURONMEM_STATUS_UNIMPLEMENTED ? cx.Unsupported("%s", st->message.c_str())
                                                    : cx.Invalid("%s", st->message.c_str());
}

// Prefixes a kernel's status with the op's location.
Status AtOp(const Frame& f, const stablehlo::Operation* op, Status s) {
  if (!s) return s;
  return MakeStatus(s->code,
                    FormatLocation(f.state->filename, *op) + ": '" + std::string(op->name) + "': " + s->message);
}

// The number of multiply-adds of a dot_general or a convolution. Read before the dimension numbers are checked: a
// contracting dimension outside the lhs counts as INT64_MAX (the check that follows refuses it).
int64_t Macs(const BinarySlots& s, const linalg::DotDimensionNumbers& dn) {
  int64_t k = 1;
  for (int64_t a : dn.lhs_contracting_dimensions) {
    if (a < 0 || static_cast<size_t>(a) >= s.lhs_s.dims.size()) return INT64_MAX;
    k *= s.lhs_s.dims[a];
  }
  return Product(s.out_s.dims) * k;
}
int64_t Macs(const BinarySlots& s, const linalg::ConvolutionParams& p) {
  // Each result element sums (kernel elements / output features) products.
  const int64_t out_features = s.rhs_s.dims[p.kernel_output_feature_dimension];
  return Product(s.out_s.dims) * (out_features ? Product(s.rhs_s.dims) / out_features : 0);
}

// A two-operand linalg kernel: `Fast` or `Exact` by size (kExactMacs).
template <typename Params, auto Fast, auto Exact>
class LinalgKernel final : public Kernel {
 public:
  LinalgKernel(BinarySlots s, Params p) : s_(std::move(s)), p_(std::move(p)), exact_(Macs(s_, p_) <= kExactMacs) {}
  Status Run(Frame& f) const override {
    const auto fn = exact_ ? Exact : Fast;
    return AtOp(f, op, fn(In(f, s_.lhs, s_.lhs_s), In(f, s_.rhs, s_.rhs_s), p_, Out(f, s_.out, s_.out_s)));
  }

 private:
  BinarySlots s_;
  Params p_;
  bool exact_;
};
using ConvolutionKernel = LinalgKernel<linalg::ConvolutionParams, linalg::Convolution, linalg::ConvolutionExact>;

// dot_general on a plan made at compile time (linalg::DotGeneralPlan: the slots' shapes and types were checked
// then, and how each operand is read is decided): a run is the library calls, no checks and no allocation.
class DotGeneralKernel final : public Kernel {
 public:
  DotGeneralKernel(const BinarySlots& s, linalg::DotGeneralPlan plan)
      : lhs_(s.lhs), rhs_(s.rhs), out_(s.out), plan_(std::move(plan)) {}
  Status Run(Frame& f) const override {
    plan_.Run(f.slots[lhs_], f.slots[rhs_], f.slots[out_]);
    return Ok();
  }

 private:
  uint32_t lhs_, rhs_, out_;
  linalg::DotGeneralPlan plan_;
};

// dot_dimension_numbers (#stablehlo.dot<...>, or the pretty form's `batching_dims = [..] x [..]`,
// `contracting_dims = [..] x [..]` as the parser decodes them); an absent list is empty.
Status DotDimensions(CompileCtx& cx, linalg::DotDimensionNumbers* dn) {
  const stablehlo::Attribute* a = cx.Attr("dot_dimension_numbers");
  if (!a) return cx.Invalid("missing dot_dimension_numbers");
  const auto list = [&](std::string_view key, std::vector<int64_t>* out) {
    out->clear();
    const stablehlo::Attribute* e = a->Get(key);
    return !e || CompileCtx::IntListOf(*e, out);
  };
  if (!list("lhs_batching_dimensions", &dn->lhs_batching_dimensions) ||
      !list("rhs_batching_dimensions", &dn->rhs_batching_dimensions) ||
      !list("lhs_contracting_dimensions", &dn->lhs_contracting_dimensions) ||
      !list("rhs_contracting_dimensions", &dn->rhs_contracting_dimensions))
    return cx.Invalid("malformed dot_dimension_numbers");
  return Ok();
}

// Builds the kernel on the (possibly dequantized) operands: make(slots, params, &kernel) checks them (a linalg
// status) and makes the kernel.
template <typename Params, typename MakeFn>
Status CompileLinalg(CompileCtx& cx, std::unique_ptr<Kernel>* k, Params params, MakeFn make, size_t num_inputs = 2) {
  if (cx.num_inputs() != num_inputs || cx.num_outputs() != 1) return cx.Invalid("expected two operands and one result");
  const auto inner = [&](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
    BinarySlots s = Slots3(c, in, out);
    // i2/i4/ui2/ui4 are stored one byte each, wrapped to their width: read as i8/ui8 they are the same values.
    // A sub-byte result is summed in i8/ui8 (which wraps modulo a multiple of its width) and wrapped once.
    const auto widen = [](Slot* v) {
      if (SubByteBits(v->type)) v->type = IsSignedInt(v->type) ? ElementType::kS8 : ElementType::kU8;
    };
    widen(&s.lhs_s);
    widen(&s.rhs_s);
    const bool narrow_out = SubByteBits(s.out_s.type) != 0;
    if (narrow_out) {
      widen(&s.out_s);
      s.out = c.AddScratch(s.out_s.type, s.out_s.dims);
      s.out_s = c.slot(s.out);
    }
    const uint32_t wide = s.out;
    std::unique_ptr<Kernel> kernel;
    NEURONMEM_RETURN_IF_ERROR(FromLinalg(c, make(std::move(s), params, &kernel)));
    kernel->op = &c.op();
    if (!narrow_out) {
      *kk = std::move(kernel);
      return Ok();
    }
    std::vector<std::unique_ptr<Kernel>> ks;
    ks.push_back(std::move(kernel));
    ks.emplace_back();
    NEURONMEM_RETURN_IF_ERROR(MakeConvert(c, wide, out, &ks.back()));
    *kk = MakeSequence(std::move(ks));
    return Ok();
  };
  // Quantized and small-float (f8, f6, f4) operands: computed in f32, the result quantized / rounded once.
  if (NeedsF32(cx)) return CompileQuantized(cx, k, inner);
  return inner(cx, {cx.in(0), cx.in(1)}, cx.out(0), k);
}

// The dot_general kernel on checked slots: its plan (exact path up to kExactMacs multiply-adds).
Status MakeDotGeneral(BinarySlots s, const linalg::DotDimensionNumbers& dn, std::unique_ptr<Kernel>* kernel) {
  linalg::DotGeneralPlan plan;
  NEURONMEM_RETURN_IF_ERROR(linalg::DotGeneralPlan::Make(s.lhs_s.type, s.lhs_s.dims, s.rhs_s.type, s.rhs_s.dims, dn,
                                                         s.out_s.type, s.out_s.dims, Macs(s, dn) <= kExactMacs, &plan));
  *kernel = std::make_unique<DotGeneralKernel>(s, std::move(plan));
  return Ok();
}

Status CompileDotGeneral(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  linalg::DotDimensionNumbers dn;
  NEURONMEM_RETURN_IF_ERROR(DotDimensions(cx, &dn));
  return CompileLinalg(cx, k, std::move(dn), MakeDotGeneral);
}

// stablehlo.dot: rank-1 or rank-2 operands; contracts lhs's last dim with rhs's first.
Status CompileDot(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 2) return cx.Invalid("expected two operands");
  const size_t lr = cx.in_slot(0).dims.size(), rr = cx.in_slot(1).dims.size();
  if (lr < 1 || lr > 2 || rr < 1 || rr > 2) return cx.Invalid("operands must have rank 1 or 2");
  linalg::DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {static_cast<int64_t>(lr) - 1};
  dn.rhs_contracting_dimensions = {0};
  return CompileLinalg(cx, k, std::move(dn), MakeDotGeneral);
}

bool ReadPadding(const std::vector<int64_t>& flat, linalg::ConvolutionParams* p) {
  if (flat.size() % 2) return false;
  p->padding.clear();
  for (size_t i = 0; i < flat.size(); i += 2) p->padding.emplace_back(flat[i], flat[i + 1]);
  return true;
}

bool BoolListOf(const stablehlo::Attribute& a, std::vector<bool>* out) {
  out->clear();
  if (a.kind == stablehlo::Attribute::Kind::kArray) {
    for (const stablehlo::Attribute& e : a.array) {
      if (e.kind == stablehlo::Attribute::Kind::kBool) {
        out->push_back(e.b);
      } else if (e.kind == stablehlo::Attribute::Kind::kInt) {
        out->push_back(e.i != 0);
      } else {
        return false;
      }
    }
    return true;
  }
  std::vector<int64_t> v;
  if (!CompileCtx::IntListOf(a, &v)) return false;
  for (int64_t x : v) out->push_back(x != 0);
  return true;
}

// dimension_numbers (#stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, #stablehlo.conv<raw ...>, or the pretty
// form's `dim_numbers = ...`, decoded by the parser into its nine numbers); window_strides, padding,
// lhs_dilation, rhs_dilation, window_reversal (the pretty form's `window = {stride, pad, lhs_dilate,
// rhs_dilate, reverse}`, renamed by the parser).
Status ConvAttributes(CompileCtx& cx, linalg::ConvolutionParams* p) {
  const stablehlo::Attribute* dnum = cx.Attr("dimension_numbers");
  if (!dnum) return cx.Invalid("missing dimension_numbers");
  const auto one = [&](std::string_view key, int64_t* v) {
    const stablehlo::Attribute* e = dnum->Get(key);
    if (!e || e->kind != stablehlo::Attribute::Kind::kInt) return false;
    *v = e->i;
    return true;
  };
  const auto list = [&](std::string_view key, std::vector<int64_t>* v) {
    const stablehlo::Attribute* e = dnum->Get(key);
    return e && CompileCtx::IntListOf(*e, v);
  };
  if (!one("input_batch_dimension", &p->input_batch_dimension) ||
      !one("input_feature_dimension", &p->input_feature_dimension) ||
      !list("input_spatial_dimensions", &p->input_spatial_dimensions) ||
      !one("kernel_input_feature_dimension", &p->kernel_input_feature_dimension) ||
      !one("kernel_output_feature_dimension", &p->kernel_output_feature_dimension) ||
      !list("kernel_spatial_dimensions", &p->kernel_spatial_dimensions) ||
      !one("output_batch_dimension", &p->output_batch_dimension) ||
      !one("output_feature_dimension", &p->output_feature_dimension) ||
      !list("output_spatial_dimensions", &p->output_spatial_dimensions))
    return cx.Invalid("malformed dimension_numbers");
  if (const stablehlo::Attribute* a = cx.Attr("window_strides"))
    if (!CompileCtx::IntListOf(*a, &p->window_strides)) return cx.Invalid("malformed window_strides");
  if (const stablehlo::Attribute* a = cx.Attr("lhs_dilation"))
    if (!CompileCtx::IntListOf(*a, &p->lhs_dilation)) return cx.Invalid("malformed lhs_dilation");
  if (const stablehlo::Attribute* a = cx.Attr("rhs_dilation"))
    if (!CompileCtx::IntListOf(*a, &p->rhs_dilation)) return cx.Invalid("malformed rhs_dilation");
  if (const stablehlo::Attribute* a = cx.Attr("padding")) {
    std::vector<int64_t> flat;
    if (!CompileCtx::IntListOf(*a, &flat) || !ReadPadding(flat, p)) return cx.Invalid("malformed padding");
  }
  if (const stablehlo::Attribute* a = cx.Attr("window_reversal"))
    if (!BoolListOf(*a, &p->window_reversal)) return cx.Invalid("malformed window_reversal");
  return Ok();
}

// The convolution's attributes (generic or pretty form); dynamic_conv(lhs, rhs, d_padding) takes the padding
// from its [N, 2] operand (known at compile time) instead of the attribute.
Status ConvolutionAttributes(CompileCtx& cx, linalg::ConvolutionParams* p) {
  NEURONMEM_RETURN_IF_ERROR(ConvAttributes(cx, p));
  if (!cx.Int("feature_group_count", &p->feature_group_count)) p->feature_group_count = 1;
  if (!cx.Int("batch_group_count", &p->batch_group_count)) p->batch_group_count = 1;
  if (cx.op().name == "stablehlo.dynamic_conv") {
    if (cx.num_inputs() != 3) return cx.Invalid("expected lhs, rhs and d_padding");
    std::vector<int64_t> flat;
    NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 2, "d_padding", &flat, true));
    if (!ReadPadding(flat, p)) return cx.Invalid("d_padding must be [N, 2]");
  }
  return Ok();
}

Status CompileConvolution(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  linalg::ConvolutionParams p;
  NEURONMEM_RETURN_IF_ERROR(ConvolutionAttributes(cx, &p));
  const bool dynamic = cx.op().name == "stablehlo.dynamic_conv";
  return CompileLinalg(
      cx, k, std::move(p),
      [](BinarySlots s, const linalg::ConvolutionParams& q, std::unique_ptr<Kernel>* kernel) {
        NEURONMEM_RETURN_IF_ERROR(linalg::CheckConvolution(s.lhs_s.type, s.lhs_s.dims, s.rhs_s.type, s.rhs_s.dims, q,
                                                           s.out_s.type, s.out_s.dims));
        *kernel = std::make_unique<ConvolutionKernel>(std::move(s), q);
        return Ok();
      },
      dynamic ? 3 : 2);
}

}  // namespace

Status ConvolutionResultDims(CompileCtx& cx, std::vector<int64_t>* dims) {
  linalg::ConvolutionParams p;
  NEURONMEM_RETURN_IF_ERROR(ConvolutionAttributes(cx, &p));
  if (cx.num_inputs() < 2) return cx.Invalid("expected lhs and rhs");
  const Slot &lhs = cx.in_slot(0), &rhs = cx.in_slot(1);
  return FromLinalg(cx, linalg::ConvolutionShape(lhs.dims, rhs.dims, p, dims));
}

void RegisterLinalgOps(OpTable* r) {
  (*r)["stablehlo.dot_general"] = CompileDotGeneral;
  (*r)["stablehlo.dot"] = CompileDot;
  (*r)["stablehlo.convolution"] = CompileConvolution;
  (*r)["stablehlo.dynamic_conv"] = CompileConvolution;
}

}  // namespace neuronmem::interp
