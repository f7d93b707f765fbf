// Shape-polymorphic entries (jax.export with symbolic dimensions: @main over tensor<?x4xf32>, shape_assertion
// custom calls, a call of a private function with the dimension variables as jax.global_constant arguments).
// The module is kept once; each tuple of argument shapes gets its own Program, compiled with the shapes refined
// from the arguments (CompileOptions::param_dims: what StableHLO's refine-shapes pass does), and kept in a cache
// of bounded size (least recently used out first). The module's shape_assertions run with each program: a failing
// one fails that run with its message.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "interpreter/interpreter.h"

namespace neuronmem::interp {

class Specializations {
 public:
  // How many programs the cache keeps unless told otherwise.
  static constexpr size_t kDefaultCapacity = 16;

  // `module` must outlive this (the programs point into it). `options.param_dims` is ignored (each lookup sets
  // it). capacity 0 = kDefaultCapacity.
  Specializations(const stablehlo::Module& module, CompileOptions options, size_t capacity = 0);

  // Whether the entry `entry` of `module` has a parameter with a `?` dim (false when there is no such function).
  static bool IsPolymorphic(const stablehlo::Module& module, const std::string& entry);

  // The program for arguments of these dims (one vector per flattened entry parameter), compiled on first use.
  // INVALID_ARGUMENT when the count, a rank or a static dim does not fit the entry's parameter types (naming
  // the parameter), or a refined shape does not fit an op; UNIMPLEMENTED as Compile. Thread-safe.
  Status Get(const std::vector<std::vector<int64_t>>& arg_dims, std::shared_ptr<const Program>* out);

  // Programs compiled so far (the ones the cache dropped included), and the ones it holds.
  uint64_t num_compiled() const;
  size_t num_cached() const;
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    std::vector<std::vector<int64_t>> dims;
    std::shared_ptr<const Program> program;
  };
  const stablehlo::Module& module_;
  CompileOptions options_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> cache_;  // most recently used first
  uint64_t compiled_ = 0;
};

}  // namespace neuronmem::interp
