// The tile programs of fused element-wise regions (fusion.cc): straight-line f32 code over tiles of a few
// thousand elements, run by one of three builds of fusion_tile.inc (baseline x86-64, AVX2+FMA, AVX-512), chosen
// once by the CPU. Only <cstdint>/<cstddef> here: the AVX builds must not emit inline functions of other
// headers (a shared inline copy compiled for AVX-512 could be the one the linker keeps for every caller).
#pragma once

#include <cstddef>
#include <cstdint>

namespace neuronmem::interp::fusion {

// Tile lengths are multiples of kTileVector elements (a partial last tile runs padded in tile buffers).
constexpr int64_t kTileVector = 16;

// One instruction: dst = op(a, b, c) elementwise over the tile. Predicates are kept as 0.0f / 1.0f.
enum class TileOp : uint8_t {
  kCopy,      // a
  kAdd,       // a + b
  kSub,       // a - b
  kMul,       // a * b
  kDiv,       // a / b
  kMax,       // stablehlo.maximum: NaN wins (a first), max(-0, +0) = +0
  kMin,       // stablehlo.minimum: NaN wins (a first), min(-0, +0) = -0
  kNeg,       // -a
  kAbs,       // |a|
  kExp,       // e^a (polynomial inside [-87, 88]; expf outside, for inf, NaN and subnormal results)
  kSqrt,      // sqrt(a)
  kRsqrt,     // 1 / sqrt(a)
  kTanh,      // tanh(a): an odd polynomial below 0.625, 1 - 2 / (e^2|a| + 1) above (within 2 ulp of tanh)
  kLogistic,  // 1 / (1 + e^-a), as the unfused kernel computes it, with the tile exponential
  kCmpEq,     // a == b ? 1 : 0 (IEEE: NaN compares unordered)
  kCmpNe,     // a != b
  kCmpLt,     // a < b
  kCmpLe,     // a <= b
  kCmpGt,     // a > b
  kCmpGe,     // a >= b
  kSelect,    // a != 0 ? b : c
};

struct TileInstr {
  TileOp op;
  uint16_t dst, a, b, c;  // registers (TileRun's regs)
};

// Runs `n` instructions over tiles of `len` elements (a multiple of kTileVector): regs[r] points at register
// r's `len` floats (any alignment; a destination may be one of its own operands).
using TileRunFn = void (*)(const TileInstr* code, size_t n, float* const* regs, int64_t len);

void TileRunBase(const TileInstr* code, size_t n, float* const* regs, int64_t len);
void TileRunAvx2(const TileInstr* code, size_t n, float* const* regs, int64_t len);
void TileRunAvx512(const TileInstr* code, size_t n, float* const* regs, int64_t len);

// Everything a fused kernel does per element, in one instruction set: the program, and the loads and stores of
// its tiles (n any count): fill d[0, n) with v; i1 bytes to 0.0f / 1.0f; 0.0f / other to i1 bytes.
struct TileIsa {
  TileRunFn run;
  void (*fill)(float* d, float v, int64_t n);
  void (*from_bytes)(float* d, const uint8_t* s, int64_t n);
  void (*to_bytes)(uint8_t* d, const float* s, int64_t n);
};
extern const TileIsa kTileBase, kTileAvx2, kTileAvx512;

}  // namespace neuronmem::interp::fusion
