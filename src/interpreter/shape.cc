// Data-movement ops: constant, iota, broadcast_in_dim, reshape, transpose, slice, reverse, concatenate,
// pad, dynamic_slice, dynamic_update_slice. Most become one strided copy (an output-ordered walk of an
// input view with per-dimension strides, possibly zero or negative).
#include "interpreter/shape.h"

#include <algorithm>

#include "base/checked.h"
#include "interpreter/elementwise.h"
#include "interpreter/quant.h"

namespace neuronmem::interp {

namespace {
template <typename T>
int64_t Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::is_same_v<T, uint64_t>) return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : int64_t(v);
  return static_cast<int64_t>(v);
}
}  // namespace

int64_t ReadInt(const char* p, ElementType t) {
  switch (t) {
    case ElementType::kPred: return *reinterpret_cast<const bool*>(p) ? 1 : 0;
    case ElementType::kS2:
    case ElementType::kS4:
    case ElementType::kS8: return Load<int8_t>(p);
    case ElementType::kU2:
    case ElementType::kU4:
    case ElementType::kU8: return Load<uint8_t>(p);
    case ElementType::kS16: return Load<int16_t>(p);
    case ElementType::kU16: return Load<uint16_t>(p);
    case ElementType::kS32: return Load<int32_t>(p);
    case ElementType::kU32: return Load<uint32_t>(p);
    case ElementType::kS64: return Load<int64_t>(p);
    case ElementType::kU64: return Load<uint64_t>(p);
    default: return 0;
  }
}

Status ConstantInts(CompileCtx& cx, size_t input, const char* what, std::vector<int64_t>* out, bool any_rank) {
  if (input >= cx.num_inputs()) return cx.Invalid("missing operand %s", what);
  const Slot& s = cx.in_slot(input);
  if (!IsInteger(s.type) || (!any_rank && s.dims.size() > 1))
    return cx.Invalid("%s must be a 1-d integer tensor", what);
  const char* data = nullptr;
  NEURONMEM_RETURN_IF_ERROR(cx.ConstantData(cx.in(input), what, &data));
  out->clear();
  const size_t es = ElementByteSize(s.type);
  for (int64_t i = 0; i < s.count; ++i) out->push_back(ReadInt(data + i * es, s.type));
  return Ok();
}

namespace {
template <typename W>
void Fill(const char* in, char* out, int64_t n) {
  W v;
  std::memcpy(&v, in, sizeof v);
  W* o = reinterpret_cast<W*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = v;
}
}  // namespace

void SimplifyStrides(std::vector<int64_t>* dims, std::vector<int64_t>* strides) {
  std::vector<int64_t>& d = *dims;
  std::vector<int64_t>& s = *strides;
  for (int64_t n : d)
    if (n == 0) return;  // nothing to copy: leave it as it is
  size_t k = 0;          // dims kept so far
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == 1) continue;                 // its index is always 0
    if (k > 0 && s[k - 1] == s[i] * d[i]) {  // walks on from the previous dim: one dim
      d[k - 1] *= d[i];
      s[k - 1] = s[i];
      continue;
    }
    d[k] = d[i];
    s[k] = s[i];
    ++k;
  }
  d.resize(k);
  s.resize(k);
}

void StridedCopy(const char* in, char* out, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                 size_t esize) {
  const size_t rank = dims.size();
  for (int64_t d : dims)
    if (d == 0) return;
  if (rank == 0) {
    std::memcpy(out, in, esize);
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t istride = strides[rank - 1];
  if (rank == 1 && istride == 0) {  // one element repeated (a broadcast scalar): load it once
    switch (esize) {
      case 1: std::memset(out, *in, static_cast<size_t>(inner)); return;
      case 2: return Fill<uint16_t>(in, out, inner);
      case 4: return Fill<uint32_t>(in, out, inner);
      case 8: return Fill<uint64_t>(in, out, inner);
      default: break;
    }
  }
  int64_t idx_local[8] = {};
  std::vector<int64_t> idx_heap;
  if (rank > 8) idx_heap.resize(rank, 0);
  int64_t* const idx = rank > 8 ? idx_heap.data() : idx_local;
  const char* base = in;
  for (;;) {
    // Innermost dimension.
    if (istride == 1) {
      std::memcpy(out, base, static_cast<size_t>(inner) * esize);
      out += inner * esize;
    } else {
      switch (esize) {
        case 1:
          for (int64_t i = 0; i < inner; ++i) out[i] = base[i * istride];
          break;
        case 2: {
          auto* o = reinterpret_cast<uint16_t*>(out);
          for (int64_t i = 0; i < inner; ++i) std::memcpy(o + i, base + i * istride * 2, 2);
          break;
        }
        case 4: {
          auto* o = reinterpret_cast<uint32_t*>(out);
          for (int64_t i = 0; i < inner; ++i) std::memcpy(o + i, base + i * istride * 4, 4);
          break;
        }
        case 8: {
          auto* o = reinterpret_cast<uint64_t*>(out);
          for (int64_t i = 0; i < inner; ++i) std::memcpy(o + i, base + i * istride * 8, 8);
          break;
        }
        default:
          for (int64_t i = 0; i < inner; ++i) std::memcpy(out + i * esize, base + i * istride * esize, esize);
      }
      out += inner * esize;
    }
    // Odometer over the outer dimensions.
    size_t d = rank - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      base += strides[d] * static_cast<int64_t>(esize);
      if (++idx[d] < dims[d]) break;
      base -= strides[d] * dims[d] * static_cast<int64_t>(esize);
      idx[d] = 0;
    }
  }
}

namespace {

class StridedKernel final : public Kernel {
 public:
  StridedKernel(uint32_t in, uint32_t out, std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t offset,
                size_t esize)
      : in_(in), out_(out), dims_(std::move(dims)), strides_(std::move(strides)), offset_(offset), esize_(esize) {
    SimplifyStrides(&dims_, &strides_);
  }
  Status Run(Frame& f) const override {
    StridedCopy(f.slots[in_] + offset_ * static_cast<int64_t>(esize_), f.slots[out_], dims_, strides_, esize_);
    return Status();
  }

 private:
  uint32_t in_, out_;
  std::vector<int64_t> dims_, strides_;
  int64_t offset_;
  size_t esize_;
};

Status CheckQuantSame(CompileCtx& cx, const Slot& a, const Slot& r) {
  if ((a.quant == nullptr) != (r.quant == nullptr)) return cx.Invalid("operand and result quantization differ");
  if (a.type != r.type) return cx.Invalid("operand and result element types differ");
  return Ok();
}

Status CompileConstant(CompileCtx& cx, std::unique_ptr<Kernel>*) {
  const stablehlo::Attribute* v = cx.Attr("value");
  if (!v || v->kind != stablehlo::Attribute::Kind::kDense) return cx.Unsupported("constant without a dense value");
  if (cx.num_outputs() != 1) return cx.Invalid("expected one result");
  const Slot& r = cx.out_slot(0);
  const size_t esize = ElementByteSize(r.type);
  std::vector<char> data(r.bytes);
  if (v->splat) {
    if (v->dense.size() < esize) return cx.Invalid("splat value is too short");
    for (int64_t i = 0; i < r.count; ++i) std::memcpy(data.data() + i * esize, v->dense.data(), esize);
  } else {
    if (v->dense.size() != r.bytes)
      return cx.Invalid("dense value has %zu bytes, %zu expected", v->dense.size(), r.bytes);
    if (r.bytes) std::memcpy(data.data(), v->dense.data(), r.bytes);
  }
  const int sub = SubByteBits(r.type);
  if (sub) {
    for (int64_t i = 0; i < r.count; ++i) {
      if (IsSignedInt(r.type))
        data[i] = static_cast<char>(WrapBits<int8_t>(static_cast<int8_t>(data[i]), sub));
      else
        data[i] = static_cast<char>(WrapBits<uint8_t>(static_cast<uint8_t>(data[i]), sub));
    }
  }
  cx.AliasOutput(0, cx.AddConstant(r, data.data()));
  return Ok();
}

class IotaKernel final : public Kernel {
 public:
  IotaKernel(uint32_t out, ElementType t, std::vector<int64_t> dims, int64_t dim)
      : out_(out), t_(t), dims_(std::move(dims)), dim_(dim) {}
  Status Run(Frame& f) const override {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim_; ++d) outer *= dims_[d];
    for (size_t d = dim_ + 1; d < dims_.size(); ++d) inner *= dims_[d];
    const int64_t n = dims_[dim_];
    Dispatch(t_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_void_v<T>) {
        T* r = Ptr<T>(f, out_);
        const int bits = SubByteBits(t_);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < n; ++i) {
            const T v = ConvertElement<T, int64_t>(i, bits);
            for (int64_t j = 0; j < inner; ++j) r[(o * n + i) * inner + j] = v;
          }
      }
    });
    return Status();
  }

 private:
  uint32_t out_;
  ElementType t_;
  std::vector<int64_t> dims_;
  int64_t dim_;
};

Status CompileIota(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t dim = -1;
  if (!cx.Int("iota_dimension", &dim) && !cx.Int("dim", &dim)) return cx.Invalid("missing iota_dimension");
  if (cx.num_outputs() != 1) return cx.Invalid("expected one result");
  const Slot& r = cx.out_slot(0);
  if (cx.op().name == "stablehlo.dynamic_iota") {  // dynamic_iota(output_shape): a constant, the result's dims
    std::vector<int64_t> shape;
    NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 0, "output_shape", &shape));
    if (shape != r.dims) return cx.Invalid("output_shape differs from the result's dims");
  }
  if (dim < 0 || static_cast<size_t>(dim) >= r.dims.size()) return cx.Invalid("iota_dimension out of range");
  if (r.quant && r.quant->axis >= 0) return cx.Invalid("the result may be quantized per tensor only");
  if (IsSmallFloat(r.type) || r.quant) {
    // f8/f6/f4: the f32 iota, each value rounded once; quantized: the spec's quantize(index) of each value.
    const uint32_t tmp = cx.AddScratch(ElementType::kF32, r.dims);
    std::vector<std::unique_ptr<Kernel>> ks(2);
    ks[0] = std::make_unique<IotaKernel>(tmp, ElementType::kF32, r.dims, dim);
    if (r.quant)
      NEURONMEM_RETURN_IF_ERROR(MakeQuantize(cx, tmp, cx.out(0), &ks[1]));
    else
      NEURONMEM_RETURN_IF_ERROR(MakeConvert(cx, tmp, cx.out(0), &ks[1]));
    *k = MakeSequence(std::move(ks));
    return Ok();
  }
  *k = std::make_unique<IotaKernel>(cx.out(0), r.type, r.dims, dim);
  return Ok();
}

Status MakeBroadcastInDim(CompileCtx& cx, const std::vector<int64_t>& bdims, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() < 1 || cx.num_outputs() != 1) return cx.Invalid("expected an operand and one result");
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, r));
  if (bdims.size() != a.dims.size()) return cx.Invalid("broadcast_dimensions size differs from the operand rank");
  std::vector<int64_t> strides(r.dims.size(), 0);
  const auto as = Strides(a.dims);
  for (size_t i = 0; i < bdims.size(); ++i) {
    if (bdims[i] < 0 || static_cast<size_t>(bdims[i]) >= r.dims.size())
      return cx.Invalid("broadcast dimension out of range");
    if (a.dims[i] != 1 && a.dims[i] != r.dims[bdims[i]])
      return cx.Invalid("operand dimension %zu does not broadcast", i);
    strides[bdims[i]] = a.dims[i] == 1 ? 0 : as[i];
  }
  *k = std::make_unique<StridedKernel>(cx.in(0), cx.out(0), r.dims, std::move(strides), 0, ElementByteSize(r.type));
  return Ok();
}

Status CompileBroadcastInDim(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<int64_t> bdims;
  if (!cx.IntList("broadcast_dimensions", &bdims) && !cx.IntList("dims", &bdims))
    return cx.Invalid("missing broadcast_dimensions");
  return MakeBroadcastInDim(cx, bdims, k);
}

// dynamic_broadcast_in_dim: output_dimensions (a constant) must be the result's static dims; the
// known_(non)expanding_dimensions hints change nothing.
Status CompileDynamicBroadcastInDim(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 2) return cx.Invalid("expected operand and output_dimensions");
  std::vector<int64_t> bdims, out_dims;
  if (!cx.IntList("broadcast_dimensions", &bdims) && !cx.IntList("dims", &bdims))
    return cx.Invalid("missing broadcast_dimensions");
  NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 1, "output_dimensions", &out_dims));
  if (out_dims != cx.out_slot(0).dims) return cx.Invalid("output_dimensions differ from the result's dims");
  return MakeBroadcastInDim(cx, bdims, k);
}

Status CompileReshape(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  if (cx.op().name == "stablehlo.dynamic_reshape") {  // dynamic_reshape(operand, output_shape)
    std::vector<int64_t> shape;
    NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 1, "output_shape", &shape));
    if (shape != r.dims) return cx.Invalid("output_shape differs from the result's dims");
  }
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, r));
  if (a.count != r.count) return cx.Invalid("reshape changes the element count");
  cx.InPlace(0, 0);  // the same bytes: at the operand's last use, no copy at all
  *k = std::make_unique<CopyKernel>(cx.in(0), cx.out(0), a.bytes);
  return Ok();
}

Status CompileTranspose(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<int64_t> perm;
  if (!cx.IntList("permutation", &perm) && !cx.IntList("dims", &perm)) return cx.Invalid("missing permutation");
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, r));
  if (perm.size() != a.dims.size()) return cx.Invalid("permutation size differs from the rank");
  const auto as = Strides(a.dims);
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || static_cast<size_t>(perm[i]) >= a.dims.size() || a.dims[perm[i]] != r.dims[i])
      return cx.Invalid("bad permutation");
    strides[i] = as[perm[i]];
  }
  *k = std::make_unique<StridedKernel>(cx.in(0), cx.out(0), r.dims, std::move(strides), 0, ElementByteSize(r.type));
  return Ok();
}

Status MakeSlice(CompileCtx& cx, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
                 const std::vector<int64_t>& stride, std::unique_ptr<Kernel>* k);

Status CompileSlice(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, r));
  std::vector<int64_t> start, limit, stride;  // the pretty form's `[0:2, 1:5:2]` too (the parser decodes it)
  if (cx.IntList("start_indices", &start)) {
    cx.IntList("limit_indices", &limit);
    if (!cx.IntList("strides", &stride)) stride.assign(start.size(), 1);
  } else if (!a.dims.empty()) {
    return cx.Invalid("cannot read the slice bounds");
  }
  return MakeSlice(cx, start, limit, stride, k);
}

// real_dynamic_slice(operand, start_indices, limit_indices, strides): the three operands (known at compile time).
Status RealDynamicSliceBounds(CompileCtx& cx, std::vector<int64_t>* start, std::vector<int64_t>* limit,
                              std::vector<int64_t>* stride) {
  if (cx.num_inputs() != 4) return cx.Invalid("expected operand, start, limit, strides");
  NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 1, "start_indices", start));
  NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 2, "limit_indices", limit));
  return ConstantInts(cx, 3, "strides", stride);
}

// real_dynamic_slice: a slice once its bounds are known.
Status CompileRealDynamicSlice(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 4 || cx.num_outputs() != 1) return cx.Invalid("expected operand, start, limit, strides");
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, cx.in_slot(0), cx.out_slot(0)));
  std::vector<int64_t> start, limit, stride;
  NEURONMEM_RETURN_IF_ERROR(RealDynamicSliceBounds(cx, &start, &limit, &stride));
  return MakeSlice(cx, start, limit, stride, k);
}

Status MakeSlice(CompileCtx& cx, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
                 const std::vector<int64_t>& stride, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  if (start.size() != a.dims.size() || limit.size() != start.size() || stride.size() != start.size() ||
      r.dims.size() != start.size())
    return cx.Invalid("slice bounds or the result do not match the operand's rank");
  const auto as = Strides(a.dims);
  std::vector<int64_t> strides(start.size());
  int64_t offset = 0;
  for (size_t i = 0; i < start.size(); ++i) {
    if (stride[i] <= 0 || start[i] < 0 || limit[i] > a.dims[i] || start[i] > limit[i])
      return cx.Invalid("bad slice bounds");
    const int64_t n = limit[i] == start[i] ? 0 : (limit[i] - start[i] - 1) / stride[i] + 1;  // no overflow
    if (n != r.dims[i]) return cx.Invalid("result shape does not match the slice");
    offset += start[i] * as[i];
    strides[i] = as[i] * stride[i];
  }
  *k =
      std::make_unique<StridedKernel>(cx.in(0), cx.out(0), r.dims, std::move(strides), offset, ElementByteSize(r.type));
  return Ok();
}

Status CompileReverse(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<int64_t> rdims;
  if (!cx.IntList("dimensions", &rdims) && !cx.IntList("dims", &rdims)) return cx.Invalid("missing dimensions");
  const Slot& a = cx.in_slot(0);
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, cx.out_slot(0)));
  auto strides = Strides(a.dims);
  int64_t offset = 0;
  for (int64_t d : rdims) {
    if (d < 0 || static_cast<size_t>(d) >= a.dims.size()) return cx.Invalid("dimension out of range");
    if (a.dims[d] > 0) offset += (a.dims[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  *k =
      std::make_unique<StridedKernel>(cx.in(0), cx.out(0), a.dims, std::move(strides), offset, ElementByteSize(a.type));
  return Ok();
}

class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(std::vector<uint32_t> ins, std::vector<size_t> block_bytes, uint32_t out, int64_t outer)
      : ins_(std::move(ins)), block_(std::move(block_bytes)), out_(out), outer_(outer) {}
  Status Run(Frame& f) const override {
    char* r = f.slots[out_];
    for (int64_t o = 0; o < outer_; ++o)
      for (size_t i = 0; i < ins_.size(); ++i) {
        std::memcpy(r, f.slots[ins_[i]] + o * block_[i], block_[i]);
        r += block_[i];
      }
    return Status();
  }

 private:
  std::vector<uint32_t> ins_;
  std::vector<size_t> block_;
  uint32_t out_;
  int64_t outer_;
};

Status CompileConcatenate(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  int64_t dim = -1;
  if (!cx.Int("dimension", &dim) && !cx.Int("dim", &dim)) return cx.Invalid("missing dimension");
  const Slot& r = cx.out_slot(0);
  if (dim < 0 || static_cast<size_t>(dim) >= r.dims.size()) return cx.Invalid("dimension out of range");
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= r.dims[d];
  std::vector<uint32_t> ins;
  std::vector<size_t> blocks;
  int64_t total = 0;
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    const Slot& a = cx.in_slot(i);
    NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, r));
    if (a.dims.size() != r.dims.size()) return cx.Invalid("operand ranks differ");
    if (__builtin_add_overflow(total, a.dims[dim], &total)) return cx.Invalid("the concatenated dimension overflows");
    ins.push_back(cx.in(i));
    blocks.push_back(outer ? a.bytes / outer : 0);
  }
  if (total != r.dims[dim]) return cx.Invalid("result dimension is not the sum of the operands'");
  *k = std::make_unique<ConcatKernel>(std::move(ins), std::move(blocks), cx.out(0), outer);
  return Ok();
}

class PadKernel final : public Kernel {
 public:
  PadKernel(uint32_t in, uint32_t pad, uint32_t out, std::vector<int64_t> in_dims, std::vector<int64_t> out_dims,
            std::vector<int64_t> low, std::vector<int64_t> interior, size_t esize)
      : in_(in),
        pad_(pad),
        out_(out),
        in_dims_(std::move(in_dims)),
        out_dims_(std::move(out_dims)),
        low_(std::move(low)),
        interior_(std::move(interior)),
        esize_(esize) {}
  Status Run(Frame& f) const override {
    char* r = f.slots[out_];
    const char* pv = f.slots[pad_];
    int64_t n_out = 1;
    for (int64_t d : out_dims_) n_out *= d;
    for (int64_t i = 0; i < n_out; ++i) std::memcpy(r + i * esize_, pv, esize_);
    int64_t n_in = 1;
    for (int64_t d : in_dims_) n_in *= d;
    if (n_in == 0) return Status();
    const auto os = Strides(out_dims_);
    const char* a = f.slots[in_];
    std::vector<int64_t> idx(in_dims_.size(), 0);
    for (int64_t i = 0; i < n_in; ++i) {
      int64_t pos = 0;
      bool inside = true;
      for (size_t d = 0; d < idx.size(); ++d) {
        const int64_t o = low_[d] + idx[d] * (interior_[d] + 1);
        if (o < 0 || o >= out_dims_[d]) {
          inside = false;
          break;
        }
        pos += o * os[d];
      }
      if (inside) std::memcpy(r + pos * esize_, a + i * esize_, esize_);
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < in_dims_[d]) break;
        idx[d] = 0;
      }
    }
    return Status();
  }

 private:
  uint32_t in_, pad_, out_;
  std::vector<int64_t> in_dims_, out_dims_, low_, interior_;
  size_t esize_;
};

// The dims of `in` padded by low, high and interior (INVALID_ARGUMENT for sizes that differ from the rank, a
// negative interior padding or a negative result dim).
Status PaddedDims(CompileCtx& cx, const std::vector<int64_t>& in, const std::vector<int64_t>& low,
                  const std::vector<int64_t>& high, const std::vector<int64_t>& interior, std::vector<int64_t>* out) {
  if (low.size() != in.size() || high.size() != low.size() || interior.size() != low.size())
    return cx.Invalid("padding sizes do not match the rank");
  out->clear();
  for (size_t d = 0; d < low.size(); ++d) {
    if (interior[d] < 0) return cx.Invalid("negative interior padding");
    Checked c;  // base/checked.h: padding near INT64_MAX
    const int64_t n = c.Add(c.Add(low[d], high[d]), c.Add(in[d], c.Mul(std::max<int64_t>(in[d] - 1, 0), interior[d])));
    if (!c.ok()) return cx.Invalid("the padding of dimension %zu overflows", d);
    if (n < 0) return cx.Invalid("the padding makes dimension %zu negative", d);
    out->push_back(n);
  }
  return Ok();
}

// dynamic_pad(operand, padding_value, low, high, interior): the amounts (known at compile time).
Status DynamicPadAmounts(CompileCtx& cx, std::vector<int64_t>* low, std::vector<int64_t>* high,
                         std::vector<int64_t>* interior) {
  if (cx.num_inputs() != 5) return cx.Invalid("expected operand, padding_value, low, high, interior");
  NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 2, "edge_padding_low", low));
  NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 3, "edge_padding_high", high));
  return ConstantInts(cx, 4, "interior_padding", interior);
}

Status MakePad(CompileCtx& cx, const std::vector<int64_t>& low, const std::vector<int64_t>& high,
               const std::vector<int64_t>& interior, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, r));
  std::vector<int64_t> dims;
  NEURONMEM_RETURN_IF_ERROR(PaddedDims(cx, a.dims, low, high, interior, &dims));
  if (dims != r.dims) return cx.Invalid("result shape does not match the padding");
  *k = std::make_unique<PadKernel>(cx.in(0), cx.in(1), cx.out(0), a.dims, r.dims, low, interior,
                                   ElementByteSize(a.type));
  return Ok();
}

Status CompilePad(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<int64_t> low, high, interior;
  if (!(cx.IntList("edge_padding_low", &low) || cx.IntList("low", &low)) ||
      !(cx.IntList("edge_padding_high", &high) || cx.IntList("high", &high)) ||
      !(cx.IntList("interior_padding", &interior) || cx.IntList("interior", &interior)))
    return cx.Invalid("missing padding attributes");
  return MakePad(cx, low, high, interior, k);
}

// dynamic_pad(operand, padding_value, low, high, interior): the amounts are operands, which must be
// constants (the result's static shape fixes only low + high).
Status CompileDynamicPad(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<int64_t> low, high, interior;
  NEURONMEM_RETURN_IF_ERROR(DynamicPadAmounts(cx, &low, &high, &interior));
  return MakePad(cx, low, high, interior, k);
}

}  // namespace

Status InferDynamicResultDims(CompileCtx& cx, size_t result, const stablehlo::Type& type, std::vector<int64_t>* dims) {
  const std::string_view name = cx.op().name;
  dims->clear();
  if (result != 0) return Ok();
  if (name == "stablehlo.dynamic_iota") return ConstantInts(cx, 0, "output_shape", dims);
  if (name == "stablehlo.dynamic_reshape") return ConstantInts(cx, 1, "output_shape", dims);
  if (name == "stablehlo.dynamic_broadcast_in_dim") return ConstantInts(cx, 1, "output_dimensions", dims);
  if (name == "stablehlo.dynamic_gather") {
    std::vector<int64_t> slice_sizes;
    NEURONMEM_RETURN_IF_ERROR(ConstantInts(cx, 2, "slice_sizes", &slice_sizes));
    return GatherResultDims(cx, slice_sizes, type.dims.size(), dims);
  }
  if (name == "stablehlo.dynamic_conv") return ConvolutionResultDims(cx, dims);
  if (cx.num_inputs() == 0) return Ok();
  const std::vector<int64_t>& a = cx.in_slot(0).dims;
  if (name == "stablehlo.dynamic_pad") {
    std::vector<int64_t> low, high, interior;
    NEURONMEM_RETURN_IF_ERROR(DynamicPadAmounts(cx, &low, &high, &interior));
    return PaddedDims(cx, a, low, high, interior, dims);
  }
  // Ops whose result shape follows from their operands', met in refined shape-polymorphic programs
  // (CompileOptions::param_dims): the batch, free lhs and free rhs dims of dot_general, transpose's permuted
  // dims, and reduce's operand dims without the reduced ones.
  if (name == "stablehlo.dot_general" && cx.num_inputs() == 2) {
    const stablehlo::Attribute* dn = cx.Attr("dot_dimension_numbers");
    std::vector<int64_t> lb, rb, lc, rc;
    const auto list = [&](std::string_view key, std::vector<int64_t>* out) {
      const stablehlo::Attribute* e = dn ? dn->Get(key) : nullptr;
      return !e || CompileCtx::IntListOf(*e, out);
    };
    if (!dn || !list("lhs_batching_dimensions", &lb) || !list("rhs_batching_dimensions", &rb) ||
        !list("lhs_contracting_dimensions", &lc) || !list("rhs_contracting_dimensions", &rc))
      return cx.Invalid("malformed dot_dimension_numbers");
    const std::vector<int64_t>& b = cx.in_slot(1).dims;
    const auto in = [](const std::vector<int64_t>& v, size_t d) {
      return std::find(v.begin(), v.end(), static_cast<int64_t>(d)) != v.end();
    };
    for (int64_t d : lb)
      if (d >= 0 && static_cast<size_t>(d) < a.size()) dims->push_back(a[d]);
    for (size_t d = 0; d < a.size(); ++d)
      if (!in(lb, d) && !in(lc, d)) dims->push_back(a[d]);
    for (size_t d = 0; d < b.size(); ++d)
      if (!in(rb, d) && !in(rc, d)) dims->push_back(b[d]);
    return Ok();
  }
  if (name == "stablehlo.transpose") {
    std::vector<int64_t> perm;
    if (!cx.IntList("permutation", &perm) || perm.size() != a.size()) return cx.Invalid("malformed permutation");
    for (int64_t p : perm) {
      if (p < 0 || static_cast<size_t>(p) >= a.size()) return cx.Invalid("malformed permutation");
      dims->push_back(a[p]);
    }
    return Ok();
  }
  if (name == "stablehlo.reduce") {
    std::vector<int64_t> reduced;
    if (!cx.IntList("dimensions", &reduced)) return cx.Invalid("missing dimensions");
    for (size_t d = 0; d < a.size(); ++d)
      if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) == reduced.end()) dims->push_back(a[d]);
    return Ok();
  }
  if (name == "stablehlo.real_dynamic_slice") {
    std::vector<int64_t> start, limit, stride;
    NEURONMEM_RETURN_IF_ERROR(RealDynamicSliceBounds(cx, &start, &limit, &stride));
    if (start.size() != a.size() || limit.size() != a.size() || stride.size() != a.size())
      return cx.Invalid("start, limit and strides must have one entry per operand dimension");
    for (size_t d = 0; d < a.size(); ++d) {
      if (stride[d] <= 0 || start[d] < 0 || limit[d] < start[d] || limit[d] > a[d])
        return cx.Invalid("slice bounds out of range in dimension %zu", d);
      dims->push_back((limit[d] - start[d] + stride[d] - 1) / stride[d]);
    }
    return Ok();
  }
  return Ok();
}

namespace {

class DynamicSliceKernel final : public Kernel {
 public:
  DynamicSliceKernel(uint32_t in, std::vector<uint32_t> starts, ElementType index_type, uint32_t out,
                     std::vector<int64_t> in_dims, std::vector<int64_t> sizes, size_t esize)
      : in_(in),
        starts_(std::move(starts)),
        index_type_(index_type),
        out_(out),
        in_dims_(std::move(in_dims)),
        sizes_(std::move(sizes)),
        strides_(Strides(in_dims_)),
        esize_(esize) {}
  Status Run(Frame& f) const override {
    int64_t offset = 0;
    for (size_t d = 0; d < starts_.size(); ++d) {
      int64_t s = ReadInt(f.slots[starts_[d]], index_type_);
      s = std::min(std::max<int64_t>(s, 0), in_dims_[d] - sizes_[d]);
      offset += s * strides_[d];
    }
    StridedCopy(f.slots[in_] + offset * static_cast<int64_t>(esize_), f.slots[out_], sizes_, strides_, esize_);
    return Status();
  }

 private:
  uint32_t in_;
  std::vector<uint32_t> starts_;
  ElementType index_type_;
  uint32_t out_;
  std::vector<int64_t> in_dims_, sizes_, strides_;
  size_t esize_;
};

Status CompileDynamicSlice(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::vector<int64_t> sizes;
  if (!cx.IntList("slice_sizes", &sizes) && !cx.IntList("sizes", &sizes)) return cx.Invalid("missing slice_sizes");
  const Slot& a = cx.in_slot(0);
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, cx.out_slot(0)));
  if (cx.num_inputs() != a.dims.size() + 1 || sizes.size() != a.dims.size())
    return cx.Invalid("expected one start index per dimension");
  std::vector<uint32_t> starts;
  for (size_t i = 1; i < cx.num_inputs(); ++i) {
    if (!cx.in_slot(i).dims.empty() || !IsInteger(cx.in_slot(i).type))
      return cx.Invalid("start indices must be integer scalars");
    starts.push_back(cx.in(i));
  }
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 0 || sizes[d] > a.dims[d]) return cx.Invalid("slice size out of range");
  const ElementType it = starts.empty() ? ElementType::kS64 : cx.in_slot(1).type;
  *k = std::make_unique<DynamicSliceKernel>(cx.in(0), std::move(starts), it, cx.out(0), a.dims, sizes,
                                            ElementByteSize(a.type));
  return Ok();
}

class DynamicUpdateSliceKernel final : public Kernel {
 public:
  DynamicUpdateSliceKernel(uint32_t in, uint32_t upd, std::vector<uint32_t> starts, ElementType index_type,
                           uint32_t out, std::vector<int64_t> in_dims, std::vector<int64_t> upd_dims, size_t esize)
      : in_(in),
        upd_(upd),
        starts_(std::move(starts)),
        index_type_(index_type),
        out_(out),
        in_dims_(std::move(in_dims)),
        upd_dims_(std::move(upd_dims)),
        esize_(esize) {}
  Status Run(Frame& f) const override {
    int64_t n = 1;
    for (int64_t d : in_dims_) n *= d;
    if (f.slots[out_] != f.slots[in_]) std::memmove(f.slots[out_], f.slots[in_], n * esize_);
    const auto os = Strides(in_dims_);
    int64_t offset = 0;
    for (size_t d = 0; d < starts_.size(); ++d) {
      int64_t s = ReadInt(f.slots[starts_[d]], index_type_);
      s = std::min(std::max<int64_t>(s, 0), in_dims_[d] - upd_dims_[d]);
      offset += s * os[d];
    }
    // Scatter the update (a dense block) into the strided window of the result.
    const char* u = f.slots[upd_];
    char* r = f.slots[out_] + offset * static_cast<int64_t>(esize_);
    int64_t m = 1;
    for (int64_t d : upd_dims_) m *= d;
    if (m == 0) return Status();
    const size_t rank = upd_dims_.size();
    if (rank == 0) {
      std::memcpy(r, u, esize_);
      return Status();
    }
    std::vector<int64_t> idx(rank, 0);
    const int64_t inner = upd_dims_[rank - 1];
    for (int64_t i = 0; i < m; i += inner) {
      int64_t pos = 0;
      for (size_t d = 0; d + 1 < rank; ++d) pos += idx[d] * os[d];
      std::memcpy(r + pos * esize_, u + i * esize_, inner * esize_);
      for (size_t d = rank - 1; d-- > 0;) {
        if (++idx[d] < upd_dims_[d]) break;
        idx[d] = 0;
      }
    }
    return Status();
  }

 private:
  uint32_t in_, upd_;
  std::vector<uint32_t> starts_;
  ElementType index_type_;
  uint32_t out_;
  std::vector<int64_t> in_dims_, upd_dims_;
  size_t esize_;
};

Status CompileDynamicUpdateSlice(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.in_slot(0);
  const Slot& u = cx.in_slot(1);
  NEURONMEM_RETURN_IF_ERROR(CheckQuantSame(cx, a, cx.out_slot(0)));
  if (cx.num_inputs() != a.dims.size() + 2 || u.dims.size() != a.dims.size())
    return cx.Invalid("expected one start index per dimension");
  std::vector<uint32_t> starts;
  for (size_t i = 2; i < cx.num_inputs(); ++i) {
    if (!cx.in_slot(i).dims.empty() || !IsInteger(cx.in_slot(i).type))
      return cx.Invalid("start indices must be integer scalars");
    starts.push_back(cx.in(i));
  }
  for (size_t d = 0; d < a.dims.size(); ++d)
    if (u.dims[d] > a.dims[d]) return cx.Invalid("update larger than the operand");
  const ElementType it = starts.empty() ? ElementType::kS64 : cx.in_slot(2).type;
  cx.InPlace(0, 0);  // at the operand's last use only the update's window is written
  *k = std::make_unique<DynamicUpdateSliceKernel>(cx.in(0), cx.in(1), std::move(starts), it, cx.out(0), a.dims, u.dims,
                                                  ElementByteSize(a.type));
  return Ok();
}

// get_dimension_size(operand), dimension: the size of one of the operand's (static) dims as tensor<i32>: a
// constant of the program, no kernel (so shape computations built on it are known at compile time).
Status CompileGetDimensionSize(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  int64_t dim = -1;
  if (!cx.Int("dimension", &dim) && !cx.Int("dim", &dim)) return cx.Invalid("missing dimension");
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  if (dim < 0 || static_cast<size_t>(dim) >= a.dims.size())
    return cx.Invalid("dimension %lld is outside [0, %zu)", static_cast<long long>(dim), a.dims.size());
  if (r.type != ElementType::kS32 || !r.dims.empty() || r.quant) return cx.Invalid("the result must be tensor<i32>");
  if (a.dims[dim] > INT32_MAX) return cx.Invalid("dimension size %lld does not fit in i32", (long long)a.dims[dim]);
  const int32_t size = static_cast<int32_t>(a.dims[dim]);
  cx.AliasOutput(0, cx.AddConstant(r, &size));
  k->reset();
  return Ok();
}

}  // namespace

void RegisterShapeOps(OpTable* r) {
  auto& m = *r;
  m["stablehlo.constant"] = CompileConstant;
  m["stablehlo.iota"] = {CompileIota, kEvaluable};
  m["stablehlo.broadcast_in_dim"] = {CompileBroadcastInDim, kEvaluable};
  m["stablehlo.reshape"] = {CompileReshape, kEvaluable};
  m["stablehlo.transpose"] = {CompileTranspose, kEvaluable};
  m["stablehlo.slice"] = {CompileSlice, kEvaluable};
  m["stablehlo.reverse"] = {CompileReverse, kEvaluable};
  m["stablehlo.concatenate"] = {CompileConcatenate, kEvaluable};
  m["stablehlo.pad"] = {CompilePad, kEvaluable};
  m["stablehlo.dynamic_pad"] = {CompileDynamicPad, kEvaluable};
  m["stablehlo.dynamic_broadcast_in_dim"] = {CompileDynamicBroadcastInDim, kEvaluable};
  m["stablehlo.dynamic_slice"] = {CompileDynamicSlice, kEvaluable};
  m["stablehlo.real_dynamic_slice"] = {CompileRealDynamicSlice, kEvaluable};
  m["stablehlo.dynamic_reshape"] = {CompileReshape, kEvaluable};
  m["stablehlo.dynamic_iota"] = {CompileIota, kEvaluable};
  m["stablehlo.dynamic_update_slice"] = {CompileDynamicUpdateSlice, kEvaluable};
  m["stablehlo.get_dimension_size"] = CompileGetDimensionSize;
}

}  // namespace neuronmem::interp
