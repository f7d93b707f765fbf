// Value comparisons of the check targets, for tools and tests.
#pragma once

#include "interpreter/interpreter.h"

namespace neuronmem::interp {

enum class CheckKind { kExact, kAlmost, kClose };

// Compares two tensors as the check targets do: exact (NaN equals NaN), almost (absolute `tolerance`,
// same sign, NaN equals NaN) or close (at most `max_ulp` ULP apart; exact for non-float types).
// INVALID_ARGUMENT naming the first differing index and both values.
Status CheckValues(const TensorView& actual, const TensorView& expected, CheckKind kind, double tolerance = 1e-4,
                   uint64_t max_ulp = 3);

}  // namespace neuronmem::interp
