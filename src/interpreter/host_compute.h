// Host compute inside the interpreter (CompileOptions::HostCompute): the copies compiled in where code of one
// side reads a value of the other, and the values an op's regions read from outside them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// A kernel that copies slot `from` into slot `to` (both shaped like `like`) through the program's
// host_compute_move (a plain copy without one). Errors name the location of the op it is compiled for.
std::unique_ptr<Kernel> MakeHostComputeMove(uint32_t from, uint32_t to, const Slot& like);

// The values the regions of `op` read that are defined outside them (operands of ops inside that no op or
// block argument inside defines), each once, in order of first use.
std::vector<const stablehlo::ValueRef*> FreeValuesOfRegions(const stablehlo::Operation& op);

}  // namespace neuronmem::interp
