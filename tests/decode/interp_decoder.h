// The decode step run on the software NeuronCore's interpreter directly (interp::Compile + Program::Run): the
// reference check of tests/decode and the interpreter-only step of bench/decode. The metadata arguments are
// views of caller memory, read in place; the KV caches live in two buffers used in turn (the step reads one
// and writes its results into the other), which is what donation gives the executor.
#pragma once

#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "decode_model.h"
#include "interpreter/interpreter.h"
#include "stablehlo/parser.h"

namespace neuronmem_decode {

// Results must be 64-byte aligned (interp::ResultAllocator).
template <typename T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <typename U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <typename U>
  bool operator==(const Aligned64<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const Aligned64<U>&) const {
    return false;
  }
};
using AlignedFloats = std::vector<float, Aligned64<float>>;

class InterpDecoder {
 public:
  // Generates, parses and compiles the module for `c`; weights from `seed`. Caches start at zero.
  neuronmem::Status Init(const Config& c, uint64_t seed) {
    c_ = c;
    text_ = GenerateModule(c);
    neuronmem::Status s = neuronmem::stablehlo::ParseModules(text_, "decode_step.mlir", &modules_);
    if (s) return s;
    neuronmem::interp::CompileOptions opts;
    opts.filename = "decode_step.mlir";
    s = neuronmem::interp::Compile(modules_[0], opts, &program_);
    if (s) return s;
    weights_ = MakeWeights(c, seed);
    const std::vector<ArgSpec> specs = Arguments(c);
    dims_.clear();
    for (const ArgSpec& a : specs) dims_.push_back(a.dims);
    const size_t cache_floats = specs[kKCache].bytes() / 4;
    for (auto& pair : caches_)
      for (auto& cache : pair) cache.assign(cache_floats, 0.0f);
    current_ = 0;
    return nullptr;
  }

  // One step: reads `tokens` and the metadata in place, writes the next tokens.
  neuronmem::Status Step(const int32_t* tokens, const int32_t* block_table, const int32_t* seq_lens,
                         const int32_t* positions, const int32_t* slot_mapping, std::vector<int32_t>* next) {
    using neuronmem::ElementType;
    using neuronmem::interp::TensorView;
    std::vector<TensorView> args(dims_.size());
    auto view = [&](int i, const void* p, ElementType t) {
      args[static_cast<size_t>(i)] = {const_cast<void*>(p), t, dims_[static_cast<size_t>(i)].data(),
                                      dims_[static_cast<size_t>(i)].size()};
    };
    view(kTokens, tokens, ElementType::kS32);
    view(kBlockTable, block_table, ElementType::kS32);
    view(kSeqLens, seq_lens, ElementType::kS32);
    view(kPositions, positions, ElementType::kS32);
    view(kSlotMapping, slot_mapping, ElementType::kS32);
    view(kKCache, caches_[current_][0].data(), ElementType::kF32);
    view(kVCache, caches_[current_][1].data(), ElementType::kF32);
    for (size_t i = 0; i < weights_.size(); ++i)
      view(kEmbed + static_cast<int>(i), weights_[i].data(), ElementType::kF32);
    Allocator alloc(this, 1 - current_);
    std::vector<TensorView> results;
    neuronmem::Status s = program_->Run(args.data(), args.size(), &alloc, &results, &workspace_);
    if (s) return s;
    current_ = 1 - current_;
    const int32_t* out = static_cast<const int32_t*>(results[0].data);
    next->assign(out, out + c_.batch);
    return nullptr;
  }

  const AlignedFloats& k_cache() const { return caches_[current_][0]; }
  const AlignedFloats& v_cache() const { return caches_[current_][1]; }
  const std::vector<std::vector<float>>& weights() const { return weights_; }
  const std::string& text() const { return text_; }

 private:
  // Result 0 (the tokens) in a small buffer, results 1 and 2 (the caches) in the buffers not read this step.
  class Allocator : public neuronmem::interp::ResultAllocator {
   public:
    Allocator(InterpDecoder* d, int target) : d_(d), target_(target) {}
    void* Allocate(size_t index, size_t bytes) override {
      if (index == 0) {
        d_->next_.resize((bytes + 3) / 4);
        return d_->next_.data();
      }
      AlignedFloats& cache = d_->caches_[target_][index - 1];
      return bytes == cache.size() * 4 ? cache.data() : nullptr;
    }

   private:
    InterpDecoder* d_;
    int target_;
  };

  Config c_;
  std::string text_;
  std::vector<neuronmem::stablehlo::Module> modules_;
  std::unique_ptr<neuronmem::interp::Program> program_;
  neuronmem::interp::Workspace workspace_;
  std::vector<std::vector<float>> weights_;
  std::vector<std::vector<int64_t>> dims_;
  AlignedFloats caches_[2][2];  // [which][k, v]
  std::vector<int32_t, Aligned64<int32_t>> next_;
  int current_ = 0;
};

}  // namespace neuronmem_decode
