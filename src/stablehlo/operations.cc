// Regions, blocks and operations; the generic form of an op, parsed exactly:
//   %r:N = "dialect.op"(%a, %b#1) [successors] <{properties}> ({regions}, ...) {attrs} : (T...) -> (T...)
#include <cstdlib>
#include <string>

#include "stablehlo/parser_impl.h"

namespace neuronmem::stablehlo::parse {

Region Parser::ParseRegion(int depth, Span<Argument> entry_args) {
  const Token open = Expect("{", "to open a region");
  CheckDepth(depth, open.loc);
  auto blocks = scratch_->blocks.Get();
  auto ops = scratch_->ops.Get();  // the current (last) block's ops
  blocks->emplace_back();
  blocks->back().args = entry_args;
  for (;;) {
    const Token& t = lex_.Peek();
    if (t.kind == Tok::kEof) Fail(open.loc, "the region opened here is not closed with '}' (the input ends first)");
    if (IsPunct(t, "}")) {
      lex_.Next();
      break;
    }
    if (t.kind == Tok::kCaret) {  // ^label[(args)]: starts a block
      const Token label = lex_.Next();
      if (!ops->empty() || !blocks->back().label.empty()) {
        blocks->back().ops = arena_->Copy(*ops);
        ops->clear();
        blocks->emplace_back();
      }
      blocks->back().label = label.text.substr(1);
      if (Accept("(")) blocks->back().args = ParseBlockArguments(depth);
      Expect(":", "after a block label");
      continue;
    }
    ops->push_back(ParseOperation(depth + 1));
  }
  blocks->back().ops = arena_->Copy(*ops);
  Region r;
  r.blocks = arena_->Copy(*blocks);
  return r;
}

// After `^bb(`: `%a: T loc(...), ...)`.
Span<Argument> Parser::ParseBlockArguments(int depth) {
  if (Accept(")")) return {};
  auto args = scratch_->args.Get();
  for (;;) {
    Argument arg;
    const Token v = lex_.Next();
    if (v.kind != Tok::kValue) Fail(v.loc, "expected a block argument (%name), found " + Describe(v));
    arg.name = v.text.substr(1);
    arg.loc = v.loc;
    Expect(":", "after a block argument");
    arg.type = ParseType(depth + 1);
    SkipLocation(depth);
    args->push_back(arg);
    if (Accept(",")) continue;
    Expect(")", "to close the block arguments");
    return arena_->Copy(*args);
  }
}

Operation Parser::ParseOperation(int depth) {
  Operation op;
  const Token first = lex_.Peek();
  CheckDepth(depth, first.loc);
  op.loc = first.loc;
  if (first.kind == Tok::kValue) ParseResults(&op);
  const Token name = lex_.Next();
  OpLists lists(scratch_);
  if (name.kind == Tok::kString) {
    op.name = Unquote(name, arena_);
    op.generic = true;
    ParseGenericTail(&op, &lists, depth);
  } else if (name.kind == Tok::kIdent) {
    op.name = name.text;
    if (op.name == "return") op.name = "func.return";
    if (op.name == "call") op.name = "func.call";
    if (KnownDialect(op.name)) {
      ParsePrettyTail(&op, &lists, depth);
    } else {
      ParseUnknownDialectTail(&op, &lists, depth);
    }
  } else {
    Fail(name.loc, "expected an operation, found " + Describe(name));
  }
  return op;
}

// Results: `%0 =`, `%0:3 =`, or `%a, %b =`.
void Parser::ParseResults(Operation* op) {
  const Token v = lex_.Next();
  op->result_name = v.text.substr(1);
  op->num_results = 1;
  if (Accept(":")) {
    const Token n = lex_.Next();
    if (n.kind != Tok::kNumber) Fail(n.loc, "expected a result count after ':'");
    const unsigned long count = std::strtoul(std::string(n.text).c_str(), nullptr, 10);
    if (count == 0 || count > 65536) Fail(n.loc, "result count " + std::string(n.text) + " is outside [1, 65536]");
    op->num_results = static_cast<uint32_t>(count);
  }
  if (!PeekPunct(",")) {
    Expect("=", "after the op's results");
    return;
  }
  auto names = scratch_->names.Get();
  names->push_back(op->result_name);
  while (Accept(",")) {
    const Token more = lex_.Next();
    if (more.kind != Tok::kValue) Fail(more.loc, "expected another result name, found " + Describe(more));
    if (++op->num_results > 65536) Fail(more.loc, "more than 65536 results");
    names->push_back(more.text.substr(1));
  }
  Expect("=", "after the op's results");
  // One name per result (`%a:2, %b` gives its groups' results no names of their own: left unnamed).
  if (names->size() == op->num_results) op->result_names = arena_->Copy(*names);
}

void Parser::Finish(Operation* op, OpLists* lists) {
  op->operands = arena_->Copy(*lists->operands);
  op->attributes = arena_->Copy(*lists->attributes);
  op->regions = arena_->Copy(*lists->regions);
  if (op->callee.empty()) {
    for (const char* key : {"call_target_name", "callee"}) {
      if (const Attribute* a = Find(op->attributes, key)) {
        op->callee = a->str;
        break;
      }
    }
  }
}

void Parser::ParseOperandList(OpLists* lists, const char* context) {
  const Token open = Expect("(", context);
  if (Accept(")")) return;
  for (;;) {
    const Token v = lex_.Next();
    if (v.kind != Tok::kValue) {
      Fail(v.loc, "expected an operand (%name) in the list opened at " + At(open.loc) + ", found " + Describe(v));
    }
    lists->operands->push_back(MakeRef(v));
    if (Accept(",")) continue;
    Expect(")", "to close the operand list");
    return;
  }
}

ValueRef Parser::MakeRef(const Token& v) {
  ValueRef r;
  r.loc = v.loc;
  std::string_view s = v.text.substr(1);
  const size_t hash = s.find('#');
  if (hash != std::string_view::npos) {
    r.index = static_cast<uint32_t>(std::strtoul(std::string(s.substr(hash + 1)).c_str(), nullptr, 10));
    s = s.substr(0, hash);
  }
  r.name = s;
  return r;
}

// Sets operand and result types from a trailing signature: a function type splits into inputs and
// results (views into its element array: no copy); a single type applies to every operand and result.
void Parser::ApplySignature(Operation* op, size_t num_operands, const Type& sig) {
  if (sig.kind == Type::Kind::kFunction) {
    op->operand_types = Span<Type>(sig.elements.data(), sig.num_inputs);
    op->result_types = Span<Type>(sig.elements.data() + sig.num_inputs, sig.elements.size() - sig.num_inputs);
  } else {
    op->operand_types = Repeat(sig, num_operands);
    op->result_types = Repeat(sig, op->num_results);
  }
}

void Parser::ParseGenericTail(Operation* op, OpLists* lists, int depth) {
  ParseOperandList(lists, "after a generic op name");
  if (PeekPunct("[")) SkipBalanced(depth + 1);  // successors
  if (PeekPunct("<")) {
    const Token lt = lex_.Next();
    if (!PeekPunct("{")) Fail(lt.loc, "expected '{' after '<' (properties are written <{...}>)");
    ParseAttrDictInto(depth + 1, &*lists->attributes);
    Expect(">", "to close the properties <{...}>");
  }
  if (Accept("(")) {
    if (!PeekPunct(")")) {
      do {
        lists->regions->push_back(ParseRegion(depth + 1, {}));
      } while (Accept(","));
    }
    Expect(")", "to close the region list");
  }
  if (PeekPunct("{")) ParseAttrDictInto(depth + 1, &*lists->attributes);
  Expect(":", "before the generic op's function type");
  const Type sig = ParseType(depth + 1);
  if (sig.kind != Type::Kind::kFunction) Fail(op->loc, "a generic op's type must be a function type (...) -> (...)");
  ApplySignature(op, lists->operands->size(), sig);
  SkipLocation(depth);
  Finish(op, lists);
}

// The dialects whose ops the parser reads in custom form (and fails on when it cannot): StableHLO and what
// JAX and XLA print beside it. Names without a dialect (`return`, `call`) count as known.
bool Parser::KnownDialect(std::string_view op_name) {
  const size_t dot = op_name.find('.');
  if (dot == std::string_view::npos) return true;
  const std::string_view d = op_name.substr(0, dot);
  return d == "stablehlo" || d == "func" || d == "sdy" || d == "chlo" || d == "mhlo" || d == "builtin";
}

// An op of another dialect in custom form: read generically like any op when that works; otherwise the op
// is skipped as one balanced unit (operands, attributes, regions, trailing type), marked `skipped`, with a
// warning. The nesting limit still fails.
void Parser::ParseUnknownDialectTail(Operation* op, OpLists* lists, int depth) {
  const Lexer saved = lex_;
  const size_t warnings = scratch_->warnings.size();  // those of ops nested in this one go if it is skipped
  // A tail that failed once fails again (only the nesting limit depends on where it is read, and that is
  // fatal): an enclosing op's failed attempt, re-read as skipped, meets its nested ops again. Without the
  // memo each level tried them again, exponential in the nesting (issue 23, class 7).
  const char* const at = src_.data() + lex_.Peek().offset;
  const auto failed = scratch_->failed_tails.find(at);
  try {
    if (failed != scratch_->failed_tails.end()) throw failed->second;
    ParsePrettyTail(op, lists, depth);
    return;
  } catch (const ParseError& e) {
    if (e.fatal) throw;
    if (failed == scratch_->failed_tails.end()) scratch_->failed_tails.emplace(at, e);
    lex_ = saved;
    scratch_->warnings.resize(warnings);
    lists->operands->clear();
    lists->attributes->clear();
    lists->regions->clear();
    const Operation kept = *op;  // name, results, location
    *op = Operation();
    op->name = kept.name;
    op->result_name = kept.result_name;
    op->num_results = kept.num_results;
    op->loc = kept.loc;
    op->skipped = true;
    SkipUnknownOp(op, lists);
    Finish(op, lists);
    scratch_->warnings.push_back({op->loc, "skipped '" + std::string(op->name) +
                                               "': an op of a dialect the parser does not know, whose " +
                                               "custom form it could not read (" + At(e.loc) + ": " + e.message + ")"});
  }
}

// Skips the tail of an op up to the end of its line at bracket depth 0 (regions and dictionaries may span
// lines), iteratively. The values read at brace depth 0 before the trailing ':' are its operands, except
// those declared there (`(%a: T)` before a region, `%iter = %init`).
void Parser::SkipUnknownOp(Operation* op, OpLists* lists) {
  int depth = 0;
  int braces = 0;
  bool signature = false;
  for (;;) {
    const Token& t = lex_.Peek();
    if (t.kind == Tok::kEof) {
      if (depth != 0) Fail(op->loc, "unbalanced brackets in '" + std::string(op->name) + "'");
      return;
    }
    if (depth == 0 && ((t.newline_before && StartsNewOp(t)) || IsPunct(t, "}"))) return;
    const Token tok = lex_.Next();
    if (tok.kind == Tok::kValue) {
      const bool declared = PeekPunct("=") || (depth > 0 && PeekPunct(":"));
      if (braces == 0 && !signature && !declared) lists->operands->push_back(MakeRef(tok));
      continue;
    }
    if (tok.kind != Tok::kPunct || tok.text.size() != 1) continue;
    const char c = tok.text[0];
    if (c == '(' || c == '[' || c == '{') {
      ++depth;
      braces += c == '{';
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) Fail(tok.loc, std::string("unbalanced '") + c + "' in '" + std::string(op->name) + "'");
      --depth;
      braces -= c == '}';
    } else if (c == ':' && depth == 0) {
      signature = true;
    }
  }
}

}  // namespace neuronmem::stablehlo::parse
