// Dense literals: the body of `dense<...>` for a tensor type, decoded to little-endian element bytes.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "numerics/float_formats.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {
namespace {

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
      if (s == "true" || s == "1")
        out[0] = 1;
      else if (s == "false" || s == "0")
        out[0] = 0;
      else
        return false;
      return true;
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
    case ElementType::kU64: {
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
    default: {
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
      if (t == ElementType::kF64 || t == ElementType::kC128) {
        std::memcpy(out, &d, 8);
      } else if (t == ElementType::kF32 || t == ElementType::kC64) {
        const float f = static_cast<float>(d);
        std::memcpy(out, &f, 4);
      } else if (const numerics::FloatFormat* format = numerics::SmallFloatFormat(t)) {
        // f16, bf16, f8/f6/f4: one rounding from the double, as MLIR's parser does (APFloat::convert).
        const uint32_t bits = numerics::EncodeFloat(*format, d);
        std::memcpy(out, &bits, size);
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
    if (count != 0)
      return InvalidArgument("empty dense<> literal for a tensor of %llu elements", (unsigned long long)count);
    return Ok();
  }
  if (s.size() >= 3 && s[0] == '"' && s[1] == '0' && (s[2] == 'x' || s[2] == 'X')) {
    std::string_view hex = s.substr(3, s.size() - 4);
    if (s.back() != '"' || hex.size() % 2) return InvalidArgument("malformed hex dense literal");
    bytes->resize(hex.size() / 2);
    // Nibble values by table (16 and above: not a hex digit); the whole-tensor literals of the test suites
    // are most of their text.
    static constexpr struct Nibbles {
      uint8_t v[256] = {};
      constexpr Nibbles() {
        for (int c = 0; c < 256; ++c) v[c] = 16;
        for (int c = 0; c < 10; ++c) v['0' + c] = static_cast<uint8_t>(c);
        for (int c = 0; c < 6; ++c) v['a' + c] = v['A' + c] = static_cast<uint8_t>(10 + c);
      }
    } kNibbles;
    const auto* in = reinterpret_cast<const unsigned char*>(hex.data());
    uint8_t* outp = bytes->data();
    unsigned bad = 0;
    for (size_t i = 0; i < bytes->size(); ++i) {
      const unsigned hi = kNibbles.v[in[2 * i]], lo = kNibbles.v[in[2 * i + 1]];
      bad |= hi | lo;
      outp[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    if (bad >= 16) return InvalidArgument("bad hex digit in a dense literal");
    if (bytes->size() == esize && count != 1) {
      *splat = true;
    } else if (bytes->size() != count * esize) {
      return InvalidArgument("hex dense literal has %zu bytes; %s needs %llu", bytes->size(),
                             TypeToString(type).c_str(), (unsigned long long)(count * esize));
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
  const ElementType part_type = type.element == ElementType::kC64    ? ElementType::kF32
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

}  // namespace neuronmem::stablehlo
