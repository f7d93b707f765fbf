// Custom calls (through the CustomCallRegistry) and the checks of StableHLO's test suites: the check.*
// custom-call targets (expect_eq, expect_close, expect_almost_eq, eq) and the check dialect's ops
// (expect_eq[_const], expect_almost_eq[_const], expect_close). A failed check fails the run with the
// check's name, its location, the first differing index and both values.
#include <cinttypes>
#include <cstdio>

#include "interpreter/checks.h"
#include "interpreter/program.h"
#include "numerics/float_formats.h"

namespace neuronmem::interp {

bool IsSupportedType(ElementType t) {
  return IsSmallFloat(t) || Dispatch(t, [](auto tag) { return !std::is_void_v<typename decltype(tag)::type>; });
}

namespace {
// The value of element i of a small-float buffer.
double SmallFloatAt(ElementType t, const void* data, int64_t i) {
  return numerics::DecodeFloatToDouble(*numerics::SmallFloatFormat(t), static_cast<const uint8_t*>(data)[i]);
}
}  // namespace

std::string FormatElement(ElementType type, const void* data, int64_t i) {
  char buf[96];
  Dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_void_v<T>) {
      if (IsSmallFloat(type))
        std::snprintf(buf, sizeof buf, "%.9g", SmallFloatAt(type, data, i));
      else
        std::snprintf(buf, sizeof buf, "?");
    } else {
      const T v = static_cast<const T*>(data)[i];
      if constexpr (kIsBool<T>)
        std::snprintf(buf, sizeof buf, "%s", v ? "true" : "false");
      else if constexpr (kIsInt<T> && std::is_signed_v<T>)
        std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(v));
      else if constexpr (kIsInt<T>)
        std::snprintf(buf, sizeof buf, "%" PRIu64, static_cast<uint64_t>(v));
      else if constexpr (kIsComplex<T>)
        std::snprintf(buf, sizeof buf, "(%.17g, %.17g)", static_cast<double>(v.real()), static_cast<double>(v.imag()));
      else if constexpr (std::is_same_v<T, double>)
        std::snprintf(buf, sizeof buf, "%.17g", v);
      else
        std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
    }
  });
  return buf;
}

std::string FormatIndex(const std::vector<int64_t>& dims, int64_t i) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] == 0) break;
    idx[d] = i % dims[d];
    i /= dims[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

namespace {

// ---- Element comparisons -------------------------------------------------------------------------

template <typename F>
bool AlmostEqual(F f, F g, double tol) {
  if (f == g) return true;
  if (std::isnan(f) || std::isnan(g)) return std::isnan(f) && std::isnan(g);
  const bool f_fnz = std::isfinite(f) && f != 0, g_fnz = std::isfinite(g) && g != 0;
  if (!f_fnz || !g_fnz) {
    if (f != 0 && g != 0) return false;
  }
  if (std::signbit(f) != std::signbit(g)) return false;
  return std::fabs(static_cast<double>(f) - static_cast<double>(g)) <= tol;
}

template <typename T>
uint64_t AbsBits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  const uint64_t sign = uint64_t(1) << (8 * sizeof(T) - 1);
  return b & ~sign;
}

// ULP distance as StableHLO's CheckOps.cpp measures it (subnormals count as one step from zero or the
// smallest normal).
template <typename T>
uint64_t UlpDifference(T f, T g) {
  uint64_t z;  // ULP distance from 0 to the largest subnormal
  if constexpr (std::is_same_v<T, double>)
    z = (uint64_t(1) << 52) - 1;
  else if constexpr (std::is_same_v<T, float>)
    z = (uint64_t(1) << 23) - 1;
  else if constexpr (std::is_same_v<T, half>)
    z = (uint64_t(1) << 10) - 1;
  else
    z = (uint64_t(1) << 7) - 1;
  uint64_t a = AbsBits(f), b = AbsBits(g);
  const double fd = ToDouble(f), gd = ToDouble(g);
  if (std::isnan(fd) && std::isnan(gd)) return 0;  // any NaN matches any NaN (payloads are not compared)
  if (std::isfinite(fd) && std::isfinite(gd)) {
    if (z < a)
      a -= z;
    else
      a = (2 * a < z ? 0 : 1);
    if (z < b)
      b -= z;
    else
      b = (2 * b < z ? 0 : 1);
    if (std::signbit(fd) != std::signbit(gd)) {
      if (a > UINT64_MAX - b) return UINT64_MAX;
      return a + b;
    }
  }
  return a > b ? a - b : b - a;
}

enum class Mode { kEq, kAlmost, kClose };

struct CheckSpec {
  Mode mode = Mode::kEq;
  double tolerance = 1e-4;
  uint64_t max_ulp = 3, min_ulp = 0;
};

// Returns the first failing index, or -1. `detail` gets extra text (the ULP difference).
template <typename T>
int64_t FirstMismatch(const T* a, const T* b, int64_t n, const CheckSpec& spec, std::string* detail) {
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if constexpr (kIsBool<T> || kIsInt<T>) {
      ok = a[i] == b[i];
    } else if constexpr (kIsComplex<T>) {
      using R = typename T::value_type;
      if (spec.mode == Mode::kClose) {
        const uint64_t d =
            std::max(UlpDifference<R>(a[i].real(), b[i].real()), UlpDifference<R>(a[i].imag(), b[i].imag()));
        ok = d <= spec.max_ulp && d >= spec.min_ulp;
        if (!ok) *detail = ", ULP difference " + std::to_string(d);
      } else {
        const double tol = spec.mode == Mode::kAlmost ? spec.tolerance : 0.0;
        ok = AlmostEqual<R>(a[i].real(), b[i].real(), tol) && AlmostEqual<R>(a[i].imag(), b[i].imag(), tol);
      }
    } else {
      if (spec.mode == Mode::kClose) {
        const uint64_t d = UlpDifference<T>(a[i], b[i]);
        ok = d <= spec.max_ulp && d >= spec.min_ulp;
        if (!ok) *detail = ", ULP difference " + std::to_string(d);
      } else {
        const double tol = spec.mode == Mode::kAlmost ? spec.tolerance : 0.0;
        ok = AlmostEqual<double>(ToDouble(a[i]), ToDouble(b[i]), tol);
      }
    }
    if (!ok) return i;
  }
  return -1;
}

// Small floats: equal values (NaN equals NaN) in kEq mode, within the tolerance in kAlmost, within
// [min_ulp, max_ulp] steps of the format in kClose (the distance of the encodings in sign-magnitude order).
int64_t FirstSmallFloatMismatch(ElementType t, const uint8_t* a, const uint8_t* b, int64_t n, const CheckSpec& spec,
                                std::string* detail) {
  const numerics::FloatFormat& fmt = *numerics::SmallFloatFormat(t);
  const auto ordered = [&](uint8_t bits) -> int64_t {
    if (!fmt.has_sign) return bits;
    const int64_t mag = bits & ((1 << (fmt.bits - 1)) - 1);
    return (bits >> (fmt.bits - 1)) & 1 ? -mag : mag;
  };
  for (int64_t i = 0; i < n; ++i) {
    const double x = numerics::DecodeFloatToDouble(fmt, a[i]), y = numerics::DecodeFloatToDouble(fmt, b[i]);
    bool ok;
    if (spec.mode == Mode::kClose) {
      const uint64_t d = std::isnan(x) || std::isnan(y)
                             ? (std::isnan(x) && std::isnan(y) ? 0 : UINT64_MAX)
                             : static_cast<uint64_t>(std::llabs(ordered(a[i]) - ordered(b[i])));
      ok = d <= spec.max_ulp && d >= spec.min_ulp;
      if (!ok) *detail = ", ULP difference " + std::to_string(d);
    } else {
      ok = AlmostEqual<double>(x, y, spec.mode == Mode::kAlmost ? spec.tolerance : 0.0);
    }
    if (!ok) return i;
  }
  return -1;
}

Status Compare(const TensorView& actual, const TensorView& expected, const CheckSpec& spec) {
  if (actual.type != expected.type) {
    return InvalidArgument("element types differ: %s (actual) vs %s (expected)",
                           std::string(ElementTypeName(actual.type)).c_str(),
                           std::string(ElementTypeName(expected.type)).c_str());
  }
  const int64_t n = actual.NumElements();
  if (n != expected.NumElements())
    return InvalidArgument("shapes differ: %" PRId64 " vs %" PRId64 " elements", n, expected.NumElements());
  std::string detail;
  const int64_t bad = Dispatch(actual.type, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_void_v<T>) {
      if (IsSmallFloat(actual.type))
        return FirstSmallFloatMismatch(actual.type, static_cast<const uint8_t*>(actual.data),
                                       static_cast<const uint8_t*>(expected.data), n, spec, &detail);
      return 0;
    } else {
      return FirstMismatch(static_cast<const T*>(actual.data), static_cast<const T*>(expected.data), n, spec, &detail);
    }
  });
  if (bad < 0) return Ok();
  const std::vector<int64_t> dims(actual.dims, actual.dims + actual.rank);
  return InvalidArgument("element values don't match at index %s: %s (actual) vs %s (expected)%s",
                         FormatIndex(dims, bad).c_str(), FormatElement(actual.type, actual.data, bad).c_str(),
                         FormatElement(expected.type, expected.data, bad).c_str(), detail.c_str());
}

Status CheckTwo(const CustomCallContext& c, const CheckSpec& spec) {
  if (c.num_operands != 2) return InvalidArgument("expects 2 operands (actual, expected), got %zu", c.num_operands);
  return Compare(c.operands[0], c.operands[1], spec);
}

// ---- custom_call -----------------------------------------------------------------------------------

class CustomCallKernel final : public Kernel {
 public:
  CustomCallKernel(std::string target, const CustomCallFn* fn, std::vector<uint32_t> ins, std::vector<uint32_t> outs,
                   std::vector<Slot> in_slots, std::vector<Slot> out_slots)
      : target_(std::move(target)),
        fn_(fn),
        ins_(std::move(ins)),
        outs_(std::move(outs)),
        in_slots_(std::move(in_slots)),
        out_slots_(std::move(out_slots)) {}
  Status Run(Frame& f) const override {
    TensorView views[16];
    std::vector<TensorView> heap;
    const size_t n = ins_.size() + outs_.size();
    TensorView* v = views;
    if (n > 16) {
      heap.resize(n);
      v = heap.data();
    }
    for (size_t i = 0; i < ins_.size(); ++i) v[i] = View(f.slots[ins_[i]], in_slots_[i]);
    for (size_t i = 0; i < outs_.size(); ++i) v[ins_.size() + i] = View(f.slots[outs_[i]], out_slots_[i]);
    CustomCallContext c;
    c.target = target_;
    c.run_context = f.context;
    c.op = op;
    c.operands = v;
    c.num_operands = ins_.size();
    c.results = v + ins_.size();
    c.num_results = outs_.size();
    Status s = (*fn_)(c);
    if (s) {
      return MakeStatus(s->code, FormatLocation(f.state->filename, *op) + ": '" + std::string(op->name) + "' @" +
                                     target_ + ": " + s->message);
    }
    return Status();
  }

 private:
  static TensorView View(char* p, const Slot& s) {
    TensorView v;
    v.data = p;
    v.type = s.type;
    v.dims = s.dims.data();
    v.rank = s.dims.size();
    return v;
  }
  std::string target_;
  const CustomCallFn* fn_;
  std::vector<uint32_t> ins_, outs_;
  std::vector<Slot> in_slots_, out_slots_;
};

Status CompileCustomCall(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  std::string_view target = cx.op().callee;
  if (target.empty()) {
    const stablehlo::Attribute* a = cx.Attr("call_target_name");
    if (a) target = a->str;
  }
  if (target.empty()) return cx.Invalid("missing call_target_name");
  const CustomCallFn* fn = cx.custom_calls()->Find(target);
  if (!fn && IsShardingAnnotationTarget(target)) return CompileShardingAnnotation(cx, target, k);
  if (!fn && target == "shape_assertion") return CompileShapeAssertion(cx, k);
  if (!fn) return cx.Unsupported("unknown custom call target @%.*s", static_cast<int>(target.size()), target.data());
  *k = MakeCustomCallKernel(cx, std::string(target), fn);
  return Ok();
}

}  // namespace

std::unique_ptr<Kernel> MakeCustomCallKernel(CompileCtx& cx, std::string target, const CustomCallFn* fn) {
  std::vector<uint32_t> ins, outs;
  std::vector<Slot> in_slots, out_slots;
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    ins.push_back(cx.in(i));
    in_slots.push_back(cx.in_slot(i));
  }
  for (size_t i = 0; i < cx.num_outputs(); ++i) {
    outs.push_back(cx.out(i));
    out_slots.push_back(cx.out_slot(i));
  }
  return std::make_unique<CustomCallKernel>(std::move(target), fn, std::move(ins), std::move(outs), std::move(in_slots),
                                            std::move(out_slots));
}

namespace {

// ---- The check dialect -----------------------------------------------------------------------------

class CheckKernel final : public Kernel {
 public:
  CheckKernel(uint32_t a, uint32_t b, Slot sa, CheckSpec spec) : a_(a), b_(b), sa_(std::move(sa)), spec_(spec) {}
  Status Run(Frame& f) const override {
    TensorView x, y;
    x.data = f.slots[a_];
    y.data = f.slots[b_];
    x.type = y.type = sa_.type;
    x.dims = y.dims = sa_.dims.data();
    x.rank = y.rank = sa_.dims.size();
    Status s = Compare(x, y, spec_);
    if (s)
      return MakeStatus(s->code,
                        FormatLocation(f.state->filename, *op) + ": '" + std::string(op->name) + "': " + s->message);
    return Status();
  }

 private:
  uint32_t a_, b_;
  Slot sa_;
  CheckSpec spec_;
};

Status CompileCheckOp(CompileCtx& cx, std::unique_ptr<Kernel>* k, Mode mode, bool is_const) {
  CheckSpec spec;
  spec.mode = mode;
  spec.max_ulp = 1;
  if (const stablehlo::Attribute* t = cx.Attr("tolerance")) {
    if (t->kind == stablehlo::Attribute::Kind::kFloat)
      spec.tolerance = t->f;
    else if (t->kind == stablehlo::Attribute::Kind::kInt)
      spec.tolerance = static_cast<double>(t->i);
  }
  int64_t v;
  if (cx.Int("max_ulp_difference", &v)) spec.max_ulp = static_cast<uint64_t>(v);
  if (cx.Int("min_ulp_difference", &v)) spec.min_ulp = static_cast<uint64_t>(v);
  if (cx.num_inputs() < 1) return cx.Invalid("expected an operand");
  const Slot& a = cx.in_slot(0);
  uint32_t b;
  if (is_const) {
    const stablehlo::Attribute* val = cx.Attr("value");
    if (!val || val->kind != stablehlo::Attribute::Kind::kDense) return cx.Invalid("missing dense 'value'");
    Slot like = a;
    like.quant = nullptr;
    std::vector<char> data(a.bytes);
    const size_t esize = ElementByteSize(a.type);
    if (val->type.element != a.type) return cx.Invalid("the expected value's element type differs from the operand's");
    if (val->splat) {
      if (val->dense.size() < esize) return cx.Invalid("bad splat value");
      for (int64_t i = 0; i < a.count; ++i) std::memcpy(data.data() + i * esize, val->dense.data(), esize);
    } else {
      if (val->dense.size() != a.bytes) return cx.Invalid("the expected value has the wrong size");
      if (a.bytes) std::memcpy(data.data(), val->dense.data(), a.bytes);
    }
    b = cx.AddConstant(like, data.data());
  } else {
    if (cx.num_inputs() != 2) return cx.Invalid("expected two operands");
    if (cx.in_slot(1).type != a.type || cx.in_slot(1).count != a.count) return cx.Invalid("operand types differ");
    b = cx.in(1);
  }
  if (mode == Mode::kClose && !IsFloat(a.type) && !IsComplex(a.type)) spec.mode = Mode::kEq;
  *k = std::make_unique<CheckKernel>(cx.in(0), b, a, spec);
  return Ok();
}

Status CompileExpectEq(CompileCtx& cx, std::unique_ptr<Kernel>* k) { return CompileCheckOp(cx, k, Mode::kEq, false); }
Status CompileExpectEqConst(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  return CompileCheckOp(cx, k, Mode::kEq, true);
}
Status CompileExpectAlmostEq(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  return CompileCheckOp(cx, k, Mode::kAlmost, false);
}
Status CompileExpectAlmostEqConst(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  return CompileCheckOp(cx, k, Mode::kAlmost, true);
}
Status CompileExpectClose(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  return CompileCheckOp(cx, k, Mode::kClose, false);
}

}  // namespace

Status CheckValues(const TensorView& actual, const TensorView& expected, CheckKind kind, double tolerance,
                   uint64_t max_ulp) {
  CheckSpec spec;
  spec.mode = kind == CheckKind::kExact ? Mode::kEq : kind == CheckKind::kAlmost ? Mode::kAlmost : Mode::kClose;
  spec.tolerance = tolerance;
  spec.max_ulp = max_ulp;
  if (spec.mode == Mode::kClose && !IsFloat(actual.type) && !IsComplex(actual.type)) spec.mode = Mode::kEq;
  return Compare(actual, expected, spec);
}

namespace {

// An identity custom call: one operand, one result of the same type and size.
Status CopyOperandToResult(const CustomCallContext& c) {
  if (c.num_operands != 1 || c.num_results != 1 || c.operands[0].type != c.results[0].type ||
      c.operands[0].Bytes() != c.results[0].Bytes())
    return InvalidArgument("@%.*s takes one operand and returns it unchanged", static_cast<int>(c.target.size()),
                           c.target.data());
  if (c.results[0].data != c.operands[0].data)
    std::memmove(c.results[0].data, c.operands[0].data, c.results[0].Bytes());
  return Ok();
}

}  // namespace

const CustomCallRegistry& CustomCallRegistry::BuiltIn() {
  static const CustomCallRegistry* r = [] {
    auto* reg = new CustomCallRegistry();
    reg->Register("check.expect_eq", [](const CustomCallContext& c) {
      CheckSpec s;
      s.mode = Mode::kEq;
      return CheckTwo(c, s);
    });
    reg->Register("check.expect_almost_eq", [](const CustomCallContext& c) {
      CheckSpec s;
      s.mode = Mode::kAlmost;
      s.tolerance = 0.001;
      return CheckTwo(c, s);
    });
    reg->Register("check.expect_close", [](const CustomCallContext& c) {
      CheckSpec s;
      s.mode = (c.num_operands == 2 && (IsFloat(c.operands[0].type) || IsComplex(c.operands[0].type))) ? Mode::kClose
                                                                                                       : Mode::kEq;
      s.max_ulp = 3;
      return CheckTwo(c, s);
    });
    reg->Register("check.eq", [](const CustomCallContext& c) {
      CheckSpec s;
      s.mode = (c.num_operands == 2 && IsInteger(c.operands[1].type)) ? Mode::kEq : Mode::kAlmost;
      s.tolerance = 1e-4;
      Status st = CheckTwo(c, s);
      if (c.num_results == 1 && c.results[0].type == ElementType::kPred) *static_cast<bool*>(c.results[0].data) = !st;
      return st;
    });
    // Placement annotations (JAX's memory kinds, Neuron's memory placement): the value is unchanged; the
    // executor registers its own versions of these targets to move the bytes between the core's memories.
    for (const char* name : {"annotate_device_placement", "MoveToHost", "MoveToDevice", "AwsNeuronMemoryPlacement"})
      reg->Register(name, CopyOperandToResult);
    return reg;
  }();
  return *r;
}

void CustomCallRegistry::Register(std::string name, CustomCallFn fn) {
  for (auto& t : targets_)
    if (t.first == name) {
      t.second = std::move(fn);
      return;
    }
  targets_.emplace_back(std::move(name), std::move(fn));
}

const CustomCallFn* CustomCallRegistry::Find(std::string_view name) const {
  for (const auto& t : targets_)
    if (t.first == name) return &t.second;
  return nullptr;
}

void RegisterCheckOps(OpTable* r) {
  auto& m = *r;
  m["stablehlo.custom_call"] = CompileCustomCall;
  m["check.expect_eq"] = CompileExpectEq;
  m["check.expect_eq_const"] = CompileExpectEqConst;
  m["check.expect_almost_eq"] = CompileExpectAlmostEq;
  m["check.expect_almost_eq_const"] = CompileExpectAlmostEqConst;
  m["check.expect_close"] = CompileExpectClose;
}

}  // namespace neuronmem::interp
