// The decode model's small test size, shared by tests/decode: three sequences of up to four blocks of 4 tokens
// in a 16-block cache, 2 layers of hidden 32 with 4 heads, ffn 48, vocab 64.
#pragma once

#include "decode_model.h"

namespace neuronmem_decode {

inline Config SmallConfig(Attention attention = Attention::kGather) {
  Config c;
  c.batch = 3;
  c.max_blocks = 4;
  c.block_size = 4;
  c.num_blocks = 16;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.ffn = 48;
  c.vocab = 64;
  c.attention = attention;
  return c;
}

}  // namespace neuronmem_decode
