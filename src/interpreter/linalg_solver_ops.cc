// fft, triangular_solve and cholesky: attributes decoded here (pretty and generic forms), the arithmetic in
// src/linalg (fft.h, triangular.h).
#include <string>
#include <utility>
#include <vector>

#include "interpreter/kernel.h"
#include "interpreter/quant.h"
#include "linalg/fft.h"
#include "linalg/triangular.h"

namespace neuronmem::interp {
namespace {

// A slot as a linalg view; the kernel keeps its own copy of the dims (slots may move while compiling).
struct View {
  uint32_t slot;
  ElementType type;
  std::vector<int64_t> dims;
  linalg::TensorRef In(Frame& f) const { return {type, f.slots[slot], linalg::Span<int64_t>(dims)}; }
  linalg::MutableTensorRef Out(Frame& f) const { return {type, f.slots[slot], linalg::Span<int64_t>(dims)}; }
};

View ViewOf(const CompileCtx& cx, uint32_t slot) { return View{slot, cx.slot(slot).type, cx.slot(slot).dims}; }

// The kernel's status, prefixed with the op's location.
Status Located(const Frame& f, const stablehlo::Operation* op, Status s) {
  if (!s) return s;
  return MakeStatus(s->code,
                    FormatLocation(f.state->filename, *op) + ": '" + std::string(op->name) + "': " + s->message);
}

// A linalg failure at compile time, as the op's error with its location.
Status AtCompile(const CompileCtx& cx, Status s) {
  if (!s) return s;
  return s->code == NEURONMEM_STATUS_UNIMPLEMENTED ? cx.Unsupported("%s", s->message.c_str())
                                                   : cx.Invalid("%s", s->message.c_str());
}

// fft, triangular_solve and cholesky take float and complex tensors (the spec has no quantized form of them).
Status NotQuantized(CompileCtx& cx) {
  for (size_t i = 0; i < cx.num_inputs(); ++i) {
    if (cx.in_slot(i).quant) return cx.Invalid("quantized operands are not allowed");
  }
  if (cx.out_slot(0).quant) return cx.Invalid("quantized results are not allowed");
  return Status();
}

class FftKernel final : public Kernel {
 public:
  FftKernel(linalg::FftType type, std::vector<int64_t> lengths, View in, View out)
      : type_(type), lengths_(std::move(lengths)), in_(std::move(in)), out_(std::move(out)) {}
  Status Run(Frame& f) const override { return Located(f, op, linalg::Fft(type_, lengths_, in_.In(f), out_.Out(f))); }

 private:
  linalg::FftType type_;
  std::vector<int64_t> lengths_;
  View in_, out_;
};

Status CompileFft(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  NEURONMEM_RETURN_IF_ERROR(NotQuantized(cx));
  std::string word;
  if (!cx.EnumWord("fft_type", &word) && !cx.EnumWord("type", &word)) return cx.Invalid("missing fft_type");
  linalg::FftType type;
  if (!linalg::FftTypeFromName(word, &type)) return cx.Invalid("unknown fft_type '%s'", word.c_str());
  std::vector<int64_t> lengths;
  if (!cx.IntList("fft_length", &lengths) && !cx.IntList("length", &lengths)) return cx.Invalid("missing fft_length");
  View in = ViewOf(cx, cx.in(0)), out = ViewOf(cx, cx.out(0));
  NEURONMEM_RETURN_IF_ERROR(AtCompile(cx, linalg::CheckFft(type, lengths, in.type, in.dims, out.type, out.dims)));
  *k = std::make_unique<FftKernel>(type, std::move(lengths), std::move(in), std::move(out));
  return Status();
}

class TriangularSolveKernel final : public Kernel {
 public:
  TriangularSolveKernel(linalg::TriangularSolveParams p, View a, View b, View out)
      : p_(p), a_(std::move(a)), b_(std::move(b)), out_(std::move(out)) {}
  Status Run(Frame& f) const override {
    return Located(f, op, linalg::TriangularSolve(a_.In(f), b_.In(f), p_, out_.Out(f)));
  }

 private:
  linalg::TriangularSolveParams p_;
  View a_, b_, out_;
};

Status CompileTriangularSolve(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 2 || cx.num_outputs() != 1) return cx.Invalid("expected two operands and one result");
  NEURONMEM_RETURN_IF_ERROR(NotQuantized(cx));
  linalg::TriangularSolveParams p;
  if (!cx.Bool("left_side", &p.left_side)) return cx.Invalid("missing left_side");
  if (!cx.Bool("lower", &p.lower)) return cx.Invalid("missing lower");
  if (!cx.Bool("unit_diagonal", &p.unit_diagonal)) return cx.Invalid("missing unit_diagonal");
  std::string word;
  if (!cx.EnumWord("transpose_a", &word)) return cx.Invalid("missing transpose_a");
  if (!linalg::TransposeAFromName(word, &p.transpose_a)) return cx.Invalid("unknown transpose_a '%s'", word.c_str());
  // f8/f6/f4: solved in f32 on exact copies, the result rounded once (CompileOnSlots).
  return CompileOnSlots(
      cx, k, [&p](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t o, std::unique_ptr<Kernel>* kk) {
        View a = ViewOf(c, in[0]), b = ViewOf(c, in[1]), out = ViewOf(c, o);
        NEURONMEM_RETURN_IF_ERROR(
            AtCompile(c, linalg::CheckTriangularSolve(a.type, a.dims, b.type, b.dims, p, out.type, out.dims)));
        *kk = std::make_unique<TriangularSolveKernel>(p, std::move(a), std::move(b), std::move(out));
        return Status();
      });
}

class CholeskyKernel final : public Kernel {
 public:
  CholeskyKernel(bool lower, View a, View out) : lower_(lower), a_(std::move(a)), out_(std::move(out)) {}
  Status Run(Frame& f) const override { return Located(f, op, linalg::Cholesky(a_.In(f), lower_, out_.Out(f))); }

 private:
  bool lower_;
  View a_, out_;
};

Status CompileCholesky(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 1) return cx.Invalid("expected one operand and one result");
  NEURONMEM_RETURN_IF_ERROR(NotQuantized(cx));
  bool lower = false;  // the spec's default
  cx.Bool("lower", &lower);
  return CompileOnSlots(
      cx, k, [lower](CompileCtx& c, const std::vector<uint32_t>& in, uint32_t o, std::unique_ptr<Kernel>* kk) {
        View a = ViewOf(c, in[0]), out = ViewOf(c, o);
        NEURONMEM_RETURN_IF_ERROR(AtCompile(c, linalg::CheckCholesky(a.type, a.dims, out.type, out.dims)));
        *kk = std::make_unique<CholeskyKernel>(lower, std::move(a), std::move(out));
        return Status();
      });
}

}  // namespace

void RegisterLinalgSolverOps(OpTable* r) {
  (*r)["stablehlo.fft"] = CompileFft;
  (*r)["stablehlo.triangular_solve"] = CompileTriangularSolve;
  (*r)["stablehlo.cholesky"] = CompileCholesky;
}

}  // namespace neuronmem::interp
