// The shape_assertion custom call that jax.export puts in shape-polymorphic modules
// (`stablehlo.custom_call @shape_assertion(%ok, %dim...) {error_message = "... {0} ...", has_side_effect = true}`):
// when the i1 predicate is false the run fails with INVALID_ARGUMENT, the op's location and the error message with
// each `{k}` replaced by the value of operand k + 1 (a 0-d integer: the dimension a symbolic variable took).
#include <string>

#include "interpreter/kernel.h"

namespace neuronmem::interp {
namespace {

class ShapeAssertionKernel final : public Kernel {
 public:
  ShapeAssertionKernel(std::string message, std::vector<uint32_t> values, std::vector<ElementType> types)
      : message_(std::move(message)), values_(std::move(values)), types_(std::move(types)) {}
  Status Run(Frame& f) const override {
    if (*Ptr<const bool>(f, pred_)) return Status();
    std::string text;
    for (size_t i = 0; i < message_.size(); ++i) {
      size_t close = message_.find('}', i);
      if (message_[i] == '{' && close != std::string::npos && close > i + 1 &&
          message_.find_first_not_of("0123456789", i + 1) == close) {
        const size_t k = std::stoul(message_.substr(i + 1, close - i - 1));
        if (k < values_.size()) {
          text += FormatElement(types_[k], f.slots[values_[k]], 0);
          i = close;
          continue;
        }
      }
      text += message_[i];
    }
    return InvalidArgument("%s: '%.*s' @shape_assertion: %s", FormatLocation(f.state->filename, *op).c_str(),
                           static_cast<int>(op->name.size()), op->name.data(), text.c_str());
  }
  uint32_t pred_ = 0;

 private:
  std::string message_;
  std::vector<uint32_t> values_;
  std::vector<ElementType> types_;
};

}  // namespace

Status CompileShapeAssertion(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() < 1 || cx.num_outputs() != 0)
    return cx.Invalid("@shape_assertion takes a predicate and the values its message names, and returns nothing");
  const Slot& p = cx.in_slot(0);
  if (p.type != ElementType::kPred || p.count != 1)
    return cx.Invalid("@shape_assertion's first operand must be a tensor<i1>");
  const stablehlo::Attribute* m = cx.Attr("error_message");
  if (!m || m->kind != stablehlo::Attribute::Kind::kString)
    return cx.Invalid("@shape_assertion needs error_message = \"...\"");
  std::vector<uint32_t> values;
  std::vector<ElementType> types;
  for (size_t i = 1; i < cx.num_inputs(); ++i) {
    const Slot& v = cx.in_slot(i);
    if (v.count != 1 || !IsInteger(v.type))
      return cx.Invalid("@shape_assertion operand %zu must be a 0-d integer (a dimension's value)", i);
    values.push_back(cx.in(i));
    types.push_back(v.type);
  }
  auto kernel = std::make_unique<ShapeAssertionKernel>(std::string(m->str), std::move(values), std::move(types));
  kernel->pred_ = cx.in(0);
  *k = std::move(kernel);
  return Ok();
}

}  // namespace neuronmem::interp
