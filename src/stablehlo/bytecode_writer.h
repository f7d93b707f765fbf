// The artifact writer's state (bytecode.h's WriteBytecode), one concern per file:
//   bytecode_writer.cc        the container: tables of strings, op names, attributes and types; sections;
//                             the IR (regions, blocks, ops, value numbering) and the entry point
//   bytecode_write_attrs.cc   IR attributes and types -> vhlo attributes and types; the defaults vhlo
//                             requires where StableHLO leaves an attribute out
// The module is walked twice by the same code: the first pass collects every string, op name, attribute
// and type (provisional ids), the tables are then ordered as MLIR groups them (by dialect), and the second
// pass emits the IR with the final ids. Refusals throw WriteError, turned into a Status at the entry point.
// Internal to src/stablehlo.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stablehlo/bytecode.h"
#include "stablehlo/bytecode_format.h"
#include "stablehlo/bytecode_vhlo.h"
#include "stablehlo/ir.h"

namespace neuronmem::stablehlo::bytecode {

struct WriteError {
  std::string message;
};

// Bytes in MLIR's encodings (EncodingEmitter): PrefixVarInt, zigzag signed varints, flags in the low bit.
class Emitter {
 public:
  void Byte(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void Bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  void VarInt(uint64_t v);
  void SignedVarInt(int64_t v) { VarInt((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void VarIntWithFlag(uint64_t v, bool flag) { VarInt(v << 1 | (flag ? 1 : 0)); }
  // A section: id, length, data (no alignment: nothing written needs it).
  void Section(uint8_t id, const std::string& data) {
    Byte(id);
    VarInt(data.size());
    out_ += data;
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

enum : uint8_t { kBuiltinDialect = 0, kVhloDialect = 1 };

// One attribute or type entry as it is built: its bytes, with references to other entries by provisional
// id, so that the final (grouped) ids can be put in once the tables are complete.
struct EntryBytes {
  struct Piece {
    std::string raw;
    int ref = 0;  // 0 raw bytes, 1 an attribute reference, 2 a type reference
    uint32_t id = 0;
  };
  uint8_t dialect = kVhloDialect;
  std::vector<Piece> pieces;

  void Append(std::string_view bytes) {
    if (pieces.empty() || pieces.back().ref) pieces.emplace_back();
    pieces.back().raw.append(bytes.data(), bytes.size());
  }
  void VarInt(uint64_t v) {
    Emitter e;
    e.VarInt(v);
    Append(e.str());
  }
  void SignedVarInt(int64_t v) {
    Emitter e;
    e.SignedVarInt(v);
    Append(e.str());
  }
  void Byte(uint8_t b) { Append(std::string_view(reinterpret_cast<const char*>(&b), 1)); }
  void Bytes(const void* p, size_t n) { Append(std::string_view(static_cast<const char*>(p), n)); }
  void Ref(int kind, uint32_t id) {
    Piece p;
    p.ref = kind;
    p.id = id;
    pieces.push_back(std::move(p));
  }
  std::string Key(bool is_type) const;
};

class Writer {
 public:
  Writer(const Module& m, const BytecodeWriteOptions& options);
  std::string Write();

  // --- bytecode_write_attrs.cc ---
  // The vhlo (or builtin, for locations and dictionaries of discardable attributes) attribute for `a`,
  // written as the value of attribute `name` of op `op_name`. Returns the attribute's id.
  uint32_t AttrId(const Attribute& a, std::string_view name, std::string_view op_name);
  uint32_t TypeId(const Type& t);
  uint32_t StringAttrId(std::string_view s, bool builtin);
  uint32_t IntAttrId(int64_t v, ElementType t);
  uint32_t LocationId(Location loc);
  uint32_t DiscardableDictId(NamedAttrs attrs, std::string_view op_name);
  // The value vhlo requires for attribute `name` of `vop` that the IR leaves out, or false.
  bool DefaultAttr(const VhloOp& vop, std::string_view name, const Operation* op, Attribute* out);

  uint32_t StringId(std::string_view s);
  [[noreturn]] void Refuse(const std::string& what) const { throw WriteError{what}; }

 private:
  uint32_t Intern(EntryBytes&& e, bool is_type);
  uint32_t FinalId(bool is_type, uint32_t provisional) const;
  uint32_t OpNameId(uint8_t dialect, std::string_view name);
  void Finalize();
  void WriteModule(Emitter* ir);
  void WriteFunction(const Function& f, Emitter* out);
  void WriteOp(const Operation& op, bool function_body, Emitter* out);
  void WriteRegion(const Region& r, Span<Argument> entry_args, bool isolated, Emitter* out);
  uint64_t ValueOf(const ValueRef& v);
  uint32_t PropertiesId(const std::string& blob);
  const VhloOp& VhloFor(std::string_view ir_name) const;
  Attribute TensorAttrOf(const Attribute& a, std::string_view name);
  Attribute IntListTensor(const std::vector<int64_t>& v, std::vector<int64_t> dims, ElementType et);
  void AttrBytes(const Attribute& a, std::string_view name, std::string_view op_name, EntryBytes* e);
  void TypeBytes(const Type& t, EntryBytes* e);
  void APInt(EntryBytes* e, uint64_t bits, unsigned width);
  void APFloat(EntryBytes* e, double v, ElementType t);

  const Module& m_;
  BytecodeWriteOptions options_;
  int version_[3] = {0, 0, 0};
  bool final_ = false;  // the second pass: ids are final
  std::shared_ptr<Arena> scratch_ = std::make_shared<Arena>();

  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> string_ids_;
  struct OpName {
    uint8_t dialect;
    uint32_t name;  // string id
  };
  std::vector<OpName> op_names_;
  std::unordered_map<std::string, uint32_t> op_name_ids_;  // "dialect.name" -> provisional id
  std::vector<uint32_t> op_name_final_;
  // Attribute and type entries, by provisional id; their final ids (grouped by dialect).
  std::vector<EntryBytes> entries_[2];
  std::unordered_map<std::string, uint32_t> entry_ids_[2];
  std::vector<uint32_t> final_ids_[2];
  std::vector<uint32_t> order_[2];  // final id -> provisional id
  std::vector<std::string> properties_;
  std::unordered_map<std::string, uint32_t> property_ids_;
  // The values in scope by name: the first value's id and how many the name stands for (`%r:3 = ...`: three, used
  // as %r#0..%r#2). An undo log restores the outer names when a region ends.
  struct Named {
    uint64_t id = 0;
    uint64_t count = 0;  // 0 in the undo log: the name was not defined
  };
  std::unordered_map<std::string_view, Named> values_;
  std::vector<std::pair<std::string_view, Named>> undo_;
  // Results of the ops not written yet (numbered, not yet defined): a use of one is before its definition.
  std::unordered_map<std::string_view, int> pending_;
  uint64_t next_value_ = 0;
  int depth_ = 0;
};

}  // namespace neuronmem::stablehlo::bytecode
