// The vhlo dialect's tables (bytecode_vhlo.h).
#include "stablehlo/bytecode_vhlo.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace neuronmem::stablehlo::bytecode {

namespace {

constexpr VhloOp kVhloOps[] = {
#include "stablehlo/bytecode_vhlo_ops.inc"
};

}  // namespace

Span<VhloOp> VhloOps() { return Span<VhloOp>(kVhloOps, std::size(kVhloOps)); }

const VhloOp* FindVhloOp(std::string_view name) {
  const VhloOp* b = std::begin(kVhloOps);
  const VhloOp* e = std::end(kVhloOps);
  const VhloOp* it = std::lower_bound(b, e, name, [](const VhloOp& op, std::string_view n) { return op.name < n; });
  return it != e && it->name == name ? it : nullptr;
}

ElementType VhloElement(uint64_t code, std::string_view* other_name) {
  switch (code) {
    case 0: return ElementType::kPred;
    case 2: return ElementType::kBF16;
    case 3: return ElementType::kF16;
    case 4: return ElementType::kF32;
    case 5: return ElementType::kF64;
    case 6: return ElementType::kF8E4M3FN;
    case 7: return ElementType::kF8E5M2;
    case 9: *other_name = "index"; return ElementType::kOther;
    case 10: return ElementType::kS4;
    case 11: return ElementType::kS8;
    case 12: return ElementType::kS16;
    case 13: return ElementType::kS32;
    case 14: return ElementType::kS64;
    case 15: return ElementType::kU4;
    case 16: return ElementType::kU8;
    case 17: return ElementType::kU16;
    case 18: return ElementType::kU32;
    case 19: return ElementType::kU64;
    case 26: *other_name = "!shape.witness"; return ElementType::kOther;
    case 27: return ElementType::kF8E4M3FNUZ;
    case 28: return ElementType::kF8E5M2FNUZ;
    case 29: return ElementType::kF8E4M3B11FNUZ;
    case 31: return ElementType::kS2;
    case 32: return ElementType::kU2;
    case 33: *other_name = "none"; return ElementType::kOther;
    case 34: *other_name = "tf32"; return ElementType::kOther;
    case 35: return ElementType::kF8E4M3;
    case 36: return ElementType::kF8E3M4;
    case 37: return ElementType::kF4E2M1FN;
    case 38: return ElementType::kF6E2M3FN;
    case 39: return ElementType::kF6E3M2FN;
    case 40: return ElementType::kF8E8M0FNU;
    default: return ElementType::kInvalid;
  }
}

const std::vector<VhloEnum> kVhloEnums = {
    {3, "comparison_direction", {"EQ", "NE", "GE", "GT", "LE", "LT"}},
    {4, "comparison_type", {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"}},
    {7, "fft_type", {"FFT", "IFFT", "RFFT", "IRFFT"}},
    {11, "precision", {"DEFAULT", "HIGH", "HIGHEST"}},
    {12, "rng_algorithm", {"DEFAULT", "THREE_FRY", "PHILOX"}},
    {13, "rng_distribution", {"", "UNIFORM", "NORMAL"}},
    {16, "transpose", {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}},
    {19, "result_accuracy_mode", {"DEFAULT", "HIGHEST", "TOLERANCE"}},
};

double HalfToDouble(uint16_t h) {
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(mant + 1024, exp - 25);
}

const std::vector<Group> kGroups = {
    {"stablehlo.scatter",
     "scatter_dimension_numbers",
     "scatter",
     {"update_window_dims", "inserted_window_dims", "input_batching_dims", "scatter_indices_batching_dims",
      "scatter_dims_to_operand_dims", "index_vector_dim"}},
    {"stablehlo.gather",
     "dimension_numbers",
     "gather",
     {"offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims", "start_index_map",
      "index_vector_dim"}},
    {"stablehlo.dynamic_gather",
     "dimension_numbers",
     "gather",
     {"offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims", "start_index_map",
      "index_vector_dim"}},
    {"stablehlo.dot_general",
     "dot_dimension_numbers",
     "dot",
     {"lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
      "rhs_contracting_dimensions"}},
    {"stablehlo.convolution",
     "dimension_numbers",
     "conv",
     {"input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension",
      "kernel_output_feature_dimension", "kernel_spatial_dimensions", "output_batch_dimension",
      "output_feature_dimension", "output_spatial_dimensions"}},
    {"stablehlo.dynamic_conv",
     "dimension_numbers",
     "conv",
     {"input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension",
      "kernel_output_feature_dimension", "kernel_spatial_dimensions", "output_batch_dimension",
      "output_feature_dimension", "output_spatial_dimensions"}},
};

const VhloOpInfo& InfoOf(const VhloOp& v) {
  static const std::vector<VhloOpInfo> infos = [] {
    std::vector<VhloOpInfo> out;
    for (const VhloOp& op : kVhloOps) {
      VhloOpInfo info;
      std::string_view base = op.name;
      const size_t us = base.rfind("_v");
      if (us != std::string_view::npos) base = base.substr(0, us);
      info.ir_name = base == "func"     ? "func.func"
                     : base == "call"   ? "func.call"
                     : base == "return" ? "stablehlo.return"  // func.return at a function's top level
                                        : "stablehlo." + std::string(base);
      info.is_return = base == "return";
      info.callee_key = base == "call" ? "callee" : base == "custom_call" ? "call_target_name" : "";
      for (size_t g = 0; g < kGroups.size(); ++g) {
        if (info.ir_name == kGroups[g].op) info.group = static_cast<int>(g);
      }
      for (int i = 0; i < op.num_attrs; ++i) info.bool_arrays |= op.attrs[i] == "window_reversal";
      out.push_back(std::move(info));
    }
    return out;
  }();
  return infos[static_cast<size_t>(&v - kVhloOps)];
}

}  // namespace neuronmem::stablehlo::bytecode
