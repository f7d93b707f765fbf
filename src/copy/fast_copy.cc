#include "copy/fast_copy.h"

#include <immintrin.h>

#include <cstring>

namespace neuronmem::copy {
namespace {

__attribute__((target("avx512f"))) void StreamAvx512(uint8_t* d, const uint8_t* s, size_t n) {
  // Head: bring the destination to a 64-byte boundary.
  const size_t head = (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63;
  if (head) {
    const size_t h = head < n ? head : n;
    std::memcpy(d, s, h);
    d += h;
    s += h;
    n -= h;
  }
  while (n >= 256) {
    __m512i a = _mm512_loadu_si512(s);
    __m512i b = _mm512_loadu_si512(s + 64);
    __m512i c = _mm512_loadu_si512(s + 128);
    __m512i e = _mm512_loadu_si512(s + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 192), e);
    d += 256;
    s += 256;
    n -= 256;
  }
  while (n >= 64) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d), _mm512_loadu_si512(s));
    d += 64;
    s += 64;
    n -= 64;
  }
  _mm_sfence();
  if (n) std::memcpy(d, s, n);
}

bool DetectAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

}  // namespace

bool HasStreamingCopy() {
  static const bool has = DetectAvx512();
  return has;
}

void StreamingCopy(void* dst, const void* src, size_t n) {
  if (HasStreamingCopy()) {
    StreamAvx512(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n);
  } else {
    std::memcpy(dst, src, n);
  }
}

void FastCopy(void* dst, const void* src, size_t n) {
  if (n < kStreamingThreshold) {
    std::memcpy(dst, src, n);
  } else {
    StreamingCopy(dst, src, n);
  }
}

}  // namespace neuronmem::copy
