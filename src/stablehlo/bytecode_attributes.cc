// The artifact reader's attributes and types (bytecode_reader.h): the builtin dialect's encodings
// (mlir/include/mlir/IR/BuiltinDialectBytecode.td) and the vhlo dialect's (openxla/stablehlo
// stablehlo/dialect/VhloBytecode.cpp), resolved lazily from the attribute/type offset table with cycle and
// depth checks; dense data as the text parser keeps it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "stablehlo/bytecode_reader.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo::bytecode {

const Attribute& Reader::Attr(Cursor* c, const char* what) {
  const size_t at = c->Offset();
  return AttrAt(c->VarInt(what), at, what);
}

const Attribute& Reader::AttrAt(uint64_t index, size_t offset, const char* what) {
  CheckIndex(index, num_attrs_, offset, what, "an attribute");
  ResolveAttr(index);
  return AttrSlot(index);
}

const Type& Reader::TypeRef(Cursor* c, const char* what) {
  const size_t at = c->Offset();
  return TypeAt(c->VarInt(what), at, what);
}

const Type& Reader::TypeAt(uint64_t index, size_t offset, const char* what) {
  CheckIndex(index, types_.size(), offset, what, "a type");
  ResolveType(index);
  return types_[index];
}

void Reader::CheckIndex(uint64_t index, size_t size, size_t offset, const char* what, const char* table) {
  if (index >= size) {
    FailAt(offset, std::string("expected ") + what + ": " + table + " index below " + std::to_string(size) +
                       ", found " + std::to_string(index));
  }
}

Location Reader::LocAt(uint64_t index, size_t offset) {
  AttrAt(index, offset, "a location");
  if (attr_class_[index] != AttrClass::kLocation) FailAt(offset, "expected a location attribute");
  return AttrSlot(index).loc;
}

Cursor Reader::BeginEntry(Entry* e, const char* kind, uint64_t index) {
  Cursor c(data_, e->data, e->data + e->size, kind);
  if (e->state == 1) c.Fail(std::string(kind) + " #" + std::to_string(index) + " refers to itself (a cycle)");
  if (++resolve_depth_ > kMaxDepth) c.Fail("attributes and types nest deeper than " + std::to_string(kMaxDepth));
  e->state = 1;
  return c;
}

void Reader::EndEntry(Entry* e, Cursor* c, const char* kind) {
  if (!c->Empty()) c->Fail(std::string("expected the end of the ") + kind);
  e->state = 2;
  --resolve_depth_;
}

void Reader::ResolveAttr(uint64_t index) {
  Entry& e = attr_entries_[index];
  if (e.state == 2) return;
  Cursor c = BeginEntry(&e, "attribute entry", index);
  // attr_store_ does not grow while reading. The bytes of a blank attribute (an aggregate with a trivial
  // destructor: memcpy creates it): value-initialising the 184 bytes compiled to `rep stos`, half of this
  // function's time; a copy of known size is a few vector stores.
  static const Attribute kBlank;
  std::memcpy(attr_store_[index].bytes, &kBlank, sizeof(Attribute));
  Attribute& a = AttrSlot(index);
  AttrClass cls = AttrClass::kValue;
  const Dialect& d = dialects_[e.dialect];
  if (!e.custom) {  // the textual form, NUL-terminated
    a.kind = Attribute::Kind::kOpaque;
    a.text = arena_->CopyString(c.CString("an attribute's text"));
    a.str = a.text;
  } else if (d.kind == DialectKind::kBuiltin) {
    ReadBuiltinAttr(&c, &a, &cls);
  } else if (d.kind == DialectKind::kVhlo) {
    ReadVhloAttr(&c, &a);
  } else {
    c.Fail("expected an attribute of the builtin or vhlo dialect (or in text form), found one of dialect \"" +
           std::string(d.name) + "\" in its own encoding");
  }
  attr_class_[index] = cls;
  EndEntry(&e, &c, "attribute entry");
}

void Reader::ResolveType(uint64_t index) {
  Entry& e = type_entries_[index];
  if (e.state == 2) return;
  Cursor c = BeginEntry(&e, "type entry", index);
  Type& t = types_[index];
  const Dialect& d = dialects_[e.dialect];
  if (!e.custom) {
    t.kind = Type::Kind::kOther;
    t.text = arena_->CopyString(c.CString("a type's text"));
  } else if (d.kind == DialectKind::kBuiltin) {
    ReadBuiltinType(&c, &t);
  } else if (d.kind == DialectKind::kVhlo) {
    ReadVhloType(&c, &t);
  } else {
    c.Fail("expected a type of the builtin or vhlo dialect (or in text form), found one of dialect \"" +
           std::string(d.name) + "\" in its own encoding");
  }
  EndEntry(&e, &c, "type entry");
}

int64_t Reader::ReadAPInt(Cursor* c, unsigned bits, bool is_signed) {
  uint64_t v;
  if (bits <= 8) {
    v = c->Byte("an integer value");
  } else if (bits <= 64) {
    v = static_cast<uint64_t>(c->SignedVarInt("an integer value"));
  } else {
    const uint64_t words = c->Count("an integer's word count");
    v = 0;
    for (uint64_t i = 0; i < words; ++i) {
      const uint64_t w = static_cast<uint64_t>(c->SignedVarInt("an integer word"));
      if (i == 0) v = w;
    }
    return static_cast<int64_t>(v);
  }
  if (bits < 64) {
    v &= (uint64_t{1} << bits) - 1;
    if (is_signed && bits > 1 && (v >> (bits - 1)) & 1) v |= ~((uint64_t{1} << bits) - 1);
  }
  return static_cast<int64_t>(v);
}

double Reader::ReadAPFloat(Cursor* c, ElementType t) {
  const unsigned bits = ElementInfo(t).bits;
  const uint64_t v = static_cast<uint64_t>(ReadAPInt(c, bits ? bits : 64, false));
  switch (t) {
    case ElementType::kF64: {
      double d;
      std::memcpy(&d, &v, 8);
      return d;
    }
    case ElementType::kF32: {
      const uint32_t u = static_cast<uint32_t>(v);
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case ElementType::kBF16: {
      const uint32_t u = static_cast<uint32_t>(v) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case ElementType::kF16: return HalfToDouble(static_cast<uint16_t>(v));
    default: return static_cast<double>(v);  // narrow float formats: the bits (rare in attributes)
  }
}

// The bytes of a dense literal as the text parser keeps them: little-endian elements, i1 one byte each
// (MLIR may pack i1 as bits), a splat as one element.
Span<uint8_t> Reader::DenseBytes(const Type& type, const uint8_t* blob, uint64_t size, bool* splat, size_t offset) {
  *splat = false;
  // `blob` is in the arena's copy of the input: the IR's dense data points into it, uncopied.
  if (type.kind != Type::Kind::kTensor) return Span<uint8_t>(blob, size);
  const uint32_t esize = ElementByteSize(type.element);
  if (!esize) return Span<uint8_t>(blob, size);
  uint64_t count = 1;
  for (int64_t d : type.dims) {
    if (d < 0) FailAt(offset, "expected a static shape for a dense literal, found " + TypeToString(type));
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) || count > (uint64_t{1} << 40)) {
      FailAt(offset, "the dense literal's shape " + TypeToString(type) + " is too large");
    }
  }
  if (type.element == ElementType::kPred) {
    std::vector<uint8_t> bytes;
    // MLIR keeps i1 packed 8 to a byte; one byte 0x00 or 0xFF is a splat (DenseIntOrFPElementsAttr).
    if (size == 1 && count != 1 && (blob[0] == 0 || blob[0] == 0xFF)) {
      *splat = true;
      bytes.push_back(blob[0] ? 1 : 0);
    } else if (size == (count + 7) / 8) {
      bytes.resize(count);
      for (uint64_t i = 0; i < count; ++i) bytes[i] = (blob[i / 8] >> (i % 8)) & 1;
    } else if (size == count) {
      bytes.resize(size);
      for (uint64_t i = 0; i < size; ++i) bytes[i] = blob[i] ? 1 : 0;
    } else {
      FailAt(offset, "expected " + std::to_string(count) + " bytes (or " + std::to_string((count + 7) / 8) +
                         " packed) of i1 data for " + TypeToString(type) + ", found " + std::to_string(size));
    }
    return arena_->Copy(bytes);
  }
  if (size == esize && count != 1) {
    *splat = true;
  } else if (size != count * esize) {
    FailAt(offset, "expected " + std::to_string(count * esize) + " bytes of dense data for " + TypeToString(type) +
                       ", found " + std::to_string(size));
  }
  return Span<uint8_t>(blob, size);
}

std::string_view Reader::AttrName(const Attribute& a, size_t offset) {
  if (a.kind != Attribute::Kind::kString) FailAt(offset, "expected a string attribute as an attribute name");
  return a.str;
}

// The list in the arena; read through a vector kept per resolve depth (lists nest through references).
Span<Attribute> Reader::ReadAttrList(Cursor* c, const char* what) {
  const uint64_t n = c->Count(what);
  std::vector<Attribute>& v = ScratchVector(&scratch_attrs_, resolve_depth_);
  v.reserve(n);
  for (uint64_t i = 0; i < n; ++i) v.push_back(Attr(c, what));
  return arena_->Copy(v);
}

// (name, value)* with string attributes as names: builtin DictionaryAttr and vhlo DictionaryV1Attr.
NamedAttrs Reader::ReadDict(Cursor* c) {
  const uint64_t n = c->Count("a dictionary's entry count", 2);
  std::vector<NamedAttr>& d = ScratchVector(&scratch_named_, resolve_depth_);
  d.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const size_t at = c->Offset();
    std::string_view name = AttrName(Attr(c, "an attribute name"), at);
    d.emplace_back(name, Attr(c, "an attribute value"));
  }
  return arena_->Copy(d);
}

// A tensor shape: signed varints, MLIR's dynamic size (INT64_MIN) -> -1.
Span<int64_t> Reader::ReadShape(Cursor* c) {
  const uint64_t n = c->Count("a tensor's rank");
  std::vector<int64_t>& dims = ScratchVector(&scratch_dims_, resolve_depth_);
  dims.resize(n);
  for (auto& d : dims) {
    const size_t at = c->Offset();
    d = c->SignedVarInt("a dimension");
    if (d == INT64_MIN) {
      d = -1;
    } else if (d < 0) {
      FailAt(at, "expected a dimension >= 0 (or dynamic), found " + std::to_string(d));
    }
  }
  return arena_->Copy(dims);
}

Type Reader::ComplexOf(const Type& et) {
  Type t;
  t.kind = Type::Kind::kScalar;
  const bool scalar = et.kind == Type::Kind::kScalar;
  t.element = scalar && et.element == ElementType::kF32   ? ElementType::kC64
              : scalar && et.element == ElementType::kF64 ? ElementType::kC128
                                                          : ElementType::kOther;
  if (t.element == ElementType::kOther) t.text = arena_->CopyString("complex<" + TypeToString(et) + ">");
  return t;
}

void Reader::ReadBuiltinAttr(Cursor* c, Attribute* a, AttrClass* cls) {
  const size_t code_at = c->Offset();
  const uint64_t code = c->VarInt("a builtin attribute code");
  switch (code) {
    case 0:  // ArrayAttr
      a->kind = Attribute::Kind::kArray;
      a->array = ReadAttrList(c, "an array element");
      return;
    case 1:  // DictionaryAttr: (StringAttr name, value)*
      a->kind = Attribute::Kind::kDict;
      a->dict = ReadDict(c);
      return;
    case 2:  // StringAttr
      a->kind = Attribute::Kind::kString;
      a->str = String(c, "a string");
      return;
    case 3:  // StringAttr with a type
      a->kind = Attribute::Kind::kString;
      a->str = String(c, "a string");
      a->type = TypeRef(c, "a string's type");
      return;
    case 4:    // FlatSymbolRefAttr
    case 5: {  // SymbolRefAttr
      const size_t at = c->Offset();
      a->kind = Attribute::Kind::kSymbol;
      a->str = AttrName(Attr(c, "a symbol"), at);
      if (code == 5) ReadAttrList(c, "a nested symbol");
      return;
    }
    case 6:  // TypeAttr
      a->kind = Attribute::Kind::kType;
      a->type = TypeRef(c, "a type");
      return;
    case 7:  // UnitAttr
      a->kind = Attribute::Kind::kUnit;
      return;
    case 8: {  // IntegerAttr
      a->kind = Attribute::Kind::kInt;
      a->type = TypeRef(c, "an integer's type");
      unsigned bits = 64;
      bool is_signed = true;
      if (a->type.kind == Type::Kind::kScalar && a->type.element != ElementType::kOther) {
        bits = ElementInfo(a->type.element).bits;
        is_signed = !IsUnsignedInt(a->type.element);
      }
      a->i = ReadAPInt(c, bits, is_signed);
      if (a->type.element == ElementType::kPred) {
        a->kind = Attribute::Kind::kBool;
        a->b = a->i != 0;
      }
      return;
    }
    case 9:  // FloatAttr
      a->kind = Attribute::Kind::kFloat;
      a->type = TypeRef(c, "a float's type");
      if (a->type.kind != Type::Kind::kScalar || !IsFloat(a->type.element)) c->Fail("expected a float type");
      a->f = ReadAPFloat(c, a->type.element);
      return;
    case 10: {  // CallSiteLoc(callee, caller): the callee's position
      *cls = AttrClass::kLocation;
      a->kind = Attribute::Kind::kOpaque;
      const size_t at = c->Offset();
      a->loc = LocAt(c->VarInt("a call site's callee"), at);
      const size_t at2 = c->Offset();
      LocAt(c->VarInt("a call site's caller"), at2);
      return;
    }
    case 11: {  // FileLineColLoc(filename, line, column)
      *cls = AttrClass::kLocation;
      a->kind = Attribute::Kind::kOpaque;
      const size_t at = c->Offset();
      AttrName(Attr(c, "a location's file name"), at);
      a->loc.line = static_cast<uint32_t>(c->VarInt("a line"));
      a->loc.column = static_cast<uint32_t>(c->VarInt("a column"));
      return;
    }
    case 12:    // FusedLoc(locations)
    case 13: {  // FusedLoc with metadata: the first location with a position
      *cls = AttrClass::kLocation;
      a->kind = Attribute::Kind::kOpaque;
      const uint64_t n = c->Count("a fused location's count");
      for (uint64_t i = 0; i < n; ++i) {
        const size_t at = c->Offset();
        const Location l = LocAt(c->VarInt("a fused location"), at);
        if (a->loc.line == 0) a->loc = l;
      }
      if (code == 13) Attr(c, "a fused location's metadata");
      return;
    }
    case 14: {  // NameLoc(name, child)
      *cls = AttrClass::kLocation;
      a->kind = Attribute::Kind::kOpaque;
      const size_t at = c->Offset();
      AttrName(Attr(c, "a location's name"), at);
      const size_t at2 = c->Offset();
      a->loc = LocAt(c->VarInt("a name location's child"), at2);
      return;
    }
    case 15:  // UnknownLoc
      *cls = AttrClass::kLocation;
      a->kind = Attribute::Kind::kOpaque;
      return;
    case 16: {  // DenseResourceElementsAttr(type, resource handle)
      a->kind = Attribute::Kind::kDense;
      a->type = TypeRef(c, "a dense resource's type");
      const size_t at = c->Offset();
      const uint64_t h = c->VarInt("a resource handle");
      if (h >= resources_.size() || !resources_[h].present) {
        FailAt(at, "expected a resource handle below " + std::to_string(resources_.size()) + " with blob data, found " +
                       std::to_string(h));
      }
      a->dense = DenseBytes(a->type, resources_[h].data, resources_[h].size, &a->splat, at);
      return;
    }
    case 17: {  // DenseArrayAttr(element type, size, blob): array<i64: ...>
      a->kind = Attribute::Kind::kArray;
      const Type& et = TypeRef(c, "a dense array's element type");
      const uint64_t n = c->VarInt("a dense array's size");
      const uint64_t bytes = c->Count("a dense array's byte count", 0);
      const size_t at = c->Offset();
      const uint8_t* blob = c->Bytes(bytes, "a dense array's data");
      const uint32_t es = et.kind == Type::Kind::kScalar ? ElementByteSize(et.element) : 0;
      if (!es || (et.element != ElementType::kPred && n * es != bytes) ||
          (et.element == ElementType::kPred && n != bytes && (n + 7) / 8 != bytes)) {
        FailAt(at, "expected " + std::to_string(n) + " elements of data for a dense array, found " +
                       std::to_string(bytes) + " bytes");
      }
      std::vector<Attribute> elems(n);
      for (uint64_t i = 0; i < n; ++i) {
        Attribute& e = elems[i];
        e.type = et;
        if (et.element == ElementType::kPred) {
          e.kind = Attribute::Kind::kBool;
          e.b = n == bytes ? blob[i] != 0 : ((blob[i / 8] >> (i % 8)) & 1);
        } else if (IsFloat(et.element)) {
          e.kind = Attribute::Kind::kFloat;
          if (es == 4) {
            float f;
            std::memcpy(&f, blob + i * 4, 4);
            e.f = f;
          } else if (es == 8) {
            std::memcpy(&e.f, blob + i * 8, 8);
          }
        } else {
          e.kind = Attribute::Kind::kInt;
          uint64_t v = 0;
          std::memcpy(&v, blob + i * es, std::min<uint32_t>(es, 8));
          if (es < 8 && !IsUnsignedInt(et.element) && (v >> (es * 8 - 1)) & 1) v |= ~((uint64_t{1} << (es * 8)) - 1);
          e.i = static_cast<int64_t>(v);
        }
      }
      a->array = arena_->Copy(elems);
      return;
    }
    case 18: {  // DenseIntOrFPElementsAttr(type, blob)
      a->kind = Attribute::Kind::kDense;
      a->type = TypeRef(c, "a dense literal's type");
      const uint64_t n = c->Count("a dense literal's byte count", 0);
      const size_t at = c->Offset();
      a->dense = DenseBytes(a->type, c->Bytes(n, "a dense literal's data"), n, &a->splat, at);
      return;
    }
    case 21:  // DistinctAttr(referenced)
      *a = Attr(c, "a distinct attribute's value");
      return;
    case 22: {  // FileLineColRange(filename, [line, column, ...])
      *cls = AttrClass::kLocation;
      a->kind = Attribute::Kind::kOpaque;
      const size_t at = c->Offset();
      AttrName(Attr(c, "a location's file name"), at);
      const uint64_t n = c->Count("a location range's count");
      if (n > 4) c->Fail("expected at most 4 numbers in a location range");
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t v = c->VarInt("a line or column");
        if (i == 0) a->loc.line = static_cast<uint32_t>(v);
        if (i == 1) a->loc.column = static_cast<uint32_t>(v);
      }
      return;
    }
    default:
      FailAt(code_at,
             "expected a builtin attribute this reader knows (codes 0-18, 21, 22), found code " + std::to_string(code));
  }
}

void Reader::ReadVhloAttr(Cursor* c, Attribute* a) {
  const size_t code_at = c->Offset();
  const uint64_t code = c->VarInt("a vhlo attribute code");
  switch (code) {
    case 1:  // ArrayV1Attr
      a->kind = Attribute::Kind::kArray;
      a->array = ReadAttrList(c, "an array element");
      return;
    case 2: {  // BooleanV1Attr
      const uint64_t v = c->VarInt("a boolean");
      if (v > 1) FailAt(code_at, "expected a boolean 0 or 1, found " + std::to_string(v));
      a->kind = Attribute::Kind::kBool;
      a->b = v == 1;
      a->text = v ? "true" : "false";
      return;
    }
    case 5: {  // CustomCallApiVersionV1Attr: an i32 in StableHLO
      const uint64_t v = c->VarInt("an api version");
      if (v > 4) FailAt(code_at, "expected a custom call api version 0-4, found " + std::to_string(v));
      a->kind = Attribute::Kind::kInt;
      a->i = static_cast<int64_t>(v);
      a->type.kind = Type::Kind::kScalar;
      a->type.element = ElementType::kS32;
      return;
    }
    case 6:  // DictionaryV1Attr: (name, value)*
      a->kind = Attribute::Kind::kDict;
      a->dict = ReadDict(c);
      return;
    case 8: {  // FloatV1Attr
      a->kind = Attribute::Kind::kFloat;
      a->type = TypeRef(c, "a float's type");
      if (a->type.kind != Type::Kind::kScalar || !IsFloat(a->type.element)) c->Fail("expected a float type");
      a->f = ReadAPFloat(c, a->type.element);
      return;
    }
    case 9: {  // IntegerV1Attr
      a->kind = Attribute::Kind::kInt;
      a->type = TypeRef(c, "an integer's type");
      if (a->type.kind != Type::Kind::kScalar || (!IsInteger(a->type.element) && a->type.text != "index")) {
        c->Fail("expected an integer or index type for an integer attribute");
      }
      const unsigned bits = a->type.element == ElementType::kOther ? 64 : ElementInfo(a->type.element).bits;
      a->i = ReadAPInt(c, bits, !IsUnsignedInt(a->type.element));
      return;
    }
    case 10: {  // OutputOperandAliasV1Attr
      a->kind = Attribute::Kind::kOpaque;
      auto ints = [&](const char* what) {
        const uint64_t n = c->Count(what);
        std::vector<Attribute> v(n);
        for (auto& e : v) {
          e.kind = Attribute::Kind::kInt;
          e.i = c->SignedVarInt(what);
        }
        Attribute arr;
        arr.kind = Attribute::Kind::kArray;
        arr.array = arena_->Copy(v);
        return arr;
      };
      std::vector<NamedAttr> d;
      d.emplace_back("output_tuple_indices", ints("an output tuple index"));
      Attribute idx;
      idx.kind = Attribute::Kind::kInt;
      idx.i = c->SignedVarInt("an operand index");
      d.emplace_back("operand_index", idx);
      d.emplace_back("operand_tuple_indices", ints("an operand tuple index"));
      a->dict = arena_->Copy(d);
      a->text = "#stablehlo.output_operand_alias";
      a->str = a->text;
      return;
    }
    case 14:  // StringV1Attr
      a->kind = Attribute::Kind::kString;
      a->str = String(c, "a string");
      return;
    case 15: {  // TensorV1Attr(type, blob)
      a->kind = Attribute::Kind::kDense;
      a->type = TypeRef(c, "a tensor's type");
      const uint64_t n = c->Count("a tensor's byte count", 0);
      const size_t at = c->Offset();
      a->dense = DenseBytes(a->type, c->Bytes(n, "a tensor's data"), n, &a->splat, at);
      return;
    }
    case 17:  // TypeV1Attr
      a->kind = Attribute::Kind::kType;
      a->type = TypeRef(c, "a type");
      return;
    case 18: {  // TypeExtensionsV1Attr(bounds)
      a->kind = Attribute::Kind::kOpaque;
      const uint64_t n = c->Count("a bound count");
      std::string text = "#stablehlo.bounds<";
      for (uint64_t i = 0; i < n; ++i) {
        const int64_t b = c->SignedVarInt("a bound");
        text += (i ? ", " : "") + (b == INT64_MIN ? std::string("?") : std::to_string(b));
      }
      a->text = arena_->CopyString(text + ">");
      a->str = a->text;
      return;
    }
    case 20: {  // ResultAccuracyV1Attr(atol, rtol, ulps, mode)
      a->kind = Attribute::Kind::kOpaque;
      std::vector<NamedAttr> d(4);
      d[0].first = "atol";
      d[0].second.kind = Attribute::Kind::kFloat;
      d[0].second.f = ReadAPFloat(c, ElementType::kF64);
      d[1].first = "rtol";
      d[1].second.kind = Attribute::Kind::kFloat;
      d[1].second.f = ReadAPFloat(c, ElementType::kF64);
      d[2].first = "ulps";
      d[2].second.kind = Attribute::Kind::kInt;
      d[2].second.i = c->SignedVarInt("ulps");
      d[3].first = "mode";
      d[3].second = Attr(c, "a result accuracy mode");
      a->dict = arena_->Copy(d);
      a->text = "#stablehlo.result_accuracy";
      a->str = a->text;
      return;
    }
    default:
      for (const VhloEnum& e : kVhloEnums) {
        if (e.code != code) continue;
        const size_t at = c->Offset();
        const uint64_t v = c->VarInt("an enum value");
        if (v >= e.cases.size() || !*e.cases[v]) {
          FailAt(at, std::string("expected a ") + e.mnemonic + " value below " + std::to_string(e.cases.size()) +
                         ", found " + std::to_string(v));
        }
        // An enum: the keyword in str, as the text parser has `#stablehlo<comparison_direction LT>`.
        a->kind = Attribute::Kind::kEnum;
        a->str = e.cases[v];
        const std::string text = code == 19 ? std::string("#stablehlo.result_accuracy_mode<") + e.cases[v] + ">"
                                            : std::string("#stablehlo<") + e.mnemonic + " " + e.cases[v] + ">";
        a->text = arena_->CopyString(text);
        return;
      }
      FailAt(code_at, "expected a vhlo attribute code this reader knows (1-20), found " + std::to_string(code));
  }
}

Type Reader::TensorOf(const Type& element, Span<int64_t> dims, size_t offset) {
  Type t;
  t.kind = Type::Kind::kTensor;
  if (element.kind != Type::Kind::kScalar) FailAt(offset, "expected a scalar element type for a tensor");
  t.element = element.element;
  t.quant = element.quant;
  t.dims = dims;
  if (element.element == ElementType::kOther || element.quant) {
    std::string s = "tensor<";
    for (int64_t d : dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
    t.text = arena_->CopyString(s + std::string(element.text) + ">");
  }
  return t;
}

void Reader::ReadVhloType(Cursor* c, Type* t) {
  const size_t code_at = c->Offset();
  const uint64_t code = c->VarInt("a vhlo type code");
  auto types = [&](const char* what) {
    const uint64_t n = c->Count(what);
    std::vector<Type> v;
    v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) v.push_back(TypeRef(c, what));
    return v;
  };
  std::string_view other;
  const ElementType e = VhloElement(code, &other);
  if (e != ElementType::kInvalid) {
    t->kind = Type::Kind::kScalar;
    t->element = e;
    if (e == ElementType::kOther) t->text = other;
    return;
  }
  switch (code) {
    case 1:  // ComplexV1Type
      *t = ComplexOf(TypeRef(c, "a complex element type"));
      return;
    case 8: {  // FunctionV1Type(inputs, outputs)
      std::vector<Type> in = types("a function input");
      std::vector<Type> outs = types("a function result");
      t->kind = Type::Kind::kFunction;
      t->num_inputs = in.size();
      in.insert(in.end(), outs.begin(), outs.end());
      t->elements = arena_->Copy(in);
      return;
    }
    case 20:
    case 21: {  // RankedTensorV1Type([encoding], shape, element)
      if (code == 21) Attr(c, "a tensor encoding");
      Span<int64_t> dims = ReadShape(c);
      const size_t at = c->Offset();
      *t = TensorOf(TypeRef(c, "a tensor element type"), dims, at);
      return;
    }
    case 22:  // TokenV1Type
      t->kind = Type::Kind::kToken;
      t->text = "!stablehlo.token";
      return;
    case 23:  // TupleV1Type
      t->kind = Type::Kind::kTuple;
      t->elements = arena_->Copy(types("a tuple element"));
      return;
    case 24:
    case 30: {  // UniformQuantizedV1Type / UniformQuantizedPerAxisV1Type
      auto* q = static_cast<QuantType*>(arena_->Allocate(sizeof(QuantType), alignof(QuantType)));
      new (q) QuantType();
      const uint64_t flags = c->VarInt("quantization flags");
      const Type& storage = TypeRef(c, "a storage type");
      const Type& expressed = TypeRef(c, "an expressed type");
      if (storage.kind != Type::Kind::kScalar || !IsInteger(storage.element) || expressed.kind != Type::Kind::kScalar ||
          !IsFloat(expressed.element)) {
        c->Fail("expected an integer storage type and a float expressed type");
      }
      q->storage = storage.element;
      q->expressed = expressed.element;
      std::vector<double> scales;
      std::vector<int64_t> zps;
      if (code == 24) {
        scales.push_back(ReadAPFloat(c, ElementType::kF64));
        zps.push_back(c->SignedVarInt("a zero point"));
        q->storage_min = c->SignedVarInt("a storage minimum");
        q->storage_max = c->SignedVarInt("a storage maximum");
      } else {
        q->axis = static_cast<int32_t>(std::min<uint64_t>(c->VarInt("a quantized dimension"), INT32_MAX));
        q->storage_min = c->SignedVarInt("a storage minimum");
        q->storage_max = c->SignedVarInt("a storage maximum");
        const uint64_t n = c->Count("a scale count");
        for (uint64_t i = 0; i < n; ++i) scales.push_back(ReadAPFloat(c, ElementType::kF64));
        const uint64_t m = c->Count("a zero point count");
        if (m != n) c->Fail("expected as many zero points as scales");
        for (uint64_t i = 0; i < m; ++i) zps.push_back(c->SignedVarInt("a zero point"));
      }
      q->scales = arena_->Copy(scales);
      q->zero_points = arena_->Copy(zps);
      t->kind = Type::Kind::kScalar;
      t->element = storage.element;
      t->quant = q;
      std::string s = "!quant.uniform<" + std::string((flags & 1) ? "i" : "u") +
                      std::to_string(ElementInfo(storage.element).bits) + ":" +
                      std::string(ElementTypeName(expressed.element));
      if (q->axis >= 0) s += ":" + std::to_string(q->axis);
      s += ", ";
      if (q->axis >= 0) s += "{";
      for (size_t i = 0; i < scales.size(); ++i) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s%.6e", i ? "," : "", scales[i]);
        s += buf;
        if (zps[i]) s += ":" + std::to_string(zps[i]);
      }
      if (q->axis >= 0) s += "}";
      t->text = arena_->CopyString(s + ">");
      return;
    }
    case 25: {  // UnrankedTensorV1Type
      const Type& et = TypeRef(c, "a tensor element type");
      t->kind = Type::Kind::kOther;
      t->text = arena_->CopyString("tensor<*x" + TypeToString(et) + ">");
      return;
    }
    case 41: {  // RankedBufferV1Type(shape, element)
      Span<int64_t> dims = ReadShape(c);
      const Type& et = TypeRef(c, "a buffer element type");
      std::string s = "memref<";
      for (int64_t d : dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
      t->kind = Type::Kind::kOther;
      t->text = arena_->CopyString(s + TypeToString(et) + ">");
      return;
    }
    default: FailAt(code_at, "expected a vhlo type code this reader knows (0-41), found " + std::to_string(code));
  }
}

void Reader::ReadBuiltinType(Cursor* c, Type* t) {
  const size_t code_at = c->Offset();
  const uint64_t code = c->VarInt("a builtin type code");
  switch (code) {
    case 0: {  // IntegerType(width << 2 | signedness)
      const uint64_t ws = c->VarInt("an integer type's width");
      const uint64_t width = ws >> 2, sign = ws & 3;  // 0 signless, 1 signed, 2 unsigned
      std::string name = (sign == 2 ? "ui" : sign == 1 ? "si" : "i") + std::to_string(width);
      t->kind = Type::Kind::kScalar;
      t->element = ParseElementTypeName(name);
      if (t->element == ElementType::kInvalid) t->element = ElementType::kOther;
      if (t->element == ElementType::kOther) t->text = arena_->CopyString(name);
      return;
    }
    case 1:
      t->kind = Type::Kind::kScalar;
      t->element = ElementType::kOther;
      t->text = "index";
      return;
    case 2: {  // FunctionType
      std::vector<Type> v;
      const uint64_t n = c->Count("a function input count");
      for (uint64_t i = 0; i < n; ++i) v.push_back(TypeRef(c, "a function input"));
      const uint64_t m = c->Count("a function result count");
      for (uint64_t i = 0; i < m; ++i) v.push_back(TypeRef(c, "a function result"));
      t->kind = Type::Kind::kFunction;
      t->num_inputs = n;
      t->elements = arena_->Copy(v);
      return;
    }
    case 3:  // bf16, f16, f32, f64
    case 4:
    case 5:
    case 6: {
      static constexpr ElementType kFloats[] = {ElementType::kBF16, ElementType::kF16, ElementType::kF32,
                                                ElementType::kF64};
      t->kind = Type::Kind::kScalar;
      t->element = kFloats[code - 3];
      return;
    }
    case 9:  // ComplexType
      *t = ComplexOf(TypeRef(c, "a complex element type"));
      return;
    case 12:
      t->kind = Type::Kind::kOther;
      t->text = "none";
      return;
    case 13:
    case 14: {  // RankedTensorType([encoding], shape, element)
      if (code == 14) Attr(c, "a tensor encoding");
      Span<int64_t> dims = ReadShape(c);
      const size_t at = c->Offset();
      *t = TensorOf(TypeRef(c, "a tensor element type"), dims, at);
      return;
    }
    case 15: {  // TupleType
      std::vector<Type> v;
      const uint64_t n = c->Count("a tuple element count");
      for (uint64_t i = 0; i < n; ++i) v.push_back(TypeRef(c, "a tuple element"));
      t->kind = Type::Kind::kTuple;
      t->elements = arena_->Copy(v);
      return;
    }
    default:
      FailAt(code_at,
             "expected a builtin type this reader knows (integer, index, function, bf16, f16, f32, f64, "
             "complex, none, tensor, tuple), found code " +
                 std::to_string(code));
  }
}

}  // namespace neuronmem::stablehlo::bytecode
