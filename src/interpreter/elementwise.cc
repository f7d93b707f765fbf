// Element-wise ops: unary and binary arithmetic, comparisons, select, clamp, convert, bitcast_convert,
// reduce_precision, the elementary CHLO functions, and quantized element-wise ops (dequantize, compute in
// the expressed type, quantize).
#include <bit>
#include <cfenv>
#include <cinttypes>
#include <functional>

#include "interpreter/elementwise.h"
#include "interpreter/elementwise_functors.h"
#include "interpreter/kernel.h"
#include "interpreter/quant.h"
#include "interpreter/shape.h"
#include "numerics/float_formats.h"

namespace neuronmem::interp {
namespace {

using namespace elementwise;  // NOLINT: the functors (elementwise_functors.h)

// ---- Scalar binary functions (reduction bodies, `applies`) ---------------------------------------

// The scalar function of the element-wise op F on T (Bits: the width the op sees, Sub: sub-byte wrap), one call
// per element (Binary) or folding a run of elements into an accumulator kept in a register (Fold: the same
// calls in the same order).
template <typename F, typename T, int Bits, int Sub>
struct Scalar {
  static T Apply(T x, T y) {
    T r;
    if constexpr (HasBits2<F>::value)
      r = F::template ApplyBits<T>(x, y, Bits);
    else
      r = F::template Apply<T>(x, y);
    if constexpr (kIsInt<T> && Sub != 0) r = WrapBits(r, Sub);
    return r;
  }
  static void Binary(const void* a, const void* b, void* out) {
    T x, y;
    std::memcpy(static_cast<void*>(&x), a, sizeof(T));
    std::memcpy(static_cast<void*>(&y), b, sizeof(T));
    const T r = Apply(x, y);
    std::memcpy(out, static_cast<const void*>(&r), sizeof(T));
  }
  static void Fold(void* acc, const void* xs, int64_t n, bool swapped) {
    T r, x;
    std::memcpy(static_cast<void*>(&r), acc, sizeof(T));
    const char* p = static_cast<const char*>(xs);
    for (int64_t i = 0; i < n; ++i, p += sizeof(T)) {
      std::memcpy(static_cast<void*>(&x), p, sizeof(T));
      r = swapped ? Apply(x, r) : Apply(r, x);
    }
    std::memcpy(acc, static_cast<const void*>(&r), sizeof(T));
  }
  static constexpr ScalarFns kFns = {&Binary, &Fold};
};

// f8/f6/f4: the f32 op on the exact values, rounded once into the format (as the element-wise kernels do).
template <typename F, ElementType E>
void SmallFloatScalarApply(const void* a, const void* b, void* out) {
  static const numerics::FloatFormat& fmt = *numerics::SmallFloatFormat(E);
  const float x = numerics::DecodeFloat(fmt, *static_cast<const uint8_t*>(a));
  const float y = numerics::DecodeFloat(fmt, *static_cast<const uint8_t*>(b));
  *static_cast<uint8_t*>(out) = static_cast<uint8_t>(numerics::EncodeFloat(fmt, F::template Apply<float>(x, y)));
}

template <typename F>
ScalarFns SmallFloatScalarFor(ElementType t) {
  if constexpr (!F::template Supports<float>()) {
    return {};
  } else {
    switch (t) {
#define NEURONMEM_SMALL_FLOAT_CASE(E) \
  case ElementType::E: return {&SmallFloatScalarApply<F, ElementType::E>, nullptr};
      NEURONMEM_SMALL_FLOAT_CASE(kF8E3M4)
      NEURONMEM_SMALL_FLOAT_CASE(kF8E4M3)
      NEURONMEM_SMALL_FLOAT_CASE(kF8E4M3FN)
      NEURONMEM_SMALL_FLOAT_CASE(kF8E4M3FNUZ)
      NEURONMEM_SMALL_FLOAT_CASE(kF8E4M3B11FNUZ)
      NEURONMEM_SMALL_FLOAT_CASE(kF8E5M2)
      NEURONMEM_SMALL_FLOAT_CASE(kF8E5M2FNUZ)
      NEURONMEM_SMALL_FLOAT_CASE(kF8E8M0FNU)
      NEURONMEM_SMALL_FLOAT_CASE(kF4E2M1FN)
      NEURONMEM_SMALL_FLOAT_CASE(kF6E2M3FN)
      NEURONMEM_SMALL_FLOAT_CASE(kF6E3M2FN)
#undef NEURONMEM_SMALL_FLOAT_CASE
      default: return {};
    }
  }
}

template <typename F>
ScalarFns ScalarFor(ElementType t) {
  const int sub = SubByteBits(t);
  if (IsSmallFloat(t)) return SmallFloatScalarFor<F>(t);
  return Dispatch(t, [&](auto tag) -> ScalarFns {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_void_v<T>) {
      return {};
    } else if constexpr (!F::template Supports<T>()) {
      return {};
    } else if constexpr (kIsBool<T>) {
      return Scalar<F, T, 1, 0>::kFns;
    } else {
      constexpr int kBits = static_cast<int>(8 * sizeof(T));
      if (sub == 2) return Scalar<F, T, 2, 2>::kFns;
      if (sub == 4) return Scalar<F, T, 4, 4>::kFns;
      return Scalar<F, T, kBits, 0>::kFns;
    }
  });
}

// ---- Generic compile helpers ---------------------------------------------------------------------

Status CheckSameShape(CompileCtx& cx, const Slot& a, const Slot& b) {
  if (a.dims != b.dims) return cx.Invalid("operand shapes differ");
  return Ok();
}

bool AnyQuant(CompileCtx& cx) {
  for (size_t i = 0; i < cx.num_inputs(); ++i)
    if (cx.in_slot(i).quant) return true;
  for (size_t i = 0; i < cx.num_outputs(); ++i)
    if (cx.out_slot(i).quant) return true;
  return false;
}

template <typename F>
Status MakeUnary(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.slot(in);
  const Slot& r = cx.slot(out);
  if (a.type != r.type || a.dims != r.dims) return cx.Invalid("result type differs from the operand type");
  *k = Dispatch(a.type, [&](auto tag) -> std::unique_ptr<Kernel> {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_void_v<T>) {
      return nullptr;
    } else if constexpr (!F::template Supports<T>()) {
      return nullptr;
    } else {
      return std::make_unique<UnaryKernel<T, F>>(in, out, a.count, BitWidth(a.type), SubByteBits(a.type));
    }
  });
  if (!*k) return cx.Unsupported("element type %s is not supported", std::string(ElementTypeName(a.type)).c_str());
  return Ok();
}

template <typename F>
Status MakeBinary(CompileCtx& cx, uint32_t a_slot, uint32_t b_slot, uint32_t out, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.slot(a_slot);
  const Slot& b = cx.slot(b_slot);
  const Slot& r = cx.slot(out);
  NEURONMEM_RETURN_IF_ERROR(CheckSameShape(cx, a, b));
  if (a.type != b.type || a.type != r.type || a.dims != r.dims) return cx.Invalid("operand and result types differ");
  *k = Dispatch(a.type, [&](auto tag) -> std::unique_ptr<Kernel> {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_void_v<T>) {
      return nullptr;
    } else if constexpr (!F::template Supports<T>()) {
      return nullptr;
    } else {
      return std::make_unique<BinaryKernel<T, F>>(a_slot, b_slot, out, a.count, BitWidth(a.type), SubByteBits(a.type));
    }
  });
  if (!*k) return cx.Unsupported("element type %s is not supported", std::string(ElementTypeName(a.type)).c_str());
  return Ok();
}

template <typename F>
Status CompileUnary(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  return CompileOnSlots(cx, k,
                        [](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
                          return MakeUnary<F>(c, in[0], out, kk);
                        });
}

template <typename F>
Status CompileBinary(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 2 || cx.num_outputs() != 1) return cx.Invalid("expected two operands and one result");
  return CompileOnSlots(cx, k,
                        [](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
                          return MakeBinary<F>(c, in[0], in[1], out, kk);
                        });
}

// ---- Ops with other result types -----------------------------------------------------------------

template <typename T, typename R, typename F>
class MapKernel final : public Kernel {
 public:
  MapKernel(uint32_t in, uint32_t out, int64_t n) : in_(in), out_(out), n_(n) {}
  Status Run(Frame& f) const override {
    const T* a = Ptr<T>(f, in_);
    R* r = Ptr<R>(f, out_);
    for (int64_t i = 0; i < n_; ++i) r[i] = F::template Apply<T, R>(a[i]);
    return Status();
  }

 private:
  uint32_t in_, out_;
  int64_t n_;
};

struct AbsComplex {
  template <typename T, typename R>
  static R Apply(T v) {
    return R(std::abs(v));
  }
};
struct RealPart {
  template <typename T, typename R>
  static R Apply(T v) {
    if constexpr (kIsComplex<T>)
      return v.real();
    else
      return v;
  }
};
struct ImagPart {
  template <typename T, typename R>
  static R Apply(T v) {
    if constexpr (kIsComplex<T>)
      return v.imag();
    else
      return R(0);
  }
};
struct IsFinite {
  template <typename T, typename R>
  static R Apply(T v) {
    return std::isfinite(static_cast<Acc<T>>(v));
  }
};

template <typename F>
Status MakeComplexPart(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.slot(in);
  const Slot& r = cx.slot(out);
  if (a.type == ElementType::kC64 && r.type == ElementType::kF32) {
    *k = std::make_unique<MapKernel<c64, float, F>>(in, out, a.count);
  } else if (a.type == ElementType::kC128 && r.type == ElementType::kF64) {
    *k = std::make_unique<MapKernel<c128, double, F>>(in, out, a.count);
  } else if (IsFloat(a.type) && a.type == r.type) {
    *k = Dispatch(a.type, [&](auto tag) -> std::unique_ptr<Kernel> {
      using T = typename decltype(tag)::type;
      if constexpr (kIsFloat<T>)
        return std::make_unique<MapKernel<T, T, F>>(in, out, a.count);
      else
        return nullptr;
    });
    if (!*k) return cx.Unsupported("element type %s is not supported", std::string(ElementTypeName(a.type)).c_str());
  } else {
    return cx.Unsupported("%s -> %s is not supported", std::string(ElementTypeName(a.type)).c_str(),
                          std::string(ElementTypeName(r.type)).c_str());
  }
  return Ok();
}

template <typename F>
Status CompileComplexPart(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  return CompileOnSlots(cx, k,
                        [](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
                          return MakeComplexPart<F>(c, in[0], out, kk);
                        });
}

Status CompileAbs(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() == 1 && IsComplex(cx.in_slot(0).type)) return CompileComplexPart<AbsComplex>(cx, k);
  return CompileUnary<Abs>(cx, k);
}

Status CompileIsFinite(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  if (cx.out_slot(0).type != ElementType::kPred) return cx.Invalid("result must be i1");
  if (NeedsF32(cx))  // small floats: inf and NaN survive the exact conversion to f32
    return CompileQuantized(
        cx, k, [](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* inner) {
          *inner = std::make_unique<MapKernel<float, bool, IsFinite>>(in[0], out, c.slot(out).count);
          return Ok();
        });
  const Slot& a = cx.in_slot(0);
  *k = Dispatch(a.type, [&](auto tag) -> std::unique_ptr<Kernel> {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>)
      return std::make_unique<MapKernel<T, bool, IsFinite>>(cx.in(0), cx.out(0), a.count);
    else
      return nullptr;
  });
  if (!*k) return cx.Unsupported("element type %s is not supported", std::string(ElementTypeName(a.type)).c_str());
  return Ok();
}

template <typename R>
class ComplexKernel final : public Kernel {
 public:
  using E = typename R::value_type;
  ComplexKernel(uint32_t a, uint32_t b, uint32_t out, int64_t n) : a_(a), b_(b), out_(out), n_(n) {}
  Status Run(Frame& f) const override {
    const E* a = Ptr<E>(f, a_);
    const E* b = Ptr<E>(f, b_);
    R* r = Ptr<R>(f, out_);
    for (int64_t i = 0; i < n_; ++i) r[i] = R(a[i], b[i]);
    return Status();
  }

 private:
  uint32_t a_, b_, out_;
  int64_t n_;
};

Status CompileComplex(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 2 || cx.num_outputs() != 1) return cx.Invalid("expected two operands and one result");
  const Slot& a = cx.in_slot(0);
  NEURONMEM_RETURN_IF_ERROR(CheckSameShape(cx, a, cx.in_slot(1)));
  if (a.type == ElementType::kF32 && cx.out_slot(0).type == ElementType::kC64)
    *k = std::make_unique<ComplexKernel<c64>>(cx.in(0), cx.in(1), cx.out(0), a.count);
  else if (a.type == ElementType::kF64 && cx.out_slot(0).type == ElementType::kC128)
    *k = std::make_unique<ComplexKernel<c128>>(cx.in(0), cx.in(1), cx.out(0), a.count);
  else
    return cx.Unsupported("complex of %s is not supported", std::string(ElementTypeName(a.type)).c_str());
  return Ok();
}

// ---- compare -------------------------------------------------------------------------------------

enum class Dir { kEq, kNe, kGe, kGt, kLe, kLt };

template <typename T>
class CompareKernel final : public Kernel {
 public:
  CompareKernel(uint32_t a, uint32_t b, uint32_t out, int64_t n, Dir dir, bool total, int sub)
      : a_(a), b_(b), out_(out), n_(n), dir_(dir), total_(total), sub_(sub) {}
  Status Run(Frame& f) const override {
    const T* a = Ptr<T>(f, a_);
    const T* b = Ptr<T>(f, b_);
    bool* r = Ptr<bool>(f, out_);
    if constexpr (kIsComplex<T>) {
      for (int64_t i = 0; i < n_; ++i) r[i] = (dir_ == Dir::kEq) == (a[i] == b[i]);
    } else if constexpr (kIsFloat<T>) {
      if (total_) {
        for (int64_t i = 0; i < n_; ++i) r[i] = Cmp(TotalOrderKey(a[i]), TotalOrderKey(b[i]));
      } else {
        for (int64_t i = 0; i < n_; ++i) r[i] = Cmp(static_cast<Acc<T>>(a[i]), static_cast<Acc<T>>(b[i]));
      }
    } else {
      for (int64_t i = 0; i < n_; ++i) r[i] = Cmp(a[i], b[i]);
    }
    return Status();
  }

 private:
  template <typename V>
  bool Cmp(V x, V y) const {
    switch (dir_) {
      case Dir::kEq: return x == y;
      case Dir::kNe: return x != y;
      case Dir::kGe: return x >= y;
      case Dir::kGt: return x > y;
      case Dir::kLe: return x <= y;
      case Dir::kLt: return x < y;
    }
    return false;
  }
  uint32_t a_, b_, out_;
  int64_t n_;
  Dir dir_;
  bool total_;
  int sub_;
};

bool ParseDir(const std::string& s, Dir* d) {
  static const std::pair<const char*, Dir> kDirs[] = {{"EQ", Dir::kEq}, {"NE", Dir::kNe}, {"GE", Dir::kGe},
                                                      {"GT", Dir::kGt}, {"LE", Dir::kLe}, {"LT", Dir::kLt}};
  for (const auto& p : kDirs)
    if (s == p.first) {
      *d = p.second;
      return true;
    }
  return false;
}

Status MakeCompare(CompileCtx& cx, uint32_t a_slot, uint32_t b_slot, uint32_t out, std::unique_ptr<Kernel>* k) {
  std::string dir_word, type_word;
  if (!cx.EnumWord("comparison_direction", &dir_word)) return cx.Invalid("missing comparison_direction");
  Dir dir;
  if (!ParseDir(dir_word, &dir)) return cx.Invalid("unknown comparison direction '%s'", dir_word.c_str());
  cx.EnumWord("compare_type", &type_word);
  const bool total = type_word == "TOTALORDER";
  const Slot& a = cx.slot(a_slot);
  NEURONMEM_RETURN_IF_ERROR(CheckSameShape(cx, a, cx.slot(b_slot)));
  if (cx.slot(out).type != ElementType::kPred) return cx.Invalid("result must be i1");
  if (IsComplex(a.type) && dir != Dir::kEq && dir != Dir::kNe)
    return cx.Unsupported("ordered comparison of complex numbers");
  *k = Dispatch(a.type, [&](auto tag) -> std::unique_ptr<Kernel> {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_void_v<T>)
      return nullptr;
    else
      return std::make_unique<CompareKernel<T>>(a_slot, b_slot, out, a.count, dir, total, SubByteBits(a.type));
  });
  if (!*k) return cx.Unsupported("element type %s is not supported", std::string(ElementTypeName(a.type)).c_str());
  return Ok();
}

Status CompileCompare(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 2 || cx.num_outputs() != 1) return cx.Invalid("expected two operands and one result");
  return CompileOnSlots(cx, k,
                        [](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
                          return MakeCompare(c, in[0], in[1], out, kk);
                        });
}

// ---- select, clamp -------------------------------------------------------------------------------

class SelectKernel final : public Kernel {
 public:
  SelectKernel(uint32_t p, uint32_t t, uint32_t f, uint32_t out, int64_t n, size_t esize, bool scalar_pred)
      : p_(p), t_(t), f_(f), out_(out), n_(n), esize_(esize), scalar_(scalar_pred) {}
  Status Run(Frame& fr) const override {
    const bool* p = Ptr<bool>(fr, p_);
    const char* t = fr.slots[t_];
    const char* f = fr.slots[f_];
    char* r = fr.slots[out_];
    if (scalar_) {
      std::memmove(r, p[0] ? t : f, n_ * esize_);
      return Status();
    }
    switch (esize_) {
      case 1: Loop<uint8_t>(p, t, f, r); break;
      case 2: Loop<uint16_t>(p, t, f, r); break;
      case 4: Loop<uint32_t>(p, t, f, r); break;
      case 8: Loop<uint64_t>(p, t, f, r); break;
      default:
        for (int64_t i = 0; i < n_; ++i) std::memcpy(r + i * esize_, (p[i] ? t : f) + i * esize_, esize_);
    }
    return Status();
  }

 private:
  template <typename W>
  void Loop(const bool* p, const char* t, const char* f, char* r) const {
    const W* tw = reinterpret_cast<const W*>(t);
    const W* fw = reinterpret_cast<const W*>(f);
    W* rw = reinterpret_cast<W*>(r);
    for (int64_t i = 0; i < n_; ++i) rw[i] = p[i] ? tw[i] : fw[i];
  }
  uint32_t p_, t_, f_, out_;
  int64_t n_;
  size_t esize_;
  bool scalar_;
};

Status CompileSelect(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 3 || cx.num_outputs() != 1) return cx.Invalid("expected three operands and one result");
  const Slot& p = cx.in_slot(0);
  const Slot& t = cx.in_slot(1);
  if (p.type != ElementType::kPred) return cx.Invalid("the predicate must be i1");
  if (t.dims != cx.in_slot(2).dims || t.type != cx.in_slot(2).type) return cx.Invalid("branch types differ");
  const bool scalar = p.dims.empty() && !t.dims.empty();
  if (!scalar && p.dims != t.dims) return cx.Invalid("predicate shape differs from the operands'");
  *k =
      std::make_unique<SelectKernel>(cx.in(0), cx.in(1), cx.in(2), cx.out(0), t.count, ElementByteSize(t.type), scalar);
  return Ok();
}

template <typename T>
class ClampKernel final : public Kernel {
 public:
  ClampKernel(uint32_t lo, uint32_t x, uint32_t hi, uint32_t out, int64_t n, bool lo_s, bool hi_s)
      : lo_(lo), x_(x), hi_(hi), out_(out), n_(n), lo_scalar_(lo_s), hi_scalar_(hi_s) {}
  Status Run(Frame& f) const override {
    const T* lo = Ptr<T>(f, lo_);
    const T* x = Ptr<T>(f, x_);
    const T* hi = Ptr<T>(f, hi_);
    T* r = Ptr<T>(f, out_);
    for (int64_t i = 0; i < n_; ++i) {
      const T l = lo[lo_scalar_ ? 0 : i], h = hi[hi_scalar_ ? 0 : i];
      r[i] = Min::Apply<T>(Max::Apply<T>(x[i], l), h);
    }
    return Status();
  }

 private:
  uint32_t lo_, x_, hi_, out_;
  int64_t n_;
  bool lo_scalar_, hi_scalar_;
};

Status CompileClamp(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 3 || cx.num_outputs() != 1) return cx.Invalid("expected three operands and one result");
  const Slot& lo = cx.in_slot(0);
  const Slot& x = cx.in_slot(1);
  const Slot& hi = cx.in_slot(2);
  if (lo.type != x.type || hi.type != x.type) return cx.Invalid("operand types differ");
  const bool lo_s = lo.dims.empty(), hi_s = hi.dims.empty();
  if ((!lo_s && lo.dims != x.dims) || (!hi_s && hi.dims != x.dims)) return cx.Invalid("min/max shape mismatch");
  // Quantized (the spec's dequantize -> clamp -> quantize) and small floats clamp in f32.
  const auto make = [lo_s, hi_s](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out,
                                 std::unique_ptr<Kernel>* kk) {
    const Slot& v = c.slot(in[1]);
    *kk = Dispatch(v.type, [&](auto tag) -> std::unique_ptr<Kernel> {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_void_v<T>)
        return nullptr;
      else  // complex: the spec's minimum(maximum(x, min), max), lexicographic on (real, imag)
        return std::make_unique<ClampKernel<T>>(in[0], in[1], in[2], out, v.count, lo_s, hi_s);
    });
    if (!*kk) return c.Unsupported("element type %s is not supported", std::string(ElementTypeName(v.type)).c_str());
    return Ok();
  };
  return CompileOnSlots(cx, k, make);
}

// ---- convert, bitcast_convert, reduce_precision ---------------------------------------------------

template <typename From, typename To>
class ConvertKernel final : public Kernel {
 public:
  ConvertKernel(uint32_t in, uint32_t out, int64_t n, int to_bits) : in_(in), out_(out), n_(n), to_bits_(to_bits) {}
  Status Run(Frame& f) const override {
    const From* a = Ptr<From>(f, in_);
    To* r = Ptr<To>(f, out_);
    for (int64_t i = 0; i < n_; ++i) r[i] = ConvertElement<To, From>(a[i], to_bits_);
    return Status();
  }

 private:
  uint32_t in_, out_;
  int64_t n_;
  int to_bits_;
};

// Small floats (f8, f6, f4) <-> any type. Decoding is exact (every value is an f32), so a small float converts
// like that f32; into a small float, the source's double value (exact for every type but 64-bit integers
// beyond 2^53, which overflow every small format anyway) rounds once (EncodeFloat).
template <typename T>
double SourceValue(T v) {
  if constexpr (kIsBool<T>) {
    return v ? 1.0 : 0.0;
  } else if constexpr (kIsComplex<T>) {
    return static_cast<double>(v.real());
  } else {
    return ToDouble(v);
  }
}

template <typename To>
class FromSmallFloatKernel final : public Kernel {
 public:
  FromSmallFloatKernel(const numerics::FloatFormat* from, uint32_t in, uint32_t out, int64_t n, int to_bits)
      : from_(from), in_(in), out_(out), n_(n), to_bits_(to_bits) {}
  Status Run(Frame& f) const override {
    const uint8_t* a = Ptr<uint8_t>(f, in_);
    To* r = Ptr<To>(f, out_);
    for (int64_t i = 0; i < n_; ++i) r[i] = ConvertElement<To, float>(numerics::DecodeFloat(*from_, a[i]), to_bits_);
    return Status();
  }

 private:
  const numerics::FloatFormat* from_;
  uint32_t in_, out_;
  int64_t n_;
  int to_bits_;
};

template <typename From>
class ToSmallFloatKernel final : public Kernel {
 public:
  ToSmallFloatKernel(const numerics::FloatFormat* to, uint32_t in, uint32_t out, int64_t n)
      : to_(to), in_(in), out_(out), n_(n) {}
  Status Run(Frame& f) const override {
    const From* a = Ptr<From>(f, in_);
    uint8_t* r = Ptr<uint8_t>(f, out_);
    for (int64_t i = 0; i < n_; ++i) r[i] = static_cast<uint8_t>(numerics::EncodeFloat(*to_, SourceValue(a[i])));
    return Status();
  }

 private:
  const numerics::FloatFormat* to_;
  uint32_t in_, out_;
  int64_t n_;
};

class SmallToSmallFloatKernel final : public Kernel {
 public:
  SmallToSmallFloatKernel(const numerics::FloatFormat* from, const numerics::FloatFormat* to, uint32_t in, uint32_t out,
                          int64_t n)
      : from_(from), to_(to), in_(in), out_(out), n_(n) {}
  Status Run(Frame& f) const override {
    const uint8_t* a = Ptr<uint8_t>(f, in_);
    uint8_t* r = Ptr<uint8_t>(f, out_);
    for (int64_t i = 0; i < n_; ++i)
      r[i] = static_cast<uint8_t>(numerics::EncodeFloat(*to_, numerics::DecodeFloatToDouble(*from_, a[i])));
    return Status();
  }

 private:
  const numerics::FloatFormat *from_, *to_;
  uint32_t in_, out_;
  int64_t n_;
};

std::unique_ptr<Kernel> MakeSmallFloatConvert(const Slot& a, const Slot& r, uint32_t in, uint32_t out) {
  const numerics::FloatFormat* from = IsSmallFloat(a.type) ? numerics::SmallFloatFormat(a.type) : nullptr;
  const numerics::FloatFormat* to = IsSmallFloat(r.type) ? numerics::SmallFloatFormat(r.type) : nullptr;
  if (from && to) return std::make_unique<SmallToSmallFloatKernel>(from, to, in, out, a.count);
  if (from) {
    return Dispatch(r.type, [&](auto tag) -> std::unique_ptr<Kernel> {
      using To = typename decltype(tag)::type;
      if constexpr (std::is_void_v<To>)
        return nullptr;
      else
        return std::make_unique<FromSmallFloatKernel<To>>(from, in, out, a.count, SubByteBits(r.type));
    });
  }
  return Dispatch(a.type, [&](auto tag) -> std::unique_ptr<Kernel> {
    using From = typename decltype(tag)::type;
    if constexpr (std::is_void_v<From>)
      return nullptr;
    else
      return std::make_unique<ToSmallFloatKernel<From>>(to, in, out, a.count);
  });
}

}  // namespace

Status MakeConvert(CompileCtx& cx, uint32_t in, uint32_t out, std::unique_ptr<Kernel>* k) {
  const Slot& a = cx.slot(in);
  const Slot& r = cx.slot(out);
  if (a.count != r.count) return cx.Invalid("operand and result shapes differ");
  if (IsSmallFloat(a.type) || IsSmallFloat(r.type)) {
    *k = MakeSmallFloatConvert(a, r, in, out);
    if (!*k)
      return cx.Unsupported("convert %s -> %s is not supported", std::string(ElementTypeName(a.type)).c_str(),
                            std::string(ElementTypeName(r.type)).c_str());
    return Ok();
  }
  const int to_bits = SubByteBits(r.type);
  *k = Dispatch(a.type, [&](auto ftag) -> std::unique_ptr<Kernel> {
    using From = typename decltype(ftag)::type;
    if constexpr (std::is_void_v<From>) {
      return nullptr;
    } else {
      return Dispatch(r.type, [&](auto ttag) -> std::unique_ptr<Kernel> {
        using To = typename decltype(ttag)::type;
        if constexpr (std::is_void_v<To>)
          return nullptr;
        else
          return std::make_unique<ConvertKernel<From, To>>(in, out, a.count, to_bits);
      });
    }
  });
  if (!*k)
    return cx.Unsupported("convert %s -> %s is not supported", std::string(ElementTypeName(a.type)).c_str(),
                          std::string(ElementTypeName(r.type)).c_str());
  return Ok();
}

namespace {

Status CompileConvert(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  if (AnyQuant(cx)) {
    // Not in the spec, which converts quantized values with uniform_quantize / uniform_dequantize: their
    // semantics, as an extension. A quantized operand is dequantized (to f32), a quantized result quantized from
    // f32 (both: requantized); between f32 and the other type, convert's rules.
    return CompileQuantized(
        cx, k, [](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
          return MakeConvert(c, in[0], out, kk);
        });
  }
  if (cx.in_slot(0).type == cx.out_slot(0).type) {
    cx.AliasOutput(0, cx.in(0));
    return Ok();
  }
  return MakeConvert(cx, cx.in(0), cx.out(0), k);
}

// bitcast_convert between types of different storage (sub-byte, i1) packs or unpacks bits.
class BitcastKernel final : public Kernel {
 public:
  BitcastKernel(uint32_t in, uint32_t out, int64_t n_in, int in_bits, int in_bytes, int64_t n_out, int out_bits,
                int out_bytes, bool out_signed)
      : in_(in),
        out_(out),
        n_in_(n_in),
        in_bits_(in_bits),
        in_bytes_(in_bytes),
        n_out_(n_out),
        out_bits_(out_bits),
        out_bytes_(out_bytes),
        out_signed_(out_signed) {}
  Status Run(Frame& f) const override {
    // Gather all bits little-endian, then scatter.
    const uint8_t* a = reinterpret_cast<const uint8_t*>(f.slots[in_]);
    uint8_t* r = reinterpret_cast<uint8_t*>(f.slots[out_]);
    std::vector<uint8_t> bits;  // one per bit; small tensors only reach here
    bits.reserve(static_cast<size_t>(n_in_ * in_bits_));
    for (int64_t i = 0; i < n_in_; ++i) {
      uint64_t v = 0;
      std::memcpy(&v, a + i * in_bytes_, in_bytes_);
      for (int b = 0; b < in_bits_; ++b) bits.push_back((v >> b) & 1);
    }
    size_t pos = 0;
    for (int64_t i = 0; i < n_out_; ++i) {
      uint64_t v = 0;
      for (int b = 0; b < out_bits_; ++b) v |= static_cast<uint64_t>(bits[pos++]) << b;
      if (out_signed_ && out_bits_ < 64 && (v >> (out_bits_ - 1)) & 1) v |= ~((uint64_t(1) << out_bits_) - 1);
      std::memcpy(r + i * out_bytes_, &v, out_bytes_);
    }
    return Status();
  }

 private:
  uint32_t in_, out_;
  int64_t n_in_;
  int in_bits_, in_bytes_;
  int64_t n_out_;
  int out_bits_, out_bytes_;
  bool out_signed_;
};

Status CompileBitcastConvert(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  const Slot& a = cx.in_slot(0);
  const Slot& r = cx.out_slot(0);
  const int ib = BitWidth(a.type), ob = BitWidth(r.type);
  if (a.count * ib != r.count * ob) return cx.Invalid("operand and result sizes in bits differ");
  const bool same_storage =
      ib == 8 * static_cast<int>(ElementByteSize(a.type)) && ob == 8 * static_cast<int>(ElementByteSize(r.type));
  if (same_storage) {
    *k = std::make_unique<CopyKernel>(cx.in(0), cx.out(0), a.bytes);
    return Ok();
  }
  *k = std::make_unique<BitcastKernel>(cx.in(0), cx.out(0), a.count, ib, ElementByteSize(a.type), r.count, ob,
                                       ElementByteSize(r.type), IsSignedInt(r.type));
  return Ok();
}

// reduce_precision: round to `mantissa` bits (nearest even) and clamp the exponent range to `exponent` bits.
template <typename T>
class ReducePrecisionKernel final : public Kernel {
 public:
  ReducePrecisionKernel(uint32_t in, uint32_t out, int64_t n, int e, int m) : in_(in), out_(out), n_(n), e_(e), m_(m) {}
  Status Run(Frame& f) const override {
    const T* a = Ptr<T>(f, in_);
    T* r = Ptr<T>(f, out_);
    for (int64_t i = 0; i < n_; ++i) r[i] = Reduce(a[i]);
    return Status();
  }

 private:
  T Reduce(T v) const {
    using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>>;
    constexpr int kMant = std::is_same_v<T, double>  ? 52
                          : std::is_same_v<T, float> ? 23
                          : std::is_same_v<T, half>  ? 10
                                                     : 7;
    constexpr int kExp = static_cast<int>(8 * sizeof(T)) - kMant - 1;
    Bits x;
    std::memcpy(&x, &v, sizeof(T));
    const Bits sign = x & (Bits(1) << (8 * sizeof(T) - 1));
    const Bits exp_mask = static_cast<Bits>(((Bits(1) << kExp) - 1) << kMant);
    const Bits mant_mask = static_cast<Bits>((Bits(1) << kMant) - 1);
    if ((x & exp_mask) == exp_mask) {  // inf or NaN: a NaN stays itself unless no mantissa bits remain (-> inf)
      if ((x & mant_mask) == 0 || m_ > 0) return v;
      x = static_cast<Bits>(sign | exp_mask);
      T out;
      std::memcpy(static_cast<void*>(&out), &x, sizeof(T));
      return out;
    }
    if (m_ < kMant) {
      const int shift = kMant - m_;
      const Bits last = (x >> shift) & 1;
      const Bits bias = static_cast<Bits>((Bits(1) << (shift - 1)) - 1 + last);
      x = static_cast<Bits>(x + bias);
      x = static_cast<Bits>(x & ~((Bits(1) << shift) - 1));
    }
    if (e_ < kExp) {
      const int64_t bias = (int64_t(1) << (kExp - 1)) - 1;
      const int64_t new_bias = (int64_t(1) << (e_ - 1)) - 1;
      const int64_t exp = static_cast<int64_t>((x & exp_mask) >> kMant) - bias;
      if (exp > new_bias) {
        x = static_cast<Bits>(sign | exp_mask);  // overflow to infinity
      } else if (exp <= -new_bias) {
        x = sign;  // underflow to zero (no subnormals in the reduced format)
      }
    }
    T out;
    std::memcpy(static_cast<void*>(&out), &x, sizeof(T));
    return out;
  }
  uint32_t in_, out_;
  int64_t n_;
  int e_, m_;
};

Status CompileReducePrecision(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  int64_t e = -1, m = -1;
  // The pretty form's `format = e5m10` too (the parser decodes it).
  if (!cx.Int("exponent_bits", &e) || !cx.Int("mantissa_bits", &m))
    return cx.Invalid("missing exponent_bits or mantissa_bits");
  if (e < 1 || m < 0) return cx.Invalid("exponent_bits must be >= 1 and mantissa_bits >= 0");
  // Small floats: every value is an f32, so reducing the f32 copy and rounding back is exact.
  const auto make = [e, m](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
    const Slot& a = c.slot(in[0]);
    *kk = Dispatch(a.type, [&](auto tag) -> std::unique_ptr<Kernel> {
      using T = typename decltype(tag)::type;
      if constexpr (kIsFloat<T>)
        return std::make_unique<ReducePrecisionKernel<T>>(in[0], out, a.count, static_cast<int>(e),
                                                          static_cast<int>(m));
      else
        return nullptr;
    });
    if (!*kk) return c.Unsupported("element type %s is not supported", std::string(ElementTypeName(a.type)).c_str());
    return Ok();
  };
  return CompileOnSlots(cx, k, make);
}

}  // namespace

ScalarFns FindScalarFns(std::string_view name, ElementType t) {
  static const std::pair<std::string_view, ScalarFns (*)(ElementType)> kTable[] = {
      {"stablehlo.add", ScalarFor<Add>},
      {"stablehlo.subtract", ScalarFor<Sub>},
      {"stablehlo.multiply", ScalarFor<Mul>},
      {"stablehlo.divide", ScalarFor<Div>},
      {"stablehlo.remainder", ScalarFor<Rem>},
      {"stablehlo.power", ScalarFor<Pow>},
      {"stablehlo.maximum", ScalarFor<Max>},
      {"stablehlo.minimum", ScalarFor<Min>},
      {"stablehlo.and", ScalarFor<And>},
      {"stablehlo.or", ScalarFor<Or>},
      {"stablehlo.xor", ScalarFor<Xor>},
      {"stablehlo.shift_left", ScalarFor<Shl>},
      {"stablehlo.shift_right_logical", ScalarFor<Shrl>},
      {"stablehlo.shift_right_arithmetic", ScalarFor<Shra>},
      {"stablehlo.atan2", ScalarFor<Atan2>},
      {"chlo.mulhi", ScalarFor<MulHi>},
  };
  for (const auto& [n, make] : kTable)
    if (n == name) return make(t);
  return {};
}

ScalarBinaryFn FindScalarBinary(std::string_view name, ElementType t) { return FindScalarFns(name, t).binary; }

Status CompileComplexChlo(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  static const std::pair<std::string_view, OpCompileFn> kTable[] = {
      {"chlo.acos", CompileUnary<Acos>},   {"chlo.acosh", CompileUnary<Acosh>}, {"chlo.asin", CompileUnary<Asin>},
      {"chlo.asinh", CompileUnary<Asinh>}, {"chlo.atan", CompileUnary<Atan>},   {"chlo.atanh", CompileUnary<Atanh>},
      {"chlo.cosh", CompileUnary<Cosh>},   {"chlo.sinh", CompileUnary<Sinh>},   {"chlo.tan", CompileUnary<Tan>},
  };
  for (const auto& [name, fn] : kTable)
    if (name == cx.op().name) return fn(cx, k);
  return cx.Unsupported("complex operands are not supported by this op");
}

void RegisterElementwiseOps(OpTable* r) {
  auto& m = *r;
  m["stablehlo.abs"] = {CompileAbs, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.negate"] = {CompileUnary<Negate>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.sign"] = {CompileUnary<Sign>, kElementwise | kEvaluable};
  m["stablehlo.not"] = {CompileUnary<Not>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.popcnt"] = {CompileUnary<Popcnt>, kElementwise};
  m["stablehlo.count_leading_zeros"] = {CompileUnary<Clz>, kElementwise};
  m["stablehlo.exponential"] = {CompileUnary<Exp>, kElementwise};
  m["stablehlo.exponential_minus_one"] = {CompileUnary<Expm1>, kElementwise};
  m["stablehlo.log"] = {CompileUnary<Log>, kElementwise};
  m["stablehlo.log_plus_one"] = {CompileUnary<Log1p>, kElementwise};
  m["stablehlo.logistic"] = {CompileUnary<Logistic>, kElementwise};
  m["stablehlo.sqrt"] = {CompileUnary<Sqrt>, kElementwise};
  m["stablehlo.rsqrt"] = {CompileUnary<Rsqrt>, kElementwise};
  m["stablehlo.cbrt"] = {CompileUnary<Cbrt>, kElementwise};
  m["stablehlo.sine"] = {CompileUnary<Sin>, kElementwise};
  m["stablehlo.cosine"] = {CompileUnary<Cos>, kElementwise};
  m["stablehlo.tan"] = {CompileUnary<Tan>, kElementwise};
  m["stablehlo.tanh"] = {CompileUnary<Tanh>, kElementwise};
  m["stablehlo.floor"] = {CompileUnary<Floor>, kElementwise};
  m["stablehlo.ceil"] = {CompileUnary<Ceil>, kElementwise};
  m["stablehlo.round_nearest_afz"] = {CompileUnary<RoundAfz>, kElementwise};
  m["stablehlo.round_nearest_even"] = {CompileUnary<RoundEven>, kElementwise};
  m["stablehlo.is_finite"] = {CompileIsFinite, kElementwise};
  m["stablehlo.real"] = {CompileComplexPart<RealPart>, kElementwise};
  m["stablehlo.imag"] = {CompileComplexPart<ImagPart>, kElementwise};
  m["stablehlo.complex"] = {CompileComplex, kElementwise};
  m["stablehlo.add"] = {CompileBinary<Add>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.subtract"] = {CompileBinary<Sub>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.multiply"] = {CompileBinary<Mul>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.divide"] = {CompileBinary<Div>, kElementwise | kEvaluable};
  m["stablehlo.remainder"] = {CompileBinary<Rem>, kElementwise | kEvaluable};
  m["stablehlo.power"] = {CompileBinary<Pow>, kElementwise};
  m["stablehlo.maximum"] = {CompileBinary<Max>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.minimum"] = {CompileBinary<Min>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.and"] = {CompileBinary<And>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.or"] = {CompileBinary<Or>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.xor"] = {CompileBinary<Xor>, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.shift_left"] = {CompileBinary<Shl>, kElementwise | kEvaluable};
  m["stablehlo.shift_right_logical"] = {CompileBinary<Shrl>, kElementwise | kEvaluable};
  m["stablehlo.shift_right_arithmetic"] = {CompileBinary<Shra>, kElementwise | kEvaluable};
  m["stablehlo.atan2"] = {CompileBinary<Atan2>, kElementwise};
  m["stablehlo.compare"] = {CompileCompare, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.select"] = {CompileSelect, kElementwise | kEvaluable | kBatchable};
  m["stablehlo.clamp"] = {CompileClamp, kElementwise | kEvaluable};
  m["stablehlo.convert"] = {CompileConvert, kElementwise | kEvaluable};
  m["stablehlo.bitcast_convert"] = CompileBitcastConvert;
  m["stablehlo.reduce_precision"] = {CompileReducePrecision, kElementwise};
  m["chlo.acos"] = {CompileUnary<Acos>, kElementwise};
  m["chlo.acosh"] = {CompileUnary<Acosh>, kElementwise};
  m["chlo.asin"] = {CompileUnary<Asin>, kElementwise};
  m["chlo.asinh"] = {CompileUnary<Asinh>, kElementwise};
  m["chlo.atan"] = {CompileUnary<Atan>, kElementwise};
  m["chlo.atanh"] = {CompileUnary<Atanh>, kElementwise};
  m["chlo.cosh"] = {CompileUnary<Cosh>, kElementwise};
  m["chlo.sinh"] = {CompileUnary<Sinh>, kElementwise};
  m["chlo.tan"] = {CompileUnary<Tan>, kElementwise};
  m["chlo.erf"] = {CompileUnary<Erf>, kElementwise};
  m["chlo.erfc"] = {CompileUnary<Erfc>, kElementwise};
  m["chlo.next_after"] = {CompileBinary<NextAfter>, kElementwise};
  m["chlo.mulhi"] = {CompileBinary<MulHi>, kElementwise};
}

}  // namespace neuronmem::interp
