// Types: `tensor<...>`, `tuple<...>`, `complex<...>`, function types `(T, ...) -> T | (T, ...)`, element
// types, `!dialect.type<...>` (tokens, quantized types, others kept with their text).
#include <charconv>
#include <string>

#include "stablehlo/parser_impl.h"
#include "stablehlo/type_text.h"

namespace neuronmem::stablehlo::parse {

namespace {

// A whole number token as T (int64_t or double); false for anything else (inf, nan, hex, out of range).
template <typename T>
bool NumberToken(const Token& t, T* out) {
  if (t.kind != Tok::kNumber) return false;
  const char* begin = t.text.data();
  const char* end = begin + t.text.size();
  if (*begin == '+') ++begin;  // from_chars takes no '+'
  const auto r = std::from_chars(begin, end, *out);
  return r.ec == std::errc() && r.ptr == end;
}

}  // namespace

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
        const size_t quant_at = ParseTensorBody(body, t.loc, &type, arena_);
        if (quant_at != std::string_view::npos) {
          type.quant = ParseQuantInTensor(open, body, quant_at, depth);
          type.element = type.quant->storage;
        }
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
    if (t.text.rfind("!quant.", 0) == 0) {
      type.kind = Type::Kind::kScalar;
      type.quant = ParseQuantType(t, depth);
      type.element = type.quant->storage;
    } else {
      type.kind = t.text.find("token") != std::string_view::npos ? Type::Kind::kToken : Type::Kind::kOther;
      if (PeekPunct("<")) RawAngle(lex_.Next());
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

const QuantType* Parser::ParseQuantType(const Token& bang, int depth) {
  CheckDepth(depth, bang.loc);
  auto bad = [](const Token& at, const std::string& why) -> const QuantType* {
    Fail(at.loc, "malformed quantized type: " + why + (at.kind == Tok::kEof ? "" : ", at " + Describe(at)));
  };
  if (bang.text != "!quant.uniform") {
    Fail(bang.loc, "unsupported quantized type '" + std::string(bang.text) + "' (only !quant.uniform is supported)");
  }
  if (!PeekPunct("<")) return bad(lex_.Peek(), "expected '<' after !quant.uniform");
  lex_.Next();
  QuantType q;
  // The storage type; the quant dialect spells unsigned types "u8" where the builtin name is "ui8".
  const Token storage = lex_.Next();
  if (storage.kind == Tok::kIdent) {
    const std::string_view name = storage.text;
    q.storage = name.size() > 1 && name[0] == 'u' && name[1] != 'i'
                    ? ParseElementTypeName("ui" + std::string(name.substr(1)))
                    : ParseElementTypeName(name);
  }
  if (!IsInteger(q.storage) && !IsFloat(q.storage)) return bad(storage, "expected a storage type");
  const uint32_t bits = neuronmem::ElementInfo(q.storage).bits;
  if (IsSignedInt(q.storage)) {
    q.storage_min = bits >= 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
    q.storage_max = bits >= 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
  } else if (IsUnsignedInt(q.storage)) {
    q.storage_min = 0;
    q.storage_max = bits >= 63 ? INT64_MAX : (int64_t{1} << bits) - 1;
  }
  auto integer = [&](const char* what) {
    const Token n = lex_.Next();
    int64_t v = 0;
    if (!NumberToken(n, &v)) bad(n, std::string("expected an integer ") + what);
    return v;
  };
  if (Accept("<")) {  // the storage range
    const Token at = lex_.Peek();
    q.storage_min = integer("(the storage minimum)");
    if (!Accept(":")) return bad(lex_.Peek(), "storage range needs min:max");
    q.storage_max = integer("(the storage maximum)");
    if (!Accept(">")) return bad(lex_.Peek(), "expected '>' to close the storage range");
    if (q.storage_min > q.storage_max) return bad(at, "storage range min > max");
  }
  if (!Accept(":")) return bad(lex_.Peek(), "expected ':' after the storage type");
  const Token expressed = lex_.Next();
  if (expressed.kind == Tok::kIdent) q.expressed = ParseElementTypeName(expressed.text);
  if (!IsFloat(q.expressed)) return bad(expressed, "the expressed type is not a float type");
  if (Accept(":")) {  // the quantized dimension
    if (PeekPunct("{")) return bad(lex_.Peek(), "sub-channel (block) quantization is not supported");
    const Token at = lex_.Peek();
    const int64_t axis = integer("(the quantized dimension)");
    if (axis < 0 || axis > 64) return bad(at, "quantized dimension out of range");
    q.axis = static_cast<int32_t>(axis);
  }
  if (!Accept(",")) return bad(lex_.Peek(), "expected ',' before the scale");
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
  auto scale = [&] {  // scale[:zero_point]
    const Token n = lex_.Next();
    double d = 0;
    if (!NumberToken(n, &d)) bad(n, "expected a number (the scale)");
    scales.push_back(d);
    zero_points.push_back(Accept(":") ? integer("(the zero point)") : 0);
  };
  if (q.axis >= 0) {
    if (!Accept("{")) return bad(lex_.Peek(), "per-axis scales need {...}");
    do {
      scale();
    } while (Accept(","));
    if (!Accept("}")) return bad(lex_.Peek(), "expected '}' after the per-axis scales");
  } else {
    if (PeekPunct("{")) return bad(lex_.Peek(), "per-tensor scale in {...} without a quantized dimension");
    scale();
  }
  if (!Accept(">")) return bad(lex_.Peek(), "expected '>' to close !quant.uniform");
  q.scales = arena_->Copy(scales);
  q.zero_points = arena_->Copy(zero_points);
  auto* out = static_cast<QuantType*>(arena_->Allocate(sizeof(QuantType), alignof(QuantType)));
  return new (out) QuantType(q);
}

const QuantType* Parser::ParseQuantInTensor(const Token& open, std::string_view body, size_t at, int depth) {
  // A lexer over the text up to the end of the body (where the tensor's '>' is), started at the '<' so its
  // locations are the source's, then moved to the quantized type. The parser's lexer comes back however
  // this ends (a ParseError may be recovered from by skipping the op).
  struct Restore {
    Lexer* lex;
    Lexer saved;
    ~Restore() { *lex = saved; }
  } restore{&lex_, lex_};
  const size_t begin = static_cast<size_t>(body.data() - src_.data());
  lex_ = Lexer(src_.substr(0, begin + body.size()), open.offset, open.loc);
  lex_.Reset(begin + at);
  const Token bang = lex_.Next();
  const QuantType* q = ParseQuantType(bang, depth + 1);
  const Token& after = lex_.Peek();
  if (after.kind != Tok::kEof && !IsPunct(after, ",")) {
    Fail(after.loc, "unexpected " + Describe(after) + " after the quantized type in tensor<...>");
  }
  return q;
}

}  // namespace neuronmem::stablehlo::parse
