#include "base/status.h"

#include "base/fault.h"

#include <neuronmem/version.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace neuronmem {
namespace {

std::string VFormat(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = std::vsnprintf(small, sizeof small, fmt, ap);
  std::string out;
  if (n < 0) {
    out = fmt;
  } else if (static_cast<size_t>(n) < sizeof small) {
    out.assign(small, static_cast<size_t>(n));
  } else {
    out.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(&out[0], out.size(), fmt, ap2);
    out.resize(static_cast<size_t>(n));
  }
  va_end(ap2);
  return out;
}

// Constant-initialised storage (no allocation: the message fits the small-string buffer of every
// standard library this builds with) for the status handed out when allocating one fails.
neuronmem_status_t out_of_memory{NEURONMEM_STATUS_RESOURCE_EXHAUSTED, "out of memory"};

}  // namespace

neuronmem_status_t* OutOfMemoryStatus() noexcept { return &out_of_memory; }

void FreeStatus(neuronmem_status_t* s) noexcept {
  if (s != &out_of_memory) delete s;
}

Status MakeStatus(neuronmem_status_code_t code, std::string message) noexcept {
  auto* s = fault::Hit(fault::Site::kStatusAllocation) ? nullptr : new (std::nothrow) neuronmem_status_t;
  if (!s) return Status(OutOfMemoryStatus());
  s->code = code;
  try {
    s->message = std::move(message);
  } catch (...) {
  }
  return Status(s);
}

Status StatusF(neuronmem_status_code_t code, const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  std::string msg;
  try {
    msg = VFormat(fmt, ap);
  } catch (...) {
  }
  va_end(ap);
  return MakeStatus(code, std::move(msg));
}

#define NEURONMEM_DEFINE_STATUS_HELPER(Name, Code) \
  Status Name(const char* fmt, ...) noexcept {     \
    va_list ap;                                    \
    va_start(ap, fmt);                             \
    std::string msg;                               \
    try {                                          \
      msg = VFormat(fmt, ap);                      \
    } catch (...) {                                \
    }                                              \
    va_end(ap);                                    \
    return MakeStatus(Code, std::move(msg));       \
  }
NEURONMEM_DEFINE_STATUS_HELPER(InvalidArgument, NEURONMEM_STATUS_INVALID_ARGUMENT)
NEURONMEM_DEFINE_STATUS_HELPER(NotFound, NEURONMEM_STATUS_NOT_FOUND)
NEURONMEM_DEFINE_STATUS_HELPER(ResourceExhausted, NEURONMEM_STATUS_RESOURCE_EXHAUSTED)
NEURONMEM_DEFINE_STATUS_HELPER(FailedPrecondition, NEURONMEM_STATUS_FAILED_PRECONDITION)
NEURONMEM_DEFINE_STATUS_HELPER(OutOfRange, NEURONMEM_STATUS_OUT_OF_RANGE)
NEURONMEM_DEFINE_STATUS_HELPER(Unimplemented, NEURONMEM_STATUS_UNIMPLEMENTED)
NEURONMEM_DEFINE_STATUS_HELPER(Unavailable, NEURONMEM_STATUS_UNAVAILABLE)
NEURONMEM_DEFINE_STATUS_HELPER(Cancelled, NEURONMEM_STATUS_CANCELLED)
NEURONMEM_DEFINE_STATUS_HELPER(Internal, NEURONMEM_STATUS_INTERNAL)
NEURONMEM_DEFINE_STATUS_HELPER(DeadlineExceeded, NEURONMEM_STATUS_DEADLINE_EXCEEDED)
#undef NEURONMEM_DEFINE_STATUS_HELPER

Status CopyStatus(const neuronmem_status_t* s) noexcept {
  if (!s) return Status();
  Status copy;
  try {
    copy = MakeStatus(s->code, s->message);
  } catch (...) {
    return MakeStatus(s->code, std::string());
  }
  if (copy.get() != OutOfMemoryStatus() && copy->message.size() == s->message.size()) {
    copy->chain = s->chain;
    copy->root_at = s->root_at;
  }
  return copy;
}

Status DependencyFailed(const neuronmem_status_t* dependency) noexcept {
  const uint64_t chain = dependency->chain + 1;
  const size_t root_at = std::min(dependency->root_at, dependency->message.size());
  const char* root = dependency->message.c_str() + root_at;
  Status s = chain == 1 ? StatusF(dependency->code, "a dependency failed: %s", root)
                        : StatusF(dependency->code,
                                  "a dependency failed (the root cause is %llu transfers up the chain of failed "
                                  "dependencies): %s",
                                  static_cast<unsigned long long>(chain), root);
  if (s.get() != OutOfMemoryStatus()) {
    const size_t root_len = std::strlen(root);
    s->chain = chain;
    s->root_at = s->message.size() >= root_len ? s->message.size() - root_len : 0;
  }
  return s;
}

Status Annotate(Status s, const std::string& context) noexcept {
  if (!s || s.get() == OutOfMemoryStatus()) return s;  // the shared static status is never changed
  try {
    s->message = context + ": " + s->message;
  } catch (...) {
  }
  return s;
}

}  // namespace neuronmem
