// The decode demo's model at small sizes: the StableHLO text run by the interpreter gives the plain C++
// reference's tokens (and KV caches) step after step; the data file is the generator's output; the host
// checks reject bad metadata; the manifest sees the metadata in pinned_host and the caches donated.
#include <neuronmem/neuronmem.h>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "interp_decoder.h"
#include "small_config.h"

namespace neuronmem_decode {
namespace {

Config Small() { return SmallConfig(); }

struct Loop {
  Config c;
  Metadata md;
  explicit Loop(const Config& config) : c(config) {
    md.block_table.assign(static_cast<size_t>(c.batch) * c.max_blocks, 0);
    md.seq_lens.assign(static_cast<size_t>(c.batch), 0);
    md.positions = md.seq_lens;
    md.slot_mapping = md.seq_lens;
  }
};

// Runs `steps` steps on both and compares every token and, at the end, the caches.
void RunAndCompare(const Config& c, int steps) {
  InterpDecoder dec;
  neuronmem::Status s = dec.Init(c, 42);
  ASSERT_FALSE(s) << s->message;
  Reference ref(c, dec.weights());
  Loop loop(c);
  Scheduler sched(c);
  std::vector<int32_t> tokens = FirstTokens(c), next, ref_next;
  std::vector<float> logits;
  int exact = 0;
  for (int step = 0; step < steps; ++step) {
    std::string error;
    ASSERT_GT(sched.Advance(step, loop.md.block_table.data(), loop.md.seq_lens.data(), loop.md.positions.data(),
                            loop.md.slot_mapping.data(), &error),
              0)
        << error;
    ASSERT_EQ(CheckMetadata(c, loop.md.block_table.data(), loop.md.seq_lens.data(), loop.md.positions.data(),
                            loop.md.slot_mapping.data()),
              "");
    s = dec.Step(tokens.data(), loop.md.block_table.data(), loop.md.seq_lens.data(), loop.md.positions.data(),
                 loop.md.slot_mapping.data(), &next);
    ASSERT_FALSE(s) << s->message;
    ref.Step(tokens.data(), loop.md, &ref_next, &logits);
    for (int b = 0; b < c.batch; ++b) {
      EXPECT_TRUE(AcceptableToken(&logits[static_cast<size_t>(b) * c.vocab], c.vocab, next[b]))
          << "step " << step << " sequence " << b << ": interpreter " << next[b] << ", reference " << ref_next[b];
      exact += next[b] == ref_next[b];
    }
    tokens = next;  // both continue from the interpreter's tokens
  }
  // Near ties are rare: nearly every token is the reference's own argmax.
  EXPECT_GE(exact, steps * c.batch * 9 / 10);
  ASSERT_EQ(dec.k_cache().size(), ref.k_cache().size());
  double max_diff = 0;
  for (size_t i = 0; i < ref.k_cache().size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(dec.k_cache()[i]) - ref.k_cache()[i]));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(dec.v_cache()[i]) - ref.v_cache()[i]));
  }
  EXPECT_LT(max_diff, 1e-4);
}

TEST(DecodeModel, InterpreterMatchesReferenceAcrossBlockBoundaries) {
  RunAndCompare(Small(), 14);  // 14 tokens: four blocks of 4, the last partly filled
}

TEST(DecodeModel, InterpreterMatchesReferenceWithOneLayerAndOneHead) {
  Config c = Small();
  c.layers = 1;
  c.heads = 1;
  c.batch = 1;
  RunAndCompare(c, 9);
}

TEST(DecodeModel, TokensDependOnTheKvCache) {
  // Two batches that differ only in sequence 0's earlier tokens must differ in its later predictions:
  // attention really reads the cache through the block table.
  Config c = Small();
  c.batch = 1;
  InterpDecoder a, b;
  ASSERT_FALSE(a.Init(c, 42));
  ASSERT_FALSE(b.Init(c, 42));
  Loop la(c), lb(c);
  Scheduler sa(c), sb(c);
  std::vector<int32_t> ta = {5}, tb = {6}, na, nb;
  bool differs = false;
  for (int step = 0; step < 8; ++step) {
    std::string e;
    ASSERT_GT(sa.Advance(step, la.md.block_table.data(), la.md.seq_lens.data(), la.md.positions.data(),
                         la.md.slot_mapping.data(), &e),
              0);
    ASSERT_GT(sb.Advance(step, lb.md.block_table.data(), lb.md.seq_lens.data(), lb.md.positions.data(),
                         lb.md.slot_mapping.data(), &e),
              0);
    ASSERT_FALSE(a.Step(ta.data(), la.md.block_table.data(), la.md.seq_lens.data(), la.md.positions.data(),
                        la.md.slot_mapping.data(), &na));
    ASSERT_FALSE(b.Step(tb.data(), lb.md.block_table.data(), lb.md.seq_lens.data(), lb.md.positions.data(),
                        lb.md.slot_mapping.data(), &nb));
    // From step 1 on both read the same token: only the cache tells them apart.
    ta = step == 0 ? std::vector<int32_t>{9} : na;
    tb = step == 0 ? std::vector<int32_t>{9} : nb;
    if (step > 0 && na != nb) differs = true;
  }
  EXPECT_TRUE(differs);
}

TEST(DecodeModel, DataFilesAreTheGeneratorsOutput) {
  for (Attention a : {Attention::kGather, Attention::kKernel}) {
    const std::string name = a == Attention::kGather ? "decode_step.mlir" : "decode_step_kernel.mlir";
    std::ifstream f(std::string(NEURONMEM_SOURCE_ROOT) + "/data/decode/" + name, std::ios::binary);
    ASSERT_TRUE(f) << "data/decode/" << name << " is missing";
    std::stringstream ss;
    ss << f.rdbuf();
    Config c;
    c.attention = a;
    EXPECT_EQ(ss.str(), GenerateModule(c))
        << "regenerate: neuronmem-decode-gen --attention " << AttentionName(a) << " -o data/decode/" << name;
  }
}

TEST(DecodeModel, ManifestSeesPinnedHostMetadataAndDonatedCaches) {
  const std::string text = GenerateModule(Small());
  neuronmem_manifest_t* m = nullptr;
  neuronmem_status_t* s = neuronmem_manifest_load_text(text.data(), text.size(), nullptr, &m);
  ASSERT_EQ(s, nullptr) << neuronmem_status_message(s).data;
  const std::vector<ArgSpec> specs = Arguments(Small());
  for (size_t i = 0; i < specs.size(); ++i) {
    neuronmem_manifest_value_t v{};
    v.struct_size = sizeof v;
    ASSERT_EQ(neuronmem_manifest_argument(m, i, &v), nullptr);
    EXPECT_EQ(v.memory_kind, specs[i].pinned_host ? NEURONMEM_MEMORY_KIND_PINNED_HOST : NEURONMEM_MEMORY_KIND_DEVICE)
        << specs[i].name;
    EXPECT_TRUE(v.kind_explicit) << specs[i].name;
    EXPECT_EQ(v.buffer_donor, specs[i].donated) << specs[i].name;
    EXPECT_EQ(v.aliasing_output, i == kKCache ? 1 : i == kVCache ? 2 : -1) << specs[i].name;
  }
  neuronmem_manifest_destroy(m);
}

TEST(DecodeModel, MetadataChecksNameTheProblem) {
  const Config c = Small();
  Loop loop(c);
  Scheduler sched(c);
  std::string e;
  for (int step = 0; step < 6; ++step)
    ASSERT_GT(sched.Advance(step, loop.md.block_table.data(), loop.md.seq_lens.data(), loop.md.positions.data(),
                            loop.md.slot_mapping.data(), &e),
              0);
  auto check = [&](Metadata md) {
    return CheckMetadata(c, md.block_table.data(), md.seq_lens.data(), md.positions.data(), md.slot_mapping.data());
  };
  EXPECT_EQ(check(loop.md), "");
  Metadata bad = loop.md;
  bad.block_table[static_cast<size_t>(c.max_blocks) + 1] = c.num_blocks;  // sequence 1, its second block
  EXPECT_NE(check(bad).find("sequence 1: block table entry 1 is block 16, past the KV cache's 16 blocks"),
            std::string::npos)
      << check(bad);
  bad = loop.md;
  bad.seq_lens[2] = c.max_tokens() + 1;
  EXPECT_NE(check(bad).find("sequence 2: length 17 is outside 1..16"), std::string::npos) << check(bad);
  bad = loop.md;
  bad.slot_mapping[0] += 1;
  EXPECT_NE(check(bad).find("sequence 0: slot"), std::string::npos) << check(bad);
}

TEST(DecodeModel, SchedulerRefusesSequencesLongerThanTheTableAndAFullCache) {
  Config c = Small();
  Loop loop(c);
  Scheduler sched(c);
  std::string e;
  for (int step = 0; step < c.max_tokens(); ++step)
    ASSERT_GT(sched.Advance(step, loop.md.block_table.data(), loop.md.seq_lens.data(), loop.md.positions.data(),
                            loop.md.slot_mapping.data(), &e),
              0)
        << e;
  EXPECT_EQ(sched.Advance(c.max_tokens(), loop.md.block_table.data(), loop.md.seq_lens.data(), loop.md.positions.data(),
                          loop.md.slot_mapping.data(), &e),
            -1);
  EXPECT_NE(e.find("longer than max_blocks 4 * block_size 4 = 16"), std::string::npos) << e;
  c.num_blocks = 5;  // 3 sequences need 6 blocks by step 4
  Loop small(c);
  Scheduler tight(c);
  int64_t r = 0;
  for (int step = 0; step <= 4 && r >= 0; ++step)
    r = tight.Advance(step, small.md.block_table.data(), small.md.seq_lens.data(), small.md.positions.data(),
                      small.md.slot_mapping.data(), &e);
  EXPECT_EQ(r, -1);
  EXPECT_NE(e.find("blocks are all in use"), std::string::npos) << e;
}

TEST(DecodeModel, ConfigProblemsAreNamed) {
  Config c;
  c.hidden = 66;
  EXPECT_EQ(ValidateConfig(c), "hidden 66 is not a multiple of heads 4");
  std::string e;
  EXPECT_TRUE(ParseConfigFlag("--batch", "0", &c, &e));
  EXPECT_NE(e.find("--batch needs an integer"), std::string::npos);
  EXPECT_FALSE(ParseConfigFlag("--steps", "3", &c, &e));
}

}  // namespace
}  // namespace neuronmem_decode
