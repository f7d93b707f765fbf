// The StableHLO text parser: a lexer over the source (tokens are views into it) and a recursive-descent
// parser. Pretty-printed ops are parsed generically: results, name, then the op's tail up to the end of
// its line at nesting depth 0 (regions and attribute dictionaries may span lines), collecting operands,
// the callee symbol, named attributes, regions and the trailing type signature. That covers every op of
// every dialect without a grammar per op; generic-form ops are parsed exactly.
#include "stablehlo/parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace neuronmem::stablehlo {

// ---- IR helpers -------------------------------------------------------------------------------------

Arena::~Arena() {
  for (char* b : blocks_) std::free(b);
}

void* Arena::Allocate(size_t bytes, size_t align) {
  const size_t pad = (align - (reinterpret_cast<uintptr_t>(cur_) & (align - 1))) & (align - 1);
  if (cur_ && pad + bytes <= left_) {
    char* p = cur_ + pad;
    cur_ += pad + bytes;
    left_ -= pad + bytes;
    return p;
  }
  const size_t rounded = (bytes + 63) & ~size_t{63};
  if (rounded < bytes) throw std::bad_alloc();
  if (rounded > next_block_ / 4) {  // a large array (or the source text): a block of its own
    char* b = static_cast<char*>(std::aligned_alloc(64, rounded));
    if (!b) throw std::bad_alloc();
    blocks_.push_back(b);
    reserved_ += rounded;
    return b;
  }
  char* b = static_cast<char*>(std::aligned_alloc(64, next_block_));
  if (!b) throw std::bad_alloc();
  blocks_.push_back(b);
  reserved_ += next_block_;
  cur_ = b + bytes;
  left_ = next_block_ - bytes;
  next_block_ = std::min<size_t>(next_block_ * 2, 1u << 20);
  return b;
}

std::string_view Arena::CopyString(std::string_view s) {
  if (s.empty()) return {};
  char* p = static_cast<char*>(Allocate(s.size(), 1));
  std::memcpy(p, s.data(), s.size());
  return std::string_view(p, s.size());
}

std::string TypeToString(const Type& t) {
  if (!t.text.empty()) return std::string(t.text);
  if (t.kind == Type::Kind::kScalar) return std::string(ElementTypeName(t.element));
  if (t.kind != Type::Kind::kTensor) return "?";
  std::string s = "tensor<";
  for (int64_t d : t.dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s.append(ElementTypeName(t.element)) + ">";
}

const Attribute* Find(const NamedAttrs& attrs, std::string_view key) {
  for (const auto& kv : attrs) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}

const Attribute* Attribute::Get(std::string_view key) const { return Find(dict, key); }

const Function* Module::FindFunction(std::string_view fname) const {
  for (const Function& f : functions) {
    if (f.name == fname) return &f;
  }
  return nullptr;
}

namespace {

// ---- Errors -----------------------------------------------------------------------------------------

struct ParseError {
  Location loc;
  std::string message;
};

[[noreturn]] void Fail(Location loc, std::string message) { throw ParseError{loc, std::move(message)}; }

// ---- Lexer ------------------------------------------------------------------------------------------

enum class Tok {
  kEof,
  kSplit,    // "// -----"
  kValue,    // %name or %name#3
  kCaret,    // ^bb0
  kSymbol,   // @name or @"quoted"
  kHash,     // #name or #dialect.name
  kBang,     // !dialect.type
  kIdent,    // bare identifier, may contain '.', '$', '-' (not leading)
  kNumber,   // 12, -3, 1.5e-3, 0x7FC00000, inf, nan handled as ident
  kString,   // "..." (text keeps the quotes)
  kPunct,    // ( ) [ ] { } < > , : = * ? + and "->"
};

struct Token {
  Tok kind = Tok::kEof;
  std::string_view text;
  size_t offset = 0;
  Location loc;
  bool newline_before = false;
};

// Character classes by table (the <cctype> calls were a tenth of the parse time).
enum : uint8_t { kAlpha = 1, kDigit = 2, kSpace = 4, kIdentExtra = 8, kPunctChar = 16 };
struct CharTable {
  uint8_t c[256] = {};
  constexpr CharTable() {
    for (int i = 'a'; i <= 'z'; ++i) c[i] |= kAlpha;
    for (int i = 'A'; i <= 'Z'; ++i) c[i] |= kAlpha;
    for (int i = '0'; i <= '9'; ++i) c[i] |= kDigit;
    c[static_cast<int>(' ')] = c[static_cast<int>('\t')] = c[static_cast<int>('\n')] = c[static_cast<int>('\r')] = kSpace;
    c[static_cast<int>('\v')] = c[static_cast<int>('\f')] = kSpace;
    c[static_cast<int>('_')] |= kAlpha;
    c[static_cast<int>('.')] |= kIdentExtra;
    c[static_cast<int>('$')] |= kIdentExtra;
    c[static_cast<int>('-')] |= kIdentExtra;
    for (const char* q = "()[]{}<>,:=*?+-|"; *q; ++q) c[static_cast<unsigned char>(*q)] |= kPunctChar;
  }
};
constexpr CharTable kChars;
inline uint8_t Class(char ch) { return kChars.c[static_cast<unsigned char>(ch)]; }
inline bool IsSpace(char ch) { return Class(ch) & kSpace; }
inline bool IsDigit(char ch) { return Class(ch) & kDigit; }
inline bool IsAlnum(char ch) { return Class(ch) & (kAlpha | kDigit); }
inline bool IsIdentStart(char c) { return Class(c) & kAlpha; }
inline bool IsIdentChar(char c) { return Class(c) & (kAlpha | kDigit | kIdentExtra); }
inline bool IsSuffixChar(char c) { return Class(c) & (kAlpha | kDigit | kIdentExtra); }
inline bool IsPunctChar(char c) { return Class(c) & kPunctChar; }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  const Token& Peek() {
    if (!has_peek_) {
      peek_ = Lex();
      has_peek_ = true;
    }
    return peek_;
  }
  Token Next() {
    Peek();
    has_peek_ = false;
    return peek_;
  }
  // Continues lexing at `offset` (after the parser consumed raw text itself).
  void Reset(size_t offset) {
    // Jump forward, counting the newlines skipped (usually none: raw spans are inside one type).
    while (pos_ < offset) {
      const void* nl = std::memchr(src_.data() + pos_, '\n', offset - pos_);
      if (!nl) {
        pos_ = offset;
        break;
      }
      pos_ = static_cast<size_t>(static_cast<const char*>(nl) - src_.data());
      Advance();
    }
    has_peek_ = false;
  }
  std::string_view src() const { return src_; }

 private:
  // Columns are computed from the start of the line, so only newlines need work here.
  void Advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      line_start_ = pos_ + 1;
    }
    ++pos_;
  }
  // For characters known not to be newlines (identifier, number and punctuation bytes).
  void Step() { ++pos_; }
  uint32_t Column() const { return static_cast<uint32_t>(pos_ - line_start_ + 1); }

  // The hot loop of the parser: every scan below works on a local cursor (`p`) and writes pos_ back once,
  // so the compiler keeps it in a register (a member size_t could alias src_'s size and force reloads).
  Token Lex() {
    bool newline = false;
    const char* const data = src_.data();
    const size_t size = src_.size();
    size_t p = pos_;
    for (;;) {
      while (p < size && IsSpace(data[p])) {
        if (data[p] == '\n') {
          newline = true;
          ++line_;
          line_start_ = p + 1;
        }
        ++p;
      }
      if (p + 1 < size && data[p] == '/' && data[p + 1] == '/') {
        const size_t start = p;
        const void* nl = std::memchr(data + p, '\n', size - p);
        p = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : size;
        std::string_view comment = src_.substr(start, p - start);
        if (comment.rfind("// -----", 0) == 0) {
          pos_ = p;
          Token t;
          t.kind = Tok::kSplit;
          t.text = comment;
          t.offset = start;
          t.newline_before = true;
          return t;
        }
        continue;
      }
      break;
    }
    pos_ = p;
    Token t;
    t.offset = p;
    t.loc = Location{line_, Column()};
    t.newline_before = newline;
    if (p >= size) {
      t.kind = Tok::kEof;
      return t;
    }
    const size_t start = p;
    const char c = data[p];
    auto take_suffix = [&] {
      if (p < size && data[p] == '"') {
        pos_ = p;
        TakeString(t.loc);
        p = pos_;
      } else {
        while (p < size && IsSuffixChar(data[p])) ++p;
      }
    };
    if (c == '%') {
      ++p;
      take_suffix();
      if (p + 1 < size && data[p] == '#' && IsDigit(data[p + 1])) {
        ++p;
        while (p < size && IsDigit(data[p])) ++p;
      }
      t.kind = Tok::kValue;
    } else if (c == '^' || c == '@' || c == '#' || c == '!') {
      ++p;
      take_suffix();
      t.kind = c == '^' ? Tok::kCaret : c == '@' ? Tok::kSymbol : c == '#' ? Tok::kHash : Tok::kBang;
    } else if (c == '"') {
      TakeString(t.loc);
      p = pos_;
      t.kind = Tok::kString;
    } else if (IsDigit(c) || ((c == '-' || c == '+') && p + 1 < size && IsDigit(data[p + 1]))) {
      ++p;
      const bool hex = p + 1 < size && data[start] == '0' && (data[start + 1] == 'x' || data[start + 1] == 'X');
      while (p < size) {
        const char d = data[p];
        if (IsAlnum(d) || d == '.') {
          ++p;
        } else if ((d == '-' || d == '+') && (data[p - 1] == 'e' || data[p - 1] == 'E') && !hex) {
          ++p;
        } else {
          break;
        }
      }
      t.kind = Tok::kNumber;
    } else if (IsIdentStart(c)) {
      ++p;
      while (p < size && IsIdentChar(data[p])) {
        // "->" must not be swallowed: stop before '-' followed by '>'.
        if (data[p] == '-' && p + 1 < size && data[p + 1] == '>') break;
        ++p;
      }
      t.kind = Tok::kIdent;
    } else if (c == '-' && p + 1 < size && data[p + 1] == '>') {
      p += 2;
      t.kind = Tok::kPunct;
    } else if (IsPunctChar(c)) {
      ++p;
      t.kind = Tok::kPunct;
    } else {
      Fail(t.loc, std::string("unexpected character ") +
                      (std::isprint(static_cast<unsigned char>(c)) ? std::string("'") + c + "'"
                                                                   : "0x" + Hex(static_cast<unsigned char>(c))));
    }
    pos_ = p;
    t.text = src_.substr(start, p - start);
    return t;
  }

  static std::string Hex(unsigned v) {
    const char* digits = "0123456789ABCDEF";
    return std::string{digits[v >> 4], digits[v & 15]};
  }

  void TakeString(Location where) {
    Advance();  // opening quote
    while (pos_ < src_.size() && src_[pos_] != '"') {
      if (src_[pos_] == '\\' && pos_ + 1 < src_.size()) Advance();
      if (src_[pos_] == '\n') Fail(where, "unterminated string literal (a string may not span lines)");
      Advance();
    }
    if (pos_ >= src_.size()) Fail(where, "unterminated string literal");
    Advance();  // closing quote
  }

  std::string_view src_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t line_start_ = 0;
  Token peek_;
  bool has_peek_ = false;
};

// Decodes the body of a string literal token ("..." with escapes \\ \" \n \t \XX). Without escapes the
// result is a view into the token (the arena's copy of the source); otherwise it is decoded into the arena.
std::string_view Unquote(const Token& t, Arena* arena) {
  std::string_view body = t.text.substr(1, t.text.size() - 2);
  if (body.find('\\') == std::string_view::npos) return body;
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      out.push_back(body[i]);
      continue;
    }
    if (i + 1 >= body.size()) Fail(t.loc, "bad escape at the end of a string literal");
    const char e = body[i + 1];
    if (e == '\\' || e == '"') {
      out.push_back(e);
      ++i;
    } else if (e == 'n') {
      out.push_back('\n');
      ++i;
    } else if (e == 't') {
      out.push_back('\t');
      ++i;
    } else if (i + 2 < body.size() && std::isxdigit(static_cast<unsigned char>(e)) &&
               std::isxdigit(static_cast<unsigned char>(body[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(body.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      Fail(t.loc, std::string("bad escape '\\") + e + "' in string literal (use \\\\, \\\", \\n, \\t or \\XX)");
    }
  }
  return arena->CopyString(out);
}

// Symbol token text without '@' and quotes.
std::string_view SymbolName(const Token& t, Arena* arena) {
  std::string_view s = t.text.substr(1);
  if (!s.empty() && s[0] == '"') {
    Token q = t;
    q.text = s;
    return Unquote(q, arena);
  }
  return s;
}

// ---- Types ------------------------------------------------------------------------------------------

ElementType ParseElementType(std::string_view s) { return ParseElementTypeName(s); }

// Parses `!quant.uniform<...>` (the whole type text) into a QuantType in the arena; `element` gets the
// storage type. Per-tensor: `<i8:f32, 0.5:-3>`; per-axis: `<i8:f32:1, {0.5:-3, 0.25}>`; a storage range:
// `<i8<-127:127>:f32, ...>`; a missing zero point is 0.
const QuantType* ParseQuantType(std::string_view text, Location loc, Arena* arena) {
  const std::string whole(text);
  auto bad = [&](const std::string& why) -> const QuantType* {
    Fail(loc, "malformed quantized type '" + whole + "': " + why);
    return nullptr;
  };
  constexpr std::string_view kPrefix = "!quant.uniform<";
  if (text.substr(0, kPrefix.size()) != kPrefix) {
    Fail(loc, "unsupported quantized type '" + whole + "' (only !quant.uniform is supported)");
  }
  if (text.back() != '>') return bad("no closing '>'");
  std::string_view s = text.substr(kPrefix.size(), text.size() - kPrefix.size() - 1);
  auto trim = [](std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
  };
  auto to_int = [&](std::string_view v, int64_t* out) {
    v = trim(v);
    const std::string str(v);
    char* end = nullptr;
    errno = 0;
    *out = std::strtoll(str.c_str(), &end, 10);
    if (str.empty() || errno == ERANGE || *end) bad("'" + str + "' is not an integer");
  };
  auto to_double = [&](std::string_view v) {
    v = trim(v);
    const std::string str(v);
    char* end = nullptr;
    const double d = std::strtod(str.c_str(), &end);
    if (str.empty() || *end) bad("'" + str + "' is not a number");
    return d;
  };
  QuantType q;
  // storage type, up to ':' or '<'
  size_t i = 0;
  while (i < s.size() && s[i] != ':' && s[i] != '<') ++i;
  std::string_view storage = trim(s.substr(0, i));
  if (storage.size() > 1 && storage[0] == 'u' && storage[1] != 'i') {
    q.storage = ParseElementTypeName("ui" + std::string(storage.substr(1)));  // the quant dialect's "u8"
  } else {
    q.storage = ParseElementTypeName(storage);
  }
  if (!IsInteger(q.storage) && !IsFloat(q.storage)) return bad("storage type '" + std::string(storage) + "'");
  const uint32_t bits = neuronmem::ElementInfo(q.storage).bits;
  if (IsSignedInt(q.storage)) {
    q.storage_min = bits >= 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
    q.storage_max = bits >= 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
  } else if (IsUnsignedInt(q.storage)) {
    q.storage_min = 0;
    q.storage_max = bits >= 63 ? INT64_MAX : (int64_t{1} << bits) - 1;
  }
  if (i < s.size() && s[i] == '<') {
    const size_t close = s.find('>', i);
    if (close == std::string_view::npos) return bad("unclosed storage range");
    const std::string_view range = s.substr(i + 1, close - i - 1);
    const size_t colon = range.find(':', range[0] == '-' ? 1 : 0);
    if (colon == std::string_view::npos) return bad("storage range needs min:max");
    to_int(range.substr(0, colon), &q.storage_min);
    to_int(range.substr(colon + 1), &q.storage_max);
    if (q.storage_min > q.storage_max) return bad("storage range min > max");
    i = close + 1;
  }
  if (i >= s.size() || s[i] != ':') return bad("expected ':' after the storage type");
  ++i;
  // expressed type, then an optional ':axis', then ',' and the scales
  const size_t comma = s.find(',', i);
  if (comma == std::string_view::npos) return bad("expected ',' before the scale");
  std::string_view expressed = trim(s.substr(i, comma - i));
  if (const size_t c = expressed.find(':'); c != std::string_view::npos) {
    const std::string_view axis = trim(expressed.substr(c + 1));
    if (!axis.empty() && axis[0] == '{') return bad("sub-channel (block) quantization is not supported");
    int64_t a = 0;
    to_int(axis, &a);
    if (a < 0 || a > 64) return bad("quantized dimension out of range");
    q.axis = static_cast<int32_t>(a);
    expressed = trim(expressed.substr(0, c));
  }
  q.expressed = ParseElementTypeName(expressed);
  if (!IsFloat(q.expressed)) return bad("expressed type '" + std::string(expressed) + "' is not a float type");
  std::string_view params = trim(s.substr(comma + 1));
  std::vector<double> scales;
  std::vector<int64_t> zps;
  auto one = [&](std::string_view p) {
    p = trim(p);
    // scale[:zero_point]; the scale may be negative or have an exponent, so split at the last ':'
    const size_t c = p.rfind(':');
    int64_t zp = 0;
    if (c != std::string_view::npos) {
      to_int(p.substr(c + 1), &zp);
      p = p.substr(0, c);
    }
    scales.push_back(to_double(p));
    zps.push_back(zp);
  };
  if (q.axis >= 0) {
    if (params.size() < 2 || params.front() != '{' || params.back() != '}') return bad("per-axis scales need {...}");
    params = params.substr(1, params.size() - 2);
    size_t start = 0;
    for (size_t k = 0; k <= params.size(); ++k) {
      if (k == params.size() || params[k] == ',') {
        one(params.substr(start, k - start));
        start = k + 1;
      }
    }
  } else {
    one(params);
  }
  q.scales = arena->Copy(scales);
  q.zero_points = arena->Copy(zps);
  auto* out = static_cast<QuantType*>(arena->Allocate(sizeof(QuantType), alignof(QuantType)));
  return new (out) QuantType(q);
}

// Parses the inside of tensor<...>: "2x3xf32", "f32", "?x4xi8", "2x3xf32, #encoding".
void ParseTensorBody(std::string_view body, Location loc, Type* t, Arena* arena) {
  int64_t dims[16];  // ranks above 16 continue in `more`
  size_t rank = 0;
  std::vector<int64_t> more;
  auto push = [&](int64_t d) {
    if (rank < 16) dims[rank] = d;
    else more.push_back(d);
    ++rank;
  };
  t->kind = Type::Kind::kTensor;
  // Drop an encoding after a top-level comma.
  int depth = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '<' || body[i] == '(' || body[i] == '[' || body[i] == '{') ++depth;
    if (body[i] == '>' || body[i] == ')' || body[i] == ']' || body[i] == '}') --depth;
    if (body[i] == ',' && depth == 0) {
      body = body.substr(0, i);
      break;
    }
  }
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.remove_suffix(1);
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front()))) body.remove_prefix(1);
  size_t i = 0;
  for (;;) {
    size_t j = i;
    if (j < body.size() && body[j] == '?') {
      ++j;
    } else {
      while (j < body.size() && std::isdigit(static_cast<unsigned char>(body[j]))) ++j;
    }
    if (j > i && j < body.size() && body[j] == 'x') {
      if (body[i] == '?') {
        push(-1);
      } else {
        int64_t v = 0;
        for (size_t k = i; k < j; ++k) {
          if (v > ((1ll << 62) - 9) / 10) {  // checked before multiplying: no signed overflow
            Fail(loc, "tensor dimension " + std::string(body.substr(i, j - i)) + " is too large");
          }
          v = v * 10 + (body[k] - '0');
        }
        push(v);
      }
      i = j + 1;
      continue;
    }
    break;
  }
  if (rank <= 16) {
    t->dims = arena->Copy(dims, rank);
  } else {
    more.insert(more.begin(), dims, dims + 16);
    t->dims = arena->Copy(more);
  }
  const std::string_view elem = body.substr(i);
  if (elem.rfind("!quant.", 0) == 0) {
    t->quant = ParseQuantType(elem, loc, arena);
    t->element = t->quant->storage;
    return;
  }
  t->element = ParseElementType(elem);
  if (t->element == ElementType::kInvalid) {
    Fail(loc, "unknown tensor element type '" + std::string(elem) + "' in tensor<" + std::string(body) + ">");
  }
}

// ---- Parser -----------------------------------------------------------------------------------------

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
  std::vector<uint8_t> dense;
};

class Parser {
 public:
  Parser(std::string_view src, Arena* arena, Scratch* scratch)
      : lex_(src), src_(src), arena_(arena), scratch_(scratch) {}

  void ParseAll(std::vector<Module>* out) {
    Module current;
    bool has_content = false;
    for (;;) {
      const Token& t = lex_.Peek();
      if (t.kind == Tok::kEof) break;
      if (t.kind == Tok::kSplit) {
        lex_.Next();
        if (has_content) out->push_back(std::move(current));
        current = Module();
        has_content = false;
        continue;
      }
      if (t.kind == Tok::kHash) {  // #alias = attribute
        lex_.Next();
        Expect("=", "after an attribute alias name");
        ParseAttribute(0);
        continue;
      }
      if (t.kind == Tok::kIdent && t.text == "module") {
        if (has_content && (!current.functions.empty() || !current.other_ops.empty())) {
          out->push_back(std::move(current));
          current = Module();
        }
        ParseModule(&current);
        out->push_back(std::move(current));
        current = Module();
        has_content = false;
        continue;
      }
      ParseModuleItem(&current, 0);
      has_content = true;
    }
    if (has_content) out->push_back(std::move(current));
  }

 private:
  // -- token helpers --
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
    if (!IsPunct(t, p)) {
      Fail(t.loc, "expected '" + std::string(p) + "' " + context + ", found " + Describe(t));
    }
    return lex_.Next();
  }
  static std::string Describe(const Token& t) {
    if (t.kind == Tok::kEof) return "the end of the input";
    std::string s(t.text.substr(0, 40));
    return "'" + s + "'";
  }
  void CheckDepth(int depth, Location loc) {
    if (depth > kMaxDepth) Fail(loc, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  // The source text from token `t` up to the next token, without trailing blanks.
  std::string_view TextFrom(const Token& t) {
    const Token& next = lex_.Peek();
    const size_t end = next.kind == Tok::kEof ? src_.size() : next.offset;
    return TrimRight(src_.substr(t.offset, end - t.offset));
  }
  // n copies of `t` in the arena (ops whose signature is one type for all operands and results).
  Span<Type> Repeat(const Type& t, size_t n) {
    if (n == 0) return {};
    Type* out = static_cast<Type*>(arena_->Allocate(n * sizeof(Type), alignof(Type)));
    std::uninitialized_fill(out, out + n, t);
    return Span<Type>(out, n);
  }

  // Skips a balanced group starting at the current '(' '[' '{' or '<' token.
  void SkipBalanced(int depth) {
    const Token open = lex_.Next();
    CheckDepth(depth, open.loc);
    const char o = open.text[0];
    const char c = o == '(' ? ')' : o == '[' ? ']' : o == '{' ? '}' : '>';
    for (;;) {
      const Token& t = lex_.Peek();
      if (t.kind == Tok::kEof) Fail(open.loc, std::string("unbalanced '") + o + "': no matching '" + c + "'");
      if (t.kind == Tok::kPunct && t.text.size() == 1 && std::strchr("([{<", t.text[0])) {
        SkipBalanced(depth + 1);
        continue;
      }
      lex_.Next();
      if (t.kind == Tok::kPunct && t.text.size() == 1 && t.text[0] == c) return;
      if (t.kind == Tok::kPunct && t.text.size() == 1 && std::strchr(")]}>", t.text[0])) {
        Fail(t.loc, std::string("mismatched '") + t.text[0] + "': expected '" + c + "' to close the '" + o +
                        "' opened at " + std::to_string(open.loc.line) + ":" + std::to_string(open.loc.column));
      }
    }
  }

  void SkipLocation(int depth) {
    if (PeekIdent("loc")) {
      lex_.Next();
      if (!PeekPunct("(")) Fail(lex_.Peek().loc, "expected '(' after 'loc'");
      SkipBalanced(depth + 1);
    }
  }

  // Raw text from the current position to the '>' matching an already-consumed '<' at `open`.
  std::string_view RawAngle(const Token& open) {
    std::string_view s = src_;
    size_t i = open.offset + 1;
    int depth = 1;
    bool in_string = false;
    for (; i < s.size(); ++i) {
      const char ch = s[i];
      if (in_string) {
        if (ch == '\\') ++i;
        else if (ch == '"') in_string = false;
        continue;
      }
      if (ch == '"') in_string = true;
      else if (ch == '<') ++depth;
      else if (ch == '>' && s[i - 1] != '-') {
        if (--depth == 0) break;
      }
    }
    if (i >= s.size()) Fail(open.loc, "unbalanced '<': no matching '>'");
    std::string_view body = s.substr(open.offset + 1, i - open.offset - 1);
    lex_.Reset(i + 1);
    return body;
  }

  // -- types --
  Type ParseType(int depth) {
    const Token t = lex_.Next();
    CheckDepth(depth, t.loc);
    Type type;
    if (t.kind == Tok::kIdent && (t.text == "tensor" || t.text == "tuple" || t.text == "complex" ||
                                  t.text == "memref" || t.text == "vector")) {
      const Token open = Expect("<", "after a type name");
      if (t.text == "tuple") {
        type.kind = Type::Kind::kTuple;
        if (!Accept(">")) {
          auto elements = scratch_->types.Get();
          do {
            elements->push_back(ParseType(depth + 1));
          } while (Accept(","));
          Expect(">", "to close tuple<");
          type.elements = arena_->Copy(*elements);
        }
      } else {
        std::string_view body = RawAngle(open);
        if (t.text == "tensor") {
          ParseTensorBody(body, t.loc, &type, arena_);
        } else if (t.text == "complex") {
          type.kind = Type::Kind::kScalar;
          type.element = ParseElementType("complex<" + std::string(body) + ">");
        } else {
          type.kind = Type::Kind::kOther;
        }
      }
    } else if (t.kind == Tok::kBang) {
      type.kind = t.text.find("token") != std::string_view::npos ? Type::Kind::kToken : Type::Kind::kOther;
      if (PeekPunct("<")) {
        const Token open = lex_.Next();
        RawAngle(open);
      }
      if (t.text.rfind("!quant.", 0) == 0) {
        type.kind = Type::Kind::kScalar;
        type.quant = ParseQuantType(TextFrom(t), t.loc, arena_);
        type.element = type.quant->storage;
      }
    } else if (IsPunct(t, "(")) {
      type.kind = Type::Kind::kFunction;
      auto elements = scratch_->types.Get();
      if (!Accept(")")) {
        do {
          elements->push_back(ParseType(depth + 1));
        } while (Accept(","));
        Expect(")", "to close a function type's inputs");
      }
      type.num_inputs = elements->size();
      Expect("->", "in a function type");
      if (Accept("(")) {
        if (!Accept(")")) {
          do {
            elements->push_back(ParseType(depth + 1));
          } while (Accept(","));
          Expect(")", "to close a function type's results");
        }
      } else {
        elements->push_back(ParseType(depth + 1));
      }
      type.elements = arena_->Copy(*elements);
    } else if (t.kind == Tok::kIdent) {
      type.kind = Type::Kind::kScalar;
      type.element = ParseElementType(t.text);
      if (type.element == ElementType::kInvalid) {
        if (t.text == "none") type.kind = Type::Kind::kOther;
        else Fail(t.loc, "expected a type, found '" + std::string(t.text) + "'");
      }
    } else {
      Fail(t.loc, "expected a type, found " + Describe(t));
    }
    // Tensors and scalars are fully described by element and dims (TypeToString rebuilds their text);
    // other types keep their source text.
    if ((type.kind != Type::Kind::kTensor && type.kind != Type::Kind::kScalar) ||
        type.element == ElementType::kOther || type.element == ElementType::kInvalid || type.quant) {
      type.text = TextFrom(t);
    }
    return type;
  }

  static std::string_view TrimRight(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  }

  // -- attributes --
  Attribute ParseAttribute(int depth) {
    const Token t = lex_.Peek();
    CheckDepth(depth, t.loc);
    Attribute a;
    a.loc = t.loc;
    if (t.kind == Tok::kString) {
      lex_.Next();
      a.kind = Attribute::Kind::kString;
      a.str = Unquote(t, arena_);
      if (Accept(":")) a.type = ParseType(depth + 1);
    } else if (t.kind == Tok::kNumber) {
      lex_.Next();
      std::string num(t.text);
      const bool is_float = num.find_first_of(".eE") != std::string::npos &&
                            !(num.size() > 2 && (num[1] == 'x' || num[1] == 'X' || num[2] == 'x'));
      if (is_float) {
        a.kind = Attribute::Kind::kFloat;
        a.f = std::strtod(num.c_str(), nullptr);
      } else {
        a.kind = Attribute::Kind::kInt;
        errno = 0;
        a.i = std::strtoll(num.c_str(), nullptr, 0);
        if (errno == ERANGE) {
          errno = 0;
          a.i = static_cast<int64_t>(std::strtoull(num.c_str(), nullptr, 0));
          if (errno == ERANGE) Fail(t.loc, "integer literal " + num + " does not fit in 64 bits");
        }
      }
      if (Accept(":")) a.type = ParseType(depth + 1);
    } else if (t.kind == Tok::kIdent && (t.text == "true" || t.text == "false")) {
      lex_.Next();
      a.kind = Attribute::Kind::kBool;
      a.b = t.text == "true";
    } else if (t.kind == Tok::kIdent && (t.text == "dense" || t.text == "dense_resource" || t.text == "sparse")) {
      lex_.Next();
      const Token open = Expect("<", "after 'dense'");
      std::string_view body = RawAngle(open);
      a.kind = Attribute::Kind::kDense;
      if (Accept(":")) {
        a.type = ParseType(depth + 1);
        if (t.text == "dense") {
          if (Status s = DecodeDense(body, a.type, &scratch_->dense, &a.splat)) Fail(open.loc, s->message);
          a.dense = arena_->Copy(scratch_->dense);
        }
      }
    } else if (t.kind == Tok::kIdent && t.text == "array") {
      lex_.Next();
      const Token open = Expect("<", "after 'array'");
      std::string_view body = RawAngle(open);
      a.kind = Attribute::Kind::kArray;
      const size_t colon = body.find(':');
      if (colon != std::string_view::npos) {
        auto elements = scratch_->attrs.Get();
        std::string_view rest = body.substr(colon + 1);
        std::string item;  // NUL-terminated copy for strtoll/strtod
        while (!rest.empty()) {
          const size_t comma = rest.find(',');
          std::string_view piece = rest.substr(0, comma);
          rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
          while (!piece.empty() && IsSpace(piece.front())) piece.remove_prefix(1);
          piece = TrimRight(piece);
          if (piece.empty()) continue;
          item.assign(piece);
          Attribute e;
          e.kind = Attribute::Kind::kInt;
          e.i = std::strtoll(item.c_str(), nullptr, 10);
          if (item.find_first_of(".eE") != std::string::npos) {
            e.kind = Attribute::Kind::kFloat;
            e.f = std::strtod(item.c_str(), nullptr);
          }
          if (item == "true") {
            e.kind = Attribute::Kind::kBool;
            e.b = true;
          } else if (item == "false") {
            e.kind = Attribute::Kind::kBool;
          }
          elements->push_back(e);
        }
        a.array = arena_->Copy(*elements);
      }
    } else if (IsPunct(t, "[")) {
      lex_.Next();
      a.kind = Attribute::Kind::kArray;
      if (!Accept("]")) {
        auto elements = scratch_->attrs.Get();
        do {
          elements->push_back(ParseAttribute(depth + 1));
        } while (Accept(","));
        Expect("]", "to close an array attribute");
        a.array = arena_->Copy(*elements);
      }
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
      lex_.Next();
      a.kind = Attribute::Kind::kOpaque;
      if (PeekPunct("<")) {
        const Token open = lex_.Next();
        std::string_view body = RawAngle(open);
        a.dict = ParseKeyValues(body, depth + 1);
      }
    } else if (t.kind == Tok::kIdent && t.text == "loc") {
      SkipLocation(depth);
      a.kind = Attribute::Kind::kOpaque;
    } else if (t.kind == Tok::kIdent && t.text == "unit") {
      lex_.Next();
      a.kind = Attribute::Kind::kUnit;
    } else if (t.kind == Tok::kIdent || t.kind == Tok::kBang || IsPunct(t, "(")) {
      // A type used as an attribute (function_type = (...) -> ..., or i32), or an enum keyword.
      if (t.kind == Tok::kIdent && ParseElementType(t.text) == ElementType::kInvalid && t.text != "tensor" &&
          t.text != "tuple" && t.text != "complex" && t.text != "none" && t.text != "memref" && t.text != "vector") {
        lex_.Next();
        a.kind = Attribute::Kind::kOpaque;
        if (PeekPunct("<")) {
          const Token open = lex_.Next();
          RawAngle(open);
        }
      } else {
        a.kind = Attribute::Kind::kType;
        a.type = ParseType(depth + 1);
      }
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

  // Parses "k = v, k2 = v2" inside a dialect attribute; empty if the body has another shape. The body is a
  // view into the arena's source, so the values' views stay valid.
  NamedAttrs ParseKeyValues(std::string_view body, int depth) {
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

  // Appends the entries of "{k = v, ...}" to `out`.
  void ParseAttrDictInto(int depth, std::vector<NamedAttr>* out) {
    const Token open = Expect("{", "to open an attribute dictionary");
    CheckDepth(depth, open.loc);
    if (Accept("}")) return;
    for (;;) {
      const Token key = lex_.Next();
      std::string_view name;
      if (key.kind == Tok::kIdent) name = key.text;
      else if (key.kind == Tok::kString) name = Unquote(key, arena_);
      else Fail(key.loc, "expected an attribute name in the dictionary opened at " + std::to_string(open.loc.line) +
                             ":" + std::to_string(open.loc.column) + ", found " + Describe(key));
      if (Accept("=")) {
        Attribute v = ParseAttribute(depth + 1);
        out->emplace_back(name, v);
      } else {
        out->emplace_back(name, Attribute());  // unit attribute
      }
      if (Accept(",")) continue;
      const Token& t = lex_.Peek();
      if (IsPunct(t, "}")) {
        lex_.Next();
        return;
      }
      Fail(t.loc, "expected ',' or '}' in the attribute dictionary opened at " + std::to_string(open.loc.line) + ":" +
                      std::to_string(open.loc.column) + ", found " + Describe(t));
    }
  }

  NamedAttrs ParseAttrDict(int depth) {
    auto attrs = scratch_->named.Get();
    ParseAttrDictInto(depth, &*attrs);
    return arena_->Copy(*attrs);
  }

  // -- modules and functions --
  void ParseModule(Module* m) {
    const Token kw = lex_.Next();  // "module"
    m->loc = kw.loc;
    if (lex_.Peek().kind == Tok::kSymbol) m->name = SymbolName(lex_.Next(), arena_);
    if (PeekIdent("attributes")) {
      lex_.Next();
      m->attributes = ParseAttrDict(1);
    }
    const Token open = Expect("{", "to open the module body");
    for (;;) {
      const Token& t = lex_.Peek();
      if (t.kind == Tok::kEof) Fail(open.loc, "the module body opened here is not closed with '}'");
      if (IsPunct(t, "}")) {
        lex_.Next();
        break;
      }
      ParseModuleItem(m, 1);
    }
    SkipLocation(1);
  }

  void ParseModuleItem(Module* m, int depth) {
    const Token& t = lex_.Peek();
    if (t.kind == Tok::kIdent && t.text == "func.func") {
      m->functions.push_back(ParseFunction(depth + 1));
      return;
    }
    if (t.kind == Tok::kHash) {
      lex_.Next();
      Expect("=", "after an attribute alias name");
      ParseAttribute(depth + 1);
      return;
    }
    if (t.kind == Tok::kIdent && t.text == "module") {  // nested module: flatten its functions
      Module inner;
      ParseModule(&inner);
      for (const Function& f : inner.functions) m->functions.push_back(f);
      return;
    }
    Operation op = ParseOperation(depth + 1);
    if (op.name == "func.func") {
      m->functions.push_back(FunctionFromGeneric(op));
    } else {
      m->other_ops.push_back(op);
    }
  }

  Function ParseFunction(int depth) {
    Function f;
    const Token kw = lex_.Next();
    f.loc = kw.loc;
    f.visibility = "public";
    if (PeekIdent("public") || PeekIdent("private") || PeekIdent("nested")) f.visibility = lex_.Next().text;
    const Token name = lex_.Next();
    if (name.kind != Tok::kSymbol) Fail(name.loc, "expected the function name (@name) after func.func, found " + Describe(name));
    f.name = SymbolName(name, arena_);
    const Token open = Expect("(", "to open the argument list");
    if (!Accept(")")) {
      auto args = scratch_->args.Get();
      for (;;) {
        Argument arg;
        const Token v = lex_.Next();
        if (v.kind != Tok::kValue) Fail(v.loc, "expected an argument (%name) in the list opened at " +
                                                   std::to_string(open.loc.line) + ":" + std::to_string(open.loc.column) +
                                                   ", found " + Describe(v));
        arg.name = v.text.substr(1);
        arg.loc = v.loc;
        Expect(":", "after the argument name");
        arg.type = ParseType(depth + 1);
        if (PeekPunct("{")) arg.attrs = ParseAttrDict(depth + 1);
        SkipLocation(depth);
        args->push_back(arg);
        if (Accept(",")) continue;
        Expect(")", "to close the argument list");
        break;
      }
      f.args = arena_->Copy(*args);
    }
    if (Accept("->")) {
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
      f.result_types = arena_->Copy(*types);
      f.result_attrs = arena_->Copy(*attrs);
    }
    if (PeekIdent("attributes")) {
      lex_.Next();
      f.attributes = ParseAttrDict(depth + 1);
    }
    if (PeekPunct("{")) f.body = ParseRegion(depth + 1, {});
    SkipLocation(depth);
    return f;
  }

  Function FunctionFromGeneric(const Operation& op) {
    Function f;
    f.loc = op.loc;
    f.visibility = "public";
    if (const Attribute* n = Find(op.attributes, "sym_name")) f.name = n->str;
    if (const Attribute* v = Find(op.attributes, "sym_visibility")) f.visibility = v->str;
    const Attribute* ft = Find(op.attributes, "function_type");
    const Attribute* aa = Find(op.attributes, "arg_attrs");
    const Attribute* ra = Find(op.attributes, "res_attrs");
    if (!op.regions.empty()) f.body = op.regions[0];
    if (ft && ft->kind == Attribute::Kind::kType && ft->type.kind == Type::Kind::kFunction) {
      const Type& fnt = ft->type;
      auto args = scratch_->args.Get();
      for (size_t i = 0; i < fnt.num_inputs; ++i) {
        Argument arg;
        arg.type = fnt.elements[i];
        if (!f.body.blocks.empty() && i < f.body.blocks[0].args.size()) {
          arg.name = f.body.blocks[0].args[i].name;
          arg.loc = f.body.blocks[0].args[i].loc;
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
        attrs->push_back(ra && ra->kind == Attribute::Kind::kArray && r < ra->array.size() ? ra->array[r].dict
                                                                                        : NamedAttrs());
      }
      f.result_attrs = arena_->Copy(*attrs);
    } else {
      Fail(op.loc, "generic func.func without a function_type property");
    }
    return f;
  }

  // -- regions, blocks, operations --
  // Parses "{ [^bb(args):] ops ... }". entry_args become the entry block's arguments.
  Region ParseRegion(int depth, Span<Argument> entry_args) {
    const Token open = Expect("{", "to open a region");
    CheckDepth(depth, open.loc);
    auto blocks = scratch_->blocks.Get();
    auto ops = scratch_->ops.Get();  // the current (last) block's ops
    blocks->emplace_back();
    blocks->back().args = entry_args;
    for (;;) {
      const Token& t = lex_.Peek();
      if (t.kind == Tok::kEof) {
        Fail(open.loc, "the region opened here is not closed with '}' (the input ends first)");
      }
      if (IsPunct(t, "}")) {
        lex_.Next();
        break;
      }
      if (t.kind == Tok::kCaret) {
        const Token label = lex_.Next();
        if (!ops->empty() || !blocks->back().label.empty()) {
          blocks->back().ops = arena_->Copy(*ops);
          ops->clear();
          blocks->emplace_back();
        }
        Block& b = blocks->back();
        b.label = label.text.substr(1);
        if (Accept("(")) {
          if (!Accept(")")) {
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
              break;
            }
            blocks->back().args = arena_->Copy(*args);
          }
        }
        Expect(":", "after a block label");
        continue;
      }
      Operation op = ParseOperation(depth + 1);
      ops->push_back(op);
    }
    blocks->back().ops = arena_->Copy(*ops);
    Region r;
    r.blocks = arena_->Copy(*blocks);
    return r;
  }

  // Whether the token after '{' starts a region (ops) rather than an attribute dictionary.
  bool BraceStartsRegion() {
    // Look at the raw text after the current '{' token.
    const Token& brace = lex_.Peek();
    size_t i = brace.offset + 1;
    const std::string_view s = src_;
    while (i < s.size()) {
      if (std::isspace(static_cast<unsigned char>(s[i]))) {
        ++i;
      } else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/') {
        while (i < s.size() && s[i] != '\n') ++i;
      } else {
        break;
      }
    }
    if (i >= s.size()) return false;
    const char c = s[i];
    if (c == '%' || c == '^' || c == '}') return c != '}';
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
      std::string_view word = s.substr(i, j - i);
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j >= s.size()) return false;
      if (s[j] == '=' || s[j] == ',' || s[j] == '}') return false;  // key = value, or unit attribute
      return word.find('.') != std::string_view::npos || word == "return";
    }
    return false;
  }

  // Whether the next token starts a new operation (or ends the enclosing block).
  bool StartsNewOp(const Token& t) {
    if (t.kind == Tok::kEof || t.kind == Tok::kSplit || t.kind == Tok::kValue || t.kind == Tok::kString ||
        t.kind == Tok::kCaret || IsPunct(t, "}") || t.kind == Tok::kHash)
      return true;
    if (t.kind == Tok::kIdent) {
      return t.text.find('.') != std::string_view::npos || t.text == "return" || t.text == "module";
    }
    return false;
  }

  // The lists of the operation being parsed; Finish() freezes them into the op.
  struct OpLists {
    explicit OpLists(Scratch* s)
        : operands(s->refs.Get()), attributes(s->named.Get()), regions(s->regions.Get()) {}
    ScratchPool<ValueRef>::Lease operands;
    ScratchPool<NamedAttr>::Lease attributes;
    ScratchPool<Region>::Lease regions;
  };

  Operation ParseOperation(int depth) {
    Operation op;
    const Token first = lex_.Peek();
    CheckDepth(depth, first.loc);
    op.loc = first.loc;
    if (first.kind == Tok::kValue) {
      // Results: %0, %0:3, or %a, %b.
      const Token v = lex_.Next();
      op.result_name = v.text.substr(1);
      op.num_results = 1;
      if (Accept(":")) {
        const Token n = lex_.Next();
        if (n.kind != Tok::kNumber) Fail(n.loc, "expected a result count after ':'");
        const unsigned long count = std::strtoul(std::string(n.text).c_str(), nullptr, 10);
        if (count == 0 || count > 65536) Fail(n.loc, "result count " + std::string(n.text) + " is outside [1, 65536]");
        op.num_results = static_cast<uint32_t>(count);
      }
      while (Accept(",")) {
        const Token more = lex_.Next();
        if (more.kind != Tok::kValue) Fail(more.loc, "expected another result name, found " + Describe(more));
        if (++op.num_results > 65536) Fail(more.loc, "more than 65536 results");
      }
      Expect("=", "after the op's results");
    }
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
      ParsePrettyTail(&op, &lists, depth);
    } else {
      Fail(name.loc, "expected an operation, found " + Describe(name));
    }
    return op;
  }

  // Freezes the operand, attribute and region lists into the op; the types must be set already.
  void Finish(Operation* op, OpLists* lists) {
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

  void ParseOperandList(OpLists* lists, const char* context) {
    const Token open = Expect("(", context);
    if (Accept(")")) return;
    for (;;) {
      const Token v = lex_.Next();
      if (v.kind != Tok::kValue) {
        Fail(v.loc, "expected an operand (%name) in the list opened at " + std::to_string(open.loc.line) + ":" +
                        std::to_string(open.loc.column) + ", found " + Describe(v));
      }
      lists->operands->push_back(MakeRef(v));
      if (Accept(",")) continue;
      Expect(")", "to close the operand list");
      return;
    }
  }

  static ValueRef MakeRef(const Token& v) {
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
  void ApplySignature(Operation* op, size_t num_operands, const Type& sig) {
    if (sig.kind == Type::Kind::kFunction) {
      op->operand_types = Span<Type>(sig.elements.data(), sig.num_inputs);
      op->result_types = Span<Type>(sig.elements.data() + sig.num_inputs, sig.elements.size() - sig.num_inputs);
    } else {
      op->operand_types = Repeat(sig, num_operands);
      op->result_types = Repeat(sig, op->num_results);
    }
  }

  void ParseGenericTail(Operation* op, OpLists* lists, int depth) {
    ParseOperandList(lists, "after a generic op name");
    if (PeekPunct("[")) SkipBalanced(depth + 1);  // successors
    if (PeekPunct("<")) {
      const Token lt = lex_.Next();
      if (!PeekPunct("{")) Fail(lt.loc, "expected '{' after '<' (properties are written <{...}>)");
      ParseAttrDictInto(depth + 1, &*lists->attributes);
      Expect(">", "to close the properties <{...}>");
    }
    if (PeekPunct("(")) {
      lex_.Next();
      if (!PeekPunct(")")) {
        for (;;) {
          Region r = ParseRegion(depth + 1, {});
          lists->regions->push_back(r);
          if (Accept(",")) continue;
          break;
        }
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

  void ParsePrettyTail(Operation* op, OpLists* lists, int depth) {
    auto pending_args = scratch_->args.Get();  // "reducer(%a: t, %b: t)" before a region
    std::string_view first_keyword, last_keyword;  // bare words (compare's direction and type)
    int paren = 0;
    bool signature_done = false;
    for (;;) {
      const Token& t = lex_.Peek();
      if (paren == 0 && (t.kind == Tok::kEof || (t.newline_before && StartsNewOp(t)) || IsPunct(t, "}"))) break;
      if (t.kind == Tok::kEof) Fail(op->loc, "the input ends inside the operands of '" + std::string(op->name) + "'");
      if (t.kind == Tok::kValue) {
        const Token v = lex_.Next();
        if (PeekPunct(":") && paren > 0) {
          // A block argument list: (%a: type, ...)
          lex_.Next();
          Argument arg;
          arg.name = v.text.substr(1);
          arg.loc = v.loc;
          arg.type = ParseType(depth + 1);
          SkipLocation(depth);
          pending_args->push_back(arg);
          continue;
        }
        if (PeekPunct("=") && paren > 0) {  // while(%iter = %init): the init value is the operand
          lex_.Next();
          continue;
        }
        if (!signature_done) lists->operands->push_back(MakeRef(v));
        continue;
      }
      if (t.kind == Tok::kSymbol) {
        const Token s = lex_.Next();
        if (op->callee.empty()) op->callee = SymbolName(s, arena_);
        continue;
      }
      if (IsPunct(t, "{")) {
        if (BraceStartsRegion() || !pending_args->empty()) {
          Region r = ParseRegion(depth + 1, arena_->Copy(*pending_args));
          lists->regions->push_back(r);
          pending_args->clear();
        } else {
          ParseAttrDictInto(depth + 1, &*lists->attributes);
        }
        continue;
      }
      if (IsPunct(t, "(")) {
        lex_.Next();
        ++paren;
        CheckDepth(depth + paren, t.loc);
        continue;
      }
      if (IsPunct(t, ")")) {
        if (paren == 0) Fail(t.loc, "unbalanced ')' in '" + std::string(op->name) + "'");
        lex_.Next();
        --paren;
        continue;
      }
      if (IsPunct(t, ":") && paren == 0) {
        lex_.Next();
        Type sig = ParseType(depth + 1);
        if (sig.kind != Type::Kind::kFunction && PeekPunct(",")) {
          // "type, type": one type per operand (e.g. stablehlo.select, compare's short form)
          auto types = scratch_->types.Get();
          types->push_back(sig);
          while (Accept(",")) types->push_back(ParseType(depth + 1));
          op->operand_types = arena_->Copy(*types);
          op->result_types = Repeat(sig, op->num_results);
        } else {
          ApplySignature(op, lists->operands->size(), sig);
        }
        signature_done = true;
        continue;
      }
      if (t.kind == Tok::kIdent && t.text == "loc") {
        SkipLocation(depth);
        continue;
      }
      if (t.kind == Tok::kIdent && (t.text == "dense" || t.text == "array")) {
        Attribute v = ParseAttribute(depth + 1);
        lists->attributes->emplace_back("value", v);
        continue;
      }
      if (t.kind == Tok::kIdent) {
        const Token word = lex_.Next();
        if (PeekPunct("=") && !signature_done) {
          lex_.Next();
          if (lex_.Peek().kind == Tok::kValue) continue;  // %iter = %init inside while(...)
          Attribute v = ParseAttribute(depth + 1);
          lists->attributes->emplace_back(word.text, v);
        } else {
          if (first_keyword.empty()) first_keyword = word.text;
          last_keyword = word.text;
        }
        continue;
      }
      if (t.kind == Tok::kHash || t.kind == Tok::kString || t.kind == Tok::kNumber || t.kind == Tok::kBang) {
        Attribute a = ParseAttribute(depth + 1);
        lists->attributes->emplace_back("", a);
        continue;
      }
      if (IsPunct(t, "[") || IsPunct(t, "<")) {
        if (IsPunct(t, "<")) {
          const Token open = lex_.Next();
          RawAngle(open);
        } else {
          // Custom syntax such as slice's [1:5:2, 1:3]: kept as an opaque attribute with its text.
          const Token start = t;
          SkipBalanced(depth + 1);
          Attribute a;
          a.kind = Attribute::Kind::kOpaque;
          a.loc = start.loc;
          a.text = a.str = TextFrom(start);
          lists->attributes->emplace_back("", a);
        }
        continue;
      }
      lex_.Next();  // '=', ',', '->' and other punctuation of custom syntax
    }
    if (paren != 0) Fail(op->loc, "unbalanced '(' in '" + std::string(op->name) + "'");
    if (op->name == "stablehlo.compare" && !first_keyword.empty()) {
      Attribute dir;
      dir.kind = Attribute::Kind::kOpaque;
      dir.str = first_keyword;
      lists->attributes->emplace_back("comparison_direction", dir);
      if (last_keyword.data() != first_keyword.data()) {
        Attribute ct = dir;
        ct.str = last_keyword;
        lists->attributes->emplace_back("compare_type", ct);
      }
    }
    Finish(op, lists);
  }

 public:
  Lexer lex_;
  std::string_view src_;
  Arena* arena_;
  Scratch* scratch_;
};

// ---- Dense literals ---------------------------------------------------------------------------------

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - e;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

uint16_t FloatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

bool ParseScalar(const std::string& s, ElementType t, uint8_t* out) {
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const uint32_t size = ElementByteSize(t);
  if (hex) {
    errno = 0;
    const unsigned long long bits = std::strtoull(s.c_str(), nullptr, 16);
    if (errno == ERANGE) return false;
    std::memcpy(out, &bits, size <= 8 ? size : 8);
    return true;
  }
  switch (t) {
    case ElementType::kPred:
      if (s == "true" || s == "1") out[0] = 1;
      else if (s == "false" || s == "0") out[0] = 0;
      else return false;
      return true;
    case ElementType::kS2: case ElementType::kS4: case ElementType::kU2: case ElementType::kU4:
    case ElementType::kS8: case ElementType::kS16: case ElementType::kS32: case ElementType::kS64:
    case ElementType::kU8: case ElementType::kU16: case ElementType::kU32: case ElementType::kU64: {
      if (s == "true" || s == "false") {
        const int64_t v = s == "true";
        std::memcpy(out, &v, size);
        return true;
      }
      char* end = nullptr;
      errno = 0;
      int64_t v = 0;
      if (s[0] == '-') v = std::strtoll(s.c_str(), &end, 10);
      else v = static_cast<int64_t>(std::strtoull(s.c_str(), &end, 10));
      if (errno == ERANGE || !end || *end) return false;
      std::memcpy(out, &v, size);
      return true;
    }
    default: {
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (!end || *end) {
        if (s == "inf" || s == "+inf") d = HUGE_VAL;
        else if (s == "-inf") d = -HUGE_VAL;
        else if (s == "nan" || s == "-nan") d = std::nan("");
        else return false;
      }
      if (t == ElementType::kF64 || t == ElementType::kC128) {
        std::memcpy(out, &d, 8);
      } else if (t == ElementType::kF32 || t == ElementType::kC64) {
        const float f = static_cast<float>(d);
        std::memcpy(out, &f, 4);
      } else if (t == ElementType::kF16) {
        const uint16_t h = FloatToHalf(static_cast<float>(d));
        std::memcpy(out, &h, 2);
      } else if (t == ElementType::kBF16) {
        const uint16_t h = FloatToBf16(static_cast<float>(d));
        std::memcpy(out, &h, 2);
      } else {
        return false;
      }
      return true;
    }
  }
}

}  // namespace

Status DecodeDense(std::string_view body, const Type& type, std::vector<uint8_t>* bytes, bool* splat) {
  bytes->clear();
  *splat = false;
  if (type.kind != Type::Kind::kTensor) return Ok();  // dense of an opaque type: kept as text
  const uint32_t esize = ElementByteSize(type.element);
  if (!esize) return Ok();  // element types this runtime does not compute with: kept as text
  uint64_t count = 1;
  for (int64_t d : type.dims) {
    if (d < 0) return InvalidArgument("a dense literal needs a static shape");
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) || count > (1ull << 34)) {
      return InvalidArgument("the dense literal's shape %s is too large", TypeToString(type).c_str());
    }
  }
  std::string_view s = body;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) {
    if (count != 0) return InvalidArgument("empty dense<> literal for a tensor of %llu elements", (unsigned long long)count);
    return Ok();
  }
  if (s.size() >= 3 && s[0] == '"' && s[1] == '0' && (s[2] == 'x' || s[2] == 'X')) {
    std::string_view hex = s.substr(3, s.size() - 4);
    if (s.back() != '"' || hex.size() % 2) return InvalidArgument("malformed hex dense literal");
    bytes->resize(hex.size() / 2);
    for (size_t i = 0; i < bytes->size(); ++i) {
      auto nib = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      const int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
      if (hi < 0 || lo < 0) return InvalidArgument("bad hex digit in a dense literal");
      (*bytes)[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    if (bytes->size() == esize && count != 1) {
      *splat = true;
    } else if (bytes->size() != count * esize) {
      return InvalidArgument("hex dense literal has %zu bytes; %s needs %llu", bytes->size(), TypeToString(type).c_str(),
                             (unsigned long long)(count * esize));
    }
    return Ok();
  }
  // Scalars: numbers, true/false, per-element hex, complex (re, im); brackets and commas separate.
  std::vector<std::string> scalars;
  const bool complex = type.element == ElementType::kC64 || type.element == ElementType::kC128;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '[' || c == ']' || c == ',' || c == '(' || c == ')' || std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && s[j] != '\0' && !std::strchr("[](), \t\n\r", s[j])) ++j;
    if (j == i) return InvalidArgument("invalid byte 0x%02x in a dense literal", static_cast<unsigned char>(c));
    scalars.emplace_back(s.substr(i, j - i));
    if (scalars.size() > count * 2 + 2) {
      return InvalidArgument("dense literal has more values than %s holds", TypeToString(type).c_str());
    }
    i = j;
  }
  const uint32_t per = complex ? 2 : 1;
  const uint32_t part = complex ? esize / 2 : esize;
  const ElementType part_type = type.element == ElementType::kC64   ? ElementType::kF32
                                : type.element == ElementType::kC128 ? ElementType::kF64
                                                                           : type.element;
  if (scalars.size() == per && count != 1) {
    *splat = true;
  } else if (scalars.size() != count * per) {
    return InvalidArgument("dense literal has %zu values; %s needs %llu", scalars.size(), TypeToString(type).c_str(),
                           (unsigned long long)(count * per));
  }
  bytes->resize(scalars.size() * part);
  for (size_t k = 0; k < scalars.size(); ++k) {
    if (!ParseScalar(scalars[k], part_type, bytes->data() + k * part)) {
      return InvalidArgument("'%s' is not a valid %s value", scalars[k].c_str(),
                             std::string(ElementTypeName(part_type)).c_str());
    }
  }
  return Ok();
}

Status ParseModules(std::string_view text, std::string_view filename, std::vector<Module>* out) {
  out->clear();
  // One arena for every module of the text: the source is copied into it first, so the IR's names are
  // views into that copy and the caller's text may go away.
  auto arena = std::make_shared<Arena>();
  Scratch scratch;
  Parser p(arena->CopyString(text), arena.get(), &scratch);
  try {
    p.ParseAll(out);
    for (Module& m : *out) m.arena = arena;
  } catch (const ParseError& e) {
    out->clear();
    return InvalidArgument("%.*s:%u:%u: %s", static_cast<int>(filename.size()), filename.data(), e.loc.line,
                           e.loc.column, e.message.c_str());
  }
  return Ok();
}

Status ParseFile(const std::string& path, std::vector<Module>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '%s': %s", path.c_str(), std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  return ParseModules(text, path, out);
}

}  // namespace neuronmem::stablehlo
