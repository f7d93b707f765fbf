// Programs of a shape-polymorphic entry, one per argument-shape tuple, in a bounded cache (specialize.h).
#include "interpreter/specialize.h"

#include <utility>

#include "interpreter/compiler.h"
#include "stablehlo/function_index.h"

namespace neuronmem::interp {

Specializations::Specializations(const stablehlo::Module& module, CompileOptions options, size_t capacity)
    : module_(module), options_(std::move(options)), capacity_(capacity ? capacity : kDefaultCapacity) {}

bool Specializations::IsPolymorphic(const stablehlo::Module& module, const std::string& entry) {
  const stablehlo::FunctionIndex functions(module);
  const stablehlo::Function* f = functions.Find(entry);
  if (!f) return false;
  for (const stablehlo::Argument& a : f->args) {
    std::vector<const Type*> types;
    LeafTypes(a.type, &types);
    for (const Type* t : types)
      if (HasDynamicDims(*t)) return true;
  }
  return false;
}

Status Specializations::Get(const std::vector<std::vector<int64_t>>& arg_dims, std::shared_ptr<const Program>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->dims != arg_dims) continue;
    cache_.splice(cache_.begin(), cache_, it);  // most recently used
    *out = cache_.front().program;
    return Ok();
  }
  CompileOptions o = options_;
  o.param_dims = arg_dims;
  // A parameter given rank 0 keeps its declared type (ParamRefinement: empty dims), so a rank-0 argument for a
  // parameter with `?` dims would go unnoticed there: it is refused here.
  const stablehlo::FunctionIndex functions(module_);
  if (const stablehlo::Function* f = functions.Find(o.entry)) {
    size_t p = 0;
    for (const stablehlo::Argument& a : f->args) {
      std::vector<const Type*> types;
      LeafTypes(a.type, &types);
      for (const Type* t : types) {
        if (p < arg_dims.size() && arg_dims[p].empty() && HasDynamicDims(*t))
          return InvalidArgument("%s:%u:%u: function @%s: argument %zu (%%%.*s) of rank 0 does not fit its type %s",
                                 o.filename.c_str(), a.loc.line, a.loc.column, o.entry.c_str(), p,
                                 static_cast<int>(a.name.size()), a.name.data(), TypeToString(*t).c_str());
        ++p;
      }
    }
    if (p != arg_dims.size())
      return InvalidArgument("%s:%u:%u: function @%s takes %zu parameters, not %zu", o.filename.c_str(), f->loc.line,
                             f->loc.column, o.entry.c_str(), p, arg_dims.size());
  }
  std::unique_ptr<Program> program;
  NEURONMEM_RETURN_IF_ERROR(Compile(module_, o, &program));
  ++compiled_;
  cache_.push_front(Entry{arg_dims, std::shared_ptr<const Program>(std::move(program))});
  while (cache_.size() > capacity_) cache_.pop_back();  // a program in use lives on in its holders
  *out = cache_.front().program;
  return Ok();
}

uint64_t Specializations::num_compiled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compiled_;
}

size_t Specializations::num_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

}  // namespace neuronmem::interp
