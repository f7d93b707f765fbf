// Uniform quantization: uniform_quantize, uniform_dequantize, and quantized element-wise ops; the same
// compute-in-f32 wrapper serves the small float types (f8, f6, f4).
#include "interpreter/quant.h"

#include "interpreter/elementwise.h"

namespace neuronmem::interp {
namespace {

template <typename T>
T Load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void Store(T v, void* p) {
  std::memcpy(p, &v, sizeof v);
}

// Per-element scale and zero point (per tensor, or per slice along an axis).
struct QuantParams {
  std::vector<float> scales;
  std::vector<float> zero_points;
  int64_t axis_stride = 0;  // elements per step along the axis (0 = per tensor)
  int64_t axis_size = 1;
  int64_t storage_min = 0, storage_max = 0;

  size_t IndexOf(int64_t i) const { return axis_stride ? static_cast<size_t>((i / axis_stride) % axis_size) : 0; }
};

Status GetParams(CompileCtx& cx, const Slot& s, QuantParams* p) {
  const stablehlo::QuantType& q = *s.quant;
  if (q.expressed != ElementType::kF32 && q.expressed != ElementType::kBF16 && q.expressed != ElementType::kF16)
    return cx.Unsupported("quantized types expressed in %s are not supported",
                          std::string(ElementTypeName(q.expressed)).c_str());
  for (double sc : q.scales) p->scales.push_back(static_cast<float>(sc));
  for (int64_t zp : q.zero_points) p->zero_points.push_back(static_cast<float>(zp));
  while (p->zero_points.size() < p->scales.size()) p->zero_points.push_back(0.0f);
  if (q.axis >= 0) {
    if (static_cast<size_t>(q.axis) >= s.dims.size()) return cx.Invalid("quantization axis out of range");
    p->axis_size = s.dims[q.axis];
    p->axis_stride = 1;
    for (size_t d = q.axis + 1; d < s.dims.size(); ++d) p->axis_stride *= s.dims[d];
    if (static_cast<int64_t>(p->scales.size()) != p->axis_size) return cx.Invalid("per-axis scale count mismatch");
  } else if (p->scales.size() != 1) {
    return cx.Invalid("a per-tensor quantized type needs one scale");
  }
  p->storage_min = q.storage_min;
  p->storage_max = q.storage_max;
  return Ok();
}

template <typename S>
class DequantizeKernel final : public Kernel {
 public:
  DequantizeKernel(uint32_t in, uint32_t out, int64_t n, QuantParams p) : in_(in), out_(out), n_(n), p_(std::move(p)) {}
  Status Run(Frame& f) const override {
    const S* a = Ptr<S>(f, in_);
    float* r = Ptr<float>(f, out_);
    for (int64_t i = 0; i < n_; ++i) {
      const size_t k = p_.IndexOf(i);
      r[i] = (static_cast<float>(a[i]) - p_.zero_points[k]) * p_.scales[k];
    }
    return Status();
  }

 private:
  uint32_t in_, out_;
  int64_t n_;
  QuantParams p_;
};

template <typename S>
class QuantizeKernel final : public Kernel {
 public:
  QuantizeKernel(uint32_t in, uint32_t out, int64_t n, QuantParams p) : in_(in), out_(out), n_(n), p_(std::move(p)) {}
  Status Run(Frame& f) const override {
    const float* a = Ptr<float>(f, in_);
    S* r = Ptr<S>(f, out_);
    const float lo = static_cast<float>(p_.storage_min), hi = static_cast<float>(p_.storage_max);
    for (int64_t i = 0; i < n_; ++i) {
      const size_t k = p_.IndexOf(i);
      float v = std::nearbyint(a[i] / p_.scales[k] + p_.zero_points[k]);
      if (std::isnan(v)) v = 0;  // NaN converts to integer 0 (as the reference's float -> integer conversion)
      v = std::min(std::max(v, lo), hi);
      r[i] = static_cast<S>(v);
    }
    return Status();
  }

 private:
  uint32_t in_, out_;
  int64_t n_;
  QuantParams p_;
};

template <template <typename> class K>
Status MakeQuantKernel(CompileCtx& cx, const Slot& q, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k) {
  QuantParams p;
  NEURONMEM_RETURN_IF_ERROR(GetParams(cx, q, &p));
  switch (q.type) {
    case ElementType::kS2:
    case ElementType::kS4:
    case ElementType::kS8: *k = std::make_unique<K<int8_t>>(in, out, q.count, std::move(p)); break;
    case ElementType::kU2:
    case ElementType::kU4:
    case ElementType::kU8: *k = std::make_unique<K<uint8_t>>(in, out, q.count, std::move(p)); break;
    case ElementType::kS16: *k = std::make_unique<K<int16_t>>(in, out, q.count, std::move(p)); break;
    case ElementType::kU16: *k = std::make_unique<K<uint16_t>>(in, out, q.count, std::move(p)); break;
    case ElementType::kS32: *k = std::make_unique<K<int32_t>>(in, out, q.count, std::move(p)); break;
    case ElementType::kU32: *k = std::make_unique<K<uint32_t>>(in, out, q.count, std::move(p)); break;
    default:
      return cx.Unsupported("quantized storage type %s is not supported", std::string(ElementTypeName(q.type)).c_str());
  }
  return Ok();
}

// Runs a list of kernels in order (dequantize inputs, the float op, quantize the result, convert).
class SequenceKernel final : public Kernel {
 public:
  explicit SequenceKernel(std::vector<std::unique_ptr<Kernel>> ks) : ks_(std::move(ks)) {}
  Status Run(Frame& f) const override {
    for (const auto& k : ks_) {
      Status s = k->Run(f);
      if (s) return s;
    }
    return Status();
  }

 private:
  std::vector<std::unique_ptr<Kernel>> ks_;
};

}  // namespace

Status GetScalarQuant(CompileCtx& cx, const stablehlo::QuantType& q, ScalarQuant* out) {
  if (q.axis >= 0 || q.scales.size() != 1) return cx.Invalid("a quantized scalar must be quantized per tensor");
  Slot s;
  s.type = q.storage;
  s.quant = &q;
  QuantParams p;
  NEURONMEM_RETURN_IF_ERROR(GetParams(cx, s, &p));
  switch (q.storage) {
    case ElementType::kS2:
    case ElementType::kS4:
    case ElementType::kS8:
    case ElementType::kU2:
    case ElementType::kU4:
    case ElementType::kU8:
    case ElementType::kS16:
    case ElementType::kU16:
    case ElementType::kS32:
    case ElementType::kU32: break;
    default:
      return cx.Unsupported("quantized storage type %s is not supported",
                            std::string(ElementTypeName(q.storage)).c_str());
  }
  out->storage = q.storage;
  out->scale = p.scales[0];
  out->zero_point = p.zero_points[0];
  out->lo = static_cast<float>(p.storage_min);
  out->hi = static_cast<float>(p.storage_max);
  return Ok();
}

float ScalarQuant::Dequantize(const void* q) const {
  float v = 0;
  switch (storage) {
    case ElementType::kU2:
    case ElementType::kU4:
    case ElementType::kU8: v = static_cast<float>(*static_cast<const uint8_t*>(q)); break;
    case ElementType::kS16: v = static_cast<float>(Load<int16_t>(q)); break;
    case ElementType::kU16: v = static_cast<float>(Load<uint16_t>(q)); break;
    case ElementType::kS32: v = static_cast<float>(Load<int32_t>(q)); break;
    case ElementType::kU32: v = static_cast<float>(Load<uint32_t>(q)); break;
    default: v = static_cast<float>(*static_cast<const int8_t*>(q)); break;
  }
  return (v - zero_point) * scale;
}

void ScalarQuant::Quantize(float x, void* q) const {
  float v = std::nearbyint(x / scale + zero_point);
  if (std::isnan(v)) v = 0;
  v = std::min(std::max(v, lo), hi);
  switch (storage) {
    case ElementType::kU2:
    case ElementType::kU4:
    case ElementType::kU8: *static_cast<uint8_t*>(q) = static_cast<uint8_t>(v); break;
    case ElementType::kS16: Store(static_cast<int16_t>(v), q); break;
    case ElementType::kU16: Store(static_cast<uint16_t>(v), q); break;
    case ElementType::kS32: Store(static_cast<int32_t>(v), q); break;
    case ElementType::kU32: Store(static_cast<uint32_t>(v), q); break;
    default: *static_cast<int8_t*>(q) = static_cast<int8_t>(v); break;
  }
}

bool SameQuant(const stablehlo::QuantType* a, const stablehlo::QuantType* b) {
  if (!a || !b) return a == b;
  if (a->storage != b->storage || a->expressed != b->expressed || a->storage_min != b->storage_min ||
      a->storage_max != b->storage_max || a->axis != b->axis || a->scales.size() != b->scales.size() ||
      a->zero_points.size() != b->zero_points.size())
    return false;
  for (size_t i = 0; i < a->scales.size(); ++i)
    if (a->scales[i] != b->scales[i]) return false;
  for (size_t i = 0; i < a->zero_points.size(); ++i)
    if (a->zero_points[i] != b->zero_points[i]) return false;
  return true;
}

Status MakeDequantize(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k) {
  const Slot& q = cx.slot(in);
  if (cx.slot(out).type != ElementType::kF32) {
    // Dequantize to f32, then convert to the expressed type.
    const uint32_t tmp = cx.AddScratch(ElementType::kF32, q.dims);
    std::vector<std::unique_ptr<Kernel>> ks(2);
    NEURONMEM_RETURN_IF_ERROR(MakeQuantKernel<DequantizeKernel>(cx, q, in, tmp, &ks[0]));
    NEURONMEM_RETURN_IF_ERROR(MakeConvert(cx, tmp, out, &ks[1]));
    *k = std::make_unique<SequenceKernel>(std::move(ks));
    return Ok();
  }
  return MakeQuantKernel<DequantizeKernel>(cx, q, in, out, k);
}

Status MakeQuantize(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k) {
  const Slot& q = cx.slot(out);
  if (cx.slot(in).type != ElementType::kF32) {
    const uint32_t tmp = cx.AddScratch(ElementType::kF32, q.dims);
    std::vector<std::unique_ptr<Kernel>> ks(2);
    NEURONMEM_RETURN_IF_ERROR(MakeConvert(cx, in, tmp, &ks[0]));
    NEURONMEM_RETURN_IF_ERROR(MakeQuantKernel<QuantizeKernel>(cx, q, tmp, out, &ks[1]));
    *k = std::make_unique<SequenceKernel>(std::move(ks));
    return Ok();
  }
  return MakeQuantKernel<QuantizeKernel>(cx, q, in, out, k);
}

bool NeedsF32(CompileCtx& cx) {
  for (size_t i = 0; i < cx.num_inputs(); ++i)
    if (cx.in_slot(i).quant || IsSmallFloat(cx.in_slot(i).type)) return true;
  for (size_t i = 0; i < cx.num_outputs(); ++i)
    if (cx.out_slot(i).quant || IsSmallFloat(cx.out_slot(i).type)) return true;
  return false;
}

Status CompileOnSlots(CompileCtx& cx, std::unique_ptr<Kernel>* k, const InnerCompile& make) {
  if (NeedsF32(cx)) return CompileQuantized(cx, k, make);
  return make(cx, cx.inputs(), cx.out(0), k);
}

std::unique_ptr<Kernel> MakeSequence(std::vector<std::unique_ptr<Kernel>> ks) {
  return std::make_unique<SequenceKernel>(std::move(ks));
}

Status CompileQuantized(CompileCtx& cx, std::unique_ptr<Kernel>* k, const InnerCompile& inner) {
  std::vector<std::unique_ptr<Kernel>> ks;
  std::vector<uint32_t> ins;
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    const Slot& s = cx.in_slot(i);
    if (!s.quant && !IsSmallFloat(s.type)) {
      ins.push_back(cx.in(i));
      continue;
    }
    const uint32_t tmp = cx.AddScratch(ElementType::kF32, s.dims);
    ks.emplace_back();
    if (s.quant)
      NEURONMEM_RETURN_IF_ERROR(MakeDequantize(cx, cx.in(i), tmp, &ks.back()));
    else
      NEURONMEM_RETURN_IF_ERROR(MakeConvert(cx, cx.in(i), tmp, &ks.back()));
    ins.push_back(tmp);
  }
  const Slot& r = cx.out_slot(0);
  uint32_t out = cx.out(0);
  const bool small_out = !r.quant && IsSmallFloat(r.type);
  if (r.quant || small_out) out = cx.AddScratch(ElementType::kF32, r.dims);
  // The float op computes in f32 on f32 copies; a non-quantized operand of another float type is converted.
  for (size_t i = 0; i < ins.size(); ++i) {
    const Slot& s = cx.slot(ins[i]);
    if (IsFloat(s.type) && s.type != ElementType::kF32 && r.quant) {
      const uint32_t tmp = cx.AddScratch(ElementType::kF32, s.dims);
      ks.emplace_back();
      NEURONMEM_RETURN_IF_ERROR(MakeConvert(cx, ins[i], tmp, &ks.back()));
      ins[i] = tmp;
    }
  }
  ks.emplace_back();
  NEURONMEM_RETURN_IF_ERROR(inner(cx, ins, out, &ks.back()));
  if (r.quant) {
    ks.emplace_back();
    NEURONMEM_RETURN_IF_ERROR(MakeQuantize(cx, out, cx.out(0), &ks.back()));
  } else if (small_out) {
    ks.emplace_back();
    NEURONMEM_RETURN_IF_ERROR(MakeConvert(cx, out, cx.out(0), &ks.back()));
  }
  *k = std::make_unique<SequenceKernel>(std::move(ks));
  return Ok();
}

namespace {

Status CompileUniformQuantize(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  if (!r.quant) return cx.Invalid("the result must be quantized");
  if (!a.quant) return MakeQuantize(cx, cx.in(0), cx.out(0), k);
  // Requantize: dequantize, quantize.
  const uint32_t tmp = cx.AddScratch(ElementType::kF32, a.dims);
  std::vector<std::unique_ptr<Kernel>> ks(2);
  NEURONMEM_RETURN_IF_ERROR(MakeDequantize(cx, cx.in(0), tmp, &ks[0]));
  NEURONMEM_RETURN_IF_ERROR(MakeQuantize(cx, tmp, cx.out(0), &ks[1]));
  *k = std::make_unique<SequenceKernel>(std::move(ks));
  return Ok();
}

Status CompileUniformDequantize(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  if (!cx.in_slot(0).quant || cx.out_slot(0).quant) return cx.Invalid("expected a quantized operand, float result");
  return MakeDequantize(cx, cx.in(0), cx.out(0), k);
}

}  // namespace

void RegisterQuantOps(OpTable* r) {
  (*r)["stablehlo.uniform_quantize"] = CompileUniformQuantize;
  (*r)["stablehlo.uniform_dequantize"] = CompileUniformDequantize;
}

}  // namespace neuronmem::interp
