// batch_norm_inference, batch_norm_training and batch_norm_grad (StableHLO spec, "batch_norm_*"): the spec's
// decompositions, computed per feature in f64 and rounded once to the element type (f16, bf16, f32, f64).
// Quantized and f8/f6/f4 operands run on f32 copies: dequantized or converted exactly to f32, computed, and each
// result quantized or rounded back (batch_norm_inference through CompileOnSlots, the two ops of three results
// through OnF32Copies).
//
// The operand is seen as [outer, F, inner] around feature_index; features index the rank-1 operands.
#include <cmath>
#include <string>
#include <vector>

#include "interpreter/elementwise.h"
#include "interpreter/quant.h"

namespace neuronmem::interp {
namespace {

struct Layout {
  int64_t outer = 1, features = 1, inner = 1;
  int64_t PerFeature() const { return outer * inner; }
};

enum class Kind { kInference, kTraining, kGrad };

template <typename T>
double Load(const char* p, int64_t i) {
  return ToDouble(reinterpret_cast<const T*>(p)[i]);
}
template <typename T>
void Store(char* p, int64_t i, double v) {
  reinterpret_cast<T*>(p)[i] = FromDouble<T>(v);
}

// inference: (operand, scale, offset, mean, variance) -> output.
template <typename T>
void Inference(Frame& f, const Layout& l, double eps, const uint32_t* in, uint32_t out) {
  const char *x = f.slots[in[0]], *scale = f.slots[in[1]], *offset = f.slots[in[2]], *mean = f.slots[in[3]],
             *var = f.slots[in[4]];
  char* y = f.slots[out];
  for (int64_t c = 0; c < l.features; ++c) {
    const double m = Load<T>(mean, c), s = Load<T>(scale, c) / std::sqrt(Load<T>(var, c) + eps), b = Load<T>(offset, c);
    for (int64_t o = 0; o < l.outer; ++o) {
      const int64_t base = (o * l.features + c) * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) Store<T>(y, base + i, (Load<T>(x, base + i) - m) * s + b);
    }
  }
}

// The sum over one feature of g(element index).
template <typename G>
double FeatureSum(const Layout& l, int64_t c, G&& g) {
  double sum = 0;
  for (int64_t o = 0; o < l.outer; ++o) {
    const int64_t base = (o * l.features + c) * l.inner;
    for (int64_t i = 0; i < l.inner; ++i) sum += g(base + i);
  }
  return sum;
}

// training: (operand, scale, offset) -> (output, batch_mean, batch_var).
template <typename T>
void Training(Frame& f, const Layout& l, double eps, const uint32_t* in, const uint32_t* out) {
  const char *x = f.slots[in[0]], *scale = f.slots[in[1]], *offset = f.slots[in[2]];
  char *y = f.slots[out[0]], *mean_out = f.slots[out[1]], *var_out = f.slots[out[2]];
  const double n = static_cast<double>(l.PerFeature());
  for (int64_t c = 0; c < l.features; ++c) {
    const double m = FeatureSum(l, c, [&](int64_t i) { return Load<T>(x, i); }) / n;
    const double v = FeatureSum(l, c,
                                [&](int64_t i) {
                                  const double d = Load<T>(x, i) - m;
                                  return d * d;
                                }) /
                     n;
    const double s = Load<T>(scale, c) / std::sqrt(v + eps), b = Load<T>(offset, c);
    for (int64_t o = 0; o < l.outer; ++o) {
      const int64_t base = (o * l.features + c) * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) Store<T>(y, base + i, (Load<T>(x, base + i) - m) * s + b);
    }
    Store<T>(mean_out, c, m);
    Store<T>(var_out, c, v);
  }
}

// grad: (operand, scale, mean, variance, grad_output) -> (grad_operand, grad_scale, grad_offset).
template <typename T>
void Grad(Frame& f, const Layout& l, double eps, const uint32_t* in, const uint32_t* out) {
  const char *x = f.slots[in[0]], *scale = f.slots[in[1]], *mean = f.slots[in[2]], *var = f.slots[in[3]],
             *dy = f.slots[in[4]];
  char *dx = f.slots[out[0]], *dscale = f.slots[out[1]], *doffset = f.slots[out[2]];
  const double n = static_cast<double>(l.PerFeature());
  for (int64_t c = 0; c < l.features; ++c) {
    const double m = Load<T>(mean, c), ve = Load<T>(var, c) + eps, stddev = std::sqrt(ve);
    const double sum_dy = FeatureSum(l, c, [&](int64_t i) { return Load<T>(dy, i); });
    const double sum_dy_centered = FeatureSum(l, c, [&](int64_t i) { return Load<T>(dy, i) * (Load<T>(x, i) - m); });
    const double k = Load<T>(scale, c) / stddev / n;
    for (int64_t o = 0; o < l.outer; ++o) {
      const int64_t base = (o * l.features + c) * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) {
        const double centered = Load<T>(x, base + i) - m;
        const double i6 = Load<T>(dy, base + i) * n - sum_dy - sum_dy_centered * centered / ve;
        Store<T>(dx, base + i, k * i6);
      }
    }
    Store<T>(dscale, c, sum_dy_centered / stddev);
    Store<T>(doffset, c, sum_dy);
  }
}

class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(Kind kind, ElementType type, Layout l, double eps, std::vector<uint32_t> in,
                  std::vector<uint32_t> out)
      : kind_(kind), type_(type), l_(l), eps_(eps), in_(std::move(in)), out_(std::move(out)) {}
  Status Run(Frame& f) const override {
    Dispatch(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsFloat<T>) {
        switch (kind_) {
          case Kind::kInference: Inference<T>(f, l_, eps_, in_.data(), out_[0]); break;
          case Kind::kTraining: Training<T>(f, l_, eps_, in_.data(), out_.data()); break;
          case Kind::kGrad: Grad<T>(f, l_, eps_, in_.data(), out_.data()); break;
        }
      }
    });
    return Status();
  }

 private:
  Kind kind_;
  ElementType type_;
  Layout l_;
  double eps_;
  std::vector<uint32_t> in_, out_;
};

const char* const kInputNames[3][5] = {{"operand", "scale", "offset", "mean", "variance"},
                                       {"operand", "scale", "offset", "", ""},
                                       {"operand", "scale", "mean", "variance", "grad_output"}};
const char* const kOutputNames[3][3] = {
    {"result", "", ""}, {"output", "batch_mean", "batch_var"}, {"grad_operand", "grad_scale", "grad_offset"}};

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Checks the slots `in` / `out` (the op's own, or f32 copies) against the spec's constraints and builds the
// kernel. Operand-shaped values: operand, grad_output, output, grad_operand; the others are [F].
Status Build(CompileCtx& cx, Kind kind, int64_t feature_index, double eps, const std::vector<uint32_t>& in,
             const std::vector<uint32_t>& out, std::unique_ptr<Kernel>* k) {
  const int ki = static_cast<int>(kind);
  const Slot& x = cx.slot(in[0]);
  const ElementType type = x.type;
  if (!IsFloat(type))
    return cx.Invalid("element type %s: batch norm takes floating-point tensors",
                      std::string(ElementTypeName(type)).c_str());
  if (IsSmallFloat(type))
    return cx.Unsupported("element type %s: batch norm takes f16, bf16, f32 or f64 tensors here",
                          std::string(ElementTypeName(type)).c_str());
  if (feature_index < 0 || feature_index >= static_cast<int64_t>(x.dims.size()))
    return cx.Invalid("feature_index %lld is out of range for an operand of rank %zu",
                      static_cast<long long>(feature_index), x.dims.size());
  Layout l;
  for (int64_t d = 0; d < feature_index; ++d) l.outer *= x.dims[d];
  l.features = x.dims[feature_index];
  for (size_t d = feature_index + 1; d < x.dims.size(); ++d) l.inner *= x.dims[d];
  const std::vector<int64_t> feature_dims = {l.features};
  auto check = [&](uint32_t s, const char* what, bool operand_shaped) -> Status {
    const Slot& v = cx.slot(s);
    if (v.type != type)
      return cx.Invalid("%s has element type %s, the operand %s", what, std::string(ElementTypeName(v.type)).c_str(),
                        std::string(ElementTypeName(type)).c_str());
    const std::vector<int64_t>& want = operand_shaped ? x.dims : feature_dims;
    if (v.dims != want)
      return cx.Invalid("%s has shape %s; expected %s (feature_index %lld of an operand of shape %s)", what,
                        DimsText(v.dims).c_str(), DimsText(want).c_str(), static_cast<long long>(feature_index),
                        DimsText(x.dims).c_str());
    return Ok();
  };
  for (size_t i = 1; i < in.size(); ++i)
    NEURONMEM_RETURN_IF_ERROR(check(in[i], kInputNames[ki][i], kind == Kind::kGrad && i == 4));
  for (size_t i = 0; i < out.size(); ++i) NEURONMEM_RETURN_IF_ERROR(check(out[i], kOutputNames[ki][i], i == 0));
  *k = std::make_unique<BatchNormKernel>(kind, type, l, eps, in, out);
  return Ok();
}

// batch_norm_training and batch_norm_grad on quantized or f8/f6/f4 values: each such operand dequantized or
// converted to an f32 copy, the op built on the copies with f32 results, each result quantized or rounded into
// the op's own (CompileQuantized's scheme for ops of several results).
Status OnF32Copies(CompileCtx& cx, Kind kind, int64_t feature_index, double eps, std::unique_ptr<Kernel>* k) {
  const auto narrow = [](const Slot& s) { return s.quant || IsSmallFloat(s.type); };
  std::vector<std::unique_ptr<Kernel>> ks;
  std::vector<uint32_t> in, out;
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    const Slot& s = cx.in_slot(i);
    if (!narrow(s)) {  // a wider float stays: Build names it if it differs from the others
      in.push_back(cx.in(i));
      continue;
    }
    const uint32_t tmp = cx.AddScratch(ElementType::kF32, s.dims);
    ks.emplace_back();
    NEURONMEM_RETURN_IF_ERROR(s.quant ? MakeDequantize(cx, cx.in(i), tmp, &ks.back())
                                      : MakeConvert(cx, cx.in(i), tmp, &ks.back()));
    in.push_back(tmp);
  }
  std::vector<std::pair<uint32_t, uint32_t>> back;  // (f32 result, the op's result)
  for (size_t i = 0; i < cx.num_outputs(); ++i) {
    const Slot& r = cx.out_slot(i);
    if (!narrow(r)) {
      out.push_back(cx.out(i));
      continue;
    }
    out.push_back(cx.AddScratch(ElementType::kF32, r.dims));
    back.emplace_back(out.back(), cx.out(i));
  }
  ks.emplace_back();
  NEURONMEM_RETURN_IF_ERROR(Build(cx, kind, feature_index, eps, in, out, &ks.back()));
  for (const auto& [from, to] : back) {
    ks.emplace_back();
    NEURONMEM_RETURN_IF_ERROR(cx.slot(to).quant ? MakeQuantize(cx, from, to, &ks.back())
                                                : MakeConvert(cx, from, to, &ks.back()));
  }
  *k = MakeSequence(std::move(ks));
  return Ok();
}

Status CompileBatchNorm(CompileCtx& cx, std::unique_ptr<Kernel>* k, Kind kind) {
  const size_t want_in = kind == Kind::kTraining ? 3 : 5, want_out = kind == Kind::kInference ? 1 : 3;
  if (cx.num_inputs() != want_in || cx.num_outputs() != want_out)
    return cx.Invalid("expected %zu operands and %zu results, found %zu and %zu", want_in, want_out, cx.num_inputs(),
                      cx.num_outputs());
  const stablehlo::Attribute* e = cx.Attr("epsilon");
  if (!e || (e->kind != stablehlo::Attribute::Kind::kFloat && e->kind != stablehlo::Attribute::Kind::kInt))
    return cx.Invalid("missing epsilon (a float attribute such as `epsilon = 1.000000e-03 : f32`)");
  const double eps = e->kind == stablehlo::Attribute::Kind::kFloat ? e->f : static_cast<double>(e->i);
  int64_t feature_index = 0;
  if (!cx.Int("feature_index", &feature_index)) return cx.Invalid("missing feature_index");
  if (kind == Kind::kInference) {
    return CompileOnSlots(cx, k,
                          [&](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t o, std::unique_ptr<Kernel>* kk) {
                            return Build(c, kind, feature_index, eps, in, {o}, kk);
                          });
  }
  if (NeedsF32(cx)) return OnF32Copies(cx, kind, feature_index, eps, k);
  std::vector<uint32_t> in(cx.inputs()), out;
  for (size_t i = 0; i < cx.num_outputs(); ++i) out.push_back(cx.out(i));
  return Build(cx, kind, feature_index, eps, in, out, k);
}

Status CompileInference(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  return CompileBatchNorm(cx, k, Kind::kInference);
}
Status CompileTraining(CompileCtx& cx, std::unique_ptr<Kernel>* k) { return CompileBatchNorm(cx, k, Kind::kTraining); }
Status CompileGrad(CompileCtx& cx, std::unique_ptr<Kernel>* k) { return CompileBatchNorm(cx, k, Kind::kGrad); }

}  // namespace

void RegisterBatchNormOps(OpTable* r) {
  (*r)["stablehlo.batch_norm_inference"] = CompileInference;
  (*r)["stablehlo.batch_norm_training"] = CompileTraining;
  (*r)["stablehlo.batch_norm_grad"] = CompileGrad;
}

}  // namespace neuronmem::interp
