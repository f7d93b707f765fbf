// The artifact writer's attributes and types (bytecode_writer.h): IR attributes and types -> the vhlo
// dialect's encodings (openxla/stablehlo VhloBytecode.cpp), the builtin ones for locations and for the
// dictionaries of discardable attributes (BuiltinDialectBytecode.td), and the defaults vhlo requires where
// StableHLO leaves an attribute out (StablehloLegalizeToVhlo.cpp's addDefaults).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "stablehlo/bytecode_writer.h"

namespace neuronmem::stablehlo::bytecode {
namespace {

// vhlo attribute codes (VhloBytecode.cpp: AttributeCode).
enum : uint8_t {
  kArrayV1 = 1,
  kBooleanV1 = 2,
  kCustomCallApiVersionV1 = 5,
  kDictionaryV1 = 6,
  kFloatV1 = 8,
  kIntegerV1 = 9,
  kOutputOperandAliasV1 = 10,
  kStringV1 = 14,
  kTensorV1 = 15,
  kTypeV1 = 17,
  kResultAccuracyV1 = 20,
};
// builtin attribute codes (BuiltinDialectBytecode.td).
enum : uint8_t { kBuiltinDictionary = 1, kBuiltinString = 2, kBuiltinUnit = 7, kFileLineColLoc = 11, kUnknownLoc = 15 };

// The vhlo type code of an element type, or -1.
int VhloCode(ElementType t) {
  static const std::vector<int> codes = [] {
    std::vector<int> c(256, -1);
    for (uint64_t code = 0; code < 64; ++code) {
      std::string_view other;
      const ElementType e = VhloElement(code, &other);
      if (e != ElementType::kInvalid && e != ElementType::kOther) c[static_cast<size_t>(e)] = static_cast<int>(code);
    }
    return c;
  }();
  const size_t i = static_cast<size_t>(t);
  return i < codes.size() ? codes[i] : -1;
}

// The enum an attribute of this name holds (by its mnemonic in kVhloEnums).
const VhloEnum* EnumFor(std::string_view name, std::string_view keyword) {
  const char* mnemonic = name == "comparison_direction" ? "comparison_direction"
                         : name == "compare_type"       ? "comparison_type"
                         : name == "fft_type"           ? "fft_type"
                         : name == "precision_config"   ? "precision"
                         : name == "rng_algorithm"      ? "rng_algorithm"
                         : name == "rng_distribution"   ? "rng_distribution"
                         : name == "transpose_a"        ? "transpose"
                         : name == "mode"               ? "result_accuracy_mode"
                                                        : nullptr;
  const VhloEnum* found = nullptr;
  for (const VhloEnum& e : kVhloEnums) {
    if (mnemonic ? std::string_view(e.mnemonic) == mnemonic
                 : std::find_if(e.cases.begin(), e.cases.end(), [&](const char* c) { return keyword == c; }) !=
                       e.cases.end()) {
      if (found && !mnemonic) return nullptr;  // ambiguous without the attribute's name
      found = &e;
    }
  }
  return found;
}

uint16_t DoubleToHalf(double d) {
  const float f = static_cast<float>(d);
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = x & 0x7FFFFF;
  if (((x >> 23) & 0xFF) == 0xFF) return static_cast<uint16_t>(sign | 0x7C00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7C00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = sign | static_cast<uint32_t>(exp) << 10 | mant >> 13;
  const uint32_t rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(h);
}

// Attribute names whose lists are vhlo arrays of attributes; other integer or boolean lists of an op's
// properties are StableHLO's dense arrays, which vhlo keeps as tensors.
bool IsAttributeList(std::string_view name) {
  return name == "precision_config" || name == "called_computations" || name == "operand_layouts" ||
         name == "result_layouts" || name == "output_operand_aliases" || name == "arg_attrs" || name == "res_attrs" ||
         name == "layout";
}

}  // namespace

void Writer::APInt(EntryBytes* e, uint64_t bits, unsigned width) {
  if (width < 64) bits &= (uint64_t{1} << width) - 1;
  if (width <= 8) {
    e->Byte(static_cast<uint8_t>(bits));
  } else {
    e->SignedVarInt(static_cast<int64_t>(bits));
  }
}

void Writer::APFloat(EntryBytes* e, double v, ElementType t) {
  switch (t) {
    case ElementType::kF64: {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      return APInt(e, b, 64);
    }
    case ElementType::kF32: {
      const float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return APInt(e, b, 32);
    }
    case ElementType::kBF16: {
      const float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      const uint32_t rounded = std::isnan(f) ? (b >> 16 | 0x40) : (b + 0x7FFF + ((b >> 16) & 1)) >> 16;
      return APInt(e, rounded & 0xFFFF, 16);
    }
    case ElementType::kF16: return APInt(e, DoubleToHalf(v), 16);
    default: Refuse("a float attribute of type " + std::string(ElementTypeName(t)) + " (only bf16, f16, f32, f64)");
  }
}

uint32_t Writer::StringAttrId(std::string_view s, bool builtin) {
  EntryBytes e;
  e.dialect = builtin ? kBuiltinDialect : kVhloDialect;
  e.VarInt(builtin ? uint64_t{kBuiltinString} : uint64_t{kStringV1});
  e.VarInt(StringId(s));
  return Intern(std::move(e), false);
}

uint32_t Writer::IntAttrId(int64_t v, ElementType t) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  a.type.kind = Type::Kind::kScalar;
  a.type.element = t;
  return AttrId(a, "", "");
}

uint32_t Writer::LocationId(Location loc) {
  EntryBytes e;
  e.dialect = kBuiltinDialect;
  if (loc.line == 0) {
    e.VarInt(kUnknownLoc);
  } else {
    e.VarInt(kFileLineColLoc);
    e.Ref(1, StringAttrId(options_.location_file, true));
    e.VarInt(loc.line);
    e.VarInt(loc.column);
  }
  return Intern(std::move(e), false);
}

// An op's discardable attributes: a builtin dictionary of builtin string names and vhlo values.
uint32_t Writer::DiscardableDictId(NamedAttrs attrs, std::string_view op_name) {
  EntryBytes e;
  e.dialect = kBuiltinDialect;
  e.VarInt(kBuiltinDictionary);
  e.VarInt(attrs.size());
  for (const NamedAttr& kv : attrs) {
    e.Ref(1, StringAttrId(kv.first, true));
    e.Ref(1, AttrId(kv.second, kv.first, op_name));
  }
  return Intern(std::move(e), false);
}

Attribute Writer::IntListTensor(const std::vector<int64_t>& v, std::vector<int64_t> dims, ElementType et) {
  Attribute a;
  a.kind = Attribute::Kind::kDense;
  a.type.kind = Type::Kind::kTensor;
  a.type.element = et;
  a.type.dims = scratch_->Copy(dims);
  const uint32_t es = ElementByteSize(et);
  std::vector<uint8_t> bytes(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) std::memcpy(bytes.data() + i * es, &v[i], es);  // little-endian
  a.dense = scratch_->Copy(bytes);
  return a;
}

// An op property's list given as an array (StableHLO's array<i64: ...>, array<i1: ...>, [[0, 0], [1, 1]]):
// a vhlo tensor of i64 (or i1), as StablehloLegalizeToVhlo converts dense arrays.
Attribute Writer::TensorAttrOf(const Attribute& a, std::string_view name) {
  std::vector<int64_t> values, dims{static_cast<int64_t>(a.array.size())};
  ElementType et = ElementType::kS64;
  bool nested = false;
  for (const Attribute& e : a.array) {
    if (e.kind == Attribute::Kind::kArray) {
      nested = true;
      if (dims.size() == 1) dims.push_back(static_cast<int64_t>(e.array.size()));
      if (static_cast<int64_t>(e.array.size()) != dims[1]) Refuse("the ragged list " + std::string(name));
      for (const Attribute& x : e.array) {
        if (x.kind != Attribute::Kind::kInt) Refuse("a list of lists of integers " + std::string(name));
        values.push_back(x.i);
      }
    } else if (e.kind == Attribute::Kind::kBool) {
      et = ElementType::kPred;
      values.push_back(e.b ? 1 : 0);
    } else if (e.kind == Attribute::Kind::kInt) {
      if (e.type.kind == Type::Kind::kScalar && IsInteger(e.type.element)) et = e.type.element;
      values.push_back(e.i);
    } else {
      Refuse("the attribute " + std::string(name) + ": a list of integers or booleans was expected");
    }
  }
  // StableHLO's padding is Nx2 (`pad = [[1, 1], [2, 2]]` may come flat).
  if (name == "padding" && !nested && values.size() % 2 == 0) dims = {static_cast<int64_t>(values.size() / 2), 2};
  return IntListTensor(values, dims, et);
}

uint32_t Writer::AttrId(const Attribute& a, std::string_view name, std::string_view op_name) {
  EntryBytes e;
  AttrBytes(a, name, op_name, &e);
  return Intern(std::move(e), false);
}

void Writer::AttrBytes(const Attribute& a, std::string_view name, std::string_view op_name, EntryBytes* e) {
  const bool property = !op_name.empty();
  const std::string what =
      "the attribute " + std::string(name) + (op_name.empty() ? "" : " of " + std::string(op_name));
  switch (a.kind) {
    case Attribute::Kind::kUnit:  // a unit property is a flag set (use_global_device_ids)
      if (property && name != "" && op_name.substr(0, 10) == "stablehlo.") {
        e->VarInt(kBooleanV1);
        e->VarInt(1);
      } else {
        e->dialect = kBuiltinDialect;
        e->VarInt(kBuiltinUnit);
      }
      return;
    case Attribute::Kind::kBool:
      e->VarInt(kBooleanV1);
      e->VarInt(a.b ? 1 : 0);
      return;
    case Attribute::Kind::kInt: {
      ElementType et = ElementType::kS64;
      if (a.type.kind == Type::Kind::kScalar && (IsInteger(a.type.element) || a.type.element == ElementType::kPred)) {
        et = a.type.element;
      }
      // StableHLO's i32 attributes (the pretty reduce_precision `format = e5m10` gives plain integers).
      if (name == "exponent_bits" || name == "mantissa_bits") et = ElementType::kS32;
      if (name == "api_version") {
        e->VarInt(kCustomCallApiVersionV1);
        e->VarInt(static_cast<uint64_t>(a.i));
        return;
      }
      Type t;
      t.kind = Type::Kind::kScalar;
      t.element = et;
      e->VarInt(kIntegerV1);
      e->Ref(2, TypeId(t));
      APInt(e, static_cast<uint64_t>(a.i), ElementInfo(et).bits);
      return;
    }
    case Attribute::Kind::kFloat: {
      Type t;
      t.kind = Type::Kind::kScalar;
      t.element = a.type.kind == Type::Kind::kScalar && IsFloat(a.type.element) ? a.type.element : ElementType::kF32;
      e->VarInt(kFloatV1);
      e->Ref(2, TypeId(t));
      APFloat(e, a.f, t.element);
      return;
    }
    case Attribute::Kind::kString:
    case Attribute::Kind::kSymbol:
      e->VarInt(kStringV1);
      e->VarInt(StringId(a.str));
      return;
    case Attribute::Kind::kType:
      e->VarInt(kTypeV1);
      e->Ref(2, TypeId(a.type));
      return;
    case Attribute::Kind::kDict:
      e->VarInt(kDictionaryV1);
      e->VarInt(a.dict.size());
      for (const NamedAttr& kv : a.dict) {
        e->Ref(1, StringAttrId(kv.first, false));
        e->Ref(1, AttrId(kv.second, kv.first, ""));
      }
      return;
    case Attribute::Kind::kEnum: {
      const VhloEnum* en = EnumFor(name, a.str);
      if (!en) Refuse(what + ": the enum value " + std::string(a.str) + " has no vhlo form");
      const auto it = std::find_if(en->cases.begin(), en->cases.end(), [&](const char* c) { return a.str == c; });
      if (it == en->cases.end() || !**it) {
        Refuse(what + ": " + std::string(a.str) + " is not a " + en->mnemonic + " value");
      }
      e->VarInt(en->code);
      e->VarInt(static_cast<uint64_t>(it - en->cases.begin()));
      return;
    }
    case Attribute::Kind::kArray:
      if (property && !IsAttributeList(name)) return AttrBytes(TensorAttrOf(a, name), name, op_name, e);
      e->VarInt(kArrayV1);
      e->VarInt(a.array.size());
      for (const Attribute& x : a.array) e->Ref(1, AttrId(x, name, name == "precision_config" ? op_name : ""));
      return;
    case Attribute::Kind::kDense: {
      if (a.type.kind != Type::Kind::kTensor) Refuse(what + ": dense data of a type other than a tensor");
      e->VarInt(kTensorV1);
      e->Ref(2, TypeId(a.type));
      // MLIR stores a literal whose elements are all equal as a splat: one element.
      const uint32_t es = a.type.element == ElementType::kPred ? 1 : ElementByteSize(a.type.element);
      bool splat = a.splat;
      if (!splat && es && a.dense.size() > es && a.dense.size() % es == 0) {
        splat = true;
        for (size_t i = es; splat && i < a.dense.size(); i += es) {
          splat = std::memcmp(a.dense.data(), a.dense.data() + i, es) == 0;
        }
      }
      if (a.type.element == ElementType::kPred) {
        // MLIR keeps i1 packed 8 to a byte; a splat is one byte 0x00 or 0xFF.
        std::vector<uint8_t> bits;
        if (splat) {
          bits.push_back(a.dense.empty() || !a.dense[0] ? 0x00 : 0xFF);
        } else {
          bits.assign((a.dense.size() + 7) / 8, 0);
          for (size_t i = 0; i < a.dense.size(); ++i) {
            bits[i / 8] |= static_cast<uint8_t>((a.dense[i] ? 1 : 0) << (i % 8));
          }
        }
        e->VarInt(bits.size());
        e->Bytes(bits.data(), bits.size());
      } else {
        const size_t n = splat && es ? std::min<size_t>(es, a.dense.size()) : a.dense.size();
        e->VarInt(n);
        e->Bytes(a.dense.data(), n);
      }
      return;
    }
    case Attribute::Kind::kOpaque: {
      const std::string_view text = a.text.empty() ? a.str : a.text;
      if (text.substr(0, 31) == "#stablehlo.output_operand_alias") {
        e->VarInt(kOutputOperandAliasV1);
        auto ints = [&](const char* key) {
          const Attribute* l = a.Get(key);
          const size_t n = l && l->kind == Attribute::Kind::kArray ? l->array.size() : 0;
          e->VarInt(n);
          for (size_t i = 0; i < n; ++i) e->SignedVarInt(l->array[i].i);
        };
        ints("output_tuple_indices");
        const Attribute* idx = a.Get("operand_index");
        e->SignedVarInt(idx ? idx->i : 0);
        ints("operand_tuple_indices");
        return;
      }
      if (text.substr(0, 26) == "#stablehlo.result_accuracy" &&
          text.substr(0, 31) != "#stablehlo.result_accuracy_mode") {
        e->VarInt(kResultAccuracyV1);
        const Attribute* atol = a.Get("atol");
        const Attribute* rtol = a.Get("rtol");
        const Attribute* ulps = a.Get("ulps");
        const Attribute* mode = a.Get("mode");
        APFloat(e, atol ? (atol->kind == Attribute::Kind::kInt ? static_cast<double>(atol->i) : atol->f) : 0.0,
                ElementType::kF64);
        APFloat(e, rtol ? (rtol->kind == Attribute::Kind::kInt ? static_cast<double>(rtol->i) : rtol->f) : 0.0,
                ElementType::kF64);
        e->SignedVarInt(ulps ? ulps->i : 0);
        Attribute m;
        m.kind = Attribute::Kind::kEnum;
        m.str = mode && !mode->str.empty() ? mode->str : std::string_view("DEFAULT");
        e->Ref(1, AttrId(m, "mode", op_name));
        return;
      }
      Refuse(what + " (" + std::string(text.substr(0, 60)) + ") has no vhlo form this writer knows");
    }
  }
}

uint32_t Writer::TypeId(const Type& t) {
  EntryBytes e;
  TypeBytes(t, &e);
  return Intern(std::move(e), true);
}

void Writer::TypeBytes(const Type& t, EntryBytes* e) {
  auto element = [&](const Type& s) {
    // A scalar element: quantized, complex, or one of the vhlo element codes.
    if (s.quant) {
      const QuantType& q = *s.quant;
      Type storage, expressed;
      storage.kind = expressed.kind = Type::Kind::kScalar;
      storage.element = q.storage;
      expressed.element = q.expressed;
      e->VarInt(q.axis >= 0 ? 30 : 24);
      e->VarInt(IsSignedInt(q.storage) ? 1 : 0);
      e->Ref(2, TypeId(storage));
      e->Ref(2, TypeId(expressed));
      if (q.axis < 0) {
        APFloat(e, q.scales.empty() ? 1.0 : q.scales[0], ElementType::kF64);
        e->SignedVarInt(q.zero_points.empty() ? 0 : q.zero_points[0]);
        e->SignedVarInt(q.storage_min);
        e->SignedVarInt(q.storage_max);
      } else {
        e->VarInt(static_cast<uint64_t>(q.axis));
        e->SignedVarInt(q.storage_min);
        e->SignedVarInt(q.storage_max);
        e->VarInt(q.scales.size());
        for (double sc : q.scales) APFloat(e, sc, ElementType::kF64);
        e->VarInt(q.zero_points.size());
        for (int64_t z : q.zero_points) e->SignedVarInt(z);
      }
      return;
    }
    if (s.element == ElementType::kC64 || s.element == ElementType::kC128) {
      Type part;
      part.kind = Type::Kind::kScalar;
      part.element = s.element == ElementType::kC64 ? ElementType::kF32 : ElementType::kF64;
      e->VarInt(1);
      e->Ref(2, TypeId(part));
      return;
    }
    if (s.element == ElementType::kOther) {
      const int code = s.text == "index" ? 9 : s.text == "none" ? 33 : s.text == "tf32" ? 34 : -1;
      if (code < 0) Refuse("the type " + TypeToString(s) + " has no vhlo form this writer knows");
      e->VarInt(static_cast<uint64_t>(code));
      return;
    }
    const int code = VhloCode(s.element);
    if (code < 0) Refuse("the element type " + std::string(ElementTypeName(s.element)) + " has no vhlo form");
    e->VarInt(static_cast<uint64_t>(code));
  };
  switch (t.kind) {
    case Type::Kind::kScalar: element(t); return;
    case Type::Kind::kTensor: {
      if (t.element == ElementType::kOther || (!t.text.empty() && !t.quant)) {
        Refuse("the tensor type " + TypeToString(t) + " (an encoding or element vhlo has no form for)");
      }
      e->VarInt(20);
      e->VarInt(t.dims.size());
      for (int64_t d : t.dims) e->SignedVarInt(d < 0 ? INT64_MIN : d);
      Type s;
      s.kind = Type::Kind::kScalar;
      s.element = t.element;
      s.quant = t.quant;
      e->Ref(2, TypeId(s));
      return;
    }
    case Type::Kind::kToken: e->VarInt(22); return;
    case Type::Kind::kTuple:
      e->VarInt(23);
      e->VarInt(t.elements.size());
      for (const Type& x : t.elements) e->Ref(2, TypeId(x));
      return;
    case Type::Kind::kFunction:
      e->VarInt(8);
      e->VarInt(t.num_inputs);
      for (size_t i = 0; i < t.num_inputs; ++i) e->Ref(2, TypeId(t.elements[i]));
      e->VarInt(t.elements.size() - t.num_inputs);
      for (size_t i = t.num_inputs; i < t.elements.size(); ++i) e->Ref(2, TypeId(t.elements[i]));
      return;
    case Type::Kind::kOther:
      if (t.text == "!stablehlo.token") {
        e->VarInt(22);
        return;
      }
      Refuse("the type " + TypeToString(t) + " has no vhlo form this writer knows");
  }
}

// The defaults StablehloLegalizeToVhlo fills in for attributes StableHLO leaves out.
bool Writer::DefaultAttr(const VhloOp& vop, std::string_view name, const Operation* op, Attribute* out) {
  (void)vop;
  *out = Attribute();
  auto boolean = [&](bool b) {
    out->kind = Attribute::Kind::kBool;
    out->b = b;
    return true;
  };
  auto integer = [&](int64_t v) {
    out->kind = Attribute::Kind::kInt;
    out->i = v;
    out->type.kind = Type::Kind::kScalar;
    out->type.element = ElementType::kS64;
    return true;
  };
  auto list = [&](size_t n, int64_t v, bool pairs) {
    std::vector<Attribute> elems(n);
    for (Attribute& x : elems) {
      if (pairs) {
        Attribute two[2];
        two[0].kind = two[1].kind = Attribute::Kind::kInt;
        two[0].i = two[1].i = v;
        x.kind = Attribute::Kind::kArray;
        x.array = scratch_->Copy(two, 2);
      } else {
        x.kind = Attribute::Kind::kInt;
        x.i = v;
      }
    }
    out->kind = Attribute::Kind::kArray;
    out->array = scratch_->Copy(elems);
    return true;
  };
  // Channel handles are one attribute in StableHLO, two in vhlo.
  if (name == "channel_id" || name == "channel_type") {
    const Attribute* h = op ? Find(op->attributes, "channel_handle") : nullptr;
    const Attribute* v = h ? h->Get(name == "channel_id" ? "handle" : "type") : nullptr;
    return integer(v ? v->i : 0);
  }
  // The dot algorithm's members.
  if (op && Find(op->attributes, "algorithm")) {
    const Attribute* v = Find(op->attributes, "algorithm")->Get(name);
    if (v) {
      *out = *v;
      return true;
    }
  }
  // Without an algorithm, a dot's algorithm members are the none type.
  if (name == "lhs_precision_type" || name == "rhs_precision_type" || name == "accumulation_type" ||
      name == "lhs_component_count" || name == "rhs_component_count" || name == "num_primitive_operations" ||
      name == "allow_imprecise_accumulation") {
    out->kind = Attribute::Kind::kType;
    out->type.kind = Type::Kind::kScalar;
    out->type.element = ElementType::kOther;
    out->type.text = "none";
    return true;
  }
  // No precision config: DEFAULT for each operand.
  if (name == "precision_config") {
    Attribute d[2];
    d[0].kind = d[1].kind = Attribute::Kind::kEnum;
    d[0].str = d[1].str = "DEFAULT";
    out->kind = Attribute::Kind::kArray;
    out->array = scratch_->Copy(d, 2);
    return true;
  }
  if (name == "compare_type") {
    out->kind = Attribute::Kind::kEnum;
    out->str = "NOTYPE";
    return true;
  }
  if (name == "result_accuracy") {
    out->kind = Attribute::Kind::kOpaque;
    out->text = "#stablehlo.result_accuracy";
    return true;
  }
  if (name == "api_version") return integer(1);
  if (name == "backend_config" || name == "infeed_config" || name == "outfeed_config") {
    out->kind = Attribute::Kind::kString;
    return true;
  }
  if (name == "has_side_effect" || name == "indices_are_sorted" || name == "unique_indices" || name == "is_stable" ||
      name == "is_host_transfer" || name == "use_global_device_ids") {
    return boolean(false);
  }
  if (IsAttributeList(name)) {
    out->kind = Attribute::Kind::kArray;
    return true;
  }
  if (name == "dimension" && op && op->name == "stablehlo.sort") return integer(-1);
  if (name == "index_vector_dim") return integer(0);
  if (name == "batch_group_count" || name == "feature_group_count") return integer(1);
  if (name == "operand_batching_dims" || name == "start_indices_batching_dims" || name == "input_batching_dims" ||
      name == "scatter_indices_batching_dims" || name == "known_expanding_dimensions" ||
      name == "known_nonexpanding_dimensions" || name == "offset_dims" || name == "collapsed_slice_dims" ||
      name == "inserted_window_dims" || name == "update_window_dims" || name == "lhs_batching_dimensions" ||
      name == "rhs_batching_dimensions" || name == "lhs_contracting_dimensions" ||
      name == "rhs_contracting_dimensions") {
    return list(0, 0, false);
  }
  // Windows: the rank is the spatial dimensions' (convolutions) or the operand's (reduce_window,
  // select_and_scatter).
  size_t rank = 0;
  if (op) {
    const Attribute* dn = Find(op->attributes, "dimension_numbers");
    const Attribute* spatial = dn ? dn->Get("input_spatial_dimensions") : nullptr;
    if (spatial && spatial->kind == Attribute::Kind::kArray) {
      rank = spatial->array.size();
    } else if (!op->operand_types.empty() && op->operand_types[0].kind == Type::Kind::kTensor) {
      rank = op->operand_types[0].dims.size();
    }
  }
  if (name == "lhs_dilation" || name == "rhs_dilation" || name == "window_strides" || name == "base_dilations" ||
      name == "window_dilations") {
    return list(rank, 1, false);
  }
  if (name == "padding") return list(rank, 0, true);
  if (name == "window_reversal") {
    std::vector<Attribute> elems(rank);
    for (Attribute& x : elems) x.kind = Attribute::Kind::kBool;
    out->kind = Attribute::Kind::kArray;
    out->array = scratch_->Copy(elems);
    return true;
  }
  if (name == "composite_attributes") {
    out->kind = Attribute::Kind::kDict;
    return true;
  }
  if (name == "version") {
    out->kind = Attribute::Kind::kInt;
    out->type.kind = Type::Kind::kScalar;
    out->type.element = ElementType::kS32;
    return true;
  }
  return false;
}

}  // namespace neuronmem::stablehlo::bytecode
