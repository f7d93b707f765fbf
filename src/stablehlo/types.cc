// Types: `tensor<...>`, `tuple<...>`, `complex<...>`, function types `(T, ...) -> T | (T, ...)`, element
// types, `!dialect.type<...>` (tokens, quantized types, others kept with their text).
#include <string>

#include "stablehlo/parser_impl.h"
#include "stablehlo/type_text.h"

namespace neuronmem::stablehlo::parse {

// Appends `T, T, ...` up to and including `close` (which may come at once: an empty list).
void Parser::ParseTypeList(std::vector<Type>* out, const char* close, const char* context, int depth) {
  if (Accept(close)) return;
  do {
    out->push_back(ParseType(depth + 1));
  } while (Accept(","));
  Expect(close, context);
}

Type Parser::ParseType(int depth) {
  const Token t = lex_.Next();
  CheckDepth(depth, t.loc);
  Type type;
  std::string_view tensor_body;  // set for a tensor type: its interning key
  if (t.kind == Tok::kIdent &&
      (t.text == "tensor" || t.text == "tuple" || t.text == "complex" || t.text == "memref" || t.text == "vector")) {
    const Token open = Expect("<", "after a type name");
    if (t.text == "tuple") {
      type.kind = Type::Kind::kTuple;
      auto elements = scratch_->types.Get();
      ParseTypeList(&*elements, ">", "to close tuple<", depth);
      type.elements = arena_->Copy(*elements);
    } else {
      const std::string_view body = RawAngle(open);
      if (t.text == "tensor") {
        const auto interned = scratch_->tensor_types.find(body);
        if (interned != scratch_->tensor_types.end()) return interned->second;
        ParseTensorBody(body, t.loc, &type, arena_);
        tensor_body = body;
      } else if (t.text == "complex") {
        type.kind = Type::Kind::kScalar;
        type.element = ParseElementTypeName("complex<" + std::string(body) + ">");
      } else {
        type.kind = Type::Kind::kOther;
      }
    }
  } else if (t.kind == Tok::kBang && !PeekPunct("<") && scratch_->type_aliases.count(t.text)) {
    return scratch_->type_aliases[t.text];  // a type alias: its value, with the definition's text
  } else if (t.kind == Tok::kBang) {
    type.kind = t.text.find("token") != std::string_view::npos ? Type::Kind::kToken : Type::Kind::kOther;
    if (PeekPunct("<")) RawAngle(lex_.Next());
    if (t.text.rfind("!quant.", 0) == 0) {
      type.kind = Type::Kind::kScalar;
      type.quant = ParseQuantType(TextFrom(t), t.loc, arena_);
      type.element = type.quant->storage;
    }
  } else if (IsPunct(t, "(")) {
    type.kind = Type::Kind::kFunction;
    auto elements = scratch_->types.Get();
    ParseTypeList(&*elements, ")", "to close a function type's inputs", depth);
    type.num_inputs = elements->size();
    Expect("->", "in a function type");
    if (Accept("(")) {
      ParseTypeList(&*elements, ")", "to close a function type's results", depth);
    } else {
      elements->push_back(ParseType(depth + 1));
    }
    const std::string_view text = TextFrom(t);
    Type& interned = scratch_->function_types[text];
    if (interned.kind == Type::Kind::kFunction) return interned;
    type.elements = arena_->Copy(*elements);
    type.text = text;
    interned = type;
    return type;
  } else if (t.kind == Tok::kIdent) {
    type.kind = Type::Kind::kScalar;
    type.element = ParseElementTypeName(t.text);
    if (type.element == ElementType::kInvalid) {
      if (t.text != "none") Fail(t.loc, "expected a type, found '" + std::string(t.text) + "'");
      type.kind = Type::Kind::kOther;
    }
  } else {
    Fail(t.loc, "expected a type, found " + Describe(t));
  }
  // Tensors and scalars are fully described by element and dims (TypeToString rebuilds their text);
  // other types keep their source text.
  if ((type.kind != Type::Kind::kTensor && type.kind != Type::Kind::kScalar) || type.element == ElementType::kOther ||
      type.element == ElementType::kInvalid || type.quant) {
    type.text = TextFrom(t);
  }
  if (!tensor_body.empty()) scratch_->tensor_types.emplace(tensor_body, type);
  return type;
}

}  // namespace neuronmem::stablehlo::parse
