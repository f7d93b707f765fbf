// chlo.is_inf, chlo.is_neg_inf, chlo.is_pos_inf (a float tensor -> i1 per element: is it an infinity, -inf,
// +inf) and chlo.conj (the complex conjugate; a float is its own), as CHLO defines them (ChloOps.td). f8/f6/f4
// operands are classified on their exact f32 values (CompileOnSlots); conj of a float tensor is the value itself.
#include <cmath>

#include "interpreter/quant.h"

namespace neuronmem::interp {
namespace {

enum class Class { kInf, kNegInf, kPosInf };

template <typename T>
class ClassKernel final : public Kernel {
 public:
  ClassKernel(Class c, uint32_t in, uint32_t out, int64_t n) : c_(c), in_(in), out_(out), n_(n) {}
  Status Run(Frame& f) const override {
    const T* x = Ptr<const T>(f, in_);
    bool* r = Ptr<bool>(f, out_);
    for (int64_t i = 0; i < n_; ++i) {
      const double v = ToDouble(x[i]);
      r[i] = std::isinf(v) && (c_ == Class::kInf || (c_ == Class::kNegInf) == (v < 0));
    }
    return Status();
  }

 private:
  Class c_;
  uint32_t in_, out_;
  int64_t n_;
};

template <Class kClass>
Status CompileClass(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  const Slot &in = cx.in_slot(0), &out = cx.out_slot(0);
  if (in.quant) return cx.Invalid("the operand must be a float tensor, found a quantized one");
  if (!IsFloat(in.type))
    return cx.Invalid("the operand must be a float tensor, found %s", std::string(ElementTypeName(in.type)).c_str());
  if (out.type != ElementType::kPred || out.dims != in.dims)
    return cx.Invalid("the result must be an i1 tensor of the operand's shape");
  return CompileOnSlots(
      cx, k, [](CompileCtx& c, const std::vector<uint32_t>& ins, uint32_t o, std::unique_ptr<Kernel>* kk) {
        const Slot& s = c.slot(ins[0]);
        *kk = Dispatch(s.type, [&](auto tag) -> std::unique_ptr<Kernel> {
          using T = typename decltype(tag)::type;
          if constexpr (kIsFloat<T>) {
            return std::make_unique<ClassKernel<T>>(kClass, ins[0], o, s.count);
          } else {
            return nullptr;
          }
        });
        if (!*kk)
          return c.Unsupported("element type %s is not supported", std::string(ElementTypeName(s.type)).c_str());
        return Ok();
      });
}

template <typename R>
class ConjKernel final : public Kernel {
 public:
  ConjKernel(uint32_t in, uint32_t out, int64_t n) : in_(in), out_(out), n_(n) {}
  Status Run(Frame& f) const override {
    const std::complex<R>* x = Ptr<const std::complex<R>>(f, in_);
    std::complex<R>* r = Ptr<std::complex<R>>(f, out_);
    for (int64_t i = 0; i < n_; ++i) r[i] = std::conj(x[i]);
    return Status();
  }

 private:
  uint32_t in_, out_;
  int64_t n_;
};

Status CompileConj(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  const Slot &in = cx.in_slot(0), &out = cx.out_slot(0);
  if (in.quant || (!IsFloat(in.type) && !IsComplex(in.type)))
    return cx.Invalid("the operand must be a float or complex tensor, found %s",
                      std::string(ElementTypeName(in.type)).c_str());
  if (!SameValueType(in, out)) return cx.Invalid("the result must have the operand's type");
  if (in.type == ElementType::kC64) {
    *k = std::make_unique<ConjKernel<float>>(cx.in(0), cx.out(0), in.count);
  } else if (in.type == ElementType::kC128) {
    *k = std::make_unique<ConjKernel<double>>(cx.in(0), cx.out(0), in.count);
  } else {
    cx.AliasOutput(0, cx.in(0));  // a real number is its own conjugate
  }
  return Ok();
}

}  // namespace

void RegisterChloFloatClassOps(OpTable* r) {
  (*r)["chlo.is_inf"] = CompileClass<Class::kInf>;
  (*r)["chlo.is_neg_inf"] = CompileClass<Class::kNegInf>;
  (*r)["chlo.is_pos_inf"] = CompileClass<Class::kPosInf>;
  (*r)["chlo.conj"] = CompileConj;
}

}  // namespace neuronmem::interp
