// The pretty (custom) form of ops. Rather than one grammar per op, the op's *tail* (everything after its
// name) is read generically up to the end of its line at parenthesis depth 0 (attribute dictionaries and
// regions may span lines; a following line that starts with a word without a dot, like `reducer(...)`,
// continues the op), collecting what each token is: operands, the callee symbol, named attributes,
// `{...}` dictionaries or regions, custom syntax kept opaque, and the trailing type signature. That covers
// every op of every dialect.
#include <string>

#include "stablehlo/parser_impl.h"

namespace neuronmem::stablehlo::parse {

void Parser::ParsePrettyTail(Operation* op, OpLists* lists, int depth) {
  PrettyState st(op, lists, scratch_);
  for (;;) {
    const Token& t = lex_.Peek();
    if (st.paren == 0 && (t.kind == Tok::kEof || (t.newline_before && StartsNewOp(t)) || IsPunct(t, "}"))) break;
    if (t.kind == Tok::kEof) Fail(op->loc, "the input ends inside the operands of '" + std::string(op->name) + "'");
    switch (t.kind) {
      case Tok::kValue: PrettyValue(&st, depth); break;
      case Tok::kSymbol: {  // the callee: the first symbol
        const Token s = lex_.Next();
        if (op->callee.empty()) op->callee = SymbolName(s, arena_);
        break;
      }
      case Tok::kIdent: PrettyWord(&st, depth); break;
      case Tok::kHash:
      case Tok::kString:
      case Tok::kNumber:
      case Tok::kBang:  // an unnamed attribute
        lists->attributes->emplace_back("", ParseAttribute(depth + 1));
        break;
      case Tok::kPunct: PrettyPunct(&st, depth); break;
      default:  // successors (^bb1) and other custom syntax
        lex_.Next();
    }
  }
  if (st.paren != 0) Fail(op->loc, "unbalanced '(' in '" + std::string(op->name) + "'");
  FinishPrettyOp(&st);
}

// %x: an operand; inside parentheses also a block argument `%a: type` or a loop init `%iter = %init`.
void Parser::PrettyValue(PrettyState* st, int depth) {
  const Token v = lex_.Next();
  if (PeekPunct(":") && st->paren > 0) {
    lex_.Next();
    Argument arg;
    arg.name = v.text.substr(1);
    arg.loc = v.loc;
    arg.type = ParseType(depth + 1);
    SkipLocation(depth);
    st->pending_args->push_back(arg);
    return;
  }
  if (PeekPunct("=") && st->paren > 0) {  // while(%iter = %init): the init value is the operand
    lex_.Next();
    Argument arg;
    arg.name = v.text.substr(1);
    arg.loc = v.loc;
    st->loop_args->push_back(arg);
    return;
  }
  if (!st->signature_done) st->lists->operands->push_back(MakeRef(v));
}

void Parser::PrettyPunct(PrettyState* st, int depth) {
  const Token& t = lex_.Peek();
  if (IsPunct(t, "{")) {
    PrettyBrace(st, depth);
  } else if (IsPunct(t, "(")) {
    const Location loc = t.loc;
    lex_.Next();
    ++st->paren;
    CheckDepth(depth + st->paren, loc);
  } else if (IsPunct(t, ")")) {
    if (st->paren == 0) Fail(t.loc, "unbalanced ')' in '" + std::string(st->op->name) + "'");
    lex_.Next();
    --st->paren;
  } else if (IsPunct(t, ":") && st->paren == 0) {
    PrettySignature(st, depth);
  } else if (IsPunct(t, "[") || IsPunct(t, "<")) {
    PrettyBracket(st, depth);
  } else {
    lex_.Next();  // '=', ',', '->' and other punctuation of custom syntax
  }
}

// `{`: a region (ops, or after declared block arguments) or an attribute dictionary. The entry arguments
// of a region are those declared before it, or a while loop's `%iter = %init` values (typed by the
// signature, one type per loop value), which every region of the loop receives.
void Parser::PrettyBrace(PrettyState* st, int depth) {
  if (BraceStartsRegion() || !st->pending_args->empty()) {
    if (st->syntax == OpSyntax::kReduce) PairsToCanonical(&*st->pending_args);
    Span<Argument> args = arena_->Copy(*st->pending_args);
    if (args.empty() && !st->loop_args->empty()) {
      if (st->loop_span.empty()) {
        const Span<Type>& types = st->op->operand_types;
        for (size_t i = 0; i < st->loop_args->size() && i < types.size(); ++i) (*st->loop_args)[i].type = types[i];
        st->loop_span = arena_->Copy(*st->loop_args);
      }
      args = st->loop_span;
    }
    st->lists->regions->push_back(ParseRegion(depth + 1, args));
    st->pending_args->clear();
  } else {
    ParseAttrDictInto(depth + 1, &*st->lists->attributes);
  }
}

// The trailing `: signature`: a function type, one type for all operands and results, or one per operand.
void Parser::PrettySignature(PrettyState* st, int depth) {
  lex_.Next();
  ApplyPrettySignature(st, ParseType(depth + 1), depth);
}

// The signature's first type is read: the rest of it, and the op's operand and result types from it.
void Parser::ApplyPrettySignature(PrettyState* st, Type sig, int depth) {
  if (sig.kind != Type::Kind::kFunction && Accept("->")) {
    // "type -> result" or "type -> (results)": a function type whose one input is written without
    // parentheses (chlo.top_k's signature).
    auto elements = scratch_->types.Get();
    elements->push_back(sig);
    if (Accept("(")) {
      ParseTypeList(&*elements, ")", "to close a function type's results", depth);
    } else {
      elements->push_back(ParseType(depth + 1));
    }
    sig = Type();
    sig.kind = Type::Kind::kFunction;
    sig.num_inputs = 1;
    sig.elements = arena_->Copy(*elements);
  }
  if (sig.kind != Type::Kind::kFunction && PeekPunct(",")) {
    // "type, type": one type per operand (compare's short form); select's `pred_type, type` types its two
    // values and its result by the second; a while's are the types of its loop values, and of its results.
    auto types = scratch_->types.Get();
    types->push_back(sig);
    while (Accept(",")) types->push_back(ParseType(depth + 1));
    const std::string_view name = st->op->name;
    if (name == "stablehlo.select" && types->size() == 2 && st->lists->operands->size() == 3) {
      const Type value = types->back();
      types->push_back(value);
      st->op->operand_types = arena_->Copy(*types);
      st->op->result_types = Repeat(value, st->op->num_results);
    } else {
      st->op->operand_types = arena_->Copy(*types);
      st->op->result_types = name == "stablehlo.while" && types->size() == st->op->num_results
                                 ? st->op->operand_types
                                 : Repeat(sig, st->op->num_results);
    }
  } else {
    ApplySignature(st->op, st->lists->operands->size(), sig);
  }
  st->signature_done = true;
}

// A bare word: loc(...), a dense/array value, `name = value`, or a keyword (compare's EQ and FLOAT).
void Parser::PrettyWord(PrettyState* st, int depth) {
  const Token& t = lex_.Peek();
  if (t.text == "loc") {
    SkipLocation(depth);
    return;
  }
  if (t.text == "dense" || t.text == "array") {
    st->lists->attributes->emplace_back("value", ParseAttribute(depth + 1));
    return;
  }
  const Token word = lex_.Next();
  if (PeekPunct("=") && !st->signature_done) {
    lex_.Next();
    if (lex_.Peek().kind == Tok::kValue) return;  // %iter = %init inside while(...)
    if (OpKeyedSyntax(st, word.text, depth)) return;
    const Attribute a = ParseAttribute(depth + 1);
    const bool typed_value = a.kind == Attribute::Kind::kInt || a.kind == Attribute::Kind::kString;
    if (typed_value && st->paren == 0) st->typed_attr = st->lists->attributes->size();
    st->lists->attributes->emplace_back(word.text, a);
    return;
  }
  if (OpWord(st, word.text)) return;
  if (st->first_keyword.empty()) st->first_keyword = word.text;
  st->last_keyword = word.text;
}

// Custom syntax in `<...>` (a Shardy sharding, named_computation's <"name">) or `[...]` is kept as an unnamed
// opaque attribute with its text, unless it is an op's own syntax that op_syntax.cc decodes (slice's
// `[1:5:2, 1:3]`, get_tuple_element's `[1]`).
void Parser::PrettyBracket(PrettyState* st, int depth) {
  const Token start = lex_.Peek();
  if (IsPunct(start, "[") && OpBracket(st, depth)) return;
  if (IsPunct(start, "<")) {
    RawAngle(lex_.Next());
  } else {
    SkipBalanced(depth + 1);
  }
  Attribute a;
  a.kind = Attribute::Kind::kOpaque;
  a.loc = start.loc;
  a.text = a.str = TextFrom(start);
  st->lists->attributes->emplace_back("", a);
}

// Whether the '{' token next starts a region (ops) rather than an attribute dictionary.
bool Parser::BraceStartsRegion() {
  const Token& brace = lex_.Peek();
  size_t i = brace.offset + 1;
  const std::string_view s = src_;
  while (i < s.size()) {
    if (IsSpace(s[i])) {
      ++i;
    } else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else {
      break;
    }
  }
  if (i >= s.size()) return false;
  const char c = s[i];
  if (c == '%' || c == '^') return true;
  if (c == '"') {
    // "name"( ... ) is a generic op; "key" = ... is a quoted attribute name.
    size_t j = i + 1;
    while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
    ++j;
    while (j < s.size() && s[j] == ' ') ++j;
    return j < s.size() && s[j] == '(';
  }
  if (IsIdentStart(c)) {
    size_t j = i;
    while (j < s.size() && IsIdentChar(s[j])) ++j;
    const std::string_view word = s.substr(i, j - i);
    while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
    if (j >= s.size()) return false;
    if (s[j] == '=' || s[j] == ',' || s[j] == '}') return false;  // key = value, or unit attribute
    return word.find('.') != std::string_view::npos || word == "return";
  }
  return false;
}

// Whether a token at the start of a line starts a new operation (or ends the enclosing block).
bool Parser::StartsNewOp(const Token& t) {
  switch (t.kind) {
    case Tok::kEof:
    case Tok::kSplit:
    case Tok::kValue:
    case Tok::kString:
    case Tok::kCaret:
    case Tok::kHash: return true;
    case Tok::kIdent: return t.text.find('.') != std::string_view::npos || t.text == "return" || t.text == "module";
    default: return IsPunct(t, "}");
  }
}

}  // namespace neuronmem::stablehlo::parse
