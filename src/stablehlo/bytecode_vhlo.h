// The vhlo dialect's tables, as the artifact reader and writer share them (openxla/stablehlo
// stablehlo/dialect/VhloOps.td, VhloBytecode.cpp): the ops with the versions they exist in and their
// attributes in encoding order, what the IR makes of each op, the type codes of element types, the enum
// attributes, and the attributes StableHLO groups that vhlo keeps flat. Internal to src/stablehlo.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stablehlo/ir.h"

namespace neuronmem::stablehlo::bytecode {

struct VhloOp {
  std::string_view name;  // mnemonic, "add_v1"
  int min[3];             // first version with the op
  int max[3];             // last version with it ({99, 0, 0}: current)
  int num_attrs;
  std::string_view attrs[17];  // in encoding order (sorted by name)
};

// Every vhlo op the reader knows, sorted by name (bytecode_vhlo_ops.inc).
Span<VhloOp> VhloOps();
const VhloOp* FindVhloOp(std::string_view name);

// What the IR makes of a vhlo op, derived once per process from its name.
struct VhloOpInfo {
  std::string ir_name;          // "stablehlo.add", "func.func", "func.call", "stablehlo.return"
  std::string_view callee_key;  // the attribute naming the callee (call, custom_call)
  bool is_return = false;       // func.return at a function's top level, else stablehlo.return
  int group = -1;               // index in kGroups of the attributes StableHLO groups
  bool bool_arrays = false;     // has window_reversal (tensor<Nxi1> in vhlo, array<i1> in StableHLO)
};
const VhloOpInfo& InfoOf(const VhloOp& v);

// vhlo type codes (VhloBytecode.cpp: TypeCode) of element types: kInvalid for a code that is not one;
// kOther with `*other_name` set for index, none, tf32 and !shape.witness.
ElementType VhloElement(uint64_t code, std::string_view* other_name);

// vhlo enum attributes: their code, the attribute mnemonic StableHLO prints and the case names.
struct VhloEnum {
  uint64_t code;
  const char* mnemonic;
  std::vector<const char*> cases;  // by value
};
extern const std::vector<VhloEnum> kVhloEnums;

double HalfToDouble(uint16_t h);

// StableHLO groups some of the flat attributes vhlo has (#stablehlo.scatter<...>, #stablehlo.gather<...>,
// #stablehlo.dot<...>, #stablehlo.conv<...>): the IR keeps them grouped as the text parser does.
struct Group {
  const char* op;
  const char* key;
  const char* mnemonic;
  std::vector<const char*> members;
};
extern const std::vector<Group> kGroups;

}  // namespace neuronmem::stablehlo::bytecode
