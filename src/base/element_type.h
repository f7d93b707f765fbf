// Element types: the one table the whole library uses (the StableHLO IR, the manifest, buffers, the
// executor). Each type has its MLIR spelling, its bit width, the bytes one element takes in a buffer, its
// class, and the public neuronmem_element_type_t it corresponds to (if any).
//
// Storage: every element occupies a whole number of bytes. Sub-byte integers (i2, i4, ui2, ui4), the 4- and
// 6-bit floats and i1 take one byte per element, as MLIR's dense literals store them.
#pragma once

#include <cstdint>
#include <string_view>

namespace neuronmem {

enum class ElementType : uint8_t {
  kInvalid = 0,  // not an element type (parse failure, an opaque type)
  kPred,         // i1
  kS2,
  kS4,
  kS8,
  kS16,
  kS32,
  kS64,
  kU2,
  kU4,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF8E3M4,
  kF8E4M3,
  kF8E4M3FN,
  kF8E4M3FNUZ,
  kF8E4M3B11FNUZ,
  kF8E5M2,
  kF8E5M2FNUZ,
  kF8E8M0FNU,
  kF4E2M1FN,
  kF6E2M3FN,
  kF6E3M2FN,
  kC64,
  kC128,   // complex<f32>, complex<f64>
  kOther,  // a valid MLIR element type no buffer holds and nothing computes with (index, tf32, ...)
};
constexpr int kNumElementTypes = static_cast<int>(ElementType::kOther) + 1;

enum class ElementClass : uint8_t { kNone, kPred, kSigned, kUnsigned, kFloat, kComplex };

struct ElementTypeInfo {
  ElementType type;
  std::string_view mlir_name;  // "f32", "i1", "ui8", "complex<f32>", "f8E4M3FN"
  uint8_t bits;                // significant bits (1 for pred, 4 for i4, 64 for complex<f32>)
  uint8_t bytes;               // storage bytes per element in a buffer or dense literal (0 for none)
  ElementClass cls;
  int32_t c_type;  // the neuronmem_element_type_t value, or -1 when buffers cannot hold it
};

// The table entry of `t` (kInvalid's entry for out-of-range values).
const ElementTypeInfo& ElementInfo(ElementType t);

inline uint32_t ElementByteSize(ElementType t) { return ElementInfo(t).bytes; }
inline std::string_view ElementTypeName(ElementType t) { return ElementInfo(t).mlir_name; }
inline bool IsFloat(ElementType t) { return ElementInfo(t).cls == ElementClass::kFloat; }
inline bool IsComplex(ElementType t) { return ElementInfo(t).cls == ElementClass::kComplex; }
inline bool IsSignedInt(ElementType t) { return ElementInfo(t).cls == ElementClass::kSigned; }
inline bool IsUnsignedInt(ElementType t) { return ElementInfo(t).cls == ElementClass::kUnsigned; }
inline bool IsInteger(ElementType t) { return IsSignedInt(t) || IsUnsignedInt(t); }

// MLIR spelling -> type: "f32", "si8" and "i8" both -> kS8, "complex<f64>"; kOther for other valid MLIR
// element types (index, tf32, wider or odd-width integers), kInvalid for anything else.
ElementType ParseElementTypeName(std::string_view s);

// The public C value (neuronmem_element_type_t) <-> type. FromCType returns kInvalid for values that are no
// buffer element type (validate C input with it before casting to the C enum).
ElementType ElementTypeFromC(int64_t c_value);
int32_t ElementTypeToC(ElementType t);  // -1 when buffers cannot hold t

}  // namespace neuronmem
