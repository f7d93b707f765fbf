// Linear-algebra kernels against the libraries called directly on the same data, in one run:
//   dot_general f32 NxN  vs  OpenBLAS cblas_sgemm (the backend dot_general uses)  vs  Eigen's GEMM.
// Goal: dot_general within 1.2x of the direct library call (docs/performance.md).
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <unsupported/Eigen/FFT>

#include <complex>

#include <random>
#include <vector>

#include "linalg/dot_general.h"
#include "linalg/fft.h"
#include "linalg/gemm.h"
#include "random_floats.h"

namespace {

using neuronmem::ElementType;
namespace la = neuronmem::linalg;

using neuronmem::bench::RandomFloats;

void SetFlops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_DotGeneralF32(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = RandomFloats(n * n, 1), b = RandomFloats(n * n, 2);
  std::vector<float> c(n * n);
  const std::vector<int64_t> dims = {n, n};
  const la::DotDimensionNumbers dn{{}, {}, {1}, {0}};
  for (auto _ : state) {
    neuronmem::Status s = la::DotGeneral({ElementType::kF32, a.data(), dims}, {ElementType::kF32, b.data(), dims}, dn,
                                         {ElementType::kF32, c.data(), dims});
    if (s) state.SkipWithError(s->message.c_str());
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, n);
}

void BM_OpenBlasSgemmDirect(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto sgemm = la::detail::OpenBlasSgemmForBenchmark();
  if (sgemm == nullptr) {
    state.SkipWithError("OpenBLAS (libopenblas0-serial) is not installed");
    return;
  }
  const auto a = RandomFloats(size_t(n) * n, 1), b = RandomFloats(size_t(n) * n, 2);
  std::vector<float> c(size_t(n) * n);
  for (auto _ : state) {
    sgemm(101, 111, 111, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, n);
}

void BM_EigenGemmDirect(benchmark::State& state) {
  const int64_t n = state.range(0);
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto av = RandomFloats(n * n, 1), bv = RandomFloats(n * n, 2);
  const M a = Eigen::Map<const M>(av.data(), n, n), b = Eigen::Map<const M>(bv.data(), n, n);
  M c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state, n);
}

// dot_general with the Eigen backend forced: what the library does without OpenBLAS.
void BM_DotGeneralF32EigenBackend(benchmark::State& state) {
  la::detail::ForceEigenGemm(true);
  BM_DotGeneralF32(state);
  la::detail::ForceEigenGemm(false);
}

// stablehlo.fft (FFT, complex64, 16 rows of length n) against Eigen's FFT called directly on one row of
// complex<double> 16 times: the kernel's overhead is the widening to double and the strided gather.
void BM_FftC64(benchmark::State& state) {
  const int64_t n = state.range(0), rows = 16;
  std::vector<std::complex<float>> in(static_cast<size_t>(rows * n)), out(in.size());
  const auto re = RandomFloats(in.size(), 5);
  for (size_t i = 0; i < in.size(); ++i) in[i] = {re[i], -re[i]};
  const std::vector<int64_t> dims = {rows, n}, len = {n};
  for (auto _ : state) {
    auto s =
        la::Fft(la::FftType::kFft, len, {ElementType::kC64, in.data(), dims}, {ElementType::kC64, out.data(), dims});
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * rows);
}
void BM_EigenFftDirect(benchmark::State& state) {
  const int64_t n = state.range(0), rows = 16;
  std::vector<std::complex<double>> in(static_cast<size_t>(n)), out(in.size());
  const auto re = RandomFloats(in.size(), 5);
  for (size_t i = 0; i < in.size(); ++i) in[i] = {re[i], -re[i]};
  Eigen::FFT<double> fft;
  for (auto _ : state) {
    for (int64_t r = 0; r < rows; ++r) fft.fwd(out.data(), in.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * rows);
}

BENCHMARK(BM_DotGeneralF32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenBlasSgemmDirect)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EigenGemmDirect)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DotGeneralF32EigenBackend)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK(BM_FftC64)->Arg(1024)->Arg(1000)->Arg(1031)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EigenFftDirect)->Arg(1024)->Arg(1000)->Arg(1031)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
