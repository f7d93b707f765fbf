// The IR's own code: the arena, and lookups on modules and attributes.
#include "stablehlo/ir.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace neuronmem::stablehlo {

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

}  // namespace neuronmem::stablehlo
