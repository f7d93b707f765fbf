// The op verifier: every registered op's arity and shape rule, checked before its compile function runs.
#include "interpreter/verify.h"

#include <cinttypes>
#include <unordered_map>

#include "interpreter/quant.h"

namespace neuronmem::interp {
namespace {

constexpr uint16_t kAny = UINT16_MAX;  // no upper bound

// How an op's operands and results relate, beyond their counts.
enum class Rule : uint8_t {
  kNone,          // only the counts (the compile function checks the rest)
  kSameShape,     // element-wise: every operand and the result have the result's dims (scalars where allowed)
  kLikeFirst,     // one result with operand 0's element type and dims
  kPairwise,      // as many results as operands, result i with operand i's element type and dims
  kPairwiseDims,  // the same, but a result may have another element type (all_reduce promotes)
  kSameCount,     // as many results as operands (their shapes are the op's own business)
  kReduction,     // inputs then as many inits: 2n operands, n results
  kScatter,       // inputs, indices, as many updates: 2n + 1 operands, n results
};

struct Spec {
  uint16_t min_in, max_in;    // operand values
  uint16_t min_out, max_out;  // results
  Rule rule = Rule::kNone;
  bool tuples = false;     // operands or results may be tuples (they flatten into several slots)
  uint8_t scalar_ok = 0;   // kSameShape: bit i: operand i may be 0-d instead (select's predicate, clamp's bounds)
  bool same_rank = false;  // every result has operand 0's rank (slices, pads, windows, ...)
};

constexpr Spec Fixed(uint16_t in, uint16_t out, Rule rule = Rule::kNone) { return Spec{in, in, out, out, rule}; }
constexpr Spec Unary() { return Fixed(1, 1, Rule::kSameShape); }
constexpr Spec Binary() { return Fixed(2, 1, Rule::kSameShape); }
constexpr Spec Ranged(uint16_t min_in, uint16_t max_in, uint16_t min_out, uint16_t max_out, Rule rule = Rule::kNone) {
  return Spec{min_in, max_in, min_out, max_out, rule};
}
constexpr Spec SameRank(Spec s) {
  s.same_rank = true;
  return s;
}
constexpr Spec AnyTuples() { return Spec{0, kAny, 0, kAny, Rule::kNone, true}; }

struct Group {
  Spec spec;
  std::initializer_list<const char*> names;
};

const std::unordered_map<std::string_view, Spec>& Table() {
  static const auto* table = [] {
    Spec select = Fixed(3, 1, Rule::kSameShape);
    select.scalar_ok = 1;  // the predicate
    Spec clamp = Fixed(3, 1, Rule::kSameShape);
    clamp.scalar_ok = 1 | 4;  // min and max
    Spec call = AnyTuples();
    Spec branches = Spec{1, 1, 0, kAny, Rule::kNone, true};
    Spec loop = Spec{0, kAny, 0, kAny, Rule::kSameCount, true};
    const Group groups[] = {
        // Element-wise, one operand.
        {Unary(),
         {"stablehlo.abs",
          "chlo.conj",
          "chlo.is_inf",
          "chlo.is_neg_inf",
          "chlo.is_pos_inf",
          "stablehlo.negate",
          "stablehlo.sign",
          "stablehlo.not",
          "stablehlo.popcnt",
          "stablehlo.count_leading_zeros",
          "stablehlo.exponential",
          "stablehlo.exponential_minus_one",
          "stablehlo.log",
          "stablehlo.log_plus_one",
          "stablehlo.logistic",
          "stablehlo.sqrt",
          "stablehlo.rsqrt",
          "stablehlo.cbrt",
          "stablehlo.sine",
          "stablehlo.cosine",
          "stablehlo.tan",
          "stablehlo.tanh",
          "stablehlo.floor",
          "stablehlo.ceil",
          "stablehlo.round_nearest_afz",
          "stablehlo.round_nearest_even",
          "stablehlo.is_finite",
          "stablehlo.real",
          "stablehlo.imag",
          "stablehlo.convert",
          "stablehlo.reduce_precision",
          "stablehlo.uniform_quantize",
          "stablehlo.uniform_dequantize",
          "chlo.lgamma",
          "chlo.digamma",
          "chlo.erf",
          "chlo.erfc",
          "chlo.erf_inv",
          "chlo.bessel_i1e",
          "chlo.cosh",
          "chlo.sinh",
          "chlo.acos",
          "chlo.asin",
          "chlo.acosh",
          "chlo.asinh",
          "chlo.atan",
          "chlo.atanh",
          "chlo.tan"}},
        // Element-wise, two operands.
        {Binary(),
         {"stablehlo.complex",
          "stablehlo.add",
          "stablehlo.subtract",
          "stablehlo.multiply",
          "stablehlo.divide",
          "stablehlo.remainder",
          "stablehlo.power",
          "stablehlo.maximum",
          "stablehlo.minimum",
          "stablehlo.and",
          "stablehlo.or",
          "stablehlo.xor",
          "stablehlo.shift_left",
          "stablehlo.shift_right_logical",
          "stablehlo.shift_right_arithmetic",
          "stablehlo.atan2",
          "stablehlo.compare",
          "chlo.zeta",
          "chlo.polygamma",
          "chlo.next_after",
          "chlo.mulhi"}},
        {select, {"stablehlo.select"}},
        {clamp, {"stablehlo.clamp"}},
        {Fixed(1, 1), {"stablehlo.bitcast_convert"}},
        // Data movement.
        {Fixed(0, 1),
         {"stablehlo.constant", "stablehlo.iota", "stablehlo.replica_id", "stablehlo.partition_id",
          "stablehlo.create_token"}},
        {Fixed(1, 1),
         {"stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.dynamic_iota", "stablehlo.get_dimension_size"}},
        {SameRank(Fixed(1, 1)), {"stablehlo.transpose", "stablehlo.slice", "stablehlo.fft"}},
        {Fixed(1, 1, Rule::kLikeFirst), {"stablehlo.reverse", "stablehlo.cholesky"}},
        {SameRank(Ranged(1, kAny, 1, 1)), {"stablehlo.concatenate", "stablehlo.dynamic_slice"}},
        {Ranged(2, kAny, 1, 1, Rule::kLikeFirst), {"stablehlo.dynamic_update_slice"}},
        {Fixed(2, 1),
         {"stablehlo.dynamic_broadcast_in_dim", "stablehlo.dynamic_reshape", "stablehlo.gather",
          "stablehlo.dot_general", "stablehlo.dot"}},
        {SameRank(Fixed(2, 1)), {"stablehlo.pad", "stablehlo.convolution", "stablehlo.triangular_solve"}},
        {Fixed(3, 1), {"stablehlo.dynamic_gather"}},
        {SameRank(Fixed(3, 1)), {"stablehlo.dynamic_conv", "stablehlo.select_and_scatter"}},
        {SameRank(Fixed(4, 1)), {"stablehlo.real_dynamic_slice"}},
        {SameRank(Fixed(5, 1)), {"stablehlo.dynamic_pad"}},
        // Reductions, sorting, indexing.
        {Ranged(2, kAny, 1, kAny, Rule::kReduction), {"stablehlo.reduce"}},
        {SameRank(Ranged(2, kAny, 1, kAny, Rule::kReduction)), {"stablehlo.reduce_window"}},
        {Ranged(3, kAny, 1, kAny, Rule::kScatter), {"stablehlo.scatter"}},
        {Ranged(1, kAny, 1, kAny, Rule::kPairwise), {"stablehlo.sort"}},
        {Ranged(1, kAny, 1, 1), {"stablehlo.map"}},
        {Fixed(1, 2), {"chlo.top_k", "stablehlo.rng_bit_generator"}},
        // Normalization and grouped products: their compile functions check shapes and feature_index.
        {Fixed(5, 1, Rule::kLikeFirst), {"stablehlo.batch_norm_inference"}},
        {Fixed(3, 3), {"stablehlo.batch_norm_training"}},
        {Fixed(5, 3), {"stablehlo.batch_norm_grad"}},
        {Fixed(3, 1), {"chlo.ragged_dot"}},
        // Control flow and calls.
        {call,
         {"func.call", "call", "stablehlo.composite", "sdy.manual_computation", "sdy.named_computation",
          "interpreter.run_parallel"}},
        {branches, {"stablehlo.if", "stablehlo.case"}},
        {loop, {"stablehlo.while"}},
        {Ranged(1, kAny, 1, kAny, Rule::kSameCount), {"chlo.scan"}},
        {Fixed(1, 1, Rule::kPairwise),
         {"sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier", "interpreter.probe"}},
        {Ranged(0, kAny, 1, 1), {"stablehlo.after_all"}},
        // Collectives and communication.
        {Ranged(1, kAny, 1, kAny, Rule::kPairwiseDims), {"stablehlo.all_reduce"}},
        {Ranged(1, kAny, 1, kAny, Rule::kSameCount),
         {"stablehlo.all_gather", "stablehlo.reduce_scatter", "stablehlo.all_to_all"}},
        {Fixed(1, 1, Rule::kLikeFirst), {"stablehlo.collective_permute"}},
        // n values (n results), and a dynamic root when has_dynamic_root: the compile function pairs them.
        {Ranged(1, kAny, 1, kAny), {"stablehlo.collective_broadcast", "stablehlo.collective_reduce"}},
        {Ranged(1, kAny, 1, 1), {"stablehlo.send", "stablehlo.outfeed"}},
        {Ranged(1, 1, 1, kAny), {"stablehlo.recv", "stablehlo.infeed"}},
        // Custom calls and the test checks.
        {AnyTuples(), {"stablehlo.custom_call"}},
        {Fixed(2, 0), {"check.expect_eq", "check.expect_almost_eq", "check.expect_close"}},
        {Fixed(1, 0), {"check.expect_eq_const", "check.expect_almost_eq_const"}},
        {Ranged(1, kAny, 0, 0), {"check.expect_serialized_eq"}},
    };
    auto* t = new std::unordered_map<std::string_view, Spec>();
    for (const Group& g : groups)
      for (const char* name : g.names) t->emplace(name, g.spec);
    return t;
  }();
  return *table;
}

std::string Count(size_t min, size_t max, const char* what) {
  char buf[96];
  if (min == max)
    std::snprintf(buf, sizeof buf, "%zu %s", min, what);
  else if (max == kAny)
    std::snprintf(buf, sizeof buf, "at least %zu %s", min, what);
  else
    std::snprintf(buf, sizeof buf, "%zu to %zu %s", min, max, what);
  return buf;
}

}  // namespace

bool HasVerifierEntry(std::string_view name) { return Table().count(name) != 0; }

std::string SlotTypeText(const Slot& s) {
  std::string t = "tensor<";
  for (int64_t d : s.dims) t += std::to_string(d) + "x";
  t += s.quant ? "!quant" : std::string(ElementTypeName(s.type));
  return t + ">";
}

bool SlotHasType(const Slot& value, const stablehlo::Type& declared) {
  using Kind = stablehlo::Type::Kind;
  if (declared.kind == Kind::kToken) return value.type == ElementType::kPred && value.dims == std::vector<int64_t>{0};
  if (declared.kind != Kind::kTensor && declared.kind != Kind::kScalar) return false;
  if (value.type != declared.element || value.dims.size() != declared.dims.size() ||
      !SameQuant(value.quant, declared.quant))
    return false;
  for (size_t i = 0; i < value.dims.size(); ++i)  // a declared `?` takes the dim compile inferred
    if (declared.dims[i] >= 0 && declared.dims[i] != value.dims[i]) return false;
  return true;
}

Status VerifyOp(const CompileCtx& cx) {
  const stablehlo::Operation& op = cx.op();
  const auto it = Table().find(op.name);
  if (it == Table().end()) {
    return Internal("%s: '%.*s': the op has no entry in the verifier's table (src/interpreter/verify.cc)",
                    FormatLocation(cx.state()->filename, op).c_str(), static_cast<int>(op.name.size()), op.name.data());
  }
  const Spec& s = it->second;
  const size_t nin = op.operands.size(), nout = op.num_results;
  if (nin < s.min_in || nin > s.max_in || nout < s.min_out || nout > s.max_out) {
    return cx.Invalid("takes %s and %s; it has %zu operands and %zu results",
                      Count(s.min_in, s.max_in, "operands").c_str(), Count(s.min_out, s.max_out, "results").c_str(),
                      nin, nout);
  }
  if (!s.tuples && (cx.num_inputs() != nin || cx.num_outputs() != nout))
    return cx.Invalid("tuple operands or results are not allowed");
  if (s.same_rank) {
    for (size_t i = 0; i < nout; ++i) {
      if (cx.out_slot(i).dims.size() != cx.in_slot(0).dims.size())
        return cx.Invalid("result %zu is %s; it must have operand 0's rank %zu", i,
                          SlotTypeText(cx.out_slot(i)).c_str(), cx.in_slot(0).dims.size());
    }
  }
  switch (s.rule) {
    case Rule::kNone: break;
    case Rule::kSameShape: {
      const std::vector<int64_t>& dims = cx.out_slot(0).dims;
      for (size_t i = 0; i < nin; ++i) {
        const Slot& in = cx.in_slot(i);
        if (in.dims == dims || ((s.scalar_ok >> i) & 1u && in.dims.empty())) continue;
        return cx.Invalid("operand %zu is %s; the result is %s (element-wise: the same shape)", i,
                          SlotTypeText(in).c_str(), SlotTypeText(cx.out_slot(0)).c_str());
      }
      break;
    }
    case Rule::kLikeFirst:
      if (!SameValueType(cx.in_slot(0), cx.out_slot(0)))
        return cx.Invalid("the result is %s; it must have operand 0's type %s", SlotTypeText(cx.out_slot(0)).c_str(),
                          SlotTypeText(cx.in_slot(0)).c_str());
      break;
    case Rule::kPairwise:
    case Rule::kPairwiseDims:
      if (nin != nout) return cx.Invalid("%zu operands but %zu results (one result per operand)", nin, nout);
      for (size_t i = 0; i < nin; ++i) {
        if ((s.rule == Rule::kPairwise && cx.in_slot(i).type != cx.out_slot(i).type) ||
            cx.in_slot(i).dims != cx.out_slot(i).dims)
          return cx.Invalid("result %zu is %s; it must have operand %zu's type %s", i,
                            SlotTypeText(cx.out_slot(i)).c_str(), i, SlotTypeText(cx.in_slot(i)).c_str());
      }
      break;
    case Rule::kSameCount:
      if (nin != nout || cx.num_inputs() != cx.num_outputs())
        return cx.Invalid("%zu operands but %zu results (one result per operand)", nin, nout);
      break;
    case Rule::kReduction:
      if (nin != 2 * nout)
        return cx.Invalid("%zu operands for %zu results: expected inputs and as many inits", nin, nout);
      break;
    case Rule::kScatter:
      if (nin != 2 * nout + 1)
        return cx.Invalid("%zu operands for %zu results: expected inputs, indices and as many updates", nin, nout);
      break;
  }
  return Ok();
}

}  // namespace neuronmem::interp
