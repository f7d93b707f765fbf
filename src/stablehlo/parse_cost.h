// The parser's cost in units of work (issue 23, class 7): the tokens the lexer produced, counting again
// those it lexes after backtracking (an op of an unknown dialect is first read as a pretty op, and skipped
// when that fails). The docs promise linear time; tests bound this count by a multiple of the input's bytes
// on the parser fuzzer's slow inputs, which is stable where seconds are not.
#pragma once

#include <cstdint>

namespace neuronmem::stablehlo {

// Tokens lexed on this thread since it started (a running count: take the difference around a parse).
uint64_t TokensLexed();

namespace parse {
extern thread_local uint64_t tokens_lexed;
// Called by the lexer for each token (inline: the lexer's hot path).
inline void CountToken() { ++tokens_lexed; }
}  // namespace parse

}  // namespace neuronmem::stablehlo
