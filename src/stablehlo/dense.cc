// Dense literals: the body of `dense<...>` for a tensor type, decoded to little-endian element bytes.
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "numerics/float_formats.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {
namespace {

// The integer types a literal gives as decimal integers.
bool IsLiteralInteger(ElementType t) {
  switch (t) {
    case ElementType::kS2:
    case ElementType::kS4:
    case ElementType::kU2:
    case ElementType::kU4:
    case ElementType::kS8:
    case ElementType::kS16:
    case ElementType::kS32:
    case ElementType::kS64:
    case ElementType::kU8:
    case ElementType::kU16:
    case ElementType::kU32:
    case ElementType::kU64: return true;
    default: return false;
  }
}

// Stores a float value read from text in the element type's format; false for a non-float type.
bool StoreFloat(double d, ElementType t, uint8_t* out) {
  if (t == ElementType::kF64 || t == ElementType::kC128) {
    std::memcpy(out, &d, 8);
  } else if (t == ElementType::kF32 || t == ElementType::kC64) {
    const float f = static_cast<float>(d);
    std::memcpy(out, &f, 4);
  } else if (const numerics::FloatFormat* format = numerics::SmallFloatFormat(t)) {
    // f16, bf16, f8/f6/f4: one rounding from the double, as MLIR's parser does (APFloat::convert).
    const uint32_t bits = numerics::EncodeFloat(*format, d);
    std::memcpy(out, &bits, ElementByteSize(t));
  } else {
    return false;
  }
  return true;
}

// Plain decimal numbers ("-12", "1.5E-3"; no '+', hex, inf or nan) with std::from_chars: correctly rounded like
// strtod and several times faster. False for anything else and out of range, which ParseScalar then reads with
// the C library as before.
bool FastNumber(std::string_view s, ElementType t, uint8_t* out) {
  const char* const end = s.data() + s.size();
  const char* digits = s.data() + (s[0] == '-');
  if (digits == end || *digits < '0' || *digits > '9') return false;
  if (digits + 1 < end && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) return false;
  if (t == ElementType::kPred) return false;
  if (IsLiteralInteger(t)) {
    int64_t v = 0;
    std::from_chars_result r;
    if (s[0] == '-') {
      r = std::from_chars(s.data(), end, v);
    } else {
      uint64_t u = 0;
      r = std::from_chars(s.data(), end, u);
      v = static_cast<int64_t>(u);
    }
    if (r.ec != std::errc() || r.ptr != end) return false;
    std::memcpy(out, &v, ElementByteSize(t));
    return true;
  }
  double d = 0;
  const std::from_chars_result r = std::from_chars(s.data(), end, d);
  if (r.ec != std::errc() || r.ptr != end) return false;
  return StoreFloat(d, t, out);
}

bool ParseScalar(std::string_view text, ElementType t, uint8_t* out) {
  if (FastNumber(text, t, out)) return true;
  const std::string s(text);  // NUL-terminated for strtoull/strtoll/strtod
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const uint32_t size = ElementByteSize(t);
  if (hex) {
    errno = 0;
    const unsigned long long bits = std::strtoull(s.c_str(), nullptr, 16);
    if (errno == ERANGE) return false;
    std::memcpy(out, &bits, size <= 8 ? size : 8);
    return true;
  }
  if (t == ElementType::kPred) {
    if (s == "true" || s == "1")
      out[0] = 1;
    else if (s == "false" || s == "0")
      out[0] = 0;
    else
      return false;
    return true;
  }
  if (IsLiteralInteger(t)) {
    if (s == "true" || s == "false") {
      const int64_t v = s == "true";
      std::memcpy(out, &v, size);
      return true;
    }
    char* end = nullptr;
    errno = 0;
    int64_t v = 0;
    if (s[0] == '-')
      v = std::strtoll(s.c_str(), &end, 10);
    else
      v = static_cast<int64_t>(std::strtoull(s.c_str(), &end, 10));
    if (errno == ERANGE || !end || *end) return false;
    std::memcpy(out, &v, size);
    return true;
  }
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (!end || *end) {
    if (s == "inf" || s == "+inf")
      d = HUGE_VAL;
    else if (s == "-inf")
      d = -HUGE_VAL;
    else if (s == "nan" || s == "-nan")
      d = std::nan("");
    else
      return false;
  }
  return StoreFloat(d, t, out);
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
    if (count != 0)
      return InvalidArgument("empty dense<> literal for a tensor of %llu elements", (unsigned long long)count);
    return Ok();
  }
  if (s.size() >= 3 && s[0] == '"' && s[1] == '0' && (s[2] == 'x' || s[2] == 'X')) {
    std::string_view hex = s.substr(3, s.size() - 4);
    if (s.back() != '"' || hex.size() % 2) return InvalidArgument("malformed hex dense literal");
    bytes->resize(hex.size() / 2);
    // Nibbles by arithmetic rather than a table, so the loop vectorises (the whole-tensor literals of the test
    // suites are most of their text): '0'-'9' keep their low four bits, 'A'-'F' and 'a'-'f' add 9 to theirs.
    const auto* in = reinterpret_cast<const uint8_t*>(hex.data());
    uint8_t* outp = bytes->data();
    const size_t n = bytes->size();
    uint8_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint8_t h = in[2 * i], l = in[2 * i + 1];
      const uint8_t hd = static_cast<uint8_t>(h - '0'), ha = static_cast<uint8_t>((h | 0x20) - 'a');
      const uint8_t ld = static_cast<uint8_t>(l - '0'), la = static_cast<uint8_t>((l | 0x20) - 'a');
      bad |= static_cast<uint8_t>((hd > 9) & (ha > 5)) | static_cast<uint8_t>((ld > 9) & (la > 5));
      outp[i] = static_cast<uint8_t>((((h & 0xF) + 9 * (h >> 6)) << 4) | ((l & 0xF) + 9 * (l >> 6)));
    }
    if (bad) return InvalidArgument("bad hex digit in a dense literal");
    if (bytes->size() == esize && count != 1) {
      *splat = true;
    } else if (bytes->size() != count * esize) {
      return InvalidArgument("hex dense literal has %zu bytes; %s needs %llu", bytes->size(),
                             TypeToString(type).c_str(), (unsigned long long)(count * esize));
    }
    return Ok();
  }
  // Scalars: numbers, true/false, per-element hex, complex (re, im); brackets and commas separate. Two passes
  // over the text: count the values (and check the count), then decode them.
  static constexpr struct Separators {
    // 1: skipped between values ([ ] , ( ) and blanks); 2: ends a value ([ ] ( ) , space \t \n \r and NUL).
    uint8_t v[256] = {};
    constexpr Separators() {
      for (const char* c = "[](),"; *c; ++c) v[static_cast<unsigned char>(*c)] = 3;
      for (const char* c = " \t\n\r"; *c; ++c) v[static_cast<unsigned char>(*c)] = 3;
      v['\v'] = v['\f'] = 1;  // blanks for isspace, but part of a value
      v[0] = 2;
    }
  } kSep;
  const auto sep = [](char c) { return kSep.v[static_cast<unsigned char>(c)]; };
  // Calls `f(value)` for each value in order; stops at the first failure f returns.
  const auto for_each_value = [&](auto&& f) -> Status {
    size_t i = 0;
    while (i < s.size()) {
      if (sep(s[i]) & 1) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < s.size() && !(sep(s[j]) & 2)) ++j;
      if (j == i) return InvalidArgument("invalid byte 0x%02x in a dense literal", static_cast<unsigned char>(s[i]));
      NEURONMEM_RETURN_IF_ERROR(f(s.substr(i, j - i)));
      i = j;
    }
    return Ok();
  };
  const bool complex = type.element == ElementType::kC64 || type.element == ElementType::kC128;
  size_t num_values = 0;
  NEURONMEM_RETURN_IF_ERROR(for_each_value([&](std::string_view) -> Status {
    if (++num_values > count * 2 + 2)
      return InvalidArgument("dense literal has more values than %s holds", TypeToString(type).c_str());
    return Ok();
  }));
  const uint32_t per = complex ? 2 : 1;
  const uint32_t part = complex ? esize / 2 : esize;
  const ElementType part_type = type.element == ElementType::kC64    ? ElementType::kF32
                                : type.element == ElementType::kC128 ? ElementType::kF64
                                                                     : type.element;
  if (num_values == per && count != 1) {
    *splat = true;
  } else if (num_values != count * per) {
    return InvalidArgument("dense literal has %zu values; %s needs %llu", num_values, TypeToString(type).c_str(),
                           (unsigned long long)(count * per));
  }
  bytes->resize(num_values * part);
  uint8_t* out = bytes->data();
  return for_each_value([&](std::string_view value) -> Status {
    if (!ParseScalar(value, part_type, out)) {
      return InvalidArgument("'%.*s' is not a valid %s value", static_cast<int>(value.size()), value.data(),
                             std::string(ElementTypeName(part_type)).c_str());
    }
    out += part;
    return Ok();
  });
}

}  // namespace neuronmem::stablehlo
