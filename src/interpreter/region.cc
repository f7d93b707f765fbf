// ScalarRegion: see region.h.
#include "interpreter/region.h"

#include <numeric>
#include <string>

namespace neuronmem::interp {
namespace {

bool IsScalarOf(const Slot& s, const ScalarType& t) { return s.dims.empty() && ScalarType::Of(s) == t; }

// The binary op of a block `^bb(%a, %b): %r = op %a, %b (or %b, %a); return %r`, else nullptr.
const stablehlo::Operation* SingleBinaryOp(const stablehlo::Block& b, bool* swapped) {
  if (b.args.size() != 2 || b.ops.size() != 2) return nullptr;
  const stablehlo::Operation& op = b.ops[0];
  const stablehlo::Operation& ret = b.ops[1];
  if (op.operands.size() != 2 || op.num_results > 1 || !op.attributes.empty() || !op.regions.empty()) return nullptr;
  if (ret.name != "stablehlo.return" && ret.name != "func.return") return nullptr;
  if (ret.operands.size() != 1 || ret.operands[0].name != op.result_name || ret.operands[0].index != 0) return nullptr;
  const std::string_view a = b.args[0].name, c = b.args[1].name;
  const auto& x = op.operands[0];
  const auto& y = op.operands[1];
  if (x.index != 0 || y.index != 0) return nullptr;
  if (x.name == a && y.name == c) {
    *swapped = false;
  } else if (x.name == c && y.name == a) {
    *swapped = true;
  } else {
    return nullptr;
  }
  return &op;
}

bool AllScalarTypesAre(const stablehlo::Span<stablehlo::Argument>& args, ElementType t) {
  for (const auto& a : args)
    if (a.type.element != t || !a.type.dims.empty() || a.type.quant || a.type.kind != stablehlo::Type::Kind::kTensor)
      return false;
  return true;
}

}  // namespace

std::string ScalarTypeName(const ScalarType& t) {
  std::string name(ElementTypeName(t.type));
  return t.quant ? "!quant.uniform<" + name + ":" + std::string(ElementTypeName(t.quant->expressed)) + ", ...>" : name;
}

// The spec's is_promotable(x, y): y holds every value of x (same class, at least as wide; quantized types
// with the same expressed type and parameters and a promotable storage type).
bool IsPromotable(const ScalarType& x, const ScalarType& y) {
  if ((x.quant == nullptr) != (y.quant == nullptr)) return false;
  if (x.quant) {
    const stablehlo::QuantType& a = *x.quant;
    const stablehlo::QuantType& b = *y.quant;
    if (a.expressed != b.expressed || a.axis != b.axis || a.scales.size() != b.scales.size() ||
        a.zero_points.size() != b.zero_points.size())
      return false;
    for (size_t i = 0; i < a.scales.size(); ++i)
      if (a.scales[i] != b.scales[i]) return false;
    for (size_t i = 0; i < a.zero_points.size(); ++i)
      if (a.zero_points[i] != b.zero_points[i]) return false;
  }
  return ElementInfo(x.type).cls == ElementInfo(y.type).cls && BitWidth(x.type) <= BitWidth(y.type);
}

Status ScalarRegion::Compile(CompileCtx& cx, size_t index, const std::vector<ScalarType>& arg_types,
                             const std::vector<ScalarType>& result_types, std::vector<size_t> order) {
  if (index >= cx.op().regions.size()) return cx.Invalid("expected a region");
  num_results_ = result_types.size();
  if (order.empty()) {
    order.resize(arg_types.size());
    std::iota(order.begin(), order.end(), size_t{0});
  }
  // One binary element-wise op on the two arguments: a direct call.
  const auto& region = cx.op().regions[index];
  if (arg_types.size() == 2 && result_types.size() == 1 && region.blocks.size() == 1 && arg_types[0] == arg_types[1] &&
      arg_types[0] == result_types[0] && !arg_types[0].quant &&
      AllScalarTypesAre(region.blocks[0].args, arg_types[0].type)) {
    bool swapped = false;
    if (const stablehlo::Operation* op = SingleBinaryOp(region.blocks[0], &swapped)) {
      const ScalarFns fns = FindScalarFns(op->name, arg_types[0].type);
      if (fns.binary) {
        fast_ = fns.binary;
        fold_ = fns.fold;
        // Canonical argument 0 binds to block argument order[0]; the op takes (block 0, block 1) or swapped.
        swap_ = swapped != (order[0] != 0);
        fast_out_ = cx.AddScratch(arg_types[0].type, {});
        return Ok();
      }
    }
  }
  NEURONMEM_RETURN_IF_ERROR(cx.CompileRegion(index, &body_));
  if (body_->arg_slots.size() != arg_types.size())
    return cx.Invalid("the region takes %zu arguments, expected %zu", body_->arg_slots.size(), arg_types.size());
  if (body_->result_slots.size() != result_types.size())
    return cx.Invalid("the region returns %zu values, expected %zu", body_->result_slots.size(), result_types.size());
  arg_slots_.resize(arg_types.size());
  for (size_t c = 0; c < arg_types.size(); ++c) {
    if (order[c] >= body_->arg_slots.size()) return cx.Invalid("bad region argument order");
    arg_slots_[c] = body_->arg_slots[order[c]];
    if (!IsScalarOf(cx.slot(arg_slots_[c]), arg_types[c]))
      return cx.Invalid("region argument %zu must be a tensor<%s>", order[c], ScalarTypeName(arg_types[c]).c_str());
  }
  for (size_t i = 0; i < result_types.size(); ++i)
    if (!IsScalarOf(cx.slot(body_->result_slots[i]), result_types[i]))
      return cx.Invalid("region result %zu must be a tensor<%s>", i, ScalarTypeName(result_types[i]).c_str());
  return Ok();
}

}  // namespace neuronmem::interp
