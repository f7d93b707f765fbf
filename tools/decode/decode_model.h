// The decode demo's model, written once and used three ways: as StableHLO text (GenerateModule: what the
// runtime compiles), as a plain C++ reference of the same computation (Reference: what the tokens are checked
// against), and as the host-side bookkeeping a serving loop does between steps (Scheduler: block allocation
// and the per-step metadata rows, updated in place). Pure C++: no libneuronmem types, so the tool (public C
// API only), the tests (interpreter) and the benchmarks all share it.
//
// One decode step, for a batch of sequences each at its own position:
//   x      = embed[token] + pos_embed[position]
//   layer: n = rms(x); q,k,v = n*Wq, n*Wk, n*Wv; k,v written into the paged KV cache at the slot;
//          attention of q over the sequence's first seq_len tokens, read through the block table
//          (paged attention: plain StableHLO gather, or a registered kernel, see Attention);
//          x += attn*Wo; x += silu(rms(x)*W1)*W2
//   next   = argmax(rms(x) * lm_head)  (ties: the smaller token id)
// KV cache layout: [layers, num_blocks, block_size, hidden]; slot = block * block_size + offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace neuronmem_decode {

// How the step's paged attention reads the KV cache through the block table.
enum class Attention {
  // Plain StableHLO: gather the sequence's blocks ([B, max_blocks, block_size, hidden]), mask by seq_len.
  kGather,
  // A custom call to an NKI kernel (AwsNeuronCustomNativeKernel, func_name kPagedAttentionKernel, grid
  // [batch]) that reads the block table, sequence lengths and positions where they lie (pinned_host) and
  // the KV cache in device; tools/decode/paged_attention.h is the kernel the tool registers.
  kKernel,
};
constexpr char kPagedAttentionKernel[] = "paged_attention";
// "gather" / "kernel"; ParseAttention returns false for any other text.
const char* AttentionName(Attention a);
bool ParseAttention(const std::string& text, Attention* out);

struct Config {
  int batch = 4;        // sequences decoded together (block table rows)
  int max_blocks = 16;  // block table columns: a sequence holds at most max_blocks * block_size tokens
  int block_size = 16;  // tokens per KV cache block
  int num_blocks = 64;  // KV cache blocks (shared by all sequences)
  int layers = 2;
  int hidden = 64;
  int heads = 4;  // hidden / heads = head dim
  int ffn = 128;
  int vocab = 256;
  // Where the module declares the metadata: pinned_host (read in place), or device for the baseline of a
  // runtime without memory kinds (the host copies it there before every step).
  bool metadata_in_device = false;
  Attention attention = Attention::kGather;
  // Tensor parallelism (neuronmem-decode --processes): the step of rank `rank` of `tp` processes (replica `rank`
  // of the module's tp replicas) holds heads [rank * heads / tp, (rank + 1) * heads / tp): those columns of Wq,
  // Wk, Wv, those rows of Wo and those columns of the KV caches, and ffn / tp columns of W1 (rows of W2); an
  // all_reduce over the tp replicas sums the partial outputs of Wo and of W2. Embeddings and lm_head are whole.
  int tp = 1;
  int rank = 0;

  int head_dim() const { return hidden / heads; }
  int max_tokens() const { return max_blocks * block_size; }  // rows of the position table
  int local_hidden() const { return hidden / tp; }            // this rank's columns of q, k, v and the caches
  int local_ffn() const { return ffn / tp; }
};

// Reads the value of one of the size flags (--batch, --max-blocks, --block-size, --num-blocks, --layers,
// --hidden, --heads, --ffn, --vocab) into `c`. Returns false if `flag` is none of them; sets *error for a
// value that is not a positive integer.
bool ParseConfigFlag(const std::string& flag, const char* value, Config* c, std::string* error);
// The help text of those flags, one per line, with the defaults of `c`.
// num_blocks_default: the text after "default" for --num-blocks (nullptr: c.num_blocks); neuronmem-decode sizes the
// cache from the batch unless --num-blocks is given.
std::string ConfigFlagsHelp(const Config& c, const char* num_blocks_default = nullptr);

// Empty if the configuration is usable, else what is wrong ("hidden 65 is not a multiple of heads 4").
std::string ValidateConfig(const Config& c);

// The entry function's arguments, in order.
enum Arg : int {
  kTokens = 0,       // [batch] s32, device: this step's input tokens
  kBlockTable = 1,   // [batch, max_blocks] s32, pinned_host
  kSeqLens = 2,      // [batch] s32, pinned_host: tokens of each sequence including this step's
  kPositions = 3,    // [batch] s32, pinned_host: this step's position (seq_len - 1)
  kSlotMapping = 4,  // [batch] s32, pinned_host: KV cache slot of this step's token
  kKCache = 5,       // [layers, num_blocks, block_size, hidden] f32, device, donated (result 1)
  kVCache = 6,       // same, result 2
  kEmbed = 7,        // [vocab, hidden]
  kPosEmbed = 8,     // [max_tokens, hidden]
  kFirstLayer = 9,   // then per layer: Wq, Wk, Wv, Wo [hidden, hidden], W1 [hidden, ffn], W2 [ffn, hidden]
};
constexpr int kWeightsPerLayer = 6;
// Results: 0 next tokens [batch] s32 (device), 1 K cache, 2 V cache (device).

struct ArgSpec {
  std::string name;  // "block_table", "layer0.wq", ...
  std::vector<int64_t> dims;
  bool is_s32 = false;  // else f32
  bool pinned_host = false;
  bool donated = false;
  size_t bytes() const;
};
std::vector<ArgSpec> Arguments(const Config& c);

// The decode step as StableHLO text (module @decode_step, entry @main).
std::string GenerateModule(const Config& c);

// Weights from a fixed seed, one tensor per weight argument (kEmbed onwards, in argument order). With tp > 1,
// rank's shares of the weights of the whole model (tp 1) from the same seed.
std::vector<std::vector<float>> MakeWeights(const Config& c, uint64_t seed);

// The weights file of neuronmem-decode --weights: the weight tensors (kEmbed onwards, in argument order) as
// raw little-endian f32, back to back, no header; its size is exactly WeightsFileBytes(c).
uint64_t WeightsFileBytes(const Config& c);
// Writes MakeWeights(c, seed) to `path`; "" or the error.
std::string WriteWeightsFile(const Config& c, uint64_t seed, const std::string& path);
// Reads the weights of `c` from `path` into *out (one tensor per weight argument); "" or the error (a file of
// another size names both sizes).
std::string ReadWeightsFile(const Config& c, const std::string& path, std::vector<std::vector<float>>* out);

// The metadata of one step, dense row-major as the module reads it.
struct Metadata {
  std::vector<int32_t> block_table;  // batch * max_blocks
  std::vector<int32_t> seq_lens, positions, slot_mapping;
};

// Empty if the metadata is what the step may read: every sequence at most max_blocks * block_size tokens,
// every block id of a live table entry inside the KV cache, positions/slots consistent with the table.
std::string CheckMetadata(const Config& c, const int32_t* block_table, const int32_t* seq_lens,
                          const int32_t* positions, const int32_t* slot_mapping);

// Host bookkeeping of a decode loop: every sequence starts at position 0; each step it gets one token, and
// a new KV block (from a shuffled free list) when it crosses a block boundary. Writes only the entries that
// change into caller-owned metadata arrays (for example pinned-host memory the device reads in place).
class Scheduler {
 public:
  explicit Scheduler(const Config& c, uint64_t seed = 7);
  // Advances every sequence to position `step` (steps must come in order 0, 1, 2, ...). Writes the changed
  // entries in place; returns the bytes written, or -1 with *error set (no block left, sequence too long).
  int64_t Advance(int step, int32_t* block_table, int32_t* seq_lens, int32_t* positions, int32_t* slot_mapping,
                  std::string* error);

 private:
  Config c_;
  std::vector<int32_t> free_blocks_;
  // Each sequence's current block, kept on the host: the slot mapping is computed from it, never read back from
  // the block table (one strided read per sequence, a cache miss each after a step).
  std::vector<int32_t> current_block_;
};

// The first input tokens of the loop (distinct per sequence).
std::vector<int32_t> FirstTokens(const Config& c);

// The plain C++ reference: same model, same weights, its own KV cache (zero at start).
class Reference {
 public:
  Reference(const Config& c, const std::vector<std::vector<float>>& weights);
  // One step: next tokens (argmax) and the logits they came from ([batch, vocab]).
  void Step(const int32_t* tokens, const Metadata& md, std::vector<int32_t>* next, std::vector<float>* logits);
  const std::vector<float>& k_cache() const { return k_; }
  const std::vector<float>& v_cache() const { return v_; }

 private:
  Config c_;
  const std::vector<std::vector<float>>& w_;
  std::vector<float> k_, v_;
};

// Whether `token` is an acceptable greedy choice for a row of reference logits: the reference's argmax, or
// a token whose logit is within `tolerance` (relative to the logits' scale) of the maximum (a near tie the
// two implementations' rounding may break differently).
bool AcceptableToken(const float* logits, int vocab, int32_t token, float tolerance = 1e-4f);

}  // namespace neuronmem_decode
