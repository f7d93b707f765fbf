// The body of a tensor type, given as raw text (see type_text.h).
#include "stablehlo/type_text.h"

#include <cctype>
#include <string>
#include <vector>

#include "stablehlo/lexer.h"

namespace neuronmem::stablehlo::parse {

// Parses the inside of tensor<...>: "2x3xf32", "f32", "?x4xi8", "2x3xf32, #encoding".
size_t ParseTensorBody(std::string_view body, Location loc, Type* t, Arena* arena) {
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
  const std::string_view whole = body;
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
  if (elem.rfind("!quant.", 0) == 0) return static_cast<size_t>(elem.data() - whole.data());
  t->element = ParseElementTypeName(elem);
  if (t->element == ElementType::kInvalid) {
    Fail(loc, "unknown tensor element type '" + std::string(elem) + "' in tensor<" + std::string(body) + ">");
  }
  return std::string_view::npos;
}

}  // namespace neuronmem::stablehlo::parse
