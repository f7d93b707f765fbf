// Attribute values and dictionaries: strings, numbers, booleans, unit, arrays, dictionaries,
// `array<i64: ...>`, symbols, types, `dense<...>`, `#dialect.attr<k = v, ...>`, enum keywords (`LT`,
// `#stablehlo<comparison_direction LT>`), and anything else kept opaque with its source text.
#include <cerrno>
#include <cstdlib>
#include <string>

#include "stablehlo/parser_impl.h"

namespace neuronmem::stablehlo::parse {

Attribute Parser::ParseAttribute(int depth) {
  const Token t = lex_.Peek();
  CheckDepth(depth, t.loc);
  Attribute a;
  a.loc = t.loc;
  const bool ident = t.kind == Tok::kIdent;
  if (t.kind == Tok::kString) {
    lex_.Next();
    a.kind = Attribute::Kind::kString;
    a.str = Unquote(t, arena_);
    if (Accept(":")) a.type = ParseType(depth + 1);
  } else if (t.kind == Tok::kNumber) {
    ParseNumberAttribute(t, &a, depth);
  } else if (ident && (t.text == "true" || t.text == "false")) {
    lex_.Next();
    a.kind = Attribute::Kind::kBool;
    a.b = t.text == "true";
  } else if (ident && (t.text == "dense" || t.text == "dense_resource" || t.text == "sparse")) {
    ParseDenseAttribute(t, &a, depth);
  } else if (ident && t.text == "array") {
    ParseDenseArrayAttribute(&a);
  } else if (IsPunct(t, "[")) {
    ParseListAttribute(&a, depth);
  } else if (IsPunct(t, "{")) {
    a.kind = Attribute::Kind::kDict;
    a.dict = ParseAttrDict(depth + 1);
  } else if (t.kind == Tok::kSymbol) {
    lex_.Next();
    a.kind = Attribute::Kind::kSymbol;
    a.str = SymbolName(t, arena_);
    while (Accept("::")) {
    }
  } else if (t.kind == Tok::kHash) {
    ParseDialectAttribute(&a, depth);
    if (!a.text.empty()) return a;  // an alias's value, with the definition's text and location
  } else if (IsPunct(t, "<")) {     // dialect attribute syntax without a name, Shardy's <@mesh, [{"a"}, {}]>
    RawAngle(lex_.Next());
    a.kind = Attribute::Kind::kOpaque;
  } else if (ident && t.text == "loc") {
    SkipLocation(depth);
    a.kind = Attribute::Kind::kOpaque;
  } else if (ident && t.text == "unit") {
    lex_.Next();
    a.kind = Attribute::Kind::kUnit;
  } else if (ident || t.kind == Tok::kBang || IsPunct(t, "(")) {
    ParseTypeOrKeywordAttribute(t, &a, depth);
  } else {
    Fail(t.loc, "expected an attribute value, found " + Describe(t));
  }
  // The source text is kept for every attribute (a view: free); strings, unit and symbols are
  // reported by their decoded value instead.
  if (a.kind != Attribute::Kind::kString && a.kind != Attribute::Kind::kUnit && a.kind != Attribute::Kind::kSymbol) {
    a.text = TextFrom(t);
  }
  if (a.kind == Attribute::Kind::kOpaque) a.str = a.text;
  return a;
}

// `12`, `-3 : i32`, `1.5e-3 : f32`, `0x7FC00000` (integers up to 64 bits, signed or not).
void Parser::ParseNumberAttribute(const Token& t, Attribute* a, int depth) {
  lex_.Next();
  const std::string num(t.text);
  const bool hex = num.size() > 2 && (num[1] == 'x' || num[1] == 'X' || num[2] == 'x');
  if (!hex && num.find_first_of(".eE") != std::string::npos) {
    a->kind = Attribute::Kind::kFloat;
    a->f = std::strtod(num.c_str(), nullptr);
  } else {
    a->kind = Attribute::Kind::kInt;
    errno = 0;
    a->i = std::strtoll(num.c_str(), nullptr, 0);
    if (errno == ERANGE) {
      errno = 0;
      a->i = static_cast<int64_t>(std::strtoull(num.c_str(), nullptr, 0));
      if (errno == ERANGE) Fail(t.loc, "integer literal " + num + " does not fit in 64 bits");
    }
  }
  if (Accept(":")) a->type = ParseType(depth + 1);
}

// `dense<...> : type` (decoded to bytes), `dense_resource<...>` and `sparse<...>` (kept as text).
void Parser::ParseDenseAttribute(const Token& t, Attribute* a, int depth) {
  lex_.Next();
  const Token open = Expect("<", "after 'dense'");
  const std::string_view body = RawAngle(open);
  a->kind = Attribute::Kind::kDense;
  if (!Accept(":")) return;
  a->type = ParseType(depth + 1);
  if (t.text != "dense") return;
  if (Status s = DecodeDense(body, a->type, &scratch_->dense, &a->splat)) Fail(open.loc, s->message);
  a->dense = arena_->Copy(scratch_->dense);
}

// `array<i64: 1, 2>`, `array<f32: 1.5>`, `array<i1: true, false>`, `array<i64>`.
void Parser::ParseDenseArrayAttribute(Attribute* a) {
  lex_.Next();
  const Token open = Expect("<", "after 'array'");
  const std::string_view body = RawAngle(open);
  a->kind = Attribute::Kind::kArray;
  const size_t colon = body.find(':');
  if (colon == std::string_view::npos) return;
  auto elements = scratch_->attrs.Get();
  std::string_view rest = body.substr(colon + 1);
  std::string item;  // NUL-terminated copy for strtoll/strtod
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view piece = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (piece.empty()) continue;
    item.assign(piece);
    Attribute e;
    if (item == "true" || item == "false") {
      e.kind = Attribute::Kind::kBool;
      e.b = item == "true";
    } else if (item.find_first_of(".eE") != std::string::npos) {
      e.kind = Attribute::Kind::kFloat;
      e.f = std::strtod(item.c_str(), nullptr);
    } else {
      e.kind = Attribute::Kind::kInt;
      e.i = std::strtoll(item.c_str(), nullptr, 10);
    }
    elements->push_back(e);
  }
  a->array = arena_->Copy(*elements);
}

// `[a, b, ...]`
void Parser::ParseListAttribute(Attribute* a, int depth) {
  lex_.Next();
  a->kind = Attribute::Kind::kArray;
  if (Accept("]")) return;
  auto elements = scratch_->attrs.Get();
  do {
    elements->push_back(ParseAttribute(depth + 1));
  } while (Accept(","));
  Expect("]", "to close an array attribute");
  a->array = arena_->Copy(*elements);
}

// `#alias` (its value when defined) or `#dialect.name<...>`: an enum when the body is one keyword
// (`#stablehlo<comparison_direction LT>`, `#stablehlo.transpose<TRANSPOSE>`), else opaque, with the key/value
// pairs when the body has that shape (and a convolution's dimension numbers decoded).
void Parser::ParseDialectAttribute(Attribute* a, int depth) {
  const Token t = lex_.Next();
  a->kind = Attribute::Kind::kOpaque;
  if (PeekPunct("<")) {
    const std::string_view body = RawAngle(lex_.Next());
    std::string_view word;
    if (t.text == "#stablehlo.conv") {
      a->dict = ParseConvBody(body, depth + 1);
    } else if (EnumBody(body, &word)) {
      a->kind = Attribute::Kind::kEnum;
      a->str = word;
    } else {
      a->dict = ParseKeyValues(body, depth + 1);
    }
    return;
  }
  const auto alias = scratch_->attribute_aliases.find(t.text);
  if (alias != scratch_->attribute_aliases.end()) *a = alias->second;
}

// A type used as an attribute (`function_type = (...) -> ...`, `i32`), an enum keyword (`THREE_FRY`), or a
// keyword with a body (`affine_map<...>`, kept opaque).
void Parser::ParseTypeOrKeywordAttribute(const Token& t, Attribute* a, int depth) {
  const bool type_word = t.kind != Tok::kIdent || ParseElementTypeName(t.text) != ElementType::kInvalid ||
                         t.text == "tensor" || t.text == "tuple" || t.text == "complex" || t.text == "none" ||
                         t.text == "memref" || t.text == "vector";
  if (type_word) {
    a->kind = Attribute::Kind::kType;
    a->type = ParseType(depth + 1);
    return;
  }
  lex_.Next();
  a->kind = Attribute::Kind::kEnum;
  a->str = t.text;
  if (PeekPunct("<")) {
    RawAngle(lex_.Next());
    a->kind = Attribute::Kind::kOpaque;
  }
}

// Parses "k = v, k2 = v2" inside a dialect attribute; empty if the body has another shape. The body is a
// view into the arena's source, so the values' views stay valid.
NamedAttrs Parser::ParseKeyValues(std::string_view body, int depth) {
  if (body.find('=') == std::string_view::npos) return {};
  Parser sub(body, arena_, scratch_);
  auto out = scratch_->named.Get();
  try {
    for (;;) {
      const Token k = sub.lex_.Next();
      if (k.kind != Tok::kIdent) return {};
      sub.Expect("=", "in a dialect attribute");
      Attribute v = sub.ParseAttribute(depth + 1);
      out->emplace_back(k.text, v);
      if (!sub.Accept(",")) break;
    }
    if (sub.lex_.Peek().kind != Tok::kEof) return {};
  } catch (const ParseError&) {
    return {};  // not key/value shaped: the attribute stays opaque
  }
  return arena_->Copy(*out);
}

// Appends the entries of "{k = v, "quoted" = v, unit_key, ...}" to `out`.
void Parser::ParseAttrDictInto(int depth, std::vector<NamedAttr>* out) {
  const Token open = Expect("{", "to open an attribute dictionary");
  CheckDepth(depth, open.loc);
  if (Accept("}")) return;
  for (;;) {
    const Token key = lex_.Next();
    std::string_view name;
    if (key.kind == Tok::kIdent) {
      name = key.text;
    } else if (key.kind == Tok::kString) {
      name = Unquote(key, arena_);
    } else {
      Fail(key.loc,
           "expected an attribute name in the dictionary opened at " + At(open.loc) + ", found " + Describe(key));
    }
    out->emplace_back(name, Accept("=") ? ParseAttribute(depth + 1) : Attribute());  // no value: unit
    if (Accept(",")) continue;
    const Token& t = lex_.Peek();
    if (IsPunct(t, "}")) {
      lex_.Next();
      return;
    }
    Fail(t.loc, "expected ',' or '}' in the attribute dictionary opened at " + At(open.loc) + ", found " + Describe(t));
  }
}

NamedAttrs Parser::ParseAttrDict(int depth) {
  auto attrs = scratch_->named.Get();
  ParseAttrDictInto(depth, &*attrs);
  return arena_->Copy(*attrs);
}

}  // namespace neuronmem::stablehlo::parse
