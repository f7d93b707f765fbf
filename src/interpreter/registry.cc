// The op registry: one table built on first use from each family's registration function; each entry is an
// op's compile function and its traits (kernel.h, OpTrait: element-wise, evaluable at compile time,
// batchable), which the family states where it registers the op.
//
// A new op family is one translation unit with a Register...Ops function, declared in kernel.h and called
// here. src/interpreter/chlo_special.cc (the CHLO special functions: lgamma, digamma, erf_inv, bessel_i1e,
// ...) is picked up by meson.build when the file exists; it defines RegisterChloSpecialOps.
#include "interpreter/kernel.h"
#include "interpreter/quant.h"

namespace neuronmem::interp {

const OpTable& OpRegistry() {
  static const auto* registry = [] {
    auto* r = new OpTable();
    RegisterElementwiseOps(r);
    RegisterShapeOps(r);
    RegisterControlOps(r);
    RegisterManualComputationOps(r);
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
