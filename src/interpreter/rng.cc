// stablehlo.rng_bit_generator: THREE_FRY (Threefry-2x32, 20 rounds) and PHILOX (Philox-4x32, 10 rounds; also
// DEFAULT), counter-based on (key, state + i), with the output layout and state update of StableHLO's own
// lowering (stablehlo/conversions/linalg, "matches the XLA implementation bit-exact"), so a program draws the
// bits XLA draws. The spec leaves the bits implementation-defined; the shapes are the spec's.
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "interpreter/kernel.h"

namespace neuronmem::interp {
namespace {

enum class Algorithm { kThreeFry, kPhilox };

uint32_t Rotl(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

// Threefry-2x32 with 20 rounds (Salmon et al., SC 2011) on the counter split into (low, high).
std::array<uint32_t, 2> ThreeFry(uint32_t k0, uint32_t k1, uint64_t counter) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, 0x1bd11bdau ^ k0 ^ k1};
  uint32_t x0 = static_cast<uint32_t>(counter) + k0;
  uint32_t x1 = static_cast<uint32_t>(counter >> 32) + k1;
  for (int i = 0; i < 5; ++i) {
    const int rot = (4 * i) % 8;
    for (int j = 0; j < 4; ++j) {
      x0 += x1;
      x1 = Rotl(x1, kRot[rot + j]);
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + static_cast<uint32_t>(i + 1);
  }
  return {x0, x1};
}

// Philox-4x32 with 10 rounds on (counter low, counter high, k0, k1).
std::array<uint32_t, 4> Philox(uint32_t k0, uint32_t k1, uint64_t counter) {
  std::array<uint32_t, 4> x = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), k0, k1};
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{x[0]} * 0xD2511F53u;
    const uint64_t p1 = uint64_t{x[2]} * 0xCD9E8D57u;
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return x;
}

uint64_t Fuse(uint32_t low, uint32_t high) { return uint64_t{low} | (uint64_t{high} << 32); }

// The state layouts the lowering knows: u64[2] and u64[3] (key in element 0, counter in element 1) and u32[4]
// (key in elements 0-1, counter in 2-3).
enum class StateLayout { k64x2, k64x3, k32x4 };

class RngBitGeneratorKernel final : public Kernel {
 public:
  RngBitGeneratorKernel(uint32_t state_in, uint32_t state_out, uint32_t out, StateLayout layout, size_t state_bytes,
                        Algorithm alg, std::vector<int64_t> dims, int bits)
      : in_(state_in),
        state_out_(state_out),
        out_(out),
        layout_(layout),
        state_bytes_(state_bytes),
        alg_(alg),
        dims_(std::move(dims)),
        bits_(bits) {}

  Status Run(Frame& f) const override {
    const char* s = f.slots[in_];
    uint32_t k0, k1;
    uint64_t counter;
    if (layout_ == StateLayout::k32x4) {
      uint32_t w[4];
      std::memcpy(w, s, 16);
      k0 = w[0];
      k1 = w[1];
      counter = (uint64_t{w[2]} << 32) | w[3];  // as the lowering reads it
    } else {
      uint64_t w[2];
      std::memcpy(w, s, 16);
      k0 = static_cast<uint32_t>(w[0]);
      k1 = static_cast<uint32_t>(w[0] >> 32);
      counter = w[1];
    }
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    char* out = f.slots[out_];
    const int64_t used =
        alg_ == Algorithm::kThreeFry ? ThreeFryBits(k0, k1, counter, n, out) : PhiloxBits(k0, k1, counter, n, out);
    const uint64_t next = counter + static_cast<uint64_t>(used);
    char* so = f.slots[state_out_];
    if (so != s) std::memmove(so, s, state_bytes_);
    if (layout_ == StateLayout::k32x4) {
      const uint32_t lo = static_cast<uint32_t>(next), hi = static_cast<uint32_t>(next >> 32);
      std::memcpy(so + 8, &lo, 4);
      std::memcpy(so + 12, &hi, 4);
    } else {
      std::memcpy(so + 8, &next, 8);
    }
    return Status();
  }

 private:
  void Store(char* out, int64_t i, uint64_t v) const {
    switch (bits_) {
      case 8: out[i] = static_cast<char>(v); break;
      case 16: {
        const uint16_t x = static_cast<uint16_t>(v);
        std::memcpy(out + 2 * i, &x, 2);
        break;
      }
      case 32: {
        const uint32_t x = static_cast<uint32_t>(v);
        std::memcpy(out + 4 * i, &x, 4);
        break;
      }
      default: std::memcpy(out + 8 * i, &v, 8);
    }
  }

  // Returns the number of counters used.
  int64_t ThreeFryBits(uint32_t k0, uint32_t k1, uint64_t counter, int64_t n, char* out) const {
    if (bits_ == 64) {
      for (int64_t i = 0; i < n; ++i) {
        const auto x = ThreeFry(k0, k1, counter + static_cast<uint64_t>(i));
        Store(out, i, Fuse(x[0], x[1]));
      }
      return n;
    }
    if (dims_.empty()) {
      Store(out, 0, ThreeFry(k0, k1, counter)[0]);
      return 1;
    }
    // The lowering halves one dim (the first even one, else the largest), draws a pair per element of the
    // halved shape, and interleaves the pair's words along that dim: row 2a from word 0, row 2a + 1 from word 1.
    size_t half = 0;
    for (size_t d = 0; d < dims_.size(); ++d)
      if (dims_[d] > dims_[half]) half = d;
    for (size_t d = 0; d < dims_.size(); ++d) {
      if ((dims_[d] & 1) == 0) {
        half = d;
        break;
      }
    }
    std::vector<int64_t> hdims = dims_;
    hdims[half] = (hdims[half] + 1) / 2;
    int64_t count = 1, inner = 1, outer = 1;
    for (int64_t d : hdims) count *= d;
    for (size_t d = half + 1; d < dims_.size(); ++d) inner *= dims_[d];
    for (size_t d = 0; d < half; ++d) outer *= dims_[d];
    if (n == 1) {
      Store(out, 0, ThreeFry(k0, k1, counter)[0]);
      return count;
    }
    const int64_t len = dims_[half], hlen = hdims[half];
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t a = 0; a < hlen; ++a) {
        for (int64_t r = 0; r < inner; ++r) {
          const int64_t i = (o * hlen + a) * inner + r;  // row-major index in the halved shape
          const auto x = ThreeFry(k0, k1, counter + static_cast<uint64_t>(i));
          Store(out, (o * len + 2 * a) * inner + r, x[0]);
          if (2 * a + 1 < len) Store(out, (o * len + 2 * a + 1) * inner + r, x[1]);
        }
      }
    }
    return count;
  }

  int64_t PhiloxBits(uint32_t k0, uint32_t k1, uint64_t counter, int64_t n, char* out) const {
    const int lanes = bits_ == 64 ? 2 : 4;
    const int64_t count = (n + lanes - 1) / lanes;
    for (int64_t i = 0; i < count; ++i) {
      const auto x = Philox(k0, k1, counter + static_cast<uint64_t>(i));
      if (n == 1) {
        Store(out, 0, bits_ == 64 ? Fuse(x[0], x[1]) : x[0]);
        break;
      }
      for (int l = 0; l < lanes; ++l) {
        const int64_t j = i * lanes + l;
        if (j >= n) break;
        Store(out, j, bits_ == 64 ? Fuse(x[2 * l], x[2 * l + 1]) : x[l]);
      }
    }
    return count;
  }

  uint32_t in_, state_out_, out_;
  StateLayout layout_;
  size_t state_bytes_;
  Algorithm alg_;
  std::vector<int64_t> dims_;
  int bits_;
};

Status CompileRngBitGenerator(CompileCtx& cx, std::unique_ptr<Kernel>* k) {
  if (cx.num_inputs() != 1 || cx.num_outputs() != 2) return cx.Invalid("expected initial_state, output_state, output");
  std::string alg_name;
  if (!cx.EnumWord("rng_algorithm", &alg_name)) return cx.Invalid("missing rng_algorithm");
  Algorithm alg;
  if (alg_name == "THREE_FRY") {
    alg = Algorithm::kThreeFry;
  } else if (alg_name == "PHILOX" || alg_name == "DEFAULT") {
    alg = Algorithm::kPhilox;
  } else {
    return cx.Invalid("unknown rng_algorithm '%s'", alg_name.c_str());
  }
  const Slot& state = cx.in_slot(0);
  const Slot& state_out = cx.out_slot(0);
  const Slot& out = cx.out_slot(1);
  if (state_out.type != state.type || state_out.dims != state.dims)
    return cx.Invalid("output_state must have the type of initial_state");
  StateLayout layout;
  const bool i64 = state.type == ElementType::kU64 || state.type == ElementType::kS64;
  const bool i32 = state.type == ElementType::kU32 || state.type == ElementType::kS32;
  if (state.dims.size() == 1 && i64 && state.dims[0] == 2) {
    layout = StateLayout::k64x2;
  } else if (state.dims.size() == 1 && i64 && state.dims[0] == 3) {
    layout = StateLayout::k64x3;
  } else if (state.dims.size() == 1 && i32 && state.dims[0] == 4) {
    layout = StateLayout::k32x4;
  } else {
    return cx.Unsupported("initial_state of type %s[%zu] is not supported (u64[2], u64[3] or u32[4])",
                          std::string(ElementTypeName(state.type)).c_str(), state.dims.size());
  }
  const int bits = out.quant ? 0 : ElementInfo(out.type).bits;
  if ((bits != 8 && bits != 16 && bits != 32 && bits != 64) || IsComplex(out.type))
    return cx.Unsupported("output of type %s is not supported", std::string(ElementTypeName(out.type)).c_str());
  *k =
      std::make_unique<RngBitGeneratorKernel>(cx.in(0), cx.out(0), cx.out(1), layout, state.bytes, alg, out.dims, bits);
  return Ok();
}

}  // namespace

void RegisterRngOps(OpTable* r) { (*r)["stablehlo.rng_bit_generator"] = CompileRngBitGenerator; }

}  // namespace neuronmem::interp
