// MLIR bytecode of the vhlo dialect -> IR (bytecode.h). The layout follows llvm-project's
// mlir/docs/BytecodeFormat.md and BytecodeReader.cpp (bytecode versions 1 to 6), the builtin dialect's
// encodings (mlir/include/mlir/IR/BuiltinDialectBytecode.td) and the vhlo dialect's (openxla/stablehlo
// stablehlo/dialect/VhloBytecode.cpp, VhloOps.td). Every read is bounds-checked; failures throw BcError
// with the byte offset, turned into a Status at the entry point.
#include "stablehlo/bytecode.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {
namespace {

struct BcError {
  size_t offset;
  std::string message;
};

// Bytecode section ids (mlir/lib/Bytecode/Encoding.h).
enum SectionId : uint8_t {
  kString = 0,
  kDialect = 1,
  kAttrType = 2,
  kAttrTypeOffset = 3,
  kIR = 4,
  kResource = 5,
  kResourceOffset = 6,
  kDialectVersions = 7,
  kProperties = 8,
  kNumSections = 9,
};
const char* const kSectionNames[kNumSections] = {"string",    "dialect",  "attribute/type",  "attribute/type offset",
                                                 "IR",        "resource", "resource offset", "dialect versions",
                                                 "properties"};
const char* const kRegionNames[kNumSections] = {
    "string section",    "dialect section",  "attribute/type section",  "attribute/type offset section",
    "IR section",        "resource section", "resource offset section", "dialect versions section",
    "properties section"};

// Bytecode versions (Encoding.h): features by the version that introduced them.
constexpr uint64_t kDialectVersioning = 1, kLazyLoading = 2, kUseListOrdering = 3, kElideUnknownBlockArgLocation = 4,
                   kNativePropertiesEncoding = 5, kMaxBytecodeVersion = 6;

// Operation encoding mask bits.
constexpr uint8_t kHasAttrs = 0x01, kHasResults = 0x02, kHasOperands = 0x04, kHasSuccessors = 0x08,
                  kHasInlineRegions = 0x10, kHasUseListOrders = 0x20, kHasProperties = 0x40;

struct Version {
  int v[3] = {0, 0, 0};
  int Compare(const int (&o)[3]) const {
    for (int i = 0; i < 3; ++i) {
      if (v[i] != o[i]) return v[i] < o[i] ? -1 : 1;
    }
    return 0;
  }
  std::string ToString() const {
    return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
  }
};

std::string VersionString(const int (&v)[3]) {
  return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
}

// A bounds-checked cursor over [p, end) of the file starting at `file`.
class Cursor {
 public:
  Cursor() = default;
  Cursor(const uint8_t* file, const uint8_t* begin, const uint8_t* end, const char* what)
      : file_(file), p_(begin), end_(end), what_(what) {}

  size_t Offset() const { return static_cast<size_t>(p_ - file_); }
  size_t Left() const { return static_cast<size_t>(end_ - p_); }
  bool Empty() const { return p_ == end_; }
  const uint8_t* Pos() const { return p_; }
  const char* What() const { return what_; }

  [[noreturn]] void Fail(const std::string& msg) const { throw BcError{Offset(), msg}; }
  [[noreturn]] void Truncated(const char* expected) const {
    Fail(std::string("expected ") + expected + ", but the " + what_ + " ends at byte " +
         std::to_string(static_cast<size_t>(end_ - file_)));
  }

  uint8_t Byte(const char* what) {
    if (p_ == end_) Truncated(what);
    return *p_++;
  }

  // PrefixVarInt: the count of trailing zero bits of the first byte is the count of further bytes.
  uint64_t VarInt(const char* what) {
    if (p_ == end_) Truncated(what);
    const uint8_t first = *p_;
    if (first & 1) {
      ++p_;
      return first >> 1;
    }
    const unsigned extra = first == 0 ? 8 : static_cast<unsigned>(__builtin_ctz(first));
    if (Left() < extra + 1u) Truncated(what);
    uint64_t v = 0;
    if (first == 0) {
      for (unsigned i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p_[1 + i]) << (8 * i);
    } else {
      v = first;
      for (unsigned i = 0; i < extra; ++i) v |= static_cast<uint64_t>(p_[1 + i]) << (8 * (i + 1));
      v >>= extra + 1;
    }
    p_ += extra + 1;
    return v;
  }
  int64_t SignedVarInt(const char* what) {
    const uint64_t v = VarInt(what);
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  // A varint whose low bit is a flag.
  uint64_t VarIntWithFlag(bool* flag, const char* what) {
    const uint64_t v = VarInt(what);
    *flag = v & 1;
    return v >> 1;
  }
  // A count of items that each take at least `min_bytes` bytes: bounded by what is left, so a corrupt count
  // can never make the reader allocate more than the input's size.
  uint64_t Count(const char* what, size_t min_bytes = 1) {
    const size_t at = Offset();
    const uint64_t n = VarInt(what);
    if (min_bytes && n > Left() / min_bytes) {
      throw BcError{at, std::string(what) + " is " + std::to_string(n) + ", but only " + std::to_string(Left()) +
                            " bytes are left in the " + what_};
    }
    return n;
  }
  const uint8_t* Bytes(uint64_t n, const char* what) {
    if (n > Left()) Truncated((std::to_string(n) + " bytes of " + what).c_str());
    const uint8_t* b = p_;
    p_ += n;
    return b;
  }
  std::string_view CString(const char* what) {
    const void* nul = std::memchr(p_, 0, Left());
    if (!nul) Truncated((std::string(what) + " ending in a NUL byte").c_str());
    std::string_view s(reinterpret_cast<const char*>(p_), static_cast<const uint8_t*>(nul) - p_);
    p_ = static_cast<const uint8_t*>(nul) + 1;
    return s;
  }
  // A child cursor over the next n bytes.
  Cursor Sub(uint64_t n, const char* what, const char* region) {
    const uint8_t* b = Bytes(n, what);
    return Cursor(file_, b, b + n, region);
  }
  // Padding up to `alignment` (a power of two, relative to the file start) with 0xCB bytes.
  void Align(uint64_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > 4096) {
      Fail("expected an alignment that is a power of two up to 4096, found " + std::to_string(alignment));
    }
    while (Offset() % alignment) {
      if (Byte("alignment padding") != 0xCB) {
        --p_;
        Fail("expected the alignment padding byte 0xCB");
      }
    }
  }

 private:
  const uint8_t* file_ = nullptr;
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  const char* what_ = "file";
};

// --- The vhlo dialect's tables --------------------------------------------------------------------------

struct VhloOp {
  std::string_view name;  // mnemonic, "add_v1"
  int min[3];             // first version with the op
  int max[3];             // last version with it ({99, 0, 0}: current)
  int num_attrs;
  std::string_view attrs[17];  // in encoding order (sorted by name)
};

constexpr VhloOp kVhloOps[] = {
#include "stablehlo/bytecode_vhlo_ops.inc"
};

const VhloOp* FindVhloOp(std::string_view name) {
  const VhloOp* b = std::begin(kVhloOps);
  const VhloOp* e = std::end(kVhloOps);
  const VhloOp* it = std::lower_bound(b, e, name, [](const VhloOp& op, std::string_view n) { return op.name < n; });
  return it != e && it->name == name ? it : nullptr;
}

// What the IR makes of a vhlo op, derived once per process from its name.
struct VhloOpInfo {
  std::string ir_name;          // "stablehlo.add", "func.func", "func.call", "stablehlo.return"
  std::string_view callee_key;  // the attribute naming the callee (call, custom_call)
  bool is_return = false;       // func.return at a function's top level, else stablehlo.return
  int group = -1;               // index in kGroups of the attributes StableHLO groups
  bool bool_arrays = false;     // has window_reversal (tensor<Nxi1> in vhlo, array<i1> in StableHLO)
};

const VhloOpInfo& InfoOf(const VhloOp& v);

// vhlo type codes (VhloBytecode.cpp: TypeCode) of element types.
ElementType VhloElement(uint64_t code, std::string_view* other_name) {
  switch (code) {
    case 0: return ElementType::kPred;
    case 2: return ElementType::kBF16;
    case 3: return ElementType::kF16;
    case 4: return ElementType::kF32;
    case 5: return ElementType::kF64;
    case 6: return ElementType::kF8E4M3FN;
    case 7: return ElementType::kF8E5M2;
    case 9: *other_name = "index"; return ElementType::kOther;
    case 10: return ElementType::kS4;
    case 11: return ElementType::kS8;
    case 12: return ElementType::kS16;
    case 13: return ElementType::kS32;
    case 14: return ElementType::kS64;
    case 15: return ElementType::kU4;
    case 16: return ElementType::kU8;
    case 17: return ElementType::kU16;
    case 18: return ElementType::kU32;
    case 19: return ElementType::kU64;
    case 26: *other_name = "!shape.witness"; return ElementType::kOther;
    case 27: return ElementType::kF8E4M3FNUZ;
    case 28: return ElementType::kF8E5M2FNUZ;
    case 29: return ElementType::kF8E4M3B11FNUZ;
    case 31: return ElementType::kS2;
    case 32: return ElementType::kU2;
    case 33: *other_name = "none"; return ElementType::kOther;
    case 34: *other_name = "tf32"; return ElementType::kOther;
    case 35: return ElementType::kF8E4M3;
    case 36: return ElementType::kF8E3M4;
    case 37: return ElementType::kF4E2M1FN;
    case 38: return ElementType::kF6E2M3FN;
    case 39: return ElementType::kF6E3M2FN;
    case 40: return ElementType::kF8E8M0FNU;
    default: return ElementType::kInvalid;
  }
}

// vhlo enum attributes: their code, the attribute mnemonic StableHLO prints and the case names.
struct VhloEnum {
  uint64_t code;
  const char* mnemonic;
  std::vector<const char*> cases;  // by value
};
const VhloEnum kVhloEnums[] = {
    {3, "comparison_direction", {"EQ", "NE", "GE", "GT", "LE", "LT"}},
    {4, "comparison_type", {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"}},
    {7, "fft_type", {"FFT", "IFFT", "RFFT", "IRFFT"}},
    {11, "precision", {"DEFAULT", "HIGH", "HIGHEST"}},
    {12, "rng_algorithm", {"DEFAULT", "THREE_FRY", "PHILOX"}},
    {13, "rng_distribution", {"", "UNIFORM", "NORMAL"}},
    {16, "transpose", {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}},
    {19, "result_accuracy_mode", {"DEFAULT", "HIGHEST", "TOLERANCE"}},
};

double HalfToDouble(uint16_t h) {
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(mant + 1024, exp - 25);
}

// StableHLO groups some of the flat attributes vhlo has (#stablehlo.scatter<...>, #stablehlo.gather<...>,
// #stablehlo.dot<...>, #stablehlo.conv<...>): the IR keeps them grouped as the text parser does.
struct Group {
  const char* op;
  const char* key;
  const char* mnemonic;
  std::vector<const char*> members;
};
const Group kGroups[] = {
    {"stablehlo.scatter",
     "scatter_dimension_numbers",
     "scatter",
     {"update_window_dims", "inserted_window_dims", "input_batching_dims", "scatter_indices_batching_dims",
      "scatter_dims_to_operand_dims", "index_vector_dim"}},
    {"stablehlo.gather",
     "dimension_numbers",
     "gather",
     {"offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims", "start_index_map",
      "index_vector_dim"}},
    {"stablehlo.dynamic_gather",
     "dimension_numbers",
     "gather",
     {"offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims", "start_index_map",
      "index_vector_dim"}},
    {"stablehlo.dot_general",
     "dot_dimension_numbers",
     "dot",
     {"lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
      "rhs_contracting_dimensions"}},
    {"stablehlo.convolution",
     "dimension_numbers",
     "conv",
     {"input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension",
      "kernel_output_feature_dimension", "kernel_spatial_dimensions", "output_batch_dimension",
      "output_feature_dimension", "output_spatial_dimensions"}},
    {"stablehlo.dynamic_conv",
     "dimension_numbers",
     "conv",
     {"input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension",
      "kernel_output_feature_dimension", "kernel_spatial_dimensions", "output_batch_dimension",
      "output_feature_dimension", "output_spatial_dimensions"}},
};

const VhloOpInfo& InfoOf(const VhloOp& v) {
  static const std::vector<VhloOpInfo> infos = [] {
    std::vector<VhloOpInfo> out;
    for (const VhloOp& op : kVhloOps) {
      VhloOpInfo info;
      std::string_view base = op.name;
      const size_t us = base.rfind("_v");
      if (us != std::string_view::npos) base = base.substr(0, us);
      info.ir_name = base == "func"     ? "func.func"
                     : base == "call"   ? "func.call"
                     : base == "return" ? "stablehlo.return"  // func.return at a function's top level
                                        : "stablehlo." + std::string(base);
      info.is_return = base == "return";
      info.callee_key = base == "call" ? "callee" : base == "custom_call" ? "call_target_name" : "";
      for (size_t g = 0; g < std::size(kGroups); ++g) {
        if (info.ir_name == kGroups[g].op) info.group = static_cast<int>(g);
      }
      for (int i = 0; i < op.num_attrs; ++i) info.bool_arrays |= op.attrs[i] == "window_reversal";
      out.push_back(std::move(info));
    }
    return out;
  }();
  return infos[static_cast<size_t>(&v - kVhloOps)];
}

// --- The reader ----------------------------------------------------------------------------------------

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
  std::vector<Attribute> ReadAttrList(Cursor* c, const char* what);
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
  Operation MakeOperation(RawOp& raw, bool function_body);
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
  std::vector<std::string_view> result_names_, arg_names_, block_names_;
  int resolve_depth_ = 0;
  uint64_t live_values_ = 0;  // values reserved by the regions being read (ReserveValues)
  bool saw_module_ = false;
};

// "0", "arg3", "bb1": each name once per module (numbering restarts in every function).
std::string_view Reader::NumberName(const char* prefix, uint32_t n) {
  std::vector<std::string_view>& cache = prefix[0] == 0 ? result_names_ : prefix[0] == 'a' ? arg_names_ : block_names_;
  if (n < cache.size() && !cache[n].empty()) return cache[n];
  char buf[32];
  const size_t plen = std::strlen(prefix);
  std::memcpy(buf, prefix, plen);
  const auto r = std::to_chars(buf + plen, buf + sizeof buf, n);
  const std::string_view name = arena_->CopyString(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  if (n < (1u << 20)) {
    if (n >= cache.size()) cache.resize(n + 1);
    cache[n] = name;
  }
  return name;
}

Reader::RawOp& Reader::ScratchOp(int depth) {
  const size_t d = static_cast<size_t>(depth);
  if (d >= scratch_.size()) scratch_.resize(d + 1);
  if (!scratch_[d]) scratch_[d] = std::make_unique<RawOp>();
  RawOp& op = *scratch_[d];
  op.name = nullptr;
  op.loc = Location();
  op.attrs.clear();
  op.num_props = 0;
  op.result_types.clear();
  op.operands.clear();
  op.operand_slots.clear();
  op.operand_types.clear();
  op.result_type_refs.clear();
  op.regions.clear();
  op.result_name = {};
  return op;
}

void Reader::ReadHeader(Cursor* c) {
  c->Bytes(4, "the magic ML\\xefR");
  const size_t at = c->Offset();
  version_ = c->VarInt("the bytecode version");
  if (version_ > kMaxBytecodeVersion) {
    FailAt(at, "bytecode version " + std::to_string(version_) + " is newer than the newest this reader knows (" +
                   std::to_string(kMaxBytecodeVersion) + ")");
  }
  const size_t producer_at = c->Offset();
  const std::string_view producer = c->CString("the producer string");
  constexpr std::string_view kPrefix = "StableHLO_v";
  if (producer.substr(0, kPrefix.size()) != kPrefix) {
    FailAt(producer_at, "expected the producer \"StableHLO_v<version>\" of a StableHLO portable artifact, found \"" +
                            std::string(producer) + "\"");
  }
  std::string_view v = producer.substr(kPrefix.size());
  for (int i = 0; i < 3; ++i) {
    size_t n = 0;
    long value = 0;
    while (n < v.size() && v[n] >= '0' && v[n] <= '9' && value < 100000) value = value * 10 + (v[n++] - '0');
    if (n == 0 || (i < 2 && (n >= v.size() || v[n] != '.'))) {
      FailAt(producer_at,
             "expected a version major.minor.patch after StableHLO_v, found \"" + std::string(producer) + "\"");
    }
    vhlo_.v[i] = static_cast<int>(value);
    v.remove_prefix(std::min(v.size(), n + (i < 2 ? 1 : 0)));
  }
  if (vhlo_.Compare(kBytecodeNewestVersion) > 0) {
    FailAt(producer_at, "the artifact is StableHLO " + vhlo_.ToString() +
                            ", newer than the newest version this reader knows, " +
                            VersionString(kBytecodeNewestVersion) + "; serialize it for target " +
                            VersionString(kBytecodeNewestVersion) + " or older");
  }
  if (vhlo_.Compare(kBytecodeOldestVersion) < 0) {
    FailAt(producer_at, "the artifact is StableHLO " + vhlo_.ToString() + ", older than " +
                            VersionString(kBytecodeOldestVersion) + ", the oldest version this reader supports");
  }
}

std::string_view Reader::String(Cursor* c, const char* what) {
  const size_t at = c->Offset();
  const uint64_t i = c->VarInt(what);
  if (i >= strings_.size()) {
    FailAt(at, std::string("expected ") + what + ": a string index below " + std::to_string(strings_.size()) +
                   ", found " + std::to_string(i));
  }
  return strings_[i];
}

void Reader::ReadStrings(Cursor c) {
  const uint64_t n = c.Count("the string count");
  strings_.resize(n);
  // The lengths come in reverse order, then the strings' bytes (each with its NUL) fill the section.
  std::vector<uint64_t> lengths(n);
  for (uint64_t i = 0; i < n; ++i) lengths[n - 1 - i] = c.VarInt("a string length");
  const size_t data_end = c.Left();
  const uint8_t* p = c.Pos();
  uint64_t total = 0;
  for (uint64_t len : lengths) {
    if (len == 0 || len > data_end - total) {
      c.Fail("expected string lengths (each counting its NUL) that fit the string section's " +
             std::to_string(data_end) + " data bytes");
    }
    total += len;
  }
  if (total != data_end) c.Fail("expected the string data to fill the rest of the string section");
  for (uint64_t i = 0; i < n; ++i) {
    if (p[lengths[i] - 1] != 0) c.Fail("expected each string to end in a NUL byte");
    strings_[i] = std::string_view(reinterpret_cast<const char*>(p), lengths[i] - 1);
    p += lengths[i];
  }
}

void Reader::ReadDialects(Cursor c) {
  const uint64_t n = c.Count("the dialect count");
  dialects_.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    Dialect& d = dialects_[i];
    if (version_ < kDialectVersioning) {
      d.name = String(&c, "a dialect name");
    } else {
      const size_t at = c.Offset();
      bool versioned = false;
      const uint64_t name = c.VarIntWithFlag(&versioned, "a dialect name");
      if (name >= strings_.size()) FailAt(at, "expected a dialect name's string index, found " + std::to_string(name));
      d.name = strings_[name];
      if (versioned) {  // a nested section: id, length, data
        const uint8_t id = c.Byte("a dialect version section");
        if ((id & 0x7F) != kDialectVersions) c.Fail("expected a dialect version section");
        const uint64_t len = c.VarInt("the dialect version's length");
        c.Bytes(len, "the dialect version");
      }
    }
    d.kind = d.name == "builtin" ? DialectKind::kBuiltin : d.name == "vhlo" ? DialectKind::kVhlo : DialectKind::kOther;
  }
  if (version_ >= kElideUnknownBlockArgLocation) c.Count("the op name count");
  while (!c.Empty()) {
    const size_t at = c.Offset();
    const uint64_t d = c.VarInt("an op name group's dialect");
    if (d >= dialects_.size()) FailAt(at, "expected a dialect index below " + std::to_string(dialects_.size()));
    const uint64_t count = c.Count("the op name count of a group");
    for (uint64_t i = 0; i < count; ++i) {
      OpName op;
      op.dialect = static_cast<uint32_t>(d);
      if (version_ < kNativePropertiesEncoding) {
        op.name = String(&c, "an op name");
      } else {
        const size_t name_at = c.Offset();
        bool registered = false;
        const uint64_t s = c.VarIntWithFlag(&registered, "an op name");
        if (s >= strings_.size()) FailAt(name_at, "expected an op name's string index, found " + std::to_string(s));
        op.name = strings_[s];
        op.registered = registered;
      }
      const Dialect& dialect = dialects_[d];
      if (dialect.kind == DialectKind::kVhlo) {
        op.vhlo = FindVhloOp(op.name);
        if (!op.vhlo)
          FailAt(at, "unknown vhlo op \"vhlo." + std::string(op.name) + "\" (not in StableHLO " +
                         VersionString(kBytecodeNewestVersion) + " or older)");
        const VhloOp& v = *op.vhlo;
        if (vhlo_.Compare(v.min) < 0 || (v.max[0] != 99 && vhlo_.Compare(v.max) > 0)) {
          FailAt(at, "vhlo." + std::string(op.name) + " does not exist in StableHLO " + vhlo_.ToString() +
                         " (it exists from " + VersionString(v.min) +
                         (v.max[0] == 99 ? std::string(" on") : " to " + VersionString(v.max)) + ")");
        }
        const VhloOpInfo& info = InfoOf(v);
        op.ir_name = info.ir_name;
        op.is_return = info.is_return;
        op.callee_key = info.callee_key;
        op.group = info.group;
        op.bool_arrays = info.bool_arrays;
      } else {
        op.ir_name = arena_->CopyString(std::string(dialect.name) + "." + std::string(op.name));
      }
      op_names_.push_back(op);
    }
  }
}

void Reader::ReadResources(Cursor data, Cursor offsets) {
  const uint64_t external = offsets.Count("the external resource group count");
  auto group = [&](bool keep) {
    const uint64_t n = offsets.Count("a resource group's entry count");
    for (uint64_t i = 0; i < n; ++i) {
      String(&offsets, "a resource key");
      const uint64_t size = offsets.VarInt("a resource's size");
      const uint8_t kind = offsets.Byte("a resource's kind");
      Cursor entry = data.Sub(size, "a resource entry", "resource entry");
      if (!keep) continue;
      Resource r;
      if (kind == 0 && size > 0) {  // a blob: alignment, size, padding, bytes
        const uint64_t alignment = entry.VarInt("a resource blob's alignment");
        const uint64_t blob_size = entry.VarInt("a resource blob's size");
        entry.Align(alignment);
        r.data = entry.Bytes(blob_size, "a resource blob");
        r.size = blob_size;
        r.present = true;
      }
      resources_.push_back(r);
    }
  };
  for (uint64_t i = 0; i < external; ++i) {
    String(&offsets, "an external resource group's key");
    group(false);
  }
  while (!offsets.Empty()) {
    const size_t at = offsets.Offset();
    const uint64_t d = offsets.VarInt("a resource group's dialect");
    if (d >= dialects_.size()) FailAt(at, "expected a dialect index below " + std::to_string(dialects_.size()));
    group(true);
  }
}

void Reader::ReadAttrTypeOffsets(Cursor data, Cursor offsets) {
  const uint64_t num_attrs = offsets.Count("the attribute count");
  const uint64_t num_types = offsets.Count("the type count");
  if (num_attrs + num_types > offsets.Left()) offsets.Fail("expected an offset entry for each attribute and type");
  attr_entries_.resize(num_attrs);
  type_entries_.resize(num_types);
  const uint8_t* cur = data.Pos();
  const uint8_t* end = data.Pos() + data.Left();
  for (auto* entries : {&attr_entries_, &type_entries_}) {
    size_t i = 0;
    while (i < entries->size()) {
      const size_t at = offsets.Offset();
      const uint64_t d = offsets.VarInt("an attribute/type group's dialect");
      if (d >= dialects_.size()) FailAt(at, "expected a dialect index below " + std::to_string(dialects_.size()));
      const uint64_t n = offsets.VarInt("an attribute/type group's count");
      if (n > entries->size() - i) {
        FailAt(at, "an attribute/type group of " + std::to_string(n) + " entries is more than the " +
                       std::to_string(entries->size() - i) + " left");
      }
      for (uint64_t k = 0; k < n; ++k, ++i) {
        Entry& e = (*entries)[i];
        const size_t size_at = offsets.Offset();
        const uint64_t size = offsets.VarIntWithFlag(&e.custom, "an attribute/type size");
        if (size > static_cast<uint64_t>(end - cur)) {
          FailAt(size_at, "an attribute/type entry of " + std::to_string(size) +
                              " bytes runs past the end of the attribute/type section");
        }
        e.dialect = static_cast<uint32_t>(d);
        e.data = cur;
        e.size = size;
        cur += size;
      }
    }
  }
  if (!offsets.Empty()) offsets.Fail("expected the end of the attribute/type offset section");
  if (attr_store_.size() < num_attrs) attr_store_.resize(num_attrs);
  num_attrs_ = num_attrs;
  attr_class_.resize(num_attrs, AttrClass::kValue);
  types_.resize(num_types);
}

void Reader::ReadProperties(Cursor c) {
  if (c.Empty()) return;
  const uint64_t n = c.Count("the property count");
  properties_.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t size = c.VarInt("a property blob's size");
    const uint8_t* p = c.Bytes(size, "a property blob");
    properties_.emplace_back(p, size);
  }
  if (!c.Empty()) c.Fail("expected the end of the properties section");
}

// --- Attributes and types -------------------------------------------------------------------------------

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
  Attribute& a = *new (attr_store_[index].bytes) Attribute();  // attr_store_ does not grow while reading
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

std::vector<Attribute> Reader::ReadAttrList(Cursor* c, const char* what) {
  const uint64_t n = c->Count(what);
  std::vector<Attribute> v;
  v.reserve(n);
  for (uint64_t i = 0; i < n; ++i) v.push_back(Attr(c, what));
  return v;
}

// (name, value)* with string attributes as names: builtin DictionaryAttr and vhlo DictionaryV1Attr.
NamedAttrs Reader::ReadDict(Cursor* c) {
  const uint64_t n = c->Count("a dictionary's entry count", 2);
  std::vector<NamedAttr> d;
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
  std::vector<int64_t> dims(n);
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
      a->array = arena_->Copy(ReadAttrList(c, "an array element"));
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
      a->array = arena_->Copy(ReadAttrList(c, "an array element"));
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

// --- IR --------------------------------------------------------------------------------------------------

const Reader::OpName& Reader::ReadOpName(Cursor* c) {
  const size_t at = c->Offset();
  const uint64_t i = c->VarInt("an op name");
  if (i >= op_names_.size()) {
    FailAt(at, "expected an op name index below " + std::to_string(op_names_.size()) + ", found " + std::to_string(i));
  }
  return op_names_[i];
}

void Reader::UseListOrders(Cursor* c, uint64_t range_size) {
  uint64_t n = 1;
  if (range_size > 1) n = c->Count("a use-list order count");
  for (uint64_t i = 0; i < n; ++i) {
    if (range_size > 1) c->VarInt("a use-list value index");
    bool pairs = false;
    const uint64_t m = c->VarIntWithFlag(&pairs, "a use-list length");
    if (m > c->Left()) c->Truncated("use-list indices");
    for (uint64_t k = 0; k < m; ++k) c->VarInt("a use-list index");
  }
}

void Reader::DefineValue(RegionState* rs, ValueRef ref, const Type* type, size_t offset) {
  Scope& s = scopes_.back();
  if (rs->next_value >= rs->end_value) {
    FailAt(offset, "the region defines more values than the " + std::to_string(rs->end_value) + " its header counts");
  }
  Slot& slot = s.values[rs->next_value];
  slot.defined = true;
  slot.ref = ref;
  slot.type = type;
  const size_t index = rs->next_value++;
  (void)index;
  // Patch the forward references to this value.
  for (uint32_t u = slot.waiting; u != kNoUse; u = s.pending[u].next) {
    ValueRef* use = s.pending[u].use;
    const Location loc = use->loc;
    *use = ref;
    use->loc = loc;
    *s.pending[u].type = *type;
  }
  slot.waiting = kNoUse;
}

// At the end of a region: it defined as many values as its header counts, and no use waits for one.
void Reader::EndRegionValues(Cursor* c, const RegionState& rs, uint64_t num_values) {
  if (rs.next_value != rs.end_value) {
    c->Fail("the region's header counts " + std::to_string(num_values) + " values, but it defines " +
            std::to_string(num_values - (rs.end_value - rs.next_value)));
  }
  Scope& s = scopes_.back();
  const size_t base = rs.end_value - num_values;
  for (size_t i = base; i < rs.end_value; ++i) {
    if (s.values[i].waiting != kNoUse) c->Fail("an operand refers to value #" + std::to_string(i) + ", never defined");
  }
  s.values.resize(base);
  live_values_ -= num_values;
}

void Reader::ReadOp(Cursor* c, RegionState* rs, int depth, bool function_body, RawOp* op, bool* isolated,
                    uint64_t* num_regions) {
  (void)function_body;
  (void)depth;
  op->name = &ReadOpName(c);
  const uint8_t mask = c->Byte("an op's encoding mask");
  if (mask & 0x80) c->Fail("expected an op encoding mask below 0x80");
  {
    const size_t at = c->Offset();
    op->loc = LocAt(c->VarInt("an op's location"), at);
  }
  // The attribute dictionary comes first in the encoding; the IR lists properties first.
  NamedAttrs dict;
  if (mask & kHasAttrs) {
    const size_t at = c->Offset();
    const Attribute& d = Attr(c, "an op's attribute dictionary");
    if (d.kind != Attribute::Kind::kDict) FailAt(at, "expected a dictionary attribute for an op's attributes");
    dict = d.dict;
  }
  std::vector<NamedAttr>& props = op->attrs;  // (cleared: a scratch op)
  if (mask & kHasProperties) {
    if (version_ < kNativePropertiesEncoding) c->Fail("properties need bytecode version 5 or newer");
    const size_t at = c->Offset();
    if (!op->name->registered) {  // an unregistered op keeps its properties as a dictionary attribute
      const Attribute& d = Attr(c, "an op's properties");
      if (d.kind == Attribute::Kind::kDict) props.assign(d.dict.begin(), d.dict.end());
    } else {
      const uint64_t idx = c->VarInt("an op's properties index");
      if (idx >= properties_.size()) {
        FailAt(at, "expected a properties index below " + std::to_string(properties_.size()) + ", found " +
                       std::to_string(idx));
      }
      Cursor p(data_, properties_[idx].first, properties_[idx].first + properties_[idx].second, "property blob");
      const Dialect& d = dialects_[op->name->dialect];
      if (op->name->vhlo) {
        const VhloOp& v = *op->name->vhlo;
        for (int i = 0; i < v.num_attrs; ++i) props.emplace_back(v.attrs[i], Attr(&p, "a property"));
      } else if (d.kind == DialectKind::kBuiltin && op->name->name == "module") {
        for (const char* key : {"sym_name", "sym_visibility"}) {  // optional attributes: index << 1 | present
          bool present = false;
          const size_t kat = p.Offset();
          const uint64_t i = p.VarIntWithFlag(&present, key);
          if (present) props.emplace_back(key, AttrAt(i, kat, key));
        }
      } else {
        FailAt(at, "cannot read the properties of \"" + std::string(op->name->ir_name) +
                       "\" (an op of a dialect other than vhlo and builtin)");
      }
      if (!p.Empty()) p.Fail("expected the end of the properties of " + std::string(op->name->ir_name));
    }
  }
  op->num_props = op->attrs.size();
  op->attrs.insert(op->attrs.end(), dict.begin(), dict.end());
  if (mask & kHasResults) {
    const uint64_t n = c->Count("an op's result count");
    op->result_types.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      const Type& t = TypeRef(c, "a result type");  // in types_, which does not move while the IR is read
      op->result_types.push_back(t);
      op->result_type_refs.push_back(&t);
    }
  }
  if (mask & kHasOperands) {
    const uint64_t n = c->Count("an op's operand count");
    op->operands.resize(n);
    op->operand_types.resize(n);
    op->operand_slots.resize(n);
    Scope& s = scopes_.back();
    for (uint64_t i = 0; i < n; ++i) {
      const size_t at = c->Offset();
      const uint64_t v = c->VarInt("an operand");
      if (v >= s.values.size()) {
        FailAt(at, "expected an operand's value index below " + std::to_string(s.values.size()) + ", found " +
                       std::to_string(v));
      }
      op->operand_slots[i] = v;
      if (s.values[v].defined) {
        op->operands[i] = s.values[v].ref;
        op->operand_types[i] = *s.values[v].type;
      }
      op->operands[i].loc = op->loc;
    }
  }
  if (mask & kHasSuccessors) {
    const uint64_t n = c->Count("an op's successor count");
    for (uint64_t i = 0; i < n; ++i) c->VarInt("a successor");
  }
  if (version_ >= kUseListOrdering && (mask & kHasUseListOrders)) UseListOrders(c, op->result_types.size());
  *num_regions = 0;
  *isolated = false;
  if (mask & kHasInlineRegions) *num_regions = c->VarIntWithFlag(isolated, "an op's region count");
  if (*num_regions > c->Left() + 1) c->Fail("expected a region count the rest of the section can hold");
  // Results become values of the current region.
  if (!op->result_types.empty()) {
    Scope& s = scopes_.back();
    op->result_name = NumberName("", s.next_result++);
    for (size_t i = 0; i < op->result_types.size(); ++i) {
      ValueRef ref;
      ref.name = op->result_name;
      ref.index = static_cast<uint32_t>(i);
      ref.loc = op->loc;
      DefineValue(rs, ref, op->result_type_refs[i], c->Offset());
    }
  }
}

// The regions of an op isolated from above are in a nested IR section (bytecode version 2 on): returns the
// cursor to read them from, `section` or `c` itself.
Cursor* Reader::OpenRegionSection(Cursor* c, bool isolated, Cursor* section, const char* what) {
  if (!isolated || version_ < kLazyLoading) return c;
  const uint8_t id = c->Byte("an IR section holding an isolated op's regions");
  if ((id & 0x7F) != kIR) c->Fail(std::string("expected an IR section holding ") + what);
  const uint64_t len = c->VarInt("the IR section's length");
  if (id & 0x80) c->Align(c->VarInt("the IR section's alignment"));
  *section = c->Sub(len, "a region's IR section", "region's IR section");
  return section;
}

void Reader::ReadOpRegions(Cursor* c, RawOp* op, bool isolated, uint64_t num_regions, int depth, bool top_level_func) {
  if (num_regions == 0) return;
  Cursor section;
  Cursor* rc = OpenRegionSection(c, isolated, &section, "an isolated op's regions");
  if (isolated) {
    scopes_.emplace_back();
    if (!top_level_func && scopes_.size() > 1) {
      // Names continue across a function's nested isolated regions as MLIR prints them only per function;
      // give nested scopes distinct names by continuing the counters.
      scopes_.back().next_result = scopes_[scopes_.size() - 2].next_result;
      scopes_.back().next_arg = scopes_[scopes_.size() - 2].next_arg;
    }
  }
  op->regions.resize(num_regions);
  for (uint64_t i = 0; i < num_regions; ++i) ReadRegion(rc, &op->regions[i], depth + 1, top_level_func, nullptr);
  if (isolated) {
    Scope& s = scopes_.back();
    const uint32_t next_result = s.next_result, next_arg = s.next_arg;
    scopes_.pop_back();
    if (!top_level_func && !scopes_.empty()) {
      scopes_.back().next_result = std::max(scopes_.back().next_result, next_result);
      scopes_.back().next_arg = std::max(scopes_.back().next_arg, next_arg);
    }
    if (rc != c && !rc->Empty()) rc->Fail("expected the end of the isolated region's IR section");
  }
}

// Reserves a region's values in its scope. Each value takes at least a byte to define, so no more can be
// live than the input has bytes: a bound that nested regions each claiming the bytes left cannot exceed.
void Reader::ReserveValues(Cursor* c, Scope* s, uint64_t num_values, RegionState* rs) {
  live_values_ += num_values;
  if (live_values_ > size_) {
    c->Fail("the regions being read declare " + std::to_string(live_values_) + " values, more than the " +
            std::to_string(size_) + " bytes of the input can define");
  }
  rs->next_value = s->values.size();
  rs->end_value = s->values.size() + num_values;
  s->values.resize(rs->end_value);
}

void Reader::ReadRegion(Cursor* c, Region* region, int depth, bool function_body, std::vector<Argument>* entry_args) {
  if (depth > kMaxDepth) c->Fail("regions nest deeper than " + std::to_string(kMaxDepth));
  const uint64_t num_blocks = c->Count("a region's block count");
  if (num_blocks == 0) return;
  const uint64_t num_values = c->Count("a region's value count");
  Scope& s = scopes_.back();
  RegionState rs;
  ReserveValues(c, &s, num_values, &rs);
  // Grown as blocks are read (a count nested regions repeat allocates nothing); reused per depth.
  std::vector<Block>& blocks = ScratchVector(&scratch_blocks_, depth);
  for (uint64_t b = 0; b < num_blocks; ++b) {
    blocks.emplace_back();
    ReadBlock(c, &rs, &blocks.back(), depth, function_body, b == 0 ? entry_args : nullptr);
    if (num_blocks > 1) blocks.back().label = NumberName("bb", static_cast<uint32_t>(b));
  }
  region->blocks = arena_->Copy(blocks);
  EndRegionValues(c, rs, num_values);  // the region's values go out of scope
}

void Reader::ReadBlock(Cursor* c, RegionState* rs, Block* block, int depth, bool function_body,
                       std::vector<Argument>* args_out) {
  bool has_args = false;
  const uint64_t num_ops = c->VarIntWithFlag(&has_args, "a block header");
  if (num_ops > c->Left()) c->Fail("expected a block's op count the rest of the section can hold");
  std::vector<Argument> args;
  if (has_args) {
    const uint64_t n = c->Count("a block's argument count");
    args.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      Argument& a = args[i];
      const size_t at = c->Offset();
      const Type* type_ref = nullptr;  // in types_, which does not move while the IR is read
      if (version_ >= kElideUnknownBlockArgLocation) {
        bool has_loc = false;
        const uint64_t type = c->VarIntWithFlag(&has_loc, "a block argument's type");
        type_ref = &TypeAt(type, at, "a block argument's type");
        if (has_loc) {
          const size_t lat = c->Offset();
          a.loc = LocAt(c->VarInt("a block argument's location"), lat);
        }
      } else {
        type_ref = &TypeRef(c, "a block argument's type");
        const size_t lat = c->Offset();
        a.loc = LocAt(c->VarInt("a block argument's location"), lat);
      }
      a.type = *type_ref;
      a.name = NumberName("arg", scopes_.back().next_arg++);
      ValueRef ref;
      ref.name = a.name;
      ref.loc = a.loc;
      DefineValue(rs, ref, type_ref, at);
    }
    if (version_ >= kUseListOrdering) {
      const uint8_t has_orders = c->Byte("a block's use-list flag");
      if (has_orders) UseListOrders(c, n);
    }
  }
  std::vector<Operation>& ops = ScratchVector(&scratch_ops_, depth);  // (grown as ops are read)
  for (uint64_t i = 0; i < num_ops; ++i) {
    RawOp& raw = ScratchOp(depth);
    bool isolated = false;
    uint64_t num_regions = 0;
    ReadOp(c, rs, depth, function_body, &raw, &isolated, &num_regions);
    ReadOpRegions(c, &raw, isolated, num_regions, depth, false);
    ops.push_back(MakeOperation(raw, function_body));
    // Operands that referred to values not yet defined are patched when those are defined.
    Operation& op = ops.back();
    Scope& s = scopes_.back();
    for (size_t k = 0; k < raw.operand_slots.size(); ++k) {
      Slot& slot = s.values[raw.operand_slots[k]];
      if (!slot.defined) {
        s.pending.push_back(
            {const_cast<ValueRef*>(&op.operands[k]), const_cast<Type*>(&op.operand_types[k]), slot.waiting});
        slot.waiting = static_cast<uint32_t>(s.pending.size() - 1);
      }
    }
  }
  block->ops = arena_->Copy(ops);  // the pending uses point into the operands' arena arrays: still valid
  block->args = arena_->Copy(args);
  if (args_out) *args_out = args;
}

// The integers of a list attribute (dense or array) or of an integer, as StableHLO prints them.
std::string IntsText(const Attribute& a) {
  std::string s;
  if (a.kind == Attribute::Kind::kInt) return std::to_string(a.i);
  if (a.kind == Attribute::Kind::kArray) {
    for (const Attribute& e : a.array) s += (s.empty() ? "" : ", ") + std::to_string(e.i);
  } else if (a.kind == Attribute::Kind::kDense && a.type.kind == Type::Kind::kTensor && !a.splat) {
    const uint32_t es = ElementByteSize(a.type.element);
    for (size_t i = 0; es && (es == 4 || es == 8) && i + es <= a.dense.size(); i += es) {
      int64_t v = 0;
      if (es == 8) {
        std::memcpy(&v, a.dense.data() + i, 8);
      } else {
        int32_t w;
        std::memcpy(&w, a.dense.data() + i, 4);
        v = w;
      }
      s += (s.empty() ? "" : ", ") + std::to_string(v);
    }
  }
  return "[" + s + "]";
}

// StableHLO groups some of the flat attributes vhlo has (#stablehlo.scatter<...>, #stablehlo.gather<...>,
// #stablehlo.dot<...>, #stablehlo.conv<...>): the IR keeps them grouped as the text parser does, a dictionary
// of the members (and for convolutions the `raw` text form).
void Reader::GroupAttributes(int group, std::vector<NamedAttr>* attrs) {
  {
    const Group& g = kGroups[group];
    std::vector<NamedAttr> members, rest;
    std::string text =
        std::string("#stablehlo.") + g.mnemonic + "<" + (std::string(g.mnemonic) == "conv" ? "raw " : "");
    for (const char* m : g.members) {
      for (const NamedAttr& kv : *attrs) {
        if (kv.first != m) continue;
        members.push_back(kv);
        text += (members.size() > 1 ? ", " : "") + std::string(m) + " = " + IntsText(kv.second);
      }
    }
    for (const NamedAttr& kv : *attrs) {
      if (std::find(g.members.begin(), g.members.end(), kv.first) == g.members.end()) rest.push_back(kv);
    }
    Attribute group;
    group.kind = Attribute::Kind::kOpaque;
    group.dict = arena_->Copy(members);
    group.text = arena_->CopyString(text + ">");
    group.str = group.text;
    rest.insert(rest.begin(), NamedAttr(g.key, group));
    *attrs = std::move(rest);
    return;
  }
}

Operation Reader::MakeOperation(RawOp& raw, bool function_body) {
  Operation op;
  op.name = raw.name->ir_name;
  if (function_body && raw.name->is_return) op.name = "func.return";
  op.num_results = static_cast<uint32_t>(raw.result_types.size());
  op.result_name = raw.result_name;
  op.operands = arena_->Copy(raw.operands);
  op.operand_types = arena_->Copy(raw.operand_types);
  op.result_types = arena_->Copy(raw.result_types);
  op.loc = raw.loc;
  // Callees: func.call's callee, custom_call's call_target_name.
  if (!raw.name->callee_key.empty()) {
    for (const NamedAttr& kv : raw.attrs) {
      if (kv.first == raw.name->callee_key &&
          (kv.second.kind == Attribute::Kind::kString || kv.second.kind == Attribute::Kind::kSymbol)) {
        op.callee = kv.second.str;
      }
    }
  }
  // vhlo ops are what the generic form writes: operands in order, every attribute named.
  op.generic = raw.name->vhlo != nullptr;
  if (raw.name->vhlo) {
    if (raw.name->group >= 0) GroupAttributes(raw.name->group, &raw.attrs);
    // vhlo keeps StableHLO's array<i1: ...> (window_reversal) as a tensor<Nxi1>: back to an array of bools.
    for (size_t i = 0; raw.name->bool_arrays && i < raw.num_props && i < raw.attrs.size(); ++i) {
      Attribute& a = raw.attrs[i].second;
      if (a.kind != Attribute::Kind::kDense || a.type.element != ElementType::kPred || a.type.dims.size() != 1 ||
          raw.attrs[i].first == "value") {
        continue;
      }
      std::vector<Attribute> bools(static_cast<size_t>(std::max<int64_t>(a.type.dims[0], 0)));
      for (size_t k = 0; k < bools.size(); ++k) {
        bools[k].kind = Attribute::Kind::kBool;
        bools[k].b = a.dense.empty() ? false : a.dense[a.splat ? 0 : std::min(k, a.dense.size() - 1)] != 0;
      }
      a = Attribute();
      a.kind = Attribute::Kind::kArray;
      a.array = arena_->Copy(bools);
    }
  }
  op.attributes = arena_->Copy(raw.attrs);
  op.regions = arena_->Copy(raw.regions);
  return op;
}

Function Reader::MakeFunction(RawOp& raw, size_t offset) {
  Function f;
  f.loc = raw.loc;
  f.visibility = "public";
  const Attribute* arg_attrs = nullptr;
  const Attribute* res_attrs = nullptr;
  std::vector<NamedAttr> other;
  for (size_t i = 0; i < raw.attrs.size(); ++i) {
    const NamedAttr& kv = raw.attrs[i];
    if (i >= raw.num_props) {
      other.push_back(kv);
    } else if (kv.first == "sym_name") {
      if (kv.second.kind != Attribute::Kind::kString) FailAt(offset, "expected a string sym_name for a function");
      f.name = kv.second.str;
    } else if (kv.first == "sym_visibility") {
      if (kv.second.kind == Attribute::Kind::kString && !kv.second.str.empty()) f.visibility = kv.second.str;
    } else if (kv.first == "function_type") {
      if (kv.second.kind != Attribute::Kind::kType || kv.second.type.kind != Type::Kind::kFunction) {
        FailAt(offset, "expected a function type for function @" + std::string(f.name));
      }
      const Type& ft = kv.second.type;
      f.result_types = Span<Type>(ft.elements.data() + ft.num_inputs, ft.elements.size() - ft.num_inputs);
    } else if (kv.first == "arg_attrs") {
      arg_attrs = &kv.second;
    } else if (kv.first == "res_attrs") {
      res_attrs = &kv.second;
    }
  }
  f.attributes = arena_->Copy(other);
  if (raw.regions.size() != 1) FailAt(offset, "expected one region in function @" + std::string(f.name));
  f.body = raw.regions[0];
  if (!f.body.blocks.empty()) {
    std::vector<Argument> args(f.body.blocks[0].args.begin(), f.body.blocks[0].args.end());
    if (arg_attrs && arg_attrs->kind == Attribute::Kind::kArray) {
      if (arg_attrs->array.size() != args.size() && !arg_attrs->array.empty()) {
        FailAt(offset, "function @" + std::string(f.name) + " has " + std::to_string(args.size()) + " arguments but " +
                           std::to_string(arg_attrs->array.size()) + " argument attributes");
      }
      for (size_t i = 0; i < arg_attrs->array.size(); ++i) {
        if (arg_attrs->array[i].kind == Attribute::Kind::kDict) args[i].attrs = arg_attrs->array[i].dict;
      }
    }
    f.args = arena_->Copy(args);
    // As the text parser has it: the entry block's arguments are the function's, not the block's.
    std::vector<Block> blocks(f.body.blocks.begin(), f.body.blocks.end());
    blocks[0].args = Span<Argument>();
    f.body.blocks = arena_->Copy(blocks);
  }
  if (res_attrs && res_attrs->kind == Attribute::Kind::kArray && !res_attrs->array.empty()) {
    if (res_attrs->array.size() != f.result_types.size()) {
      FailAt(offset, "function @" + std::string(f.name) + " has " + std::to_string(f.result_types.size()) +
                         " results but " + std::to_string(res_attrs->array.size()) + " result attributes");
    }
    std::vector<NamedAttrs> ra;
    for (const Attribute& a : res_attrs->array) ra.push_back(a.kind == Attribute::Kind::kDict ? a.dict : NamedAttrs());
    f.result_attrs = arena_->Copy(ra);
  }
  return f;
}

void Reader::AddTopLevelOp(RawOp& raw, Cursor* c) {
  if (raw.name->vhlo && std::string_view(raw.name->vhlo->name) == "func_v1") {
    out_->functions.push_back(MakeFunction(raw, c->Offset()));
  } else {
    out_->other_ops.push_back(MakeOperation(raw, false));
  }
}

void Reader::ReadIR(Cursor c) {
  // The top level: one block without arguments holding builtin.module.
  scopes_.emplace_back();
  bool has_args = false;
  const uint64_t num_ops = c.VarIntWithFlag(&has_args, "the top-level block header");
  if (has_args) c.Fail("expected a top-level block without arguments");
  if (num_ops != 1) c.Fail("expected one top-level op (builtin.module), found " + std::to_string(num_ops));
  RegionState top;
  RawOp module;
  bool isolated = false;
  uint64_t num_regions = 0;
  const size_t module_at = c.Offset();
  ReadOp(&c, &top, 0, false, &module, &isolated, &num_regions);
  if (dialects_[module.name->dialect].kind != DialectKind::kBuiltin || module.name->name != "module") {
    FailAt(module_at, "expected builtin.module at the top level, found " + std::string(module.name->ir_name));
  }
  if (num_regions != 1) FailAt(module_at, "expected builtin.module to have one region");
  out_->loc = module.loc;
  std::vector<NamedAttr> attrs;
  for (size_t i = 0; i < module.attrs.size(); ++i) {
    if (i < module.num_props && module.attrs[i].first == "sym_name") {
      out_->name = module.attrs[i].second.str;
    } else if (i >= module.num_props) {
      attrs.push_back(module.attrs[i]);
    }
  }
  out_->attributes = arena_->Copy(attrs);
  // The module's region: read here so that functions become Functions.
  Cursor section;
  Cursor* rc = OpenRegionSection(&c, isolated, &section, "the module's region");
  if (isolated) scopes_.emplace_back();
  const uint64_t num_blocks = rc->Count("the module's block count");
  if (num_blocks != 1) rc->Fail("expected one block in the module, found " + std::to_string(num_blocks));
  const uint64_t num_values = rc->Count("the module's value count");
  Scope& s = scopes_.back();
  RegionState rs;
  ReserveValues(rc, &s, num_values, &rs);
  bool block_args = false;
  const uint64_t n = rc->VarIntWithFlag(&block_args, "the module's block header");
  if (block_args) rc->Fail("expected the module's block to have no arguments");
  if (n > rc->Left()) rc->Fail("expected a module op count the rest of the section can hold");
  for (uint64_t i = 0; i < n; ++i) {
    RawOp raw;
    bool iso = false;
    uint64_t nr = 0;
    ReadOp(rc, &rs, 1, false, &raw, &iso, &nr);
    const bool func = raw.name->vhlo && std::string_view(raw.name->vhlo->name) == "func_v1";
    if (func) {
      // Each function is its own naming scope, as MLIR prints it: the names restart (the module's values,
      // if any, stay visible when the function is not isolated).
      Scope& module_scope = scopes_.back();
      const uint32_t saved_result = module_scope.next_result, saved_arg = module_scope.next_arg;
      module_scope.next_result = module_scope.next_arg = 0;
      ReadOpRegions(rc, &raw, iso, nr, 1, true);
      scopes_.back().next_result = saved_result;
      scopes_.back().next_arg = saved_arg;
    } else {
      ReadOpRegions(rc, &raw, iso, nr, 1, false);
    }
    AddTopLevelOp(raw, rc);
  }
  EndRegionValues(rc, rs, num_values);
  if (rc != &c && !rc->Empty()) rc->Fail("expected the end of the module's IR section");
  if (!c.Empty()) c.Fail("expected the end of the IR section after builtin.module");
  saw_module_ = true;
}

void Reader::Read() {
  auto arena = std::make_shared<Arena>();
  arena_ = arena.get();
  *out_ = Module();
  out_->arena = arena;
  // The input is copied into the arena first: the IR's strings are views into the string section.
  const std::string_view copy = arena_->CopyString(std::string_view(reinterpret_cast<const char*>(data_), size_));
  data_ = reinterpret_cast<const uint8_t*>(copy.data());
  Cursor c(data_, data_, data_ + size_, "file");
  if (size_ < 4 || std::memcmp(data_, "ML\xefR", 4) != 0) {
    c.Fail("expected the MLIR bytecode magic ML\\xefR (4d 4c ef 52)");
  }
  ReadHeader(&c);
  while (!c.Empty()) {
    const uint8_t id_byte = c.Byte("a section id");
    const uint8_t id = id_byte & 0x7F;
    if (id >= kNumSections) {
      FailAt(c.Offset() - 1, "expected a section id 0-8, found " + std::to_string(id));
    }
    const uint64_t len = c.VarInt("a section length");
    if (id_byte & 0x80) c.Align(c.VarInt("a section alignment"));
    if (have_[id]) FailAt(c.Offset(), std::string("the ") + kSectionNames[id] + " section appears twice");
    if (len > c.Left()) {
      c.Fail(std::string("expected the ") + kSectionNames[id] + " section's " + std::to_string(len) +
             " bytes, but the file ends " + std::to_string(c.Left()) + " bytes later (its length runs past the end)");
    }
    sections_[id] = c.Sub(len, kSectionNames[id], kRegionNames[id]);
    have_[id] = true;
  }
  for (int i : {kString, kDialect, kAttrType, kAttrTypeOffset, kIR}) {
    if (!have_[i]) c.Fail(std::string("expected a ") + kSectionNames[i] + " section");
  }
  if (have_[kResource] != have_[kResourceOffset]) c.Fail("expected both resource sections or neither");
  ReadStrings(sections_[kString]);
  if (have_[kProperties]) ReadProperties(sections_[kProperties]);
  ReadDialects(sections_[kDialect]);
  if (have_[kResource]) ReadResources(sections_[kResource], sections_[kResourceOffset]);
  ReadAttrTypeOffsets(sections_[kAttrType], sections_[kAttrTypeOffset]);
  ReadIR(sections_[kIR]);
}

}  // namespace

bool IsBytecode(std::string_view data) { return data.size() >= 4 && std::memcmp(data.data(), "ML\xefR", 4) == 0; }

Status ParseBytecode(std::string_view data, std::string_view filename, Module* out) {
  try {
    Module m;
    thread_local Reader r;
    r.Reset(data, &m);
    r.Read();
    *out = std::move(m);
    return Ok();
  } catch (const BcError& e) {
    return InvalidArgument("%.*s: byte %zu: %s", static_cast<int>(filename.size()), filename.data(), e.offset,
                           e.message.c_str());
  } catch (const std::bad_alloc&) {
    return Status(OutOfMemoryStatus());
  }
}

}  // namespace neuronmem::stablehlo
