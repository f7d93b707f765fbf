// The StableHLO text parser's entry point and the top of the grammar: the text is a sequence of modules
// (split by `// -----`, or implicit), a module holds functions and other ops, a function holds a region.
// How the parser is split into files: parser_impl.h.
#include "stablehlo/parser.h"

#include <cctype>
#include <cstring>
#include <string>

#include "stablehlo/bytecode.h"
#include "stablehlo/parser_impl.h"

namespace neuronmem::stablehlo {
namespace parse {

// ---- shared helpers ---------------------------------------------------------------------------------

std::string Parser::Describe(const Token& t) {
  if (t.kind == Tok::kEof) return "the end of the input";
  return "'" + std::string(t.text.substr(0, 40)) + "'";
}

std::string Parser::At(Location loc) { return std::to_string(loc.line) + ":" + std::to_string(loc.column); }

std::string_view Parser::TextFrom(const Token& t) {
  const Token& next = lex_.Peek();
  const size_t end = next.kind == Tok::kEof ? src_.size() : next.offset;
  return TrimRight(src_.substr(t.offset, end - t.offset));
}

Span<Type> Parser::Repeat(const Type& t, size_t n) {
  if (n == 0) return {};
  const RepeatKey key{t.dims.data(),
                      t.elements.data(),
                      t.text.data(),
                      t.quant,
                      t.dims.size(),
                      t.elements.size(),
                      t.num_inputs,
                      n,
                      static_cast<int>(t.element),
                      static_cast<int>(t.kind)};
  Span<Type>& shared = scratch_->repeats[key];
  if (shared.empty()) {
    Type* out = static_cast<Type*>(arena_->Allocate(n * sizeof(Type), alignof(Type)));
    std::uninitialized_fill(out, out + n, t);
    shared = Span<Type>(out, n);
  }
  return shared;
}

void Parser::SkipBalanced(int depth) {
  const Token open = lex_.Next();
  CheckDepth(depth, open.loc);
  const char o = open.text[0];
  const char c = o == '(' ? ')' : o == '[' ? ']' : o == '{' ? '}' : '>';
  for (;;) {
    const Token& t = lex_.Peek();
    if (t.kind == Tok::kEof) Fail(open.loc, std::string("unbalanced '") + o + "': no matching '" + c + "'");
    const bool single = t.kind == Tok::kPunct && t.text.size() == 1;
    if (single && std::strchr("([{<", t.text[0])) {
      SkipBalanced(depth + 1);
      continue;
    }
    lex_.Next();
    if (single && t.text[0] == c) return;
    if (single && std::strchr(")]}>", t.text[0])) {
      Fail(t.loc, std::string("mismatched '") + t.text[0] + "': expected '" + c + "' to close the '" + o +
                      "' opened at " + At(open.loc));
    }
  }
}

void Parser::SkipLocation(int depth) {
  if (!PeekIdent("loc")) return;
  lex_.Next();
  if (!PeekPunct("(")) Fail(lex_.Peek().loc, "expected '(' after 'loc'");
  SkipBalanced(depth + 1);
}

std::string_view Parser::RawAngle(const Token& open) {
  const std::string_view s = src_;
  size_t i = open.offset + 1;
  int depth = 1;
  bool in_string = false;
  size_t quote = std::string_view::npos;
  for (; i < s.size(); ++i) {
    const char ch = s[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;
        continue;
      }
      if (ch == '"') {
        in_string = false;
        continue;
      }
      // Jump to the next quote or backslash (a whole-tensor hex literal is most of a file's text); the loop's
      // ++i lands on it. `quote` keeps the string's next quote across escapes.
      if (quote < i || quote == std::string_view::npos) {
        const void* q = std::memchr(s.data() + i, '"', s.size() - i);
        quote = q ? static_cast<size_t>(static_cast<const char*>(q) - s.data()) : s.size();
      }
      const void* b = std::memchr(s.data() + i, '\\', quote - i);
      i = (b ? static_cast<size_t>(static_cast<const char*>(b) - s.data()) : quote) - 1;
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '<') {
      ++depth;
    } else if (ch == '>' && s[i - 1] != '-') {
      if (--depth == 0) break;
    }
  }
  if (i >= s.size()) Fail(open.loc, "unbalanced '<': no matching '>'");
  std::string_view body = s.substr(open.offset + 1, i - open.offset - 1);
  lex_.Reset(i + 1);
  return body;
}

// ---- modules ----------------------------------------------------------------------------------------

void Parser::ParseAll(std::vector<Module>* out) {
  Module current;
  bool has_content = false;
  auto emit = [&] {  // the module ends: it takes the warnings parsed with it
    current.warnings = std::move(scratch_->warnings);
    scratch_->warnings.clear();
    out->push_back(std::move(current));
    current = Module();
  };
  for (;;) {
    const Token& t = lex_.Peek();
    if (t.kind == Tok::kEof) break;
    if (t.kind == Tok::kSplit) {
      lex_.Next();
      if (has_content) emit();
      current = Module();
      has_content = false;
      continue;
    }
    if (StartsAliasDefinition(t)) {
      ParseAliasDefinition(0);
      continue;
    }
    if ((t.kind == Tok::kIdent && t.text == "module") || PeekGenericModule()) {
      if (has_content && (!current.functions.empty() || !current.other_ops.empty())) emit();
      if (t.kind == Tok::kIdent) {
        ParseModule(&current, 1);
      } else {  // "builtin.module"() ({...}) : () -> (): the same module in the generic form
        const Operation op = ParseOperation(1);
        current.loc = op.loc;
        if (const Attribute* n = Find(op.attributes, "sym_name")) current.name = n->str;
        current.attributes = op.attributes;
        AddGenericModuleContents(op, &current);
      }
      emit();
      has_content = false;
      continue;
    }
    ParseModuleItem(&current, 0);
    has_content = true;
  }
  if (has_content) emit();
}

// `module [@name] [attributes {...}] { items } [loc(...)]`. A nested module counts one level of nesting,
// so a chain of them meets the depth limit like any other nesting.
void Parser::ParseModule(Module* m, int depth) {
  const Token kw = lex_.Next();  // "module"
  CheckDepth(depth, kw.loc);
  m->loc = kw.loc;
  if (lex_.Peek().kind == Tok::kSymbol) m->name = SymbolName(lex_.Next(), arena_);
  if (PeekIdent("attributes")) {
    lex_.Next();
    m->attributes = ParseAttrDict(depth + 1);
  }
  const Token open = Expect("{", "to open the module body");
  for (;;) {
    const Token& t = lex_.Peek();
    if (t.kind == Tok::kEof) Fail(open.loc, "the module body opened here is not closed with '}'");
    if (IsPunct(t, "}")) {
      lex_.Next();
      break;
    }
    ParseModuleItem(m, depth);
  }
  SkipLocation(depth);
}

void Parser::ParseModuleItem(Module* m, int depth) {
  const Token& t = lex_.Peek();
  if (t.kind == Tok::kIdent && t.text == "func.func") {
    m->functions.push_back(ParseFunction(depth + 1));
    return;
  }
  if (StartsAliasDefinition(t)) {
    ParseAliasDefinition(depth + 1);
    return;
  }
  if (t.kind == Tok::kIdent && t.text == "module") {  // nested module: flatten its functions
    Module inner;
    ParseModule(&inner, depth + 1);
    for (const Function& f : inner.functions) m->functions.push_back(f);
    return;
  }
  const Operation op = ParseOperation(depth + 1);
  if (op.name == "func.func") {
    m->functions.push_back(FunctionFromGeneric(op));
  } else if (op.name == "builtin.module") {  // a nested generic module: flatten its functions
    AddGenericModuleContents(op, m);
  } else {
    m->other_ops.push_back(op);
  }
}

bool Parser::PeekGenericModule() {
  const Token& t = lex_.Peek();
  return t.kind == Tok::kString && t.text == "\"builtin.module\"";
}

// The body of a generic `"builtin.module"`: generic functions become functions (wherever they stand,
// nested generic modules included), other ops stay ops. Recursion follows the IR's nesting, which the
// parser has bounded.
void Parser::AddGenericModuleContents(const Operation& op, Module* m) {
  for (const Region& r : op.regions) {
    for (const Block& b : r.blocks) {
      for (const Operation& inner : b.ops) {
        if (inner.name == "func.func") {
          m->functions.push_back(FunctionFromGeneric(inner));
        } else if (inner.name == "builtin.module") {
          AddGenericModuleContents(inner, m);
        } else {
          m->other_ops.push_back(inner);
        }
      }
    }
  }
}

// `!alias = type` or `#alias = attribute`; later uses of the alias stand for its value. (MLIR requires
// the definition first, except for location aliases, which the parser skips wherever they are used.)
void Parser::ParseAliasDefinition(int depth) {
  const Token name = lex_.Next();
  Expect("=", name.kind == Tok::kBang ? "after a type alias name" : "after an attribute alias name");
  if (name.kind == Tok::kBang) {
    scratch_->type_aliases[name.text] = ParseType(depth + 1);
  } else {
    scratch_->attribute_aliases[name.text] = ParseAttribute(depth + 1);
  }
}

// ---- functions --------------------------------------------------------------------------------------

// `func.func [visibility] @name(args) [-> results] [attributes {...}] [{ body }] [loc(...)]`
Function Parser::ParseFunction(int depth) {
  Function f;
  const Token kw = lex_.Next();
  f.loc = kw.loc;
  f.visibility = "public";
  if (PeekIdent("public") || PeekIdent("private") || PeekIdent("nested")) f.visibility = lex_.Next().text;
  const Token name = lex_.Next();
  if (name.kind != Tok::kSymbol) {
    Fail(name.loc, "expected the function name (@name) after func.func, found " + Describe(name));
  }
  f.name = SymbolName(name, arena_);
  f.args = ParseFunctionArguments(depth);
  if (Accept("->")) ParseFunctionResults(&f, depth);
  if (PeekIdent("attributes")) {
    lex_.Next();
    f.attributes = ParseAttrDict(depth + 1);
  }
  if (PeekPunct("{")) f.body = ParseRegion(depth + 1, {});
  SkipLocation(depth);
  return f;
}

// `(%a: T {attrs} loc(...), ...)`
Span<Argument> Parser::ParseFunctionArguments(int depth) {
  const Token open = Expect("(", "to open the argument list");
  if (Accept(")")) return {};
  auto args = scratch_->args.Get();
  for (;;) {
    Argument arg;
    const Token v = lex_.Next();
    if (v.kind != Tok::kValue) {
      Fail(v.loc, "expected an argument (%name) in the list opened at " + At(open.loc) + ", found " + Describe(v));
    }
    arg.name = v.text.substr(1);
    arg.loc = v.loc;
    Expect(":", "after the argument name");
    arg.type = ParseType(depth + 1);
    if (PeekPunct("{")) arg.attrs = ParseAttrDict(depth + 1);
    SkipLocation(depth);
    args->push_back(arg);
    if (Accept(",")) continue;
    Expect(")", "to close the argument list");
    return arena_->Copy(*args);
  }
}

// After `->`: one type, or `(T {attrs} loc(...), ...)`.
void Parser::ParseFunctionResults(Function* f, int depth) {
  auto types = scratch_->types.Get();
  auto attrs = scratch_->attr_lists.Get();
  if (Accept("(")) {
    if (!Accept(")")) {
      for (;;) {
        types->push_back(ParseType(depth + 1));
        attrs->push_back(PeekPunct("{") ? ParseAttrDict(depth + 1) : NamedAttrs());
        SkipLocation(depth);
        if (Accept(",")) continue;
        Expect(")", "to close the result list");
        break;
      }
    }
  } else {
    types->push_back(ParseType(depth + 1));
    attrs->emplace_back();
  }
  f->result_types = arena_->Copy(*types);
  f->result_attrs = arena_->Copy(*attrs);
}

// A generic `"func.func"() <{function_type = ..., sym_name = ..., arg_attrs, res_attrs}> ({...})`.
Function Parser::FunctionFromGeneric(const Operation& op) {
  Function f;
  f.loc = op.loc;
  f.visibility = "public";
  if (const Attribute* n = Find(op.attributes, "sym_name")) f.name = n->str;
  if (const Attribute* v = Find(op.attributes, "sym_visibility")) f.visibility = v->str;
  const Attribute* ft = Find(op.attributes, "function_type");
  const Attribute* aa = Find(op.attributes, "arg_attrs");
  const Attribute* ra = Find(op.attributes, "res_attrs");
  if (!op.regions.empty()) f.body = op.regions[0];
  if (!ft || ft->kind != Attribute::Kind::kType || ft->type.kind != Type::Kind::kFunction) {
    Fail(op.loc, "generic func.func without a function_type property");
  }
  const Type& fnt = ft->type;
  const Block* entry = f.body.blocks.empty() ? nullptr : &f.body.blocks[0];
  auto args = scratch_->args.Get();
  for (size_t i = 0; i < fnt.num_inputs; ++i) {
    Argument arg;
    arg.type = fnt.elements[i];
    if (entry && i < entry->args.size()) {
      arg.name = entry->args[i].name;
      arg.loc = entry->args[i].loc;
    } else {
      arg.name = arena_->CopyString("arg" + std::to_string(i));
    }
    if (aa && aa->kind == Attribute::Kind::kArray && i < aa->array.size()) arg.attrs = aa->array[i].dict;
    args->push_back(arg);
  }
  f.args = arena_->Copy(*args);
  auto attrs = scratch_->attr_lists.Get();
  f.result_types = Span<Type>(fnt.elements.data() + fnt.num_inputs, fnt.elements.size() - fnt.num_inputs);
  for (size_t r = 0; r < f.result_types.size(); ++r) {
    const bool has = ra && ra->kind == Attribute::Kind::kArray && r < ra->array.size();
    attrs->push_back(has ? ra->array[r].dict : NamedAttrs());
  }
  f.result_attrs = arena_->Copy(*attrs);
  return f;
}

}  // namespace parse

Status ParseModules(std::string_view text, std::string_view filename, std::vector<Module>* out) {
  out->clear();
  if (IsBytecode(text)) {  // a StableHLO portable artifact: one module
    Module m;
    NEURONMEM_RETURN_IF_ERROR(ParseBytecode(text, filename, &m));
    out->push_back(std::move(m));
    return Ok();
  }
  // One arena for every module of the text: the source is copied into it first, so the IR's names are
  // views into that copy and the caller's text may go away.
  auto arena = std::make_shared<Arena>();
  parse::Scratch scratch;
  parse::Parser p(arena->CopyString(text), arena.get(), &scratch);
  try {
    p.ParseAll(out);
    for (Module& m : *out) m.arena = arena;
  } catch (const parse::ParseError& e) {
    out->clear();
    return InvalidArgument("%.*s:%u:%u: %s", static_cast<int>(filename.size()), filename.data(), e.loc.line,
                           e.loc.column, e.message.c_str());
  }
  return Ok();
}

}  // namespace neuronmem::stablehlo
