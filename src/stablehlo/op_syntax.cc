// The custom (pretty) syntax of particular ops, decoded on the lexer's tokens into what the generic form of
// the op states, so that the IR carries everything an op needs whichever form it was written in:
//   dot_general     `batching_dims = [0] x [0], contracting_dims = [2] x [1]` -> dot_dimension_numbers
//   convolution     `dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` -> dimension_numbers (also the
//                   generic #stablehlo.conv<...>, decoded the same), `window = {stride = [..], pad = [[..]],
//                   lhs_dilate, rhs_dilate, reverse}` -> window_strides, padding, lhs_dilation, rhs_dilation,
//                   window_reversal
//   slice           `[0:2, 1:5:2]` -> start_indices, limit_indices, strides
//   get_tuple_element `%t[1]` -> index
//   reduce_precision `format = e5m10` -> exponent_bits, mantissa_bits
//   rng_bit_generator `algorithm = THREE_FRY` -> rng_algorithm
//   compare         `LT, %a, %b, FLOAT` -> comparison_direction, compare_type
//   reduce          `(%x init: %i), ...` pairs -> inputs then inits (and the reducer's arguments likewise);
//                   `applies stablehlo.add` -> its one-op region
//   chlo.scan       `scan(%x...) inits(%i...)` -> operandSegmentSizes
// and the result types the pretty form leaves implicit: a constant's (its value's type), select's (its
// second type), a while's (its loop values'), and an op whose signature follows an integer or string
// attribute (`dim = 0 : tensor<4xi32>`: the signature, not the attribute's type).
#include <charconv>
#include <string>

#include "stablehlo/parser_impl.h"

namespace neuronmem::stablehlo::parse {

namespace {

bool ParseDecimal(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, *out);
  return r.ec == std::errc() && r.ptr == end;
}

Attribute IntAttr(int64_t v, Location loc) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  a.loc = loc;
  return a;
}

}  // namespace

OpSyntax OpSyntaxOf(std::string_view name) {
  switch (name.size()) {
    case 9: return name == "chlo.scan" ? OpSyntax::kScan : OpSyntax::kNone;
    case 15: return name == "stablehlo.slice" ? OpSyntax::kSlice : OpSyntax::kNone;
    case 16: return name == "stablehlo.reduce" ? OpSyntax::kReduce : OpSyntax::kNone;
    case 17: return name == "stablehlo.compare" ? OpSyntax::kCompare : OpSyntax::kNone;
    case 21:
      if (name == "stablehlo.dot_general") return OpSyntax::kDotGeneral;
      return name == "stablehlo.convolution" ? OpSyntax::kConvolution : OpSyntax::kNone;
    case 22: return name == "stablehlo.dynamic_conv" ? OpSyntax::kConvolution : OpSyntax::kNone;
    case 26: return name == "stablehlo.reduce_precision" ? OpSyntax::kReducePrecision : OpSyntax::kNone;
    case 27:
      if (name == "stablehlo.get_tuple_element") return OpSyntax::kGetTupleElement;
      return name == "stablehlo.rng_bit_generator" ? OpSyntax::kRngBitGenerator : OpSyntax::kNone;
    default: return OpSyntax::kNone;
  }
}

Attribute Parser::IntArray(const std::vector<int64_t>& v) {
  auto elements = scratch_->attrs.Get();
  for (int64_t x : v) elements->push_back(IntAttr(x, Location{}));
  Attribute a;
  a.kind = Attribute::Kind::kArray;
  a.array = arena_->Copy(*elements);
  return a;
}

// `[1, 2]`: integers only.
std::vector<int64_t> Parser::ReadIntList(const char* what, Location loc) {
  std::vector<int64_t> out;
  Expect("[", what);
  if (Accept("]")) return out;
  do {
    const Token n = lex_.Next();
    int64_t v = 0;
    if (n.kind != Tok::kNumber || !ParseDecimal(n.text, &v))
      Fail(n.loc,
           std::string("expected an integer ") + what + ", found " + Describe(n) + " (the op at " + At(loc) + ")");
    out.push_back(v);
  } while (Accept(","));
  Expect("]", what);
  return out;
}

bool Parser::EnumBody(std::string_view body, std::string_view* word) {
  try {
    Lexer lx(body);
    const Token a = lx.Next();
    if (a.kind != Tok::kIdent) return false;
    const Token b = lx.Next();
    if (b.kind == Tok::kEof) {
      *word = a.text;
      return true;
    }
    if (b.kind != Tok::kIdent || lx.Next().kind != Tok::kEof) return false;
    *word = b.text;
    return true;
  } catch (const ParseError&) {
    return false;
  }
}

// Three lists of dimension letters: the input's (b, f, spatial numbers), the kernel's (i, o, ...) and the
// output's (b, f, ...).
NamedAttrs Parser::ParseConvLayout(Location loc) {
  const auto list = [&](std::vector<std::string_view>* out) {
    Expect("[", "to open a convolution layout");
    if (Accept("]")) return;
    do {
      const Token t = lex_.Next();
      if (t.kind != Tok::kIdent && t.kind != Tok::kNumber)
        Fail(t.loc, "expected a dimension (a letter or a number) in a convolution layout, found " + Describe(t));
      out->push_back(t.text);
    } while (Accept(","));
    Expect("]", "to close a convolution layout");
  };
  std::vector<std::string_view> in, kernel, out;
  list(&in);
  const Token x = lex_.Next();
  if (x.kind != Tok::kIdent || x.text != "x") Fail(x.loc, "expected 'x' between the input and kernel layouts");
  list(&kernel);
  Expect("->", "before the output layout");
  list(&out);
  auto attrs = scratch_->named.Get();
  // A layout's two letters and its spatial dims in order: `[b, 1, 0, f]` has spatial dims (2, 1).
  const auto decode = [&](const std::vector<std::string_view>& l, char a, char b, const char* prefix, const char* a_key,
                          const char* b_key) {
    int64_t da = -1, db = -1;
    std::vector<int64_t> spatial(l.size(), -1);
    size_t num_spatial = 0;
    for (size_t d = 0; d < l.size(); ++d) {
      const std::string_view w = l[d];
      int64_t n = 0;
      if (w.size() == 1 && w[0] == a && da < 0) {
        da = static_cast<int64_t>(d);
      } else if (w.size() == 1 && w[0] == b && db < 0) {
        db = static_cast<int64_t>(d);
      } else if (ParseDecimal(w, &n) && n >= 0 && static_cast<size_t>(n) < l.size() && spatial[n] < 0) {
        spatial[n] = static_cast<int64_t>(d);
        ++num_spatial;
      } else {
        Fail(loc, "malformed convolution layout: '" + std::string(w) + "'");
      }
    }
    if (da < 0 || db < 0 || num_spatial + 2 != l.size())
      Fail(loc, std::string("malformed convolution layout: it needs '") + a + "', '" + b +
                    "' and spatial dimensions 0..n-1");
    spatial.resize(num_spatial);
    for (int64_t s : spatial)
      if (s < 0) Fail(loc, "malformed convolution layout: its spatial dimensions are not 0..n-1");
    attrs->emplace_back(a_key, IntAttr(da, loc));
    attrs->emplace_back(b_key, IntAttr(db, loc));
    attrs->emplace_back(prefix, IntArray(spatial));
  };
  decode(in, 'b', 'f', "input_spatial_dimensions", "input_batch_dimension", "input_feature_dimension");
  decode(kernel, 'i', 'o', "kernel_spatial_dimensions", "kernel_input_feature_dimension",
         "kernel_output_feature_dimension");
  decode(out, 'b', 'f', "output_spatial_dimensions", "output_batch_dimension", "output_feature_dimension");
  return arena_->Copy(*attrs);
}

NamedAttrs Parser::ParseConvBody(std::string_view body, int depth) {
  Parser sub(body, arena_, scratch_);
  try {
    if (sub.PeekIdent("raw")) {
      sub.lex_.Next();
      return ParseKeyValues(body.substr(sub.lex_.Peek().offset), depth);
    }
    const NamedAttrs layout = sub.ParseConvLayout(Location{});
    if (sub.lex_.Peek().kind != Tok::kEof) return {};
    return layout;
  } catch (const ParseError& e) {
    if (e.fatal) throw;
    return {};  // malformed: the op's compiler reports the missing dimension numbers
  }
}

bool Parser::OpKeyedSyntax(PrettyState* st, std::string_view key, int depth) {
  const OpSyntax op = st->syntax;
  if (op == OpSyntax::kNone) return false;
  const Location loc = lex_.Peek().loc;
  if (op == OpSyntax::kDotGeneral && (key == "batching_dims" || key == "contracting_dims")) {
    const bool batching = key == "batching_dims";
    const std::vector<int64_t> lhs = ReadIntList("in dot_general's dims", st->op->loc);
    const Token x = lex_.Next();
    if (x.kind != Tok::kIdent || x.text != "x")
      Fail(x.loc, "expected 'x' between the lhs and rhs dims of " + std::string(key) + ", found " + Describe(x));
    const std::vector<int64_t> rhs = ReadIntList("in dot_general's dims", st->op->loc);
    st->dot_numbers.emplace_back(batching ? "lhs_batching_dimensions" : "lhs_contracting_dimensions", IntArray(lhs));
    st->dot_numbers.emplace_back(batching ? "rhs_batching_dimensions" : "rhs_contracting_dimensions", IntArray(rhs));
    return true;
  }
  if (op == OpSyntax::kConvolution && key == "dim_numbers") {
    Attribute a;
    a.kind = Attribute::Kind::kOpaque;
    a.loc = loc;
    a.dict = ParseConvLayout(loc);
    st->lists->attributes->emplace_back("dimension_numbers", a);
    return true;
  }
  if (op == OpSyntax::kConvolution && key == "window") {
    const Attribute w = ParseAttribute(depth + 1);
    if (w.kind != Attribute::Kind::kDict) Fail(loc, "expected the convolution's window {stride = [...], ...}");
    for (const auto& [k, v] : w.dict) {
      const std::string_view name = k == "stride"       ? "window_strides"
                                    : k == "lhs_dilate" ? "lhs_dilation"
                                    : k == "rhs_dilate" ? "rhs_dilation"
                                    : k == "reverse"    ? "window_reversal"
                                    : k == "pad"        ? "padding"
                                                        : "";
      if (name.empty()) Fail(v.loc, "unknown convolution window attribute '" + std::string(k) + "'");
      if (v.kind != Attribute::Kind::kArray) Fail(v.loc, "the window's " + std::string(k) + " must be a list");
      if (k != "pad") {
        st->lists->attributes->emplace_back(name, v);
        continue;
      }
      std::vector<int64_t> flat;  // [[lo, hi], ...] -> lo, hi, ... (the generic form's Nx2 tensor)
      for (const Attribute& pair : v.array) {
        if (pair.kind != Attribute::Kind::kArray || pair.array.size() != 2 ||
            pair.array[0].kind != Attribute::Kind::kInt || pair.array[1].kind != Attribute::Kind::kInt)
          Fail(v.loc, "each pad entry must be [low, high]");
        flat.push_back(pair.array[0].i);
        flat.push_back(pair.array[1].i);
      }
      st->lists->attributes->emplace_back(name, IntArray(flat));
    }
    return true;
  }
  if (op == OpSyntax::kReducePrecision && key == "format") {
    const Token f = lex_.Next();  // e5m10
    const std::string_view s = f.text;
    const size_t m = s.find('m');
    int64_t e = -1, mant = -1;
    if (f.kind != Tok::kIdent || s.size() < 4 || s[0] != 'e' || m == std::string_view::npos ||
        !ParseDecimal(s.substr(1, m - 1), &e) || !ParseDecimal(s.substr(m + 1), &mant))
      Fail(f.loc, "malformed format " + Describe(f) + " (expected eNmM, as e5m10)");
    st->lists->attributes->emplace_back("exponent_bits", IntAttr(e, f.loc));
    st->lists->attributes->emplace_back("mantissa_bits", IntAttr(mant, f.loc));
    return true;
  }
  if (op == OpSyntax::kRngBitGenerator && key == "algorithm") {
    st->lists->attributes->emplace_back("rng_algorithm", ParseAttribute(depth + 1));
    return true;
  }
  return false;
}

bool Parser::OpWord(PrettyState* st, std::string_view word) {
  const OpSyntax op = st->syntax;
  if (op != OpSyntax::kReduce && op != OpSyntax::kScan) return false;
  if (st->expect_applies) {
    st->applies = word;
    st->expect_applies = false;
    return true;
  }
  if (op == OpSyntax::kReduce && word == "applies" && st->applies.empty()) {
    st->expect_applies = true;
    return true;
  }
  if (op == OpSyntax::kScan && word == "inits" && st->scan_inputs == SIZE_MAX) {
    st->scan_inputs = st->lists->operands->size();
    return true;
  }
  return false;
}

bool Parser::OpBracket(PrettyState* st, int /*depth*/) {
  const OpSyntax op = st->syntax;
  if (op != OpSyntax::kSlice && op != OpSyntax::kGetTupleElement) return false;
  const auto read_int = [&](const char* what) {
    const Token n = lex_.Next();
    int64_t v = 0;
    if (n.kind != Tok::kNumber || !ParseDecimal(n.text, &v))
      Fail(n.loc, std::string("expected an integer ") + what + ", found " + Describe(n));
    return v;
  };
  if (op == OpSyntax::kSlice) {  // [start:limit(:stride)?, ...]
    const Token open = lex_.Next();
    std::vector<int64_t> start, limit, stride;
    if (!Accept("]")) {
      do {
        start.push_back(read_int("in the slice bounds"));
        Expect(":", "in the slice bounds start:limit");
        limit.push_back(read_int("in the slice bounds"));
        stride.push_back(Accept(":") ? read_int("in the slice bounds") : 1);
      } while (Accept(","));
      Expect("]", "to close the slice bounds");
    }
    for (auto [key, v] : {std::pair<const char*, const std::vector<int64_t>*>{"start_indices", &start},
                          {"limit_indices", &limit},
                          {"strides", &stride}}) {
      Attribute a = IntArray(*v);
      a.loc = open.loc;
      st->lists->attributes->emplace_back(key, a);
    }
    return true;
  }
  if (op == OpSyntax::kGetTupleElement) {  // %t[1]
    const Token open = lex_.Next();
    const int64_t index = read_int("as the tuple index");
    Expect("]", "to close the tuple index");
    st->lists->attributes->emplace_back("index", IntAttr(index, open.loc));
    return true;
  }
  return false;
}

void Parser::FinishPrettyOp(PrettyState* st) {
  Operation* op = st->op;
  std::vector<NamedAttr>& attrs = *st->lists->attributes;
  if (st->syntax == OpSyntax::kCompare && !st->first_keyword.empty()) {  // `compare EQ, %a, %b, FLOAT`
    Attribute dir;
    dir.kind = Attribute::Kind::kEnum;
    dir.str = st->first_keyword;
    dir.loc = op->loc;
    attrs.emplace_back("comparison_direction", dir);
    if (st->last_keyword.data() != st->first_keyword.data()) {
      Attribute ct = dir;
      ct.str = st->last_keyword;
      attrs.emplace_back("compare_type", ct);
    }
  }
  if (!st->dot_numbers.empty()) {
    Attribute d;
    d.kind = Attribute::Kind::kOpaque;
    d.loc = op->loc;
    d.dict = arena_->Copy(st->dot_numbers);
    attrs.emplace_back("dot_dimension_numbers", d);
  }
  if (st->syntax == OpSyntax::kScan && st->scan_inputs != SIZE_MAX) {
    const int64_t n = static_cast<int64_t>(st->scan_inputs);
    attrs.emplace_back("operandSegmentSizes", IntArray({n, static_cast<int64_t>(st->lists->operands->size()) - n}));
  }
  if (st->syntax == OpSyntax::kReduce) PairsToCanonical(&*st->lists->operands);
  if (!st->signature_done && st->typed_attr != SIZE_MAX) {
    // `dim = 0 : tensor<4xi32>`: the attribute's ": type" is the op's signature.
    Attribute& a = attrs[st->typed_attr].second;
    const Type t = a.type;
    const bool fits = t.kind == Type::Kind::kFunction
                          ? t.elements.size() - t.num_inputs == op->num_results
                          : (t.kind == Type::Kind::kTensor || t.kind == Type::Kind::kScalar) && op->num_results == 1;
    if (fits) {
      a.type = Type();
      ApplySignature(op, st->lists->operands->size(), t);
    }
  }
  Finish(op, st->lists);
  if (op->result_types.empty() && op->num_results == 1) {
    // `stablehlo.constant dense<1> : tensor<i32>`: the type is the value's.
    const Attribute* v = Find(op->attributes, "value");
    if (v && v->kind == Attribute::Kind::kDense) op->result_types = Span<Type>(&v->type, 1);
  }
  if (!st->applies.empty() && op->regions.empty() && op->num_results == 1 && op->result_types.size() == 1) {
    // `applies stablehlo.add`: the region (%lhs: T, %rhs: T) { %r = stablehlo.add %lhs, %rhs; return %r }, T
    // the 0-d tensor of the result's element type.
    Type scalar = op->result_types[0];
    scalar.kind = Type::Kind::kTensor;
    scalar.dims = Dims();
    scalar.elements = Span<Type>();
    scalar.text = std::string_view();
    Argument args[2];
    ValueRef refs[2];
    const std::string_view names[2] = {"applies.lhs", "applies.rhs"};
    for (int i = 0; i < 2; ++i) {
      args[i].name = refs[i].name = names[i];
      args[i].type = scalar;
      args[i].loc = refs[i].loc = op->loc;
    }
    Operation ops[2];
    ops[0].name = st->applies;
    ops[0].num_results = 1;
    ops[0].result_name = "applies.result";
    ops[0].operands = arena_->Copy(refs, 2);
    ops[0].operand_types = Repeat(scalar, 2);
    ops[0].result_types = Repeat(scalar, 1);
    ops[0].loc = op->loc;
    ValueRef result;
    result.name = ops[0].result_name;
    result.loc = op->loc;
    ops[1].name = "stablehlo.return";
    ops[1].operands = arena_->Copy(&result, 1);
    ops[1].operand_types = Repeat(scalar, 1);
    ops[1].loc = op->loc;
    Block block;
    block.args = arena_->Copy(args, 2);
    block.ops = arena_->Copy(ops, 2);
    Region region;
    region.blocks = arena_->Copy(&block, 1);
    op->regions = arena_->Copy(&region, 1);
  }
}

}  // namespace neuronmem::stablehlo::parse
