// stablehlo.fft on dense row-major tensors: FFT, IFFT, RFFT, IRFFT over the trailing size(fft_length) dims
// (1 to 3), every leading dim a batch.
//
// Semantics (StableHLO spec, "fft"; XLA's FFT):
//   FFT   complex -> complex, result[k] = sum_n x[n] exp(-2 pi i n k / L) along each transformed dim.
//   IFFT  complex -> complex, the inverse: exp(+2 pi i n k / L) and a factor 1 / L per dim.
//   RFFT  f32 -> complex64, f64 -> complex128: the FFT of the real input; the last dim keeps its
//         L / 2 + 1 non-redundant coefficients (the rest follow by Hermitian symmetry).
//   IRFFT complex64 -> f32, complex128 -> f64: the inverse of RFFT. The operand's last dim holds L / 2 + 1
//         coefficients; the missing ones are the conjugates of their mirror images, and the imaginary parts of
//         the coefficients at 0 and (for even L) L / 2 do not contribute (the result is real).
// Shapes: the trailing dims of the real tensor (RFFT's operand, IRFFT's result) are fft_length; FFT and IFFT
// keep the operand's dims, whose trailing dims must be fft_length; RFFT's result and IRFFT's operand have
// L / 2 + 1 in the last dim (0 when L = 0).
//
// Numerics: every transform is computed in complex<double> (complex64 inputs are widened, results rounded
// once to the result type) with Eigen's FFT module (unsupported/Eigen/FFT, KISS FFT backend: mixed radix 2, 3,
// 4, 5 and a generic butterfly for small prime factors; Bluestein's chirp-z convolution over power-of-two
// transforms for lengths with a prime factor of 64 or more). docs/linalg.md has the measurements behind the choice.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "linalg/tensor_ref.h"

namespace neuronmem::linalg {

enum class FftType { kFft, kIfft, kRfft, kIrfft };

// "FFT", "IFFT", "RFFT", "IRFFT" (the spec's names); false for anything else.
bool FftTypeFromName(const std::string& name, FftType* type);

// Checks the operand type and dims against fft_type and fft_length, and computes the result type and dims.
// INVALID_ARGUMENT naming the rule when: fft_length has 0 or more than 3 entries, or more than the operand's
// rank; an fft_length entry is negative; the trailing dims do not match (see above); the operand type is not
// complex (FFT, IFFT, IRFFT) or not f32/f64 (RFFT).
Status FftShape(FftType type, ElementType operand_type, Span<int64_t> operand_dims, Span<int64_t> fft_length,
                ElementType* result_type, std::vector<int64_t>* result_dims);

// FftShape, then the result type and dims must be the computed ones.
Status CheckFft(FftType type, Span<int64_t> fft_length, ElementType operand_type, Span<int64_t> operand_dims,
                ElementType result_type, Span<int64_t> result_dims);

// Computes the transform into `result` (CheckFft first; nothing is written on error). Thread-safe.
Status Fft(FftType type, Span<int64_t> fft_length, const TensorRef& operand, const MutableTensorRef& result);

}  // namespace neuronmem::linalg
