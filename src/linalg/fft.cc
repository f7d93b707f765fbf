// stablehlo.fft with Eigen's FFT module, in complex<double>.
#include "linalg/fft.h"

#include <unsupported/Eigen/FFT>

#include <complex>
#include <string>
#include <vector>

#include "linalg/element_traits.h"
#include "linalg/scalar_io.h"

namespace neuronmem::linalg {
namespace {

using detail::c128;

const char* FftTypeName(FftType t) {
  switch (t) {
    case FftType::kFft: return "FFT";
    case FftType::kIfft: return "IFFT";
    case FftType::kRfft: return "RFFT";
    case FftType::kIrfft: return "IRFFT";
  }
  return "?";
}

// Lengths whose largest prime factor exceeds this go through Bluestein's algorithm: KISS FFT's generic
// butterfly costs O(n * p) for a prime factor p (2.9 ms for n = 1031, docs/linalg.md), Bluestein three
// power-of-two transforms of at least 2n - 1 points.
constexpr int64_t kBluesteinMinPrime = 64;

int64_t LargestPrimeFactor(int64_t n) {
  int64_t largest = 1;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      largest = p;
      n /= p;
    }
  }
  return n > 1 ? n : largest;
}

// One-dimensional transforms of any length: Eigen's FFT (KISS FFT, mixed radix) directly, or Bluestein's
// chirp-z convolution on top of it for lengths with a large prime factor. Keeps its plans; not thread-safe
// (one per call).
class Transformer {
 public:
  // out = DFT(in) (forward, e^{-2 pi i nk/L}) or its inverse with the 1/L factor; in and out hold n points.
  void Run(c128* out, const c128* in, int64_t n, bool inverse) {
    if (LargestPrimeFactor(n) < kBluesteinMinPrime) {
      if (inverse) {
        fft_.inv(out, in, n);
      } else {
        fft_.fwd(out, in, n);
      }
      return;
    }
    Bluestein(out, in, n, inverse);
  }

 private:
  struct Chirp {
    int64_t m = 0;                 // convolution length, a power of two >= 2n - 1
    std::vector<c128> w;           // w[k] = e^{-i pi k^2 / n}
    std::vector<c128> kernel_fft;  // FFT of the conjugate chirp, wrapped to length m
  };

  const Chirp& ChirpFor(int64_t n) {
    if (chirp_.m != 0 && static_cast<int64_t>(chirp_.w.size()) == n) return chirp_;
    Chirp c;
    c.m = 1;
    while (c.m < 2 * n - 1) c.m *= 2;
    c.w.resize(static_cast<size_t>(n));
    const double pi = 3.14159265358979323846;
    for (int64_t k = 0; k < n; ++k) {
      // k^2 mod 2n keeps the angle small and exact (k < 2^31 for any length a buffer can hold).
      const int64_t k2 = (k * k) % (2 * n);
      c.w[k] = std::polar(1.0, -pi * static_cast<double>(k2) / static_cast<double>(n));
    }
    std::vector<c128> kernel(static_cast<size_t>(c.m));
    kernel[0] = std::conj(c.w[0]);
    for (int64_t k = 1; k < n; ++k) kernel[k] = kernel[c.m - k] = std::conj(c.w[k]);
    c.kernel_fft.resize(static_cast<size_t>(c.m));
    fft_.fwd(c.kernel_fft.data(), kernel.data(), c.m);
    chirp_ = std::move(c);
    return chirp_;
  }

  // X[j] = w[j] * sum_k (x[k] w[k]) conj(w[j - k]); the inverse is conj(forward(conj(x))) / n.
  void Bluestein(c128* out, const c128* in, int64_t n, bool inverse) {
    const Chirp& c = ChirpFor(n);
    a_.assign(static_cast<size_t>(c.m), c128());
    for (int64_t k = 0; k < n; ++k) a_[k] = (inverse ? std::conj(in[k]) : in[k]) * c.w[k];
    spectrum_.resize(static_cast<size_t>(c.m));
    fft_.fwd(spectrum_.data(), a_.data(), c.m);
    for (int64_t k = 0; k < c.m; ++k) spectrum_[k] *= c.kernel_fft[k];
    fft_.inv(a_.data(), spectrum_.data(), c.m);
    for (int64_t j = 0; j < n; ++j) {
      const c128 v = a_[j] * c.w[j];
      out[j] = inverse ? std::conj(v) / static_cast<double>(n) : v;
    }
  }

  Eigen::FFT<double> fft_;
  Chirp chirp_;
  std::vector<c128> a_, spectrum_;
};

// 1-D transforms along axis `axis` of a row-major block with dims `dims`, in place. `inverse` scales by 1/L.
void TransformAxis(Transformer* fft, std::vector<c128>* block, const std::vector<int64_t>& dims, size_t axis,
                   bool inverse) {
  const int64_t n = dims[axis];
  if (n <= 1) return;  // a length-1 transform (and its inverse) is the identity
  int64_t inner = 1, outer = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  std::vector<c128> line(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      c128* base = block->data() + o * n * inner + i;
      for (int64_t k = 0; k < n; ++k) line[k] = base[k * inner];
      fft->Run(out.data(), line.data(), n, inverse);
      for (int64_t k = 0; k < n; ++k) base[k * inner] = out[k];
    }
  }
}

template <typename In, typename Out>
void Run(FftType type, const std::vector<int64_t>& lengths, const TensorRef& operand, const MutableTensorRef& result) {
  const In* in = static_cast<const In*>(operand.data);
  Out* out = static_cast<Out*>(result.data);
  const size_t k = lengths.size();
  std::vector<int64_t> in_block(operand.dims.end() - k, operand.dims.end());
  std::vector<int64_t> out_block(result.dims.end() - k, result.dims.end());
  const int64_t in_size = NumElements(Span<int64_t>(in_block));
  const int64_t out_size = NumElements(Span<int64_t>(out_block));
  if (out_size == 0) return;
  int64_t batches = 1;
  for (size_t d = 0; d + k < operand.dims.size(); ++d) batches *= operand.dims[d];
  Transformer fft;
  const int64_t last = lengths.back();
  const int64_t half = out_block.back();  // RFFT: L / 2 + 1
  std::vector<c128> block;
  for (int64_t b = 0; b < batches; ++b) {
    const In* src = in + b * in_size;
    Out* dst = out + b * out_size;
    switch (type) {
      case FftType::kFft:
      case FftType::kIfft: {
        block.resize(static_cast<size_t>(in_size));
        for (int64_t i = 0; i < in_size; ++i) block[i] = detail::ToC128(src[i]);
        for (size_t a = k; a-- > 0;) TransformAxis(&fft, &block, in_block, a, type == FftType::kIfft);
        break;
      }
      case FftType::kRfft: {
        // The last dim first (full complex transform, keep L / 2 + 1), then the others on the half spectrum.
        std::vector<c128> full(static_cast<size_t>(in_size));
        for (int64_t i = 0; i < in_size; ++i) full[i] = detail::ToC128(src[i]);
        TransformAxis(&fft, &full, in_block, k - 1, false);
        block.resize(static_cast<size_t>(out_size));
        const int64_t rows = in_size / last;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < half; ++j) block[r * half + j] = full[r * last + j];
        }
        for (size_t a = k - 1; a-- > 0;) TransformAxis(&fft, &block, out_block, a, false);
        break;
      }
      case FftType::kIrfft: {
        // The leading transformed dims first (on the half spectrum), then the last dim from its Hermitian
        // extension; the real part is the result.
        std::vector<c128> half_block(static_cast<size_t>(in_size));
        for (int64_t i = 0; i < in_size; ++i) half_block[i] = detail::ToC128(src[i]);
        for (size_t a = k - 1; a-- > 0;) TransformAxis(&fft, &half_block, in_block, a, true);
        const int64_t have = in_block.back();
        const int64_t rows = in_size / have;
        block.assign(static_cast<size_t>(out_size), c128());
        for (int64_t r = 0; r < rows; ++r) {
          c128* row = block.data() + r * last;
          const c128* h = half_block.data() + r * have;
          for (int64_t j = 0; j < last; ++j) {
            row[j] = j < have ? h[j] : std::conj(h[last - j]);
          }
          // The imaginary parts at 0 and L / 2 cannot contribute to a real signal.
          row[0] = c128(row[0].real(), 0.0);
          if (last % 2 == 0) row[last / 2] = c128(row[last / 2].real(), 0.0);
        }
        std::vector<int64_t> real_block = out_block;
        TransformAxis(&fft, &block, real_block, k - 1, true);
        break;
      }
    }
    for (int64_t i = 0; i < out_size; ++i) dst[i] = detail::FromC128<Out>(block[i]);
  }
}

}  // namespace

bool FftTypeFromName(const std::string& name, FftType* type) {
  for (FftType t : {FftType::kFft, FftType::kIfft, FftType::kRfft, FftType::kIrfft}) {
    if (name == FftTypeName(t)) {
      *type = t;
      return true;
    }
  }
  return false;
}

Status FftShape(FftType type, ElementType operand_type, Span<int64_t> operand_dims, Span<int64_t> fft_length,
                ElementType* result_type, std::vector<int64_t>* result_dims) {
  const char* name = FftTypeName(type);
  const size_t k = fft_length.size();
  if (k < 1 || k > 3) return InvalidArgument("fft %s: fft_length has %zu entries; 1 to 3 are allowed", name, k);
  if (k > operand_dims.size()) {
    return InvalidArgument("fft %s: fft_length has %zu entries but the operand has rank %zu", name, k,
                           operand_dims.size());
  }
  for (size_t i = 0; i < operand_dims.size(); ++i) {
    if (operand_dims[i] < 0) return InvalidArgument("fft %s: operand dim %zu is negative", name, i);
  }
  for (size_t i = 0; i < k; ++i) {
    if (fft_length[i] < 0) return InvalidArgument("fft %s: fft_length[%zu] is negative", name, i);
  }
  const bool complex_in = operand_type == ElementType::kC64 || operand_type == ElementType::kC128;
  switch (type) {
    case FftType::kFft:
    case FftType::kIfft:
    case FftType::kIrfft:
      if (!complex_in) {
        return InvalidArgument("fft %s: the operand must be complex64 or complex128, not %s", name,
                               std::string(ElementTypeName(operand_type)).c_str());
      }
      break;
    case FftType::kRfft:
      if (operand_type != ElementType::kF32 && operand_type != ElementType::kF64) {
        return InvalidArgument("fft RFFT: the operand must be f32 or f64, not %s",
                               std::string(ElementTypeName(operand_type)).c_str());
      }
      break;
  }
  *result_dims = std::vector<int64_t>(operand_dims.begin(), operand_dims.end());
  const size_t lead = operand_dims.size() - k;
  const int64_t last = fft_length[k - 1];
  const int64_t half = last == 0 ? 0 : last / 2 + 1;
  for (size_t i = 0; i < k; ++i) {
    const bool is_last = i + 1 == k;
    const int64_t want = (type == FftType::kIrfft && is_last) ? half : fft_length[i];
    if (operand_dims[lead + i] != want) {
      return InvalidArgument("fft %s: operand dim %zu is %lld; fft_length requires %lld", name, lead + i,
                             static_cast<long long>(operand_dims[lead + i]), static_cast<long long>(want));
    }
  }
  switch (type) {
    case FftType::kFft:
    case FftType::kIfft: *result_type = operand_type; break;
    case FftType::kRfft:
      *result_type = operand_type == ElementType::kF32 ? ElementType::kC64 : ElementType::kC128;
      result_dims->back() = half;
      break;
    case FftType::kIrfft:
      *result_type = operand_type == ElementType::kC64 ? ElementType::kF32 : ElementType::kF64;
      result_dims->back() = last;
      break;
  }
  return Ok();
}

Status CheckFft(FftType type, Span<int64_t> fft_length, ElementType operand_type, Span<int64_t> operand_dims,
                ElementType result_type, Span<int64_t> result_dims) {
  ElementType want_type;
  std::vector<int64_t> want_dims;
  NEURONMEM_RETURN_IF_ERROR(FftShape(type, operand_type, operand_dims, fft_length, &want_type, &want_dims));
  if (result_type != want_type) {
    return InvalidArgument("fft %s: the result type must be %s, not %s", FftTypeName(type),
                           std::string(ElementTypeName(want_type)).c_str(),
                           std::string(ElementTypeName(result_type)).c_str());
  }
  return CheckResultDims("fft", want_dims, result_dims);
}

Status Fft(FftType type, Span<int64_t> fft_length, const TensorRef& operand, const MutableTensorRef& result) {
  NEURONMEM_RETURN_IF_ERROR(CheckFft(type, fft_length, operand.type, operand.dims, result.type, result.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("fft operand", operand.data, operand.dims));
  NEURONMEM_RETURN_IF_ERROR(CheckTensor("fft result", result.data, result.dims));
  const std::vector<int64_t> lengths(fft_length.begin(), fft_length.end());
  switch (operand.type) {
    case ElementType::kC64:
      if (result.type == ElementType::kF32) {
        Run<detail::c64, float>(type, lengths, operand, result);
      } else {
        Run<detail::c64, detail::c64>(type, lengths, operand, result);
      }
      break;
    case ElementType::kC128:
      if (result.type == ElementType::kF64) {
        Run<detail::c128, double>(type, lengths, operand, result);
      } else {
        Run<detail::c128, detail::c128>(type, lengths, operand, result);
      }
      break;
    case ElementType::kF32: Run<float, detail::c64>(type, lengths, operand, result); break;
    default: Run<double, detail::c128>(type, lengths, operand, result); break;
  }
  return Ok();
}

}  // namespace neuronmem::linalg
