#include "stablehlo/parse_cost.h"

namespace neuronmem::stablehlo {

namespace parse {
thread_local uint64_t tokens_lexed = 0;
}  // namespace parse

uint64_t TokensLexed() { return parse::tokens_lexed; }

}  // namespace neuronmem::stablehlo
