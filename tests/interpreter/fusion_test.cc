// Fused element-wise regions (docs/executor.md, "Fused element-wise regions"): which ops a region groups, which
// values it writes and which it keeps in its tiles (no workspace), the fallbacks (an op the tiles cannot do, a
// region too large for a tile), and results that agree with the unfused kernels: exactly, but for the
// exponential (a polynomial, within 2 ulp; its accuracy is measured here on every instruction set the CPU has).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "interp_test_util.h"
#include "interpreter/fusion_tile.h"
#include "stablehlo/parser.h"

namespace neuronmem::interp {
namespace {

struct Pair {
  std::vector<stablehlo::Module> modules;
  std::unique_ptr<Program> on, off;
};

Pair CompileBoth(const std::string& text) {
  Pair p;
  EXPECT_FALSE(stablehlo::ParseModules(text, "fusion.mlir", &p.modules));
  if (p.modules.empty()) return p;
  CompileOptions o;
  o.filename = "fusion.mlir";
  Status s = Compile(p.modules[0], o, &p.on);
  EXPECT_FALSE(s) << (s ? s->message : "");
  o.fuse_elementwise = false;
  s = Compile(p.modules[0], o, &p.off);
  EXPECT_FALSE(s) << (s ? s->message : "");
  return p;
}

std::vector<std::vector<char>> RunProgram(const Program& p, const std::vector<TensorView>& args) {
  HostResultAllocator alloc;
  std::vector<TensorView> results;
  const Status s = p.Run(args.data(), args.size(), &alloc, &results);
  EXPECT_FALSE(s) << (s ? s->message : "");
  std::vector<std::vector<char>> out;
  for (const TensorView& v : results) {
    const char* b = static_cast<const char*>(v.data);
    out.emplace_back(b, b + v.Bytes());
  }
  return out;
}

std::vector<float> Values(size_t n, float lo, float hi, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = lo + (hi - lo) * static_cast<float>(x >> 8) / 16777216.0f;
  }
  return v;
}

std::vector<float> Floats(const std::vector<char>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// Runs both programs on the same f32 arguments; the results agree bitwise, or within `ulps` when nonzero.
void ExpectSame(const Pair& p, std::vector<std::vector<float>>& args, const std::vector<std::vector<int64_t>>& dims,
                int ulps = 0) {
  std::vector<TensorView> views;
  for (size_t i = 0; i < args.size(); ++i)
    views.push_back(TensorView{args[i].data(), ElementType::kF32, dims[i].data(), dims[i].size()});
  const auto on = RunProgram(*p.on, views), off = RunProgram(*p.off, views);
  ASSERT_EQ(on.size(), off.size());
  for (size_t r = 0; r < on.size(); ++r) {
    ASSERT_EQ(on[r].size(), off[r].size());
    if (ulps == 0 || p.on->results()[r].type != ElementType::kF32) {
      EXPECT_EQ(on[r], off[r]) << "result " << r;
      continue;
    }
    const auto a = Floats(on[r]), b = Floats(off[r]);
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))) continue;  // infinities, NaN
      // Relative to the values' scale (a difference after an exponential cancels digits).
      const float tol =
          std::max(std::fabs(b[i]), 1.0f) * static_cast<float>(ulps) * std::numeric_limits<float>::epsilon();
      ASSERT_NEAR(a[i], b[i], tol) << "result " << r << " element " << i;
    }
  }
}

const char* kChain = R"(
func.func @main(%a: tensor<64x33xf32>, %b: tensor<64x33xf32>) -> tensor<64x33xf32> {
  %0 = stablehlo.add %a, %b : tensor<64x33xf32>
  %1 = stablehlo.multiply %0, %b : tensor<64x33xf32>
  %2 = stablehlo.exponential %1 : tensor<64x33xf32>
  %3 = stablehlo.subtract %2, %a : tensor<64x33xf32>
  return %3 : tensor<64x33xf32>
}
)";

TEST(Fusion, ChainIsOneRegionWritingOnlyItsResult) {
  Pair p = CompileBoth(kChain);
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 1u);
  const auto& r = p.on->fused_regions()[0];
  EXPECT_EQ(r.ops, (std::vector<std::string>{"stablehlo.add", "stablehlo.multiply", "stablehlo.exponential",
                                             "stablehlo.subtract"}));
  EXPECT_EQ(r.written, 1u);
  EXPECT_EQ(r.in_tile, 3u);
  EXPECT_TRUE(p.off->fused_regions().empty());
  EXPECT_EQ(p.on->num_kernels(), p.off->num_kernels());  // ops, not kernels
  // The three intermediates take no workspace (unfused, in-place updates make them share one value).
  EXPECT_GE(p.off->workspace_bytes() - p.on->workspace_bytes(), 64u * 33 * 4);
  std::vector<std::vector<float>> args = {Values(64 * 33, -1, 1, 1), Values(64 * 33, -1, 1, 2)};
  ExpectSame(p, args, {{64, 33}, {64, 33}}, 4);
}

TEST(Fusion, ValuesUsedAfterTheRegionAreWritten) {
  Pair p = CompileBoth(R"(
func.func @main(%a: tensor<256xf32>, %b: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  %0 = stablehlo.add %a, %b : tensor<256xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<256xf32>
  %2 = stablehlo.maximum %1, %a : tensor<256xf32>
  %3 = stablehlo.reshape %1 : (tensor<256xf32>) -> tensor<256xf32>
  %4 = stablehlo.add %3, %2 : tensor<256xf32>
  return %0, %4 : tensor<256xf32>, tensor<256xf32>
}
)");
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 1u);  // the reshape ends the first region; one op after it is no region
  const auto& r = p.on->fused_regions()[0];
  EXPECT_EQ(r.ops.size(), 3u);
  EXPECT_EQ(r.written, 3u);  // %0 (returned), %1 (the reshape reads it), %2 (the add after the reshape)
  EXPECT_EQ(r.in_tile, 0u);
  std::vector<std::vector<float>> args = {Values(256, -2, 2, 3), Values(256, -2, 2, 4)};
  ExpectSame(p, args, {{256}, {256}});
}

TEST(Fusion, OtherTypesAndOpsTheTilesCannotDoEndARegion) {
  Pair p = CompileBoth(R"(
func.func @main(%a: tensor<128xf32>, %i: tensor<128xi32>) -> (tensor<128xf32>, tensor<128xi32>) {
  %0 = stablehlo.add %a, %a : tensor<128xf32>
  %1 = stablehlo.multiply %0, %a : tensor<128xf32>
  %2 = stablehlo.log %1 : tensor<128xf32>
  %3 = stablehlo.add %2, %a : tensor<128xf32>
  %4 = stablehlo.negate %3 : tensor<128xf32>
  %5 = stablehlo.add %i, %i : tensor<128xi32>
  %6 = stablehlo.multiply %5, %i : tensor<128xi32>
  return %4, %6 : tensor<128xf32>, tensor<128xi32>
}
)");
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 2u);  // log is not a tile op; i32 is not fused
  EXPECT_EQ(p.on->fused_regions()[0].ops, (std::vector<std::string>{"stablehlo.add", "stablehlo.multiply"}));
  EXPECT_EQ(p.on->fused_regions()[0].written, 1u);
  EXPECT_EQ(p.on->fused_regions()[1].ops, (std::vector<std::string>{"stablehlo.add", "stablehlo.negate"}));
  std::vector<float> a = Values(128, 0.5f, 2, 5);
  std::vector<int32_t> i(128);
  for (int k = 0; k < 128; ++k) i[static_cast<size_t>(k)] = k * 7 - 300;
  const int64_t d[] = {128};
  const std::vector<TensorView> views = {{a.data(), ElementType::kF32, d, 1}, {i.data(), ElementType::kS32, d, 1}};
  EXPECT_EQ(RunProgram(*p.on, views), RunProgram(*p.off, views));
}

TEST(Fusion, BroadcastsAreReadAsTheTilesGo) {
  // Softmax-like rows: max and sum along the last axis (reductions end regions), the row values broadcast back
  // along the trailing dim (leading mode), a bias along the leading dim (trailing mode), a 0-d scale (splat).
  Pair p = CompileBoth(R"(
func.func @main(%x: tensor<37x100xf32>, %bias: tensor<100xf32>, %s: tensor<f32>) -> tensor<37x100xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %bb = stablehlo.broadcast_in_dim %bias, dims = [1] : (tensor<100xf32>) -> tensor<37x100xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<37x100xf32>
  %y0 = stablehlo.add %x, %bb : tensor<37x100xf32>
  %y = stablehlo.multiply %y0, %sb : tensor<37x100xf32>
  %m = stablehlo.reduce(%y init: %ninf) applies stablehlo.maximum across dimensions = [1]
      : (tensor<37x100xf32>, tensor<f32>) -> tensor<37xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<37xf32>) -> tensor<37x100xf32>
  %d = stablehlo.subtract %y, %mb : tensor<37x100xf32>
  %e = stablehlo.exponential %d : tensor<37x100xf32>
  %t = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1]
      : (tensor<37x100xf32>, tensor<f32>) -> tensor<37xf32>
  %tb = stablehlo.broadcast_in_dim %t, dims = [0] : (tensor<37xf32>) -> tensor<37x100xf32>
  %r = stablehlo.divide %e, %tb : tensor<37x100xf32>
  return %r : tensor<37x100xf32>
}
)");
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 3u);
  EXPECT_EQ(p.on->fused_regions()[0].ops.size(), 4u);  // two broadcasts, add, multiply
  EXPECT_EQ(p.on->fused_regions()[0].written, 1u);
  EXPECT_EQ(p.on->fused_regions()[0].in_tile, 3u);
  EXPECT_EQ(p.on->fused_regions()[1].ops.size(), 3u);  // broadcast, subtract, exponential
  EXPECT_EQ(p.on->fused_regions()[1].written, 1u);     // %e: the sum and the divide read it
  EXPECT_EQ(p.on->fused_regions()[2].ops.size(), 2u);  // broadcast, divide
  std::vector<std::vector<float>> args = {Values(37 * 100, -3, 3, 6), Values(100, -1, 1, 7), {0.75f}};
  ExpectSame(p, args, {{37, 100}, {100}, {}}, 4);
}

TEST(Fusion, GeluAndSiluActivationsAreOneRegion) {
  // As jax.nn.gelu(approximate=True) and jax.nn.silu lower after a matmul's bias add: tanh and logistic are tile
  // ops, so the bias broadcast, the activation and the products are one region writing only the result.
  Pair p = CompileBoth(R"(
func.func @main(%h0: tensor<16x300xf32>, %b: tensor<300xf32>) -> (tensor<16x300xf32>, tensor<16x300xf32>) {
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<300xf32>) -> tensor<16x300xf32>
  %h = stablehlo.add %h0, %bb : tensor<16x300xf32>
  %c0 = stablehlo.constant dense<4.471500e-02> : tensor<16x300xf32>
  %c1 = stablehlo.constant dense<0.797884583> : tensor<16x300xf32>
  %c2 = stablehlo.constant dense<1.000000e+00> : tensor<16x300xf32>
  %c3 = stablehlo.constant dense<5.000000e-01> : tensor<16x300xf32>
  %x2 = stablehlo.multiply %h, %h : tensor<16x300xf32>
  %x3 = stablehlo.multiply %x2, %h : tensor<16x300xf32>
  %g0 = stablehlo.multiply %c0, %x3 : tensor<16x300xf32>
  %g1 = stablehlo.add %h, %g0 : tensor<16x300xf32>
  %g2 = stablehlo.multiply %c1, %g1 : tensor<16x300xf32>
  %g3 = stablehlo.tanh %g2 : tensor<16x300xf32>
  %g4 = stablehlo.add %c2, %g3 : tensor<16x300xf32>
  %g5 = stablehlo.multiply %c3, %g4 : tensor<16x300xf32>
  %gelu = stablehlo.multiply %h, %g5 : tensor<16x300xf32>
  %s = stablehlo.logistic %h : tensor<16x300xf32>
  %silu = stablehlo.multiply %h, %s : tensor<16x300xf32>
  return %gelu, %silu : tensor<16x300xf32>, tensor<16x300xf32>
}
)");
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 1u);
  const auto& r = p.on->fused_regions()[0];
  EXPECT_EQ(r.ops.size(), 13u);  // the constants are read in the tiles, not ops of the region
  EXPECT_NE(std::find(r.ops.begin(), r.ops.end(), "stablehlo.tanh"), r.ops.end());
  EXPECT_NE(std::find(r.ops.begin(), r.ops.end(), "stablehlo.logistic"), r.ops.end());
  EXPECT_EQ(r.written, 2u);
  std::vector<float> h0 = Values(16 * 300, -6, 6, 50);
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, 1e-20f, -1e-20f, 30.0f, -30.0f, 95.0f, -95.0f, inf, -inf};
  for (size_t i = 0; i < std::size(specials); ++i) h0[i] = specials[i];
  std::vector<std::vector<float>> args = {h0, Values(300, -0.5f, 0.5f, 51)};
  ExpectSame(p, args, {{16, 300}, {300}}, 8);
}

TEST(Fusion, BroadcastsAlongMiddleDimsStayUnfused) {
  Pair p = CompileBoth(R"(
func.func @main(%x: tensor<4x8x16xf32>, %v: tensor<8xf32>) -> tensor<4x8x16xf32> {
  %vb = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<8xf32>) -> tensor<4x8x16xf32>
  %0 = stablehlo.add %x, %vb : tensor<4x8x16xf32>
  %1 = stablehlo.multiply %0, %x : tensor<4x8x16xf32>
  return %1 : tensor<4x8x16xf32>
}
)");
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 1u);
  EXPECT_EQ(p.on->fused_regions()[0].ops, (std::vector<std::string>{"stablehlo.add", "stablehlo.multiply"}));
  std::vector<std::vector<float>> args = {Values(4 * 8 * 16, -3, 3, 8), Values(8, -1, 1, 9)};
  ExpectSame(p, args, {{4, 8, 16}, {8}});
}

TEST(Fusion, CompareSelectMaxMinKeepTheUnfusedSemantics) {
  // NaN wins in maximum/minimum, max(-0, +0) = +0, min = -0; compares are IEEE (NaN unordered); a compare's i1
  // result used after the region is written as bytes.
  Pair p = CompileBoth(R"(
func.func @main(%a: tensor<96xf32>, %b: tensor<96xf32>) -> (tensor<96xf32>, tensor<96xi1>, tensor<96xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<96xf32>
  %c = stablehlo.compare GT, %a, %b : (tensor<96xf32>, tensor<96xf32>) -> tensor<96xi1>
  %s = stablehlo.select %c, %a, %zero : tensor<96xi1>, tensor<96xf32>
  %mx = stablehlo.maximum %s, %b : tensor<96xf32>
  %mn = stablehlo.minimum %mx, %a : tensor<96xf32>
  %cf = stablehlo.convert %c : (tensor<96xi1>) -> tensor<96xf32>
  %r = stablehlo.add %mn, %cf : tensor<96xf32>
  %ne = stablehlo.compare NE, %a, %a : (tensor<96xf32>, tensor<96xf32>) -> tensor<96xi1>
  %q = stablehlo.negate %b : tensor<96xf32>
  return %r, %ne, %q : tensor<96xf32>, tensor<96xi1>, tensor<96xf32>
}
)");
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 1u);
  EXPECT_EQ(p.on->fused_regions()[0].ops.size(), 8u);
  EXPECT_EQ(p.on->fused_regions()[0].written, 3u);
  std::vector<float> a = Values(96, -2, 2, 10), b = Values(96, -2, 2, 11);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials_a[] = {nan, 1, nan, -0.0f, 0.0f, inf, -inf, 3, -0.0f, 0.0f};
  const float specials_b[] = {1, nan, nan, 0.0f, -0.0f, -inf, inf, 3, -0.0f, 0.0f};
  for (size_t i = 0; i < 10; ++i) a[i] = specials_a[i], b[i] = specials_b[i];
  std::vector<std::vector<float>> args = {a, b};
  ExpectSame(p, args, {{96}, {96}});
}

TEST(Fusion, ARegionTooLargeForTheTilesFallsBackUnfused) {
  // 40 parameters all read by one region: 40 tile buffers at once are more than the tiles hold.
  std::string sig, body = "  %s0 = stablehlo.exponential %p0 : tensor<1000xf32>\n";
  for (int i = 0; i < 40; ++i) sig += (i ? ", " : "") + std::string("%p") + std::to_string(i) + ": tensor<1000xf32>";
  for (int i = 1; i < 40; ++i)
    body += "  %s" + std::to_string(i) + " = stablehlo.add %s" + std::to_string(i - 1) + ", %p" + std::to_string(i) +
            " : tensor<1000xf32>\n";
  const std::string text =
      "func.func @main(" + sig + ") -> tensor<1000xf32> {\n" + body + "  return %s39 : tensor<1000xf32>\n}\n";
  Pair p = CompileBoth(text);
  ASSERT_TRUE(p.on && p.off);
  EXPECT_TRUE(p.on->fused_regions().empty());
  std::vector<std::vector<float>> args;
  std::vector<std::vector<int64_t>> dims;
  for (int i = 0; i < 40; ++i) args.push_back(Values(1000, -1, 1, 20 + i)), dims.push_back({1000});
  ExpectSame(p, args, dims);
}

TEST(Fusion, TilesOfAnySizeAndFusedLoopBodies) {
  // 3 x 5003 f32: several tiles and a last one that is not a multiple of the vector width; the same chain in
  // a while loop's body (regions of bodies fuse too), and small values (a loop counter) stay unfused.
  Pair p = CompileBoth(R"(
func.func @main(%a: tensor<3x5003xf32>, %b: tensor<3x5003xf32>) -> tensor<3x5003xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %three = stablehlo.constant dense<3> : tensor<i32>
  %0:2 = stablehlo.while(%i = %zero, %v = %a) : tensor<i32>, tensor<3x5003xf32>
  cond {
    %c = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %n = stablehlo.add %i, %one : tensor<i32>
    %x = stablehlo.multiply %v, %b : tensor<3x5003xf32>
    %y = stablehlo.add %x, %v : tensor<3x5003xf32>
    %z = stablehlo.abs %y : tensor<3x5003xf32>
    %w = stablehlo.sqrt %z : tensor<3x5003xf32>
    stablehlo.return %n, %w : tensor<i32>, tensor<3x5003xf32>
  }
  return %0#1 : tensor<3x5003xf32>
}
)");
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 1u);
  EXPECT_EQ(p.on->fused_regions()[0].ops.size(), 4u);
  std::vector<std::vector<float>> args = {Values(3 * 5003, -2, 2, 30), Values(3 * 5003, -1, 1, 31)};
  ExpectSame(p, args, {{3, 5003}, {3, 5003}});
}

// Many inputs (a predicate and constant coefficients chosen by it, as CHLO's erf_inv lowers to): many tile
// buffers, so small tiles, several per value.
TEST(Fusion, SelectedCoefficientsOverSeveralTiles) {
  const std::string t = "tensor<20x20xf32>";
  std::string text =
      "func.func @main(%x: " + t + ") -> " + t + " {\n  %l = stablehlo.log %x : " + t +
      "\n  %five = stablehlo.constant dense<0.5> : " + t + "\n  %p = stablehlo.compare LT, %l, %five : (" + t + ", " +
      t + ") -> tensor<20x20xi1>\n  %l2 = stablehlo.log %x : " + t + "\n  %w = stablehlo.abs %l2 : " + t + "\n";
  std::string prev = "%w";
  for (int k = 0; k < 12; ++k) {
    const std::string n = std::to_string(k);
    text += "  %ca" + n + " = stablehlo.constant dense<" + std::to_string(k + 1) + ".5> : " + t + "\n";
    text += "  %cb" + n + " = stablehlo.constant dense<-" + std::to_string(k + 2) + ".25> : " + t + "\n";
    text += "  %s" + n + " = stablehlo.select %p, %ca" + n + ", %cb" + n + " : tensor<20x20xi1>, " + t + "\n";
    text += "  %m" + n + " = stablehlo.multiply " + prev + ", %w : " + t + "\n";
    text += "  %a" + n + " = stablehlo.add %m" + n + ", %s" + n + " : " + t + "\n";
    prev = "%a" + n;
  }
  text += "  return " + prev + " : " + t + "\n}\n";
  Pair p = CompileBoth(text);
  ASSERT_TRUE(p.on && p.off);
  ASSERT_EQ(p.on->fused_regions().size(), 1u);
  std::vector<std::vector<float>> args = {Values(400, 0.1f, 3, 40)};
  ExpectSame(p, args, {{20, 20}});
}

TEST(Fusion, EnvironmentVariableTurnsItOff) {
  setenv("NEURONMEM_INTERP_FUSION", "0", 1);
  testing::Compiled c = testing::CompileText(kChain);
  unsetenv("NEURONMEM_INTERP_FUSION");
  ASSERT_FALSE(c.status) << (c.status ? c.status->message : "");
  EXPECT_TRUE(c.program->fused_regions().empty());
  testing::Compiled d = testing::CompileText(kChain);
  ASSERT_FALSE(d.status) << (d.status ? d.status->message : "");
  EXPECT_EQ(d.program->fused_regions().size(), 1u);
}

// The instruction sets of the tile programs this CPU runs.
struct Isa {
  const char* name;
  fusion::TileRunFn run;
  const fusion::TileIsa* isa;
};
std::vector<Isa> CpuIsas() {
  __builtin_cpu_init();
  std::vector<Isa> v = {{"base", fusion::TileRunBase, &fusion::kTileBase}};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    v.push_back({"avx2", fusion::TileRunAvx2, &fusion::kTileAvx2});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    v.push_back({"avx512", fusion::TileRunAvx512, &fusion::kTileAvx512});
  return v;
}

// The tile exponential on every instruction set this CPU runs: within 2 ulp of e^x (computed in double) over
// [-87, 88], exact where expf is used (infinities, NaN, overflow, subnormal and zero results).
TEST(Fusion, TileExponentialAccuracy) {
  constexpr int64_t kLen = 4096;
  std::vector<float> x(kLen), y(kLen);
  float* regs[2] = {y.data(), x.data()};
  const fusion::TileInstr exp_instr{fusion::TileOp::kExp, 0, 1, 0, 0};
  for (const Isa& isa : CpuIsas()) {
    double worst = 0;
    for (int64_t block = 0; block < 256; ++block) {  // 1M points evenly over [-87, 88]
      for (int64_t i = 0; i < kLen; ++i)
        x[static_cast<size_t>(i)] = -87.0f + 175.0f * static_cast<float>(block * kLen + i) / (256.0f * kLen);
      isa.run(&exp_instr, 1, regs, kLen);
      for (int64_t i = 0; i < kLen; ++i) {
        const double want = std::exp(static_cast<double>(x[static_cast<size_t>(i)]));
        const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
        worst = std::max(worst, std::fabs(y[static_cast<size_t>(i)] - want) / ulp);
      }
    }
    EXPECT_LE(worst, 2.0) << isa.name;
    std::printf("tile exponential (%s): max error %.3f ulp over [-87, 88]\n", isa.name, worst);
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {
        inf, -inf, std::numeric_limits<float>::quiet_NaN(), 89.0f, 100.0f, -88.0f, -100.0f, -104.0f, -200.0f, 0.0f};
    std::fill(x.begin(), x.end(), 0.0f);
    for (size_t i = 0; i < std::size(specials); ++i) x[i] = specials[i];
    isa.run(&exp_instr, 1, regs, kLen);
    for (size_t i = 0; i < std::size(specials); ++i) {
      const float want = std::exp(specials[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << isa.name;
      } else if (std::fabs(specials[i]) <= 87.0f) {  // the polynomial's range, beside the other lanes
        EXPECT_NEAR(y[i], want, 2.0 * std::ldexp(1.0, std::ilogb(want) - 23)) << isa.name;
      } else {
        EXPECT_EQ(y[i], want) << isa.name << " exp(" << specials[i] << ")";
      }
    }
  }
}

// Max error in ulp of `op` over `points` evenly spread on [lo, hi] against `want` (double), on one instruction set.
template <typename Want>
double TileUlpError(const Isa& isa, fusion::TileOp op, float lo, float hi, int64_t blocks, Want want) {
  constexpr int64_t kLen = 4096;
  std::vector<float> x(kLen), y(kLen);
  float* regs[2] = {y.data(), x.data()};
  const fusion::TileInstr instr{op, 0, 1, 0, 0};
  double worst = 0;
  for (int64_t block = 0; block < blocks; ++block) {
    for (int64_t i = 0; i < kLen; ++i)
      x[static_cast<size_t>(i)] =
          lo + (hi - lo) * static_cast<float>(block * kLen + i) / static_cast<float>(blocks * kLen);
    isa.run(&instr, 1, regs, kLen);
    for (int64_t i = 0; i < kLen; ++i) {
      const double w = want(static_cast<double>(x[static_cast<size_t>(i)]));
      const float got = y[static_cast<size_t>(i)];
      if (w == 0) {
        EXPECT_EQ(got, 0.0f) << isa.name << " at " << x[static_cast<size_t>(i)];
        continue;
      }
      worst = std::max(worst, std::fabs(got - w) / std::ldexp(1.0, std::max(std::ilogb(w), -126) - 23));
    }
  }
  return worst;
}

// Runs one tile instruction over `in` (any length up to a tile), returns its result.
std::vector<float> TileRun1(const Isa& isa, fusion::TileOp op, std::vector<float> in) {
  in.resize((in.size() + fusion::kTileVector - 1) / fusion::kTileVector * fusion::kTileVector, 0.0f);
  std::vector<float> out(in.size());
  float* regs[2] = {out.data(), in.data()};
  const fusion::TileInstr instr{op, 0, 1, 0, 0};
  isa.run(&instr, 1, regs, static_cast<int64_t>(in.size()));
  return out;
}

// tanh and logistic (gelu's and silu's activations) on every instruction set: tanh within 2 ulp of tanh in double
// (the polynomial below 0.625, the exponential form above, saturated to 1), logistic within 3 ulp of
// 1 / (1 + e^-x); their special values as the unfused kernels give them.
TEST(Fusion, TileTanhAndLogisticAccuracy) {
  for (const Isa& isa : CpuIsas()) {
    const double tanh_err =
        TileUlpError(isa, fusion::TileOp::kTanh, -12.0f, 12.0f, 256, [](double x) { return std::tanh(x); });
    const double small_err =
        TileUlpError(isa, fusion::TileOp::kTanh, -0.7f, 0.7f, 64, [](double x) { return std::tanh(x); });
    const double logistic_err = TileUlpError(isa, fusion::TileOp::kLogistic, -87.0f, 87.0f, 256,
                                             [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
    EXPECT_LE(tanh_err, 2.0) << isa.name;
    EXPECT_LE(small_err, 2.0) << isa.name;
    EXPECT_LE(logistic_err, 3.0) << isa.name;
    std::printf(
        "tile tanh (%s): max error %.3f ulp over [-12, 12], %.3f over [-0.7, 0.7]; logistic %.3f ulp over "
        "[-87, 87]\n",
        isa.name, tanh_err, small_err, logistic_err);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> specials = {inf, -inf, nan, 0.0f, -0.0f, 1e-30f, -1e-30f, 100.0f, -100.0f, 20.0f};
    const std::vector<float> t = TileRun1(isa, fusion::TileOp::kTanh, specials);
    const std::vector<float> l = TileRun1(isa, fusion::TileOp::kLogistic, specials);
    for (size_t i = 0; i < specials.size(); ++i) {
      const float want_t = std::tanh(specials[i]);
      const float want_l = 1.0f / (1.0f + std::exp(-specials[i]));
      if (std::isnan(want_t)) {
        EXPECT_TRUE(std::isnan(t[i]) && std::isnan(l[i])) << isa.name;
        continue;
      }
      EXPECT_EQ(t[i], want_t) << isa.name << " tanh(" << specials[i] << ")";
      EXPECT_EQ(std::signbit(t[i]), std::signbit(want_t)) << isa.name << " tanh(" << specials[i] << ")";
      EXPECT_EQ(l[i], want_l) << isa.name << " logistic(" << specials[i] << ")";
    }
  }
}

// The tile loads and stores of every instruction set, at every length around the vector width.
TEST(Fusion, TileLoadsAndStores) {
  for (const Isa& cpu : CpuIsas()) {
    const fusion::TileIsa* isa = cpu.isa;
    for (int64_t n = 0; n <= 50; ++n) {
      std::vector<float> f(64, -7.0f);
      isa->fill(f.data(), 2.5f, n);
      for (int64_t i = 0; i < 64; ++i) ASSERT_EQ(f[static_cast<size_t>(i)], i < n ? 2.5f : -7.0f) << n;
      std::vector<uint8_t> b(64), back(64, 9);
      for (size_t i = 0; i < b.size(); ++i) b[i] = (i * 7 % 5 == 0) ? static_cast<uint8_t>(1) : 0;
      isa->from_bytes(f.data(), b.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(f[static_cast<size_t>(i)], b[static_cast<size_t>(i)] ? 1.0f : 0.0f);
      isa->to_bytes(back.data(), f.data(), n);
      for (int64_t i = 0; i < 64; ++i)
        ASSERT_EQ(back[static_cast<size_t>(i)], i < n ? b[static_cast<size_t>(i)] : 9) << n;
    }
  }
}

}  // namespace
}  // namespace neuronmem::interp
