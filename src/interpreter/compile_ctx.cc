// What op compilers read through CompileCtx: the op's attributes (typed, as the parser decoded them) and
// errors located at the op.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "interpreter/compiler.h"

namespace neuronmem::interp {

std::string FormatLocation(const std::string& file, const Operation& op) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ":%u:%u", op.loc.line, op.loc.column);
  return (file.empty() ? std::string("<input>") : file) + buf;
}

Status Interrupted(const Frame& frame, const Kernel& next) {
  const int code = frame.interrupt->load(std::memory_order_relaxed);
  std::string at;
  if (next.op)
    at = " before " + FormatLocation(frame.state->filename, *next.op) + ": '" + std::string(next.op->name) + "'";
  if (code == NEURONMEM_STATUS_DEADLINE_EXCEEDED)
    return DeadlineExceeded("the execution's deadline passed%s", at.c_str());
  if (code == NEURONMEM_STATUS_CANCELLED) return Cancelled("the execution was cancelled%s", at.c_str());
  return MakeStatus(static_cast<neuronmem_status_code_t>(code), "the execution was stopped" + at);
}

static Status OpStatus(const CompileCtx& cx, neuronmem_status_code_t code, const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  const auto& fc = static_cast<const FunctionCompiler&>(cx);
  return MakeStatus(code,
                    FormatLocation(fc.state()->filename, cx.op()) + ": '" + std::string(cx.op().name) + "': " + buf);
}

Status CompileCtx::Unsupported(const char* fmt, ...) const {
  va_list ap;
  va_start(ap, fmt);
  Status s = OpStatus(*this, NEURONMEM_STATUS_UNIMPLEMENTED, fmt, ap);
  va_end(ap);
  return s;
}

Status CompileCtx::Invalid(const char* fmt, ...) const {
  va_list ap;
  va_start(ap, fmt);
  Status s = OpStatus(*this, NEURONMEM_STATUS_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return s;
}

const Attribute* CompileCtx::Attr(std::string_view name) const { return stablehlo::Find(op_->attributes, name); }

// The most elements an integer-list attribute may have: IntListOf is false for a longer dense tensor.
constexpr int64_t kMaxIntList = int64_t{1} << 20;

bool CompileCtx::IntListOf(const Attribute& a, std::vector<int64_t>* out) {
  out->clear();
  if (a.kind == Attribute::Kind::kArray) {
    for (const Attribute& e : a.array) {
      if (e.kind != Attribute::Kind::kInt) return false;
      out->push_back(e.i);
    }
    return true;
  }
  if (a.kind == Attribute::Kind::kDense) {
    const ElementType t = a.type.element;
    if (!IsInteger(t)) return false;
    const size_t bytes = ElementByteSize(t);
    int64_t n = 1;
    for (int64_t d : a.type.dims) n *= d;  // at most 2^34: the parser bounds dense literals
    // A splat is one value in the text: expanding a hostile shape would take the memory of the machine.
    if (n > kMaxIntList) return false;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* p = a.dense.data() + (a.splat ? 0 : i * bytes);
      int64_t v = 0;
      switch (bytes) {
        case 1: v = IsSignedInt(t) ? static_cast<int8_t>(*p) : *p; break;
        case 2: {
          int16_t x;
          std::memcpy(&x, p, 2);
          v = IsSignedInt(t) ? x : static_cast<uint16_t>(x);
          break;
        }
        case 4: {
          int32_t x;
          std::memcpy(&x, p, 4);
          v = IsSignedInt(t) ? x : static_cast<uint32_t>(x);
          break;
        }
        default: std::memcpy(&v, p, 8); break;
      }
      out->push_back(v);
    }
    return true;
  }
  return false;
}

bool CompileCtx::IntList(std::string_view name, std::vector<int64_t>* out) const {
  const Attribute* a = Attr(name);
  return a && IntListOf(*a, out);
}

bool CompileCtx::Int(std::string_view name, int64_t* out) const {
  const Attribute* a = Attr(name);
  if (!a || a->kind != Attribute::Kind::kInt) return false;
  *out = a->i;
  return true;
}

bool CompileCtx::Bool(std::string_view name, bool* out) const {
  const Attribute* a = Attr(name);
  if (!a) return false;
  if (a->kind == Attribute::Kind::kBool) {
    *out = a->b;
    return true;
  }
  if (a->kind == Attribute::Kind::kUnit) {
    *out = true;
    return true;
  }
  return false;
}

bool CompileCtx::EnumWord(std::string_view name, std::string* out) const {
  const Attribute* a = Attr(name);
  if (!a) return false;
  // The parser decodes "#stablehlo<comparison_direction LT>", "#stablehlo.transpose<TRANSPOSE>" and a bare
  // `LT` into kEnum "LT"; some producers write a string.
  if ((a->kind != Attribute::Kind::kEnum && a->kind != Attribute::Kind::kString) || a->str.empty()) return false;
  *out = std::string(a->str);
  return true;
}

}  // namespace neuronmem::interp
