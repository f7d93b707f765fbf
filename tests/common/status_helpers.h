// Helpers for tests of the public C API: take ownership of a returned status and check it.
#pragma once

#include <neuronmem/status.h>

#include <gtest/gtest.h>

#include <string>

namespace neuronmem_test {

struct Result {
  neuronmem_status_code_t code;
  std::string message;
};

// Takes ownership of a status (NULL = OK), frees it, and returns its code and message.
inline Result Take(neuronmem_status_t* s) {
  Result r{neuronmem_status_code(s), ""};
  neuronmem_string_t m = neuronmem_status_message(s);
  r.message.assign(m.data, m.size);
  neuronmem_status_free(s);
  return r;
}

}  // namespace neuronmem_test

#define ASSERT_OK(expr)                                         \
  do {                                                          \
    ::neuronmem_test::Result _r = ::neuronmem_test::Take(expr); \
    ASSERT_EQ(_r.code, NEURONMEM_STATUS_OK) << _r.message;      \
  } while (0)
#define EXPECT_OK(expr)                                         \
  do {                                                          \
    ::neuronmem_test::Result _r = ::neuronmem_test::Take(expr); \
    EXPECT_EQ(_r.code, NEURONMEM_STATUS_OK) << _r.message;      \
  } while (0)
