// The MLIR bytecode container (llvm-project mlir/docs/BytecodeFormat.md, mlir/lib/Bytecode/Encoding.h) as the
// artifact reader and writer share it: section ids, bytecode versions and their features, the op encoding
// mask, the StableHLO version of a producer string, and a bounds-checked cursor whose failures carry the
// byte offset (BcError). Internal to src/stablehlo.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace neuronmem::stablehlo::bytecode {

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
inline const char* const kSectionNames[kNumSections] = {
    "string",          "dialect",          "attribute/type", "attribute/type offset", "IR", "resource",
    "resource offset", "dialect versions", "properties"};
inline const char* const kRegionNames[kNumSections] = {
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

inline std::string VersionString(const int (&v)[3]) {
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

}  // namespace neuronmem::stablehlo::bytecode
