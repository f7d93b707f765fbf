// Linear-algebra kernels against the libraries called directly on the same data, in one run:
//   dot_general f32 [m, k] x [k, n] on each backend  vs  that library's cblas_sgemm (BLIS, OpenBLAS)  vs  Eigen's
//   GEMM; and 2 threads multiplying at once against 1 (BM_DotGeneralF32Concurrent).
// Goals: dot_general within 1.05x-1.2x of the direct library call; 2 cores >= 1.8x one core's throughput on the
// default backend (docs/performance.md).
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <unsupported/Eigen/FFT>

#include <array>
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

using neuronmem::bench::AlignedFloats;
using neuronmem::bench::RandomFloats;

// Arguments of the matrix-product benchmarks: m, k, n (C[m x n] = A[m x k] B[k x n], row-major f32) and the
// backend (la::detail::GemmBackend: 0 BLIS, 1 OpenBLAS, 2 Eigen).
void SetFlops(benchmark::State& state, int64_t m, int64_t k, int64_t n) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

const char* BackendLabel(la::detail::GemmBackend b) {
  switch (b) {
    case la::detail::GemmBackend::kBlis: return "BLIS";
    case la::detail::GemmBackend::kOpenBlas: return "OpenBLAS";
    case la::detail::GemmBackend::kEigen: return "Eigen";
  }
  return "?";
}

// Selects the backend of Arg 3 (thread 0; the other threads wait at the loop's start). False: not installed.
bool UseBackend(benchmark::State& state) {
  const auto b = static_cast<la::detail::GemmBackend>(state.range(3));
  if (state.thread_index() == 0) {
    if (!la::detail::ForceGemmBackend(b)) {
      state.SkipWithError("that BLAS is not installed");
      return false;
    }
    state.SetLabel(BackendLabel(b));
  }
  return true;
}

// dot_general [m, k] x [k, n] through linalg::DotGeneral (what the interpreter's kernel calls), each thread on its
// own operands. With ->Threads(2) and real time, items/s is the throughput of 2 cores multiplying at once.
void BM_DotGeneralF32(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  if (!UseBackend(state)) return;
  // 64-byte-aligned operands, as the interpreter's slots are (BLIS is slower on 16-byte-aligned ones).
  const AlignedFloats a(m * k, 1 + state.thread_index()), b(k * n, 2);
  AlignedFloats c(m * n, 3);
  const std::vector<int64_t> ad = {m, k}, bd = {k, n}, cd = {m, n};
  const la::DotDimensionNumbers dn{{}, {}, {1}, {0}};
  for (auto _ : state) {
    neuronmem::Status s = la::DotGeneral({ElementType::kF32, a.data(), ad}, {ElementType::kF32, b.data(), bd}, dn,
                                         {ElementType::kF32, c.data(), cd});
    if (s) state.SkipWithError(s->message.c_str());
    benchmark::DoNotOptimize(c.data());
  }
  state.SetItemsProcessed(state.iterations());
  SetFlops(state, m, k, n);
}

// The library's own cblas_sgemm on the same data, no dot_general around it.
void BM_LibrarySgemmDirect(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)),
            n = static_cast<int>(state.range(2));
  const auto sgemm = la::detail::LibrarySgemmForBenchmark(static_cast<la::detail::GemmBackend>(state.range(3)));
  if (sgemm == nullptr) {
    state.SkipWithError("that BLAS is not installed");
    return;
  }
  state.SetLabel(BackendLabel(static_cast<la::detail::GemmBackend>(state.range(3))));
  const AlignedFloats a(size_t(m) * k, 1), b(size_t(k) * n, 2);
  AlignedFloats c(size_t(m) * n, 3);
  for (auto _ : state) {
    sgemm(101, 111, 111, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetItemsProcessed(state.iterations());
  SetFlops(state, m, k, n);
}

void BM_EigenGemmDirect(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto av = RandomFloats(m * k, 1), bv = RandomFloats(k * n, 2);
  const M a = Eigen::Map<const M>(av.data(), m, k), b = Eigen::Map<const M>(bv.data(), k, n);
  M c(m, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  state.SetItemsProcessed(state.iterations());
  SetFlops(state, m, k, n);
}

// The shapes: 256^3, the MLP-like 64 x 1024 x 1024, and the decode step's projections at batch 64 (model 64,
// hidden 128, vocabulary 256: data/decode).
void Shapes(benchmark::internal::Benchmark* b, std::initializer_list<int64_t> backends) {
  for (int64_t backend : backends) {
    for (auto [m, k, n] : {std::array<int64_t, 3>{256, 256, 256},
                           {64, 1024, 1024},
                           {64, 64, 64},
                           {64, 64, 128},
                           {64, 128, 64},
                           {64, 64, 256}})
      b->Args({m, k, n, backend});
  }
}
void AllBackends(benchmark::internal::Benchmark* b) { Shapes(b, {0, 1, 2}); }
void Libraries(benchmark::internal::Benchmark* b) { Shapes(b, {0, 1}); }

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

BENCHMARK(BM_DotGeneralF32)->Apply(AllBackends)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LibrarySgemmDirect)->Apply(Libraries)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_EigenGemmDirect)->Apply([](auto* b) { Shapes(b, {2}); }) -> Unit(benchmark::kMicrosecond);
// 2 threads, each multiplying its own operands at once, against 1 (items/s: products per second, all threads).
BENCHMARK(BM_DotGeneralF32)
    ->Name("BM_DotGeneralF32Concurrent")
    ->Apply(Libraries)
    ->Threads(1)
    ->Threads(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK(BM_FftC64)->Arg(1024)->Arg(1000)->Arg(1031)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EigenFftDirect)->Arg(1024)->Arg(1000)->Arg(1031)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
