#include "base/element_type.h"

namespace neuronmem {
namespace {

using C = ElementClass;
using E = ElementType;

// Ordered by enum value (checked below). c_type values are neuronmem_element_type_t (include/neuronmem/buffer.h).
constexpr ElementTypeInfo kTable[kNumElementTypes] = {
    {E::kInvalid, "invalid", 0, 0, C::kNone, -1},
    {E::kPred, "i1", 1, 1, C::kPred, 0},
    {E::kS2, "i2", 2, 1, C::kSigned, 27},
    {E::kS4, "i4", 4, 1, C::kSigned, 25},
    {E::kS8, "i8", 8, 1, C::kSigned, 1},
    {E::kS16, "i16", 16, 2, C::kSigned, 2},
    {E::kS32, "i32", 32, 4, C::kSigned, 3},
    {E::kS64, "i64", 64, 8, C::kSigned, 4},
    {E::kU2, "ui2", 2, 1, C::kUnsigned, 28},
    {E::kU4, "ui4", 4, 1, C::kUnsigned, 26},
    {E::kU8, "ui8", 8, 1, C::kUnsigned, 5},
    {E::kU16, "ui16", 16, 2, C::kUnsigned, 6},
    {E::kU32, "ui32", 32, 4, C::kUnsigned, 7},
    {E::kU64, "ui64", 64, 8, C::kUnsigned, 8},
    {E::kF16, "f16", 16, 2, C::kFloat, 9},
    {E::kBF16, "bf16", 16, 2, C::kFloat, 10},
    {E::kF32, "f32", 32, 4, C::kFloat, 11},
    {E::kF64, "f64", 64, 8, C::kFloat, 12},
    {E::kF8E3M4, "f8E3M4", 8, 1, C::kFloat, 21},
    {E::kF8E4M3, "f8E4M3", 8, 1, C::kFloat, 20},
    {E::kF8E4M3FN, "f8E4M3FN", 8, 1, C::kFloat, 16},
    {E::kF8E4M3FNUZ, "f8E4M3FNUZ", 8, 1, C::kFloat, 19},
    {E::kF8E4M3B11FNUZ, "f8E4M3B11FNUZ", 8, 1, C::kFloat, 17},
    {E::kF8E5M2, "f8E5M2", 8, 1, C::kFloat, 15},
    {E::kF8E5M2FNUZ, "f8E5M2FNUZ", 8, 1, C::kFloat, 18},
    {E::kF8E8M0FNU, "f8E8M0FNU", 8, 1, C::kFloat, 22},
    {E::kF4E2M1FN, "f4E2M1FN", 4, 1, C::kFloat, 29},
    {E::kF6E2M3FN, "f6E2M3FN", 6, 1, C::kFloat, 23},
    {E::kF6E3M2FN, "f6E3M2FN", 6, 1, C::kFloat, 24},
    {E::kC64, "complex<f32>", 64, 8, C::kComplex, 13},
    {E::kC128, "complex<f64>", 128, 16, C::kComplex, 14},
    {E::kOther, "other", 0, 0, C::kNone, -1},
};

constexpr bool TableInOrder() {
  for (int i = 0; i < kNumElementTypes; ++i) {
    if (static_cast<int>(kTable[i].type) != i) return false;
  }
  return true;
}
static_assert(TableInOrder(), "kTable must list element types in enum order");

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

const ElementTypeInfo& ElementInfo(ElementType t) {
  const auto i = static_cast<size_t>(t);
  return i < static_cast<size_t>(kNumElementTypes) ? kTable[i] : kTable[0];
}

ElementType ParseElementTypeName(std::string_view s) {
  // The common spellings first, by length and bytes (this runs for every type the parser reads).
  if (s.size() == 3) {
    if (s[0] == 'f' && s[1] == '3' && s[2] == '2') return E::kF32;
    if (s[0] == 'i' && s[1] == '3' && s[2] == '2') return E::kS32;
    if (s[0] == 'i' && s[1] == '6' && s[2] == '4') return E::kS64;
    if (s[0] == 'f' && s[1] == '1' && s[2] == '6') return E::kF16;
    if (s[0] == 'f' && s[1] == '6' && s[2] == '4') return E::kF64;
  } else if (s.size() == 4 && s[0] == 'b' && s[1] == 'f' && s[2] == '1' && s[3] == '6') {
    return E::kBF16;
  }
  // "si8" is MLIR's explicitly signed spelling of i8.
  std::string_view name = s;
  if (name.size() > 2 && name[0] == 's' && name[1] == 'i' && AllDigits(name.substr(2))) name.remove_prefix(1);
  for (const ElementTypeInfo& e : kTable) {
    if (e.bytes && e.mlir_name == name) return e.type;
  }
  // Other valid MLIR element types: index, tf32, integers of other widths, other float and complex types.
  if (s == "index" || s == "tf32" || s.rfind("complex<", 0) == 0 || s.rfind("f8", 0) == 0 || s.rfind("f4", 0) == 0 ||
      s.rfind("f6", 0) == 0) {
    return E::kOther;
  }
  if ((s.size() > 1 && s[0] == 'i' && AllDigits(s.substr(1))) ||
      (s.size() > 2 && (s[0] == 's' || s[0] == 'u') && s[1] == 'i' && AllDigits(s.substr(2)))) {
    return E::kOther;
  }
  return E::kInvalid;
}

namespace {

// neuronmem_element_type_t -> type, indexed by the C value (every upload converts one: no search).
constexpr int kNumCTypes = 30;
struct FromCTable {
  ElementType types[kNumCTypes] = {};
  constexpr FromCTable() {
    for (const ElementTypeInfo& e : kTable) {
      if (e.c_type >= 0 && e.c_type < kNumCTypes) types[e.c_type] = e.type;
    }
  }
};
constexpr FromCTable kFromC;

constexpr bool EveryCTypeMapped() {
  int mapped = 0;
  for (const ElementTypeInfo& e : kTable) mapped += e.c_type >= 0;
  for (ElementType t : kFromC.types) {
    if (t == E::kInvalid) return false;
  }
  return mapped == kNumCTypes;
}
static_assert(EveryCTypeMapped(), "kNumCTypes must match the C values in kTable");

}  // namespace

ElementType ElementTypeFromC(int64_t c_value) {
  if (c_value < 0 || c_value >= kNumCTypes) return E::kInvalid;
  return kFromC.types[c_value];
}

int32_t ElementTypeToC(ElementType t) { return ElementInfo(t).c_type; }

}  // namespace neuronmem
