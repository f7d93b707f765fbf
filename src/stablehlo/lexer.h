// The StableHLO lexer: tokens are views into the source text (the arena's copy of it). Also the parse
// error every stage of the parser throws, and the decoding of string and symbol tokens.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "stablehlo/ir.h"

namespace neuronmem::stablehlo::parse {

// Thrown inside the parser, caught at its entry (ParseModules) and turned into "file:line:col: message".
struct ParseError {
  Location loc;
  std::string message;
  bool fatal = false;  // the nesting limit: never recovered from by skipping an op
};

[[noreturn]] void Fail(Location loc, std::string message);

enum class Tok {
  kEof,
  kSplit,   // "// -----"
  kValue,   // %name or %name#3
  kCaret,   // ^bb0
  kSymbol,  // @name or @"quoted"
  kHash,    // #name or #dialect.name
  kBang,    // !dialect.type
  kIdent,   // bare identifier, may contain '.', '$', '-' (not leading)
  kNumber,  // 12, -3, 1.5e-3, 0x7FC00000 (inf and nan are identifiers)
  kString,  // "..." (text keeps the quotes)
  kPunct,   // ( ) [ ] { } < > , : = * ? + | and "->"
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
    for (const char* s = " \t\n\r\v\f"; *s; ++s) c[static_cast<unsigned char>(*s)] = kSpace;
    c[static_cast<unsigned char>('_')] |= kAlpha;
    for (const char* x = ".$-"; *x; ++x) c[static_cast<unsigned char>(*x)] |= kIdentExtra;
    for (const char* q = "()[]{}<>,:=*?+-|"; *q; ++q) c[static_cast<unsigned char>(*q)] |= kPunctChar;
  }
};
inline constexpr CharTable kChars;
inline uint8_t CharClass(char ch) { return kChars.c[static_cast<unsigned char>(ch)]; }
inline bool IsSpace(char ch) { return CharClass(ch) & kSpace; }
inline bool IsDigit(char ch) { return CharClass(ch) & kDigit; }
inline bool IsAlnum(char ch) { return CharClass(ch) & (kAlpha | kDigit); }
inline bool IsIdentStart(char c) { return CharClass(c) & kAlpha; }
inline bool IsIdentChar(char c) { return CharClass(c) & (kAlpha | kDigit | kIdentExtra); }
inline bool IsPunctChar(char c) { return CharClass(c) & kPunctChar; }

inline std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}
inline std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}
inline std::string_view Trim(std::string_view s) { return TrimRight(TrimLeft(s)); }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}
  // A lexer over `src` starting at `offset`, which is at `loc` (where another lexer over the same text found a
  // token): a type body read as raw text can be lexed again from inside, with the right locations.
  Lexer(std::string_view src, size_t offset, Location loc)
      : src_(src), pos_(offset), line_(loc.line), line_start_(offset - (loc.column - 1)) {}

  const Token& Peek() {
    if (!has_peek_) {
      Lex(&peek_);
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
  void Reset(size_t offset);
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
  uint32_t Column() const { return static_cast<uint32_t>(pos_ - line_start_ + 1); }
  void Lex(Token* out);
  void TakeString(Location where);

  std::string_view src_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t line_start_ = 0;
  Token peek_;
  bool has_peek_ = false;
};

// Decodes the body of a string literal token ("..." with escapes \\ \" \n \t \XX). Without escapes the
// result is a view into the token (the arena's copy of the source); otherwise it is decoded into the arena.
std::string_view Unquote(const Token& t, Arena* arena);

// Symbol token text without '@' and quotes.
std::string_view SymbolName(const Token& t, Arena* arena);

}  // namespace neuronmem::stablehlo::parse
