#include "decode_model.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace neuronmem_decode {
namespace {

constexpr float kRmsEpsilon = 1e-5f;
constexpr float kMaskedScore = -1e30f;

std::string Dims(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += std::to_string(d) + "x";
  return s;
}
std::string F32(const std::vector<int64_t>& dims) { return "tensor<" + Dims(dims) + "f32>"; }
std::string S32(const std::vector<int64_t>& dims) { return "tensor<" + Dims(dims) + "i32>"; }

// A float literal that reads back to the same float.
std::string FloatText(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9e", static_cast<double>(f));
  return buf;
}

// Standard base64 (RFC 4648, padded): how NKI launches carry their JSON config in backend_config.
std::string Base64(const std::string& in) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    const size_t n = std::min<size_t>(3, in.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? static_cast<uint8_t>(in[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// Emits one function body: fresh SSA names, one op per line.
class Emitter {
 public:
  std::string Op(const std::string& text) {
    std::string name = "%" + std::to_string(next_++);
    out_ << "    " << name << " = " << text << "\n";
    return name;
  }
  void Line(const std::string& text) { out_ << "    " << text << "\n"; }
  std::string Fresh() { return "%r" + std::to_string(next_++); }
  std::string Take() { return out_.str(); }

 private:
  std::ostringstream out_;
  int next_ = 0;
};

struct Builder {
  const Config& c;
  Emitter e;
  int64_t B, H, NH, D, T;

  explicit Builder(const Config& config)
      : c(config), B(c.batch), H(c.hidden), NH(c.heads), D(c.head_dim()), T(c.max_tokens()) {}

  std::string ConstF(float v, const std::vector<int64_t>& dims) {
    return e.Op("stablehlo.constant dense<" + FloatText(v) + "> : " + F32(dims));
  }
  std::string ConstS(int32_t v, const std::vector<int64_t>& dims) {
    return e.Op("stablehlo.constant dense<" + std::to_string(v) + "> : " + S32(dims));
  }
  std::string Binary(const char* op, const std::string& a, const std::string& b, const std::string& type) {
    return e.Op(std::string("stablehlo.") + op + " " + a + ", " + b + " : " + type);
  }
  std::string Unary(const char* op, const std::string& a, const std::string& type) {
    return e.Op(std::string("stablehlo.") + op + " " + a + " : " + type);
  }
  std::string Reshape(const std::string& a, const std::string& from, const std::string& to) {
    return e.Op("stablehlo.reshape " + a + " : (" + from + ") -> " + to);
  }
  std::string Broadcast(const std::string& a, const std::string& dims, const std::string& from, const std::string& to) {
    return e.Op("stablehlo.broadcast_in_dim " + a + ", dims = [" + dims + "] : (" + from + ") -> " + to);
  }
  std::string Reduce(const std::string& a, const std::string& init, const char* fn, int dim, const std::string& from,
                     const std::string& to) {
    return e.Op("stablehlo.reduce(" + a + " init: " + init + ") applies stablehlo." + fn + " across dimensions = [" +
                std::to_string(dim) + "] : (" + from + ", tensor<f32>) -> " + to);
  }
  // [rows, k] x [k, n] -> [rows, n]
  std::string MatMul(const std::string& a, const std::string& w, int64_t rows, int64_t k, int64_t n) {
    return e.Op("stablehlo.dot_general " + a + ", " + w + ", contracting_dims = [1] x [0] : (" + F32({rows, k}) + ", " +
                F32({k, n}) + ") -> " + F32({rows, n}));
  }
  // x * rsqrt(mean(x^2) + eps) over the last dim of [B, H].
  std::string Rms(const std::string& x, const std::string& zero) {
    const std::string bh = F32({B, H}), b = F32({B});
    std::string sq = Binary("multiply", x, x, bh);
    std::string ss = Reduce(sq, zero, "add", 1, bh, b);
    std::string ms = Binary("multiply", ss, ConstF(1.0f / static_cast<float>(H), {B}), b);
    std::string me = Binary("add", ms, ConstF(kRmsEpsilon, {B}), b);
    std::string r = Unary("rsqrt", me, b);
    return Binary("multiply", x, Broadcast(r, "0", b, bh), bh);
  }
  // Embedding-style lookup: rows `indices` ([B]) of table [rows, H] -> [B, H].
  std::string Lookup(const std::string& table, const std::string& indices, int64_t rows) {
    return e.Op("\"stablehlo.gather\"(" + table + ", " + indices +
                ") <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], "
                "start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, " +
                std::to_string(H) + ">}> : (" + F32({rows, H}) + ", " + S32({B}) + ") -> " + F32({B, H}));
  }
};

}  // namespace

const char* AttentionName(Attention a) { return a == Attention::kKernel ? "kernel" : "gather"; }

bool ParseAttention(const std::string& text, Attention* out) {
  for (Attention a : {Attention::kGather, Attention::kKernel}) {
    if (text != AttentionName(a)) continue;
    *out = a;
    return true;
  }
  return false;
}

size_t ArgSpec::bytes() const {
  size_t n = 4;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

namespace {
struct SizeFlag {
  const char* flag;
  int Config::*field;
  const char* help;
};
constexpr SizeFlag kSizeFlags[] = {
    {"--batch", &Config::batch, "sequences decoded together (block table rows)"},
    {"--max-blocks", &Config::max_blocks, "block table columns (a sequence holds max_blocks * block_size tokens)"},
    {"--block-size", &Config::block_size, "tokens per KV cache block"},
    {"--num-blocks", &Config::num_blocks, "KV cache blocks shared by all sequences"},
    {"--layers", &Config::layers, "transformer layers"},
    {"--hidden", &Config::hidden, "hidden size"},
    {"--heads", &Config::heads, "attention heads (hidden / heads = head dim)"},
    {"--ffn", &Config::ffn, "MLP inner size"},
    {"--vocab", &Config::vocab, "vocabulary size"},
};
}  // namespace

bool ParseConfigFlag(const std::string& flag, const char* value, Config* c, std::string* error) {
  for (const SizeFlag& f : kSizeFlags) {
    if (flag != f.flag) continue;
    char* end = nullptr;
    errno = 0;
    const long v = value ? std::strtol(value, &end, 10) : 0;
    if (!value || *value == '\0' || *end != '\0' || errno != 0 || v < 1 || v > (1 << 24)) {
      *error = flag + " needs an integer in 1.." + std::to_string(1 << 24) + " (got '" + (value ? value : "") + "')";
    } else {
      c->*f.field = static_cast<int>(v);
    }
    return true;
  }
  return false;
}

std::string ConfigFlagsHelp(const Config& c, const char* num_blocks_default) {
  std::string s;
  for (const SizeFlag& f : kSizeFlags) {
    char line[160];
    if (f.field == &Config::num_blocks && num_blocks_default) {
      std::snprintf(line, sizeof line, "  %-14s N  %s (default %s)\n", f.flag, f.help, num_blocks_default);
    } else {
      std::snprintf(line, sizeof line, "  %-14s N  %s (default %d)\n", f.flag, f.help, c.*f.field);
    }
    s += line;
  }
  return s;
}

std::string ValidateConfig(const Config& c) {
  struct Field {
    const char* name;
    int value;
  };
  for (Field f : {Field{"batch", c.batch}, Field{"max_blocks", c.max_blocks}, Field{"block_size", c.block_size},
                  Field{"num_blocks", c.num_blocks}, Field{"layers", c.layers}, Field{"hidden", c.hidden},
                  Field{"heads", c.heads}, Field{"ffn", c.ffn}, Field{"vocab", c.vocab}}) {
    if (f.value < 1) return std::string(f.name) + " must be at least 1 (got " + std::to_string(f.value) + ")";
  }
  if (c.hidden % c.heads != 0)
    return "hidden " + std::to_string(c.hidden) + " is not a multiple of heads " + std::to_string(c.heads);
  if (c.tp < 1 || c.rank < 0 || c.rank >= c.tp) return "rank " + std::to_string(c.rank) + " of " + std::to_string(c.tp);
  if (c.heads % c.tp != 0 || c.ffn % c.tp != 0)
    return "heads " + std::to_string(c.heads) + " and ffn " + std::to_string(c.ffn) + " must be multiples of the " +
           std::to_string(c.tp) + " processes";
  if (c.tp > 1 && c.attention != Attention::kGather) return "the tensor-parallel step has gather attention only";
  const int64_t slots = static_cast<int64_t>(c.num_blocks) * c.block_size;
  const int64_t table = static_cast<int64_t>(c.batch) * c.max_blocks;
  if (slots > std::numeric_limits<int32_t>::max() || table > std::numeric_limits<int32_t>::max() ||
      static_cast<int64_t>(c.max_blocks) * c.block_size > std::numeric_limits<int32_t>::max())
    return "num_blocks * block_size and batch * max_blocks must fit in s32";
  return "";
}

std::vector<ArgSpec> Arguments(const Config& c) {
  const int64_t B = c.batch, H = c.hidden, HL = c.local_hidden(), FL = c.local_ffn();
  const std::vector<int64_t> cache = {c.layers, c.num_blocks, c.block_size, HL};
  std::vector<ArgSpec> a = {
      {"tokens", {B}, true, false, false},
      {"block_table", {B, c.max_blocks}, true, !c.metadata_in_device, false},
      {"seq_lens", {B}, true, !c.metadata_in_device, false},
      {"positions", {B}, true, !c.metadata_in_device, false},
      {"slot_mapping", {B}, true, !c.metadata_in_device, false},
      {"k_cache", cache, false, false, true},
      {"v_cache", cache, false, false, true},
      {"embed", {c.vocab, H}, false, false, false},
      {"pos_embed", {c.max_tokens(), H}, false, false, false},
  };
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    for (const char* w : {"wq", "wk", "wv"}) a.push_back({p + w, {H, HL}, false, false, false});
    a.push_back({p + "wo", {HL, H}, false, false, false});
    a.push_back({p + "w1", {H, FL}, false, false, false});
    a.push_back({p + "w2", {FL, H}, false, false, false});
  }
  a.push_back({"lm_head", {H, c.vocab}, false, false, false});
  return a;
}

std::string GenerateModule(const Config& c) {
  const std::vector<ArgSpec> args = Arguments(c);
  Builder b(c);
  Emitter& e = b.e;
  // This rank's heads (all of them without tensor parallelism): NH of D columns, HL in all.
  const int64_t B = b.B, H = b.H, NH = b.NH / c.tp, D = b.D, T = b.T, MB = c.max_blocks, BS = c.block_size;
  const int64_t HL = c.local_hidden(), FL = c.local_ffn();
  const std::vector<int64_t> cache_dims = {c.layers, c.num_blocks, BS, HL};
  const std::string bh = F32({B, H}), bhl = F32({B, HL}), cache = F32(cache_dims), scores = F32({B, NH, T}),
                    bn = F32({B, NH});
  // The sum of every rank's partial [B, H] (tensor parallelism), else the value itself.
  auto sum_ranks = [&](const std::string& v) {
    if (c.tp == 1) return v;
    std::string group;
    for (int r = 0; r < c.tp; ++r) group += (r ? ", " : "") + std::to_string(r);
    const std::string a0 = b.e.Fresh(), a1 = b.e.Fresh(), sum = b.e.Fresh();
    return b.e.Op("\"stablehlo.all_reduce\"(" + v + ") ({\n    ^bb0(" + a0 + ": tensor<f32>, " + a1 +
                  ": tensor<f32>):\n      " + sum + " = stablehlo.add " + a0 + ", " + a1 +
                  " : tensor<f32>\n      stablehlo.return " + sum +
                  " : tensor<f32>\n    }) {replica_groups = dense<[[" + group + "]]> : tensor<1x" +
                  std::to_string(c.tp) + "xi64>} : (" + bh + ") -> " + bh);
  };
  auto arg = [](int i) { return "%arg" + std::to_string(i); };

  std::ostringstream s;
  s << "// The decode step of neuronmem-decode (tools/decode/decode_model.h), generated by neuronmem-decode-gen:\n";
  s << "// batch " << c.batch << ", max_blocks " << c.max_blocks << ", block_size " << c.block_size << ", num_blocks "
    << c.num_blocks << ", layers " << c.layers << ", hidden " << c.hidden << ", heads " << c.heads << ", ffn " << c.ffn
    << ", vocab " << c.vocab << ".\n";
  s << (c.metadata_in_device ? "// Metadata (block table, sequence lengths, positions, slot mapping) in device (copied "
                               "there per step);\n"
                             : "// Metadata (block table, sequence lengths, positions, slot mapping) is read where it "
                               "lies in pinned_host;\n");
  s << (c.attention == Attention::kGather
            ? "// the KV caches are donated and updated in place at the slots; paged attention is a plain gather.\n"
            : "// the KV caches are donated and updated in place at the slots; paged attention is the NKI kernel\n"
              "// '" +
                  std::string(kPagedAttentionKernel) +
                  "' (AwsNeuronCustomNativeKernel, one grid point per sequence), which reads the block table,\n"
                  "// sequence lengths and positions where they lie.\n");
  if (c.tp > 1)
    s << "// Tensor-parallel rank " << c.rank << " of " << c.tp << ": heads " << c.rank * NH << ".."
      << (c.rank + 1) * NH - 1 << ", ffn columns " << c.rank * FL << ".." << (c.rank + 1) * FL - 1
      << "; all_reduce after Wo and W2.\n";
  s << "module @decode_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = " << c.tp << " : i32} {\n";
  s << "  func.func public @main(";
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& a = args[i];
    s << (i ? ",\n      " : "") << arg(static_cast<int>(i)) << ": " << (a.is_s32 ? S32(a.dims) : F32(a.dims));
    s << " {mhlo.memory_kind = \"" << (a.pinned_host ? "pinned_host" : "device") << "\"";
    if (a.donated) s << ", jax.buffer_donor = true, tf.aliasing_output = " << (i == kKCache ? 1 : 2) << " : i32";
    s << "} loc(\"" << a.name << "\")";
  }
  s << ")\n      -> (" << S32({B}) << " {jax.result_info = \"next_tokens\", mhlo.memory_kind = \"device\"}, " << cache
    << " {jax.result_info = \"k_cache\", mhlo.memory_kind = \"device\"}, " << cache
    << " {jax.result_info = \"v_cache\", mhlo.memory_kind = \"device\"}) {\n";

  const std::string zero = b.ConstF(0.0f, {});
  const std::string ninf = e.Op("stablehlo.constant dense<0xFF800000> : tensor<f32>");
  // Embedding of the tokens plus the position embedding.
  // One op per statement: the order of evaluation of function arguments differs between compilers, and the text
  // (the SSA numbering) must not.
  const std::string pos = b.Lookup(arg(kPosEmbed), arg(kPositions), T);
  const std::string tok = b.Lookup(arg(kEmbed), arg(kTokens), c.vocab);
  std::string x = b.Binary("add", tok, pos, bh);
  const bool gather = c.attention == Attention::kGather;
  // Attention mask from the sequence lengths: key t is visible when t < seq_len (the gather variant).
  std::string visible, masked, scale, table3;
  if (gather) {
    const std::string iota = e.Op("stablehlo.iota dim = 2 : " + S32({B, NH, T}));
    const std::string lens = b.Broadcast(arg(kSeqLens), "0", S32({B}), S32({B, NH, T}));
    visible = e.Op("stablehlo.compare  LT, " + iota + ", " + lens + ",  SIGNED : (" + S32({B, NH, T}) + ", " +
                   S32({B, NH, T}) + ") -> tensor<" + Dims({B, NH, T}) + "i1>");
    masked = b.ConstF(kMaskedScore, {B, NH, T});
    scale = b.ConstF(1.0f / std::sqrt(static_cast<float>(D)), {B, NH, T});
  }
  // The slot's block and offset, and the block table as [B, MB, 1] for the gather indices.
  const std::string bs_const = b.ConstS(static_cast<int32_t>(BS), {B});
  const std::string slot_block = b.Binary("divide", arg(kSlotMapping), bs_const, S32({B}));
  const std::string slot_offset = b.Binary("remainder", arg(kSlotMapping), bs_const, S32({B}));
  const std::string slot_block2 = b.Reshape(slot_block, S32({B}), S32({B, 1}));
  const std::string slot_offset2 = b.Reshape(slot_offset, S32({B}), S32({B, 1}));
  if (gather) table3 = b.Reshape(arg(kBlockTable), S32({B, MB}), S32({B, MB, 1}));

  // The kernel variant's launch, as Neuron's frontends write it: base64 of the NKI JSON config.
  const std::string nki_config =
      gather ? ""
             : Base64("{\"kernel_version\":1,\"func_name\":\"" + std::string(kPagedAttentionKernel) + "\",\"grid\":[" +
                      std::to_string(B) + "],\"has_collectives\":false}");
  std::string k_cache = arg(kKCache), v_cache = arg(kVCache);
  for (int l = 0; l < c.layers; ++l) {
    const int w = kFirstLayer + l * kWeightsPerLayer;
    std::string n = b.Rms(x, zero);
    std::string q = b.MatMul(n, arg(w + 0), B, H, HL);
    std::string k = b.MatMul(n, arg(w + 1), B, H, HL);
    std::string v = b.MatMul(n, arg(w + 2), B, H, HL);
    // Write this step's K and V at the slots: indices (layer, block, offset) per sequence.
    std::string layer_col = b.ConstS(l, {B, 1});
    std::string scatter_idx =
        e.Op("stablehlo.concatenate " + layer_col + ", " + slot_block2 + ", " + slot_offset2 + ", dim = 1 : (" +
             S32({B, 1}) + ", " + S32({B, 1}) + ", " + S32({B, 1}) + ") -> " + S32({B, 3}));
    auto scatter = [&](const std::string& cache_in, const std::string& update) {
      const std::string old_v = e.Fresh(), new_v = e.Fresh();
      return e.Op("\"stablehlo.scatter\"(" + cache_in + ", " + scatter_idx + ", " + update +
                  ") <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = "
                  "[0, 1, 2], scatter_dims_to_operand_dims = [0, 1, 2], index_vector_dim = 1>}> ({\n    ^bb0(" +
                  old_v + ": tensor<f32>, " + new_v + ": tensor<f32>):\n      stablehlo.return " + new_v +
                  " : tensor<f32>\n    }) : (" + cache + ", " + S32({B, 3}) + ", " + bhl + ") -> " + cache);
    };
    k_cache = scatter(k_cache, k);
    v_cache = scatter(v_cache, v);
    std::string o2;
    if (gather) {
      // Paged attention: gather the sequence's blocks through the block table -> [B, MB, BS, H].
      std::string layer_col3 = b.ConstS(l, {B, MB, 1});
      std::string gather_idx = e.Op("stablehlo.concatenate " + layer_col3 + ", " + table3 + ", dim = 2 : (" +
                                    S32({B, MB, 1}) + ", " + S32({B, MB, 1}) + ") -> " + S32({B, MB, 2}));
      auto gather = [&](const std::string& cache_now) {
        std::string g =
            e.Op("\"stablehlo.gather\"(" + cache_now + ", " + gather_idx +
                 ") <{dimension_numbers = #stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = "
                 "[0, 1], start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1, " +
                 std::to_string(BS) + ", " + std::to_string(HL) + ">}> : (" + cache + ", " + S32({B, MB, 2}) + ") -> " +
                 F32({B, MB, BS, HL}));
        return b.Reshape(g, F32({B, MB, BS, HL}), F32({B, T, NH, D}));
      };
      std::string keys = gather(k_cache), values = gather(v_cache);
      std::string q3 = b.Reshape(q, bhl, F32({B, NH, D}));
      std::string sc = e.Op("stablehlo.dot_general " + q3 + ", " + keys +
                            ", batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [3] : (" + F32({B, NH, D}) +
                            ", " + F32({B, T, NH, D}) + ") -> " + scores);
      sc = b.Binary("multiply", sc, scale, scores);
      sc = e.Op("stablehlo.select " + visible + ", " + sc + ", " + masked + " : tensor<" + Dims({B, NH, T}) + "i1>, " +
                scores);
      std::string mx = b.Reduce(sc, ninf, "maximum", 2, scores, bn);
      std::string ex =
          b.Unary("exponential", b.Binary("subtract", sc, b.Broadcast(mx, "0, 1", bn, scores), scores), scores);
      std::string sum = b.Reduce(ex, zero, "add", 2, scores, bn);
      std::string p = b.Binary("divide", ex, b.Broadcast(sum, "0, 1", bn, scores), scores);
      std::string o = e.Op("stablehlo.dot_general " + p + ", " + values +
                           ", batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [1] : (" + scores + ", " +
                           F32({B, T, NH, D}) + ") -> " + F32({B, NH, D}));
      o2 = b.Reshape(o, F32({B, NH, D}), bhl);
    } else {
      // Paged attention as the NKI kernel, one grid point per sequence: it reads the block table, the sequence
      // lengths and positions where they lie (pinned_host) and this layer's K and V (the caches just written).
      std::string q3 = b.Reshape(q, bh, F32({B, NH, D}));
      std::string layer = b.ConstS(l, {});
      std::string o =
          e.Op("stablehlo.custom_call @AwsNeuronCustomNativeKernel(" + q3 + ", " + k_cache + ", " + v_cache + ", " +
               arg(kBlockTable) + ", " + arg(kSeqLens) + ", " + arg(kPositions) + ", " + layer +
               ") {backend_config = \"" + nki_config + "\"} : (" + F32({B, NH, D}) + ", " + cache + ", " + cache +
               ", " + S32({B, MB}) + ", " + S32({B}) + ", " + S32({B}) + ", tensor<i32>) -> " + F32({B, NH, D}));
      o2 = b.Reshape(o, F32({B, NH, D}), bh);
    }
    x = b.Binary("add", x, sum_ranks(b.MatMul(o2, arg(w + 3), B, HL, H)), bh);
    // MLP with SiLU.
    const std::string bf = F32({B, FL});
    std::string up = b.MatMul(b.Rms(x, zero), arg(w + 4), B, H, FL);
    std::string act = b.Binary("multiply", up, b.Unary("logistic", up, bf), bf);
    x = b.Binary("add", x, sum_ranks(b.MatMul(act, arg(w + 5), B, FL, H)), bh);
  }
  // Logits and greedy sampling: argmax over the vocabulary, ties to the smaller id.
  std::string logits = b.MatMul(b.Rms(x, zero), arg(static_cast<int>(args.size()) - 1), B, H, c.vocab);
  const std::string bv = F32({B, c.vocab});
  std::string ids = e.Op("stablehlo.iota dim = 1 : " + S32({B, c.vocab}));
  std::string izero = b.ConstS(0, {});
  const std::string a0 = e.Fresh(), a1 = e.Fresh(), i0 = e.Fresh(), i1 = e.Fresh();
  std::string gt = e.Fresh(), nan = e.Fresh(), pick = e.Fresh(), eq = e.Fresh(), lt = e.Fresh(), tie = e.Fresh(),
              pick_id = e.Fresh(), val = e.Fresh(), id = e.Fresh();
  std::string best = e.Fresh();
  e.Line(best + ":2 = stablehlo.reduce(" + logits + " init: " + ninf + "), (" + ids + " init: " + izero +
         ") across dimensions = [1] : (" + bv + ", " + S32({B, c.vocab}) + ", tensor<f32>, tensor<i32>) -> (" +
         F32({B}) + ", " + S32({B}) + ")");
  e.Line(" reducer(" + a0 + ": tensor<f32>, " + a1 + ": tensor<f32>) (" + i0 + ": tensor<i32>, " + i1 +
         ": tensor<i32>)  {");
  const std::string cmp_f = " : (tensor<f32>, tensor<f32>) -> tensor<i1>";
  e.Line("  " + gt + " = stablehlo.compare  GT, " + a0 + ", " + a1 + ",  FLOAT" + cmp_f);
  e.Line("  " + nan + " = stablehlo.compare  NE, " + a0 + ", " + a0 + ",  FLOAT" + cmp_f);
  e.Line("  " + pick + " = stablehlo.or " + gt + ", " + nan + " : tensor<i1>");
  e.Line("  " + eq + " = stablehlo.compare  EQ, " + a0 + ", " + a1 + ",  FLOAT" + cmp_f);
  e.Line("  " + lt + " = stablehlo.compare  LT, " + i0 + ", " + i1 +
         ",  SIGNED : (tensor<i32>, tensor<i32>) -> "
         "tensor<i1>");
  e.Line("  " + tie + " = stablehlo.and " + eq + ", " + lt + " : tensor<i1>");
  e.Line("  " + pick_id + " = stablehlo.or " + pick + ", " + tie + " : tensor<i1>");
  e.Line("  " + val + " = stablehlo.select " + pick + ", " + a0 + ", " + a1 + " : tensor<i1>, tensor<f32>");
  e.Line("  " + id + " = stablehlo.select " + pick_id + ", " + i0 + ", " + i1 + " : tensor<i1>, tensor<i32>");
  e.Line("  stablehlo.return " + val + ", " + id + " : tensor<f32>, tensor<i32>");
  e.Line("}");
  e.Line("return " + best + "#1, " + k_cache + ", " + v_cache + " : " + S32({B}) + ", " + cache + ", " + cache);
  s << e.Take() << "  }\n}\n";
  return s.str();
}

namespace {

// Rows [r0, r0 + rows) and columns [c0, c0 + cols) of a row-major matrix of `width` columns.
std::vector<float> Block(const std::vector<float>& m, int64_t width, int64_t r0, int64_t rows, int64_t c0,
                         int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) std::copy_n(m.begin() + (r0 + r) * width + c0, cols, out.begin() + r * cols);
  return out;
}

}  // namespace

std::vector<std::vector<float>> MakeWeights(const Config& c, uint64_t seed) {
  if (c.tp > 1) {
    // This rank's shares of the whole model's weights.
    Config whole = c;
    whole.tp = 1;
    whole.rank = 0;
    std::vector<std::vector<float>> w = MakeWeights(whole, seed);
    const int64_t H = c.hidden, HL = c.local_hidden(), F = c.ffn, FL = c.local_ffn();
    for (int l = 0; l < c.layers; ++l) {
      std::vector<float>* t = &w[static_cast<size_t>(kFirstLayer - kEmbed + l * kWeightsPerLayer)];
      for (int k = 0; k < 3; ++k) t[k] = Block(t[k], H, 0, H, c.rank * HL, HL);  // Wq, Wk, Wv: columns
      t[3] = Block(t[3], H, c.rank * HL, HL, 0, H);                              // Wo: rows
      t[4] = Block(t[4], F, 0, H, c.rank * FL, FL);                              // W1: columns
      t[5] = Block(t[5], H, c.rank * FL, FL, 0, H);                              // W2: rows
    }
    return w;
  }
  // splitmix64 -> uniform in [-scale, scale), scale = 1/sqrt(fan-in) (embeddings: 1).
  uint64_t state = seed;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<std::vector<float>> w;
  const std::vector<ArgSpec> args = Arguments(c);
  for (size_t i = kEmbed; i < args.size(); ++i) {
    const ArgSpec& a = args[i];
    const float scale = i < kFirstLayer ? 1.0f : 1.0f / std::sqrt(static_cast<float>(a.dims[0]));
    std::vector<float> t(a.bytes() / 4);
    for (float& v : t) v = scale * (static_cast<float>(next() >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f);
    w.push_back(std::move(t));
  }
  return w;
}

uint64_t WeightsFileBytes(const Config& c) {
  const std::vector<ArgSpec> args = Arguments(c);
  uint64_t n = 0;
  for (size_t i = kEmbed; i < args.size(); ++i) n += args[i].bytes();
  return n;
}

std::string WriteWeightsFile(const Config& c, uint64_t seed, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  for (const std::vector<float>& t : MakeWeights(c, seed))
    f.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.size() * sizeof(float)));
  f.close();
  if (!f) return "cannot write the weights file " + path + ": " + std::strerror(errno);
  return "";
}

std::string ReadWeightsFile(const Config& c, const std::string& path, std::vector<std::vector<float>>* out) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return "cannot read the weights file " + path + ": " + std::strerror(errno);
  const uint64_t size = static_cast<uint64_t>(f.tellg());
  if (size != WeightsFileBytes(c))
    return "the weights file " + path + " has " + std::to_string(size) + " bytes; the size flags need " +
           std::to_string(WeightsFileBytes(c)) + " (raw f32 weights in argument order)";
  f.seekg(0);
  const std::vector<ArgSpec> args = Arguments(c);
  out->clear();
  for (size_t i = kEmbed; i < args.size(); ++i) {
    std::vector<float> t(args[i].bytes() / 4);
    f.read(reinterpret_cast<char*>(t.data()), static_cast<std::streamsize>(args[i].bytes()));
    if (!f) return "cannot read the weights file " + path + ": short read";
    out->push_back(std::move(t));
  }
  return "";
}

std::string CheckMetadata(const Config& c, const int32_t* block_table, const int32_t* seq_lens,
                          const int32_t* positions, const int32_t* slot_mapping) {
  for (int b = 0; b < c.batch; ++b) {
    const std::string row = "sequence " + std::to_string(b) + ": ";
    const int32_t len = seq_lens[b];
    if (len < 1 || len > c.max_tokens())
      return row + "length " + std::to_string(len) + " is outside 1.." + std::to_string(c.max_tokens()) +
             " (max_blocks " + std::to_string(c.max_blocks) + " * block_size " + std::to_string(c.block_size) + ")";
    const int32_t live = (len + c.block_size - 1) / c.block_size;
    for (int j = 0; j < live; ++j) {
      const int32_t id = block_table[static_cast<size_t>(b) * c.max_blocks + j];
      if (id < 0 || id >= c.num_blocks)
        return row + "block table entry " + std::to_string(j) + " is block " + std::to_string(id) +
               ", past the KV cache's " + std::to_string(c.num_blocks) + " blocks";
    }
    if (positions[b] != len - 1)
      return row + "position " + std::to_string(positions[b]) + " is not seq_len - 1 = " + std::to_string(len - 1);
    const int32_t want = block_table[static_cast<size_t>(b) * c.max_blocks + (len - 1) / c.block_size] * c.block_size +
                         (len - 1) % c.block_size;
    if (slot_mapping[b] != want)
      return row + "slot " + std::to_string(slot_mapping[b]) + " is not the table's slot " + std::to_string(want) +
             " for position " + std::to_string(len - 1);
  }
  return "";
}

Scheduler::Scheduler(const Config& c, uint64_t seed) : c_(c), current_block_(static_cast<size_t>(c.batch), 0) {
  free_blocks_.resize(static_cast<size_t>(c.num_blocks));
  for (int i = 0; i < c.num_blocks; ++i) free_blocks_[static_cast<size_t>(i)] = i;
  // Fisher-Yates with a small LCG: blocks land scattered through the cache, as after real traffic.
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (size_t i = free_blocks_.size(); i > 1; --i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(free_blocks_[i - 1], free_blocks_[(s >> 33) % i]);
  }
}

int64_t Scheduler::Advance(int step, int32_t* block_table, int32_t* seq_lens, int32_t* positions, int32_t* slot_mapping,
                           std::string* error) {
  if (step >= c_.max_tokens()) {
    *error = "step " + std::to_string(step) + " needs sequences of " + std::to_string(step + 1) +
             " tokens, longer than max_blocks " + std::to_string(c_.max_blocks) + " * block_size " +
             std::to_string(c_.block_size) + " = " + std::to_string(c_.max_tokens());
    return -1;
  }
  // Locals, not c_'s fields: the stores below through int32_t* could alias them, which would stop the
  // compiler from keeping them in registers and vectorizing the loops.
  const int batch = c_.batch, block_size = c_.block_size;
  const size_t max_blocks = static_cast<size_t>(c_.max_blocks);
  const int j = step / block_size, offset = step % block_size;
  int32_t* current = current_block_.data();
  if (offset == 0) {  // every sequence enters a new block
    if (free_blocks_.size() < static_cast<size_t>(batch)) {
      *error = "the KV cache's " + std::to_string(c_.num_blocks) + " blocks are all in use (sequence " +
               std::to_string(free_blocks_.size()) + " needs block " + std::to_string(j) + ")";
      return -1;
    }
    for (int b = 0; b < batch; ++b) {
      current[b] = free_blocks_.back();
      free_blocks_.pop_back();
      block_table[static_cast<size_t>(b) * max_blocks + static_cast<size_t>(j)] = current[b];
    }
  }
  for (int b = 0; b < batch; ++b) {
    seq_lens[b] = step + 1;
    positions[b] = step;
  }
  for (int b = 0; b < batch; ++b) slot_mapping[b] = current[b] * block_size + offset;
  return static_cast<int64_t>(batch) * (offset == 0 ? 16 : 12);
}

std::vector<int32_t> FirstTokens(const Config& c) {
  std::vector<int32_t> t(static_cast<size_t>(c.batch));
  for (int b = 0; b < c.batch; ++b) t[static_cast<size_t>(b)] = static_cast<int32_t>((b * 37 + 1) % c.vocab);
  return t;
}

Reference::Reference(const Config& c, const std::vector<std::vector<float>>& weights)
    : c_(c),
      w_(weights),
      k_(static_cast<size_t>(c.layers) * c.num_blocks * c.block_size * c.hidden, 0.0f),
      v_(k_.size(), 0.0f) {}

namespace {

void Rms(const float* x, int n, float* out) {
  float ss = 0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const float r = 1.0f / std::sqrt(ss * (1.0f / static_cast<float>(n)) + kRmsEpsilon);
  for (int i = 0; i < n; ++i) out[i] = x[i] * r;
}

// out[n] = x[k] * w[k, n]
void VecMat(const float* x, const std::vector<float>& w, int k, int n, float* out) {
  for (int j = 0; j < n; ++j) out[j] = 0;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < n; ++j) out[j] += x[i] * w[static_cast<size_t>(i) * n + j];
}

}  // namespace

void Reference::Step(const int32_t* tokens, const Metadata& md, std::vector<int32_t>* next,
                     std::vector<float>* logits) {
  const int H = c_.hidden, D = c_.head_dim(), BS = c_.block_size, F = c_.ffn, V = c_.vocab;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const std::vector<float>& embed = w_[0];
  const std::vector<float>& pos_embed = w_[1];
  const std::vector<float>& lm_head = w_.back();
  next->assign(static_cast<size_t>(c_.batch), 0);
  logits->assign(static_cast<size_t>(c_.batch) * V, 0.0f);
  std::vector<float> x(H), n(H), q(H), k(H), v(H), o(H), a(H), up(F), down(H), scores;
  auto clamp = [](int32_t i, int rows) { return std::min(std::max(i, 0), rows - 1); };
  auto cache_at = [&](std::vector<float>& cache, int l, int64_t slot) {
    return &cache[(static_cast<size_t>(l) * c_.num_blocks * BS + static_cast<size_t>(slot)) * H];
  };
  for (int b = 0; b < c_.batch; ++b) {
    const float* te = &embed[static_cast<size_t>(clamp(tokens[b], V)) * H];
    const float* pe = &pos_embed[static_cast<size_t>(clamp(md.positions[b], c_.max_tokens())) * H];
    for (int i = 0; i < H; ++i) x[i] = te[i] + pe[i];
    const int32_t len = md.seq_lens[b];
    for (int l = 0; l < c_.layers; ++l) {
      const std::vector<float>* w = &w_[2 + static_cast<size_t>(l) * kWeightsPerLayer];
      Rms(x.data(), H, n.data());
      VecMat(n.data(), w[0], H, H, q.data());
      VecMat(n.data(), w[1], H, H, k.data());
      VecMat(n.data(), w[2], H, H, v.data());
      std::copy(k.begin(), k.end(), cache_at(k_, l, md.slot_mapping[b]));
      std::copy(v.begin(), v.end(), cache_at(v_, l, md.slot_mapping[b]));
      for (int h = 0; h < c_.heads; ++h) {
        scores.assign(static_cast<size_t>(len), 0.0f);
        float mx = -std::numeric_limits<float>::infinity();
        for (int t = 0; t < len; ++t) {
          const int32_t block = md.block_table[static_cast<size_t>(b) * c_.max_blocks + t / BS];
          const float* kt = cache_at(k_, l, static_cast<int64_t>(block) * BS + t % BS) + h * D;
          float s = 0;
          for (int d = 0; d < D; ++d) s += q[h * D + d] * kt[d];
          scores[t] = s * scale;
          mx = std::max(mx, scores[t]);
        }
        float sum = 0;
        for (float& s : scores) sum += (s = std::exp(s - mx));
        for (int d = 0; d < D; ++d) o[h * D + d] = 0;
        for (int t = 0; t < len; ++t) {
          const int32_t block = md.block_table[static_cast<size_t>(b) * c_.max_blocks + t / BS];
          const float* vt = cache_at(v_, l, static_cast<int64_t>(block) * BS + t % BS) + h * D;
          const float p = scores[t] / sum;
          for (int d = 0; d < D; ++d) o[h * D + d] += p * vt[d];
        }
      }
      VecMat(o.data(), w[3], H, H, a.data());
      for (int i = 0; i < H; ++i) x[i] += a[i];
      Rms(x.data(), H, n.data());
      VecMat(n.data(), w[4], H, F, up.data());
      for (float& u : up) u = u / (1.0f + std::exp(-u));
      VecMat(up.data(), w[5], F, H, down.data());
      for (int i = 0; i < H; ++i) x[i] += down[i];
    }
    Rms(x.data(), H, n.data());
    float* row = &(*logits)[static_cast<size_t>(b) * V];
    VecMat(n.data(), lm_head, H, V, row);
    (*next)[static_cast<size_t>(b)] = static_cast<int32_t>(std::max_element(row, row + V) - row);
  }
}

bool AcceptableToken(const float* logits, int vocab, int32_t token, float tolerance) {
  if (token < 0 || token >= vocab) return false;
  const float mx = *std::max_element(logits, logits + vocab);
  float scale = 0;
  for (int i = 0; i < vocab; ++i) scale = std::max(scale, std::fabs(logits[i]));
  return logits[token] >= mx - tolerance * std::max(scale, 1.0f);
}

}  // namespace neuronmem_decode
