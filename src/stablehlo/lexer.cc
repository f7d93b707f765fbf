// The StableHLO lexer (see lexer.h).
#include "stablehlo/lexer.h"

#include <cctype>

#include "stablehlo/parse_cost.h"

namespace neuronmem::stablehlo::parse {

void Fail(Location loc, std::string message) { throw ParseError{loc, std::move(message)}; }

namespace {

std::string Hex(unsigned v) {
  const char* digits = "0123456789ABCDEF";
  return std::string{digits[v >> 4], digits[v & 15]};
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void Lexer::Reset(size_t offset) {
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

// The hot loop of the parser: every scan below works on a local cursor (`p`) and writes pos_ back once,
// so the compiler keeps it in a register (a member size_t could alias src_'s size and force reloads). The
// token is written field by field where it stays (peek_): building it in a local and copying it out made
// every token a store-forwarding stall (16-byte loads of fields just stored 8 and 4 bytes at a time).
void Lexer::Lex(Token* out) {
  CountToken();  // parse_cost.h
  Token& t = *out;
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
        t.kind = Tok::kSplit;
        t.text = comment;
        t.offset = start;
        t.loc = Location{};
        t.newline_before = true;
        return;
      }
      continue;
    }
    break;
  }
  pos_ = p;
  t.offset = p;
  t.loc = Location{line_, Column()};
  t.newline_before = newline;
  if (p >= size) {
    t.kind = Tok::kEof;
    t.text = std::string_view();
    return;
  }
  const size_t start = p;
  const char c = data[p];
  auto take_suffix = [&] {
    if (p < size && data[p] == '"') {
      pos_ = p;
      TakeString(t.loc);
      p = pos_;
    } else {
      while (p < size && IsIdentChar(data[p])) ++p;
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
    Fail(t.loc, std::string("unexpected character ") + (std::isprint(static_cast<unsigned char>(c))
                                                            ? std::string("'") + c + "'"
                                                            : "0x" + Hex(static_cast<unsigned char>(c))));
  }
  pos_ = p;
  t.text = src_.substr(start, p - start);
}

void Lexer::TakeString(Location where) {
  Advance();  // opening quote
  // A string has no newline, so the columns need no bookkeeping: scan a local cursor (long hex literals).
  const char* const data = src_.data();
  const size_t size = src_.size();
  size_t p = pos_;
  while (p < size && data[p] != '"') {
    if (data[p] == '\\' && p + 1 < size) ++p;
    if (data[p] == '\n') {
      pos_ = p;
      Fail(where, "unterminated string literal (a string may not span lines)");
    }
    ++p;
  }
  pos_ = p;
  if (pos_ >= size) Fail(where, "unterminated string literal");
  Advance();  // closing quote
}

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
    } else if (i + 2 < body.size() && HexDigit(e) >= 0 && HexDigit(body[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(e) * 16 + HexDigit(body[i + 2])));
      i += 2;
    } else {
      Fail(t.loc, std::string("bad escape '\\") + e + "' in string literal (use \\\\, \\\", \\n, \\t or \\XX)");
    }
  }
  return arena->CopyString(out);
}

std::string_view SymbolName(const Token& t, Arena* arena) {
  std::string_view s = t.text.substr(1);
  if (!s.empty() && s[0] == '"') {
    Token q = t;
    q.text = s;
    return Unquote(q, arena);
  }
  return s;
}

}  // namespace neuronmem::stablehlo::parse
