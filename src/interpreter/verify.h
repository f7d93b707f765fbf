// The checks every op passes before its compile function runs, and the checks of signatures between
// functions, calls and control flow (issue 23, classes 1 and 3).
//
// VerifyOp: a table keyed by op name gives each registered op its arity (how many operand values and results
// the spec allows) and a shape rule; an op that breaks them fails with INVALID_ARGUMENT "file:line:col:
// 'op': ..." before any kernel code indexes its operands or results. Every op in OpRegistry() has an entry
// (tests/interpreter/verify_test.cc checks it), so a new op cannot skip the table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "interpreter/kernel.h"

namespace neuronmem::interp {

// Checks the op being compiled (cx.op(), its operand and result slots) against its table entry.
// INVALID_ARGUMENT naming what is wrong; an op without an entry is INTERNAL (a registration that forgot it).
Status VerifyOp(const CompileCtx& cx);
// Whether op `name` has an entry in the table.
bool HasVerifierEntry(std::string_view name);

// Compile recursion (issue 23, class 4): functions calling functions and regions inside regions are compiled
// recursively, and run the same way; a chain deeper than this (calls and regions together) fails to compile with
// INVALID_ARGUMENT instead of overflowing the stack at compile or run time. The parser's own limit (256) bounds
// the regions of one function.
constexpr int kMaxCompileNesting = 512;
class NestingGuard {
 public:
  explicit NestingGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~NestingGuard() { --*depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
  bool too_deep() const { return *depth_ > kMaxCompileNesting; }

 private:
  int* depth_;
};

// Signatures (slots against slots: SameValueType, quant.h): whether a value has a type of the IR (a token is
// the empty pred[0] slot), and a slot's type as text for messages ("tensor<4xf32>").
bool SlotHasType(const Slot& value, const stablehlo::Type& declared);
std::string SlotTypeText(const Slot& s);

}  // namespace neuronmem::interp
