// Reading the custom (pretty) syntax of an op's attributes from its source text, for the ops whose pretty
// form the IR keeps only as text: dot_general's `contracting_dims = [1] x [0]`, convolution's
// `dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [0, 0]]}`.
#pragma once

#include <cctype>
#include <cstdint>
#include <string_view>
#include <vector>

namespace neuronmem::interp {

// A cursor over attribute text: skips blanks, reads punctuation, words, integers and integer lists.
class TextCursor {
 public:
  explicit TextCursor(std::string_view text) : s_(text) {}

  // Positions the cursor after `key =` (the first occurrence of `key` as a whole word followed by '=',
  // before the op's trailing ` : ` signature). False if absent.
  bool SeekKey(std::string_view key) {
    size_t from = 0;
    for (;;) {
      const size_t at = s_.find(key, from);
      if (at == std::string_view::npos) return false;
      from = at + 1;
      const bool word_start = at == 0 || !IsWordChar(s_[at - 1]);
      const size_t end = at + key.size();
      if (!word_start || (end < s_.size() && IsWordChar(s_[end]))) continue;
      pos_ = end;
      if (Punct('=')) return true;
    }
  }
  bool Punct(char c) {
    SkipBlanks();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Arrow() {
    SkipBlanks();
    if (s_.substr(pos_, 2) == "->") {
      pos_ += 2;
      return true;
    }
    return false;
  }
  // A word of letters, digits and '_' (also a bare integer like `0`).
  bool Word(std::string_view* out) {
    SkipBlanks();
    const size_t b = pos_;
    while (pos_ < s_.size() && IsWordChar(s_[pos_])) ++pos_;
    *out = s_.substr(b, pos_ - b);
    return pos_ > b;
  }
  bool Int(int64_t* out) {
    SkipBlanks();
    bool neg = false;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) neg = s_[pos_++] == '-';
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) return false;
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) v = v * 10 + (s_[pos_++] - '0');
    *out = neg ? -v : v;
    return true;
  }
  // `[1, 2, 3]`, `[]`; `true`/`false` read as 1/0.
  bool IntList(std::vector<int64_t>* out) {
    out->clear();
    if (!Punct('[')) return false;
    if (Punct(']')) return true;
    do {
      int64_t v;
      std::string_view w;
      if (Int(&v)) {
        out->push_back(v);
      } else if (Word(&w) && (w == "true" || w == "false")) {
        out->push_back(w == "true");
      } else {
        return false;
      }
    } while (Punct(','));
    return Punct(']');
  }
  // `[[1, 2], [3, 4]]`
  bool IntListList(std::vector<std::vector<int64_t>>* out) {
    out->clear();
    if (!Punct('[')) return false;
    if (Punct(']')) return true;
    do {
      out->emplace_back();
      if (!IntList(&out->back())) return false;
    } while (Punct(','));
    return Punct(']');
  }
  // `[b, 0, 1, f]`: words.
  bool WordList(std::vector<std::string_view>* out) {
    out->clear();
    if (!Punct('[')) return false;
    if (Punct(']')) return true;
    do {
      std::string_view w;
      if (!Word(&w)) return false;
      out->push_back(w);
    } while (Punct(','));
    return Punct(']');
  }
  bool AtEnd() {
    SkipBlanks();
    return pos_ >= s_.size();
  }

 private:
  static bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
  void SkipBlanks() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace neuronmem::interp
