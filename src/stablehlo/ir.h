// The IR that the StableHLO text parser produces: modules of functions of blocks of operations, with
// types, attributes and source locations. It keeps everything the placement manifest needs and what an
// interpreter needs to run an op (name, operands, results, types, attributes, regions); ops of foreign
// dialects are kept with their name and operands and never rejected.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace neuronmem::stablehlo {

struct Location {
  uint32_t line = 0;
  uint32_t column = 0;
};

enum class ElementType {
  kUnknown,
  kI1,
  kS8, kS16, kS32, kS64,
  kU8, kU16, kU32, kU64,
  kF16, kBF16, kF32, kF64,
  kComplexF32, kComplexF64,
  kOther,  // a valid MLIR element type this runtime does not compute with (f8 variants, index ...)
};

// Bytes per element, 0 for kUnknown/kOther.
uint32_t ElementByteSize(ElementType t);
// "f32", "i1", "bf16", ...
const char* ElementTypeName(ElementType t);

// Tensor dimensions: up to six inline (no allocation: types are copied into every op's operand and result
// lists), more on the heap.
class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> v) {
    for (int64_t d : v) push_back(d);
  }
  void push_back(int64_t v) {
    if (size_ < kInline) {
      inline_[size_++] = v;
      return;
    }
    if (heap_.empty()) heap_.assign(inline_, inline_ + kInline);
    heap_.push_back(v);
    ++size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return size_ <= kInline ? inline_ : heap_.data(); }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t operator[](size_t i) const { return data()[i]; }
  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }
  friend bool operator==(const Dims& a, const std::vector<int64_t>& b) {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  static constexpr size_t kInline = 6;
  int64_t inline_[kInline] = {};
  size_t size_ = 0;
  std::vector<int64_t> heap_;
};

struct Type {
  enum class Kind { kTensor, kToken, kTuple, kScalar, kFunction, kOther };
  Kind kind = Kind::kOther;
  ElementType element = ElementType::kUnknown;
  Dims dims;                   // tensors: -1 for a dynamic dimension
  std::vector<Type> elements;  // tuples; functions: inputs then outputs (split at num_inputs)
  size_t num_inputs = 0;       // functions
  std::string text;            // as written, for types other than tensors and scalars (see TypeToString)

  bool IsTuple() const { return kind == Kind::kTuple; }
};

// The type in MLIR syntax: the source text, or rebuilt for tensors and scalars ("tensor<2x?xf32>").
std::string TypeToString(const Type& t);

struct Attribute;
using NamedAttrs = std::vector<std::pair<std::string, Attribute>>;

struct Attribute {
  enum class Kind { kUnit, kBool, kInt, kFloat, kString, kArray, kDict, kDense, kSymbol, kType, kOpaque };
  Kind kind = Kind::kUnit;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string str;              // kString (escapes decoded), kSymbol (without '@'), kOpaque (source text)
  std::vector<Attribute> array;  // kArray, and array<i64: ...>
  NamedAttrs dict;              // kDict; also the key/value pairs of #dialect.name<k = v, ...>
  Type type;                    // typed literals, dense, kType
  std::vector<uint8_t> dense;   // kDense: little-endian element bytes (i1: one byte each), whole tensor
  bool splat = false;           // kDense given as one value
  std::string text;             // source text of the whole attribute
  Location loc;

  // Dictionary lookup (kDict or a dialect attribute with key/values); nullptr if absent.
  const Attribute* Get(std::string_view key) const;
};

const Attribute* Find(const NamedAttrs& attrs, std::string_view key);

struct ValueRef {
  std::string name;  // without '%'
  uint32_t index = 0;  // %x#1 -> 1
  Location loc;
};

struct Argument {
  std::string name;  // without '%'
  Type type;
  NamedAttrs attrs;
  Location loc;
};

struct Region;

struct Operation {
  std::string name;  // "stablehlo.add", "func.return", "sdy.sharding_constraint", "func.call"
  bool generic = false;  // printed in the generic "name"(...) form
  std::string result_name;  // %0 -> "0"; empty when the op has no results
  uint32_t num_results = 0;  // %0:3 -> 3
  std::vector<ValueRef> operands;
  std::vector<Type> operand_types;
  std::vector<Type> result_types;
  NamedAttrs attributes;  // properties <{...}> first, then the attribute dictionary, in source order
  std::string callee;     // custom_call target or call callee, without '@' (quotes removed)
  std::vector<Region> regions;
  Location loc;
};

struct Block {
  std::string label;  // "bb0", empty for an entry block without label
  std::vector<Argument> args;
  std::vector<Operation> ops;
};

struct Region {
  std::vector<Block> blocks;
};

struct Function {
  std::string name;
  std::string visibility;  // "public" (default), "private", "nested"
  std::vector<Argument> args;
  std::vector<Type> result_types;
  std::vector<NamedAttrs> result_attrs;
  NamedAttrs attributes;
  Region body;
  Location loc;
};

struct Module {
  std::string name;  // without '@'; empty if unnamed or implicit
  NamedAttrs attributes;
  std::vector<Function> functions;
  std::vector<Operation> other_ops;  // top-level ops that are not functions (kept opaque)
  Location loc;

  const Function* FindFunction(std::string_view name) const;
};

}  // namespace neuronmem::stablehlo
