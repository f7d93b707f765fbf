// The recursive-descent parser's class, shared by the files that implement it, one part each:
//   parser.cc       entry point (ParseModules), modules, functions, shared token helpers
//   operations.cc   regions, blocks, operations and the generic form "name"(...) ... : (...) -> (...)
//   pretty_form.cc  the pretty form of ops: the tail after the op name, read generically
//   op_syntax.cc    the custom syntax of particular ops (dot_general's `contracting_dims = [1] x [0]`,
//                   convolution's layouts, slice's `[0:2]`, reduce's `applies`, ...), decoded into the
//                   attributes, operand order, regions and types of the generic form
//   attributes.cc   attribute values and dictionaries
//   types.cc        types
// Every function takes the nesting depth and fails beyond kMaxDepth: the parser never recurses without
// bound. Errors are thrown as ParseError (lexer.h) and turned into a Status by ParseModules.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stablehlo/lexer.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo::parse {

// Reusable growable lists for building IR arrays: a lease takes a cleared vector from the pool and gives it
// back (capacity kept) when it goes out of scope, so nested parsing allocates nothing once warm. The
// finished list is copied into the arena as a Span.
template <typename T>
class ScratchPool {
 public:
  class Lease {
   public:
    explicit Lease(ScratchPool* pool) : pool_(pool), v_(pool->Take()) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_->Give(v_); }
    std::vector<T>* operator->() const { return v_; }
    std::vector<T>& operator*() const { return *v_; }

   private:
    ScratchPool* pool_;
    std::vector<T>* v_;
  };
  Lease Get() { return Lease(this); }

 private:
  std::vector<T>* Take() {
    if (free_.empty()) {
      owned_.push_back(std::make_unique<std::vector<T>>());
      return owned_.back().get();
    }
    std::vector<T>* v = free_.back();
    free_.pop_back();
    return v;
  }
  void Give(std::vector<T>* v) {
    v->clear();
    free_.push_back(v);
  }
  std::vector<std::unique_ptr<std::vector<T>>> owned_;
  std::vector<std::vector<T>*> free_;
};

// An array of n copies of one type (pretty-form signatures: one type for every operand and result), shared by
// every op with the same type and count. Types are identified by their arrays and text, which interning makes
// the same for equal types.
struct RepeatKey {
  const void* dims;
  const void* elements;
  const void* text;
  const void* quant;
  size_t num_dims, num_elements, num_inputs, n;
  int element, kind;
  bool operator==(const RepeatKey& o) const {
    return dims == o.dims && elements == o.elements && text == o.text && quant == o.quant && num_dims == o.num_dims &&
           num_elements == o.num_elements && num_inputs == o.num_inputs && n == o.n && element == o.element &&
           kind == o.kind;
  }
};
struct RepeatKeyHash {
  size_t operator()(const RepeatKey& k) const {
    size_t h = std::hash<const void*>()(k.dims) ^ (std::hash<const void*>()(k.elements) << 1) ^
               (std::hash<const void*>()(k.text) << 2) ^ (std::hash<const void*>()(k.quant) << 3);
    return h ^ (k.n * 0x9E3779B97F4A7C15ull) ^ (static_cast<size_t>(k.element) << 8) ^ static_cast<size_t>(k.kind);
  }
};

struct Scratch {
  ScratchPool<ValueRef> refs;
  ScratchPool<Type> types;
  ScratchPool<NamedAttr> named;
  ScratchPool<Attribute> attrs;
  ScratchPool<Argument> args;
  ScratchPool<Operation> ops;
  ScratchPool<Block> blocks;
  ScratchPool<Region> regions;
  ScratchPool<NamedAttrs> attr_lists;
  ScratchPool<std::string_view> names;
  std::vector<uint8_t> dense;
  // Alias definitions seen so far (`!name = type`, `#name = attribute`), by name with its sigil; the
  // names are views into the arena's source. Shared by the sub-parsers of one parse.
  std::unordered_map<std::string_view, Type> type_aliases;
  std::unordered_map<std::string_view, Attribute> attribute_aliases;
  // Types interned once per parse (the IR's memory per byte of text): tensor types by their body text,
  // function types by their text, and the arrays of repeated types (RepeatKey). Views into the arena.
  std::unordered_map<std::string_view, Type> tensor_types;
  std::unordered_map<std::string_view, Type> function_types;
  std::unordered_map<RepeatKey, Span<Type>, RepeatKeyHash> repeats;
  // Warnings of the module being parsed (ParseAll moves them into it).
  std::vector<Warning> warnings;
  // Tails of unknown-dialect ops that failed to read as pretty ops, by where they start in the text (a
  // failure is final: ParseUnknownDialectTail skips such an op at once when it meets it again).
  std::unordered_map<const char*, ParseError> failed_tails;
};

class Parser {
 public:
  Parser(std::string_view src, Arena* arena, Scratch* scratch)
      : lex_(src), src_(src), arena_(arena), scratch_(scratch) {}

  // Parses the whole text into modules (parser.cc).
  void ParseAll(std::vector<Module>* out);

 private:
  // ---- token helpers (inline: the hot path) ----
  static bool IsPunct(const Token& t, std::string_view p) {
    return t.kind == Tok::kPunct && t.text.size() == p.size() && t.text[0] == p[0] &&
           (p.size() == 1 || t.text[1] == p[1]);
  }
  bool PeekPunct(std::string_view p) { return IsPunct(lex_.Peek(), p); }
  bool PeekIdent(std::string_view s) {
    const Token& t = lex_.Peek();
    return t.kind == Tok::kIdent && t.text == s;
  }
  bool Accept(std::string_view p) {
    if (PeekPunct(p)) {
      lex_.Next();
      return true;
    }
    return false;
  }
  Token Expect(std::string_view p, const char* context) {
    const Token& t = lex_.Peek();
    if (!IsPunct(t, p)) Fail(t.loc, "expected '" + std::string(p) + "' " + context + ", found " + Describe(t));
    return lex_.Next();
  }
  void CheckDepth(int depth, Location loc) {
    if (depth > kMaxDepth) throw ParseError{loc, "nesting deeper than " + std::to_string(kMaxDepth) + " levels", true};
  }

  // ---- shared helpers (parser.cc) ----
  static std::string Describe(const Token& t);
  static std::string At(Location loc);  // "line:col"
  // The source text from token `t` up to the next token, without trailing blanks.
  std::string_view TextFrom(const Token& t);
  // n copies of `t` in the arena (ops whose signature is one type for all operands and results).
  Span<Type> Repeat(const Type& t, size_t n);
  // Skips a balanced group starting at the current '(' '[' '{' or '<' token.
  void SkipBalanced(int depth);
  // Skips `loc(...)` if it comes next.
  void SkipLocation(int depth);
  // Raw text from the current position to the '>' matching an already-consumed '<' at `open`.
  std::string_view RawAngle(const Token& open);

  // ---- modules and functions (parser.cc) ----
  void ParseModule(Module* m, int depth);
  void ParseModuleItem(Module* m, int depth);
  void ParseAliasDefinition(int depth);
  static bool StartsAliasDefinition(const Token& t) { return t.kind == Tok::kHash || t.kind == Tok::kBang; }
  void AddGenericModuleContents(const Operation& op, Module* m);
  bool PeekGenericModule();
  Function ParseFunction(int depth);
  Span<Argument> ParseFunctionArguments(int depth);
  void ParseFunctionResults(Function* f, int depth);
  Function FunctionFromGeneric(const Operation& op);

  // ---- regions, blocks, operations, generic form (operations.cc) ----
  // The lists of the operation being parsed; Finish() freezes them into the op.
  struct OpLists {
    explicit OpLists(Scratch* s) : operands(s->refs.Get()), attributes(s->named.Get()), regions(s->regions.Get()) {}
    ScratchPool<ValueRef>::Lease operands;
    ScratchPool<NamedAttr>::Lease attributes;
    ScratchPool<Region>::Lease regions;
  };
  // Parses "{ [^bb(args):] ops ... }". entry_args become the entry block's arguments.
  Region ParseRegion(int depth, Span<Argument> entry_args);
  Span<Argument> ParseBlockArguments(int depth);
  Operation ParseOperation(int depth);
  void ParseResults(Operation* op);
  void Finish(Operation* op, OpLists* lists);
  void ParseOperandList(OpLists* lists, const char* context);
  static ValueRef MakeRef(const Token& v);
  void ApplySignature(Operation* op, size_t num_operands, const Type& sig);
  void ParseGenericTail(Operation* op, OpLists* lists, int depth);
  static bool KnownDialect(std::string_view op_name);
  void ParseUnknownDialectTail(Operation* op, OpLists* lists, int depth);
  void SkipUnknownOp(Operation* op, OpLists* lists);

  // ---- the pretty form (pretty_form.cc) ----
  struct PrettyState;
  void ParsePrettyTail(Operation* op, OpLists* lists, int depth);
  void PrettyValue(PrettyState* st, int depth);
  void PrettyPunct(PrettyState* st, int depth);
  void PrettyBrace(PrettyState* st, int depth);
  void PrettySignature(PrettyState* st, int depth);
  void PrettyWord(PrettyState* st, int depth);
  void PrettyBracket(PrettyState* st, int depth);
  void ApplyPrettySignature(PrettyState* st, Type sig, int depth);
  bool BraceStartsRegion();
  bool StartsNewOp(const Token& t);

  // ---- the custom syntax of particular ops (op_syntax.cc) ----
  // After `key =` in a pretty tail: reads the value when it is custom syntax of the op (true), else false.
  bool OpKeyedSyntax(PrettyState* st, std::string_view key, int depth);
  // A bare word of the tail: true when it is custom syntax of the op (reduce's `applies`, scan's `inits`).
  bool OpWord(PrettyState* st, std::string_view word);
  // At '[': true when it is custom syntax of the op (slice's bounds, get_tuple_element's index).
  bool OpBracket(PrettyState* st, int depth);
  // After the tail: what the pretty form leaves implicit, made explicit as the generic form has it.
  void FinishPrettyOp(PrettyState* st);
  // `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` into the convolution's nine dimension numbers.
  NamedAttrs ParseConvLayout(Location loc);
  // The body of `#stablehlo.conv<...>` (a layout, or `raw key = value, ...`); empty if malformed.
  NamedAttrs ParseConvBody(std::string_view body, int depth);
  // The body of a dialect attribute that is one enum keyword (`comparison_direction LT`, `TRANSPOSE`).
  static bool EnumBody(std::string_view body, std::string_view* word);
  Attribute IntArray(const std::vector<int64_t>& v);
  std::vector<int64_t> ReadIntList(const char* what, Location loc);

  // ---- attributes (attributes.cc) ----
  Attribute ParseAttribute(int depth);
  void ParseNumberAttribute(const Token& t, Attribute* a, int depth);
  void ParseDenseAttribute(const Token& t, Attribute* a, int depth);
  void ParseDenseArrayAttribute(Attribute* a);
  void ParseListAttribute(Attribute* a, int depth);
  void ParseDialectAttribute(Attribute* a, int depth);
  void ParseTypeOrKeywordAttribute(const Token& t, Attribute* a, int depth);
  NamedAttrs ParseKeyValues(std::string_view body, int depth);
  void ParseAttrDictInto(int depth, std::vector<NamedAttr>* out);
  NamedAttrs ParseAttrDict(int depth);

  // ---- types (types.cc) ----
  Type ParseType(int depth);
  // `!quant.uniform<...>` after its `!quant.*` token (`bang`): per tensor `<i8:f32, 0.5:-3>`, per axis
  // `<i8:f32:1, {0.5:-3, 0.25}>`, a storage range `<i8<-127:127>:f32, ...>`; a missing zero point is 0.
  const QuantType* ParseQuantType(const Token& bang, int depth);
  // The quantized element type that starts at `body[at]`, inside the raw body of `tensor<` at `open`: lexed
  // again from there by ParseQuantType; nothing but an encoding (`, ...`) may follow it in the body.
  const QuantType* ParseQuantInTensor(const Token& open, std::string_view body, size_t at, int depth);
  void ParseTypeList(std::vector<Type>* out, const char* close, const char* context, int depth);

  Lexer lex_;
  std::string_view src_;
  Arena* arena_;
  Scratch* scratch_;
};

// (a0, b0, a1, b1, ...) -> (a0, a1, ..., b0, b1, ...): the pretty reduce lists its operands and its reducer's
// arguments in pairs, the generic form (the IR) inputs first.
template <typename T>
void PairsToCanonical(std::vector<T>* v) {
  const size_t n = v->size() / 2;
  if (n < 2 || v->size() % 2) return;
  std::vector<T> out(v->size());
  for (size_t i = 0; i < n; ++i) {
    out[i] = (*v)[2 * i];
    out[n + i] = (*v)[2 * i + 1];
  }
  *v = std::move(out);
}

// The ops whose custom syntax op_syntax.cc decodes (kNone: only the generic reading of the tail).
enum class OpSyntax : uint8_t {
  kNone,
  kDotGeneral,
  kConvolution,  // and dynamic_conv
  kSlice,
  kGetTupleElement,
  kReducePrecision,
  kRngBitGenerator,
  kCompare,
  kReduce,
  kScan,
};
// Which, by the op's name (op_syntax.cc; a switch on the length first: most ops cost one compare).
OpSyntax OpSyntaxOf(std::string_view name);

// What the tail of a pretty op has collected so far.
struct Parser::PrettyState {
  PrettyState(Operation* o, OpLists* l, Scratch* s)
      : op(o), lists(l), pending_args(s->args.Get()), loop_args(s->args.Get()), syntax(OpSyntaxOf(o->name)) {}
  Operation* op;
  OpLists* lists;
  ScratchPool<Argument>::Lease pending_args;     // "reducer(%a: t, %b: t)" before a region
  ScratchPool<Argument>::Lease loop_args;        // while(%iter = %init, ...): every region's entry arguments
  Span<Argument> loop_span;                      // loop_args with their types, once a region needs them
  std::string_view first_keyword, last_keyword;  // bare words (compare's direction and type)
  int paren = 0;                                 // open '(' of the tail
  bool signature_done = false;                   // after the trailing `: type`
  // Op-specific syntax (op_syntax.cc).
  OpSyntax syntax;
  size_t typed_attr = SIZE_MAX;        // a `key = 0 : type` attribute: the type may be the op's signature
  size_t scan_inputs = SIZE_MAX;       // chlo.scan: the operands before `inits`
  std::string_view applies;            // stablehlo.reduce: `applies stablehlo.add`
  bool expect_applies = false;         // the next word is the applied op
  std::vector<NamedAttr> dot_numbers;  // dot_general: `batching_dims`, `contracting_dims`
  bool reducer_args = false;           // stablehlo.reduce: `reducer(...) (...)` declared the region's arguments
};

}  // namespace neuronmem::stablehlo::parse
