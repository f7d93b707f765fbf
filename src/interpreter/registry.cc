// The op registry: one table built on first use from each family's registration function.
//
// A new op family is one translation unit with a Register...Ops function, declared in kernel.h and called
// here. src/interpreter/chlo_special.cc (the CHLO special functions: lgamma, digamma, erf_inv, bessel_i1e,
// ...) is picked up by meson.build when the file exists; it defines RegisterChloSpecialOps.
#include "interpreter/kernel.h"
#include "interpreter/quant.h"

namespace neuronmem::interp {

const std::unordered_map<std::string_view, OpCompileFn>& OpRegistry() {
  static const auto* registry = [] {
    auto* r = new std::unordered_map<std::string_view, OpCompileFn>();
    RegisterElementwiseOps(r);
    RegisterShapeOps(r);
    RegisterControlOps(r);
    RegisterCheckOps(r);
    RegisterQuantOps(r);
    RegisterLinalgOps(r);
    RegisterLinalgSolverOps(r);
    RegisterReduceOps(r);
    RegisterIndexOps(r);
    RegisterRngOps(r);
    RegisterCollectiveOps(r);
    RegisterReferenceOps(r);
    RegisterCompositeOps(r);
    RegisterBatchNormOps(r);
    RegisterRaggedDotOps(r);
    RegisterChloFloatClassOps(r);
#ifdef NEURONMEM_INTERP_CHLO_SPECIAL
    RegisterChloSpecialOps(r);
#endif
    return r;
  }();
  return *registry;
}

}  // namespace neuronmem::interp
