// Regions called on scalars: the bodies of reduce, reduce_window, scatter, select_and_scatter, sort and map
// take 0-d tensors and return 0-d tensors. A ScalarRegion compiles such a region once and calls it per
// element; a body that is one binary element-wise op on its two arguments (the pretty form's `applies
// stablehlo.add` is such a region in the IR) runs as a direct function call instead.
#pragma once

#include <string_view>
#include <vector>

#include "interpreter/elementwise.h"
#include "interpreter/kernel.h"
#include "interpreter/quant.h"

namespace neuronmem::interp {

// The type of a 0-d region argument or result: an element type, quantized (storage type + parameters) when
// `quant` is set. Quantized bodies run their ops as the element-wise family does (dequantize, compute,
// quantize), so a reduction over quantized values requantizes after every step, as the spec's body does.
struct ScalarType {
  ElementType type = ElementType::kInvalid;
  const stablehlo::QuantType* quant = nullptr;
  ScalarType(ElementType t, const stablehlo::QuantType* q = nullptr) : type(t), quant(q) {}  // NOLINT: implicit
  static ScalarType Of(const Slot& s) { return ScalarType(s.type, s.quant); }
  bool operator==(const ScalarType& o) const { return type == o.type && SameQuant(quant, o.quant); }
  bool operator!=(const ScalarType& o) const { return !(*this == o); }
};
std::string ScalarTypeName(const ScalarType& t);
// The spec's is_promotable(x, y): y holds every value of x (same class, at least as wide; quantized types
// with the same expressed type and parameters and a promotable storage type).
bool IsPromotable(const ScalarType& x, const ScalarType& y);

class ScalarRegion {
 public:
  // Compiles region `index` of the current op. Its block takes arg_types.size() 0-d arguments of those
  // element types and returns result_types.size() 0-d values of those types (INVALID_ARGUMENT otherwise).
  // `order[c]` is the block argument that canonical argument c binds to (empty: the identity).
  Status Compile(CompileCtx& cx, size_t index, const std::vector<ScalarType>& arg_types,
                 const std::vector<ScalarType>& result_types, std::vector<size_t> order = {});
  // Calls the region with one pointer per canonical argument; the results stay valid until the next call.
  Status Call(Frame& f, const char* const* args) const {
    if (fast_) {
      const char* a = args[swap_ ? 1 : 0];
      const char* b = args[swap_ ? 0 : 1];
      fast_(a, b, f.slots[fast_out_]);
      return Status();
    }
    for (size_t i = 0; i < arg_slots_.size(); ++i) f.slots[arg_slots_[i]] = const_cast<char*>(args[i]);
    return RunBody(*body_, f);
  }
  // A body that is one binary element-wise op on stored values runs as this function (nullptr otherwise, and
  // for a quantized body): body(a, b) is direct()(a, b, out), or direct()(b, a, out) when direct_swapped().
  ScalarBinaryFn direct() const { return fast_; }
  bool direct_swapped() const { return swap_; }
  // That op folding a run of elements into an accumulator (FindScalarFns), or nullptr.
  ScalarFoldFn direct_fold() const { return fold_; }
  const char* Result(Frame& f, size_t i) const { return fast_ ? f.slots[fast_out_] : f.slots[body_->result_slots[i]]; }
  size_t num_results() const { return num_results_; }

  // Copies the results of the last call into dst[k] (esize[k] bytes each). Several results go through
  // `stage` first (AddStage), since a result may be an argument that the copies overwrite.
  void StoreResults(Frame& f, char* const* dst, const size_t* esize, uint32_t stage) const {
    if (num_results_ == 1) {
      std::memmove(dst[0], Result(f, 0), esize[0]);
      return;
    }
    char* s = f.slots[stage];
    for (size_t k = 0; k < num_results_; ++k) std::memcpy(s + 16 * k, Result(f, k), esize[k]);
    for (size_t k = 0; k < num_results_; ++k) std::memcpy(dst[k], s + 16 * k, esize[k]);
  }
  // The scratch slot StoreResults needs for n results (0, unused, for one).
  static uint32_t AddStage(CompileCtx& cx, size_t n) {
    return n > 1 ? cx.AddScratch(ElementType::kU8, {static_cast<int64_t>(16 * n)}) : 0;
  }

 private:
  const Body* body_ = nullptr;
  std::vector<uint32_t> arg_slots_;  // canonical order
  ScalarBinaryFn fast_ = nullptr;
  ScalarFoldFn fold_ = nullptr;
  bool swap_ = false;
  uint32_t fast_out_ = 0;
  size_t num_results_ = 0;
};

// The inverse: block listing (a0, a1, ..., b0, b1, ...) where canonical is pairs (a0, b0, a1, b1, ...).
std::vector<size_t> UnpairOrder(size_t n);

}  // namespace neuronmem::interp
