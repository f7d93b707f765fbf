// Type bodies given as raw text (see type_text.h).
#include "stablehlo/type_text.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "stablehlo/lexer.h"

namespace neuronmem::stablehlo::parse {

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
    if (rank < 16)
      dims[rank] = d;
    else
      more.push_back(d);
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
  t->element = ParseElementTypeName(elem);
  if (t->element == ElementType::kInvalid) {
    Fail(loc, "unknown tensor element type '" + std::string(elem) + "' in tensor<" + std::string(body) + ">");
  }
}

}  // namespace neuronmem::stablehlo::parse
