// The decode step through the public C API, as neuronmem-decode runs it (tools/decode's Runner). The kernel
// variant (Attention::kKernel): the registered paged-attention kernel gives the C++ reference's tokens and the
// gather variant's, reads its metadata in place in pinned_host with no implicit copy, and metadata the KV cache
// cannot serve fails the execution with a status that names the sequence (the gather variant would clamp the
// block id). Weights loaded from a file through neuronmem_buffer_load_file give the seed's tokens.
#include <neuronmem/neuronmem.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "decode_model.h"
#include "decode_runner.h"
#include "paged_attention.h"
#include "small_config.h"

namespace neuronmem_decode {
namespace {

Config Small(Attention attention) { return SmallConfig(attention); }

class DecodeRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    neuronmem_client_options_t co{};
    co.struct_size = sizeof co;
    co.num_cores = 1;
    co.device_bytes_per_core = 64ull << 20;
    co.pinned_host_bytes = 32ull << 20;  // the smallest arena a client takes
    ASSERT_EQ(StatusText(neuronmem_client_create(&co, &client_)), "");
    ASSERT_EQ(StatusText(RegisterPagedAttention(client_, &stats_)), "");
  }
  void TearDown() override { neuronmem_status_free(neuronmem_client_destroy(client_)); }

  // Runs `steps` steps of `c`, each checked against its own C++ reference; returns every step's tokens.
  std::vector<std::vector<int32_t>> Decode(const Config& c, int steps, StepStats* moved,
                                           const std::string& weights_file = "") {
    Runner runner;
    std::string e = runner.Init(client_, c, GenerateModule(c), "decode_step.mlir", 42, weights_file);
    EXPECT_EQ(e, "");
    if (!e.empty()) return {};
    if (!weights_file.empty()) {
      EXPECT_EQ(runner.file_bytes_loaded(), WeightsFileBytes(c));
    }
    Scheduler sched(c);
    Reference ref(c, runner.weights());
    Metadata md;
    std::vector<int32_t> tokens = FirstTokens(c), next, ref_next;
    std::vector<float> logits;
    std::vector<std::vector<int32_t>> out;
    int exact = 0;
    for (int step = 0; step < steps; ++step) {
      int32_t* m[4] = {runner.metadata(0), runner.metadata(1), runner.metadata(2), runner.metadata(3)};
      EXPECT_GT(sched.Advance(step, m[0], m[1], m[2], m[3], &e), 0) << e;
      e = runner.Step(nullptr, &next, moved);
      EXPECT_EQ(e, "") << AttentionName(c.attention);
      if (!e.empty()) return out;
      md.block_table.assign(m[0], m[0] + c.batch * c.max_blocks);
      md.seq_lens.assign(m[1], m[1] + c.batch);
      md.positions.assign(m[2], m[2] + c.batch);
      md.slot_mapping.assign(m[3], m[3] + c.batch);
      ref.Step(tokens.data(), md, &ref_next, &logits);
      for (int b = 0; b < c.batch; ++b) {
        EXPECT_TRUE(AcceptableToken(&logits[static_cast<size_t>(b) * c.vocab], c.vocab, next[b]))
            << AttentionName(c.attention) << " step " << step << " sequence " << b << ": " << next[b] << ", reference "
            << ref_next[b];
        exact += next[b] == ref_next[b];
      }
      out.push_back(next);
      tokens = next;
    }
    EXPECT_GE(exact, steps * c.batch * 9 / 10);
    return out;
  }

  // Runs one step of the kernel variant after `corrupt` edits step 5's metadata; returns the step's error.
  template <typename Corrupt>
  std::string FailingStep(Corrupt corrupt) {
    const Config c = Small(Attention::kKernel);
    Runner runner;
    std::string e = runner.Init(client_, c, GenerateModule(c), "decode_step.mlir", 42);
    EXPECT_EQ(e, "");
    Scheduler sched(c);
    int32_t* m[4] = {runner.metadata(0), runner.metadata(1), runner.metadata(2), runner.metadata(3)};
    for (int step = 0; step <= 5; ++step) EXPECT_GT(sched.Advance(step, m[0], m[1], m[2], m[3], &e), 0) << e;
    corrupt(c, m);
    return runner.Step(nullptr, nullptr, nullptr);
  }

  neuronmem_client_t* client_ = nullptr;
  PagedAttentionStats stats_;
};

TEST_F(DecodeRunner, GeneratesTheNkiLaunch) {
  const std::string text = GenerateModule(Small(Attention::kKernel));
  // base64 of {"kernel_version":1,"func_name":"paged_attention","grid":[3],"has_collectives":false}
  EXPECT_NE(text.find("stablehlo.custom_call @AwsNeuronCustomNativeKernel(%"), std::string::npos);
  EXPECT_NE(text.find("eyJrZXJuZWxfdmVyc2lvbiI6MSwiZnVuY19uYW1lIjoicGFnZWRfYXR0ZW50aW9uIiwiZ3JpZCI6WzNdLCJoYXNfY29sbGVj"
                      "dGl2ZXMiOmZhbHNlfQ=="),
            std::string::npos);
  EXPECT_EQ(text.find("stablehlo.gather\"(%arg5"), std::string::npos);  // no gather of the caches
}

TEST_F(DecodeRunner, MatchesTheReferenceAndTheGatherVariantReadingMetadataInPlace) {
  const int steps = 14;  // four blocks of 4, the last partly filled
  StepStats kernel_moved, gather_moved;
  const auto kernel = Decode(Small(Attention::kKernel), steps, &kernel_moved);
  const auto gather = Decode(Small(Attention::kGather), steps, &gather_moved);
  EXPECT_EQ(kernel, gather);
  EXPECT_EQ(kernel_moved.implicit_copies, 0u);
  EXPECT_EQ(gather_moved.implicit_copies, 0u);
  const Config c = Small(Attention::kKernel);
  const uint64_t calls = static_cast<uint64_t>(steps) * c.batch * c.layers;  // one grid point per sequence
  EXPECT_EQ(stats_.calls.load(), calls);
  EXPECT_EQ(stats_.metadata_pinned.load(), calls);
  EXPECT_EQ(stats_.cache_in_device.load(), calls);
  EXPECT_EQ(stats_.errors.load(), 0u);
}

// The donated KV caches are updated where they lie (docs/executor.md, "In-place updates"): the step's workspace
// holds neither cache; the same step without donation plans both.
TEST_F(DecodeRunner, TheDonatedCachesNeedNoWorkspace) {
  for (Attention attention : {Attention::kGather, Attention::kKernel}) {
    const Config c = Small(attention);
    const std::string donating = GenerateModule(c);
    std::string plain = donating;
    for (const char* donation : {", jax.buffer_donor = true, tf.aliasing_output = 1 : i32",
                                 ", jax.buffer_donor = true, tf.aliasing_output = 2 : i32"}) {
      const size_t at = plain.find(donation);
      ASSERT_NE(at, std::string::npos) << donation;
      plain.erase(at, std::string(donation).size());
    }
    uint64_t peak[2] = {};
    for (int i = 0; i < 2; ++i) {
      neuronmem_compile_options_t o{};
      o.struct_size = sizeof o;
      neuronmem_executable_t* e = nullptr;
      const std::string& text = i == 0 ? donating : plain;
      ASSERT_EQ(StatusText(neuronmem_executable_compile_text(client_, text.data(), text.size(), &o, &e)), "");
      neuronmem_executable_properties_t p{};
      p.struct_size = sizeof p;
      ASSERT_EQ(StatusText(neuronmem_executable_properties(e, &p)), "");
      peak[i] = p.peak_device_bytes;
      neuronmem_executable_destroy(e);
    }
    const uint64_t cache_bytes = Arguments(c)[kKCache].bytes();
    EXPECT_GE(peak[1], peak[0] + 2 * cache_bytes) << AttentionName(attention);
  }
}

TEST_F(DecodeRunner, ABlockIdPastTheCacheFailsTheExecution) {
  const std::string e = FailingStep([](const Config& c, int32_t* const* m) {
    m[0][static_cast<size_t>(c.max_blocks) * 1 + 1] = c.num_blocks;  // sequence 1, its second block
  });
  EXPECT_NE(e.find("OUT_OF_RANGE"), std::string::npos) << e;
  EXPECT_NE(e.find("kernel 'paged_attention' at grid point [1]"), std::string::npos) << e;
  EXPECT_NE(e.find("sequence 1: block table entry 1 is block 16, past the KV cache's 16 blocks"), std::string::npos)
      << e;
  EXPECT_GE(stats_.errors.load(), 1u);
}

TEST_F(DecodeRunner, ASequenceLongerThanTheTableFailsTheExecution) {
  const std::string e = FailingStep([](const Config& c, int32_t* const* m) {
    m[1][2] = c.max_tokens() + 1;
    m[2][2] = c.max_tokens();
  });
  EXPECT_NE(e.find("OUT_OF_RANGE"), std::string::npos) << e;
  EXPECT_NE(e.find("sequence 2: length 17 is outside 1..16 (max_blocks 4 * block_size 4)"), std::string::npos) << e;
}

TEST_F(DecodeRunner, APositionThatIsNotTheLastTokenFailsTheExecution) {
  const std::string e = FailingStep([](const Config&, int32_t* const* m) { m[2][0] += 1; });
  EXPECT_NE(e.find("INVALID_ARGUMENT"), std::string::npos) << e;
  EXPECT_NE(e.find("sequence 0: position 6 is not seq_len - 1 = 5"), std::string::npos) << e;
}

// A file in the test's temporary directory, removed at the end.
struct TempFile {
  std::string path;
  explicit TempFile(const char* name) {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/" + name + "." + std::to_string(getpid());
  }
  ~TempFile() { std::remove(path.c_str()); }
};

TEST_F(DecodeRunner, WeightsLoadedFromAFileGiveTheSeedsTokens) {
  const Config c = Small(Attention::kKernel);
  TempFile file("decode_weights.bin");
  ASSERT_EQ(WriteWeightsFile(c, 42, file.path), "");
  StepStats from_file, from_seed;
  const auto loaded = Decode(c, 6, &from_file, file.path);
  const auto generated = Decode(c, 6, &from_seed);
  ASSERT_EQ(loaded.size(), 6u);
  EXPECT_EQ(loaded, generated);
  EXPECT_EQ(from_file.implicit_copies, 0u);
}

TEST_F(DecodeRunner, AWeightsFileOfAnotherSizeIsRefused) {
  Config c = Small(Attention::kGather);
  TempFile file("decode_weights_small.bin");
  Config other = c;
  other.layers = 1;
  ASSERT_EQ(WriteWeightsFile(other, 42, file.path), "");
  Runner runner;
  std::string e = runner.Init(client_, c, GenerateModule(c), "decode_step.mlir", 42, file.path);
  EXPECT_NE(e.find("has " + std::to_string(WeightsFileBytes(other)) + " bytes; the size flags need " +
                   std::to_string(WeightsFileBytes(c))),
            std::string::npos)
      << e;
  Runner missing;
  e = missing.Init(client_, c, GenerateModule(c), "decode_step.mlir", 42, file.path + ".none");
  EXPECT_NE(e.find("cannot read the weights file"), std::string::npos) << e;
}

}  // namespace
}  // namespace neuronmem_decode
