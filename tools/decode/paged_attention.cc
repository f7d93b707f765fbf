#include "paged_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "decode_model.h"

namespace neuronmem_decode {
namespace {

neuronmem_status_t* Error(neuronmem_status_code_t code, const std::string& message) {
  return neuronmem_status_create(code, message.data(), message.size());
}

std::string DimsText(const neuronmem_kernel_tensor_t& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.num_dims; ++i) s += (i ? "," : "") + std::to_string(t.dims[i]);
  return s + "]";
}

bool Is(const neuronmem_kernel_tensor_t& t, neuronmem_element_type_t type, size_t rank) {
  return t.element_type == type && t.num_dims == rank && (rank == 0 || t.dims);
}

enum Operand { kQ, kK, kV, kTable, kLens, kPos, kLayer, kNumOperands };

// The operands' shapes agree with each other; "" or what is wrong.
std::string CheckShapes(const neuronmem_kernel_call_t& call) {
  if (call.num_inputs != kNumOperands || call.num_outputs != 1)
    return "takes 7 operands (q, k_cache, v_cache, block_table, seq_lens, positions, layer) and 1 result, got " +
           std::to_string(call.num_inputs) + " and " + std::to_string(call.num_outputs);
  const neuronmem_kernel_tensor_t* in = call.inputs;
  const auto f32 = NEURONMEM_ELEMENT_TYPE_F32;
  const auto s32 = NEURONMEM_ELEMENT_TYPE_S32;
  if (!Is(in[kQ], f32, 3) || !Is(in[kK], f32, 4) || !Is(in[kV], f32, 4) || !Is(in[kTable], s32, 2) ||
      !Is(in[kLens], s32, 1) || !Is(in[kPos], s32, 1) || !Is(in[kLayer], s32, 0) || !Is(call.outputs[0], f32, 3))
    return "expects q f32[B,heads,head_dim], caches f32[layers,blocks,block_size,hidden], block_table "
           "s32[B,max_blocks], "
           "seq_lens and positions s32[B], layer s32[]";
  const int64_t* q = in[kQ].dims;
  const int64_t* k = in[kK].dims;
  const int64_t batch = q[0];
  bool ok = std::equal(k, k + 4, in[kV].dims) && k[3] == q[1] * q[2] && in[kTable].dims[0] == batch &&
            in[kLens].dims[0] == batch && in[kPos].dims[0] == batch && std::equal(q, q + 3, call.outputs[0].dims);
  if (!ok)
    return "operand shapes disagree: q " + DimsText(in[kQ]) + ", caches " + DimsText(in[kK]) + " " + DimsText(in[kV]) +
           ", block_table " + DimsText(in[kTable]) + ", seq_lens " + DimsText(in[kLens]) + ", positions " +
           DimsText(in[kPos]) + ", result " + DimsText(call.outputs[0]);
  if (call.grid_rank > 1 || (call.grid_rank == 1 && call.grid[0] != batch))
    return "the grid must be [" + std::to_string(batch) + "] (one point per sequence)";
  const int32_t layer = *static_cast<const int32_t*>(in[kLayer].data);
  if (layer < 0 || layer >= k[0])
    return "layer " + std::to_string(layer) + " is outside the caches' " + std::to_string(k[0]) + " layers";
  return "";
}

// Sequence b's attention (every head), or the error its metadata gives.
neuronmem_status_t* Sequence(const neuronmem_kernel_call_t& call, int64_t b) {
  const neuronmem_kernel_tensor_t* in = call.inputs;
  const int64_t heads = in[kQ].dims[1], head_dim = in[kQ].dims[2];
  const int64_t num_blocks = in[kK].dims[1], block_size = in[kK].dims[2], hidden = in[kK].dims[3];
  const int64_t max_blocks = in[kTable].dims[1];
  const int64_t layer = *static_cast<const int32_t*>(in[kLayer].data);
  const int32_t* table = static_cast<const int32_t*>(in[kTable].data) + b * max_blocks;
  const int32_t len = static_cast<const int32_t*>(in[kLens].data)[b];
  const int32_t position = static_cast<const int32_t*>(in[kPos].data)[b];
  const auto row = [b] { return "sequence " + std::to_string(b) + ": "; };
  if (len < 1 || len > max_blocks * block_size)
    return Error(NEURONMEM_STATUS_OUT_OF_RANGE, row() + "length " + std::to_string(len) + " is outside 1.." +
                                                    std::to_string(max_blocks * block_size) + " (max_blocks " +
                                                    std::to_string(max_blocks) + " * block_size " +
                                                    std::to_string(block_size) + ")");
  if (position != len - 1)
    return Error(NEURONMEM_STATUS_INVALID_ARGUMENT,
                 row() + "position " + std::to_string(position) + " is not seq_len - 1 = " + std::to_string(len - 1));
  const int64_t live = (len + block_size - 1) / block_size;
  for (int64_t j = 0; j < live; ++j)
    if (table[j] < 0 || table[j] >= num_blocks)
      return Error(NEURONMEM_STATUS_OUT_OF_RANGE, row() + "block table entry " + std::to_string(j) + " is block " +
                                                      std::to_string(table[j]) + ", past the KV cache's " +
                                                      std::to_string(num_blocks) + " blocks");
  // Token t of the sequence lives at (layer, table[t / block_size], t % block_size) of each cache: one row of
  // `hidden` floats, every head's slice of it. Tokens are walked block by block, all heads at once per row (each
  // row read once); each (head, token) score and each output element sums in the same order as one head at a
  // time would (over d for a score, over tokens for an output).
  const float* k_layer = static_cast<const float*>(in[kK].data) + layer * num_blocks * block_size * hidden;
  const float* v_layer = static_cast<const float*>(in[kV].data) + layer * num_blocks * block_size * hidden;
  const auto for_each_row = [&](const float* cache, auto fn) {
    for (int64_t j = 0, t = 0; j < live; ++j) {
      const float* block = cache + static_cast<int64_t>(table[j]) * block_size * hidden;
      for (int64_t o = 0; o < block_size && t < len; ++o, ++t) fn(t, block + o * hidden);
    }
  };
  const float* q = static_cast<const float*>(in[kQ].data) + b * hidden;
  float* out = static_cast<float*>(call.outputs[0].data) + b * hidden;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> scores(static_cast<size_t>(heads * len));  // [head][token]
  std::vector<float> mx(static_cast<size_t>(heads), -std::numeric_limits<float>::infinity());
  for_each_row(k_layer, [&](int64_t t, const float* kt) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = q + h * head_dim;
      const float* kh = kt + h * head_dim;
      float s = 0;
      for (int64_t d = 0; d < head_dim; ++d) s += qh[d] * kh[d];
      float& score = scores[static_cast<size_t>(h * len + t)];
      score = s * scale;
      mx[static_cast<size_t>(h)] = std::max(mx[static_cast<size_t>(h)], score);
    }
  });
  std::vector<float> sum(static_cast<size_t>(heads), 0.0f);
  for (int64_t h = 0; h < heads; ++h) {
    float* sh = scores.data() + h * len;
    for (int64_t t = 0; t < len; ++t)
      sum[static_cast<size_t>(h)] += (sh[t] = std::exp(sh[t] - mx[static_cast<size_t>(h)]));
  }
  std::fill(out, out + hidden, 0.0f);
  for_each_row(v_layer, [&](int64_t t, const float* vt) {
    for (int64_t h = 0; h < heads; ++h) {
      const float p = scores[static_cast<size_t>(h * len + t)] / sum[static_cast<size_t>(h)];
      float* oh = out + h * head_dim;
      const float* vh = vt + h * head_dim;
      for (int64_t d = 0; d < head_dim; ++d) oh[d] += p * vh[d];
    }
  });
  return nullptr;
}

}  // namespace

neuronmem_status_t* PagedAttentionKernel(const neuronmem_kernel_call_t* call, void* user_data) {
  auto* stats = static_cast<PagedAttentionStats*>(user_data);
  const std::string shapes = CheckShapes(*call);
  neuronmem_status_t* error = nullptr;
  if (!shapes.empty()) {
    error = Error(NEURONMEM_STATUS_INVALID_ARGUMENT, shapes);
  } else if (call->grid_rank == 1) {
    error = Sequence(*call, call->grid_index[0]);
  } else {  // no grid: every sequence in this call
    for (int64_t b = 0; b < call->inputs[kQ].dims[0] && !error; ++b) error = Sequence(*call, b);
  }
  if (stats) {
    stats->calls++;
    const neuronmem_kernel_tensor_t* in = call->inputs;
    if (call->num_inputs == kNumOperands) {
      const auto pinned = NEURONMEM_MEMORY_KIND_PINNED_HOST;
      if (in[kTable].memory_kind == pinned && in[kLens].memory_kind == pinned && in[kPos].memory_kind == pinned)
        stats->metadata_pinned++;
      if (in[kK].memory_kind == NEURONMEM_MEMORY_KIND_DEVICE && in[kV].memory_kind == NEURONMEM_MEMORY_KIND_DEVICE)
        stats->cache_in_device++;
    }
    if (error) stats->errors++;
  }
  return error;
}

neuronmem_status_t* RegisterPagedAttention(neuronmem_client_t* client, PagedAttentionStats* stats) {
  neuronmem_kernel_registration_t r{};
  r.struct_size = sizeof r;
  r.name = kPagedAttentionKernel;
  r.fn = PagedAttentionKernel;
  r.user_data = stats;
  return neuronmem_client_register_kernel(client, &r);
}

}  // namespace neuronmem_decode
