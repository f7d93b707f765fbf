// StableHLO portable artifacts -> IR: a hand-written reader for MLIR bytecode (mlir/docs/BytecodeFormat.md)
// of the versioned `vhlo` dialect, as `stablehlo-translate --serialize`, jax.export and PJRT clients write
// it. The vhlo ops, types and attributes are mapped onto the IR the text parser produces (ir.h):
// `vhlo.add_v1` -> `stablehlo.add`, `vhlo.func_v1` -> a Function, `vhlo.return_v1` -> `func.return` or
// `stablehlo.return`, `vhlo.call_v1` -> `func.call`, vhlo types -> Type, vhlo attributes -> Attribute.
// Bytecode has no value names: results are named as MLIR prints them ("0", "1", ... per function, block
// arguments "arg0", ...). See docs/bytecode.md.
//
// Bad input never crashes, hangs or exhausts memory: every count is bounded by the bytes left to hold it,
// nesting by kMaxDepth, and attribute/type references are checked for cycles. Errors are INVALID_ARGUMENT
// "<filename>: byte N: expected ..., found ..." (N is the offset in the file).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "stablehlo/ir.h"

namespace neuronmem::stablehlo {

// The StableHLO versions of artifacts this reader accepts: 1.0.0 (the first with 5-year compatibility) up
// to the newest it knows (the vhlo dialect of StableHLO 1.13.8). A newer artifact is refused with both
// versions named, never misread.
constexpr int kBytecodeOldestVersion[3] = {1, 0, 0};
constexpr int kBytecodeNewestVersion[3] = {1, 13, 8};

// Whether `data` starts with the MLIR bytecode magic "ML\xefR".
bool IsBytecode(std::string_view data);

// Reads one StableHLO portable artifact into `out` (which is replaced). `filename` prefixes errors.
// INVALID_ARGUMENT with the byte offset for malformed input, an unsupported version or an unknown op.
Status ParseBytecode(std::string_view data, std::string_view filename, Module* out);

// Writing an artifact: the target StableHLO version (kBytecodeOldestVersion to kBytecodeNewestVersion) picks
// each op's vhlo version and names the producer "StableHLO_v<target>"; locations are `location_file`:line:col
// of each op's Location (unknown where the line is 0).
struct BytecodeWriteOptions {
  int target[3] = {kBytecodeNewestVersion[0], kBytecodeNewestVersion[1], kBytecodeNewestVersion[2]};
  std::string location_file;
};

// Parses "1.9.0" into `target` (INVALID_ARGUMENT naming the versions accepted otherwise).
Status ParseBytecodeTarget(std::string_view version, int (&target)[3]);

// Writes `m` as a StableHLO portable artifact (MLIR bytecode version 6 of the vhlo dialect, as
// `stablehlo-translate --serialize --target=<target>` writes it) into `out`: what ParseBytecode reads back
// into the same IR. Refuses with INVALID_ARGUMENT, naming the op or function and what is missing, what vhlo
// cannot hold at the target: ops of other dialects (chlo, sdy, ...), ops skipped by the parser, an op
// attribute with no vhlo form or absent without a default, an attribute of a newer op version than the
// target has (unless it has its default value), multi-block regions (successors), types without a vhlo
// form (tensor encodings, unranked tensors, index tensors).
Status WriteBytecode(const Module& m, const BytecodeWriteOptions& options, std::string* out);

}  // namespace neuronmem::stablehlo
