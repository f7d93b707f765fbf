// The CHLO special functions on StableHLO's own test files (../shared/conformance/stablehlo-testdata/*_chlo.mlir):
// every file whose @main applies one CHLO op of src/numerics/special_functions.h to constant inputs (optionally
// broadcast) is parsed with src/stablehlo's parser, evaluated here, and every element is checked as the reference
// interpreter checks it (check.expect_close: at most 3 ulps; check.expect_almost_eq: |a - b| <= 0.001 with equal
// signs; NaN matches NaN). Files that use other ops (igamma, top_k, ...) are the interpreter's business; a file
// named after one of these ops must be runnable here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "numerics/float_formats.h"
#include "numerics/special_functions.h"
#include "stablehlo/parser.h"
#include "ulp_distance.h"

namespace neuronmem::numerics {
namespace {

namespace shlo = neuronmem::stablehlo;
using E = ElementType;

struct Tensor {
  E type = E::kInvalid;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

double Element(const Tensor& t, int64_t i) {
  switch (t.type) {
    case E::kF64: {
      double v;
      std::memcpy(&v, t.bytes.data() + i * 8, 8);
      return v;
    }
    case E::kF32: {
      float v;
      std::memcpy(&v, t.bytes.data() + i * 4, 4);
      return v;
    }
    default: {
      uint16_t b;
      std::memcpy(&b, t.bytes.data() + i * 2, 2);
      return DecodeFloatToDouble(*SmallFloatFormat(t.type), b);
    }
  }
}

bool Close(E type, double actual, double expected, bool ulp_check) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (actual == expected) return true;
  if (ulp_check) {
    return UlpDistance(type, actual, expected) <= 3;
  }
  if (std::isinf(actual) || std::isinf(expected)) return false;
  if (actual != 0 && expected != 0 && std::signbit(actual) != std::signbit(expected)) return false;
  return std::fabs(actual - expected) <= 0.001;
}

struct FileRun {
  const shlo::Module* module = nullptr;
  std::string error;  // why the file cannot be evaluated here (an op this test does not evaluate)
  std::vector<std::string> failures;
  int checked_elements = 0;
  int chlo_ops = 0;
};

bool DenseToTensor(const shlo::Attribute& a, Tensor* t) {
  if (a.kind != shlo::Attribute::Kind::kDense) return false;
  t->type = a.type.element;
  t->dims.assign(a.type.dims.begin(), a.type.dims.end());
  const size_t esize = ElementByteSize(t->type);
  const int64_t n = Count(t->dims);
  t->bytes.resize(static_cast<size_t>(n) * esize);
  if (a.splat || a.dense.size() == esize) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(t->bytes.data() + i * esize, a.dense.data(), esize);
  } else {
    if (a.dense.size() != t->bytes.size()) return false;
    std::memcpy(t->bytes.data(), a.dense.data(), t->bytes.size());
  }
  return true;
}

std::vector<int64_t> IntList(const shlo::Attribute& a) {
  std::vector<int64_t> out;
  if (a.kind == shlo::Attribute::Kind::kArray) {
    for (const auto& e : a.array) out.push_back(e.i);
  } else if (a.kind == shlo::Attribute::Kind::kDense) {
    for (size_t i = 0; i + 8 <= a.dense.size(); i += 8) {
      int64_t v;
      std::memcpy(&v, a.dense.data() + i, 8);
      out.push_back(v);
    }
  }
  return out;
}

Tensor BroadcastInDim(const Tensor& in, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& map) {
  Tensor out{in.type, out_dims, {}};
  const size_t esize = ElementByteSize(in.type);
  const int64_t n = Count(out_dims);
  out.bytes.resize(static_cast<size_t>(n) * esize);
  std::vector<int64_t> idx(out_dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < in.dims.size(); ++d) src = src * in.dims[d] + (in.dims[d] == 1 ? 0 : idx[map[d]]);
    std::memcpy(out.bytes.data() + i * esize, in.bytes.data() + src * esize, esize);
    for (size_t d = out_dims.size(); d-- > 0;) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::string Key(std::string_view name, uint32_t index) { return std::string(name) + "#" + std::to_string(index); }

// Evaluates `fn`; returns its results (empty with run->error set when an op is not one this test evaluates).
std::vector<Tensor> Evaluate(FileRun* run, const shlo::Function& fn, int depth = 0) {
  std::map<std::string, Tensor> env;
  auto get = [&](const shlo::ValueRef& r) -> const Tensor* {
    auto it = env.find(Key(r.name, r.index));
    return it == env.end() ? nullptr : &it->second;
  };
  for (const shlo::Operation& op : fn.body.blocks.at(0).ops) {
    if (!run->error.empty()) return {};
    const std::string where = ":" + std::to_string(op.loc.line) + ":" + std::to_string(op.loc.column);
    std::vector<Tensor> results;
    ChloUnaryOp unary;
    ChloBinaryOp binary;
    if (op.name == "stablehlo.constant") {
      Tensor t;
      const shlo::Attribute* v = shlo::Find(op.attributes, "value");
      if (!v || !DenseToTensor(*v, &t)) {
        run->error = "constant without a dense value" + where;
        return {};
      }
      results.push_back(std::move(t));
    } else if (op.name == "func.call") {
      const shlo::Function* callee = run->module->FindFunction(op.callee);
      if (!callee || depth > 4) {
        run->error = "call of an unknown function" + where;
        return {};
      }
      results = Evaluate(run, *callee, depth + 1);
    } else if (op.name == "stablehlo.broadcast_in_dim") {
      const shlo::Attribute* dims = shlo::Find(op.attributes, "dims");
      if (!dims) dims = shlo::Find(op.attributes, "broadcast_dimensions");
      const Tensor* in = get(op.operands.at(0));
      if (!dims || !in) {
        run->error = "broadcast_in_dim without dims or operand" + where;
        return {};
      }
      const shlo::Type& rt = op.result_types.at(0);
      results.push_back(BroadcastInDim(*in, std::vector<int64_t>(rt.dims.begin(), rt.dims.end()), IntList(*dims)));
    } else if (ChloUnaryOpFromName(op.name, &unary) || ChloBinaryOpFromName(op.name, &binary)) {
      const bool is_unary = ChloUnaryOpFromName(op.name, &unary);
      std::vector<const Tensor*> in;
      for (const auto& r : op.operands) in.push_back(get(r));
      for (const Tensor* t : in) {
        if (!t) {
          run->error = "undefined operand" + where;
          return {};
        }
      }
      Tensor out{in[0]->type, in[0]->dims, std::vector<uint8_t>(in[0]->bytes.size())};
      const int64_t n = Count(out.dims);
      Status s = is_unary ? ApplyChloUnary(unary, out.type, in[0]->bytes.data(), out.bytes.data(), n)
                          : ApplyChloBinary(binary, out.type, in.at(0)->bytes.data(), in.at(1)->bytes.data(),
                                            out.bytes.data(), n);
      if (s) {
        run->failures.push_back(std::string(op.name) + where + ": " + s->message);
        return {};
      }
      ++run->chlo_ops;
      results.push_back(std::move(out));
    } else if (op.name == "stablehlo.custom_call" &&
               (op.callee == "check.expect_close" || op.callee == "check.expect_almost_eq")) {
      const Tensor* actual = get(op.operands.at(0));
      const Tensor* expected = get(op.operands.at(1));
      if (!actual || !expected || actual->type != expected->type || actual->dims != expected->dims) {
        run->error = "check with undefined or mismatched operands" + where;
        return {};
      }
      const bool ulp = op.callee == "check.expect_close";
      int bad = 0;
      for (int64_t i = 0; i < Count(actual->dims); ++i) {
        const double a = Element(*actual, i), e = Element(*expected, i);
        ++run->checked_elements;
        if (!Close(actual->type, a, e, ulp) && bad++ < 5) {
          char msg[200];
          std::snprintf(msg, sizeof msg, "%s%s: element %lld: got %.17g, expected %.17g",
                        std::string(op.callee).c_str(), where.c_str(), static_cast<long long>(i), a, e);
          run->failures.push_back(msg);
        }
      }
      continue;
    } else if (op.name == "func.return") {
      std::vector<Tensor> out;
      for (const auto& r : op.operands) {
        const Tensor* t = get(r);
        if (!t) {
          run->error = "return of an undefined value" + where;
          return {};
        }
        out.push_back(*t);
      }
      return out;
    } else {
      run->error = "op " + std::string(op.name) + where + " is not evaluated by this test";
      return {};
    }
    for (uint32_t i = 0; i < results.size(); ++i) env[Key(op.result_name, i)] = std::move(results[i]);
  }
  return {};
}

// Test files named after the ops of special_functions.h ("lgamma_bfloat16_20_20_chlo.mlir", ...).
bool NamedAfterOurOp(const std::string& file) {
  static const char* const kPrefixes[] = {"lgamma_",  "digamma_",    "zeta_", "polygamma_", "erf_",  "erfc_",
                                          "erf_inv_", "bessel_i1e_", "cosh_", "sinh_",      "acos_", "asin_",
                                          "acosh_",   "asinh_",      "atan_", "atanh_",     "tan_",  "nextafter_"};
  for (const char* p : kPrefixes) {
    if (file.rfind(p, 0) == 0) return true;
  }
  return false;
}

TEST(ChloConformance, EverySingleOpChloFileMatchesTheReference) {
  const char* dir = std::getenv("NEURONMEM_CONFORMANCE_DIR");
  ASSERT_NE(dir, nullptr) << "meson passes NEURONMEM_CONFORMANCE_DIR";
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << "the conformance folder " << dir << " is absent (it is ../shared/conformance/stablehlo-testdata)";
  }
  int files = 0, elements = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 10 || name.compare(name.size() - 10, 10, "_chlo.mlir") != 0) continue;
    std::vector<shlo::Module> modules;
    Status s = shlo::ParseFile(entry.path().string(), &modules);
    ASSERT_FALSE(s) << name << ": " << s->message;
    ASSERT_EQ(modules.size(), 1u) << name;
    const shlo::Function* main = modules[0].FindFunction("main");
    ASSERT_NE(main, nullptr) << name;
    FileRun run;
    run.module = &modules[0];
    Evaluate(&run, *main);
    if (!run.error.empty() || run.chlo_ops == 0) {
      EXPECT_FALSE(NamedAfterOurOp(name)) << name << ": " << (run.error.empty() ? "no CHLO op" : run.error);
      continue;
    }
    ++files;
    elements += run.checked_elements;
    EXPECT_GT(run.checked_elements, 0) << name << ": no check ran";
    for (const std::string& f : run.failures) ADD_FAILURE() << name << ": " << f;
  }
  // 28 such files in the sample (13 ops in two element types, bessel_i1e and erf_inv in one), 20x20 each.
  EXPECT_GE(files, 28);
  EXPECT_GE(elements, 28 * 400);
  std::printf("%d CHLO files, %d elements checked\n", files, elements);
}

}  // namespace
}  // namespace neuronmem::numerics
