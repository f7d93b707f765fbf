// MLIR bytecode of the vhlo dialect -> IR (bytecode.h): the container. The layout follows llvm-project's
// mlir/docs/BytecodeFormat.md and BytecodeReader.cpp (bytecode versions 1 to 6); attributes and types are
// decoded in bytecode_attributes.cc, the IR in bytecode_ir.cc (bytecode_reader.h).
#include "stablehlo/bytecode.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "stablehlo/bytecode_reader.h"

namespace neuronmem::stablehlo {
namespace bytecode {

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

}  // namespace bytecode

bool IsBytecode(std::string_view data) { return data.size() >= 4 && std::memcmp(data.data(), "ML\xefR", 4) == 0; }

Status ParseBytecode(std::string_view data, std::string_view filename, Module* out) {
  try {
    Module m;
    thread_local bytecode::Reader r;
    r.Reset(data, &m);
    r.Read();
    *out = std::move(m);
    return Ok();
  } catch (const bytecode::BcError& e) {
    return InvalidArgument("%.*s: byte %zu: %s", static_cast<int>(filename.size()), filename.data(), e.offset,
                           e.message.c_str());
  } catch (const std::bad_alloc&) {
    return Status(OutOfMemoryStatus());
  }
}

}  // namespace neuronmem::stablehlo
