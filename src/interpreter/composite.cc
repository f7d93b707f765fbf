// stablehlo.composite (StableHLO spec, "composite"): an op made of other ops, whose semantics are its
// `decomposition` function. It runs as a call of that function, unless the program's custom-call registry has
// a target of the composite's `name` (the executor registers a client's kernel of that name, the NKI path):
// then that target takes the op over, called as a custom call with the composite's operands and results (the
// op, and so its composite_attributes and version, is in CustomCallContext::op).
//
// Both forms are read: generic `"stablehlo.composite"(...) {name = "ns.op", decomposition = @f, ...}` and
// pretty `stablehlo.composite "ns.op" %a, %b {decomposition = @f, ...} : (...) -> ...`. The spec's
// constraints are checked whichever runs it: (C1) the name is namespaced, (C2) the decomposition is a function
// of the module, (C3, C4) its parameter and result types are the composite's operand and result types.
// `regions` are ignored, as the spec says of an inlined decomposition.
#include <string>
#include <vector>

#include "interpreter/program.h"

namespace neuronmem::interp {
namespace {

// The composite's name: the `name` attribute (generic form) or the leading string (pretty form).
std::string_view CompositeName(const CompileCtx& cx) {
  if (const stablehlo::Attribute* a = cx.Attr("name"))
    return a->kind == stablehlo::Attribute::Kind::kString ? a->str : "";
  for (const auto& [key, a] : cx.op().attributes)
    if (key.empty() && a.kind == stablehlo::Attribute::Kind::kString) return a.str;
  return {};
}

std::string TypeList(stablehlo::Span<stablehlo::Type> types) {
  std::string s = "(";
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + stablehlo::TypeToString(types[i]);
  return s + ")";
}

// (C3, C4): the decomposition's signature against the composite's operand and result types, as written.
Status CheckSignature(const CompileCtx& cx, std::string_view name, const stablehlo::Function& f) {
  const stablehlo::Operation& op = cx.op();
  std::vector<stablehlo::Type> params;
  for (const stablehlo::Argument& a : f.args) params.push_back(a.type);
  const stablehlo::Span<stablehlo::Type> param_span(params.data(), params.size());
  const std::string want_in = TypeList(op.operand_types), want_out = TypeList(op.result_types);
  const std::string have_in = TypeList(param_span), have_out = TypeList(f.result_types);
  if (want_in != have_in || want_out != have_out)
    return cx.Invalid(
        "composite \"%.*s\": its decomposition @%.*s has the signature %s -> %s, but the composite "
        "takes %s -> %s",
        static_cast<int>(name.size()), name.data(), static_cast<int>(f.name.size()), f.name.data(), have_in.c_str(),
        have_out.c_str(), want_in.c_str(), want_out.c_str());
  return Ok();
}

Status CompileComposite(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  const std::string_view name = CompositeName(cx);
  if (name.empty()) return cx.Invalid("missing the composite's name (a string such as \"my_namespace.my_op\")");
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size())
    return cx.Invalid("composite name \"%.*s\" is not namespaced (\"namespace.op\")", static_cast<int>(name.size()),
                      name.data());
  const stablehlo::Attribute* d = cx.Attr("decomposition");
  if (!d || d->str.empty())
    return cx.Invalid("composite \"%.*s\" has no decomposition (decomposition = @function)",
                      static_cast<int>(name.size()), name.data());
  const std::string_view callee = d->str;
  const stablehlo::Function* f = cx.FindFunction(callee);
  if (!f)
    return cx.Invalid("composite \"%.*s\": its decomposition @%.*s is not a function of the module",
                      static_cast<int>(name.size()), name.data(), static_cast<int>(callee.size()), callee.data());
  NEURONMEM_RETURN_IF_ERROR(CheckSignature(cx, name, *f));
  if (const CustomCallFn* target = cx.custom_calls()->Find(name)) {
    *k = MakeCustomCallKernel(cx, std::string(name), target);
    return Ok();
  }
  const Function* fn = nullptr;
  NEURONMEM_RETURN_IF_ERROR(cx.GetFunction(callee, &fn));
  std::vector<uint32_t> args(cx.inputs()), results;
  for (size_t i = 0; i < cx.num_outputs(); ++i) results.push_back(cx.out(i));
  if (args.size() != fn->body.arg_slots.size() || results.size() != fn->body.result_slots.size())
    return cx.Invalid(
        "composite \"%.*s\" passes %zu values and takes %zu, its decomposition @%.*s takes %zu and "
        "returns %zu",
        static_cast<int>(name.size()), name.data(), args.size(), results.size(), static_cast<int>(callee.size()),
        callee.data(), fn->body.arg_slots.size(), fn->body.result_slots.size());
  std::vector<bool> crosses;
  for (size_t i = 0; i < results.size(); ++i)
    crosses.push_back(CrossesSpaces(fn->slots[fn->body.result_slots[i]], cx.slot(results[i])));
  cx.AddCallee(fn);
  *k = MakeCallKernel(fn, std::move(args), std::move(results), std::move(crosses));
  return Ok();
}

}  // namespace

void RegisterCompositeOps(OpTable* r) {
  (*r)["stablehlo.composite"] = CompileComposite;
}

}  // namespace neuronmem::interp
