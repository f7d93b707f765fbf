// Functions of a module by name, in O(1): Module::FindFunction searches the list, so a pass that looks up the
// callee of each of n calls to n distinct functions costs n^2 with it (issue 23, class 7: 40,000 calls took a
// minute to derive a manifest for). A pass that resolves calls builds one index and looks up through it.
#pragma once

#include <string_view>
#include <unordered_map>

#include "stablehlo/ir.h"

namespace neuronmem::stablehlo {

class FunctionIndex {
 public:
  explicit FunctionIndex(const Module& module) : module_(&module) {}
  // The function `name` (the first of that name, as Module::FindFunction), or nullptr. Builds the index on
  // first use (most modules are never asked).
  const Function* Find(std::string_view name) const {
    if (by_name_.empty() && !module_->functions.empty()) {
      by_name_.reserve(module_->functions.size());
      for (const Function& f : module_->functions) by_name_.emplace(f.name, &f);  // emplace keeps the first
    }
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

 private:
  const Module* module_;
  mutable std::unordered_map<std::string_view, const Function*> by_name_;
};

}  // namespace neuronmem::stablehlo
