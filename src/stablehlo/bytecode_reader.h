// The artifact reader's state (bytecode.h's ParseBytecode), one concern per file:
//   bytecode_reader.cc      the container: header, sections, strings, dialects and op names, resources,
//                           the attribute/type offset table, properties; the entry point
//   bytecode_attributes.cc  builtin and vhlo attributes and types, dense data
//   bytecode_ir.cc          regions, blocks and ops, mapped onto the IR (functions, grouped attributes)
// Every read is bounds-checked; failures throw BcError with the byte offset, turned into a Status at the
// entry point. Internal to src/stablehlo.
#pragma once

#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stablehlo/bytecode_format.h"
#include "stablehlo/bytecode_vhlo.h"
#include "stablehlo/ir.h"

namespace neuronmem::stablehlo::bytecode {

enum class DialectKind { kBuiltin, kVhlo, kOther };

// What a resolved attribute is beyond its Attribute (locations are attributes in bytecode).
enum class AttrClass : uint8_t { kValue, kLocation };

class Reader {
 public:
  // Starts reading `data` into `out`. A Reader is reused per thread: its tables keep their capacity, so a
  // small artifact costs few heap allocations.
  void Reset(std::string_view data, Module* out) {
    data_ = reinterpret_cast<const uint8_t*>(data.data());
    size_ = data.size();
    out_ = out;
    arena_ = nullptr;
    version_ = 0;
    vhlo_ = Version();
    for (int i = 0; i < kNumSections; ++i) {
      sections_[i] = Cursor();
      have_[i] = false;
    }
    strings_.clear();
    dialects_.clear();
    op_names_.clear();
    attr_entries_.clear();
    type_entries_.clear();
    num_attrs_ = 0;
    attr_class_.clear();
    types_.clear();
    properties_.clear();
    resources_.clear();
    scopes_.clear();
    result_names_.clear();
    arg_names_.clear();
    block_names_.clear();
    resolve_depth_ = 0;
    live_values_ = 0;
    saw_module_ = false;
  }

  void Read();

 private:
  struct Dialect {
    std::string_view name;
    DialectKind kind = DialectKind::kOther;
  };
  struct OpName {
    uint32_t dialect = 0;
    std::string_view name;  // without the dialect
    bool registered = true;
    const VhloOp* vhlo = nullptr;
    std::string_view ir_name;  // the IR's name ("stablehlo.add")
    // What MakeOperation does with the op, decided once per name:
    std::string_view callee_key;  // the attribute that names the callee (call, custom_call)
    bool is_return = false;       // func.return at a function's top level, else stablehlo.return
    int group = -1;               // index in kGroups of the attributes it groups
    bool bool_arrays = false;     // has window_reversal (a tensor<Nxi1> in vhlo, array<i1> in StableHLO)
  };
  struct Entry {
    uint32_t dialect = 0;
    const uint8_t* data = nullptr;
    size_t size = 0;
    bool custom = false;
    uint8_t state = 0;  // 0 unread, 1 being read, 2 read
  };
  // A value slot of the current isolated scope.
  static constexpr uint32_t kNoUse = UINT32_MAX;
  struct Slot {
    bool defined = false;
    uint32_t waiting = kNoUse;  // the first forward reference to it (an index in Scope::pending)
    ValueRef ref;
    const Type* type = nullptr;  // in the arena or the type table (both outlive the read)
  };
  struct PendingUse {
    ValueRef* use;
    Type* type;     // the operand's type, filled when the value is defined
    uint32_t next;  // the next forward reference to the same value, or kNoUse
  };
  struct Scope {
    std::vector<Slot> values;
    std::vector<PendingUse> pending;  // forward references, listed per value from Slot::waiting
    uint32_t next_result = 0;         // result names "0", "1", ...
    uint32_t next_arg = 0;            // block argument names "arg0", ...
  };
  // A region being read: its value range in the scope.
  struct RegionState {
    size_t next_value = 0;
    size_t end_value = 0;
  };
  // An op as read, before it becomes an Operation or a Function.
  struct RawOp {
    const OpName* name = nullptr;
    Location loc;
    std::vector<NamedAttr> attrs;  // properties (vhlo ops: by name), then the attribute dictionary
    size_t num_props = 0;          // how many of attrs are properties
    std::vector<Type> result_types;
    std::vector<ValueRef> operands;
    std::vector<Type> operand_types;
    std::vector<const Type*> result_type_refs;  // the result types in the type table
    std::vector<size_t> operand_slots;
    std::vector<Region> regions;
    std::string_view result_name;
  };

  [[noreturn]] static void FailAt(size_t offset, const std::string& msg) { throw BcError{offset, msg}; }

  void ReadHeader(Cursor* c);
  void ReadStrings(Cursor c);
  void ReadDialects(Cursor c);
  void ReadResources(Cursor data, Cursor offsets);
  void ReadAttrTypeOffsets(Cursor data, Cursor offsets);
  void ReadProperties(Cursor c);
  void ReadIR(Cursor c);

  std::string_view String(Cursor* c, const char* what);
  const OpName& ReadOpName(Cursor* c);
  const Attribute& Attr(Cursor* c, const char* what);
  const Attribute& AttrAt(uint64_t index, size_t offset, const char* what);
  Location LocAt(uint64_t index, size_t offset);
  const Type& TypeRef(Cursor* c, const char* what);
  const Type& TypeAt(uint64_t index, size_t offset, const char* what);
  static void CheckIndex(uint64_t index, size_t size, size_t offset, const char* what, const char* table);
  Cursor BeginEntry(Entry* e, const char* kind, uint64_t index);
  void EndEntry(Entry* e, Cursor* c, const char* kind);
  Span<Attribute> ReadAttrList(Cursor* c, const char* what);
  NamedAttrs ReadDict(Cursor* c);
  Span<int64_t> ReadShape(Cursor* c);
  Type ComplexOf(const Type& element);
  Cursor* OpenRegionSection(Cursor* c, bool isolated, Cursor* section, const char* what);
  void ResolveAttr(uint64_t index);
  void ResolveType(uint64_t index);
  void ReadBuiltinAttr(Cursor* c, Attribute* a, AttrClass* cls);
  void ReadVhloAttr(Cursor* c, Attribute* a);
  void ReadBuiltinType(Cursor* c, Type* t);
  void ReadVhloType(Cursor* c, Type* t);
  Type TensorOf(const Type& element, Span<int64_t> dims, size_t offset);
  int64_t ReadAPInt(Cursor* c, unsigned bits, bool is_signed);
  double ReadAPFloat(Cursor* c, ElementType t);
  Span<uint8_t> DenseBytes(const Type& type, const uint8_t* blob, uint64_t size, bool* splat, size_t offset);
  std::string_view AttrName(const Attribute& a, size_t offset);
  Location FirstFileLoc(uint64_t index, int depth);

  // IR
  void ReserveValues(Cursor* c, Scope* s, uint64_t num_values, RegionState* rs);
  void EndRegionValues(Cursor* c, const RegionState& rs, uint64_t num_values);
  void ReadRegion(Cursor* c, Region* region, int depth, bool function_body, std::vector<Argument>* entry_args);
  void ReadBlock(Cursor* c, RegionState* rs, Block* block, int depth, bool function_body,
                 std::vector<Argument>* args_out);
  void ReadOp(Cursor* c, RegionState* rs, int depth, bool function_body, RawOp* op, bool* isolated,
              uint64_t* num_regions);
  void ReadOpRegions(Cursor* c, RawOp* op, bool isolated, uint64_t num_regions, int depth, bool top_level_func);
  void UseListOrders(Cursor* c, uint64_t range_size);
  void DefineValue(RegionState* rs, ValueRef ref, const Type* type, size_t offset);
  void MakeOperation(RawOp& raw, bool function_body, Operation* out);
  void GroupAttributes(int group, std::vector<NamedAttr>* attrs);
  void AddTopLevelOp(RawOp& raw, Cursor* c);
  Function MakeFunction(RawOp& raw, size_t offset);
  std::string_view NumberName(const char* prefix, uint32_t n);
  RawOp& ScratchOp(int depth);
  // A cleared vector kept per nesting depth, so its capacity is reused.
  template <typename T>
  static std::vector<T>& ScratchVector(std::vector<std::unique_ptr<std::vector<T>>>* pool, int depth) {
    const size_t d = static_cast<size_t>(depth);
    if (d >= pool->size()) pool->resize(d + 1);
    if (!(*pool)[d]) (*pool)[d] = std::make_unique<std::vector<T>>();
    (*pool)[d]->clear();
    return *(*pool)[d];
  }

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  Module* out_ = nullptr;
  Arena* arena_ = nullptr;
  uint64_t version_ = 0;
  Version vhlo_;
  Cursor sections_[kNumSections];
  bool have_[kNumSections] = {};
  std::vector<std::string_view> strings_;
  std::vector<Dialect> dialects_;
  std::vector<OpName> op_names_;
  std::vector<Entry> attr_entries_, type_entries_;
  // The resolved attributes: storage constructed as each is read (most of a file's attributes are read
  // once; zeroing them all up front was a twentieth of the reader's time). Never shrinks.
  struct AttrStorage {
    alignas(Attribute) unsigned char bytes[sizeof(Attribute)];
  };
  std::vector<AttrStorage> attr_store_;
  size_t num_attrs_ = 0;
  Attribute& AttrSlot(uint64_t i) { return *std::launder(reinterpret_cast<Attribute*>(attr_store_[i].bytes)); }
  std::vector<AttrClass> attr_class_;
  std::vector<Type> types_;
  std::vector<std::pair<const uint8_t*, size_t>> properties_;  // each op's property blob
  struct Resource {
    const uint8_t* data = nullptr;
    size_t size = 0;
    bool present = false;
  };
  std::vector<Resource> resources_;  // dialect resources, by handle index
  std::vector<Scope> scopes_;
  std::vector<std::unique_ptr<RawOp>> scratch_;  // one op being read per depth, reused for its capacity
  std::vector<std::unique_ptr<std::vector<Operation>>> scratch_ops_;  // a block's ops, per depth
  std::vector<std::unique_ptr<std::vector<Block>>> scratch_blocks_;   // a region's blocks, per depth
  // Lists, dictionaries and shapes being read, per resolve depth.
  std::vector<std::unique_ptr<std::vector<Attribute>>> scratch_attrs_;
  std::vector<std::unique_ptr<std::vector<NamedAttr>>> scratch_named_;
  std::vector<std::unique_ptr<std::vector<int64_t>>> scratch_dims_;
  std::vector<std::string_view> result_names_, arg_names_, block_names_;
  int resolve_depth_ = 0;
  uint64_t live_values_ = 0;  // values reserved by the regions being read (ReserveValues)
  bool saw_module_ = false;
};

}  // namespace neuronmem::stablehlo::bytecode
