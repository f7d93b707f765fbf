// The parser's cost in units of work (tokens lexed, re-lexing after backtracking included: parse_cost.h),
// bounded by a multiple of the input's size (issue 23, class 7). The inputs: the parser fuzzer's slow ones
// (tests/fuzz/corpus/stablehlo/slow-*.mlir: 40-60 ms for 4 KB before, about 0.3 ms now), and generated families
// that grow, whose cost per byte must stay flat (or bounded by the nesting limit).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "stablehlo/parse_cost.h"
#include "stablehlo/parser.h"

namespace neuronmem::stablehlo {
namespace {

// Tokens lexed while parsing `text` (whatever the outcome).
uint64_t Cost(const std::string& text) {
  const uint64_t before = TokensLexed();
  std::vector<Module> modules;
  (void)ParseModules(text, "cost.mlir", &modules);
  return TokensLexed() - before;
}

TEST(ParseCost, FuzzerSlowInputsCostAFewTokensPerByte) {
  const std::filesystem::path dir = std::filesystem::path(NEURONMEM_SOURCE_DIR) / "tests/fuzz/corpus/stablehlo";
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("slow-", 0) != 0) continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << e.path();
    const uint64_t cost = Cost(text);
    EXPECT_LE(cost, 4 * text.size()) << e.path() << ": " << cost << " tokens for " << text.size() << " bytes";
    ++files;
  }
  EXPECT_GE(files, 4u);
}

// Unknown-dialect ops whose pretty form fails are skipped (read once more, as a skipped op).
std::string UnknownOps(int n, const char* line) {
  std::string t = "func.func @main() {\n";
  for (int i = 0; i < n; ++i) t += line;
  return t + "  return\n}\n";
}

TEST(ParseCost, UnknownOpCostsStayFlatOrWithinTheNestingBound) {
  // One per line, independent: flat cost per byte.
  const char* flat = "  %0 = stAblehlo.csor<2xbf16>\n";
  const double small = double(Cost(UnknownOps(100, flat))) / UnknownOps(100, flat).size();
  const double large = double(Cost(UnknownOps(1600, flat))) / UnknownOps(1600, flat).size();
  EXPECT_LE(large, 1.25 * small) << small << " vs " << large << " tokens per byte";
  // Each line's op reads the next ones as its operands (an unclosed '('): the attempts nest, up to the
  // nesting limit, and each enclosing one reads what follows it once: at most ~kMaxDepth tokens per token.
  const char* nesting = "  %0 = stAblehlo.custom_call @\"x-y\"(%= \"\\22\\41\"} : (tensor<rxbf16>) -> tensor<2xbf16>\n";
  for (int n : {50, 100, 200, 400, 800}) {
    const std::string text = UnknownOps(n, nesting);
    const uint64_t cost = Cost(text);
    EXPECT_LE(cost, 32 * text.size()) << n << " lines: " << cost << " tokens for " << text.size() << " bytes";
  }
}

}  // namespace
}  // namespace neuronmem::stablehlo
