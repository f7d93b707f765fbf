// The IR that the StableHLO text parser produces: modules of functions of blocks of operations, with
// types, attributes and source locations. It keeps everything the placement manifest needs and what an
// interpreter needs to run an op (name, operands, results, types, attributes, regions); ops of foreign
// dialects are kept with their name and operands and never rejected.
//
// Memory: a parsed module is immutable, and everything below Module (strings, arrays, nested ops) lives in
// one Arena that the module holds by shared_ptr: a copy of the source text (names and other strings are
// views into it), plus bump-allocated arrays. Every IR type below Module is trivially destructible, so a
// module is freed by releasing the arena's blocks, not by walking and freeing tens of thousands of small
// heap objects (that walk was a fifth of parse + manifest time). Views and spans taken from a module stay
// valid as long as the module (or a copy of it) lives.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/element_type.h"

namespace neuronmem::stablehlo {

// A read-only array in an Arena (or any memory that outlives it): pointer and length.
template <typename T>
class Span {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;

  Span() = default;
  Span(const T* data, size_t size) : data_(data), size_(size) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* data() const { return data_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("stablehlo::Span::at");
    return data_[i];
  }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }

  friend bool operator==(const Span& a, const std::vector<T>& b) {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const std::vector<T>& b, const Span& a) { return a == b; }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

// A bump allocator: blocks grow geometrically up to 1 MiB; nothing is freed before the arena is.
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  // `bytes` of uninitialised memory aligned to `align` (a power of two, at most 64).
  void* Allocate(size_t bytes, size_t align);
  // Copies n trivially destructible objects into the arena.
  template <typename T>
  Span<T> Copy(const T* data, size_t n) {
    static_assert(std::is_trivially_destructible_v<T>, "arena objects are never destroyed");
    if (n == 0) return {};
    T* out = static_cast<T*>(Allocate(n * sizeof(T), alignof(T)));
    std::uninitialized_copy(data, data + n, out);
    return Span<T>(out, n);
  }
  template <typename T>
  Span<T> Copy(const std::vector<T>& v) {
    return Copy(v.data(), v.size());
  }
  std::string_view CopyString(std::string_view s);
  // Bytes held in blocks (for statistics and tests).
  size_t bytes_reserved() const { return reserved_; }

 private:
  std::vector<char*> blocks_;
  char* cur_ = nullptr;
  size_t left_ = 0;
  size_t next_block_ = 16u << 10;
  size_t reserved_ = 0;
};

struct Location {
  uint32_t line = 0;
  uint32_t column = 0;
};

// Element types come from the library-wide table (src/base/element_type.h).
using neuronmem::ElementByteSize;
using neuronmem::ElementType;
using neuronmem::ElementTypeName;

// Tensor dimensions, -1 for a dynamic one.
using Dims = Span<int64_t>;

// A quantized element type, `!quant.uniform<storage[<min:max>]:expressed[:axis], scale[:zero_point]>` or
// per axis `{scale0:zp0, scale1:zp1, ...}` (MLIR's quant dialect; StableHLO's quantization semantics).
// A Type with `quant` set has `element` = the storage type: a buffer holds the storage integers.
struct QuantType {
  ElementType storage = ElementType::kInvalid;    // i8, ui8, i4, i16, i32 ...
  ElementType expressed = ElementType::kInvalid;  // f32, bf16, f16
  int64_t storage_min = 0;                        // the storage range, by default the storage type's range
  int64_t storage_max = 0;
  int32_t axis = -1;          // the quantized dimension; -1 = per tensor
  Span<double> scales;        // one (per tensor) or one per slice along `axis`
  Span<int64_t> zero_points;  // as many as scales
};

struct Type {
  enum class Kind { kTensor, kToken, kTuple, kScalar, kFunction, kOther };
  Kind kind = Kind::kOther;
  ElementType element = ElementType::kInvalid;  // for quantized types: the storage type
  const QuantType* quant = nullptr;             // quantized tensors and scalars; in the module's arena
  Dims dims;                                    // tensors
  Span<Type> elements;                          // tuples; functions: inputs then outputs (split at num_inputs)
  size_t num_inputs = 0;                        // functions
  std::string_view text;  // as written, for types other than plain tensors and scalars (see TypeToString)

  bool IsTuple() const { return kind == Kind::kTuple; }
};

// The type in MLIR syntax: the source text, or rebuilt for tensors and scalars ("tensor<2x?xf32>").
std::string TypeToString(const Type& t);

struct Attribute;
using NamedAttr = std::pair<std::string_view, Attribute>;
using NamedAttrs = Span<NamedAttr>;

struct Attribute {
  enum class Kind { kUnit, kBool, kInt, kFloat, kString, kArray, kDict, kDense, kSymbol, kType, kEnum, kOpaque };
  Kind kind = Kind::kUnit;
  bool b = false;
  bool splat = false;  // kDense given as one value
  int64_t i = 0;
  double f = 0;
  std::string_view str;   // kString (escapes decoded), kSymbol (without '@'), kEnum (the keyword: `LT` of
                          // `#stablehlo<comparison_direction LT>` or of compare's pretty `LT`), kOpaque (text)
  Span<Attribute> array;  // kArray, and array<i64: ...>
  NamedAttrs dict;        // kDict; also the key/value pairs of #dialect.name<k = v, ...> (kOpaque), and the
                          // dimension numbers of #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]> decoded
  Type type;              // typed literals, dense, kType
  Span<uint8_t> dense;    // kDense: little-endian element bytes (i1: one byte each), whole tensor
  std::string_view text;  // source text of the whole attribute, for messages and printing only: what an op
                          // needs is decoded into the fields above (a front end without text leaves it empty)
  Location loc;

  // Dictionary lookup (kDict or a dialect attribute with key/values); nullptr if absent.
  const Attribute* Get(std::string_view key) const;
};

const Attribute* Find(const NamedAttrs& attrs, std::string_view key);

struct ValueRef {
  std::string_view name;  // without '%'
  uint32_t index = 0;     // %x#1 -> 1
  Location loc;
};

struct Argument {
  std::string_view name;  // without '%'
  Type type;
  NamedAttrs attrs;
  Location loc;
};

struct Region;

// An op as the generic form states it, whichever form it was written in: the parser decodes the custom
// (pretty) syntax of the ops it knows into the attributes, operand order, regions and types of the generic
// form (src/stablehlo/op_syntax.cc), so that nothing after it reads text and a second front end (bytecode)
// fills the same fields.
struct Operation {
  std::string_view name;                // "stablehlo.add", "func.return", "sdy.sharding_constraint", "func.call"
  bool generic = false;                 // printed in the generic "name"(...) form
  bool skipped = false;                 // an op of an unknown dialect whose custom form could not be read: only its
                                        // name, results, operands (the values it reads) and location are known
  uint32_t num_results = 0;             // %0:3 -> 3
  std::string_view result_name;         // %0 -> "0"; empty when the op has no results
  Span<std::string_view> result_names;  // `%a, %b = `: one name per result; empty when result_name names them
                                        // all (`%0:3 = `: %0#0, %0#1, %0#2)
  Span<ValueRef> operands;
  Span<Type> operand_types;
  Span<Type> result_types;
  NamedAttrs attributes;    // properties <{...}> first, then the attribute dictionary, in source order
  std::string_view callee;  // custom_call target or call callee, without '@' (quotes removed)
  Span<Region> regions;
  Location loc;
};

struct Block {
  std::string_view label;  // "bb0", empty for an entry block without label
  Span<Argument> args;
  Span<Operation> ops;
};

struct Region {
  Span<Block> blocks;
};

struct Function {
  std::string_view name;
  std::string_view visibility;  // "public" (default), "private", "nested"
  Span<Argument> args;
  Span<Type> result_types;
  Span<NamedAttrs> result_attrs;
  NamedAttrs attributes;
  Region body;
  Location loc;
};

// Something the parser accepted but could not fully read (an op of an unknown dialect it skipped).
struct Warning {
  Location loc;
  std::string message;
};

struct Module {
  std::string_view name;  // without '@'; empty if unnamed or implicit
  NamedAttrs attributes;
  std::vector<Function> functions;
  std::vector<Operation> other_ops;  // top-level ops that are not functions (kept opaque)
  std::vector<Warning> warnings;     // in source order
  Location loc;
  std::shared_ptr<const Arena> arena;  // owns every string and array above and below

  const Function* FindFunction(std::string_view name) const;
};

static_assert(std::is_trivially_destructible_v<Operation> && std::is_trivially_destructible_v<Function> &&
                  std::is_trivially_destructible_v<Attribute>,
              "IR objects live in the module's arena and are never destroyed one by one");

}  // namespace neuronmem::stablehlo
