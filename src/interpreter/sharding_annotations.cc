// The custom calls that only annotate a value for the SPMD partitioner: what XLA's Shardy round trip and GSPMD leave
// in exported modules (xla/service/spmd/shardy/constants.h). On the software NeuronCore they pass through at
// compile: each result is its operand (no kernel), or, for xla.sdy.ShardingGroup, nothing at all. A
// GlobalToLocalShape that splits values, the call of @xla.sdy.manual_computation_body that reads them and the
// LocalToGlobalShape that assembles its results are Shardy's exported manual computation: they run as one
// (CompileShardyRoundTrip, manual_computation.cc). Any other target that changes a value's shape
// (SPMDFullToShardShape and its inverse, a GlobalToLocalShape whose values reach other ops) cannot be an identity:
// UNIMPLEMENTED naming both types. A target registered in the program's
// CustomCallRegistry under one of these names runs instead (CompileCustomCall looks there first).
#include <string>

#include "interpreter/quant.h"

namespace neuronmem::interp {

bool IsShardingAnnotationTarget(std::string_view target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape" ||
         target == "xla.sdy.FuncResultSharding" || target == "xla.sdy.GlobalToLocalShape" ||
         target == "xla.sdy.LocalToGlobalShape" || target == "xla.sdy.ShardingGroup" ||
         target == "xla.sdy.PropagationBarrier";
}

Status CompileShardingAnnotation(CompileCtx& cx, std::string_view target, std::unique_ptr<Kernel>* k) {
  if (target == "xla.sdy.ShardingGroup") {  // ties values' shardings together; returns nothing
    if (cx.num_outputs() != 0)
      return cx.Invalid("@xla.sdy.ShardingGroup returns no values, found %zu results", cx.num_outputs());
    return Ok();
  }
  Status round_trip;  // a LocalToGlobalShape of a replicated result does not change its type: ask either end
  if ((target == "xla.sdy.GlobalToLocalShape" || target == "xla.sdy.LocalToGlobalShape") &&
      CompileShardyRoundTrip(cx, k, &round_trip))
    return round_trip;
  if (cx.num_inputs() != cx.num_outputs())
    return cx.Invalid("@%.*s has %zu operands and %zu results; an annotation returns each operand",
                      static_cast<int>(target.size()), target.data(), cx.num_inputs(), cx.num_outputs());
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    const Slot &in = cx.in_slot(i), &out = cx.out_slot(i);
    if (!SameValueType(in, out)) {
      const std::string a = stablehlo::TypeToString(cx.op().operand_types.size() == cx.num_inputs()
                                                        ? cx.op().operand_types[i]
                                                        : stablehlo::Type()),
                        b = stablehlo::TypeToString(cx.op().result_types.size() == cx.num_outputs()
                                                        ? cx.op().result_types[i]
                                                        : stablehlo::Type());
      return cx.Unsupported(
          "@%.*s changes value %zu from %s to %s (a manual axis splits it over several devices), and is not one "
          "end of a manual computation (@xla.sdy.GlobalToLocalShape whose results only a call of "
          "@xla.sdy.manual_computation_body reads, whose results only @xla.sdy.LocalToGlobalShape reads)",
          static_cast<int>(target.size()), target.data(), i, a.c_str(), b.c_str());
    }
    cx.AliasOutput(i, cx.in(i));
  }
  return Ok();
}

}  // namespace neuronmem::interp
