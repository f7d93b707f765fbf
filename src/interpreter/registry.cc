// The op registry: one table built on first use from each family's registration function.
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
    return r;
  }();
  return *registry;
}

}  // namespace neuronmem::interp
