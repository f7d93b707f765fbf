// Internal status helpers. The C object neuronmem_status_t is defined here; inside the library a
// failure travels as neuronmem::Status (an owning pointer, empty = OK) and is released to the caller
// at the C shim.
#pragma once

#include <neuronmem/status.h>

#include <cstdarg>
#include <memory>
#include <new>
#include <string>
#include <utility>

struct neuronmem_status {
  neuronmem_status_code_t code;
  std::string message;
  // A failure inherited through failed dependencies (DependencyFailed): how many transfers up the chain
  // its root cause is (0: this is the root cause), and where in `message` the root cause's text starts.
  uint64_t chain = 0;
  size_t root_at = 0;
};

namespace neuronmem {

// The status handed out when allocating a status fails: static, preallocated, never freed (PJRT and absl
// do the same). It carries RESOURCE_EXHAUSTED, so an out-of-memory failure never turns into NULL (= OK).
neuronmem_status_t* OutOfMemoryStatus() noexcept;

// Frees a status; the static out-of-memory status is never freed.
void FreeStatus(neuronmem_status_t* s) noexcept;

struct StatusDeleter {
  void operator()(neuronmem_status_t* s) const noexcept { FreeStatus(s); }
};

// Owning status; empty means OK. Move-only. [[nodiscard]]: whoever gets one handles it, or drops it with
// IgnoreError() where a comment says why nobody can act on it.
class [[nodiscard]] Status : public std::unique_ptr<neuronmem_status_t, StatusDeleter> {
 public:
  using Base = std::unique_ptr<neuronmem_status_t, StatusDeleter>;
  using Base::Base;
  Status() noexcept = default;
  Status(Base&& s) noexcept : Base(std::move(s)) {}  // NOLINT(google-explicit-constructor)
  // Drops the status on purpose (a failure with nowhere to go; the call site says why).
  void IgnoreError() && noexcept { reset(); }
};

// Returns an OK (empty) status.
inline Status Ok() { return Status(); }

// Builds a status with a message. Never throws and never returns OK: if the message cannot be allocated
// the status carries the code and an empty message; if the object itself cannot, it returns the static
// OutOfMemoryStatus().
Status MakeStatus(neuronmem_status_code_t code, std::string message) noexcept;

// printf-style variant.
Status StatusF(neuronmem_status_code_t code, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

// Shorthands for the common codes (printf-style).
#define NEURONMEM_DECLARE_STATUS_HELPER(Name) \
  Status Name(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
NEURONMEM_DECLARE_STATUS_HELPER(InvalidArgument)
NEURONMEM_DECLARE_STATUS_HELPER(NotFound)
NEURONMEM_DECLARE_STATUS_HELPER(ResourceExhausted)
NEURONMEM_DECLARE_STATUS_HELPER(FailedPrecondition)
NEURONMEM_DECLARE_STATUS_HELPER(OutOfRange)
NEURONMEM_DECLARE_STATUS_HELPER(Unimplemented)
NEURONMEM_DECLARE_STATUS_HELPER(Unavailable)
NEURONMEM_DECLARE_STATUS_HELPER(Cancelled)
NEURONMEM_DECLARE_STATUS_HELPER(Internal)
NEURONMEM_DECLARE_STATUS_HELPER(DeadlineExceeded)
#undef NEURONMEM_DECLARE_STATUS_HELPER

// A copy of a status (for fanning one failure out to several events). Empty stays empty.
Status CopyStatus(const neuronmem_status_t* s) noexcept;

// The failure of a transfer whose dependency failed with `dependency`: its code, and the root cause's
// message once with the length of the chain (a chain of n failed transfers costs O(n), not O(n^2)).
Status DependencyFailed(const neuronmem_status_t* dependency) noexcept;

// Returns the message prefixed with "context: ".
Status Annotate(Status s, const std::string& context) noexcept;

}  // namespace neuronmem

// Early return of a failed Status from a function that returns Status.
#define NEURONMEM_RETURN_IF_ERROR(expr)      \
  do {                                       \
    ::neuronmem::Status _nm_status = (expr); \
    if (_nm_status) return _nm_status;       \
  } while (0)

// Wraps the body of a C entry point: converts any C++ exception into a status so none crosses the
// ABI. Use as: NEURONMEM_API_BEGIN ... return nullptr; NEURONMEM_API_END
#define NEURONMEM_API_BEGIN try {
#define NEURONMEM_API_END                                                                          \
  }                                                                                                \
  catch (const std::bad_alloc&) {                                                                  \
    return ::neuronmem::ResourceExhausted("out of host memory for library bookkeeping").release(); \
  }                                                                                                \
  catch (const std::exception& e) {                                                                \
    return ::neuronmem::Internal("unexpected exception: %s", e.what()).release();                  \
  }                                                                                                \
  catch (...) {                                                                                    \
    return ::neuronmem::Internal("unexpected exception").release();                                \
  }
