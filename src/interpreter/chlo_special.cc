// The CHLO special functions (src/numerics/special_functions.h: lgamma, digamma, zeta, polygamma, erf, erfc,
// erf_inv, bessel_i1e, cosh, sinh, acos, asin, acosh, asinh, atan, atanh, tan, next_after) as interpreter
// kernels, with the numerics of StableHLO's reference interpreter on the CHLO decompositions
// (docs/numerics.md). Registered after the element-wise family, so these kernels replace any earlier
// registration of the same CHLO op names.
#include <string>

#include "interpreter/elementwise.h"
#include "interpreter/kernel.h"
#include "interpreter/quant.h"
#include "numerics/special_functions.h"

namespace neuronmem::interp {
namespace {

// Prefixes a kernel's status with the op's location.
Status AtOp(const Frame& f, const stablehlo::Operation* op, Status s) {
  if (!s) return s;
  return MakeStatus(s->code,
                    FormatLocation(f.state->filename, *op) + ": '" + std::string(op->name) + "': " + s->message);
}

class ChloUnaryKernel final : public Kernel {
 public:
  ChloUnaryKernel(numerics::ChloUnaryOp fn, ElementType type, uint32_t in, uint32_t out, int64_t n)
      : fn_(fn), type_(type), in_(in), out_(out), n_(n) {}
  Status Run(Frame& f) const override {
    return AtOp(f, op, numerics::ApplyChloUnary(fn_, type_, f.slots[in_], f.slots[out_], n_));
  }

 private:
  numerics::ChloUnaryOp fn_;
  ElementType type_;
  uint32_t in_, out_;
  int64_t n_;
};

class ChloBinaryKernel final : public Kernel {
 public:
  ChloBinaryKernel(numerics::ChloBinaryOp fn, ElementType type, uint32_t x, uint32_t y, uint32_t out, int64_t n)
      : fn_(fn), type_(type), x_(x), y_(y), out_(out), n_(n) {}
  Status Run(Frame& f) const override {
    return AtOp(f, op, numerics::ApplyChloBinary(fn_, type_, f.slots[x_], f.slots[y_], f.slots[out_], n_));
  }

 private:
  numerics::ChloBinaryOp fn_;
  ElementType type_;
  uint32_t x_, y_, out_;
  int64_t n_;
};

// Operands and result: one element type (f16, bf16, f32, f64, or f8/f6/f4 computed in f32), not quantized,
// one shape.
Status CheckOperands(CompileCtx& cx, size_t inputs) {
  if (cx.num_inputs() != inputs || cx.num_outputs() != 1) {
    return cx.Invalid("expected %zu operand(s) and one result", inputs);
  }
  const Slot& out = cx.out_slot(0);
  for (size_t i = 0; i < inputs; ++i) {
    const Slot& in = cx.in_slot(i);
    if (in.quant || out.quant) return cx.Unsupported("quantized operands are not supported");
    if (in.type != out.type) {
      return cx.Invalid("operand %zu is %s but the result is %s", i, std::string(ElementTypeName(in.type)).c_str(),
                        std::string(ElementTypeName(out.type)).c_str());
    }
    if (in.dims != out.dims) return cx.Invalid("operand %zu and the result have different shapes", i);
  }
  if (!numerics::ChloSupportsElementType(out.type) && !IsSmallFloat(out.type)) {
    return cx.Unsupported("element type %s is not supported (f16, bf16, f32, f64)",
                          std::string(ElementTypeName(out.type)).c_str());
  }
  return Status();
}

template <numerics::ChloUnaryOp kFn>
Status CompileChloUnary(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  // CHLO's trigonometric and hyperbolic functions also take complex numbers (the element-wise family has them).
  if (cx.num_inputs() == 1 && IsComplex(cx.in_slot(0).type)) return CompileComplexChlo(cx, k);
  if (Status s = CheckOperands(cx, 1)) return s;
  // f8/f6/f4: the f32 function of the exact f32 value, rounded once.
  const auto make = [](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
    *kk = std::make_unique<ChloUnaryKernel>(kFn, c.slot(out).type, in[0], out, c.slot(out).count);
    return Ok();
  };
  return CompileOnSlots(cx, k, make);
}

template <numerics::ChloBinaryOp kFn>
Status CompileChloBinary(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (Status s = CheckOperands(cx, 2)) return s;
  const auto make = [](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t out, std::unique_ptr<Kernel>* kk) {
    *kk = std::make_unique<ChloBinaryKernel>(kFn, c.slot(out).type, in[0], in[1], out, c.slot(out).count);
    return Ok();
  };
  return CompileOnSlots(cx, k, make);
}

}  // namespace

void RegisterChloSpecialOps(OpTable* r) {
  using U = numerics::ChloUnaryOp;
  using B = numerics::ChloBinaryOp;
  auto& m = *r;
  m["chlo.lgamma"] = {CompileChloUnary<U::kLgamma>, kElementwise};
  m["chlo.digamma"] = {CompileChloUnary<U::kDigamma>, kElementwise};
  m["chlo.erf"] = {CompileChloUnary<U::kErf>, kElementwise};
  m["chlo.erfc"] = {CompileChloUnary<U::kErfc>, kElementwise};
  m["chlo.erf_inv"] = {CompileChloUnary<U::kErfInv>, kElementwise};
  m["chlo.bessel_i1e"] = {CompileChloUnary<U::kBesselI1e>, kElementwise};
  m["chlo.cosh"] = {CompileChloUnary<U::kCosh>, kElementwise};
  m["chlo.sinh"] = {CompileChloUnary<U::kSinh>, kElementwise};
  m["chlo.acos"] = {CompileChloUnary<U::kAcos>, kElementwise};
  m["chlo.asin"] = {CompileChloUnary<U::kAsin>, kElementwise};
  m["chlo.acosh"] = {CompileChloUnary<U::kAcosh>, kElementwise};
  m["chlo.asinh"] = {CompileChloUnary<U::kAsinh>, kElementwise};
  m["chlo.atan"] = {CompileChloUnary<U::kAtan>, kElementwise};
  m["chlo.atanh"] = {CompileChloUnary<U::kAtanh>, kElementwise};
  m["chlo.tan"] = {CompileChloUnary<U::kTan>, kElementwise};
  m["chlo.zeta"] = {CompileChloBinary<B::kZeta>, kElementwise};
  m["chlo.polygamma"] = {CompileChloBinary<B::kPolygamma>, kElementwise};
  m["chlo.next_after"] = {CompileChloBinary<B::kNextAfter>, kElementwise};
}

}  // namespace neuronmem::interp
